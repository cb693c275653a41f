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


def planted_graph(num_nodes: int):
    """A planted graph of 4 classes whose class 3 is never labelled: the graph, the training
    and validation labels (-1 elsewhere) and the labelled nodes (half of classes 0-2)."""
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=num_nodes, num_classes=4, feature_dim=16, seed=1)
    y = g.y
    gen = torch.Generator().manual_seed(0)
    labelled = (torch.rand(y.numel(), generator=gen) < 0.5) & (y < 3)
    is_val = torch.rand(y.numel(), generator=gen) < 0.3
    train = torch.where(labelled & ~is_val, y, torch.full_like(y, -1))
    val = torch.where(labelled & is_val, y, torch.full_like(y, -1))
    return g, train, val, labelled


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
    g, train, val, labelled = planted_graph(400)
    y, n = g.y, g.y.numel()
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


def test_rejected_nodes_are_those_above_the_validation_quantile_among_the_candidates():
    from oral_core.answer import rejected_by_known

    energy = torch.tensor([1.0, 2.0, 3.0, 4.0, 3.5, 9.0, 0.5])
    val = torch.tensor([0, 1, 0, 1, -1, -1, -1])  # validation energies 1-4: median 2.5
    candidates = torch.tensor([False, False, False, False, True, True, True])
    assert rejected_by_known(energy, val, 0.5, candidates).tolist() == [
        False, False, False, False, True, True, False]


def test_a_core_needs_enough_rejected_neighbours():
    from oral_core.answer import rejected_core

    rejected = torch.tensor([True, True, True, False, False])
    near = torch.tensor([[1, 2], [0, 3], [3, 4]])  # nodes 0, 1, 2: 2, 1 and 0 rejected of 2
    assert rejected_core(rejected, near, 0.5).tolist() == [True, True, False]


def test_core_nodes_join_the_novel_class_of_their_neighbours_or_form_one():
    """Node 0's neighbours are in novel class 3: it joins it; nodes 1-2's are not: with
    min_size 2 they form the new class 4, with min_size 3 they stay where they were."""
    from oral_core.answer import rejected_grouped

    answer = torch.tensor([0, 1, 2, 3, 3, 0, 1])
    rows = torch.tensor([0, 1, 2])
    near = torch.tensor([[3, 4], [5, 6], [2, 5]])
    grouped, moved = rejected_grouped(answer, rows, near, 3, 0.5, 2)
    assert grouped.tolist() == [3, 4, 4, 3, 3, 0, 1] and moved == 3
    kept, moved = rejected_grouped(answer, rows, near, 3, 0.5, 3)
    assert kept.tolist() == [3, 1, 2, 3, 3, 0, 1] and moved == 1


def test_neighbours_on_the_view_are_other_nodes_chunk_by_chunk():
    from oral_core.answer import view_neighbours
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=16, seed=2)
    rows = torch.arange(0, 120, 7)
    whole = view_neighbours(g.x, g.edge_index, rows, 5)
    chunked = view_neighbours(g.x, g.edge_index, rows, 5, chunk=4)
    assert whole.shape == (rows.numel(), 5) and torch.equal(whole, chunked)
    assert not (whole == rows[:, None]).any()
    same = (g.y[whole] == g.y[rows][:, None]).float().mean()
    assert float(same) > 0.8  # the view keeps a class's nodes together


def test_a_class_the_known_classes_absorbed_is_grouped_as_novel():
    """On a planted graph whose class 3 is never labelled and which ORAL folded into the known
    classes, the rejected grouping gives most of class 3 one novel class, and few known
    nodes go with it; without it nothing is novel."""
    from oral_core.answer import decide_answer
    g, train, val, labelled = planted_graph(600)
    y, n = g.y, g.y.numel()
    class_id = torch.where(y == 3, torch.arange(n) % 3, y)  # class 3 spread over the known
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        rejected_quantile=0.9)
    answer = got["answer"]
    assert got["rejected"] > 0
    novel = answer >= 3
    assert float((answer[y == 3] >= 3).float().mean()) > 0.5
    assert float((y[novel] == 3).float().mean()) > 0.7
    assert torch.unique(answer[novel]).numel() == 1
    without = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all")
    assert "rejected" not in without and not bool((without["answer"] >= 3).any())


def test_a_new_class_holding_validation_nodes_as_known_classes_do_looks_known():
    """Known classes hold 1 validation node per 2 unlabelled ones; a new class (id 5, above the
    answer's) of 4 unlabelled nodes and 2 validation nodes is estimated all known, one of 4
    unlabelled nodes and none validation is not."""
    from oral_core.answer import new_class_looks_known

    answer = torch.tensor([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 4])
    val = torch.tensor([1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0], dtype=torch.bool)
    unlabelled = ~val
    piece = answer.clone()
    piece[[6, 7, 8, 9, 10, 11]] = 5
    assert new_class_looks_known(piece, answer, unlabelled, val, 2, 0.5)
    new = answer.clone()
    new[[6, 7, 8, 9]] = 5
    assert not new_class_looks_known(new, answer, unlabelled, val, 2, 0.5)
    assert not new_class_looks_known(answer, answer, unlabelled, val, 2, 0.5)  # no new class


def test_validation_nodes_are_witnesses_and_keep_their_class():
    from oral_core.answer import decide_answer
    g, train, val, labelled = planted_graph(600)
    y, n = g.y, g.y.numel()
    class_id = torch.where(y == 3, torch.arange(n) % 3, y)
    base = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all")["answer"]
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        rejected_quantile=0.5)["answer"]
    assert torch.equal(got[val >= 0], base[val >= 0]) and torch.equal(got[train >= 0],
                                                                        base[train >= 0])


def test_regained_nodes_come_only_from_the_dropped_classes(monkeypatch):
    """+regain: the rejected grouping at a looser quantile, but only among the nodes the split
    check named known (``dropped_from``): nodes 4-7 are rejected at the median and mutual
    neighbours; 4-6 were dropped and form a new class, 7 was not and stays; with nothing dropped
    the answer is as it was."""
    import oral_core.answer as answer_module

    energy = torch.tensor([1.0, 2.0, 3.0, 4.0, 9.0, 9.0, 9.0, 9.0])
    train = torch.full((8,), -1)
    val = torch.tensor([0, 1, 0, 1, -1, -1, -1, -1])  # validation median 2.5
    answer = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1])
    near = {4: [5, 6], 5: [4, 6], 6: [4, 5], 7: [4, 5]}

    def neighbours(x, edge_index, rows, k, **_):
        return torch.tensor([near[int(r)] for r in rows])

    monkeypatch.setattr(answer_module, "view_neighbours", neighbours)
    monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 2)
    dropped = torch.tensor([False, False, False, False, True, True, True, False])
    out, moved = answer_module.regained_nodes(answer, dropped, energy, None, None, train, val,
                                              2, 0.5)
    assert out.tolist() == [0, 1, 0, 1, 2, 2, 2, 1] and moved == 3
    same, zero = answer_module.regained_nodes(answer, torch.zeros(8, dtype=torch.bool), energy,
                                              None, None, train, val, 2, 0.5)
    assert zero == 0 and torch.equal(same, answer)


def test_decide_answer_regains_only_with_the_split_check_and_reports_it():
    """``regain_quantile`` acts on what the split check dropped: a novel group holding class 3
    and the unlabelled and validation nodes of classes 0 and 1 is dropped (it holds their
    validation nodes as they do, about half of it by the check's estimate: dropped at share
    0.4); the regain then groups class 3's nodes the known classes reject, at the looser quantile, as one
    novel class mostly of class 3; without ``split_share`` nothing is regained."""
    from oral_core.answer import decide_answer
    g, train, val, labelled = planted_graph(600)
    y, n = g.y, g.y.numel()
    mixed = (y == 3) | (((y == 0) | (y == 1)) & (train < 0))
    class_id = torch.where(mixed, torch.full_like(y, 3), y)
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        split_share=0.4, rejected_quantile=0.95, regain_quantile=0.8)
    assert got["dropped"] == 1 and got["regained"] > 0
    answer = got["answer"]
    novel = answer >= 3
    assert float((answer[(y == 3) & ~labelled] >= 3).float().mean()) > 0.5
    assert float((y[novel] == 3).float().mean()) > 0.7
    alone = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                          rejected_quantile=0.95, regain_quantile=0.8)
    assert "regained" not in alone


def test_only_a_mixed_novel_class_gives_its_known_like_nodes_back():
    """+purify: known class 0 holds 1 validation node per 2 unlabelled ones; novel class 2 holds
    2 validation nodes and 6 unlabelled (estimated 2/3 known: mixed), novel class 3 none (clean).
    At share 0.5 the known-like nodes (energy at or below the validation median) of class 2 take
    the scorer's class, class 3's stay novel whatever their energy; at share 0.9 nothing moves."""
    from oral_core.answer import purified_answer

    answer = torch.tensor([0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3])
    val = torch.tensor([0, 0, -1, -1, -1, -1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1])
    unlabelled = val < 0
    energy = torch.tensor([1.0, 2.0, 0, 0, 0, 0, 3.0, 4.0, 1.0, 1.0, 9.0, 9.0, 9.0, 1.0,
                           1.0, 1.0, 9.0])  # validation energies 1-4: median 2.5
    scorer = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0])
    out, moved = purified_answer(answer, scorer, energy, val, unlabelled, 2, 0.5, 0.5)
    assert out.tolist() == [0, 0, 0, 0, 0, 0, 2, 2, 1, 0, 2, 2, 2, 1, 3, 3, 3] and moved == 3
    same, none = purified_answer(answer, scorer, energy, val, unlabelled, 2, 0.9, 0.5)
    assert none == 0 and torch.equal(same, answer)


def test_a_novel_node_returns_only_when_it_looks_known_among_known_neighbours(monkeypatch):
    """Novel nodes returned (+returned): a node of novel group 5 at or below the validation
    quantile takes the scorer's class only when half its view neighbours are named known; one
    above the quantile, or among novel neighbours, stays; known nodes are untouched."""
    import oral_core.answer as answer_module

    energy = torch.tensor([1.0, 2.0, 3.0, 4.0, 1.5, 1.5, 9.0, 1.0])
    val = torch.tensor([0, 1, 0, 1, -1, -1, -1, -1])  # validation median 2.5
    answer = torch.tensor([0, 1, 0, 1, 5, 5, 5, 1])
    scorer_class = torch.tensor([0, 1, 1, 1, 1, 0, 0, 0])
    near = {4: [0, 1, 5, 3], 5: [4, 6, 2, 6], 6: [0, 1, 2, 3]}  # 4 among known, 5 among novel

    def neighbours(x, edge_index, rows, k, **_):
        return torch.tensor([near[int(r)] for r in rows])

    monkeypatch.setattr(answer_module, "view_neighbours", neighbours)
    out, moved = answer_module.returned_to_known(answer, scorer_class, energy, None, None, val,
                                                 2, 0.5)
    assert out.tolist() == [0, 1, 0, 1, 1, 5, 5, 1] and moved == 1
    none, zero = answer_module.returned_to_known(torch.tensor([0, 1, 0, 1, 0, 1, 0, 1]),
                                                 scorer_class, energy, None, None, val, 2, 0.5)
    assert zero == 0 and none.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


def test_returned_nodes_leave_an_impure_novel_group_and_the_new_class_stays():
    """On a planted graph whose class 3 is never labelled, a novel group holding class 3 and
    a slice of class 0: returning names part of the class-0 slice class 0 and keeps most of
    class 3 novel; without the switch the group is as it was."""
    from oral_core.answer import decide_answer
    g, train, val, labelled = planted_graph(600)
    y, n = g.y, g.y.numel()
    slice0 = ~labelled & (y == 0) & (torch.arange(n) % 3 == 0)
    class_id = torch.where(y == 3, torch.full_like(y, 3), y)
    class_id[slice0] = 3
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        returned_quantile=0.9)
    answer = got["answer"]
    assert got["returned"] > 0 and float((answer[slice0] == 0).float().mean()) > 0.5
    assert float((answer[y == 3] == 3).float().mean()) > 0.8
    without = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all")
    assert "returned" not in without and torch.equal(without["answer"][slice0], class_id[slice0])


def test_decide_answer_drops_an_invented_class_of_known_nodes_and_keeps_a_new_one():
    """On a planted graph whose class 3 is never labelled: novel class 3 holds class 3 (no
    validation node) and stays; novel class 4, a slice of class 0 with its validation nodes,
    holds them at the known classes' rate and is dropped, its nodes named known."""
    from oral_core.answer import decide_answer
    g, train, val, labelled = planted_graph(600)
    y, n = g.y, g.y.numel()
    slice0 = (y == 0) & (train < 0) & (torch.arange(n) % 2 == 0)
    class_id = torch.where(y == 3, torch.full_like(y, 3), y)
    class_id[slice0] = 4
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all", split_share=0.5)
    assert got["dropped"] == 1
    assert not bool((got["answer"][slice0] == 4).any())
    assert float((got["answer"][slice0] == 0).float().mean()) > 0.8
    assert torch.equal(got["answer"][y == 3], class_id[y == 3])
    without = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all")
    assert "dropped" not in without and bool((without["answer"][slice0] == 4).all())
