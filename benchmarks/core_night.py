"""The training stage of a nightly run, in one process, without the orchestration around it.

For machines that hold torch, torch-geometric, pyarrow and scipy but not Prefect, Great
Expectations, MLflow or DuckDB (the lent GPU machine): a DC-SBM snapshot of ``--nodes`` nodes (the
one :mod:`benchmarks.scale` generates: 10 classes, 64 features, mean degree 10, half the nodes of
known classes labelled) is read, split, trained and predicted exactly as the nightly flow's
``train`` task does (:func:`tasks.intake.read_snapshot`, :func:`tasks.fitting.train`, Parquet
predictions), then scored against its truth file. ``--warm`` then runs a second, warm night on the
same snapshot from the cold night's model (``warm_epochs``), as the flow does when nothing changed.

``stage_s`` is reading the snapshot plus the ``train`` step (fit, model, predictions, history);
the contract check, MLflow registration and DuckDB publish are not in it: their time at scale is
measured on CPU by :mod:`benchmarks.pipeline` / :mod:`benchmarks.ingest`. Run::

    python -m benchmarks.core_night --nodes 1000000 --warm [--set KEY=VALUE ...]

Each night appends one row to ``benchmarks/results/core_night/core_night.csv`` (``graph`` names the start,
the epochs and any override; ``device``; ``epoch_s`` the median steady epoch; ``stage_s``;
``gpu_peak_gb`` the largest CUDA allocation, empty on CPU; ``batch`` how the fit batched and why;
``accuracy``).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.records import append_csv

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = ["graph", "nodes", "edges", "device", "epoch_s", "stage_s", "gpu_peak_gb", "batch",
           "accuracy"]


def snapshot_for(nodes: int, root: Path) -> Path:
    from data_contracts.synthetic import generate_snapshot
    found = sorted((root / "synthetic").glob("snapshot=*"))
    if found:
        return found[-1]
    return generate_snapshot(root, "synthetic", date="2026-01-01", num_nodes=nodes, seed=0)


def night(folder: Path, run_dir: Path, overrides: dict, init: dict | None = None) -> tuple[dict, object]:
    import torch

    from data_contracts import snapshots as snap
    from oral_core.config import ORALConfig
    from tasks import fitting, intake, scoring

    config = ORALConfig.from_dict(ORALConfig().to_dict() | {"progress": False} | overrides)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    snapshot = snap.snapshot_from_files(intake.read_snapshot(folder))
    result = fitting.train(snapshot, config, run_dir, init=init)
    stage = time.perf_counter() - start
    import json
    history = json.loads(Path(result.history_path).read_text())
    steady = [h["seconds"] for h in history if "seconds" in h and "pseudo_labels" in h] or \
        [h["seconds"] for h in history if "seconds" in h]
    import numpy as np
    import pyarrow.parquet as pq
    pred = pq.read_table(result.predictions_path, columns=["class_key"]).column(0).to_numpy()
    scored = scoring.score(snapshot, np.asarray(pred), result.num_known)
    label = (f"synthetic-{_short(snapshot.num_nodes)} ({result.start}, {result.epochs} epochs"
             + "".join(f", {k}={v}" for k, v in overrides.items()) + ")")
    peak = torch.cuda.max_memory_allocated() / 2**30 if result.device.startswith("cuda") else None
    row = {"graph": label, "nodes": snapshot.num_nodes, "edges": int(snapshot.edge_index.shape[1]),
           "device": _device(result.device), "epoch_s": round(statistics.median(steady), 3),
           "stage_s": round(stage, 1), "gpu_peak_gb": "" if peak is None else round(peak, 2),
           "batch": result.batch_reason,
           "accuracy": "-" if scored is None else
           f"All {scored['all']:.1f} Known {scored['known']:.1f} Novel {scored['novel']:.1f}"}
    return row, result


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _device(device: str) -> str:
    import torch
    if device.startswith("cuda"):
        return torch.cuda.get_device_name().replace(",", " ")
    return f"cpu-{torch.get_num_threads()}threads"


def append(row: dict, out: Path) -> None:
    append_csv(out, row, COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--warm", action="store_true", help="also a warm night from the cold model")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--state", type=Path, default=ROOT / "state" / "core_night")
    ap.add_argument("--out", type=Path, default=RESULTS / "core_night" / "core_night.csv")
    args = ap.parse_args(argv)
    from benchmarks.profile import parse_overrides
    overrides = parse_overrides(args.set)
    folder = snapshot_for(args.nodes, args.state / str(args.nodes) / "snapshots")
    print(f"snapshot {folder}", flush=True)
    row, cold = night(folder, args.state / str(args.nodes) / "cold", overrides)
    print(row, flush=True)
    append(row, args.out)
    if args.warm:
        init = {"model_path": cold.model_path, "predictions_path": cold.predictions_path,
                "warm_from": "cold"}
        row, _ = night(folder, args.state / str(args.nodes) / "warm", overrides, init)
        print(row, flush=True)
        append(row, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
