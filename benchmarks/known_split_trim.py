"""Should the known-split check trim a novel group before judging it? (``known_split_trim``;
labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.known_split_trim --loops STATE
        [--graphs cora,amazonphoto,synthetic15] [--sims 0,1] [--nights 5,6,7,8] [--seeds 0]
        [--tasks heldout,nonovel] [--out DIR] [--report-only]

On young nightly graphs a planted class and a slice of known classes often share a novel group,
and the (repeated) known-split check suppresses the group whole, planted class and all.
``known_split_trim`` first moves the group's nodes the known head is most confident about to
the head's class, as many as its validation nodes say are known (``oral_core.novelty``), and the
check judges what is left. It can keep a real novel class the check would have suppressed, and
it can also keep a split of a known class that the check would have removed; two proxies on
labelled nodes judge the two sides:

- the held-out-class proxy (``hide="extremes"``: the known class with the most labelled nodes
  and the one with the fewest are hidden and play novel classes, their labelled nodes scored):
  All / Known / Novel and the stand-ins that surface;
- the no-novel proxy (the snapshot's labelled nodes alone, half of each class's training nodes
  unlabelled, nothing new): the share of those nodes called novel and the novel classes.

One fit per snapshot, seed and task at the nightly pipeline's defaults plus
``known_split_trim=true`` answers both arms: the trimmed answer and, from the same fit, what the
checks report without the trim (``last_no_trim``), both before the known head (the trim does
not change training). Snapshots: ``STATE/<graph>-sim<k>/snapshots`` as ``benchmarks.nightly_loop
--state`` keeps them. One JSON line per fit in ``fits.jsonl`` (resumable).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "known_split_trim"
LOOPS = ROOT / "benchmarks" / ".state" / "nightly_loop_head_scale"
#: (label, key of ORAL.discoveries): the answer without the trim, with it (both before the head)
ARMS = (("plain", "last_no_trim"), ("trim", "last_no_head"))
TASKS = ("heldout", "nonovel")


def trim_config():
    from flows.configuration import build_config, pipeline_defaults

    return build_config(pipeline_defaults() | {"known_split_trim": True})


def fit_night(task: str, path: str, seed: int) -> dict:
    """Both arms of one fit of ``task`` on a nightly snapshot."""
    from benchmarks.granularity_proxy import heldout_answers
    from benchmarks.split_repeat_proxy import night_nonovel_fit, night_task

    keys = tuple(key for _, key in ARMS)
    start = time.perf_counter()
    if task == "heldout":
        g, x, train, val, k = night_task(path)
        found = heldout_answers(g, x, g.edge_index, train, val, k, seed, trim_config(),
                                "extremes", keys)
    else:
        found = night_nonovel_fit(path, seed, trim_config(), keys)
    return {"arms": {label: found[key] for label, key in ARMS},
            "seconds": round(time.perf_counter() - start, 1)}


def paired(rows: list[dict], key: str) -> str:
    """Mean of trim minus plain on ``key`` over ``rows`` (s.e.)."""
    diffs = [r["arms"]["trim"][key] - r["arms"]["plain"][key] for r in rows]
    se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return f"{statistics.mean(diffs):+.1f} ({se:.1f})"


def by_graph(rows: list[dict], task: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["task"] == task:
            out.setdefault(r["source"].rsplit("-sim", 1)[0], []).append(r)
    return dict(sorted(out.items()))


def table(rows: list[dict]) -> str:
    """The held-out-class proxy and the no-novel proxy per graph, trim against plain."""
    def mean(rs: list[dict], arm: str, key: str) -> float:
        return statistics.mean(float(r["arms"][arm][key]) for r in rs)

    lines = ["Held-out-class proxy (two stand-ins):", "",
             "| graph | fits | trim acted | plain: All / Known / Novel | trim: All / Known / Novel "
             "| stand-ins surfaced, plain -> trim | All, trim minus plain (s.e.) |",
             "|---|---|---|---|---|---|---|"]
    for graph, rs in by_graph(rows, "heldout").items():
        acted = sum(r["arms"]["trim"]["all"] != r["arms"]["plain"]["all"]
                    or r["arms"]["trim"]["novel_classes"] != r["arms"]["plain"]["novel_classes"]
                    for r in rs)
        cells = [" / ".join(f"{mean(rs, arm, k):.1f}" for k in ("all", "known", "novel"))
                 for arm in ("plain", "trim")]
        found = [sum(r["arms"][arm]["surfaced"] for r in rs) for arm in ("plain", "trim")]
        lines.append(f"| {graph} | {len(rs)} | {acted} | {cells[0]} | {cells[1]} | "
                     f"{found[0]} -> {found[1]} of {2 * len(rs)} | {paired(rs, 'all')} |")
    lines += ["", "No-novel proxy (nothing new: every novel call is false):", "",
              "| graph | fits | called novel (%), plain -> trim | novel classes, plain -> trim "
              "| accuracy, plain -> trim | called novel, trim minus plain (s.e.) |",
              "|---|---|---|---|---|---|"]
    for graph, rs in by_graph(rows, "nonovel").items():
        cells = [f"{mean(rs, 'plain', k):.1f} -> {mean(rs, 'trim', k):.1f}"
                 for k in ("novel_share", "novel_classes", "accuracy")]
        lines.append(f"| {graph} | {len(rs)} | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{paired(rs, 'novel_share')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,amazonphoto,synthetic15", "0,1", "5,6,7,8", "0", loops=LOOPS)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        ap.error(f"--tasks: unknown {unknown}; choose from {list(TASKS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fits.jsonl"
    rows = read_jsonl(path)
    if not args.report_only:
        from benchmarks.split_repeat_proxy import loop_nights

        done = {(r["task"], r["source"], r["night"], r["seed"]) for r in rows}
        for task in tasks:
            for source, night, seed, snapshot in loop_nights(args.loops, args.graphs, args.sims,
                                                              args.nights, args.seeds):
                if (task, source, night, seed) in done:
                    continue
                print(f"[{task} {source} night {night} seed {seed}]", flush=True)
                row = {"task": task, "source": source, "night": night,
                       "seed": seed} | fit_night(task, snapshot, seed)
                rows.append(row)
                append_jsonl(path, row)
                a, b = row["arms"]["plain"], row["arms"]["trim"]
                key = "all" if task == "heldout" else "novel_share"
                print(f"    {key} {a[key]:.1f} -> {b[key]:.1f}, novel classes "
                      f"{a['novel_classes']} -> {b['novel_classes']} ({row['seconds']} s)",
                      flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
