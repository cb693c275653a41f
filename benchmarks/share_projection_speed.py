"""A training step (Eq. 13: both views, forward and backward) with and without
``ORALConfig.share_first_projection``, interleaved in one process so that the machine's drift
falls on both alike.

    OMP_NUM_THREADS=1 python -m benchmarks.share_projection_speed --data-dir ../shared/datasets \\
        --dataset cora --dataset amazonphoto --dataset blogcatalog

Per graph and attention kernel: ``rounds`` rounds after ``warmup``, each timing one step without
the option then one with it (the order alternating from round to round); the medians and the
median of the per-round ratios (with the option / without) go to
``benchmarks/results/share_first_projection/steps.csv`` (appended) and are printed. The steps
run the network of an ORAL fit at the defaults (``ORALConfig``'s sizes) on the graph's features
as a fit reads them, with the first layer's input dense (``sparse_input_below=0``, the default).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from benchmarks.records import append_csv

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "share_first_projection" / "steps.csv"
COLUMNS = ["graph", "kernel", "nodes", "edges", "features", "rounds", "ms_without", "ms_with",
           "ratio_median", "ratio_low", "ratio_high"]


def one_step(net, x, edges, parts, cfg, share: bool, seed: int) -> float:
    """Seconds of one training step's two forward passes and backward pass."""
    from oral_core.consistency import adaptive_edge_drop
    from oral_core.features import input_dropout

    net.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    start = time.perf_counter()
    x_in = input_dropout(x, cfg.dropout)
    first = net.first_projection(x_in) if share else None
    outs, _ = net(x_in, edges, partitions=parts, input_dropout=False, first=first)
    view = adaptive_edge_drop(edges, x.shape[0], cfg.edge_drop_rate, cfg.edge_drop_max,
                              torch.Generator().manual_seed(seed))
    aug, _ = net(x_in, view, partitions=parts, input_dropout=False, first=first)
    loss = sum(o.p.logsumexp(1).mean() + o.h.square().mean() for o in outs + aug)
    loss.backward()
    return time.perf_counter() - start


def measure(dataset: str, data_dir, kernel: str, rounds: int, warmup: int) -> dict:
    from benchmarks.profile import load_graph
    from oral_core.attention import ORALNetwork
    from oral_core.clustering import finest_partition
    from oral_core.config import ORALConfig
    from oral_core.datasets import canonical_name

    g, x = load_graph(dataset, data_dir)
    cfg = ORALConfig()
    torch.manual_seed(0)
    net = ORALNetwork(x.shape[1], cfg.hidden_dim, cfg.num_layers, cfg.num_prototypes,
                      cfg.temperature, cfg.attention_temperature, cfg.dropout,
                      attention_kernel=kernel).train()
    labels = torch.full((x.shape[0],), -1)
    labelled = torch.arange(0, x.shape[0], 10)
    labels[labelled] = torch.as_tensor(g.y)[labelled] % 3
    with torch.no_grad():
        _, parts = net(x, g.edge_index, cluster=lambda i, r, p: finest_partition(r, labels, 3))
    without, with_, ratios = [], [], []
    for i in range(warmup + rounds):
        order = (False, True) if i % 2 == 0 else (True, False)
        t = {share: one_step(net, x, g.edge_index, parts, cfg, share, seed=i) for share in order}
        if i >= warmup:
            without.append(t[False])
            with_.append(t[True])
            ratios.append(t[True] / t[False])
    ratios.sort()
    q = max(1, len(ratios) // 4)
    return {"graph": canonical_name(g.name), "kernel": kernel, "nodes": x.shape[0],
            "edges": int(g.edge_index.shape[1]), "features": x.shape[1], "rounds": rounds,
            "ms_without": round(1000 * statistics.median(without), 1),
            "ms_with": round(1000 * statistics.median(with_), 1),
            "ratio_median": round(statistics.median(ratios), 3),
            "ratio_low": round(ratios[q - 1], 3), "ratio_high": round(ratios[-q], 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", action="append", required=True)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--kernel", action="append", choices=["gather", "spmm"], default=None)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for dataset in args.dataset:
        for kernel in args.kernel or ["gather", "spmm"]:
            row = measure(dataset, args.data_dir, kernel, args.rounds, args.warmup)
            print(row, flush=True)
            append_csv(args.out, row, COLUMNS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
