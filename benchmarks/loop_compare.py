"""Two nightly-loop studies side by side, on labelled-only and label-free measures only.

    python -m benchmarks.loop_compare --base night_answer_paired --new warm_night
        [--graphs cora,synthetic15] [--sims 0,1,2] [--out FILE]

A study is a ``benchmarks.nightly_loop`` run: its loop files under
``benchmarks/results/<study>/loops`` and its kept state under ``benchmarks/.state/<study>``
(``--results`` and ``--states`` move both roots). Per graph, pooled over the simulations both
studies finished, for each study:

- nights published with an answer of their own (``answered_by`` tonight; label-free);
- the mean known-class validation accuracy of the nights' models (labelled nodes only);
- the novel (lineage id, night) pairs published, candidates not counted (label-free);
- novel lineage events per ten answered nights, the lineage replayed from the warehouse under the
  pipeline's rule (``benchmarks.lineage_replay``, ``all+confirm``; label-free);
- the median seconds between consecutive nights' publications, nights 2 onwards (a night's whole
  wall time inside one ``oral backfill``; label-free).

No test label is read: this is the table a default's rule may rest on. The scoreboard (test
labels) stays in each study's README, beside.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
STATES = ROOT / "benchmarks" / ".state"


def loop_measures(loop: dict, base: Path) -> dict:
    """One finished loop's measures (``loop``: its file; ``base``: its state folder
    ``<state>/<graph>-sim<k>``)."""
    import duckdb

    from benchmarks.lineage_replay import label_free, replay, runs_of
    from data_contracts import snapshots as snap

    graph, nights = loop["graph"], loop["nights"]
    dates = [snap.snapshot_date(p) for _, p in snap.list_snapshots(base / "snapshots", graph)]
    con = duckdb.connect(str(base / "state" / "oral.duckdb"), read_only=True)
    try:
        runs = runs_of(con, graph, dates)
        published = [con.execute("SELECT max(published_at) FROM runs WHERE graph = ? AND "
                                 "snapshot_date = ?", [graph, day]).fetchone()[0]
                     for day in dates]
    finally:
        con.close()
    lineage = label_free(runs, replay(runs, graph, "all", True))
    gaps = [(b - a).total_seconds() for a, b in zip(published, published[1:])
            if a is not None and b is not None]
    return {"nights": len(nights),
            "answered": sum(n.get("answered_by") == "tonight" for n in nights),
            "val_accuracy": [n["val_accuracy"] for n in nights if n.get("val_accuracy") is not None],
            "novel_pairs": sum(int(n.get("novel_published") or 0) for n in nights),
            "events": lineage["events"], "answered_chain": lineage["answered"],
            "gaps": gaps}


def study_measures(study: str, graphs: list[str], sims: list[int], results: Path,
                   states: Path) -> dict[tuple[str, int], dict]:
    """``{(graph, sim): measures}`` of a study's finished loops."""
    out = {}
    for graph in graphs:
        for sim in sims:
            path = results / study / "loops" / f"{graph}-sim{sim}.json"
            base = states / study / f"{graph}-sim{sim}"
            if path.exists() and (base / "state" / "oral.duckdb").exists():
                out[(graph, sim)] = loop_measures(json.loads(path.read_text()), base)
    return out


def pooled(rows: list[dict]) -> dict:
    """A graph's measures over its loops."""
    acc = [a for r in rows for a in r["val_accuracy"]]
    gaps = [g for r in rows for g in r["gaps"]]
    chain = sum(r["answered_chain"] for r in rows)
    return {"loops": len(rows), "nights": sum(r["nights"] for r in rows),
            "answered": sum(r["answered"] for r in rows),
            "val_accuracy": 100 * statistics.mean(acc) if acc else None,
            "novel_pairs": sum(r["novel_pairs"] for r in rows),
            "events_per_ten": 10 * sum(r["events"] for r in rows) / chain if chain else None,
            "median_seconds": statistics.median(gaps) if gaps else None}


def table(base: str, new: str, by_study: dict[str, dict], graphs: list[str]) -> str:
    """The side-by-side table over the loops both studies finished."""
    lines = ["| graph | study | loops | nights answered tonight | models' known-class validation "
             "accuracy (mean %) | novel (id, night) pairs published | novel lineage events / 10 "
             "answered nights | median s / night (nights 2+) |",
             "|---|---|---|---|---|---|---|---|"]
    for graph in graphs:
        both = sorted(set(k for k in by_study[base] if k[0] == graph)
                      & set(k for k in by_study[new] if k[0] == graph))
        for study in (base, new):
            p = pooled([by_study[study][k] for k in both])
            if not p["loops"]:
                continue

            def f(v, digits=1):
                return "–" if v is None else f"{v:.{digits}f}"
            lines.append(f"| {graph} | {study} | {p['loops']} (sims "
                         f"{', '.join(str(s) for _, s in both)}) | {p['answered']} / {p['nights']} "
                         f"| {f(p['val_accuracy'])} | {p['novel_pairs']} | "
                         f"{f(p['events_per_ten'])} | {f(p['median_seconds'], 0)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the reference study (today's default)")
    ap.add_argument("--new", required=True, help="the study of the candidate default")
    ap.add_argument("--graphs", default="cora,synthetic15")
    ap.add_argument("--sims", default="0,1,2")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--states", type=Path, default=STATES)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    graphs = [g for g in args.graphs.split(",") if g]
    sims = [int(s) for s in args.sims.split(",") if s]
    by_study = {s: study_measures(s, graphs, sims, args.results, args.states)
                for s in (args.base, args.new)}
    text = table(args.base, args.new, by_study, graphs)
    if args.out is not None:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
