"""False novelty: what ORAL reports on a graph where no novel class exists.

A nightly run sees graphs in which no new kind of node has appeared yet. This diagnostic takes a
dataset, keeps only the nodes of its known classes (the protocol ``ours`` split: the lowest class
ids are known) and the edges among them, trains ORAL with the defaults, and reports how many
classes it finds and what share of the unlabelled nodes it puts in a class it calls novel (every
one of them is a false discovery here). It chooses nothing; it reads test labels only to report.

    python -m benchmarks.false_novelty --dataset cora --seeds 3

Per-seed rows go to ``benchmarks/results/false_novelty/<dataset>/seed_<n>.json`` (resumable);
the table to ``benchmarks/results/false_novelty.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from oral_core.experiment import prepare
from oral_core.splits import make_split
from oral_core.trainer import ORAL

from .tune import _cast

RESULTS = Path(__file__).parent / "results"


def known_only_seed(prep, seed: int, config: ORALConfig) -> dict:
    """Train on the known classes' subgraph of one seed's split; score its unlabelled nodes."""
    from torch_geometric.utils import subgraph

    g = prep.graph
    split = make_split(g.y, seed=seed)
    known = torch.zeros(g.num_classes, dtype=torch.bool)
    known[split.known_classes] = True
    keep = known[g.y]
    edges, _ = subgraph(keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    y = g.y[keep]
    train, val = split.train_labels(g.y)[keep], split.val_labels(g.y)[keep]
    start = time.perf_counter()
    found = ORAL(ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})).fit(
        prep.x[keep], edges, train, val).predict()
    scored = (train < 0) & (val < 0)
    return {"seed": seed, "classes_true": int(known.sum()), "classes_found": int(found.num_classes),
            "false_novel_share": float(found.is_novel[scored].float().mean()),
            "accuracy": 100 * float((found.class_id[scored] == y[scored]).float().mean()),
            "nodes": int(keep.sum()), "seconds": time.perf_counter() - start}


HEADER = ["| dataset | seed | nodes | classes (true) | unlabelled nodes called novel | accuracy % |",
          "|---|---|---|---|---|---|"]


def table_rows(dataset: str, rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        lines.append(f"| {dataset} | {r['seed']} | {r['nodes']:,} | {r['classes_found']} "
                     f"({r['classes_true']}) | {100 * r['false_novel_share']:.1f}% | {r['accuracy']:.1f} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override (e.g. known_split_share=0.5); suffixes the folder")
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    config, overrides = ORALConfig(), {}
    for item in args.set:
        key, _, value = item.partition("=")
        if not hasattr(config, key):
            ap.error(f"--set {item}: unknown ORAL configuration key {key!r}")
        overrides[key] = _cast(getattr(config, key), value)
    try:
        config = ORALConfig.from_dict(config.to_dict() | overrides)
        config.validate()
    except ValueError as exc:
        ap.error(f"--set: {exc}")
    prep = prepare(args.dataset, args.data_dir)
    name = prep.graph.name.lower() + "".join(f"-{k}={v}" for k, v in overrides.items())
    folder = Path(args.results) / "false_novelty" / name
    folder.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seeds):
        path = folder / f"seed_{seed}.json"
        if path.exists():
            continue
        row = known_only_seed(prep, seed, config)
        path.write_text(json.dumps(row, indent=1))
        print(f"seed {seed}: {row['classes_found']} classes (true {row['classes_true']}), "
              f"{100 * row['false_novel_share']:.1f}% called novel ({row['seconds']:.0f}s)", flush=True)
    out = Path(args.results) / "false_novelty.md"
    lines = ["# False novelty: ORAL on a graph with no novel class", "",
             "Command: `OMP_NUM_THREADS=1 python -m benchmarks.false_novelty --dataset D --seeds N "
             "[--set KEY=VALUE]` (one table row per finished seed of every dataset run so far; "
             "a `--set` override names the dataset column `D-KEY=VALUE`).", "",
             "The nodes of the known classes only (protocol `ours` split: the lowest class ids "
             "are known), the edges among them, ORAL at its defaults (no prior) unless the "
             "dataset column names an override. Every unlabelled "
             "node called novel is a false discovery. Diagnostic only: it chooses nothing.", "",
             *HEADER]
    for sub in sorted(p for p in (Path(args.results) / "false_novelty").iterdir() if p.is_dir()):
        rows = [json.loads(p.read_text()) for p in
                sorted(sub.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1]))]
        lines += table_rows(sub.name, rows)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
