"""Semi-supervised prototypical clustering (Eq. 3-4).

The prototype graph (Jaccard similarities of the prototypes' associated node sets) is clustered
with Leiden (modularity objective, python-igraph's C implementation) over a sweep of resolutions. Every partition of the prototypes induces a
group assignment of the nodes (Eq. 3); the partition kept is the one whose groups best fit the
labelled training nodes under a Hungarian matching (Eq. 4). Groups matched to a known class take
its id; the remaining groups are the discovered novel classes. With the class-number prior, only
partitions with exactly that many groups compete.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import random

import igraph
import numpy as np
import torch
import torch.nn.functional as F

from .hungarian import contingency, max_assignment
from .prototypes import jaccard_prototype_graph, top_k_association

log = logging.getLogger(__name__)

LEIDEN_ITERATIONS = 10


@dataclass
class Partition:
    """A grouping of one layer's prototypes and its match to the known classes.

    Attributes:
        prototype_group: long ``[N_pro]``, the group of every prototype (``0..num_groups-1``).
        num_groups: ``N_clu``.
        group_to_class: long ``[num_groups]``: the known class a group is matched to, or -1 for a
            novel group.
        accuracy: Eq. 4 on the labelled training nodes.
        resolution: the Leiden resolution that produced it.
        sweep: ``(resolution, num_groups, accuracy)`` for every resolution tried.
    """

    prototype_group: torch.Tensor
    num_groups: int
    group_to_class: torch.Tensor
    accuracy: float
    resolution: float
    sweep: list[tuple[float, int, float]] = field(default_factory=list)

    def class_to_group(self, num_known: int) -> torch.Tensor:
        """long ``[num_known]``: the group matched to each known class, or -1 when unmatched."""
        out = torch.full((num_known,), -1, dtype=torch.long)
        matched = (self.group_to_class >= 0).nonzero().flatten()
        out[self.group_to_class[matched]] = matched
        return out


def group_assignment(r: torch.Tensor, prototype_group: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Eq. 3: ``p_ik = sum_{c_j in C_k} r_ij`` (differentiable in ``r``); rows sum to one."""
    onehot = F.one_hot(prototype_group.to(r.device), num_groups).to(r.dtype)
    return r @ onehot


class PrototypeGraph:
    """The weighted prototype graph as igraph needs it, built once for a whole resolution sweep.

    Only prototypes with at least one associated node ("live": a non-zero row) are vertices.
    """

    def __init__(self, similarity: torch.Tensor, prototypes: torch.Tensor | None = None):
        self.n = similarity.shape[0]
        sim = similarity.cpu().numpy()
        self.live = np.flatnonzero(sim.sum(axis=1) > 0)
        sub = sim[np.ix_(self.live, self.live)]
        iu, ju = np.nonzero(np.triu(sub, 1))
        self.graph = igraph.Graph(n=self.live.size, edges=list(zip(iu.tolist(), ju.tolist())))
        self.weights = sub[iu, ju].tolist()
        self.prototypes = prototypes
        self._nearest: torch.Tensor | None = None  # live index nearest to each dead prototype

    def leiden(self, resolution: float, seed: int) -> torch.Tensor:
        """Leiden communities at ``resolution``, numbered by smallest member; see
        :func:`leiden_prototype_groups`."""
        n, live = self.n, self.live
        if live.size == 0:
            return torch.zeros(n, dtype=torch.long)
        igraph.set_random_number_generator(random.Random(seed))
        # a bounded number of iterations: igraph's "until stable" (-1) can cycle forever on some graphs
        membership = self.graph.community_leiden(
            objective_function="modularity", weights=self.weights, resolution=resolution,
            n_iterations=LEIDEN_ITERATIONS).membership
        membership = torch.as_tensor(membership, dtype=torch.long)
        # deterministic numbering: by smallest member
        first = torch.full((int(membership.max()) + 1,), live.size, dtype=torch.long)
        first.scatter_reduce_(0, membership, torch.arange(live.size), reduce="amin")
        rank = torch.empty_like(first)
        rank[torch.argsort(first)] = torch.arange(first.numel())
        groups = torch.full((n,), -1, dtype=torch.long)
        live_t = torch.as_tensor(live, dtype=torch.long)
        groups[live_t] = rank[membership]
        if live.size < n:
            dead = (groups < 0).nonzero().flatten()
            groups[dead] = 0 if self.prototypes is None else groups[live_t[self._dead_nearest(dead, live_t)]]
        return groups

    def _dead_nearest(self, dead: torch.Tensor, live_t: torch.Tensor) -> torch.Tensor:
        if self._nearest is None:
            pn = F.normalize(self.prototypes.detach().cpu().double(), dim=-1)
            self._nearest = (pn[dead] @ pn[live_t].t()).argmax(dim=1)
        return self._nearest


def leiden_prototype_groups(similarity: torch.Tensor, resolution: float, seed: int,
                            prototypes: torch.Tensor | None = None) -> torch.Tensor:
    """Leiden communities (modularity at ``resolution``) of the weighted prototype graph.

    Returns a long ``[N_pro]`` group id, numbered by each group's smallest prototype. Prototypes
    with no associated node (an all-zero row) have no edge; rather than counting each as a group
    of its own, they join the group of the live prototype whose vector is most similar (cosine),
    or group 0 when no vectors are given.
    """
    return PrototypeGraph(similarity, prototypes).leiden(resolution, seed)


def match_groups_to_classes(pred_group: torch.Tensor, labels: torch.Tensor, num_groups: int,
                            num_known: int) -> tuple[torch.Tensor, float]:
    """Eq. 4: Hungarian matching of groups to known classes on labelled nodes.

    Args:
        pred_group: long ``[M]`` predicted group of each labelled node (``argmax_k p_ik``).
        labels: long ``[M]`` known class of each labelled node.
    Returns:
        ``group_to_class`` (long ``[num_groups]``, -1 for groups left unmatched or matched on no
        node) and the accuracy on the labelled nodes.
    """
    group_to_class = torch.full((num_groups,), -1, dtype=torch.long)
    if labels.numel() == 0:
        return group_to_class, 0.0
    m = contingency(pred_group, labels, num_groups, num_known)
    rows, cols = max_assignment(m)
    hits = m[rows, cols]
    keep = hits > 0
    group_to_class[torch.as_tensor(rows[keep.numpy()], dtype=torch.long)] = torch.as_tensor(
        cols[keep.numpy()], dtype=torch.long)
    return group_to_class, float(hits.sum()) / labels.numel()


def finest_partition(r: torch.Tensor, labels: torch.Tensor, num_known: int) -> Partition:
    """Every prototype its own group, matched to the known classes on their mean representativeness.

    Used while the prototypes are untrained (the clustering warm-up) and whenever a layer's
    clustering cannot separate the known classes (fewer groups than known classes at every
    resolution). In both states the top-k associations of most nodes fall on the same few
    prototypes, so Eq. 4's argmax matching would pair one class with one prototype and Eq. 7
    would train that class only: the layer stays collapsed. Here each known class ``c`` is matched
    (Hungarian) to a prototype on the mean ``r_ij`` of its labelled nodes instead, so every known
    class gets its own target prototype and the layer learns to separate them. ``accuracy`` is
    still Eq. 4 (argmax) under that matching.
    """
    n_pro = r.shape[1]
    groups = torch.arange(n_pro)
    labelled = (labels >= 0).nonzero().flatten()
    r_l = r.detach()[labelled.to(r.device)].cpu().double()
    y_l = labels[labelled].cpu()
    group_to_class = torch.full((n_pro,), -1, dtype=torch.long)
    if y_l.numel() == 0:
        return Partition(groups, n_pro, group_to_class, 0.0, float("inf"), [])
    onehot = F.one_hot(y_l, num_known).double()
    mean_r = (r_l.t() @ onehot) / onehot.sum(dim=0).clamp_min(1.0)  # [N_pro, num_known]
    # relative to each prototype's overall share, so a prototype every node likes wins no class
    mean_r = mean_r / r_l.mean(dim=0).clamp_min(1e-12)[:, None]
    rows, cols = max_assignment(mean_r.numpy())
    group_to_class[torch.as_tensor(rows, dtype=torch.long)] = torch.as_tensor(cols, dtype=torch.long)
    pred = r_l.argmax(dim=1)
    accuracy = float((group_to_class[pred] == y_l).double().mean())
    return Partition(groups, n_pro, group_to_class, accuracy, float("inf"), [])


def _evaluate(r_labelled: torch.Tensor, groups: torch.Tensor, labels: torch.Tensor,
              num_known: int) -> tuple[int, torch.Tensor, float]:
    """Eq. 3-4 for one partition, from the labelled nodes' representativeness."""
    num_groups = int(groups.max()) + 1
    p = group_assignment(r_labelled, groups, num_groups)
    g2c, acc = match_groups_to_classes(p.argmax(dim=1).cpu(), labels, num_groups, num_known)
    return num_groups, g2c, acc


def semi_supervised_prototypical_clustering(
    r: torch.Tensor,
    labels: torch.Tensor,
    num_known: int,
    resolutions: np.ndarray,
    top_k: int,
    seed: int = 0,
    prior_num_classes: int | None = None,
    prototypes: torch.Tensor | None = None,
    bisection_steps: int = 8,
    selection: str = "plateau",
    tolerance: float = 0.01,
    position: float = 0.5,
    novel_wholeness: float | None = None,
) -> Partition:
    """Granularity search of Eq. 4 over Leiden resolutions on the Jaccard prototype graph.

    Args:
        r: representativeness ``[N, N_pro]`` (Eq. 1) of one layer.
        labels: long ``[N]``: known class of labelled training nodes, -1 elsewhere.
        num_known: number of known classes.
        resolutions: the Leiden resolutions to sweep.
        top_k: association size for the prototype graph.
        prior_num_classes: with the prior, only partitions with this many groups are kept; if the
            sweep hits none, the resolution is bisected between the neighbouring counts.
        prototypes: the prototype vectors (to place prototypes that no node is associated with).
        selection, tolerance, position: the rule of :func:`select_granularity` (no prior).
        novel_wholeness: None (the paper), or split the selected partition's novel groups as
            finely as the known groups stay whole (:func:`refine_novel_groups`; no prior).
    Returns:
        The selected :class:`Partition`. With the prior: the best Eq. 4 accuracy among partitions
        with the prior's group count.
    """
    r = r.detach()
    sim = jaccard_prototype_graph(top_k_association(r, top_k), r.shape[1])
    labelled = (labels >= 0).nonzero().flatten()
    y_l = labels[labelled].cpu()
    # kept on r's device: every partition of the sweep is scored on it (Eq. 3-4), and only the
    # labelled nodes' argmax groups come back to the host (on a GPU the sweep otherwise copies
    # and multiplies [labelled, N_pro] doubles on the CPU for each partition; same result on CPU)
    r_l = r[labelled.to(r.device)].double()
    tried: dict[float, tuple[torch.Tensor, int, torch.Tensor, float]] = {}
    graph = PrototypeGraph(sim, prototypes)  # built once for the whole sweep
    scored: dict[bytes, tuple[int, torch.Tensor, float]] = {}  # resolutions often repeat a partition

    def attempt(res: float):
        groups = graph.leiden(float(res), seed)
        key = groups.numpy().tobytes()
        if key not in scored:
            scored[key] = _evaluate(r_l, groups, y_l, num_known)
        n, g2c, acc = scored[key]
        tried[float(res)] = (groups, n, g2c, acc)
        return n

    for res in resolutions:
        attempt(float(res))
    if max(v[1] for v in tried.values()) < num_known:
        # the layer's associations have collapsed: no granularity can fit the known classes
        collapsed = finest_partition(r, labels, num_known)
        collapsed.sweep = sorted((k, v[1], v[3]) for k, v in tried.items())
        return collapsed
    if prior_num_classes is not None and all(v[1] != prior_num_classes for v in tried.values()):
        _bisect_to_count(tried, attempt, prior_num_classes, bisection_steps)

    candidates = list(tried.items())
    if prior_num_classes is not None:
        exact = [c for c in candidates if c[1][1] == prior_num_classes]
        if exact:
            res, (groups, n, g2c, acc) = max(exact, key=lambda c: (c[1][3], -c[1][1], -c[0]))
        else:
            res, groups = _nearest_above(candidates, prior_num_classes)
            groups = merge_to_count(groups, sim, prior_num_classes)
            n, g2c, acc = _evaluate(r_l, groups, y_l, num_known)
    else:
        rows = [(k, v[1], v[3]) for k, v in tried.items()]
        res = select_granularity(rows, selection, tolerance, min_groups=num_known,
                                 position=position)
        groups, n, g2c, acc = tried[res]
        if novel_wholeness is not None:
            finer = [(k, v[0]) for k, v in sorted(tried.items()) if k > res]
            refined = refine_novel_groups(r, groups, g2c, finer, novel_wholeness)
            if refined is not groups:
                groups = refined
                n, g2c, acc = _evaluate(r_l, groups, y_l, num_known)
    sweep = sorted((k, v[1], v[3]) for k, v in tried.items())
    return Partition(groups, n, g2c, acc, res, sweep)


def node_groups(r: torch.Tensor, prototype_group: torch.Tensor) -> torch.Tensor:
    """long ``[N]``: each node's group under a prototype partition (argmax of Eq. 3)."""
    groups = prototype_group.to(r.device)
    return group_assignment(r, groups, int(groups.max()) + 1).argmax(dim=1)


def refine_novel_groups(r: torch.Tensor, prototype_group: torch.Tensor,
                        group_to_class: torch.Tensor, finer: list[tuple[float, torch.Tensor]],
                        wholeness: float) -> torch.Tensor:
    """Split the novel groups of a selected partition as finely as the known groups allow
    (``novel_wholeness``; not in the paper, which takes one resolution for every group).

    Eq. 4 scores a partition on labelled nodes of known classes only, so along its plateau it
    cannot tell one novel class from several merged ones. The known groups are the yardstick:
    walking up the sweep's finer partitions (``finer``: ``(resolution, prototype groups)``,
    ascending), a resolution is admissible while every known group of the selection keeps at
    least ``wholeness`` of its nodes in one group there. At the finest admissible resolution
    (the walk stops at the first that is not) the novel groups' prototypes take their finer
    groups; the known groups stay as selected. No label of an unlabelled node is read. Returns
    ``prototype_group`` itself when nothing changes."""
    r = r.detach()
    selected = node_groups(r, prototype_group)
    num_selected = int(prototype_group.max()) + 1
    known = (group_to_class >= 0).to(selected.device)
    chosen = None
    for _res, groups in finer:
        if chosen is not None and torch.equal(groups, chosen):
            continue  # neighbouring resolutions often give the same partition
        finer_nodes = node_groups(r, groups)
        num_finer = int(groups.max()) + 1
        # nodes of each selected group (rows) in each finer group (columns)
        joint = torch.bincount(selected * num_finer + finer_nodes,
                               minlength=num_selected * num_finer).view(num_selected, num_finer)
        size, kept = joint.sum(dim=1), joint.max(dim=1).values
        checked = known & (size > 0)
        if bool((kept[checked] < wholeness * size[checked]).any()):
            break
        chosen = groups
    if chosen is None:
        return prototype_group
    novel = group_to_class[prototype_group] < 0
    if not bool(novel.any()):
        return prototype_group
    out = prototype_group.clone()
    out[novel] = int(prototype_group.max()) + 1 + chosen.to(out.device)[novel]
    out = torch.unique(out, return_inverse=True)[1]
    if int(out.max()) == int(prototype_group.max()):
        return prototype_group
    return out


def select_granularity(sweep: list[tuple[float, int, float]], rule: str = "plateau",
                       tolerance: float = 0.01, min_groups: int = 1,
                       position: float = 0.5) -> float:
    """Pick a resolution from ``(resolution, num_groups, accuracy)`` rows (Eq. 4).

    ``"best"``: the highest accuracy, ties to the fewest groups. ``"plateau"``: once trained, the
    labelled nodes fit almost every partition between the one that merges known classes and the
    one that splits them, so accuracies differ by noise along a plateau; this rule takes every
    resolution within ``tolerance`` of the best accuracy and returns their median (the geometric
    centre of the plateau for a geometric sweep), the granularity most robust to the resolution.
    ``position`` (not in the paper, ``granularity_position``) moves that choice along the
    plateau: 0 its coarsest resolution, 1 its finest, 0.5 the median (the ``(n-1)//2``-th of
    its ``n`` resolutions, as before the switch existed).

    Partitions with fewer than ``min_groups`` groups (the number of known classes, which they
    cannot fit) are set aside whenever a finer one exists: early in training they can tie with it.
    """
    rows = sorted(row for row in sweep if row[1] >= min_groups) or sorted(sweep)
    if rule == "best":
        return max(rows, key=lambda row: (row[2], -row[1], -row[0]))[0]
    if rule != "plateau":
        raise ValueError(f"unknown granularity rule {rule!r}: use 'plateau' or 'best'")
    top = max(row[2] for row in rows)
    plateau = [row for row in rows if row[2] >= top - tolerance]
    return plateau[int((len(plateau) - 1) * position)][0]


def _nearest_above(candidates: list, target: int) -> tuple[float, torch.Tensor]:
    """The partition with the fewest groups above ``target`` (best accuracy on ties); if every
    partition has fewer groups, the one with the most."""
    above = [c for c in candidates if c[1][1] > target]
    pool = above or candidates
    best_n = min(c[1][1] for c in pool) if above else max(c[1][1] for c in pool)
    res, (groups, *_rest) = max((c for c in pool if c[1][1] == best_n),
                                key=lambda c: (c[1][3], -c[0]))
    if not above:
        log.debug("no partition has %d or more groups; keeping %d", target, best_n)
    return res, groups


def merge_to_count(groups: torch.Tensor, similarity: torch.Tensor, target: int) -> torch.Tensor:
    """Merge the two groups with the highest mean prototype similarity until ``target`` remain.

    Used with the class-number prior when no resolution gives exactly ``target`` groups (Leiden's
    group count can jump past it): the agglomeration continues the modularity partition on the
    same prototype graph instead of settling for a wrong count.
    """
    groups = groups.clone()
    sim = similarity.double()
    while int(groups.max()) + 1 > target:
        g = int(groups.max()) + 1
        onehot = torch.nn.functional.one_hot(groups, g).double()
        between = onehot.t() @ sim @ onehot
        sizes = onehot.sum(dim=0)
        mean = between / (sizes[:, None] * sizes[None, :])
        mean.fill_diagonal_(-1.0)
        a, b = divmod(int(mean.argmax()), g)
        a, b = min(a, b), max(a, b)
        groups[groups == b] = a
        groups[groups > b] -= 1
    return groups


def _bisect_to_count(tried: dict, attempt, target: int, steps: int) -> None:
    """Bisect the (log) resolution between the sweep's neighbours below and above ``target``."""
    below = [k for k, v in tried.items() if v[1] < target]
    above = [k for k, v in tried.items() if v[1] > target]
    if not below or not above:
        return
    lo, hi = max(below), min(above)
    if lo >= hi:
        return
    for _ in range(steps):
        mid = float(np.sqrt(lo * hi))
        n = attempt(mid)
        if n == target:
            return
        lo, hi = (mid, hi) if n < target else (lo, mid)
