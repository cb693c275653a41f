"""Describing classes: characteristic features (lift), exemplars, purity."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from oral_core.interpret import Feature, characteristic_features, exemplars, purity


def planted(seed: int = 0):
    """300 nodes, 3 classes, 20 noisy features; feature 7 is strong in class 1 only, feature 12
    in class 2 only; class 0 has nothing special."""
    rng = np.random.default_rng(seed)
    class_id = np.repeat(np.arange(3), 100)
    x = rng.uniform(0.0, 1.0, size=(300, 20)).astype(np.float32)
    x[class_id == 1, 7] += 5.0
    x[class_id == 2, 12] += 3.0
    return x, class_id


def test_planted_feature_has_the_highest_lift() -> None:
    x, class_id = planted()
    found = characteristic_features(x, class_id, num_classes=3, top=3)
    assert len(found) == 3
    assert found[1][0].index == 7 and found[1][0].name == "f7"
    assert found[2][0].index == 12
    # hand check of the measure on the top feature of class 1
    inside = x[class_id == 1, 7].mean()
    outside = x[class_id != 1, 7].mean()
    assert found[1][0].lift == pytest.approx((inside + 1e-3) / (outside + 1e-3), rel=1e-6)
    assert found[1][0].class_mean == pytest.approx(inside, rel=1e-6)
    # sorted by decreasing lift, and class 0 has no feature anywhere near the planted lifts
    lifts = [f.lift for f in found[1]]
    assert lifts == sorted(lifts, reverse=True)
    assert found[0][0].lift < 1.5 < found[1][0].lift


def test_names_are_used_when_given_and_torch_input_works() -> None:
    x, class_id = planted()
    names = [f"word_{i}" for i in range(20)]
    found = characteristic_features(torch.from_numpy(x), torch.from_numpy(class_id), 3, top=2,
                                    feature_names=names)
    assert found[1][0] == Feature(7, "word_7", found[1][0].lift, found[1][0].class_mean)
    assert found[2][0].name == "word_12"
    with pytest.raises(ValueError):
        characteristic_features(x, class_id, 3, feature_names=names[:5])


def test_features_absent_from_a_class_are_ignored_and_empty_classes_are_empty() -> None:
    # feature 0 is zero in class 0 and one elsewhere: it must never characterise class 0
    x = np.zeros((6, 2), dtype=np.float32)
    x[3:, 0] = 1.0
    x[:, 1] = 1.0
    class_id = np.array([0, 0, 0, 1, 1, 1])
    found = characteristic_features(x, class_id, num_classes=3)
    assert [f.index for f in found[0]] == [1]
    assert found[1][0].index == 0
    assert found[2] == []  # class 2 has no members


def test_exemplars_are_the_most_confident_members() -> None:
    class_id = np.array([0, 1, 0, 1, 0, 2, 0, -1])
    confidence = np.array([0.5, 0.9, 0.8, 0.7, 0.95, 0.4, 0.8, 1.0])
    ex = exemplars(class_id, confidence, num_classes=4, top=3)
    assert ex[0] == [4, 2, 6]  # 0.95, then the 0.8 tie by lower index
    assert ex[1] == [1, 3]
    assert ex[2] == [5]
    assert ex[3] == []  # no members; node 7 (class -1) belongs to no class


def test_purity_and_majority_label() -> None:
    class_id = np.array([0, 0, 0, 1, 1, 2])
    truth = np.array([3, 3, 1, 2, -1, -1])
    pur, maj = purity(class_id, truth, num_classes=3, num_truth=4)
    assert pur[0] == pytest.approx(2 / 3) and maj[0] == 3
    assert pur[1] == 1.0 and maj[1] == 2
    assert math.isnan(pur[2]) and maj[2] == -1
