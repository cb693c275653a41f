"""Choosing ORAL's open settings without test labels: a held-out known class as a stand-in novel class.

Model selection may only see labelled nodes of known classes. To judge settings that matter for
*novel* classes (granularity rule, attention temperature, association size, ...) this script hides
the labels of one known class (the last one; with ``--hide rotate`` seed s hides known class
s mod K, so several seeds test several stand-ins), trains ORAL on the remaining known classes, and
scores, on labelled nodes only (training and validation nodes of every known class), the
open-world accuracy with the hidden class playing the novel class. No test node is scored.

    python -m benchmarks.tune --dataset cora --seeds 2 --grid attention_temperature=1.0,0.3 \
        --grid top_k=2,3

writes ``benchmarks/results/tuning/tuning_<dataset>.md`` and ``.csv``.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import time
from pathlib import Path

from oral_core.config import ORALConfig
from harness.experiment import prepare
from harness.proxy import (HIDE_MODES, ProxyTask, hidden_class, hidden_classes,  # noqa: F401
                             proxy_accuracy, proxy_config, proxy_task)
from oral_core.trainer import ORAL

RESULTS = Path(__file__).resolve().parent / "results"


def hide_tag(hide: str) -> str:
    """The suffix of a result folder's name for a ``--hide`` mode ("" for the default, rotate)."""
    return "" if hide == "rotate" else f"-{hide}"


def proxy_score(prep, seed: int, config: ORALConfig, hide: str = "last") -> dict:
    """Open-world accuracy (%) on labelled nodes with one known class hidden from training."""
    g = prep.graph
    task = proxy_task(g, seed, hide)
    found = ORAL(proxy_config(config, seed, g.num_classes)).fit(
        prep.x, g.edge_index, task.train, task.val).predict()
    return proxy_accuracy(g, task, found.class_id)


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
    cfg = proxy_config(config, seed, g.num_classes)
    cfg.epochs = max(horizons)
    model = ORAL(cfg)
    model.record_epochs = True
    model.fit(prep.x, g.edge_index, task.train, task.val)
    rows = []
    for rule, epoch in rule_epochs(model.history_, horizons).items():
        acc = proxy_accuracy(g, task, model.epoch_class_ids_[epoch])
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


def config_overrides(ap, items: list[str]) -> tuple[ORALConfig, dict]:
    """The defaults with ``--set KEY=VALUE`` items applied (:func:`_cast`), and the overrides;
    an unknown key or an invalid value ends in ``ap.error`` (one line, exit 2)."""
    base, overrides = ORALConfig(), {}
    for item in items:
        key, _, value = item.partition("=")
        if not hasattr(base, key):
            ap.error(f"--set {item}: {key!r} is not an ORALConfig field")
        overrides[key] = _cast(getattr(base, key), value)
    try:
        config = ORALConfig.from_dict(base.to_dict() | overrides)
        config.validate()
    except ValueError as exc:
        ap.error(f"--set: {exc}")
    return config, overrides


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    out = RESULTS / "tuning"
    out.mkdir(parents=True, exist_ok=True)
    with (out / f"{stem}.csv").open("w", newline="") as fh:
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
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
