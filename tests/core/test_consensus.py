"""oral_core/consensus.py: one answer from several fits' class ids (the consensus_restarts study)."""
from __future__ import annotations

import torch

from oral_core.consensus import consensus_class_ids, majority_known, novel_majority


def ids(*rows):
    return [torch.tensor(r) for r in rows]


def test_known_classes_by_majority_and_the_lowest_id_on_a_tie():
    got = majority_known(torch.tensor([[0, 1, 0], [1, 1, 5], [1, 0, 5]]), 2)
    assert got.tolist() == [1, 1, 0]
    assert majority_known(torch.tensor([[0], [1]]), 2).tolist() == [0]  # tie: the lowest id
    assert majority_known(torch.tensor([[3], [4]]), 2).tolist() == [-1]  # no fit names it known


def test_novel_needs_a_strict_majority():
    got = novel_majority(torch.tensor([[2, 2, 0], [3, 0, 0], [0, 0, 0]]), 2)
    assert got.tolist() == [True, False, False]
    assert novel_majority(torch.tensor([[2], [0]]), 2).tolist() == [False]  # one of two


def test_novel_ids_renamed_across_fits_give_one_class_each():
    # two novel classes, numbered differently by each fit; known nodes 0-1 named alike
    fits = ids([0, 1, 2, 2, 3, 3], [0, 1, 7, 7, 5, 5], [0, 1, 4, 4, 6, 6])
    got = consensus_class_ids(fits, 2)
    assert got[:2].tolist() == [0, 1]
    assert got[2] == got[3] and got[4] == got[5] and got[2] != got[4]
    assert set(got[2:].tolist()) == {2, 3}


def test_a_split_seen_by_one_fit_only_is_outvoted_and_sizes_order_the_ids():
    # fits 1 and 2 keep nodes 2-5 together; fit 3 cuts them in two: the majority keeps one class
    fits = ids([0, 2, 2, 2, 2, 3, 3], [0, 4, 4, 4, 4, 9, 9], [0, 5, 5, 6, 6, 7, 7])
    got = consensus_class_ids(fits, 2)
    assert got.tolist() == [0, 2, 2, 2, 2, 3, 3]  # the larger class first


def test_a_node_most_fits_call_known_is_named_known_even_if_one_calls_it_novel():
    fits = ids([0, 2, 2], [0, 1, 2], [0, 1, 3])
    got = consensus_class_ids(fits, 2)
    assert got[0] == 0 and got[1] == 1 and got[2] >= 2


def test_one_fit_is_its_own_consensus():
    one = torch.tensor([0, 4, 4, 1])
    assert torch.equal(consensus_class_ids([one], 2), one)


def test_average_linkage_keeps_two_classes_apart_that_bridging_nodes_chain_together():
    # classes A (nodes 0-9) and B (10-19), each fit numbering them its own way; two bridging
    # nodes agree with A in two fits, with each other in two, and with B in two
    fits = ids([10] * 10 + [11] * 10 + [10, 10],
               [20] * 10 + [21] * 10 + [20, 21],
               [30] * 10 + [31] * 10 + [31, 31])
    chained = consensus_class_ids(fits, 2, linkage="components")
    assert len(set(chained.tolist())) == 1  # A, B and the bridges in one class
    apart = consensus_class_ids(fits, 2, linkage="average")
    assert len(set(apart[:10].tolist())) == 1 and len(set(apart[10:20].tolist())) == 1
    assert apart[0] != apart[10]


def test_an_unknown_linkage_is_refused():
    import pytest

    with pytest.raises(ValueError, match="linkage must be one of"):
        consensus_class_ids(ids([0, 2], [0, 3]), 2, linkage="single")


def test_the_medoid_is_the_fit_that_agrees_most_with_the_others():
    from oral_core.consensus import medoid_restart

    # fits 0 and 2 cut nodes 2-7 alike (renamed); fit 1 cuts them another way
    fits = torch.stack(ids([0, 1, 2, 2, 2, 3, 3, 3],
                           [0, 1, 2, 3, 2, 3, 2, 3],
                           [0, 1, 5, 5, 5, 4, 4, 4]))
    assert medoid_restart(fits) in (0, 2)
    got = consensus_class_ids(fits, 2, linkage="medoid")
    assert torch.equal(got, fits[0])  # taken whole, ids untouched; the first on a tie
    # the fit whose cut lies between the two others is the medoid of three different cuts
    between = torch.stack(ids([2, 2, 2, 2, 3, 3, 3, 3], [2, 2, 2, 3, 3, 3, 3, 3],
                              [2, 2, 3, 3, 3, 3, 3, 3]))
    assert medoid_restart(between) == 1


def test_the_medoid_reads_only_the_nodes_it_is_given():
    from oral_core.consensus import medoid_restart

    p, q = [2, 2, 3, 3], [2, 3, 2, 3]
    # on nodes 0-3 fits 1 and 2 cut alike (q); on nodes 4-7 fits 0 and 2 (p)
    fits = torch.stack(ids(p + p, q + q, q + p))
    first, last = torch.arange(4), torch.arange(4, 8)
    assert medoid_restart(fits, first) == 1  # fits 1 and 2 tie; the first of them
    assert medoid_restart(fits, last) == 0
    mask = torch.zeros(8, dtype=torch.bool)
    mask[4:] = True
    assert torch.equal(consensus_class_ids(fits, 2, "medoid", mask), fits[0])
    mask = ~mask
    assert torch.equal(consensus_class_ids(fits, 2, "medoid", mask), fits[1])
