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


# ------------------------------------------------------------------ the novelty check (+energy)
def test_energy_propagates_to_neighbours():
    from oral_core.answer import propagated_energy

    logits = torch.tensor([[5.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # node 0 confident
    edges = torch.tensor([[0, 1], [1, 0]])  # 0 - 1; node 2 isolated
    e = propagated_energy(logits, edges, alpha=0.5, steps=1)
    raw = -torch.logsumexp(logits, 1)
    assert abs(float(e[2]) - float(raw[2])) < 1e-6  # isolated: its own energy
    assert abs(float(e[1]) - (0.5 * float(raw[1]) + 0.5 * float(raw[0]))) < 1e-6
    assert e[1] < raw[1]  # a confident neighbour lowers a node's energy


def test_the_scorer_is_the_classifier_naming_the_validation_nodes_better():
    from oral_core.answer import energy_scorer

    val = torch.tensor([0, 1, 1, -1])
    good = torch.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 2.0], [2.0, 0.0]])
    bad = torch.tensor([[0.0, 2.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    assert energy_scorer({"lr": bad, "gcn": good}, val) == "gcn"
    assert energy_scorer({"lr": good, "gcn": bad}, val) == "lr"
    assert energy_scorer({"lr": good, "gcn": good}, val) == "lr"  # ties: the first given


def test_only_novel_nodes_that_look_known_are_named_a_known_class():
    """The threshold is the validation nodes' quantile; a node of a novel group at or below it
    takes the scorer's class, one above it keeps its novel group; known nodes are untouched."""
    from oral_core.answer import known_like, novelty_checked

    energy = torch.tensor([1.0, 2.0, 3.0, 4.0, 1.5, 9.0, 0.5])
    val = torch.tensor([0, 1, 0, 1, -1, -1, -1])  # validation energies 1, 2, 3, 4
    like = known_like(energy, val, 0.5)  # median 2.5
    assert like.tolist() == [True, True, False, False, True, False, True]
    answer = torch.tensor([0, 1, 0, 1, 5, 5, 1])  # nodes 4 and 5 in novel group 5 (2 known)
    scorer_class = torch.tensor([0, 1, 1, 1, 1, 0, 0])
    checked, moved = novelty_checked(answer, scorer_class, like, 2)
    assert checked.tolist() == [0, 1, 0, 1, 1, 5, 1]
    assert moved.tolist() == [False, False, False, False, True, False, False]


def test_the_check_returns_known_nodes_from_a_novel_group_and_keeps_a_new_class():
    """On a planted graph whose class 3 is never labelled, a novel group holding all of class 3
    and a slice of class 0: the check names most of the class-0 slice class 0 and leaves most of
    class 3 novel."""
    from oral_core.answer import decide_answer
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, seed=1)
    y, n = g.y, g.y.numel()
    gen = torch.Generator().manual_seed(0)
    labelled = (torch.rand(n, generator=gen) < 0.5) & (y < 3)
    is_val = torch.rand(n, generator=gen) < 0.3
    train = torch.where(labelled & ~is_val, y, torch.full_like(y, -1))
    val = torch.where(labelled & is_val, y, torch.full_like(y, -1))
    unlabelled = ~labelled
    slice0 = unlabelled & (y == 0) & (torch.arange(n) % 2 == 0)
    class_id = torch.where(y == 3, torch.full_like(y, 3), y)
    class_id[slice0] = 3  # ORAL's novel group 3: class 3 and half of class 0's unlabelled nodes
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        novelty_quantile=0.8)
    answer = got["answer"]
    assert got["scorer"] in ("lr", "gcn") and got["moved"] > 0
    assert float((answer[slice0] == 0).float().mean()) > 0.6
    assert float((answer[y == 3] == 3).float().mean()) > 0.8
    without = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all")
    assert "scorer" not in without and torch.equal(without["answer"][y == 3], class_id[y == 3])
