"""Does ``oral choose --score final`` pick the novel re-cut per graph where it helps? (study
``choose_recut``, issue 60: a lever that helps one graph is an option a graph's own labelled
nodes can choose.) Labelled nodes only.

    OMP_NUM_THREADS=1 ORAL_DATA_DIR=../shared/datasets python -m benchmarks.choose_recut
        [--graphs cora,amazonphoto,synthetic15] [--sim 10] [--night 4] [--seeds 5]
        [--loops benchmarks/.state/choose_recut] [--out benchmarks/results/choose_recut]
        [--report-only]

For each graph: the nightly loop's seeded simulation ``--sim`` (``benchmarks.nightly_loop``,
simulated when missing), then ``oral choose`` on the snapshot of night ``--night`` (0 = the
first) with ``--candidate novel_recut=true --score final`` at the nightly pipeline's defaults
(``--set`` of each), its fits and choice under ``<out>/<graph>/`` (resumable: ``oral choose``
reuses its seed files). ``table.md``: each graph's choice and the study's rule read clause by
clause. One process per graph may run side by side.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.records import write_table

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "choose_recut"
LOOPS = ROOT / "benchmarks" / ".state" / "choose_recut"
CANDIDATE = "novel_recut=True"
#: the rule (README): chosen where the final-answer proxy of `novel_recut` gained, not where it lost
MUST_CHOOSE, MUST_NOT = ("cora",), ("amazonphoto",)


def pipeline_sets() -> list[str]:
    """The nightly pipeline's defaults as ``--set`` options (so the choice's fits are the night's)."""
    from flows.params import PIPELINE_DEFAULTS

    out = []
    for key, value in PIPELINE_DEFAULTS.items():
        if key == "progress":
            continue
        out += ["--set", f"{key}={'none' if value is None else value}"]
    return out


def night_date(snapshots: Path, graph: str, night: int) -> str:
    """The date of night ``night`` (0 = the first) among the graph's snapshots."""
    dates = sorted(p.name.split("=", 1)[1] for p in (snapshots / graph).glob("snapshot=*"))
    if not 0 <= night < len(dates):
        raise SystemExit(f"error: night {night}: {snapshots / graph} has {len(dates)} snapshots")
    return dates[night]


def choose_argv(graph: str, snapshots: Path, date: str, seeds: int, out: Path) -> list[str]:
    """The ``oral choose`` command of one graph (its arguments after ``oral``)."""
    return ["choose", "--graph", graph, "--snapshots", str(snapshots), "--date", date,
            "--candidate", "novel_recut=true", "--score", "final", "--seeds", str(seeds),
            *pipeline_sets(), "--out", str(out)]


def read_choice(out: Path, graph: str) -> dict | None:
    """The candidate's row of ``<out>/<graph>/<graph>.json`` with ``chosen``, or None if not run."""
    path = out / graph / f"{graph}.json"
    if not path.exists():
        return None
    choice = json.loads(path.read_text())
    row = next(r for r in choice["candidates"] if r["candidate"] == CANDIDATE)
    return row | {"chosen": choice["chosen"] == CANDIDATE, "rule": choice["rule"]}


def table_lines(rows: dict[str, dict | None]) -> list[str]:
    """Each graph's choice and the rule read clause by clause."""
    lines = ["| graph | score | gain of the re-cut (s.e.) | gain - s.e. | seeds ahead | "
             "known-class guard | chosen |", "|---|---|---|---|---|---|---|"]
    for graph, r in sorted(rows.items()):
        if r is None:
            lines.append(f"| {graph} | not run | | | | | |")
            continue
        guard = r.get("guard")
        gcell = "–" if guard is None else ("kept" if guard["kept"] else "refused")
        lines.append(f"| {graph} | `{r['rule']}` | {r['gain']:+.2f} ({r['se']:.2f}) | "
                     f"{r['bound']:+.2f} | {r['ahead']}/{r['seeds']} | {gcell} | "
                     f"{'yes' if r['chosen'] else 'no'} |")
    lines += ["", "The rule:"]
    verdicts = []
    for n, (graphs, want, what) in enumerate(((MUST_CHOOSE, True, "chosen"),
                                              (MUST_NOT, False, "not chosen")), start=1):
        for graph in graphs:
            r = rows.get(graph)
            ok = None if r is None else r["chosen"] == want
            verdicts.append(ok)
            lines.append(f"- clause {n}, {what} on {graph}: "
                         + ("not run" if ok is None else "holds" if ok else "fails"))
    met = "pending" if None in verdicts else "met" if all(verdicts) else "not met"
    lines += ["", f"Rule: {met}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="cora,amazonphoto,synthetic15")
    ap.add_argument("--sim", type=int, default=10)
    ap.add_argument("--night", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--loops", type=Path, default=LOOPS)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    graphs = [g for g in args.graphs.split(",") if g]
    if not args.report_only:
        from benchmarks.nightly_loop import simulate_missing
        from cli.main import main as oral

        simulate_missing(args.loops, ",".join(graphs), str(args.sim))
        for graph in graphs:
            snapshots = args.loops / f"{graph}-sim{args.sim}" / "snapshots"
            date = night_date(snapshots, graph, args.night)
            print(f"[{graph}] oral choose on night {args.night} ({date})", flush=True)
            rc = oral(choose_argv(graph, snapshots, date, args.seeds, args.out / graph))
            if rc != 0:
                raise SystemExit(f"error: oral choose on {graph} exited {rc}")
    every = sorted({*MUST_CHOOSE, *MUST_NOT, *graphs,
                    *(p.name for p in args.out.glob("*") if (p / f"{p.name}.json").exists())})
    lines = table_lines({g: read_choice(args.out, g) for g in every})
    write_table(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
