"""ORAL epoch time against a two-layer PyG GATConv epoch on the same graph, in one process.

An ORAL epoch (Algorithm 1) is everything one iteration does: the evaluation pass with the
granularity search, the ensemble, pseudo-labels and structure refinement, and the optimiser step on
two views. Its time is the median over the epochs where every module is on (after the warm-ups).
The reference is PyG's GATConv (8 heads of 8, then 1 head), full-batch training epochs on the same
features and edges, median over as many epochs. Machines here are noisy, so only the ratio is
meant to be compared across runs.

    python -m benchmarks.speed --dataset cora --dataset amazonphoto --dataset synthetic:100000

appends one row per graph and device to ``benchmarks/results/speed/speed.csv``.

``--kernel`` (repeatable) times ORAL with each aggregation kernel of Eq. 6
(``ORALConfig.attention_kernel``: ``gather``, PyG message passing, or ``spmm``, a sparse matrix
product), each against its own GAT reference, one row each, labelled ``attention_kernel=...``
(rows without the label are ``gather``, the default). The kernel comparison of issue 18 (point 3,
``benchmarks/results/attention_kernels/attention_kernels.md``):

    OMP_NUM_THREADS=1 python -m benchmarks.speed --data-dir ../shared/datasets \
        --dataset cora --dataset amazonphoto --kernel gather --kernel spmm

``--variant K=V[,K=V]`` (repeatable) does the same for any set of overrides, e.g. the fast paths
of issue 18 against the defaults in one process:

    OMP_NUM_THREADS=1 python -m benchmarks.speed --data-dir ../shared/datasets --dataset cora \
        --variant defaults --variant attention_kernel=spmm,sparse_input_below=0.1
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv

from benchmarks.records import append_csv
from oral_core.config import ATTENTION_KERNELS, ORALConfig
from oral_core.datasets import canonical_name
from oral_core.splits import make_split
from oral_core.trainer import ORAL, select_device

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = ["graph", "device", "nodes", "edges", "oral_ms_per_epoch", "gat_ms_per_epoch", "ratio"]


class GAT(torch.nn.Module):
    def __init__(self, in_dim: int, num_classes: int):
        super().__init__()
        self.conv1 = GATConv(in_dim, 8, heads=8, dropout=0.6)
        self.conv2 = GATConv(64, num_classes, heads=1, dropout=0.6)

    def forward(self, x, edge_index):
        x = F.elu(self.conv1(F.dropout(x, 0.6, self.training), edge_index))
        return self.conv2(F.dropout(x, 0.6, self.training), edge_index)


def gat_epoch_times(x, edge_index, labels, epochs: int, device) -> list[float]:
    """Seconds of each full-batch GAT training epoch (the first two are warm-up, dropped)."""
    model = GAT(x.shape[1], int(labels.max()) + 1).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    mask = labels >= 0
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x, edge_index)[mask], labels[mask])
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times[2:] if len(times) > 4 else times


def oral_epoch_ms(x, edge_index, labels, val, config: ORALConfig) -> float:
    """Median steady epoch; with ``eval_every`` > 1 the mean over whole cycles of
    ``eval_every`` epochs (one evaluated, the others training only), since a median would
    report a training-only epoch."""
    model = ORAL(config).fit(x, edge_index, labels, val)
    steady = [h["seconds"] for h in model.history_
              if "seconds" in h and h["epoch"] >= max(config.pol_start_epoch, config.cluster_warmup_epochs)]
    k = config.eval_every
    if k > 1:
        cycles = len(steady) // k * k
        if cycles == 0:
            raise ValueError(f"eval_every={k}: fewer than {k} steady epochs to time; raise --epochs")
        return 1000 * statistics.fmean(steady[:cycles])
    return 1000 * statistics.median(steady)


def measure(dataset: str, epochs: int, device_name: str, data_dir=None,
            overrides: dict | None = None) -> dict:
    from benchmarks.profile import load_graph
    g, x = load_graph(dataset, data_dir)  # a dataset name / path, or synthetic:N
    split = make_split(g.y, seed=0)
    device = select_device(device_name)
    labels, val = split.train_labels(g.y), split.val_labels(g.y)
    config = ORALConfig(epochs=epochs, pol_start_epoch=epochs // 3, cluster_warmup_epochs=epochs // 6,
                        device=str(device), progress=False, **(overrides or {}))
    args = (x.to(device), g.edge_index.to(device), labels.to(device), epochs // 2 + 2, device)
    gat = gat_epoch_times(*args)  # half the reference before ORAL and half after, so that a
    oral_ms = oral_epoch_ms(x, g.edge_index, labels, val, config)  # load change hits both
    gat_ms = 1000 * statistics.median(gat + gat_epoch_times(*args))
    name = canonical_name(g.name) + "".join(f" {k}={v}" for k, v in (overrides or {}).items())
    return {"graph": name, "device": _device_name(device), "nodes": g.num_nodes,
            "edges": g.num_edges, "oral_ms_per_epoch": round(oral_ms, 1),
            "gat_ms_per_epoch": round(gat_ms, 1), "ratio": round(oral_ms / gat_ms, 2)}


def _device_name(device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device).replace(",", " ")
    return f"cpu-{torch.get_num_threads()}threads"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", action="append", required=True)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override, e.g. --set batch_size=8192")
    ap.add_argument("--kernel", action="append", default=[], choices=ATTENTION_KERNELS,
                    help="time ORAL with this attention kernel (repeatable; one row each)")
    ap.add_argument("--variant", action="append", default=[], metavar="K=V[,K=V]",
                    help="time ORAL with these ORALConfig overrides on top of --set (repeatable; "
                         "one row each, labelled with them; 'defaults' for none)")
    ap.add_argument("--out", type=Path, default=RESULTS / "speed" / "speed.csv")
    args = ap.parse_args(argv)
    from benchmarks.profile import parse_overrides
    overrides = parse_overrides(args.set)
    if args.kernel and args.variant:
        ap.error("--kernel and --variant: choose one (a variant can set attention_kernel)")
    variants = ([{"attention_kernel": k} for k in args.kernel]
                + [{} if v == "defaults" else parse_overrides(v.split(",")) for v in args.variant])
    runs = [(name, overrides | variant) for name in args.dataset for variant in (variants or [{}])]
    for name, settings in runs:
        row = measure(name, args.epochs, args.device, args.data_dir, settings)
        print(row, flush=True)
        append_csv(args.out, row, COLUMNS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
