"""False novelty: what ORAL reports on a graph where no novel class exists.

A nightly run sees graphs in which no new kind of node has appeared yet. This diagnostic takes a
dataset, keeps only the nodes of its known classes (the protocol ``ours`` split: the lowest class
ids are known) and the edges among them, trains ORAL with the defaults, and reports how many
classes it finds and what share of the unlabelled nodes it puts in a class it calls novel (every
one of them is a false discovery here). It chooses nothing; it reads test labels only to report.

    python -m benchmarks.false_novelty --dataset cora --seeds 3

Per-seed rows go to ``benchmarks/results/false_novelty/<dataset>/seed_<n>.json`` (resumable);
the table to ``benchmarks/results/false_novelty/false_novelty.md``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from harness.experiment import prepare
from harness.proxy import no_novel_task
from harness.reproduction import mean_se
from oral_core.splits import make_split
from oral_core.trainer import ORAL

from .tune import config_overrides

RESULTS = Path(__file__).parent / "results"


def known_only_seed(prep, seed: int, config: ORALConfig, labelled_only: bool = False) -> dict:
    """Train on the known classes' subgraph of one seed's split; score its unlabelled nodes.

    ``labelled_only``: the no-novel proxy instead (:func:`harness.proxy.no_novel_task`): the
    labelled nodes alone, half of each class's training nodes unlabelled; no test label read."""
    from torch_geometric.utils import subgraph

    g = prep.graph
    split = make_split(g.y, seed=seed)
    known = torch.zeros(g.num_classes, dtype=torch.bool)
    known[split.known_classes] = True
    if labelled_only:
        task = no_novel_task(g.y, split.train_mask, split.val_mask, split.known_classes, seed)
        keep, train, val, scored, y = (task[k] for k in ("keep", "train", "val", "scored", "y"))
    else:
        keep = known[g.y]
        y = split.known_index(g.y)[keep]
        train, val = split.train_labels(g.y)[keep], split.val_labels(g.y)[keep]
        scored = (train < 0) & (val < 0)
    edges, _ = subgraph(keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    start = time.perf_counter()
    model = ORAL(ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False}))
    found = model.fit(prep.x[keep], edges, train, val).predict()
    row = {"seed": seed, "classes_true": int(known.sum()), "nodes": int(keep.sum()),
           "labelled_only": labelled_only} | _scores(found, scored, y)
    unchecked = model.discoveries_.get("last_unchecked")
    if unchecked is not None:  # known_split_share set: the same fit without the check
        row["unchecked"] = _scores(unchecked, scored, y)
    return row | {"seconds": time.perf_counter() - start}


def _scores(found, scored: torch.Tensor, y: torch.Tensor) -> dict:
    return {"classes_found": int(found.num_classes),
            "false_novel_share": float(found.is_novel[scored].float().mean()),
            "accuracy": 100 * float((found.class_id[scored] == y[scored]).float().mean())}


HEADER = ["| graph | seed | nodes | classes (true) | unlabelled nodes called novel | accuracy % "
          "| without the check: classes, called novel, accuracy % |",
          "|---|---|---|---|---|---|---|"]


def table_rows(dataset: str, rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        u = r.get("unchecked")
        lines.append(f"| {dataset} | {r['seed']} | {r['nodes']:,} | {r['classes_found']} "
                     f"({r['classes_true']}) | {100 * r['false_novel_share']:.1f}% | {r['accuracy']:.1f} | "
                     + (f"{u['classes_found']}, {100 * u['false_novel_share']:.1f}%, {u['accuracy']:.1f} |"
                        if u else " |"))
    return lines


def summary_line(dataset: str, rows: list[dict]) -> str | None:
    """Checked against unchecked, paired within each fit (mean ± s.e. over seeds)."""
    pairs = [r for r in rows if r.get("unchecked")]
    if not pairs:
        return None
    called = mean_se([100 * (r["false_novel_share"] - r["unchecked"]["false_novel_share"]) for r in pairs])
    acc = mean_se([r["accuracy"] - r["unchecked"]["accuracy"] for r in pairs])
    return (f"- {dataset}: the check changes the share called novel by {called[0]:+.1f} ± "
            f"{called[1]:.1f} points and the accuracy by {acc[0]:+.1f} ± {acc[1]:.1f} points "
            f"({len(pairs)} seeds, paired within each fit; mean ± s.e.).")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override (e.g. known_split_share=0.5); suffixes the folder")
    ap.add_argument("--labelled-only", action="store_true",
                    help="the no-novel proxy (harness.proxy.no_novel_task): the labelled nodes "
                         "alone, half of each class's training nodes unlabelled; reads no test "
                         "label, so it may choose a default")
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    config, overrides = config_overrides(ap, args.set)
    prep = prepare(args.dataset, args.data_dir)
    name = (prep.graph.name.lower() + ("-labelled" if args.labelled_only else "")
            + "".join(f"-{k}={v}" for k, v in overrides.items()))
    folder = Path(args.results) / "false_novelty" / name
    folder.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seeds):
        path = folder / f"seed_{seed}.json"
        if path.exists():
            continue
        row = known_only_seed(prep, seed, config, args.labelled_only)
        path.write_text(json.dumps(row, indent=1))
        print(f"seed {seed}: {row['classes_found']} classes (true {row['classes_true']}), "
              f"{100 * row['false_novel_share']:.1f}% called novel ({row['seconds']:.0f}s)", flush=True)
    write_table(Path(args.results))
    return 0


def write_table(results: Path) -> None:
    """``false_novelty/false_novelty.md`` from every finished seed file: the known-class subgraph (reads test
    labels to drop the novel classes' nodes: a diagnostic) and the no-novel proxy (labelled
    nodes only: it may choose)."""
    subs = sorted(p for p in (results / "false_novelty").iterdir() if p.is_dir())
    lines = ["# False novelty: ORAL on a graph with no novel class", "",
             "Command: `OMP_NUM_THREADS=1 python -m benchmarks.false_novelty --dataset D --seeds N "
             "[--labelled-only] [--set KEY=VALUE]` (one table row per finished seed of every run "
             "so far; `--labelled-only` names the graph `D-labelled`, a `--set` override "
             "appends `-KEY=VALUE`).", "",
             "Every unlabelled node called novel is a false discovery. ORAL at its defaults (no "
             "prior) unless the graph column names an override; with `known_split_share` set, "
             "the last column is the same fit's answer without the check.", ""]
    for title, text, labelled in (
            ("Known-class subgraph (diagnostic)",
             "The nodes of the known classes only (protocol `ours` split: the lowest class ids are "
             "known) and the edges among them. Dropping the novel classes' nodes reads their "
             "labels, so this table chooses nothing.", False),
            ("No-novel proxy (labelled nodes only)",
             "The labelled nodes alone (training and validation nodes of the known classes) and "
             "the edges among them; half of each class's training nodes lose their label and are "
             "scored (`harness.proxy.no_novel_task`). No test label is read.", True)):
        mine = [p for p in subs if ("-labelled" in p.name) == labelled]
        if not mine:
            continue
        lines += [f"## {title}", "", text, "", *HEADER]
        summaries = []
        for sub in mine:
            rows = [json.loads(p.read_text()) for p in
                    sorted(sub.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1]))]
            lines += table_rows(sub.name, rows)
            summaries.append(summary_line(sub.name, rows))
        lines += [""] + [x for x in summaries if x] + [""]
    (results / "false_novelty" / "false_novelty.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
