"""Where an ORAL epoch spends its time, per section, on real and synthetic graphs.

Sections (``ORAL.history_`` rows carry them as ``t_<section>``; see ``oral_core.trainer.Stopwatch``):

- ``eval_forward``: the no-gradient pass of the L layers (projection, prototype scoring Eq. 1,
  group assignment Eq. 3, group-aware attention Eq. 5-6), clustering excluded;
- ``cluster``: the granularity search on each layer's prototype graph (top-k association, Jaccard
  graph, Leiden over the resolution sweep, Hungarian matching, Eq. 3-4);
- ``ensemble``: padding, layer alignment, averaging and suppression (Eq. 8-9), class ids;
- ``pseudo_labels``: the top-gamma selection;
- ``refinement``: structure refinement with sampled candidate pairs (Eq. 10-11);
- ``sampling``: neighbour sampling of the mini-batches (mini-batch training only);
- ``train_forward``: the training pass and the losses of Eq. 7 and Eq. 2;
- ``augmentation``: adaptive edge dropping; ``augmented_forward``: the second view and Eq. 12;
- ``backward``: back-propagation and the optimiser step.

Means are over the steady epochs (every module on). Run::

    python -m benchmarks.profile --graph cora --graph synthetic:100000 --epochs 12

writes ``benchmarks/results/profile/profile.md`` and ``profile.csv``.
"""
from __future__ import annotations

import argparse
import csv
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from oral_core.splits import make_split
from oral_core.trainer import ORAL

RESULTS = Path(__file__).resolve().parent / "results"
SECTIONS = ["eval_forward", "cluster", "ensemble", "pseudo_labels", "refinement", "sampling",
            "train_forward", "augmentation", "augmented_forward", "backward"]


def load_graph(spec: str, data_dir=None):
    """``cora`` / ``amazonphoto`` / ``blogcatalog``, ``synthetic:N`` (DC-SBM, 10 classes,
    128 features, mean degree 10), or ``wide:N:F`` (the same structure with ``F`` sparse binary
    bag-of-words features, :func:`wide_features`)."""
    if spec.startswith("wide:"):
        from oral_core.graph import Graph, canonical_edges
        from data_contracts.synthetic import make_static_graph
        n, width = (int(float(v)) for v in spec.split(":")[1:3])
        g = make_static_graph(num_nodes=n, num_classes=10, num_features=8, avg_degree=10.0, seed=0)
        y = torch.from_numpy(g.y).long()
        x = wide_features(y, width, seed=0)
        edge_index = canonical_edges(torch.from_numpy(g.edges), n)
        return Graph(x=x, edge_index=edge_index, y=y, name=f"wide-{n}x{width}"), x
    if spec.startswith("synthetic:"):
        from oral_core.graph import Graph, canonical_edges
        from data_contracts.synthetic import make_static_graph
        n = int(float(spec.split(":", 1)[1]))
        g = make_static_graph(num_nodes=n, num_classes=10, num_features=128, avg_degree=10.0, seed=0)
        x = torch.from_numpy(g.x).float()
        edge_index = canonical_edges(torch.from_numpy(g.edges), n)
        return Graph(x=x, edge_index=edge_index, y=torch.from_numpy(g.y).long(),
                     name=f"synthetic-{n}"), x
    from harness.experiment import prepare
    prep = prepare(spec, data_dir)
    return prep.graph, prep.x


def wide_features(y: torch.Tensor, width: int, words: int = 40, topic_share: float = 0.7,
                  seed: int = 0) -> torch.Tensor:
    """Binary bag-of-words features, ``[N, width]`` (dense float, about ``words / width``
    non-zero, as BlogCatalog's 8,189 are about 0.4%): each class has a topic of ``width / 10``
    words; a node draws ``words`` words, a ``topic_share`` of them from its class's topic, the
    rest from the whole vocabulary."""
    gen = torch.Generator().manual_seed(seed)
    n, classes = y.numel(), int(y.max()) + 1
    topic = max(1, width // 10)
    topics = torch.stack([torch.randperm(width, generator=gen)[:topic] for _ in range(classes)])
    from_topic = int(round(words * topic_share))
    picks = topics[y][torch.arange(n)[:, None],
                      torch.randint(0, topic, (n, from_topic), generator=gen)]
    anywhere = torch.randint(0, width, (n, words - from_topic), generator=gen)
    x = torch.zeros(n, width)
    x.scatter_(1, torch.cat([picks, anywhere], 1), 1.0)
    return x


def parse_overrides(pairs: list[str]) -> dict:
    """``KEY=VALUE`` pairs (values parsed as JSON when they can be) for :class:`ORALConfig`."""
    import json
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def profile(spec: str, epochs: int, device: str, data_dir=None, overrides: dict | None = None) -> dict:
    graph, x = load_graph(spec, data_dir)
    split = make_split(graph.y, seed=0)
    cfg = ORALConfig(epochs=epochs, cluster_warmup_epochs=1, pol_start_epoch=2, device=device,
                     progress=True, **(overrides or {}))
    started = time.perf_counter()
    model = ORAL(cfg).fit(x, graph.edge_index, split.train_labels(graph.y), split.val_labels(graph.y))
    total = time.perf_counter() - started
    steady = [h for h in model.history_ if h["epoch"] >= cfg.pol_start_epoch and "seconds" in h]
    name = graph.name + ("" if not overrides else " " + ",".join(f"{k}={v}" for k, v in overrides.items()))
    row = {"graph": name, "nodes": graph.num_nodes, "edges": graph.num_edges,
           "device": _device_name(device), "epochs_measured": len(steady),
           "epoch_s": statistics.mean(h["seconds"] for h in steady)}
    for name in SECTIONS:
        row[name + "_s"] = statistics.mean(h.get("t_" + name, 0.0) for h in steady)
    row["fit_s"] = total
    row["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return row


def _device_name(device: str) -> str:
    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        return torch.cuda.get_device_name().replace(",", " ")
    return f"cpu-{torch.get_num_threads()}threads"


def write_markdown(rows: list[dict], path: Path, command: str) -> None:
    lines = ["# Where an ORAL epoch spends its time", "", f"Command: `{command}`", "",
             "Mean seconds per steady epoch (every module on), and each section's share of the "
             "epoch. Sections are described in `benchmarks/profile.py`.", ""]
    head = "| section | " + " | ".join(f"{r['graph']} ({r['nodes']:,} nodes, {r['edges']:,} edges, "
                                      f"{r['device']})" for r in rows) + " |"
    lines += [head, "|---" * (len(rows) + 1) + "|"]
    for name in SECTIONS + ["epoch"]:
        cells = []
        for r in rows:
            share = r[name + "_s"] / r["epoch_s"] if r["epoch_s"] else 0.0
            cells.append(f"{r[name + '_s']:.3f} s ({100 * share:.0f}%)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| peak RSS | " + " | ".join(f"{r['peak_rss_gb']:.2f} GB" for r in rows) + " |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", action="append", required=True)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override for every graph, e.g. --set batch_size=4096")
    ap.add_argument("--out", type=Path, default=RESULTS / "profile" / "profile.md",
                    help="the Markdown file (its .csv twin is written beside it)")
    args = ap.parse_args(argv)
    if args.out.is_dir() or args.out.suffix != ".md":  # checked before minutes of profiling
        ap.error(f"--out {args.out}: must name a Markdown file (…/name.md), not a folder")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in args.graph:
        row = profile(spec, args.epochs, args.device, args.data_dir, parse_overrides(args.set))
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        rows.append(row)
    command = "python -m benchmarks.profile " + " ".join(sys.argv[1:] if argv is None else argv)
    write_markdown(rows, args.out, command)
    with args.out.with_suffix(".csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
