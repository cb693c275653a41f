"""Scoring: clustering accuracy (Eq. 14), GCD and ORCA conventions, class-number error."""
from __future__ import annotations

import math

import pytest
import torch

from oral_core.metrics import (class_balanced_accuracy, class_number_error, cluster_accuracy,
                               contingency, fixed_id_accuracy, from_contingency, matched_correct,
                               open_world_accuracy, orca_accuracy)


def t(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long)


def test_relabelled_perfect_prediction_scores_one() -> None:
    y_true = t([0, 0, 1, 1, 2, 2, 5, 5])
    y_pred = t([7, 7, 3, 3, 9, 9, 0, 0])
    assert cluster_accuracy(y_true, y_pred) == 1.0
    scores = open_world_accuracy(y_true, y_pred, known_classes=[0, 1])
    assert scores == {"all": 1.0, "known": 1.0, "novel": 1.0}


def test_hand_computed_matching_beats_greedy() -> None:
    # 10 items. Contingency (predicted group x true class):
    #            true 0   true 1
    #   pred 5      4        3
    #   pred 8      3        0
    # Greedy would take 5->0 (4) and then 8->1 (0): 4 correct.
    # The best one-to-one map is 5->1 (3) and 8->0 (3): 6 correct, accuracy 6/10.
    y_true = t([0, 0, 0, 0, 1, 1, 1, 0, 0, 0])
    y_pred = t([5, 5, 5, 5, 5, 5, 5, 8, 8, 8])
    assert cluster_accuracy(y_true, y_pred) == pytest.approx(0.6)
    assert matched_correct(y_true, y_pred).tolist() == [False] * 4 + [True] * 6


def test_unmatched_extra_groups_count_as_errors() -> None:
    # Four groups for two classes: only two groups can be matched, one item each.
    assert cluster_accuracy(t([0, 0, 1, 1]), t([0, 1, 2, 3])) == pytest.approx(0.5)


def test_arbitrary_large_ids_are_remapped() -> None:
    y_true = t([1000, 1000, 7, 7, 7])
    y_pred = t([123456, 123456, 3, 3, 123456])
    # 123456 -> 1000 (2 correct), 3 -> 7 (2 correct): 4/5.
    assert cluster_accuracy(y_true, y_pred) == pytest.approx(0.8)


def test_known_and_novel_split_by_hand() -> None:
    # known classes {0, 1}, novel {2, 3}.
    # Contingency: p0: t0 x2 | p1: t0 x1, t1 x3 | p2: t2 x2, t3 x1 | p3: t3 x1
    # Best map: 0->0, 1->1, 2->2, 3->3 with 2 + 3 + 2 + 1 = 8 of 10 correct.
    # Known nodes (first 6): items 0, 1, 3, 4, 5 correct -> 5/6.
    # Novel nodes (last 4): items 6, 7, 9 correct, item 8 (pred 2, true 3) wrong -> 3/4.
    y_true = t([0, 0, 0, 1, 1, 1, 2, 2, 3, 3])
    y_pred = t([0, 0, 1, 1, 1, 1, 2, 2, 2, 3])
    scores = open_world_accuracy(y_true, y_pred, known_classes=t([0, 1]))
    assert scores["all"] == pytest.approx(0.8)
    assert scores["known"] == pytest.approx(5 / 6)
    assert scores["novel"] == pytest.approx(3 / 4)


def test_orca_novel_differs_from_gcd_novel() -> None:
    # known {0}, novel {1}. Six known nodes predicted 0; novel nodes predicted 0, 0, 0, 7.
    # GCD (one matching): p0 has t0 x6, t1 x3; p7 has t1 x1. Best: 0->0, 7->1 (7 correct),
    #   so novel accuracy is 1/4 (only the node predicted 7).
    # ORCA: the novel nodes alone: p0 x3, p7 x1, matched 0->1: novel accuracy 3/4;
    #   known accuracy compares ids directly: 6/6.
    y_true = t([0] * 6 + [1] * 4)
    y_pred = t([0] * 6 + [0, 0, 0, 7])
    gcd = open_world_accuracy(y_true, y_pred, known_classes=[0])
    orca = orca_accuracy(y_true, y_pred, known_classes=[0])
    assert gcd == pytest.approx({"all": 0.7, "known": 1.0, "novel": 0.25})
    assert orca == pytest.approx({"all": 0.7, "known": 1.0, "novel": 0.75})


def test_orca_known_compares_ids_directly() -> None:
    y_true = t([0, 0, 1, 1, 2, 2])
    y_pred = t([1, 1, 0, 0, 2, 2])  # known classes swapped: perfect up to relabelling only
    assert open_world_accuracy(y_true, y_pred, [0, 1])["known"] == 1.0
    assert orca_accuracy(y_true, y_pred, [0, 1])["known"] == 0.0


def test_fixed_ids_hand_computed() -> None:
    # known {0, 1}, novel {2, 3}. Known nodes: t0 x4 predicted 0,0,0,1 (3 right); t1 x2 predicted
    # 1,7 (1 right: 7 is a novel id, wrong on a known node). Novel nodes: t2 x3 predicted 7,7,0;
    # t3 x3 predicted 8,8,7. Novel ids over truly novel nodes: 7->{t2: 2, t3: 1}, 8->{t3: 2};
    # best map 7->2, 8->3: 4 right; the t2 node predicted 0 is wrong whatever the map.
    y_true = t([0, 0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 3])
    y_pred = t([0, 0, 0, 1, 1, 7, 7, 7, 0, 8, 8, 7])
    fixed = fixed_id_accuracy(y_true, y_pred, known_classes=[0, 1])
    assert fixed == pytest.approx({"all": 8 / 12, "known": 4 / 6, "novel": 4 / 6})
    # ORCA matches the novel nodes on their own, so the t2 node predicted 0 can count there
    assert orca_accuracy(y_true, y_pred, [0, 1])["known"] == pytest.approx(4 / 6)


def test_fixed_ids_give_zero_novel_to_a_closed_world_model() -> None:
    # a model that only outputs known ids: one Hungarian matching lends it novel classes (GCD
    # convention), the fixed-id convention cannot.
    y_true = t([0, 0, 1, 1, 2, 2, 2])
    y_pred = t([0, 0, 1, 1, 1, 1, 1])
    assert open_world_accuracy(y_true, y_pred, [0, 1])["novel"] == 1.0
    fixed = fixed_id_accuracy(y_true, y_pred, [0, 1])
    assert fixed == pytest.approx({"all": 4 / 7, "known": 1.0, "novel": 0.0})


def test_fixed_ids_of_a_perfect_open_world_prediction() -> None:
    y_true = t([0, 1, 2, 2, 3])
    y_pred = t([0, 1, 9, 9, 5])  # novel ids arbitrary, known ids kept
    assert fixed_id_accuracy(y_true, y_pred, [0, 1]) == pytest.approx(
        {"all": 1.0, "known": 1.0, "novel": 1.0})
    # swapping two known ids is wrong here (unlike the GCD convention)
    assert fixed_id_accuracy(t([0, 1]), t([1, 0]), [0, 1])["all"] == 0.0


def test_contingency_round_trip_rescores_identically() -> None:
    gen = torch.Generator().manual_seed(0)
    y_true = torch.randint(0, 5, (300,), generator=gen)
    y_pred = torch.randint(0, 8, (300,), generator=gen)
    table = contingency(y_true, y_pred)
    assert sum(c for _, _, c in table) == 300 and table == sorted(table)
    back_true, back_pred = from_contingency(table)
    for score in (open_world_accuracy, orca_accuracy, fixed_id_accuracy):
        assert score(back_true, back_pred, [0, 1, 2]) == pytest.approx(score(y_true, y_pred, [0, 1, 2]))
    assert contingency(t([]), t([])) == []
    with pytest.raises(ValueError, match="contingency"):
        from_contingency([[0, 1]])


def test_empty_subsets_give_nan() -> None:
    scores = open_world_accuracy(t([0, 1, 1]), t([0, 1, 1]), known_classes=[0, 1])
    assert scores["all"] == 1.0 and scores["known"] == 1.0 and math.isnan(scores["novel"])
    orca = orca_accuracy(t([2, 2]), t([5, 5]), known_classes=[0])
    assert math.isnan(orca["known"]) and orca["novel"] == 1.0
    assert math.isnan(cluster_accuracy(t([]), t([])))


def test_class_number_error() -> None:
    assert class_number_error(5, 7) == 2.0
    assert class_number_error(9, 7) == 2.0
    assert class_number_error(7, 7) == 0.0


@pytest.mark.parametrize("y_true, y_pred, message", [
    (torch.tensor([0, 1]), torch.tensor([0]), "differ in length"),
    (torch.tensor([0.0, 1.0]), torch.tensor([0, 1]), "integer"),
    (torch.tensor([0, -1]), torch.tensor([0, 1]), "non-negative"),
    (torch.tensor([[0, 1]]), torch.tensor([[0, 1]]), "1-D"),
])
def test_bad_inputs_raise(y_true: torch.Tensor, y_pred: torch.Tensor, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cluster_accuracy(y_true, y_pred)


def test_class_balanced_accuracy_weighs_every_class_the_same() -> None:
    # Class 0 (8 items) and class 1 (2 items) all in one group: All matches the group to class 0
    # and scores 8/10, the class-balanced mean (1 + 0) / 2 = 0.5. Splitting two of class 0 off
    # into class 1's group keeps All at 8/10 but finds class 1: balanced (6/8 + 1) / 2.
    y_true = t([0] * 8 + [1] * 2)
    merged = t([4] * 10)
    assert cluster_accuracy(y_true, merged) == pytest.approx(0.8)
    assert class_balanced_accuracy(y_true, merged) == pytest.approx(0.5)
    split = t([4] * 6 + [5] * 2 + [5] * 2)  # group 5: two of class 0, both of class 1
    assert cluster_accuracy(y_true, split) == pytest.approx(0.8)  # 6 + 2 right
    assert class_balanced_accuracy(y_true, split) == pytest.approx((6 / 8 + 1.0) / 2)
    assert math.isnan(class_balanced_accuracy(t([]), t([])))


def test_adjusted_rand_index_reads_groupings_not_ids():
    from sklearn.metrics import adjusted_rand_score

    from oral_core.metrics import adjusted_rand_index

    a = [0, 0, 1, 1, 2, 2, 2]
    assert adjusted_rand_index(a, [5, 5, 3, 3, 9, 9, 9]) == 1.0  # renamed ids: the same grouping
    g = torch.Generator().manual_seed(0)
    x, y = torch.randint(0, 4, (200,), generator=g), torch.randint(0, 5, (200,), generator=g)
    assert abs(adjusted_rand_index(x, y) - adjusted_rand_score(x.numpy(), y.numpy())) < 1e-12
    assert abs(adjusted_rand_index(x, y)) < 0.05  # unrelated partitions
    merged = [0, 0, 0, 0, 2, 2, 2]
    assert abs(adjusted_rand_index(a, merged) - adjusted_rand_score(a, merged)) < 1e-12
    assert adjusted_rand_index([1, 1], [2, 2]) == 1.0 and math.isnan(adjusted_rand_index([1], [1]))
