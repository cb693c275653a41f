"""The rule of ``benchmarks/results/novel_recut_embedding`` read clause by clause from its rows.

    python -m benchmarks.recut_rule [--study benchmarks/results/novel_recut_embedding]

The rows (``<study>/rows/fits.jsonl``, ``benchmarks.answer_proxy --before-recut``) hold, per task,
the night's answer on a fit's re-cut novel nodes and, as ``fitted <answer>``, on the same fit's
answer before the re-cut. Each clause reads the re-cut arm minus the fitted arm (the README's
rule); ``decision.md`` says which hold, per graph, and waits until every graph has its 18 tasks,
or until a clause fails on a graph that has them all (the rule cannot be met after that).
"""
from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from benchmarks.answer_proxy import BURST_SPLIT, FITTED

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "benchmarks" / "results" / "novel_recut_embedding"
GRAPHS = ("cora", "synthetic15", "synthetic15-sep1.5", "amazonphoto", "blogcatalog")
#: tasks per graph the rule needs: 2 nights x 3 seeds x 3 proxies
TASKS_PER_GRAPH = 18
#: the answer both arms are read with
ANSWER = BURST_SPLIT


def mean_se(values: list[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    if len(values) == 1:
        return values[0], math.nan
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def arms(row: dict, key: str) -> tuple[float, float]:
    """``(re-cut, fitted)`` of ``key`` in a row's answer."""
    return row[ANSWER][key], row[FITTED + ANSWER][key]


def clauses(rows: list[dict]) -> dict:
    """The five clauses' figures for one graph's rows, and whether each holds (clause 1's second
    half, a gain on at least one graph, is read over the graphs by :func:`decide`)."""
    held = [r for r in rows if r["kind"] == "heldout"]
    none = [r for r in rows if r["kind"] == "nonovel"]
    wit = [r for r in rows if r["kind"] == "witness"]
    all_diff = mean_se([a - b for a, b in (arms(r, "all") for r in held)])
    surfaced = [sum(arms(r, "surfaced")[i] for r in held) for i in (0, 1)]
    invented = [sum(arms(r, "novel_classes")[i] for r in none) for i in (0, 1)]
    known = mean_se([a - b for a, b in (arms(r, "known") for r in wit)])
    classes = mean_se([a - b for a, b in (arms(r, "novel_classes") for r in wit)])
    return {"tasks": len(rows), "all": all_diff, "surfaced": surfaced, "invented": invented,
            "known": known, "classes": classes,
            "holds": {1: not all_diff[0] + (all_diff[1] if not math.isnan(all_diff[1]) else 0) < 0,
                      2: surfaced[0] >= surfaced[1], 3: invented[0] <= invented[1],
                      4: not known[0] + (known[1] if not math.isnan(known[1]) else 0) < 0,
                      5: not classes[0] > 1}}


def gains(figures: dict) -> bool:
    """Clause 1's second half on one graph: All's mean minus one s.e. above 0."""
    m, se = figures["all"]
    return not math.isnan(se) and m - se > 0


def decide(rows: list[dict]) -> tuple[str, bool]:
    """The decision's Markdown and whether every clause holds on every graph with all rows in."""
    def cell(ms):
        return f"{ms[0]:+.2f} ({ms[1]:.2f})"

    lines = ["| graph | tasks | 1. held-out All, re-cut - fitted (s.e.) | 2. stand-ins surfaced "
             "re-cut / fitted | 3. invented re-cut / fitted | 4. witness Known (s.e.) | "
             "5. novel classes, witness (s.e.) | clauses 1-5 |", "|---|---|---|---|---|---|---|---|"]
    complete, every, any_gain = True, True, False
    final = []  # (graph, clauses) failing on a graph whose every task is in: the rule has failed
    for graph in GRAPHS:
        mine = [r for r in rows if r["graph"] == graph]
        if not mine:
            lines.append(f"| {graph} | 0 | | | | | | waits |")
            complete = False
            continue
        f = clauses(mine)
        complete &= f["tasks"] >= TASKS_PER_GRAPH
        every &= all(f["holds"].values())
        any_gain |= gains(f)
        failing = [c for c, ok in f["holds"].items() if not ok]
        if f["tasks"] >= TASKS_PER_GRAPH and failing:
            final.append((graph, failing))
        verdict = ", ".join(f"{c} {'holds' if ok else 'fails'}" for c, ok in f["holds"].items())
        lines.append(f"| {graph} | {f['tasks']} | {cell(f['all'])} | {f['surfaced'][0]} / "
                     f"{f['surfaced'][1]} | {f['invented'][0]} / {f['invented'][1]} | "
                     f"{cell(f['known'])} | {cell(f['classes'])} | {verdict} |")
    met = complete and every and any_gain
    lines += ["", f"Clause 1, a gain on at least one graph (mean minus one s.e. above 0): "
              f"{'yes' if any_gain else 'no'}.",
              f"All five graphs' {TASKS_PER_GRAPH} tasks in: {'yes' if complete else 'no'}.",
              "", "Decision: " + ("every clause holds: the re-cut on the embedding becomes the "
                                  "night's default." if met else
                                  "not met; the switches stay options." if complete else
                                  failed_early(final) if final else "waits for the rows.")]
    return "\n".join(lines), met


def failed_early(final: list[tuple[str, list[int]]]) -> str:
    """The decision once a clause fails on a graph with all its tasks in: the rule needs every
    clause on every graph, and no row still to come can change a finished graph's figures."""
    where = "; ".join(f"{graph}, clause{'s' if len(c) > 1 else ''} "
                      f"{', '.join(map(str, c))}" for graph, c in final)
    return (f"not met: clauses fail on graphs whose {TASKS_PER_GRAPH} tasks are all in ({where}), "
            "which no row still to come can change; the switches stay options (the other graphs' "
            "rows, when they come, describe the re-cut and decide nothing).")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.records import read_jsonl

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=STUDY)
    args = ap.parse_args(argv)
    rows = [r for r in read_jsonl(args.study / "rows" / "fits.jsonl")
            if ANSWER in r and FITTED + ANSWER in r]
    text, _ = decide(rows)
    (args.study / "decision.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
