"""The reference classifier's per-node answer and the paired test the champion gate applies
(oral_core.reference: reference_val_predictions, discordant, mcnemar_p)."""
from __future__ import annotations

import pytest
import torch

from oral_core.reference import (discordant, mcnemar_p, reference_accuracy,
                                 reference_val_predictions)


def test_mcnemar_is_exact_two_sided_and_quiet_without_disagreement():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(1, 0) == 1.0  # one node: no evidence either way
    assert mcnemar_p(5, 0) == pytest.approx(2 * 0.5 ** 5)
    assert mcnemar_p(6, 0) < 0.05 < mcnemar_p(5, 0)
    assert mcnemar_p(10, 10) == 1.0
    assert mcnemar_p(3, 9) == mcnemar_p(9, 3)


def test_discordant_counts_only_the_nodes_the_two_answers_disagree_on():
    val = torch.tensor([0, 1, 1, 2, -1, 0])
    answer = torch.tensor([0, 1, 5, 5, 3, 1])      # right on 0, 1
    reference = torch.tensor([0, 0, 1, 2, 0, 1])   # right on 0, 2, 3
    assert discordant(answer, reference, val) == (2, 1)  # nodes 2, 3 against node 1


def test_the_reference_answer_matches_its_accuracy():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(120) % 3
    x = torch.randn(120, 8, generator=g) + torch.nn.functional.one_hot(y, 8).float() * 2.0
    train = torch.where(torch.arange(120) < 60, y, -1)
    val = torch.where((torch.arange(120) >= 60) & (torch.arange(120) < 90), y, -1)
    pred = reference_val_predictions(x, train, val, scale="all")
    seen = val >= 0
    assert bool((pred[~seen] == -1).all()) and bool((pred[seen] >= 0).all())
    assert reference_accuracy(x, train, val, scale="all") == pytest.approx(
        float((pred[seen] == val[seen]).float().mean()))
    assert reference_val_predictions(x, train, torch.full_like(val, -1)) is None
