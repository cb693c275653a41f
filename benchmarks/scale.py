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
    python -m benchmarks.scale --nodes 10000 100000 --epochs 200 --warm
    python -m benchmarks.scale --nodes 18000 --wide 6800 --epochs 200 --warm

``--wide F`` gives the snapshot F sparse bag-of-words features instead of 64 dense ones
(:func:`wide_snapshot`; rows named ``synthetic-18k-wide6800``).

``--warm`` adds a second night after each cold one: the same graph under the next day's date
(a copy of the snapshot with 1% of its edges dropped, so the warm night's features, node ids and
configuration match and no fallback can fire), run with ``oral run --warm`` on the same state
directory, so it continues the cold night's champion for ``warm_epochs`` epochs. Its row's graph column says
``warm, W epochs after a cold night of E``.

Each call appends rows to ``benchmarks/results/scale/scale.csv`` (columns
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


def generate(nodes: int, folder: Path, wide: int | None = None) -> Path:
    """The benchmark's first snapshot under ``folder/snapshots`` (made once): the generator's
    DC-SBM with 64 dense features, or with ``wide`` sparse bag-of-words features instead
    (:func:`wide_snapshot`)."""
    from data_contracts.synthetic import generate_snapshot
    snapshots = folder / "snapshots"
    if not any(snapshots.glob("synthetic/snapshot=*")):
        if wide:
            wide_snapshot(snapshots, nodes, wide)
        else:
            generate_snapshot(snapshots, "synthetic", date="2026-01-01", num_nodes=nodes, seed=0)
    return snapshots


def wide_snapshot(snapshots: Path, nodes: int, width: int, seed: int = 0) -> Path:
    """A snapshot of the generator's structure (10 classes, mean degree 10) whose features are
    ``width`` sparse binary bag-of-words columns (:func:`benchmarks.profile.wide_features`, about
    40 words a node, as BlogCatalog's are about 0.4% non-zero); the known classes (the first 8)
    labelled on half their nodes, as :func:`data_contracts.synthetic.generate_snapshot` does."""
    import numpy as np
    import torch
    from benchmarks.profile import wide_features
    from data_contracts import snapshots as snap
    from data_contracts.synthetic import default_num_known, make_static_graph

    g = make_static_graph(num_nodes=nodes, num_classes=10, num_features=8, avg_degree=10.0,
                          seed=seed)
    x = wide_features(torch.from_numpy(g.y).long(), width, seed=seed).numpy()
    rng = np.random.default_rng([seed, 4])
    labelled = (g.y < default_num_known(10)) & (rng.random(nodes) < 0.5)
    names = np.array(g.class_names, dtype=object)
    label = [names[c] if keep else None for c, keep in zip(g.y, labelled)]
    ids = np.arange(nodes, dtype=np.int64)
    return snap.write_snapshot(snapshots, "synthetic", "2026-01-01",
                               snap.nodes_table(ids, x, label),
                               snap.edges_table(g.edges[0], g.edges[1]),
                               snap.truth_table(ids, list(names[g.y])))


def next_night(snapshots: Path, churn: float = 0.01) -> str:
    """The (first) snapshot under the next day's date with ``churn`` of its edges dropped (every
    ``1/churn``-th row; nodes, features and labels unchanged), so the night differs from the last
    (an unchanged snapshot reuses the last training, see ``flows.nightly``) while a warm start
    stays possible. Returns that date."""
    import datetime as dt

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    first = _first_snapshot(snapshots)
    day = dt.date.fromisoformat(_date_of(first)) + dt.timedelta(days=1)
    target = first.with_name(f"snapshot={day.isoformat()}")
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(first, partial)
        edges = pq.read_table(first / "edges.parquet")
        step = max(2, round(1 / churn))
        keep = np.arange(edges.num_rows) % step != 0
        pq.write_table(edges.filter(pa.array(keep)), partial / "edges.parquet")
        partial.rename(target)
    return day.isoformat()


def _first_snapshot(snapshots: Path) -> Path:
    """The oldest snapshot folder of the synthetic graph (the cold night's)."""
    return sorted(snapshots.glob("synthetic/snapshot=*"))[0]


def _date_of(snapshot: Path) -> str:
    return snapshot.name.split("=", 1)[1]


def scale_folder(nodes: int, wide: int | None = None) -> Path:
    """Where a size's snapshots and state live (``state/bench_scale/N`` or ``N-wideF``)."""
    return ROOT / "state" / "bench_scale" / (f"{nodes}-wide{wide}" if wide else str(nodes))


def nightly(nodes: int, epochs: int, overrides: list[str], device: str,
            warm_date: str | None = None, wide: int | None = None) -> dict:
    """One ``oral run`` in a fresh process: cold on the first snapshot (a fresh state directory),
    or, with ``warm_date``, ``--warm`` on that night's snapshot over the cold night's state;
    ``wide``: the snapshot of :func:`wide_snapshot`."""
    folder = scale_folder(nodes, wide)
    snapshots = generate(nodes, folder, wide)
    state = folder / "state"
    cmd = [sys.executable, "-m", "cli.main", "run", "--graph", "synthetic", "--snapshots",
           str(snapshots), "--state-dir", str(state), "--epochs", str(epochs)]
    if warm_date is None:
        shutil.rmtree(state, ignore_errors=True)
        cmd += ["--cold", "--date", _date_of(_first_snapshot(snapshots))]
    else:
        cmd += ["--warm", "--date", warm_date]
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
    if warm_date is not None and not re.search(r"; warm start \(", proc.stdout + proc.stderr):
        raise SystemExit(f"the warm night did not start warm (its summary line says why):\n"
                         f"{(proc.stdout + proc.stderr)[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    newest = max(state.rglob("history.json"), key=lambda p: p.stat().st_mtime)
    history = json.loads(newest.read_text())
    # epochs with every module on (pseudo-labels and refinement start at pol_start_epoch); a run
    # too short to reach them reports its warm-up epochs
    steady = [h["seconds"] for h in history if "seconds" in h and "pseudo_labels" in h] or \
        [h["seconds"] for h in history if "seconds" in h]
    edges = _edge_count(snapshots, warm_date)
    ran = sum(1 for h in history if "seconds" in h)
    night = f"warm, {ran} epochs after a cold night of {epochs}" if warm_date else f"{epochs} epochs"
    name = f"synthetic-{_short(nodes)}" + (f"-wide{wide}" if wide else "")
    label = f"{name} ({night}" + "".join(f", {o}" for o in overrides) + ")"
    scored = re.search(r"scored (All [\d.]+% Known [\d.]+% Novel [\d.]+%)", proc.stdout + proc.stderr)
    accuracy = scored.group(1) if scored else "-"
    (folder / "last_accuracy.txt").write_text(accuracy)
    return {"graph": label, "nodes": nodes, "edges": edges, "device": _device(proc.stdout + proc.stderr),
            "epoch_s": round(statistics.median(steady), 2), "nightly_s": round(wall, 1),
            "peak_mem_gb": round(peak, 2), "accuracy": accuracy}


def _edge_count(snapshots: Path, date: str | None = None) -> int:
    """Edges of the night's snapshot (``date``; the first snapshot when None)."""
    import pyarrow.parquet as pq
    path = (snapshots / "synthetic" / f"snapshot={date}" / "edges.parquet" if date else
            _first_snapshot(snapshots) / "edges.parquet")
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
    for r, accuracy in zip(rows, _accuracies(rows, acc_path)):
        lines.append(f"| {r['graph']} | {int(r['nodes']):,} | {int(r['edges']):,} | {r['device']} | "
                     f"{r['epoch_s']} | {r['nightly_s']} | {r['peak_mem_gb']} | {accuracy} |")
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


def _accuracies(rows: list[dict], acc_path: Path) -> list[str]:
    """Each scale.csv row's score: ``scale_accuracy.csv`` is appended with the same rows in the
    same order, so it pairs by position when it holds one line per row with the same graph
    labels; otherwise (a file edited apart) by label, the last score of a repeated label."""
    pairs = list(csv.reader(acc_path.open())) if acc_path.exists() else []
    if len(pairs) == len(rows) and all(p[0] == r["graph"] for p, r in zip(pairs, rows)):
        return [p[1] for p in pairs]
    by_label = dict(pairs)
    return [by_label.get(r["graph"], "-") for r in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", required=True)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--warm", action="store_true",
                    help="after each cold night, a warm night (oral run --warm) on a copy of the "
                         "snapshot dated the next day")
    ap.add_argument("--wide", type=int, default=None, metavar="F",
                    help="F sparse bag-of-words features instead of 64 dense ones (a wide graph "
                         "like BlogCatalog's)")
    ap.add_argument("--out", type=Path, default=RESULTS / "scale" / "scale.csv")
    args = ap.parse_args(argv)
    if args.wide is not None and args.wide < 10:
        ap.error(f"--wide {args.wide}: need at least 10 features (one topic of words a class)")
    for n in args.nodes:
        nights = [None]
        if args.warm:
            nights.append(next_night(generate(n, scale_folder(n, args.wide), args.wide)))
        for warm_date in nights:
            _record(nightly(n, args.epochs, args.set, args.device, warm_date, args.wide), args.out)
    write_report(args.out)
    return 0


def _record(row: dict, out: Path) -> None:
    print(row, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    accuracy = row.pop("accuracy")
    with out.with_name("scale_accuracy.csv").open("a", newline="") as fh:
        csv.writer(fh).writerow([row["graph"], accuracy])
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow(row)


if __name__ == "__main__":
    raise SystemExit(main())
