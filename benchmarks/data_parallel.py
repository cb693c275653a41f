"""One graph trained by several worker processes (``ORALConfig.shards``, issue 61 item 4).

    python -m benchmarks.data_parallel curves --seeds 0 1 2 --epochs 60 --nodes 3000
    python -m benchmarks.data_parallel scaling --workers 1 2 4 --nodes 20000 --epochs 4
    python -m benchmarks.data_parallel scaling --workers 1 2 4 --nodes 100000 --epochs 3 \
        --batch-size 256 --num-neighbors 5 --batches-per-epoch 20 --name scaling_100k.csv

``curves``: on a planted graph (:func:`oral_core.synthetic.make_attributed_sbm`, five classes,
the lowest four known) each seed is fitted three ways with the same global batch: one process
(``shards=1``), two worker processes over gloo (:func:`oral_core.workers.fit_data_parallel`)
and two parts in one process (``shards=2``, the arithmetic the workers must reproduce). Writes
every epoch's loss (``curves.csv``) and per seed (``answers.csv``): whether the two workers'
losses and answer equal the one-process parts' exactly, the largest and the mean relative gap
between the two workers' loss curve and one process's, the adjusted Rand index between their
answers on the test nodes, and each arm's All / Known / Novel on the test nodes (a diagnostic:
this benchmark chooses nothing).

``scaling``: the same kind of graph at ``--nodes``, ``--epochs`` epochs with batches of
``--batch-size`` seed nodes (``--num-neighbors`` sampled per node and layer, optionally
``--batches-per-epoch`` steps an epoch), trained by 1, 2 and 4 workers (one torch thread each). Writes
worker 0's median epoch time, its training and evaluation parts, the seconds spent in the
gradient all-reduce and their share of the epoch, and the speed-up against one worker measured
in the same run (``scaling.csv``). On a machine with fewer cores than workers the workers share
cores; the machine is in the file.
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from oral_core.workers import fit_data_parallel
from oral_core.metrics import adjusted_rand_index, open_world_accuracy
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL

OUT = Path(__file__).resolve().parent / "results" / "data_parallel"
#: the history keys that are the training part of an epoch (the rest of the epoch evaluates)
TRAIN_SECTIONS = ("sampling", "train_forward", "augmentation", "augmented_forward", "backward",
                  "all_reduce")


def planted(nodes: int, seed: int):
    """A five-class planted graph (noisy features, 70% of edges inside a class) and its
    open-world split (the lowest four classes known)."""
    g = make_attributed_sbm(num_nodes=nodes, num_classes=5, feature_dim=32, homophily=0.7,
                            feature_noise=2.5, seed=seed)
    split = make_split(g.y, seed, known_fraction=0.8)
    return g, split


def losses(oral: ORAL) -> list[float]:
    return [row["loss"] for row in oral.history_ if "loss" in row]


def fit_arm(arm: str, cfg: ORALConfig, g, split):
    """Fit one arm: ``one`` (one process), ``workers`` (two processes), ``parts`` (two parts in
    one process). Returns the fitted model and its seconds."""
    args = (g.x, g.edge_index, split.train_labels(g.y), split.val_labels(g.y))
    started = time.perf_counter()
    if arm == "workers":
        oral = fit_data_parallel(cfg, 2, *args)
    else:
        oral = ORAL(cfg, shards=2 if arm == "parts" else 1).fit(*args)
    return oral, time.perf_counter() - started


def scores(oral: ORAL, g, split) -> dict[str, float]:
    test = split.test_mask
    pred = oral.predict().class_id
    return open_world_accuracy(g.y[test], pred[test], split.known_classes)


def curves(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    curve_rows, answer_rows = [], []
    for seed in args.seeds:
        g, split = planted(args.nodes, seed)
        cfg = ORALConfig(epochs=args.epochs, batch_size=args.batch_size, seed=seed, progress=False)
        fits = {arm: fit_arm(arm, cfg, g, split) for arm in ("one", "workers", "parts")}
        curve = {arm: losses(oral) for arm, (oral, _) in fits.items()}
        for arm, values in curve.items():
            curve_rows += [{"seed": seed, "arm": arm, "epoch": e, "loss": v}
                           for e, v in enumerate(values)]
        one, two = curve["one"], curve["workers"]
        gaps = [abs(a - b) / max(abs(a), 1e-12) for a, b in zip(one, two)]
        test = split.test_mask
        row = {"seed": seed, "nodes": args.nodes, "epochs": args.epochs,
               "batch_size": args.batch_size,
               "workers_equal_parts": curve["workers"] == curve["parts"] and torch.equal(
                   fits["workers"][0].predict().class_id, fits["parts"][0].predict().class_id),
               "max_relative_gap": max(gaps), "mean_relative_gap": statistics.fmean(gaps),
               "ari_one_workers": adjusted_rand_index(fits["one"][0].predict().class_id[test],
                                                      fits["workers"][0].predict().class_id[test])}
        for arm, (oral, seconds) in fits.items():
            s = scores(oral, g, split)
            row |= {f"{arm}_all": 100 * s["all"], f"{arm}_known": 100 * s["known"],
                    f"{arm}_novel": 100 * s["novel"], f"{arm}_seconds": seconds}
        answer_rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()},
              flush=True)
    write(OUT / "curves.csv", curve_rows)
    write(OUT / "answers.csv", answer_rows)


def scaling(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    g, split = planted(args.nodes, 0)
    cfg = ORALConfig(epochs=args.epochs, batch_size=args.batch_size, seed=0, progress=False,
                     num_neighbors=args.num_neighbors, batches_per_epoch=args.batches_per_epoch)
    fit_args = (g.x, g.edge_index, split.train_labels(g.y), split.val_labels(g.y))
    rows, base = [], None
    for workers in args.workers:
        torch.set_num_threads(1)
        started = time.perf_counter()
        oral = (ORAL(cfg).fit(*fit_args) if workers == 1
                else fit_data_parallel(cfg, workers, *fit_args))
        wall = time.perf_counter() - started
        trained = [r for r in oral.history_ if "loss" in r]
        epoch = statistics.median(r["seconds"] for r in trained)
        train = statistics.median(sum(r.get(f"t_{k}", 0.0) for k in TRAIN_SECTIONS) for r in trained)
        talk = statistics.median(r.get("communication_seconds", 0.0) for r in trained)
        base = epoch if base is None else base
        rows.append({"workers": workers, "nodes": args.nodes, "edges": int(g.edge_index.shape[1]),
                     "batch_size": args.batch_size, "num_neighbors": args.num_neighbors,
                     "batches_per_epoch": args.batches_per_epoch, "epochs": args.epochs,
                     "median_epoch_s": round(epoch, 3), "train_part_s": round(train, 3),
                     "evaluation_part_s": round(epoch - train, 3),
                     "all_reduce_s": round(talk, 3), "communication_share": round(talk / epoch, 4),
                     "speedup_vs_1": round(base / epoch, 3), "wall_s": round(wall, 1),
                     "cores": os.cpu_count(), "machine": platform.machine(),
                     "torch": torch.__version__})
        print(rows[-1], flush=True)
    write(OUT / args.name, rows)


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    print(f"wrote {path}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="task", required=True)
    c = sub.add_parser("curves", allow_abbrev=False,
                       help="loss curves and answers: one process against two workers")
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c.add_argument("--epochs", type=int, default=60)
    c.add_argument("--nodes", type=int, default=3000)
    c.add_argument("--batch-size", type=int, default=512)
    s = sub.add_parser("scaling", allow_abbrev=False,
                       help="epoch time and communication for 1, 2, 4 workers")
    s.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    s.add_argument("--nodes", type=int, default=20000)
    s.add_argument("--epochs", type=int, default=4)
    s.add_argument("--batch-size", type=int, default=1024)
    s.add_argument("--num-neighbors", type=int, default=10)
    s.add_argument("--batches-per-epoch", type=int, default=None)
    s.add_argument("--name", default="scaling.csv", help="the CSV file written under the folder")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    (curves if args.task == "curves" else scaling)(args)


if __name__ == "__main__":
    main()
