"""Scaling of a whole nightly run on synthetic graphs: time per epoch, nightly wall time, peak memory.

For every size a DC-SBM snapshot (10 classes, 64 features, mean degree 10, half the nodes of known
classes labelled) is generated under ``state/bench_scale`` and one nightly run processes it in a
fresh process, exactly as a user runs it::

    oral run --graph synthetic --snapshots state/bench_scale/N/snapshots --state-dir ... --epochs E

``nightly_s`` is that command's wall time (Prefect and MLflow start-up, ingest, contracts,
training, tracking, DuckDB publish); ``epoch_s`` the median of the run's steady epochs (every
module on) from its history; ``peak_mem_gb`` the largest resident set of the run's processes
(``getrusage(RUSAGE_CHILDREN)``). Run::

    python -m benchmarks.scale --nodes 10000 --epochs 100
    python -m benchmarks.scale --nodes 100000 --epochs 20
    python -m benchmarks.scale --nodes 1000000 --epochs 3 --set batch_size=2048 \\
        --set batches_per_epoch=2 --set num_neighbors=5 --set refine_candidates_per_node=16

Each call appends rows to ``benchmarks/results/scale.csv`` (columns
``graph,nodes,edges,device,epoch_s,nightly_s,peak_mem_gb``; the graph column names the epochs and
any override) and rewrites ``scale.md`` and ``scale.png`` from the whole CSV.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = ["graph", "nodes", "edges", "device", "epoch_s", "nightly_s", "peak_mem_gb"]


def generate(nodes: int, folder: Path) -> Path:
    from data_contracts.synthetic import generate_snapshot
    snapshots = folder / "snapshots"
    if not any(snapshots.glob("synthetic/snapshot=*")):
        generate_snapshot(snapshots, "synthetic", date="2026-01-01", num_nodes=nodes, seed=0)
    return snapshots


def nightly(nodes: int, epochs: int, overrides: list[str], device: str) -> dict:
    folder = ROOT / "state" / "bench_scale" / str(nodes)
    snapshots = generate(nodes, folder)
    state = folder / "state"
    shutil.rmtree(state, ignore_errors=True)
    cmd = [sys.executable, "-m", "flows.cli", "run", "--graph", "synthetic", "--snapshots",
           str(snapshots), "--state-dir", str(state), "--epochs", str(epochs)]
    if device != "auto":
        cmd += ["--device", device]
    for item in overrides:
        cmd += ["--set", item]
    started = time.perf_counter()
    # a loaded 2-core machine can take minutes to start Prefect's temporary server
    env = os.environ | {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600"}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"nightly run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    history = json.loads(next(state.rglob("history.json")).read_text())
    # epochs with every module on (pseudo-labels and refinement start at pol_start_epoch); a run
    # too short to reach them reports its warm-up epochs
    steady = [h["seconds"] for h in history if "seconds" in h and "pseudo_labels" in h] or \
        [h["seconds"] for h in history if "seconds" in h]
    edges = _edge_count(snapshots)
    label = f"synthetic-{_short(nodes)} ({epochs} epochs" + "".join(f", {o}" for o in overrides) + ")"
    scored = re.search(r"scored (All [\d.]+% Known [\d.]+% Novel [\d.]+%)", proc.stdout + proc.stderr)
    accuracy = scored.group(1) if scored else "-"
    (folder / "last_accuracy.txt").write_text(accuracy)
    return {"graph": label, "nodes": nodes, "edges": edges, "device": _device(proc.stdout + proc.stderr),
            "epoch_s": round(statistics.median(steady), 2), "nightly_s": round(wall, 1),
            "peak_mem_gb": round(peak, 2), "accuracy": accuracy}


def _edge_count(snapshots: Path) -> int:
    import pyarrow.parquet as pq
    path = next(snapshots.glob("synthetic/snapshot=*/edges.parquet"))
    return 2 * pq.ParquetFile(path).metadata.num_rows  # both directions, as speed.csv counts


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _device(output: str) -> str:
    import torch
    if "cuda" in output and torch.cuda.is_available():
        return torch.cuda.get_device_name().replace(",", " ")
    return f"cpu-{os.environ.get('OMP_NUM_THREADS', os.cpu_count())}threads"


def _series(row: dict) -> str:
    """Runs are only comparable within one device and one training mode."""
    mode = "mini-batch" if "batch_size=" in row["graph"] else "full batch"
    return f"{row['device']}, {mode}"


def write_report(csv_path: Path) -> None:
    rows = list(csv.DictReader(csv_path.open()))
    md = csv_path.with_suffix(".md")
    lines = ["# Scaling of a nightly run (synthetic DC-SBM graphs)", "",
             "Made by `benchmarks/scale.py` (commands in its docstring). `nightly_s`: wall time of "
             "one `oral run` in a fresh process (Prefect, MLflow, ingest, contracts, training, "
             "DuckDB publish); `epoch_s`: median steady epoch; `peak_mem_gb`: largest resident "
             "set of the run's processes.", "",
             "The last column is the run's own score against the generator's truth (`truth.parquet`): "
             "one Hungarian matching over the unlabelled nodes, as `oral run` prints it.", "",
             "| graph | nodes | edges | device | epoch (s) | nightly run (s) | peak memory (GB) | scored |",
             "|---|---:|---:|---|---:|---:|---:|---|"]
    acc_path = csv_path.with_name("scale_accuracy.csv")
    scored = dict(csv.reader(acc_path.open())) if acc_path.exists() else {}
    for r in rows:
        lines.append(f"| {r['graph']} | {int(r['nodes']):,} | {int(r['edges']):,} | {r['device']} | "
                     f"{r['epoch_s']} | {r['nightly_s']} | {r['peak_mem_gb']} | "
                     f"{scored.get(r['graph'], '-')} |")
    md.write_text("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, key, title in zip(axes, ["epoch_s", "nightly_s", "peak_mem_gb"],
                              ["seconds per epoch", "nightly run (s)", "peak memory (GB)"]):
        for series in sorted({_series(r) for r in rows}):
            pts = sorted((int(r["nodes"]), float(r[key])) for r in rows if _series(r) == series)
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=series)
        ax.set_xlabel("nodes")
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(csv_path.with_suffix(".png"), dpi=100)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", required=True)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", type=Path, default=RESULTS / "scale.csv")
    args = ap.parse_args(argv)
    for n in args.nodes:
        row = nightly(n, args.epochs, args.set, args.device)
        print(row, flush=True)
        new = not args.out.exists()
        accuracy = row.pop("accuracy")
        with args.out.with_name("scale_accuracy.csv").open("a", newline="") as fh:
            csv.writer(fh).writerow([row["graph"], accuracy])
        with args.out.open("a", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)
            if new:
                w.writeheader()
            w.writerow(row)
    write_report(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
