"""Where does ``novel_wholeness_if="separable"`` let ``novel_wholeness`` apply? (labelled only)

    OMP_NUM_THREADS=1 python -m benchmarks.wholeness_gate --loops STATE
        [--graphs cora,amazonphoto,blogcatalog,synthetic15] [--sims 0,1,2]
        [--static synthetic8,synthetic15,synthetic20 --seeds 0,1] [--out DIR]

The yardstick of :mod:`oral_core.separability` on the labelled training nodes of every night of
a nightly loop's kept snapshots (split as the pipeline splits them) and of static graphs (the
harness's split): the median pair share, the cut shares' upper quartile (and largest) and the decision. No fit, no
unlabelled node's label. Writes ``gate.md`` and ``gate.csv`` under ``--out``.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

from benchmarks.split_repeat_proxy import loop_arguments

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "novel_wholeness_separable"
FIELDS = ["source", "night", "seed", "separable", "pair_median", "cut_quartile", "cut_max",
          "size"]


def night_rows(state: Path, graph: str, sim: int) -> list[dict]:
    """One row per night of ``state/<graph>-sim<sim>/snapshots`` (empty when not kept)."""
    from benchmarks.split_repeat_proxy import night_task
    from data_contracts import snapshots as snap
    from oral_core.separability import known_separability

    base = state / f"{graph}-sim{sim}"
    if not (base / "snapshots").is_dir():
        print(f"[{base.name}] no kept snapshots under {base}: skipped")
        return []
    rows = []
    for night, (_, path) in enumerate(snap.list_snapshots(base / "snapshots", graph), 1):
        g, x, train, _val, k = night_task(str(path))
        got = known_separability(x, g.edge_index, train, k)
        rows.append({"source": base.name, "night": night, "seed": 0} | pick(got))
    return rows


def static_rows(graph: str, seed: int) -> dict:
    from benchmarks.granularity_proxy import static_graph
    from oral_core.separability import known_separability

    _g, x, edges, train, _val, k = static_graph(graph, seed)
    return {"source": graph, "night": "", "seed": seed} | pick(
        known_separability(x, edges, train, k, seed=seed))


def pick(got: dict) -> dict:
    return {k: got[k] for k in FIELDS[3:]}


def table(rows: list[dict]) -> str:
    """Per source: each night's decision (``Y`` applies, ``n`` does not) with its two figures."""
    lines = ["| source | nights (or split seeds): applies? median pair share / upper quartile of "
             "the cut shares, % "
             "| applies |", "|---|---|---|"]
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["source"], []).append(r)
    for source, rs in by.items():
        cells = " ".join(f"{'Y' if r['separable'] in (True, 'True') else 'n'} "
                         f"{float(r['pair_median'] or 0):.0f}/{float(r['cut_quartile'] or 0):.0f}"
                         for r in rs)
        hits = sum(r["separable"] in (True, "True") for r in rs)
        lines.append(f"| {source} | {cells} | {hits} of {len(rs)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,amazonphoto,blogcatalog,synthetic15", "0,1,2", "", seeds=None, loops="")
    ap.add_argument("--static", default="", help="static graphs (e.g. synthetic8)")
    ap.add_argument("--seeds", default="0,1", help="split seeds of the static graphs")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    rows = []
    if args.loops:
        for graph in [g for g in args.graphs.split(",") if g]:
            for sim in [int(s) for s in args.sims.split(",") if s]:
                rows += night_rows(Path(args.loops), graph, sim)
                print(table([r for r in rows if r["source"] == f"{graph}-sim{sim}"])
                      .splitlines()[-1], flush=True)
    for graph in [g for g in args.static.split(",") if g]:
        for seed in [int(s) for s in args.seeds.split(",") if s]:
            rows.append(static_rows(graph, seed))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "gate.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    text = table(rows)
    (out / "gate.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
