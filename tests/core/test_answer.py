"""The night's answer decided per class (oral_core.answer, ORAL_NIGHT_ANSWER=per_class)."""
from __future__ import annotations

import torch

from oral_core.answer import (best_known_namer, cross_fitted_right, fit_known_gcn,
                              known_validation_nodes, per_class_answer)
from oral_core.reference import reference_predictions, reference_val_predictions


def test_known_nodes_take_the_namer_and_novel_nodes_keep_oral():
    class_id = torch.tensor([0, 1, 2, 3, -1, 1])  # 2 known classes: 2 and 3 are novel groups
    namer = torch.tensor([1, 0, 1, 0, 1, 1])
    assert per_class_answer(class_id, namer, 2).tolist() == [1, 0, 2, 3, -1, 1]


def test_the_namer_is_chosen_on_the_validation_nodes_oral_names_known_ties_keep_oral():
    val = torch.tensor([0, 1, 0, 1, -1, 0])
    class_id = torch.tensor([0, 0, 0, 1, 0, 5])  # node 5 sits in a novel group: not compared
    nodes = known_validation_nodes(class_id, val, 2)
    assert nodes.tolist() == [True, True, True, True, False, False]
    perfect = torch.tensor([0, 1, 0, 1, 1, 1])
    assert best_known_namer({"oral": class_id, "lr": perfect}, val, nodes) == "lr"
    # the LR right where ORAL is, and better only on a node ORAL puts in a novel group: a tie
    only_novel = torch.tensor([0, 0, 0, 1, 0, 0])
    assert best_known_namer({"oral": class_id, "lr": only_novel, "gcn": only_novel},
                            val, nodes) == "oral"
    worse = torch.tensor([1, 0, 1, 0, 0, 0])
    assert best_known_namer({"oral": class_id, "gcn": worse}, val, nodes) == "oral"


def test_the_cross_fitted_count_never_reads_the_node_it_scores():
    """A namer right on exactly one half of the nodes wins that half's choice and is scored on the
    other half, where it is wrong: the cross-fitted count sees through the in-sample choice."""
    n = 40
    val = torch.zeros(n, dtype=torch.long)
    nodes = torch.ones(n, dtype=torch.bool)
    constant = torch.zeros(n, dtype=torch.long)
    assert cross_fitted_right({"oral": constant}, val, nodes) == (n, n)
    wrong = torch.ones(n, dtype=torch.long)
    assert cross_fitted_right({"oral": wrong, "lr": constant}, val, nodes) == (n, n)
    assert cross_fitted_right({"oral": wrong}, val, nodes) == (0, n)


def test_the_known_gcn_reads_the_graph():
    """Features say nothing, edges say everything: the GCN names the unlabelled nodes by their
    neighbours, a logistic regression on the features cannot."""
    torch.manual_seed(0)
    n, k = 200, 2
    truth = torch.arange(n) % k
    x = torch.randn(n, 8)
    src = torch.randint(0, n, (2000,))
    dst = torch.randint(0, n, (2000,))
    same = truth[src] == truth[dst]
    edges = torch.stack([src[same], dst[same]])
    train = torch.full((n,), -1)
    train[:40] = truth[:40]
    named = fit_known_gcn(x, edges, train, k, seed=0)
    assert float((named[40:] == truth[40:]).float().mean()) > 0.9


def test_the_reference_names_every_node_as_it_names_the_validation_nodes():
    torch.manual_seed(0)
    n = 120
    truth = torch.arange(n) % 3
    x = torch.randn(n, 5) + torch.nn.functional.one_hot(truth, 5).float() * 3
    train, val = torch.full((n,), -1), torch.full((n,), -1)
    train[:60], val[60:90] = truth[:60], truth[60:90]
    for scale in ("labelled", "all"):
        every = reference_predictions(x, train, val, scale)
        on_val = reference_val_predictions(x, train, val, scale)
        assert (every[60:90] == on_val[60:90]).all() and (on_val[90:] == -1).all()
        assert (every >= 0).all() and float((every == truth).float().mean()) > 0.9
    assert reference_predictions(x, torch.full((n,), -1), val) is None


def test_the_paired_choice_leaves_oral_unless_beaten_beyond_chance():
    from oral_core.answer import best_known_namer, cross_fitted_right

    n = 40
    val = torch.zeros(n, dtype=torch.long)
    nodes = torch.ones(n, dtype=torch.bool)
    oral = torch.zeros(n, dtype=torch.long)
    oral[:3] = 1  # ORAL wrong on 3 nodes
    gcn = torch.zeros(n, dtype=torch.long)  # right on all: 3 discordant, p 0.25
    assert best_known_namer({"oral": oral, "gcn": gcn}, val, nodes) == "gcn"
    assert best_known_namer({"oral": oral, "gcn": gcn}, val, nodes, paired_alpha=0.05) == "oral"
    oral[:12] = 1  # wrong on 12: p 0.0005
    assert best_known_namer({"oral": oral, "gcn": gcn}, val, nodes, paired_alpha=0.05) == "gcn"
    right, total = cross_fitted_right({"oral": oral, "gcn": gcn}, val, nodes, paired_alpha=0.05)
    assert total == n and right >= n - 12
