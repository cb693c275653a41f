"""Invariants of the ORAL building blocks (Eq. 1-12), each checked against a hand computation,
a brute-force reference or a planted structure. Fast: no training."""
from __future__ import annotations

import math
import multiprocessing

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from oral_core.attention import GroupAwareAttention
from oral_core.clustering import (group_assignment, leiden_prototype_groups,
                                  match_groups_to_classes, refine_novel_groups,
                                  select_granularity, semi_supervised_prototypical_clustering)
from oral_core.config import PSEUDO_LABEL_GROUPS, ORALConfig
from oral_core.consistency import (adaptive_edge_drop, consistency_loss,
                                   edge_drop_probabilities)
from oral_core.graph import canonical_edges
from oral_core.prototypes import (balance_regulariser, jaccard_prototype_graph,
                                  representativeness, top_k_association)
from oral_core.pseudo_labels import (align_layers, ensemble_assignment, ensemble_layers,
                                     novel_groups_only, pad_assignments, select_confident,
                                     suppression_mask)
from oral_core.refinement import candidate_pairs, refine_structure
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL, select_device


def edge_set(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return set(map(tuple, edge_index.t().tolist()))


def undirected(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in edge_set(edge_index)}


# --------------------------------------------------------------------------- prototypes (Eq. 1-2)
def test_representativeness_rows_are_positive_distributions() -> None:
    g = torch.Generator().manual_seed(0)
    h, c = torch.randn(50, 8, generator=g), torch.randn(6, 8, generator=g)
    r = representativeness(h, c, temperature=0.5)
    assert r.shape == (50, 6)
    assert torch.all(r > 0)
    assert torch.allclose(r.sum(dim=1), torch.ones(50), atol=1e-6)
    # cosine, not inner product: rescaling h or c changes nothing
    assert torch.allclose(representativeness(3.0 * h, 0.1 * c, 0.5), r, atol=1e-6)
    expected = torch.softmax(F.normalize(h, dim=1) @ F.normalize(c, dim=1).t() / 0.5, dim=1)
    assert torch.allclose(r, expected, atol=1e-6)


def test_smaller_temperature_is_sharper() -> None:
    g = torch.Generator().manual_seed(1)
    h, c = torch.randn(40, 8, generator=g), torch.randn(5, 8, generator=g)
    soft, sharp = representativeness(h, c, 1.0), representativeness(h, c, 0.1)
    assert torch.equal(soft.argmax(1), sharp.argmax(1))
    assert torch.all(sharp.max(1).values > soft.max(1).values)
    entropy = lambda r: -(r * r.log()).sum(1)  # noqa: E731
    assert torch.all(entropy(sharp) < entropy(soft))


def test_balance_regulariser_is_kl_of_uniform_to_marginal() -> None:
    uniform = torch.full((10, 4), 0.25)
    assert abs(float(balance_regulariser(uniform))) < 1e-6
    # one-hot rows spread evenly over the prototypes: marginal uniform, regulariser 0
    assert abs(float(balance_regulariser(torch.eye(4).repeat(3, 1)))) < 1e-6
    # skewed marginal [0.5, 0.25, 0.25]
    r = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    u = 1 / 3
    kl = u * math.log(u / 0.5) + 2 * u * math.log(u / 0.25)
    value = float(balance_regulariser(r))
    assert value > 0.01
    assert value == pytest.approx(kl, rel=1e-6)


def test_top_k_association_returns_the_top_indices() -> None:
    r = torch.tensor([[0.1, 0.5, 0.15, 0.25], [0.4, 0.05, 0.3, 0.25]])
    top = top_k_association(r, 2)
    assert [set(row) for row in top.tolist()] == [{1, 3}, {0, 2}]
    assert top_k_association(r, 10).shape == (2, 4)  # k is capped at N_pro


def brute_force_jaccard(association: torch.Tensor, n_pro: int) -> torch.Tensor:
    members = [set() for _ in range(n_pro)]
    for node, row in enumerate(association.tolist()):
        for j in row:
            members[j].add(node)
    sim = torch.zeros(n_pro, n_pro, dtype=torch.float64)
    for i in range(n_pro):
        for j in range(n_pro):
            union = members[i] | members[j]
            if i != j and union:
                sim[i, j] = len(members[i] & members[j]) / len(union)
    return sim


def test_jaccard_graph_matches_brute_force() -> None:
    g = torch.Generator().manual_seed(2)
    n_pro = 9
    r = torch.rand(40, n_pro, generator=g)
    r[:, 8] = -1.0  # prototype 8 is never associated: similarity 0 to all
    assoc = top_k_association(r, 3)
    sim = jaccard_prototype_graph(assoc, n_pro)
    assert sim.shape == (n_pro, n_pro)
    assert torch.equal(sim, sim.t())
    assert torch.all((sim >= 0) & (sim <= 1))
    assert torch.all(sim.diagonal() == 0)
    assert torch.all(sim[8] == 0)
    assert torch.allclose(sim, brute_force_jaccard(assoc, n_pro), atol=1e-12)


def test_jaccard_of_identical_node_sets_is_one() -> None:
    # prototypes 0 and 1 are associated with exactly the same nodes, 2 and 3 with others
    assoc = torch.tensor([[0, 1], [1, 0], [0, 1], [2, 3], [3, 2]])
    sim = jaccard_prototype_graph(assoc, 4)
    assert sim[0, 1] == 1.0 and sim[2, 3] == 1.0
    assert sim[0, 2] == 0.0 and sim[1, 3] == 0.0


# --------------------------------------------------------------------------- clustering (Eq. 3-4)
def test_group_assignment_sums_prototype_scores() -> None:
    g = torch.Generator().manual_seed(3)
    r = torch.softmax(torch.randn(7, 6, generator=g), dim=1)
    groups = torch.tensor([0, 2, 1, 0, 2, 2])
    p = group_assignment(r, groups, 3)
    assert torch.allclose(p.sum(1), torch.ones(7), atol=1e-6)
    manual = torch.stack([r[:, groups == k].sum(1) for k in range(3)], dim=1)
    assert torch.allclose(p, manual, atol=1e-6)


def test_match_groups_recovers_planted_permutation() -> None:
    g = torch.Generator().manual_seed(4)
    labels = torch.randint(0, 4, (100,), generator=g)
    labels[:4] = torch.arange(4)  # every class present
    sigma = torch.tensor([2, 0, 3, 1])  # class c is predicted as group sigma[c]
    g2c, acc = match_groups_to_classes(sigma[labels], labels, 4, 4)
    inverse = torch.empty_like(sigma)
    inverse[sigma] = torch.arange(4)
    assert torch.equal(g2c, inverse)
    assert acc == 1.0


def test_match_groups_leaves_groups_without_labelled_overlap_unmatched() -> None:
    # 3 groups, 3 known classes, but only classes 0 and 1 have labelled nodes, all in groups 1, 0:
    # the Hungarian algorithm pairs group 2 with class 2 on zero hits, which must not count.
    labels = torch.tensor([0, 0, 0, 1, 1])
    pred = torch.tensor([1, 1, 1, 0, 0])
    g2c, acc = match_groups_to_classes(pred, labels, 3, 3)
    assert g2c.tolist() == [1, 0, -1]
    assert acc == 1.0
    # an extra group (more groups than classes) with no labelled node is unmatched too
    g2c, acc = match_groups_to_classes(torch.tensor([0, 0, 2, 1, 1, 2]),
                                       torch.tensor([0, 0, 0, 1, 1, 1]), 4, 2)
    assert g2c[3] == -1
    assert acc == pytest.approx(4 / 6)


def test_select_granularity_rules() -> None:
    sweep = [(3.2, 9, 0.70), (0.1, 1, 0.50), (0.2, 2, 0.95), (0.4, 3, 0.990),
             (0.8, 4, 0.988), (1.6, 6, 0.995)]
    assert select_granularity(sweep, "best") == 1.6
    # within 0.01 of 0.995: resolutions 0.4, 0.8, 1.6 -> their median 0.8
    assert select_granularity(sweep, "plateau", tolerance=0.01) == 0.8
    # a wider tolerance takes in 0.2 too: 4 rows, the lower median 0.4
    assert select_granularity(sweep, "plateau", tolerance=0.05) == 0.4
    # ties in "best" go to the fewest groups
    assert select_granularity([(1.0, 5, 0.9), (0.5, 3, 0.9)], "best") == 0.5
    with pytest.raises(ValueError, match="granularity rule"):
        select_granularity(sweep, "largest")


def test_granularity_position_moves_along_the_plateau() -> None:
    # plateau within 0.05 of 0.995: 0.2, 0.4, 0.8, 1.6 (coarsest to finest)
    sweep = [(3.2, 9, 0.70), (0.1, 1, 0.50), (0.2, 2, 0.95), (0.4, 3, 0.990),
             (0.8, 4, 0.988), (1.6, 6, 0.995)]
    assert select_granularity(sweep, "plateau", 0.05, position=0.0) == 0.2
    assert select_granularity(sweep, "plateau", 0.05, position=1.0) == 1.6
    assert select_granularity(sweep, "plateau", 0.05, position=0.75) == 0.8
    # 0.5 is the rule before the switch: the lower median
    assert select_granularity(sweep, "plateau", 0.05, position=0.5) == \
        select_granularity(sweep, "plateau", 0.05) == 0.4
    # "best" ignores the position
    assert select_granularity(sweep, "best", position=1.0) == 1.6
    with pytest.raises(ValueError, match="granularity_position"):
        ORALConfig(granularity_position=1.5).validate()


def one_hot_nodes(prototype_of_node: list[int], num_prototypes: int) -> torch.Tensor:
    return F.one_hot(torch.tensor(prototype_of_node), num_prototypes).float()


def test_refine_novel_groups_splits_novel_groups_while_known_groups_stay_whole() -> None:
    # prototypes 0-1: known group 0 (class 0), 2: known group 1 (class 1), 3-4: one novel group;
    # ten nodes on each prototype
    r = one_hot_nodes([p for p in range(5) for _ in range(10)], 5)
    selected = torch.tensor([0, 0, 1, 2, 2])
    g2c = torch.tensor([0, 1, -1])
    split_novel = torch.tensor([0, 0, 1, 2, 3])      # known groups whole, novel split
    split_known = torch.tensor([0, 1, 2, 3, 4])      # known group 0 split in halves
    refined = refine_novel_groups(r, selected, g2c, [(1.0, split_novel), (2.0, split_known)], 0.9)
    assert refined.tolist() == [0, 0, 1, 2, 3]
    # the walk stops at the first resolution that splits a known group, even if a finer one
    # would be admissible again
    assert refine_novel_groups(r, selected, g2c, [(1.0, split_known), (2.0, split_novel)],
                               0.9) is selected
    # a lower bar admits the known split (half of group 0 stays together) and splits the novel
    assert refine_novel_groups(r, selected, g2c, [(1.0, split_known)], 0.5).tolist() == \
        [0, 0, 1, 2, 3]
    # no novel group, or no finer partition: unchanged
    assert refine_novel_groups(r, selected, torch.tensor([0, 1, 1]), [(1.0, split_novel)],
                               0.9) is selected
    assert refine_novel_groups(r, selected, g2c, [], 0.9) is selected
    with pytest.raises(ValueError, match="novel_wholeness"):
        ORALConfig(novel_wholeness=0.0).validate()


def test_clustering_with_novel_wholeness_separates_two_merged_novel_blocks() -> None:
    # blocks 0, 1 known; blocks 2 and 3 novel and close (their nodes put mass on each other's
    # prototypes): the plateau's median merges them into one group
    g = torch.Generator().manual_seed(0)
    n_per, per_block = 30, 4
    block = torch.arange(4 * n_per) // n_per
    proto_block = torch.arange(4 * per_block) // per_block
    logits = 0.5 * torch.randn(4 * n_per, 4 * per_block, generator=g)
    logits = logits + 5.0 * (proto_block[None, :] == block[:, None])
    other = ((block[:, None] >= 2) & (proto_block[None, :] >= 2)
             & (proto_block[None, :] != block[:, None]))
    r = torch.softmax(logits + 4.0 * other, dim=1)
    labels = torch.full((4 * n_per,), -1)
    labelled = (block < 2) & (torch.arange(4 * n_per) % 2 == 0)
    labels[labelled] = block[labelled]
    kwargs = dict(num_known=2, resolutions=np.geomspace(0.05, 20, 30), top_k=3, seed=0)
    plain = semi_supervised_prototypical_clustering(r, labels, **kwargs)
    refined = semi_supervised_prototypical_clustering(r, labels, novel_wholeness=0.9, **kwargs)
    assert plain.accuracy == refined.accuracy == 1.0
    assert torch.unique(plain.prototype_group[proto_block >= 2]).numel() == 1  # merged
    # refined: no group holds prototypes of both novel blocks (it may cut a block in pieces)
    for grp in torch.unique(refined.prototype_group[proto_block >= 2]):
        assert torch.unique(proto_block[refined.prototype_group == grp]).numel() == 1
    # the known blocks keep one group each, matched to their classes
    for b in range(2):
        grp = torch.unique(refined.prototype_group[proto_block == b])
        assert grp.numel() == 1 and int(refined.group_to_class[grp]) == b


def planted_blocks(seed: int = 0):
    """3 blocks of 4 prototypes; 30 nodes per block with their mass on their block's prototypes;
    labelled nodes (every other one) from blocks 0 and 1, which are known classes 1 and 0."""
    g = torch.Generator().manual_seed(seed)
    blocks, per_block, n_per = 3, 4, 30
    n = blocks * n_per
    block = torch.arange(n) // n_per
    proto_block = torch.arange(blocks * per_block) // per_block
    logits = 0.5 * torch.randn(n, blocks * per_block, generator=g)
    logits = logits + 5.0 * (proto_block[None, :] == block[:, None])
    r = torch.softmax(logits, dim=1)
    labels = torch.full((n,), -1)
    labelled = (block < 2) & (torch.arange(n) % 2 == 0)
    labels[labelled] = 1 - block[labelled]
    return r, labels, block, proto_block


@pytest.mark.parametrize("selection", ["plateau", "best"])
def test_clustering_discovers_the_unlabelled_block(selection: str) -> None:
    r, labels, block, proto_block = planted_blocks()
    part = semi_supervised_prototypical_clustering(
        r, labels, num_known=2, resolutions=np.geomspace(0.05, 20, 30), top_k=3, seed=0,
        selection=selection)
    assert part.num_groups == 3
    assert part.accuracy == 1.0
    # each block of prototypes is one group
    for b in range(3):
        assert torch.unique(part.prototype_group[proto_block == b]).numel() == 1
    group_of_block = [int(part.prototype_group[proto_block == b][0]) for b in range(3)]
    assert part.group_to_class[group_of_block[0]] == 1
    assert part.group_to_class[group_of_block[1]] == 0
    assert part.group_to_class[group_of_block[2]] == -1  # novel
    assert part.class_to_group(2).tolist() == [group_of_block[1], group_of_block[0]]
    assert len(part.sweep) == 30


@pytest.mark.parametrize("prior", [3, 6])
def test_clustering_with_class_number_prior(prior: int) -> None:
    r, labels, _, _ = planted_blocks()
    part = semi_supervised_prototypical_clustering(
        r, labels, num_known=2, resolutions=np.geomspace(0.05, 20, 30), top_k=3, seed=0,
        prior_num_classes=prior)
    assert part.num_groups == prior  # 6 is not in the sweep (3, 4, 12 groups): bisection
    assert int(part.prototype_group.max()) + 1 == prior
    assert sorted(part.group_to_class[part.group_to_class >= 0].tolist()) == [0, 1]


# A 25-prototype Jaccard graph (from a real training run) on which igraph's Leiden with
# n_iterations=-1 ("until stable") cycles forever at this resolution, for every seed tried.
LEIDEN_CYCLE_EDGES = [
    (0, 5, 0.236), (0, 11, 0.365), (1, 18, 0.1429), (1, 22, 0.015), (2, 9, 0.0909),
    (3, 17, 0.0625), (3, 22, 0.0147), (3, 23, 0.0417), (4, 5, 0.0705), (4, 11, 0.0222),
    (4, 12, 0.0636), (4, 15, 0.1466), (4, 19, 0.1081), (5, 7, 0.0013), (5, 8, 0.0196),
    (5, 9, 0.0117), (5, 11, 0.6449), (5, 12, 0.0822), (5, 13, 0.1165), (5, 15, 0.1031),
    (5, 19, 0.1436), (5, 20, 0.0013), (5, 21, 0.0039), (5, 22, 0.4562), (5, 23, 0.0117),
    (6, 22, 0.0025), (7, 15, 0.0127), (8, 13, 0.0083), (8, 22, 0.0401), (9, 11, 0.0018),
    (9, 15, 0.0233), (9, 22, 0.0124), (10, 13, 0.0094), (10, 22, 0.0025), (11, 12, 0.0411),
    (11, 13, 0.0204), (11, 15, 0.0263), (11, 16, 0.0037), (11, 19, 0.0738), (11, 22, 0.3721),
    (11, 24, 0.0037), (12, 15, 0.084), (12, 19, 0.1382), (13, 22, 0.2657), (15, 19, 0.1455),
    (15, 20, 0.0127), (15, 22, 0.0063), (15, 23, 0.0233)]


def _leiden_cycle_case(queue) -> None:
    sim = torch.zeros(25, 25, dtype=torch.float64)
    for a, b, w in LEIDEN_CYCLE_EDGES:
        sim[a, b] = sim[b, a] = w
    queue.put(leiden_prototype_groups(sim, 13.230540375864713, seed=0).tolist())


def test_leiden_terminates_on_a_graph_where_until_stable_cycles() -> None:
    """Regression: the clustering must bound Leiden's iterations (run in a child process so that
    a regression fails instead of hanging the suite)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_leiden_cycle_case, args=(queue,))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("leiden_prototype_groups did not return within 120 s (unbounded iterations?)")
    groups = queue.get(timeout=120)
    assert len(groups) == 25 and min(groups) == 0


# --------------------------------------------------------------------------- attention (Eq. 5-6)
def attention_by_target(edge_index: torch.Tensor, alpha: torch.Tensor, n: int) -> torch.Tensor:
    return torch.zeros(n).scatter_add_(0, edge_index[1], alpha)


def test_attention_is_normalised_over_neighbours_and_self() -> None:
    graph = make_attributed_sbm(num_nodes=60, num_classes=3, feature_dim=8, seed=5)
    n = graph.num_nodes
    g = torch.Generator().manual_seed(5)
    z, p = torch.randn(n, 8, generator=g), torch.softmax(torch.randn(n, 3, generator=g), 1)
    out, (edges, alpha) = GroupAwareAttention(1.0)(z, p, graph.edge_index, return_attention=True)
    assert out.shape == (n, 8)
    assert edges.shape[1] == graph.num_edges + n  # every node got exactly one self loop
    assert (edges[0] == edges[1]).sum() == n
    assert torch.all(alpha > 0)
    assert torch.allclose(attention_by_target(edges, alpha, n), torch.ones(n), atol=1e-6)
    # Eq. 6: the output is the attention-weighted sum of z over N(i) and i
    expected = torch.zeros(n, 8).index_add_(0, edges[1], alpha[:, None] * z[edges[0]])
    assert torch.allclose(out, expected, atol=1e-5)


def test_attention_prefers_neighbours_of_the_same_group() -> None:
    # node 0 (group 0) has neighbours 1 (group 0) and 2 (group 1)
    p = torch.tensor([[0.9, 0.1], [0.8, 0.2], [0.1, 0.9]])
    edges = canonical_edges(torch.tensor([[0, 0], [1, 2]]), 3)
    for t in (1.0, 0.2):
        _, (ei, alpha) = GroupAwareAttention(t)(torch.randn(3, 4), p, edges, return_attention=True)
        w = {(int(s), int(d)): float(a) for s, d, a in zip(ei[0], ei[1], alpha)}
        assert w[(1, 0)] > w[(2, 0)]


def test_attention_with_unit_temperature_is_softmax_of_cosine() -> None:
    p = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]])  # cos(0,1)=0.6, cos(0,2)=0, cos(1,2)=0.8
    edges = canonical_edges(torch.tensor([[0, 0], [1, 2]]), 3)  # path 1 - 0 - 2
    _, (ei, alpha) = GroupAwareAttention(1.0)(torch.randn(3, 2), p, edges, return_attention=True)
    w = {(int(s), int(d)): float(a) for s, d, a in zip(ei[0], ei[1], alpha)}
    e = math.exp
    z0 = e(1.0) + e(0.6) + e(0.0)  # node 0: self, 1, 2
    assert w[(0, 0)] == pytest.approx(e(1.0) / z0, abs=1e-6)
    assert w[(1, 0)] == pytest.approx(e(0.6) / z0, abs=1e-6)
    assert w[(2, 0)] == pytest.approx(e(0.0) / z0, abs=1e-6)
    z1 = e(1.0) + e(0.6)  # node 1: self, 0
    assert w[(1, 1)] == pytest.approx(e(1.0) / z1, abs=1e-6)
    assert w[(0, 1)] == pytest.approx(e(0.6) / z1, abs=1e-6)
    assert w[(0, 2)] == pytest.approx(1 / (e(1.0) + 1), abs=1e-6)
    assert len(w) == 7  # 4 edge directions + 3 self loops


# --------------------------------------------------------------------------- pseudo labels (Eq. 8-9)
def random_assignment(n: int, g: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(n, g, generator=gen), dim=1)


def test_align_layers_recovers_a_planted_permutation() -> None:
    p0 = random_assignment(80, 5, 6)
    sigma = torch.tensor([3, 0, 4, 1, 2])
    p1 = p0[:, sigma]  # group j of layer 1 is group sigma[j] of layer 0
    perms = align_layers(pad_assignments([p0, p1]))
    assert torch.equal(perms[0], torch.arange(5))
    assert torch.allclose(p1[:, perms[1]], p0)
    inverse = torch.empty_like(sigma)
    inverse[sigma] = torch.arange(5)
    assert torch.equal(perms[1], inverse)


def test_align_layers_with_fewer_groups_after_padding() -> None:
    # layer 0 has 4 groups; layer 1 merges groups 2 and 3 into one and permutes: 3 groups
    labels = torch.arange(80) % 4
    p0 = F.one_hot(labels, 4).float()
    merged = torch.stack([p0[:, 0], p0[:, 1], p0[:, 2] + p0[:, 3]], dim=1)
    sigma = torch.tensor([2, 0, 1])
    p1 = merged[:, sigma]
    padded = pad_assignments([p0, p1])
    assert padded[1].shape == (80, 4) and torch.all(padded[1][:, 3] == 0)
    perms = align_layers(padded)
    aligned = padded[1][:, perms[1]]
    assert torch.equal(aligned[:, 0], p0[:, 0]) and torch.equal(aligned[:, 1], p0[:, 1])
    assert sorted(perms[1].tolist()) == [0, 1, 2, 3]
    assert perms[1][3] == 3 or perms[1][2] == 3  # one of groups 2, 3 meets the padding column
    # aligning the other way round (fewer groups first) also recovers the known groups
    perms = align_layers(pad_assignments([p1, p0]))
    back = pad_assignments([p1, p0])[1][:, perms[1]]
    assert torch.equal(back[:, 1], p1[:, 1]) and torch.equal(back[:, 2], p1[:, 2])


def test_ensemble_of_identical_layers_is_the_layer() -> None:
    p = random_assignment(30, 4, 7)
    padded = pad_assignments([p, p, p])
    perms = align_layers(padded)
    assert all(torch.equal(q, torch.arange(4)) for q in perms)
    assert torch.allclose(ensemble_assignment(padded, perms), p)


def test_ensemble_from_a_later_layer_leaves_the_first_out_but_aligns_it() -> None:
    """Switch ``ensemble_from_layer`` (1-based; 1 is the paper's Eq. 8 over every layer): with 2,
    layer 1 does not enter the average, yet it is aligned to the ensemble's groups, since
    pseudo-labels supervise every layer through its permutation."""
    p_noise = random_assignment(60, 4, 11)  # a first layer that disagrees with the others
    p = random_assignment(60, 4, 12)
    sigma = torch.tensor([2, 3, 0, 1])
    padded = pad_assignments([p[:, sigma], p, p])
    perms = align_layers(padded, first=1)
    assert torch.equal(perms[1], torch.arange(4)) and torch.equal(perms[2], torch.arange(4))
    assert torch.allclose(padded[0][:, perms[0]], p)  # layer 1 aligned to the reference
    assert torch.allclose(ensemble_assignment(padded, perms, first=1), p)
    # the first layer's values never enter: replacing it changes nothing in the average
    other = pad_assignments([p_noise, p, p])
    assert torch.allclose(ensemble_assignment(other, align_layers(other, first=1), first=1), p)
    assert not torch.allclose(ensemble_assignment(other, align_layers(other)), p)
    ens = ensemble_layers([p_noise, p, p], eta=0.0, first=1)
    assert torch.allclose(ens.p, p)
    with pytest.raises(ValueError, match="first layer"):
        ensemble_layers([p, p], eta=0.0, first=2)
    with pytest.raises(ValueError, match="ensemble_from_layer"):
        ORALConfig(ensemble_from_layer=4).validate()


def test_suppression_masks_small_groups() -> None:
    p = torch.tensor([[0.5, 0.49, 0.01], [0.5, 0.49, 0.01], [0.4, 0.58, 0.02]])
    assert suppression_mask(p, eta=0.05).tolist() == [1.0, 1.0, 0.0]
    assert suppression_mask(p, eta=0.0).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("gamma", [0.3, 0.5, 1.0])
def test_select_confident_keeps_the_top_fraction_of_candidates(gamma: float) -> None:
    gen = torch.Generator().manual_seed(8)
    p = torch.softmax(2 * torch.randn(200, 4, generator=gen), dim=1)
    p[:, 3] = 0  # a suppressed group
    candidates = torch.rand(200, generator=gen) < 0.6
    chosen = select_confident(p, candidates, gamma)
    conf, group = p.max(1)
    assert torch.all(chosen[~candidates] == -1)
    assert torch.all(chosen[chosen >= 0] == group[chosen >= 0])
    for k in range(4):
        pool = (candidates & (group == k)).nonzero().flatten()
        picked = (chosen == k).nonzero().flatten()
        assert picked.numel() == math.ceil(gamma * pool.numel())
        if picked.numel() and picked.numel() < pool.numel():
            rest = pool[~torch.isin(pool, picked)]
            assert conf[picked].min() >= conf[rest].max()  # the most confident ones
    assert not torch.any(chosen == 3)


# --------------------------------------------------------------------------- refinement (Eq. 10-11)
def test_refine_structure_removes_inter_and_adds_intra_label_edges() -> None:
    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, homophily=0.6, seed=9)
    n = graph.num_nodes
    gen = torch.Generator().manual_seed(9)
    node_label = graph.y.clone()
    node_label[torch.rand(n, generator=gen) < 0.3] = -1
    r = [random_assignment(n, 6, 10), random_assignment(n, 6, 11)]
    out = refine_structure(graph.edge_index, node_label, r, mu=0.02, candidates_per_node=128,
                           generator=torch.Generator().manual_seed(0))
    before, after = edge_set(graph.edge_index), edge_set(out)
    assert len(after) == out.shape[1]  # no duplicates
    assert all((b, a) in after for a, b in after)  # symmetric
    assert all(a != b for a, b in after)  # no self loops
    lab = node_label.tolist()
    for a, b in before - after:  # removed: both labelled and different
        assert lab[a] >= 0 and lab[b] >= 0 and lab[a] != lab[b]
    for a, b in after - before:  # added: same label
        assert lab[a] >= 0 and lab[a] == lab[b]
    for a, b in before:  # kept: every edge touching an unlabelled node, every same-label edge
        if lab[a] < 0 or lab[b] < 0 or lab[a] == lab[b]:
            assert (a, b) in after
    assert before - after and after - before  # both parts of Eq. 11 did something


def test_refine_structure_keeps_inter_label_edges_when_removal_is_off() -> None:
    """The switch ``remove_inter_edges`` False: ``E_hat = E ∪ E_+`` (nothing removed), the same
    ``E_+`` as the paper's rule with the same generator."""
    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, homophily=0.6, seed=9)
    node_label = graph.y.clone()
    node_label[torch.rand(graph.num_nodes, generator=torch.Generator().manual_seed(9)) < 0.3] = -1
    r = [random_assignment(graph.num_nodes, 6, 10)]
    paper = refine_structure(graph.edge_index, node_label, r, mu=0.02, candidates_per_node=128,
                             generator=torch.Generator().manual_seed(0))
    kept = refine_structure(graph.edge_index, node_label, r, mu=0.02, candidates_per_node=128,
                            generator=torch.Generator().manual_seed(0), remove_inter=False)
    before = edge_set(graph.edge_index)
    assert before <= edge_set(kept)  # every original edge survives, E_- included
    assert before - edge_set(paper)  # the paper's rule did remove some on this input
    assert edge_set(kept) - before == edge_set(paper) - before  # the same E_+


def test_refine_structure_adds_mu_fraction_of_pairs_of_a_small_group() -> None:
    n, mu = 20, 0.1
    node_label = torch.full((n + 5,), -1)
    node_label[:n] = 0
    edges = canonical_edges(torch.tensor([[20, 21, 22], [21, 22, 23]]), n + 5)
    r = [random_assignment(n + 5, 5, 12)]
    out = refine_structure(edges, node_label, r, mu=mu, candidates_per_node=128,
                           generator=torch.Generator().manual_seed(0))
    added = undirected(out) - undirected(edges)
    assert len(added) == round(mu * n * (n - 1) / 2)
    assert all(a < n and b < n for a, b in added)
    # Eq. 10: the added pairs are those with the lowest prototype-score similarity
    rn = F.normalize(r[0][:n], dim=1)
    sim = rn @ rn.t()
    iu = torch.triu_indices(n, n, 1)
    threshold = torch.sort(sim[iu[0], iu[1]]).values[len(added) - 1]
    assert all(float(sim[a, b]) <= float(threshold) + 1e-6 for a, b in added)


def test_node_similarity_is_eq10_and_independent_of_chunking() -> None:
    """Eq. 10, the mean over layers of row cosines, bitwise the same for every chunk size and
    equal to the one-shot formula with advanced indexing (the implementation it replaced)."""
    from oral_core.refinement import node_similarity, normalised_scores

    n = 300
    r = [random_assignment(n, 7, 20 + k) for k in range(3)]
    gen = torch.Generator().manual_seed(1)
    src, dst = torch.randint(0, n, (5000,), generator=gen), torch.randint(0, n, (5000,), generator=gen)
    normed = normalised_scores(r)
    one_shot = torch.stack([(rn[src] * rn[dst]).sum(dim=-1) for rn in normed]).mean(dim=0)
    for chunk in (1, 7, 4096, 1 << 14, 1 << 18):
        assert torch.equal(node_similarity(r, src, dst, chunk=chunk), one_shot)
    cos = sum(F.cosine_similarity(x[src], x[dst], dim=-1) for x in r) / len(r)
    assert torch.allclose(one_shot, cos, atol=1e-6)


def test_group_similarity_is_eq10_within_the_tolerance() -> None:
    """The Gram matrix's cosines are Eq. 10 as :func:`node_similarity` sums it, to within
    float rounding far inside ``GRAM_TOLERANCE``."""
    from oral_core.refinement import (GRAM_TOLERANCE, group_similarity, node_similarity,
                                      normalised_scores)

    r = [random_assignment(400, 40, 60 + k) for k in range(3)]
    members = torch.randperm(400, generator=torch.Generator().manual_seed(0))[:250]
    i, j = candidate_pairs(250, 10**6, torch.Generator(), torch.device("cpu"))
    gram = group_similarity(normalised_scores(r), members, i, j)
    pairs = node_similarity(r, members[i], members[j])
    assert (gram - pairs).abs().max() < GRAM_TOLERANCE / 100


def _tied_scores(n: int, seed: int) -> list[torch.Tensor]:
    """Representativeness rows with many exact duplicates (two rows repeated over half the
    nodes each, per layer), so that whole blocks of pairs tie at the lowest similarity."""
    out = []
    for k in range(3):
        r = random_assignment(n, 12, seed + k)
        r[: n // 2] = r[0]
        r[n // 2: n - n // 8] = r[n - 1]
        out.append(r)
    return out


@pytest.mark.parametrize("ties", [False, True])
def test_the_gram_path_recovers_the_pairs_of_ranking_every_pair(ties: bool) -> None:
    """Ranking a small group through its Gram matrix (:func:`lowest_similarity`) is a speed-up
    only: the same recovered pairs as gathering and ranking every candidate pair
    (``gram_members=0``), with exact ties at the cut included, and the generator left in the
    same state. Groups above ``gram_members`` (here 700) take the pair path either way."""
    from oral_core.refinement import intra_class_recovery

    n = 3000
    gen = torch.Generator().manual_seed(5)
    label = torch.full((n,), -1, dtype=torch.long)
    sizes = [2, 40, 300, 650, 900]  # enumerated, sampled, and one above gram_members
    start = 0
    for c, size in enumerate(sizes):
        label[start:start + size] = c
        start += size
    label = label[torch.randperm(n, generator=gen)]
    r = _tied_scores(n, 70) if ties else [random_assignment(n, 40, 70 + k) for k in range(3)]
    for mu in (0.015, 0.2):
        a, b = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
        gram = intra_class_recovery(label, r, mu, 128, a, gram_members=700)
        pairs = intra_class_recovery(label, r, mu, 128, b, gram_members=0)
        assert gram.shape == pairs.shape and gram.shape[1] > 0
        assert set(map(tuple, gram.T.tolist())) == set(map(tuple, pairs.T.tolist()))
        assert torch.equal(a.get_state(), b.get_state())


def test_candidate_pairs_are_distinct_and_bounded() -> None:
    gen = torch.Generator().manual_seed(0)
    i, j = candidate_pairs(7, 1000, gen, torch.device("cpu"))
    assert {(a, b) for a, b in zip(i.tolist(), j.tolist())} == {
        (a, b) for a in range(7) for b in range(a + 1, 7)}
    for n, budget in [(50, 100), (10**6, 1000)]:
        # sampled, never enumerated: 10**6 nodes have 5 * 10**11 pairs, which no enumeration
        # could hold (it would fail for memory instead of returning)
        i, j = candidate_pairs(n, budget, gen, torch.device("cpu"))
        pairs = list(zip(i.tolist(), j.tolist()))
        assert 0 < len(pairs) <= budget
        assert len(set(pairs)) == len(pairs)
        assert all(0 <= a < b < n for a, b in pairs)
        if n == 50:
            assert len(pairs) > budget * 0.8  # about max_pairs (collisions aside)


def _candidate_pairs_int64(n: int, max_pairs: int, generator: torch.Generator):
    """The candidate draw as it was before the int32 keys (the reference they must equal)."""
    i = torch.randint(0, n, (max_pairs,), generator=generator)
    j = torch.randint(0, n - 1, (max_pairs,), generator=generator)
    j = j + (j >= i).long()
    key = torch.unique(torch.minimum(i, j) * n + torch.maximum(i, j))
    return key // n, key % n


@pytest.mark.parametrize("n", [60, 5000, 50_000])  # 50k: n * n over int32, int64 keys
def test_candidate_pairs_int32_keys_equal_the_int64_draw(n: int) -> None:
    """int32 draws and keys are a speed-up only: the same pairs, long, and the generator left in
    the same state (so every later draw of the fit is unchanged)."""
    a, b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    i, j = candidate_pairs(n, 4 * n, a, torch.device("cpu"))
    ri, rj = _candidate_pairs_int64(n, 4 * n, b)
    assert i.dtype == j.dtype == torch.long
    assert torch.equal(i, ri) and torch.equal(j, rj)
    assert torch.equal(a.get_state(), b.get_state())


@pytest.mark.parametrize("num_nodes", [2, 9, 400])
def test_union_with_canonical_equals_resorting_every_edge(num_nodes: int) -> None:
    from oral_core.graph import canonical_edges, is_canonical, union_with_canonical

    gen = torch.Generator().manual_seed(num_nodes)
    for extra_size in (0, 1, 3, 5 * num_nodes):
        base = canonical_edges(torch.randint(0, num_nodes, (2, 2 * num_nodes), generator=gen),
                               num_nodes)
        assert is_canonical(base, num_nodes)
        # duplicates, self loops, one direction only and edges already in base
        extra = torch.cat([torch.randint(0, num_nodes, (2, extra_size), generator=gen),
                           base[:, :2]], dim=1)
        merged = union_with_canonical(base, extra, num_nodes)
        assert torch.equal(merged, canonical_edges(torch.cat([base, extra], dim=1), num_nodes))
    empty = torch.empty(2, 0, dtype=torch.long)
    assert torch.equal(union_with_canonical(empty, torch.tensor([[0], [1]]), 3),
                       torch.tensor([[0, 1], [1, 0]]))
    assert not is_canonical(torch.tensor([[0], [1]]), 3)  # one direction only
    assert not is_canonical(torch.tensor([[1, 0], [0, 1]]), 3)  # unsorted


def test_refine_structure_merge_path_equals_the_resort_path() -> None:
    """``canonical=True`` (what the trainer passes for a canonical graph) is the same structure."""
    from oral_core.graph import canonical_edges

    n = 3000
    gen = torch.Generator().manual_seed(0)
    edges = canonical_edges(torch.randint(0, n, (2, 4 * n), generator=gen), n)
    label = torch.randint(-1, 6, (n,), generator=gen)
    r = [random_assignment(n, 10, 40 + k) for k in range(3)]
    for remove in (True, False):
        a = refine_structure(edges, label, r, 0.02, 64, torch.Generator().manual_seed(1),
                             remove_inter=remove, canonical=True)
        b = refine_structure(edges, label, r, 0.02, 64, torch.Generator().manual_seed(1),
                             remove_inter=remove, canonical=False)
        assert torch.equal(a, b)


# --------------------------------------------------------------------------- consistency (Eq. 12)
def test_consistency_loss_zero_only_for_identical_views() -> None:
    p = [random_assignment(20, 3, 13), random_assignment(20, 4, 14)]
    assert float(consistency_loss(p, [q.clone() for q in p])) == pytest.approx(0.0, abs=1e-7)
    q = [random_assignment(20, 3, 15), p[1]]
    assert float(consistency_loss(p, q)) > 1e-3


def star_plus_chain() -> tuple[torch.Tensor, int]:
    """A star (hub 0, leaves 1..20) and a chain 21 - 22 - ... - 40."""
    star = [(0, leaf) for leaf in range(1, 21)]
    chain = [(v, v + 1) for v in range(21, 40)]
    return canonical_edges(torch.tensor(star + chain).t(), 41), 41


def test_adaptive_edge_drop_drops_peripheral_edges_more_often() -> None:
    edges, n = star_plus_chain()
    prob = edge_drop_probabilities(edges, n, drop_rate=0.3, max_drop=0.7)
    assert torch.all(prob >= 0) and torch.all(prob <= 0.7 + 1e-7)
    tight = edge_drop_probabilities(edges, n, drop_rate=0.9, max_drop=0.2)
    assert float(tight.max()) <= 0.2 + 1e-7
    original = edge_set(edges)
    star_kept = chain_kept = 0
    trials = 200
    for seed in range(trials):
        view = adaptive_edge_drop(edges, n, 0.3, 0.7, torch.Generator().manual_seed(seed))
        kept = edge_set(view)
        assert kept <= original  # only drops
        assert all((b, a) in kept for a, b in kept)  # both directions together
        assert len(kept) == view.shape[1]
        star_kept += sum(1 for a, b in kept if a == 0)
        chain_kept += sum(1 for a, b in kept if a >= 21 and b == a + 1)
    star_rate, chain_rate = 1 - star_kept / (20 * trials), 1 - chain_kept / (19 * trials)
    assert chain_rate > star_rate + 0.1


# --------------------------------------------------------------------------- configuration
def test_default_config_is_valid() -> None:
    ORALConfig().validate()
    assert len(ORALConfig().resolutions()) == ORALConfig().resolution_steps


@pytest.mark.parametrize("field,value", [
    ("gamma", 0.0), ("gamma", 1.5), ("mu", -0.1), ("eta", 1.0), ("top_k", 0), ("top_k", 41),
    ("num_layers", 0), ("num_prototypes", 1), ("epochs", 0), ("temperature", 0.0),
    ("attention_temperature", -1.0), ("resolution_min", 0.0), ("prior_num_classes", 0),
    ("resolution_max", 0.01), ("lr_schedule", "linear"), ("stop_when_stable", 0.0),
    ("stop_when_stable", 1.0), ("stop_patience", 0),
    ("hidden_dim", 0), ("dropout", 1.5), ("lr", 0.0), ("edge_drop_rate", 1.5),
    ("cluster_every", 0), ("granularity_rule", "median"), ("seed", -1),
])
def test_bad_config_values_raise_naming_the_field(field: str, value) -> None:
    config = ORALConfig(**{field: value})
    name = field
    with pytest.raises(ValueError, match=name):
        config.validate()
    with pytest.raises(ValueError, match=name):
        ORAL(ORALConfig(), **{field: value})


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
@pytest.mark.slow
def test_lr_schedule_over_the_fit(schedule: str) -> None:
    """``constant`` trains every epoch at ``lr`` (the paper); ``cosine`` starts at ``lr`` and
    anneals along a half cosine to 0 at the end of the fit, monotonically."""
    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(120) % 2 == 1] = -1
    cfg = ORALConfig(epochs=12, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=4,
                     progress=False, device="cpu", lr_schedule=schedule)
    rates = [row["lr"] for row in ORAL(cfg).fit(graph.x, graph.edge_index, train).history_
             if "lr" in row]
    assert len(rates) == cfg.epochs and rates[0] == pytest.approx(cfg.lr)
    if schedule == "constant":
        assert all(r == pytest.approx(cfg.lr) for r in rates)
    else:
        assert all(a > b for a, b in zip(rates, rates[1:]))
        assert rates[6] == pytest.approx(cfg.lr / 2)  # halfway
        assert rates[-1] < 0.03 * cfg.lr


def test_novel_groups_only_drops_pseudo_labels_of_known_groups() -> None:
    pseudo = torch.tensor([-1, 0, 1, 2, 3, 2, 0, -1])
    group_class = torch.tensor([1, 0, 3, 2])  # groups 0, 1 known (classes 1, 0); 2, 3 novel
    out = novel_groups_only(pseudo, group_class, num_known=2)
    assert out.tolist() == [-1, -1, -1, 2, 3, 2, -1, -1]
    assert pseudo.tolist() == [-1, 0, 1, 2, 3, 2, 0, -1]  # input untouched


@pytest.mark.slow
def test_fit_wires_pseudo_label_groups() -> None:
    """At the first POL epoch (parameters identical until then) ``novel`` keeps only the
    pseudo-labels of novel groups: fewer than the paper's ``all``, and none in a known group."""
    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(120) % 2 == 1] = -1
    firsts = {}
    for scope in PSEUDO_LABEL_GROUPS:
        cfg = ORALConfig(epochs=6, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=3,
                         progress=False, device="cpu", pseudo_label_groups=scope)
        firsts[scope] = next(r for r in ORAL(cfg).fit(graph.x, graph.edge_index, train).history_
                             if "pseudo_labels" in r)
    assert firsts["novel"]["pseudo_labels"] < firsts["all"]["pseudo_labels"]
    with pytest.raises(ValueError, match="pseudo_label_groups must be one of"):
        ORALConfig(pseudo_label_groups="known").validate()


@pytest.mark.parametrize("remove", [True, False])
@pytest.mark.slow
def test_fit_wires_remove_inter_edges(remove: bool) -> None:
    """With ``remove_inter_edges`` False the refined graph of every POL epoch holds the whole
    original graph; with the paper's True some epoch propagates over fewer original edges."""
    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(120) % 2 == 1] = -1
    cfg = ORALConfig(epochs=8, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=3,
                     progress=False, device="cpu", remove_inter_edges=remove, mu=0.0)
    rows = [r for r in ORAL(cfg).fit(graph.x, graph.edge_index, train).history_
            if "pseudo_labels" in r]
    original = int(canonical_edges(graph.edge_index, 120).shape[1])
    assert rows
    if remove:
        assert min(r["edges"] for r in rows) < original
    else:
        assert all(r["edges"] == original for r in rows)  # mu = 0: nothing added either


@pytest.mark.slow
def test_stop_when_stable_stops_where_the_offline_rule_says() -> None:
    """Early stopping reads only how many nodes changed class (no label); the online stop is the
    epoch that ``benchmarks.epoch_vote.stable_epoch`` finds on the full run's change curve, the
    model kept is that epoch's, and the run without the switch is unchanged by it."""
    from benchmarks.epoch_vote import stable_epoch

    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(120) % 2 == 1] = -1
    base = dict(epochs=40, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=4,
                progress=False, device="cpu")
    full = ORAL(ORALConfig(**base))
    full.record_epochs = True
    full.fit(graph.x, graph.edge_index, train)
    changed = [row["changed"] for row in full.history_]
    assert changed[0] == 1.0 and all(0.0 <= c <= 1.0 for c in changed)
    share, patience = 0.05, 3
    expected = stable_epoch(changed, base["pol_start_epoch"] + 10, share, patience)
    assert expected < base["epochs"], "the planted graph should calm down before the end"
    early = ORAL(ORALConfig(**base, stop_when_stable=share, stop_patience=patience))
    early.fit(graph.x, graph.edge_index, train)
    assert len(early.history_) == expected + 1 and early.history_[-1]["stopped_early"]
    assert early.epochs_run_ == expected and early.predict().epoch == expected
    assert torch.equal(early.predict().class_id, full.epoch_class_ids_[expected].long())
    assert not any(row.get("stopped_early") for row in full.history_)
    # best_val selection from an epoch after the calm one: no stop before that epoch is evaluated
    late = expected + 5
    picky = ORAL(ORALConfig(**base, stop_when_stable=share, stop_patience=patience,
                            selection="best_val", select_from_epoch=late))
    picky.fit(graph.x, graph.edge_index, train)
    assert picky.epochs_run_ >= late and picky.predict().epoch >= late


def test_unknown_config_keys_raise() -> None:
    with pytest.raises(ValueError, match="unknown_key"):
        ORAL(unknown_key=1)
    with pytest.raises(ValueError, match="unknown_key"):
        ORALConfig.from_dict({"unknown_key": 1})
    assert ORALConfig.from_dict(ORALConfig(gamma=0.5).to_dict()) == ORALConfig(gamma=0.5)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present: a cuda request is valid")
def test_cuda_request_without_cuda_raises() -> None:
    with pytest.raises(RuntimeError, match="CUDA"):
        select_device("cuda")
    assert select_device("auto").type == "cpu"
    assert select_device("cpu").type == "cpu"


# --------------------------------------------------------------------------- synthetic graphs
def test_attributed_sbm_is_a_valid_deterministic_graph() -> None:
    g = make_attributed_sbm(num_nodes=600, num_classes=4, feature_dim=16, avg_degree=8.0,
                            homophily=0.8, seed=3)
    assert g.x.shape == (600, 16) and g.x.dtype == torch.float32
    assert torch.bincount(g.y).tolist() == [150] * 4
    assert torch.equal(g.edge_index, canonical_edges(g.edge_index, 600))
    assert 6.5 < g.num_edges / g.num_nodes < 9.5
    same = (g.y[g.edge_index[0]] == g.y[g.edge_index[1]]).float().mean()
    assert 0.75 < float(same) < 0.85
    again = make_attributed_sbm(num_nodes=600, num_classes=4, feature_dim=16, seed=3)
    assert torch.equal(g.x, again.x) and torch.equal(g.edge_index, again.edge_index)
    assert torch.equal(g.y, again.y)
    other = make_attributed_sbm(num_nodes=600, num_classes=4, feature_dim=16, seed=4)
    assert not torch.equal(g.edge_index, other.edge_index)
    sized = make_attributed_sbm(class_sizes=[10, 30, 60], homophily=0.0, seed=0)
    assert torch.bincount(sized.y).tolist() == [10, 30, 60]
    assert not torch.any(sized.y[sized.edge_index[0]] == sized.y[sized.edge_index[1]])


def test_novel_ids_are_consecutive_even_when_a_kept_group_is_empty() -> None:
    from oral_core.pseudo_labels import Ensemble
    from oral_core.trainer import discover, ensemble_classes

    p = torch.tensor([[.40, .35, .25], [.40, .35, .25], [0., .30, .70]])
    ens = Ensemble(p, torch.ones(3), [torch.arange(3)], [3])
    g2c = ensemble_classes(ens, torch.full((3,), -1), 2)
    class_id = discover(ens, g2c, 2)[0]
    assert g2c[1] == -1  # no node's top group: no id
    assert sorted(set(class_id.tolist())) == [2, 3]


def test_merge_to_count_joins_the_most_similar_groups() -> None:
    from oral_core.clustering import merge_to_count

    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    sim = torch.zeros(8, 8, dtype=torch.float64)
    sim[2:4, 4:6] = sim[4:6, 2:4] = 0.9  # groups 1 and 2 are close
    sim[0:2, 6:8] = sim[6:8, 0:2] = 0.2  # groups 0 and 3 less so
    merged = merge_to_count(groups, sim, 3)
    assert merged.tolist() == [0, 0, 1, 1, 1, 1, 2, 2]
    assert merge_to_count(groups, sim, 2).tolist() == [0, 0, 1, 1, 1, 1, 0, 0]
    assert torch.equal(merge_to_count(groups, sim, 4), groups)


def test_prior_mode_always_reaches_the_prior_when_groups_can_be_merged() -> None:
    torch.manual_seed(0)
    r = torch.softmax(torch.randn(300, 12) * 3, dim=1)
    labels = torch.full((300,), -1, dtype=torch.long)
    labels[:60] = torch.arange(60) % 2
    for prior in (2, 3, 5):
        part = semi_supervised_prototypical_clustering(
            r, labels, 2, np.geomspace(0.05, 20, 12), top_k=2, prior_num_classes=prior)
        assert part.num_groups == prior
        assert sorted(torch.unique(part.prototype_group).tolist()) == list(range(prior))


def test_granularity_rule_sets_aside_partitions_coarser_than_the_known_classes() -> None:
    sweep = [(0.1, 1, 0.40), (0.2, 1, 0.40), (1.0, 4, 0.395), (10.0, 9, 0.39)]
    assert select_granularity(sweep, "plateau", 0.01) == 0.2  # a single group would be kept
    assert select_granularity(sweep, "plateau", 0.01, min_groups=3) == 1.0
    assert select_granularity(sweep, "best", 0.01, min_groups=3) == 1.0
    assert select_granularity([(0.1, 1, 0.4)], "plateau", 0.01, min_groups=3) == 0.1  # nothing finer


@pytest.mark.slow
def test_fit_merges_refined_edges_only_into_a_canonical_graph() -> None:
    """The trainer checks once per fit whether its graph is canonical: a canonical graph takes
    the merge path, a one-direction edge list the re-sort path, and both fits train."""
    from oral_core.synthetic import make_attributed_sbm

    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    cfg = ORALConfig(epochs=6, hidden_dim=8, cluster_warmup_epochs=1, pol_start_epoch=2,
                     progress=False, device="cpu")
    canonical = ORAL(cfg).fit(graph.x, graph.edge_index, train)
    assert canonical._edges0_canonical is True
    one_way = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]
    other = ORAL(cfg).fit(graph.x, one_way, train)
    assert other._edges0_canonical is False
    assert any("pseudo_labels" in r for r in other.history_)
