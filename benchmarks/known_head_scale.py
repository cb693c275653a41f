"""Which rows should standardise the known head's inputs? (``known_head_scale``; labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.known_head_scale [--graphs ...] [--seeds 0,1,2]
        [--loops benchmarks/.state/known_head_scale] [--simulate cora,... --sims 0,1,2]
        [--out DIR] [--report-only]

The known head (``oral_core.known_head``) is a logistic regression whose inputs are standardised
column by column. Until now the mean and spread came from the labelled nodes (training and
validation), the rows the champion gate's reference classifier reads; the nodes the head names
are the unlabelled ones. On sparse bag-of-words features a word that is rare among the labelled
nodes gets a tiny spread there, and in an unlabelled node that has it the standardised value is
huge. ``known_head_scale="all"`` takes the mean and spread over every node of the graph instead
(transductive, as the nightly loop's reference logistic regression does).

Measured on labelled nodes only: the validation nodes stand for the unlabelled ones, so in the
``labelled`` arm the spread comes from the *training* nodes alone (a validation node's features
are not in it, as an unlabelled node's are not in deployment), and in the ``all`` arm from every
node (validation nodes included, as unlabelled nodes are in deployment). Both arms read the
steps the pipeline's default chooses (``known_head_hops=None``, cross-validation on the training
nodes). No test label is read.

Rows: the static graphs under the strict split (``oral_core.splits.make_split``, seeds
``--seeds``), the generator with 15 and 40 classes included; and nights 1, 4 and 8 of simulated
evolving graphs (``--simulate`` writes them under ``--loops`` as the nightly-loop benchmark
does, ``<graph>-sim<k>/snapshots``), split as the pipeline splits them. Resumable: one CSV row
per case in ``cases.csv``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from benchmarks.known_head_hops import cases_of, read_rows, record_cases

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "known_head_scale"
LOOPS = ROOT / "benchmarks" / ".state" / "known_head_scale"
GRAPHS = ("cora", "amazonphoto", "blogcatalog", "synthetic15", "synthetic40")
FIELDS = ["kind", "graph", "case", "train", "val", "known", "hops", "val_labelled", "val_all",
          "seconds"]


def measure(x, edge_index, train, val, known: int) -> dict:
    """One case: validation accuracy (%) of the head at the cross-validation's steps, its
    inputs standardised over the training nodes (``val_labelled``) or over every node
    (``val_all``)."""
    from oral_core.known_head import choose_hops, fit_known_head, head_probabilities

    started = time.perf_counter()
    seen = val >= 0
    hops, _ = choose_hops(x, edge_index, train, known)
    row = {"train": int((train >= 0).sum()), "val": int(seen.sum()), "known": known,
           "hops": hops}
    for arm, rows in (("labelled", train >= 0), ("all", None)):
        head = fit_known_head(x, edge_index, train, known, hops=hops, labelled=rows)
        guess = head_probabilities(head, x, edge_index).argmax(1)
        row[f"val_{arm}"] = round(100 * float((guess[seen] == val[seen]).float().mean()), 2)
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def simulate_loops(graphs: list[str], sims: list[int], loops: Path, data_dir: str | None) -> None:
    """The nightly loop's simulated snapshots (8 nights) for each graph and simulation seed,
    where they are not there yet."""
    from benchmarks.nightly_loop import simulate_loop

    for graph in graphs:
        for sim in sims:
            base = loops / f"{graph}-sim{sim}"
            if (base / "snapshots").is_dir():
                continue
            print(f"[{base.name}] simulating 8 nights", flush=True)
            simulate_loop(graph, sim, 8, base / "snapshots", data_dir)


def summary(rows: list[dict]) -> str:
    """Per kind and graph: mean validation accuracy of each arm, and ``all`` minus
    ``labelled`` paired by case (mean, standard error, worst case)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["graph"]), []).append(r)
    lines = ["| rows | graph | cases | steps chosen | val.: labelled | val.: all "
             "| all minus labelled (s.e.) | worst case |",
             "|---|---|---|---|---|---|---|---|"]
    for (kind, graph), rs in sorted(groups.items()):
        diffs = [float(r["val_all"]) - float(r["val_labelled"]) for r in rs]
        se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
        steps = " ".join(sorted({str(r["hops"]) for r in rs}))
        lines.append(f"| {kind} | {graph} | {len(rs)} | {steps} | "
                     f"{statistics.mean(float(r['val_labelled']) for r in rs):.1f} | "
                     f"{statistics.mean(float(r['val_all']) for r in rs):.1f} | "
                     f"{statistics.mean(diffs):+.1f} ({se:.1f}) | {min(diffs):+.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS), help="static graphs ('' : none)")
    ap.add_argument("--seeds", default="0,1,2", help="split seeds of the static graphs")
    ap.add_argument("--loops", default=str(LOOPS),
                    help="a folder of simulated loops, <graph>-sim<k>/snapshots ('' : none)")
    ap.add_argument("--simulate", default="",
                    help="graphs whose loops to simulate under --loops first (e.g. cora)")
    ap.add_argument("--sims", default="0,1,2", help="simulation seeds for --simulate")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = out / "cases.csv"
    rows = read_rows(table)
    if not args.report_only:
        if args.simulate and args.loops:
            simulate_loops([g for g in args.simulate.split(",") if g],
                           [int(s) for s in args.sims.split(",") if s], Path(args.loops),
                           args.data_dir)
        record_cases(cases_of(args, measure), table, FIELDS, rows, lambda row: (
            f"steps {row['hops']}: labelled {row['val_labelled']}, all {row['val_all']}"))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
