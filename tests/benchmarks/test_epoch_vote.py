"""The epoch-vote diagnostic: novel ids aligned across epochs before the vote."""
from __future__ import annotations

import torch

from benchmarks.epoch_vote import aligned, epoch_vote


def test_novel_ids_are_renamed_to_the_reference_they_overlap():
    reference = torch.tensor([0, 1, 2, 2, 3, 3])  # two known classes (0, 1), novel 2 and 3
    earlier = torch.tensor([0, 1, 3, 3, 2, 2])    # the same grouping, novel ids swapped
    assert aligned(earlier, reference, num_known=2).tolist() == reference.tolist()


def test_known_ids_keep_their_meaning():
    reference = torch.tensor([0, 0, 1, 2])
    earlier = torch.tensor([1, 0, 0, 2])
    assert aligned(earlier, reference, num_known=2)[:3].tolist() == [1, 0, 0]


def test_vote_takes_each_nodes_most_frequent_aligned_class():
    last = torch.tensor([0, 2, 2, 3])
    swapped = torch.tensor([0, 3, 3, 2])          # same as last once aligned
    other = torch.tensor([1, 3, 2, 3])            # node 0 says 1 once; node 1 disagrees once
    voted = epoch_vote([swapped, other, swapped, last], num_known=2)
    assert voted.tolist() == [0, 2, 2, 3]
