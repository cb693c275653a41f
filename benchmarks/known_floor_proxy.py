"""Does the known-class floor drain real novel classes? (``known_floor``; labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.known_floor_proxy --loops STATE
        [--graphs blogcatalog] [--sims 0] [--nights 5,6,7,8] [--seeds 0] [--out DIR]
        [--report-only]

``known_floor`` acts on a fit whose known classes name the validation nodes worse than the
reference logistic regression (the champion gate's floor): novel classes holding validation
nodes join known classes until the floor holds. It only ever removes novel classes, so it cannot
invent one; what it can cost is a real novel class that holds some validation nodes. The
held-out-class proxy measures that on labelled nodes only: on a nightly snapshot two known
classes are hidden (``hide="extremes"``: the one with the most labelled nodes and the one with
the fewest; their labelled nodes play novel classes and are scored), ORAL is fitted at the
nightly pipeline's defaults with ``known_floor=true``, and its answer before the floor
(``last_no_floor``, the same fit) and after are scored: All / Known / Novel, and the stand-ins
that surface (a novel class with >= 50% of a stand-in's scored nodes, >= 70% of it that
stand-in). Snapshots: ``STATE/<graph>-sim<k>/snapshots`` as ``benchmarks.nightly_loop --state``
or ``benchmarks.known_head_scale --simulate`` keep them. One JSON line per fit in ``fits.jsonl``
(resumable).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "known_floor"
LOOPS = ROOT / "benchmarks" / ".state" / "known_head_scale"
ARMS = ("last_no_floor", "last")


def fit_night(path: str, seed: int) -> dict:
    """Both answers of one held-out-class fit on a nightly snapshot, with the floor on."""
    from benchmarks.granularity_proxy import heldout_answers
    from benchmarks.split_repeat_proxy import night_task
    from flows.configuration import build_config, pipeline_defaults

    config = build_config(pipeline_defaults() | {"known_floor": True})
    g, x, train, val, k = night_task(path)
    start = time.perf_counter()
    found = heldout_answers(g, x, g.edge_index, train, val, k, seed, config, "extremes", ARMS)
    return {"arms": found, "acted": found["last_no_floor"]["answer"] == "last_no_floor",
            "seconds": round(time.perf_counter() - start, 1)}


def table(rows: list[dict]) -> str:
    """Per graph: fits, fits the floor acted on, each arm's mean All / Known / Novel and
    stand-ins surfaced, and the floor's All minus the answer before it (paired, s.e.)."""
    lines = ["| graph | fits | floor acted | before: All / Known / Novel | after: All / Known / "
             "Novel | stand-ins surfaced, before -> after | All, after minus before (s.e.) |",
             "|---|---|---|---|---|---|---|"]
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["source"].rsplit("-sim", 1)[0], []).append(r)
    for graph, rs in sorted(by.items()):
        def mean(arm: str, key: str) -> float:
            return statistics.mean(r["arms"][arm][key] for r in rs)
        diffs = [r["arms"]["last"]["all"] - r["arms"]["last_no_floor"]["all"] for r in rs]
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
        cells = [" / ".join(f"{mean(arm, k):.1f}" for k in ("all", "known", "novel"))
                 for arm in ARMS]
        surfaced = [sum(r["arms"][arm]["surfaced"] for r in rs) for arm in ARMS]
        stand_ins = sum(len(r["arms"]["last"]["stand_ins"]) for r in rs)
        lines.append(f"| {graph} | {len(rs)} | {sum(r['acted'] for r in rs)} | {cells[0]} | "
                     f"{cells[1]} | {surfaced[0]} -> {surfaced[1]} of {stand_ins} | "
                     f"{statistics.mean(diffs):+.1f} ({se:.1f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "blogcatalog", "0", "5,6,7,8", "0", loops=LOOPS)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fits.jsonl"
    rows = read_jsonl(path)
    if not args.report_only:
        from benchmarks.split_repeat_proxy import loop_nights

        done = {(r["source"], r["night"], r["seed"]) for r in rows}
        for source, night, seed, snapshot in loop_nights(args.loops, args.graphs, args.sims,
                                                          args.nights, args.seeds):
            if (source, night, seed) in done:
                continue
            print(f"[{source} night {night} seed {seed}]", flush=True)
            row = {"source": source, "night": night, "seed": seed} | fit_night(snapshot, seed)
            rows.append(row)
            append_jsonl(path, row)
            a, b = row["arms"]["last_no_floor"], row["arms"]["last"]
            print(f"    acted {row['acted']}: All {a['all']:.1f} -> {b['all']:.1f}, "
                  f"surfaced {a['surfaced']} -> {b['surfaced']} ({row['seconds']} s)", flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
