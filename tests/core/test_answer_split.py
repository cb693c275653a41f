"""The answer-level known-split check (oral_core.answer, ``ORAL_NIGHT_ANSWER=...+split``): each
novel class of the answer judged by the known-split check on its own validation nodes."""
from __future__ import annotations

import pytest
import torch


def test_the_answer_split_check_drops_a_novel_class_its_validation_nodes_call_known():
    """Known classes 0-1 hold 2 unlabelled nodes per validation node. Novel class 2 holds as many validation nodes per unlabelled node as the known classes: it is
    all known by that estimate and dropped; novel class 3 holds none and stays."""
    from oral_core.answer import answer_known_split, drop_classes

    answer = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, -1])
    val = torch.tensor([0, -1, -1, 1, -1, -1, 0, -1, -1, -1, -1, -1, -1])
    unlabelled = torch.tensor([0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1], dtype=torch.bool)
    dropped = answer_known_split(answer, val, unlabelled, 2, 0.5)
    assert dropped.tolist() == [False, False, True, False]
    namer = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1])
    assert drop_classes(answer, namer, dropped).tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 0, 3, 3, 3,
                                                             -1]
    assert not answer_known_split(answer, val, unlabelled, 2, 1.5).any()


def test_every_node_gets_a_known_name_even_when_oral_names_the_known_classes():
    from oral_core.answer import known_namer_of_every_node

    val = torch.tensor([0, 1, 1, -1])
    nodes = torch.tensor([True, True, True, False])
    oral, lr, gcn = torch.tensor([0, 1, 1, 5]), torch.tensor([0, 0, 0, 0]), torch.tensor([0, 1, 0, 1])
    both = {"oral": oral, "lr": lr, "gcn": gcn}
    assert known_namer_of_every_node(both, "lr", val, nodes) is lr
    assert known_namer_of_every_node(both, "oral", val, nodes) is gcn  # the better of the rest
    with pytest.raises(ValueError, match="only ORAL's own naming"):
        known_namer_of_every_node({"oral": oral}, "oral", val, nodes)


def test_split_answer_drops_only_what_the_check_calls_known_and_needs_a_namer_of_every_node():
    from oral_core.answer import split_answer

    answer = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, -1])
    val = torch.tensor([0, -1, -1, 1, -1, -1, 0, -1, -1, -1, -1, -1, -1])
    unlabelled = torch.tensor([0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1], dtype=torch.bool)
    lr = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1])
    decided = {"answer": answer, "namer": "lr", "candidates": {"oral": answer, "lr": lr}}
    split, dropped = split_answer(decided, val, unlabelled, 2, 0.5)
    assert dropped == 1 and split.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 0, 3, 3, 3, -1]
    alone = {"answer": answer, "namer": "oral", "candidates": {"oral": answer}}
    assert split_answer(alone, val, unlabelled, 2, 0.5) == (answer, 0)

