"""Pipeline overhead: everything a nightly run does besides training, as a fraction of training.

    python -m benchmarks.pipeline [--epochs 100] [--data-dir DIR]

Runs the nightly flow (in-process Prefect, MLflow SQLite, DuckDB file, in a fresh state folder
``state/bench_pipeline``) on Cora-sized snapshots, one after the other in one process:

- ``cora`` night 1 and night 2 (the Cora import with the paper's labelling, seeds 0 and 1),
- ``synthetic`` (a 2708-node DC-SBM graph from the generator, no download needed).

``training_s`` is ORAL's fit as timed inside the train task; ``overhead_s`` is the rest of the
flow's wall time (snapshot discovery, reading and hashing, contracts, feature preparation,
scoring, class description, MLflow logging and registration, lineage, DuckDB, the Prefect
artifact and the orchestration itself). The first run of the process also pays one-off costs
(the in-process Prefect server's start, imports of Great Expectations and MLflow, MLflow's schema
creation); they are reported in their own column and not counted in the ratio, since a
long-lived worker pays them once. Results: ``benchmarks/results/pipeline/pipeline.{csv,md}``.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "pipeline"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--state", type=Path, default=ROOT / "state" / "bench_pipeline")
    args = ap.parse_args(argv)
    shutil.rmtree(args.state, ignore_errors=True)
    from flows.settings import configure_environment

    configure_environment(args.state)
    import torch

    from data_contracts.importers import import_dataset
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    root = args.state / "snapshots"
    jobs = []
    try:
        import_dataset("cora", root, graph="cora", date="2026-01-01", seed=0, data_dir=args.data_dir)
        import_dataset("cora", root, graph="cora", date="2026-01-02", seed=1, data_dir=args.data_dir)
        jobs += [("cora", "2026-01-01"), ("cora", "2026-01-02")]
    except Exception as err:  # no Cora files: the synthetic graph alone
        print(f"cora skipped: {err}", file=sys.stderr)
    static = make_static_graph(num_nodes=2708, num_classes=7, num_features=128, separation=4.0,
                               seed=0, name="synthetic")
    simulate(static, 1, root, "synthetic", start_date="2026-01-01", seed=0)
    jobs.append(("synthetic", "2026-01-01"))

    t0 = time.perf_counter()
    from flows.nightly import nightly_discovery
    import_s = time.perf_counter() - t0
    rows = []
    for i, (graph, day) in enumerate(jobs):
        start = time.perf_counter()
        out = nightly_discovery(graph, str(root), day, {"epochs": args.epochs}, str(args.state))
        wall = time.perf_counter() - start
        training = out["train_seconds"]
        from data_contracts.snapshots import snapshot_dir
        import pyarrow.parquet as pq
        path = snapshot_dir(root, graph, day)
        nodes = pq.read_metadata(path / "nodes.parquet").num_rows
        edges = pq.read_metadata(path / "edges.parquet").num_rows
        row = {"graph": f"{graph}@{day}", "nodes": nodes, "edges": edges,
               "training_s": round(training, 2), "overhead_s": round(wall - training, 2),
               "overhead_ratio": round((wall - training) / training, 3),
               "first_run_of_process": i == 0}
        print(row, flush=True)
        rows.append(row)
    warm = [r for r in rows if not r["first_run_of_process"]]
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / "pipeline.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["graph", "nodes", "edges", "training_s", "overhead_s",
                                           "overhead_ratio"])
        w.writeheader()
        for r in warm:
            w.writerow({k: r[k] for k in w.fieldnames})
    cmd = "python -m benchmarks.pipeline " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# Pipeline overhead on Cora-sized snapshots", "",
             f"Command: `{cmd.strip()}` (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
             f"torch threads {torch.get_num_threads()}, {os.cpu_count()} cores, CPU).", "",
             "Overhead = the nightly flow's wall time minus ORAL's training time. `pipeline.csv` holds",
             "the runs of a warm process (a long-lived worker); the first run of the process also pays",
             f"one-off costs (Prefect's in-process server start, MLflow's schema, imports; importing the flow module took {import_s:.1f} s).", "",
             "| run | nodes | edges | training s | overhead s | overhead / training | first run of the process |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['nodes']:,} | {r['edges']:,} | {r['training_s']} | "
                     f"{r['overhead_s']} | {100 * r['overhead_ratio']:.1f}% | {r['first_run_of_process']} |")
    (RESULTS / "pipeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
