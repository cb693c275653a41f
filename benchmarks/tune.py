"""Choosing ORAL's open settings without test labels: a held-out known class as a stand-in novel class.

Model selection may only see labelled nodes of known classes. To judge settings that matter for
*novel* classes (granularity rule, attention temperature, association size, ...) this script hides
the labels of one known class (the last one; with ``--hide rotate`` seed s hides known class
s mod K, so several seeds test several stand-ins), trains ORAL on the remaining known classes, and
scores, on labelled nodes only (training and validation nodes of every known class), the
open-world accuracy with the hidden class playing the novel class. No test node is scored.

    python -m benchmarks.tune --dataset cora --seeds 2 --grid attention_temperature=1.0,0.3 \
        --grid top_k=2,3

writes ``benchmarks/results/tuning_<dataset>.md`` and ``.csv``.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from oral_core.experiment import prepare, to_dataset_ids
from oral_core.metrics import open_world_accuracy
from oral_core.splits import make_split
from oral_core.trainer import ORAL

RESULTS = Path(__file__).resolve().parent / "results"


def hidden_class(known_classes: torch.Tensor, seed: int, hide: str = "last") -> int:
    """The known class that plays the novel one: the last, or (``rotate``) the seed's turn."""
    if hide == "last":
        return int(known_classes[-1])
    if hide == "rotate":
        return int(known_classes[seed % known_classes.numel()])
    raise ValueError(f"hide must be 'last' or 'rotate', got {hide!r}")


HIDE_MODES = ("last", "rotate", "extremes")


def hide_tag(hide: str) -> str:
    """The suffix of a result folder's name for a ``--hide`` mode ("" for the default, rotate)."""
    return "" if hide == "rotate" else f"-{hide}"


def hidden_classes(known_classes: torch.Tensor, seed: int, hide: str,
                   labelled_counts: torch.Tensor | None = None) -> tuple[int, ...]:
    """The known classes that play novel ones.

    ``last`` / ``rotate`` hide one (:func:`hidden_class`). ``extremes`` hides two at once: the
    known class with the most labelled nodes and the one with the fewest (``labelled_counts[c]``,
    training plus validation nodes of class ``c``; ties go to the lower class id), so the stand-in
    novel classes differ in size the way a large and a small novel class do (with equal counts:
    the two lowest ids). Only labelled nodes are counted. It needs at least three known classes so that one stays visible."""
    if hide != "extremes":
        return (hidden_class(known_classes, seed, hide),)
    if known_classes.numel() < 3:
        raise ValueError(f"hide='extremes' needs at least 3 known classes (two hidden, one "
                         f"visible), got {known_classes.numel()}")
    if labelled_counts is None:
        raise ValueError("hide='extremes' needs the labelled node count of every class")
    sizes = {int(c): int(labelled_counts[c]) for c in known_classes}
    largest = min(sizes, key=lambda c: (-sizes[c], c))
    smallest = min((c for c in sizes if c != largest), key=lambda c: (sizes[c], c))
    return (largest, smallest)


@dataclass
class ProxyTask:
    """One held-out-class task, built from labelled nodes only.

    ``train`` / ``val`` are the label vectors ORAL sees (visible known classes re-indexed
    ``0..K-h-1``, -1 elsewhere); ``scored`` the nodes the proxy scores; ``visible`` the dataset ids
    of the visible known classes; ``hidden`` the dataset ids of the hidden ones (they play novel
    classes)."""

    train: torch.Tensor
    val: torch.Tensor
    scored: torch.Tensor
    visible: torch.Tensor
    hidden: tuple[int, ...]

    @property
    def hidden_label(self) -> int | str:
        """The hidden class id, or ``"a+b"`` when several are hidden (a table cell)."""
        return self.hidden[0] if len(self.hidden) == 1 else "+".join(map(str, self.hidden))


def proxy_task(graph, seed: int, hide: str = "last", disjoint_val: bool = False) -> ProxyTask:
    """Hide known classes' labels (one, or two with ``hide='extremes'``). Scored: every labelled
    node of the hidden classes and the visible classes' validation nodes. With ``disjoint_val``
    the visible validation nodes are halved at random (seeded): model selection reads one half,
    the proxy scores the other, so a rule that reads validation accuracy is not scored on the
    nodes it chose by."""
    split = make_split(graph.y, seed=seed)
    labelled = split.train_mask | split.val_mask
    counts = torch.bincount(graph.y[labelled], minlength=graph.num_classes)
    hidden = hidden_classes(split.known_classes, seed, hide, counts)
    hidden_t = torch.tensor(hidden, dtype=torch.long)
    visible = split.known_classes[~torch.isin(split.known_classes, hidden_t)]
    index = torch.full((graph.num_classes,), -1, dtype=torch.long)
    index[visible] = torch.arange(visible.numel())
    shown = ~torch.isin(graph.y, hidden_t)
    train = torch.where(split.train_mask & shown, index[graph.y], -1)
    val_nodes = split.val_mask & shown
    scored = labelled & ~(split.train_mask & shown)
    if disjoint_val:
        nodes = val_nodes.nonzero().flatten()
        order = torch.randperm(nodes.numel(), generator=torch.Generator().manual_seed(10_007 + seed))
        held = nodes[order[nodes.numel() // 2:]]
        val_nodes = val_nodes.clone()
        val_nodes[held] = False  # selection reads the first half only
        scored = scored & ~val_nodes
    val = torch.where(val_nodes, index[graph.y], -1)
    return ProxyTask(train, val, scored, visible, hidden)


def _proxy_config(config: ORALConfig, seed: int, num_classes: int) -> ORALConfig:
    return ORALConfig.from_dict(config.to_dict() | {
        "seed": seed, "progress": False,
        "prior_num_classes": None if config.prior_num_classes is None else num_classes})


def _proxy_accuracy(graph, task: ProxyTask, class_id: torch.Tensor) -> dict:
    pred = to_dataset_ids(class_id.long(), task.visible, graph.num_classes)
    acc = open_world_accuracy(graph.y[task.scored], pred[task.scored], task.visible)
    return {k2: 100 * v for k2, v in acc.items()} | {"classes": int(torch.unique(class_id).numel())}


def proxy_score(prep, seed: int, config: ORALConfig, hide: str = "last") -> dict:
    """Open-world accuracy (%) on labelled nodes with one known class hidden from training."""
    g = prep.graph
    task = proxy_task(g, seed, hide)
    found = ORAL(_proxy_config(config, seed, g.num_classes)).fit(
        prep.x, g.edge_index, task.train, task.val).predict()
    return _proxy_accuracy(g, task, found.class_id)


def rule_epochs(history: list[dict], horizons: list[int]) -> dict[str, int]:
    """The epoch each model-selection rule keeps, for training stopped at each horizon E:
    ``last@E`` keeps E, ``best_val@E`` the latest epoch <= E with the best validation accuracy
    (the trainer's ``selection="best_val"``). One training run of ``max(horizons)`` epochs
    answers every rule, since nothing in training depends on the total number of epochs."""
    out = {}
    for e in horizons:
        rows = [r for r in history if r["epoch"] <= e]
        best = max(rows, key=lambda r: (r["val_acc"], r["epoch"]))
        out[f"best_val@{e}"] = int(best["epoch"])
        out[f"last@{e}"] = e
    return out


def proxy_rules(prep, seed: int, config: ORALConfig, horizons: list[int],
                hide: str = "rotate") -> list[dict]:
    """The held-out-class proxy for every selection rule and horizon, from one training run.

    Validation nodes are split (``disjoint_val``): selection reads half, the proxy scores half."""
    g = prep.graph
    task = proxy_task(g, seed, hide, disjoint_val=True)
    cfg = _proxy_config(config, seed, g.num_classes)
    cfg.epochs = max(horizons)
    model = ORAL(cfg)
    model.record_epochs = True
    model.fit(prep.x, g.edge_index, task.train, task.val)
    rows = []
    for rule, epoch in rule_epochs(model.history, horizons).items():
        acc = _proxy_accuracy(g, task, model.epoch_class_ids[epoch])
        rows.append({"rule": rule, "seed": seed, "hidden": task.hidden_label, "epoch": epoch} | acc)
    return rows


def _cast(default, text: str):
    """A grid value in the type of the field's default (``none`` for None; a field whose default
    is None takes an int, else a float)."""
    if text.lower() in ("none", "null"):
        return None
    if isinstance(default, bool):
        return text.lower() in ("1", "true")
    if default is None:
        try:
            return int(text)
        except ValueError:
            return float(text)
    return type(default)(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--prior", action="store_true",
                    help="give ORAL the true total class number (the paper's 'with prior' setting)")
    ap.add_argument("--hide", choices=HIDE_MODES, default="last",
                    help="which known class plays the novel one (rotate: seed s hides class s mod "
                         "K; extremes: the largest and the smallest known class together)")
    args = ap.parse_args(argv)
    base = ORALConfig()
    if args.epochs:
        base.epochs = args.epochs
    keys, choices = [], []
    for item in args.grid:
        key, values = item.split("=", 1)
        keys.append(key)
        choices.append([_cast(getattr(base, key), v) for v in values.split(",")])
    prep = prepare(args.dataset, args.data_dir)
    if args.prior:
        base.prior_num_classes = prep.graph.num_classes
    rows = []
    for combo in itertools.product(*choices) if keys else [()]:
        cfg = ORALConfig.from_dict(base.to_dict() | dict(zip(keys, combo)))
        for seed in range(args.seeds):
            t = time.perf_counter()
            s = proxy_score(prep, seed, cfg, args.hide)
            row = dict(zip(keys, combo)) | {"seed": seed} | {k: round(v, 2) for k, v in s.items()}
            row["seconds"] = round(time.perf_counter() - t, 1)
            print(row, flush=True)
            rows.append(row)
    name = prep.graph.name.lower()
    stem = (f"tuning_{name}" + "".join(f"_{k}" for k in keys) + ("_prior" if args.prior else "")
            + ("_rotate" if args.hide == "rotate" else ""))
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / f"{stem}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [f"# Held-out-class tuning on {name} (labelled nodes only)", "",
             f"Command: `python -m benchmarks.tune {' '.join(argv or __import__('sys').argv[1:])}`", "",
             "Score: open-world accuracy (%) on labelled validation nodes plus every labelled node of the",
             "hidden known class, which plays the novel class. Mean over seeds.", "",
             "| " + " | ".join(keys) + " | all | known | novel | classes |",
             "|" + "---|" * (len(keys) + 4)]
    for combo in itertools.product(*choices) if keys else [()]:
        sel = [r for r in rows if all(r[k] == v for k, v in zip(keys, combo))]
        mean = {m: sum(r[m] for r in sel) / len(sel) for m in ("all", "known", "novel", "classes")}
        lines.append("| " + " | ".join(str(v) for v in combo) +
                     f" | {mean['all']:.2f} | {mean['known']:.2f} | {mean['novel']:.2f} | {mean['classes']:.1f} |")
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
