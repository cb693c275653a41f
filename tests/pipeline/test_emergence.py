"""The emergence check after a warm fit (``tasks.emergence``): labelled shares of new vs old
nodes per known class. Pure numpy on made-up nights, plus the node-id matching and the setting."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.emergence import (format_history, labelled_share_check, new_member_counts,
                             new_node_mask, parse_history)


def _night(rng, per_class_old=200, per_class_new=40, k=4, rate_old=0.5, rate_new=0.5):
    """Old and new nodes of ``k`` known classes, each labelled at its rate, predicted right."""
    truth, new = [], []
    for c in range(k):
        truth += [c] * (per_class_old + per_class_new)
        new += [False] * per_class_old + [True] * per_class_new
    truth, new = np.array(truth), np.array(new)
    rate = np.where(new, rate_new, rate_old)
    labels = np.where(rng.random(truth.size) < rate, truth, -1)
    return labels, truth.copy(), new


def test_a_night_without_a_new_class_does_not_fire():
    rng = np.random.default_rng(0)
    fired = 0
    for _ in range(50):  # the false alarm rate is at most alpha (0.01) by construction
        labels, pred, new = _night(rng)
        fired += labelled_share_check(labels, pred, new, 4).fired
    assert fired <= 2


def test_unlabelled_newcomers_absorbed_by_a_known_class_fire_it():
    labels, pred, new = _night(np.random.default_rng(1), per_class_new=60)
    # 60 nodes of a class nobody named arrive, unlabelled, and the warm model puts them in class 2
    labels = np.concatenate([labels, np.full(60, -1)])
    pred = np.concatenate([pred, np.full(60, 2)])
    new = np.concatenate([new, np.ones(60, dtype=bool)])
    out = labelled_share_check(labels, pred, new, 4, class_names=["a", "b", "c", "d"])
    assert out.fired
    assert out.reason.startswith("a class may have emerged: c: ")
    row = {r["class"]: r for r in out.rows}["c"]
    assert row["new_members"] == 120 and row["drop"] > 0.3 and 40 < row["unexplained"] < 80


def _spread(labels, pred, new, count, k=4):
    """``count`` unlabelled newcomers of a nameless class, spread evenly over the known classes."""
    return (np.concatenate([labels, np.full(count, -1)]),
            np.concatenate([pred, np.arange(count) % k]),
            np.concatenate([new, np.ones(count, dtype=bool)]))


def test_newcomers_spread_over_every_class_fire_the_pooled_test_only_with_history():
    rng = np.random.default_rng(5)
    # four earlier nights of 160 new known-class members, half labelled (as _night draws them)
    history = [new_member_counts(*_night(rng), 4) for _ in range(4)]
    assert all(60 <= l <= 100 and n == 160 for l, n in history)
    night = _spread(*_night(rng), 64)
    quiet = labelled_share_check(*night, 4)  # per class only: every class fell alike
    assert not quiet.fired
    out = labelled_share_check(*night, 4, history=history)
    assert out.fired and out.reason.startswith("a class may have emerged: all known classes "
                                               "(against the new nodes of 4 earlier nights)")
    assert {r["class"][:17] for r in out.rows} >= {"all known classes"}


def test_a_steady_lag_of_new_labels_does_not_fire_the_pooled_test():
    rng = np.random.default_rng(6)
    fired = 0
    for _ in range(200):
        history = [new_member_counts(*_night(rng, rate_new=0.2), 4) for _ in range(3)]
        fired += labelled_share_check(*_night(rng, rate_new=0.2), 4, history=history,
                                      min_drop=0.0).fired
    assert fired <= 6  # alpha 0.01 (two tests): about 2 in 200 expected


def test_history_text_round_trips_and_refuses_nonsense():
    assert parse_history(format_history([(1, 2), (3, 10)])) == [(1, 2), (3, 10)]
    assert format_history([(i, 10) for i in range(9)]) == ",".join(f"{i}/10" for i in range(2, 9))
    for bad in ("", None, "3", "a/b", "5/3", "-1/4"):
        assert parse_history(bad) == []


def test_new_nodes_labelled_later_for_every_class_alike_do_not_fire():
    rng = np.random.default_rng(2)
    fired = sum(labelled_share_check(*_night(rng, rate_new=0.1), 4).fired for _ in range(30))
    assert fired <= 1


def test_classes_with_their_own_label_rates_do_not_fire():
    rng = np.random.default_rng(3)
    fired = 0
    for _ in range(30):
        parts = [_night(rng, k=1, rate_old=r, rate_new=r) for r in (0.1, 0.3, 0.6, 0.9)]
        labels = np.concatenate([np.where(p[0] >= 0, c, -1) for c, p in enumerate(parts)])
        pred = np.concatenate([np.full(p[1].size, c) for c, p in enumerate(parts)])
        new = np.concatenate([p[2] for p in parts])
        fired += labelled_share_check(labels, pred, new, 4).fired
    assert fired <= 1


def test_what_the_check_cannot_see_is_said():
    labels, pred, new = _night(np.random.default_rng(4))
    unlabelled_new = np.where(new, -1, labels)
    out = labelled_share_check(unlabelled_new, pred, new, 4)
    assert not out.fired and "no new node is labelled" in out.reason
    out = labelled_share_check(labels, pred, np.zeros_like(new), 4)
    assert not out.fired and out.reason == "no new nodes since the continued model"
    out = labelled_share_check(labels, pred, new, 4, alpha=0.0)
    assert not out.fired and "off" in out.reason
    few = np.r_[0:5, 200:205]  # five old and five new nodes of class 0: too few old members
    out = labelled_share_check(labels[few], pred[few], new[few], 4)
    assert not out.fired and "enough old and new members" in out.reason
    with pytest.raises(ValueError, match="differ in length"):
        labelled_share_check(labels, pred[:-1], new, 4)
    with pytest.raises(ValueError, match="alpha must be in"):
        labelled_share_check(labels, pred, new, 4, alpha=1.5)


@pytest.mark.parametrize("prev_ids, tonight", [
    (pa.array([1, 2, 3], pa.int64()), pa.array([2, 3, 4, 5], pa.int64())),
    (pa.array(["1", "2", "3"]), pa.array([2, 3, 4, 5], pa.int64())),  # types differ: by text
])
def test_new_nodes_are_matched_by_node_id(tmp_path, prev_ids, tonight):
    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.table({"node_id": prev_ids, "class_key": pa.array([0, 1, 0])}), path)
    assert new_node_mask(tonight, path).tolist() == [False, False, True, True]

