"""The plain reference classifier of the champion gate (oral_core.reference)."""
from __future__ import annotations

import torch

from oral_core.reference import reference_accuracy


def _blobs(n_per: int, classes: int, separation: float, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, 8, generator=g) * separation
    y = torch.arange(classes).repeat_interleave(n_per)
    x = centres[y] + torch.randn(y.numel(), 8, generator=g)
    return x, y


def _split(y: torch.Tensor, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(y.numel(), generator=g)
    train, val = torch.full_like(y, -1), torch.full_like(y, -1)
    train[order[: y.numel() // 2]] = y[order[: y.numel() // 2]]
    val[order[y.numel() // 2:]] = y[order[y.numel() // 2:]]
    return train, val


def test_separable_classes_are_learned():
    x, y = _blobs(60, 3, separation=6.0)
    train, val = _split(y)
    assert reference_accuracy(x, train, val) > 0.95


def test_labels_unrelated_to_features_stay_near_chance():
    x, _ = _blobs(100, 3, separation=6.0)
    y = torch.randint(0, 3, (x.shape[0],), generator=torch.Generator().manual_seed(1))
    train, val = _split(y)
    assert reference_accuracy(x, train, val) < 0.55


def test_sparse_features_and_unlabelled_rows():
    x, y = _blobs(40, 2, separation=6.0)
    train, val = _split(y)
    train[:10] = -1
    val[:10] = -1  # rows labelled nowhere are never read
    dense = reference_accuracy(x, train, val)
    assert reference_accuracy(x.to_sparse(), train, val) == dense


def test_no_validation_nodes_gives_none():
    x, y = _blobs(10, 2, separation=6.0)
    assert reference_accuracy(x, y, torch.full_like(y, -1)) is None
