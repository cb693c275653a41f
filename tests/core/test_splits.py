"""The open-world split protocol: known classes, stratified train/val sampling, masks."""
from __future__ import annotations

import math

import pytest
import torch

from oral_core.splits import OpenWorldSplit, make_split

SIZES = [20, 30, 40, 10, 7, 13, 25]  # seven classes, as Cora


@pytest.fixture
def y() -> torch.Tensor:
    labels = torch.cat([torch.full((n,), c, dtype=torch.long) for c, n in enumerate(SIZES)])
    return labels[torch.randperm(labels.numel(), generator=torch.Generator().manual_seed(0))]


def same(a: OpenWorldSplit, b: OpenWorldSplit) -> bool:
    return (torch.equal(a.known_classes, b.known_classes)
            and torch.equal(a.train_mask, b.train_mask)
            and torch.equal(a.val_mask, b.val_mask) and torch.equal(a.test_mask, b.test_mask))


def test_same_seed_same_split_and_different_seed_different(y: torch.Tensor) -> None:
    assert same(make_split(y, seed=3), make_split(y, seed=3))
    assert not same(make_split(y, seed=3), make_split(y, seed=4))


def test_masks_disjoint_and_cover_all_nodes(y: torch.Tensor) -> None:
    split = make_split(y, seed=0)
    total = split.train_mask.int() + split.val_mask.int() + split.test_mask.int()
    assert torch.equal(total, torch.ones_like(total))


def test_default_known_classes_are_the_lowest(y: torch.Tensor) -> None:
    split = make_split(y, seed=0)
    assert split.known_classes.tolist() == [0, 1, 2, 3, 4]  # floor(0.8 * 7) = 5
    assert split.num_known == 5


def test_per_class_counts_follow_the_fractions(y: torch.Tensor) -> None:
    split = make_split(y, seed=1)
    for c, n in enumerate(SIZES):
        in_class = y == c
        n_train = int((split.train_mask & in_class).sum())
        n_val = int((split.val_mask & in_class).sum())
        if c < 5:
            assert (n_train, n_val) == (math.floor(0.7 * n), math.floor(0.15 * n))
        else:  # novel classes: all test
            assert (n_train, n_val) == (0, 0)
            assert bool(split.test_mask[in_class].all())


def test_labels_never_name_a_novel_class(y: torch.Tensor) -> None:
    split = make_split(y, seed=2, known_classes=[1, 3, 6])
    index = split.known_index(y)
    novel = ~torch.isin(y, torch.tensor([1, 3, 6]))
    assert bool((index[novel] == -1).all())
    assert torch.equal(split.known_classes[index[~novel]], y[~novel])
    for labels, mask in ((split.train_labels(y), split.train_mask),
                         (split.val_labels(y), split.val_mask)):
        assert bool((labels[~mask] == -1).all())
        assert bool(((labels[mask] >= 0) & (labels[mask] < 3)).all())
        assert bool(torch.isin(y[labels >= 0], split.known_classes).all())
    assert not bool((split.train_mask | split.val_mask)[novel].any())


def test_explicit_known_classes_are_sorted(y: torch.Tensor) -> None:
    split = make_split(y, seed=0, known_classes=[6, 1, 3])
    assert split.known_classes.tolist() == [1, 3, 6]


def test_random_known_choice_is_seeded(y: torch.Tensor) -> None:
    choices = {tuple(make_split(y, seed=s, known_choice="random").known_classes.tolist())
               for s in range(10)}
    assert len(choices) > 1
    assert all(len(c) == 5 and list(c) == sorted(c) for c in choices)
    a = make_split(y, seed=7, known_choice="random")
    assert same(a, make_split(y, seed=7, known_choice="random"))


def test_non_contiguous_class_ids() -> None:
    y = torch.tensor([2] * 10 + [5] * 10 + [9] * 10)
    split = make_split(y, seed=0)
    assert split.known_classes.tolist() == [2, 5]  # floor(0.8 * 3) = 2 of the present classes
    assert int(split.train_mask.sum()) == 14 and int(split.val_mask.sum()) == 2
    assert split.known_index(y).unique().tolist() == [-1, 0, 1]


@pytest.mark.parametrize("kwargs, message", [
    ({"known_fraction": 1.0}, "known_fraction"),
    ({"known_fraction": 0.0}, "known_fraction"),
    ({"known_fraction": 0.1}, "gives 0 known classes"),
    ({"train_fraction": 0.9, "val_fraction": 0.2}, "at most 1"),
    ({"train_fraction": 0.0}, "train_fraction"),
    ({"val_fraction": -0.1}, "val_fraction"),
    ({"known_classes": [0, 9]}, r"\[9\] do not occur"),
    ({"known_classes": [1, 1]}, "duplicates"),
    ({"known_classes": []}, "empty"),
    ({"known_classes": list(range(7))}, "novel"),
    ({"known_choice": "highest"}, "known_choice"),
])
def test_bad_arguments_raise(y: torch.Tensor, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_split(y, seed=0, **kwargs)


def test_bad_labels_raise() -> None:
    with pytest.raises(ValueError, match="integer"):
        make_split(torch.tensor([0.0, 1.0]), seed=0)
    with pytest.raises(ValueError, match="non-negative"):
        make_split(torch.tensor([0, -1, 1]), seed=0)
