"""The known-class guard of the per-graph choice (``harness.proxy``: :func:`keeps_known_classes`,
:func:`find_guard`, :func:`full_task_accuracy`, the ``guard`` of :func:`choose_setting`)."""
from __future__ import annotations

import json

import pytest
import torch

from oral_core.config import ORALConfig
from harness.proxy import (GUARD_DROP, choose_setting, find_guard, full_task_accuracy, guard_key,
                             keeps_known_classes)


def test_the_guard_refuses_only_a_clear_drop_beyond_the_tolerance():
    base = {0: 96.0, 1: 95.5, 2: 96.5}
    assert keeps_known_classes(base, {0: 96.2, 1: 95.0, 2: 96.8})["kept"]
    collapse = keeps_known_classes(base, {0: 41.0, 1: 56.7, 2: 34.5})
    assert not collapse["kept"] and collapse["val_change"] == pytest.approx(-51.93, abs=0.01)
    # a mean drop beyond the tolerance whose standard error reaches back above it is kept
    noisy = keeps_known_classes(base, {0: 96.0 - 60, 1: 95.5, 2: 96.5 - 8})
    assert noisy["val_change"] < -GUARD_DROP and noisy["kept"]
    # the tolerance is a parameter; one seed has no standard error
    assert not keeps_known_classes({0: 90.0}, {0: 84.0}, max_drop=5.0)["kept"]
    assert keeps_known_classes({0: 90.0}, {0: 84.0})["kept"]
    assert GUARD_DROP == 20.0  # benchmarks/results/known_class_guard/guard.md: between rerun noise and a collapse
    assert keeps_known_classes(base, {s: v - 15.8 for s, v in base.items()})["kept"]
    with pytest.raises(ValueError, match="at least one seed"):
        keeps_known_classes({0: 90.0}, {1: 80.0})


def _verdicts(refuse: set[str]):
    asked = []

    def guard(name):
        asked.append(name)
        return {"kept": name not in refuse}
    return asked, guard


def test_choose_asks_the_guard_from_the_highest_bound_down_and_never_below_zero():
    scores = {"defaults": {0: 50.0, 1: 60.0, 2: 55.0},
              "steady": {0: 55.0, 1: 64.0, 2: 60.0},   # bound about +4.3
              "best": {0: 60.0, 1: 70.0, 2: 66.0},     # bound about +10
              "loss": {0: 40.0, 1: 50.0, 2: 45.0}}
    cands = {"steady": {"gamma": 0.1}, "best": {"mu": 0.1}, "loss": {"pol": False}}
    asked, guard = _verdicts(set())
    assert choose_setting(scores, cands, guard=guard).name == "best" and asked == ["best"]
    asked, guard = _verdicts({"best"})
    got = choose_setting(scores, cands, guard=guard)
    assert got.name == "steady" and got.overrides == {"gamma": 0.1} and asked == ["best", "steady"]
    rows = {r["candidate"]: r for r in got.rows}
    assert rows["best"]["guard"] == {"kept": False} and rows["steady"]["guard"] == {"kept": True}
    assert "guard" not in rows["loss"]  # a candidate below 0 is never fitted on the full task
    asked, guard = _verdicts({"best", "steady"})
    assert choose_setting(scores, cands, guard=guard).overrides == {} and asked == ["best", "steady"]


def _reproduce_row(folder, config, seed, val_acc, **extra):
    folder.mkdir(parents=True, exist_ok=True)
    row = {"method": "oral", "dataset": "tiny", "seed": seed, "protocol": "ours",
           "val_acc": val_acc, "all": 99.0, "config": config.to_dict() | {"seed": seed}} | extra
    (folder / f"seed_{seed}.json").write_text(json.dumps(row))


def test_saved_full_task_fits_answer_only_the_same_fit(tmp_path):
    """A guard file or an ``oral reproduce`` ORAL row answers when the data, protocol, training
    and kept epoch match; ablation/baseline rows and rows trained under another protocol never;
    only ``val_acc`` is read."""
    cfg = ORALConfig(gamma=0.1, prior_num_classes=4)
    key = guard_key(cfg, "ours", "tiny")
    assert find_guard([tmp_path], key, 0) is None
    _reproduce_row(tmp_path / "runs" / "oral" / "tiny-prior", cfg, 0, 91.5)
    assert find_guard([tmp_path], key, 0) == 91.5
    assert find_guard([tmp_path], guard_key(cfg, "ours", "other"), 0) is None
    assert find_guard([tmp_path], guard_key(cfg, "paper", "tiny"), 0) is None
    assert find_guard([tmp_path], guard_key(ORALConfig(gamma=0.1), "ours", "tiny"), 0) is None
    assert find_guard([tmp_path], guard_key(ORALConfig(gamma=0.1, prior_num_classes=4,
                                                       selection="best_val"), "ours", "tiny"), 0) is None
    assert find_guard([tmp_path], guard_key(ORALConfig(gamma=0.1, prior_num_classes=4,
                                                       epochs=100), "ours", "tiny"), 0) is None
    _reproduce_row(tmp_path / "b" / "runs" / "gcd" / "tiny-prior", cfg, 1, 80.0, method="gcd")
    _reproduce_row(tmp_path / "c" / "runs" / "oral" / "tiny-prior", cfg, 2, 80.0, trained_under="paper")
    assert find_guard([tmp_path], key, 1) is None and find_guard([tmp_path], key, 2) is None
    guard_file = tmp_path / "choose" / "tiny-prior" / "gamma=0.1" / "guard_seed_3.json"
    guard_file.parent.mkdir(parents=True)
    guard_file.write_text(json.dumps({"key": key, "val_acc": 88.0}))
    assert find_guard([tmp_path / "choose"], key, 3) == 88.0
    assert find_guard([tmp_path / "choose"], guard_key(ORALConfig(), "ours", "tiny"), 3) is None


def test_the_full_task_fit_reads_validation_nodes_only(one_thread):
    """The guard's fit trains on the full task and reports its validation accuracy; labels
    outside the training and validation nodes (test nodes) cannot change it."""
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=200, num_classes=4, feature_dim=8, seed=3)
    split = make_split(g.y, seed=0)
    train, val = split.train_labels(g.y), split.val_labels(g.y)
    assert bool((val[~split.val_mask] == -1).all()) and bool((train[~split.train_mask] == -1).all())
    cfg = ORALConfig(epochs=5, hidden_dim=8, num_prototypes=8)
    acc = full_task_accuracy(g.x, g.edge_index, train, val, 0, cfg)
    assert 0.0 <= acc <= 100.0
    y_other = g.y.clone()
    test = ~(split.train_mask | split.val_mask)
    y_other[test] = (y_other[test] + 1) % g.num_classes  # every test label wrong
    assert torch.equal(split.train_labels(y_other), train) and torch.equal(split.val_labels(y_other), val)
    assert full_task_accuracy(g.x, g.edge_index, split.train_labels(y_other),
                              split.val_labels(y_other), 0, cfg) == acc


def test_the_guard_reads_a_fit_made_with_the_other_attention_kernel(tmp_path):
    """The same Eq. 5 computed by the other kernel answers the guard (never the proxy)."""
    _reproduce_row(tmp_path, ORALConfig(), 0, 93.0)
    assert find_guard([tmp_path], guard_key(ORALConfig(attention_kernel="spmm"), "ours", "tiny"), 0) == 93.0
