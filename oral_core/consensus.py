"""Consensus over restarts: one answer from several fits of the same graph and split.

Not in the paper (a deviation, ``consensus_restarts``). ORAL's novel partition depends on the
seed: two fits of one night that differ only in the initialisation, dropout, sampling and
clustering draws cut the novel nodes differently (``benchmarks/results/seed_agreement``). A
consensus answer reads R fits' class ids per node:

- a node is *novel* when a strict majority of the fits put it in a novel class; otherwise it is
  named the known class most fits give it (ties: the lowest class id);
- the novel nodes are grouped by *co-association* (the share of the fits in which two nodes sat
  in the same novel class), worked on the distinct patterns of novel ids, so the cost grows with
  the number of patterns, not with the square of the novel nodes. ``linkage="components"``: two
  nodes share a consensus class when a strict majority of the fits put both in one novel class,
  closed transitively (connected components; the first study's consensus, which chains classes
  together through small bridging patterns); ``linkage="average"``: groups are merged, the most
  co-associated pair first, while their mean co-association over all pairs of their nodes is
  above one half (average linkage: a few bridging nodes cannot join two classes);
  ``linkage="medoid"``: no node is voted on; the answer is the one fit whose class ids agree most
  with the other fits' (the highest mean adjusted Rand index over the nodes that carry no label,
  :func:`medoid_restart`), taken whole, so its novel classes are classes one model formed.

Known class ids are the same in every fit (the labelled classes); novel ids are each fit's own
and are never matched across fits, only co-associated. The consensus novel classes are numbered
from ``num_known`` by size, largest first.
"""
from __future__ import annotations

import torch


def majority_known(class_ids: torch.Tensor, num_known: int) -> torch.Tensor:
    """The known class most fits name each node (``class_ids``: R x N); the lowest id on a tie,
    -1 where no fit names a known class."""
    votes = torch.zeros(class_ids.shape[1], num_known + 1, dtype=torch.long)
    is_known = (class_ids >= 0) & (class_ids < num_known)
    known = torch.where(is_known, class_ids, torch.full_like(class_ids, num_known))
    for row in known:
        votes.scatter_add_(1, row.unsqueeze(1), torch.ones_like(row).unsqueeze(1))
    votes = votes[:, :num_known]
    best = votes.argmax(dim=1)  # argmax returns the first maximum: the lowest id on a tie
    return torch.where(votes.max(dim=1).values > 0, best, torch.full_like(best, -1))


def novel_majority(class_ids: torch.Tensor, num_known: int) -> torch.Tensor:
    """Nodes a strict majority of the fits put in a novel class."""
    return (class_ids >= num_known).sum(dim=0) * 2 > class_ids.shape[0]


def co_association_groups(patterns: torch.Tensor, num_known: int) -> torch.Tensor:
    """Connected components of the co-association relation over distinct patterns (P x R: each
    pattern's class id in every fit): two patterns are linked when a strict majority of the R fits
    give both the same novel id. Returns the component of each pattern (0..C-1)."""
    p, r = patterns.shape
    parent = list(range(p))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    novel = patterns >= num_known
    for i in range(p):
        same = ((patterns == patterns[i]) & novel & novel[i]).sum(dim=1)
        for j in torch.nonzero(same * 2 > r).flatten().tolist():
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    roots = [root(i) for i in range(p)]
    index = {v: k for k, v in enumerate(dict.fromkeys(roots))}
    return torch.tensor([index[v] for v in roots], dtype=torch.long)


def average_linkage_groups(patterns: torch.Tensor, weights: torch.Tensor,
                           num_known: int) -> torch.Tensor:
    """Average-linkage groups of distinct patterns (P x R, ``weights``: nodes per pattern): the
    pair of groups with the highest mean co-association over all pairs of their nodes is merged
    while that mean is above one half (Lance-Williams update). Returns the group of each pattern
    (0..C-1)."""
    import numpy as np

    pat = patterns.numpy()
    novel = pat >= num_known
    r = pat.shape[1]
    same = np.zeros((len(pat), len(pat)))
    for f in range(r):  # fits in which both patterns are novel and share the novel id
        col, nov = pat[:, f], novel[:, f]
        same += (col[:, None] == col[None, :]) & nov[:, None] & nov[None, :]
    sim = same / r
    size = weights.numpy().astype(float).copy()
    alive = np.ones(len(pat), dtype=bool)
    group = np.arange(len(pat))
    np.fill_diagonal(sim, -np.inf)
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], sim, -np.inf)
        flat = int(np.argmax(masked))
        i, j = divmod(flat, len(pat))
        if not masked[i, j] > 0.5:
            break
        i, j = min(i, j), max(i, j)
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i, :], sim[:, i] = merged, merged
        sim[i, i] = -np.inf
        size[i] += size[j]
        alive[j] = False
        group[group == j] = i
    index = {v: k for k, v in enumerate(dict.fromkeys(group.tolist()))}
    return torch.tensor([index[v] for v in group.tolist()], dtype=torch.long)


#: how the novel nodes are grouped (see the module)
LINKAGES = ("components", "average", "medoid")


def medoid_restart(class_ids: torch.Tensor, nodes: torch.Tensor | None = None) -> int:
    """The fit (row of ``class_ids``, R x N) whose answer agrees most with the others': the
    highest mean adjusted Rand index with every other fit over ``nodes`` (all nodes when None);
    the first such fit on a tie. Reads no label."""
    from oral_core.metrics import adjusted_rand_index

    ids = class_ids if nodes is None else class_ids[:, nodes]
    r = ids.shape[0]
    if r == 1:
        return 0
    mean = [sum(adjusted_rand_index(ids[i], ids[j]) for j in range(r) if j != i) / (r - 1)
            for i in range(r)]
    return max(range(r), key=lambda i: (mean[i], -i))


def consensus_class_ids(class_ids: list[torch.Tensor] | torch.Tensor, num_known: int,
                        linkage: str = "average",
                        unlabelled: torch.Tensor | None = None) -> torch.Tensor:
    """One class id per node from R fits' class ids (each N long, known ids < ``num_known``): the
    known majority, and the novel majority grouped by co-association under ``linkage``; or, with
    ``linkage="medoid"``, the class ids of the fit that agrees most with the others over the
    ``unlabelled`` nodes (a mask; all nodes when None). See the module."""
    if linkage not in LINKAGES:
        raise ValueError(f"linkage must be one of {LINKAGES}, got {linkage!r}")
    ids = torch.stack(list(class_ids)) if not torch.is_tensor(class_ids) else class_ids
    ids = ids.long()
    if ids.shape[0] == 1:
        return ids[0].clone()
    if linkage == "medoid":
        nodes = None if unlabelled is None else torch.nonzero(unlabelled).flatten()
        return ids[medoid_restart(ids, nodes)].clone()
    out = majority_known(ids, num_known)
    novel = novel_majority(ids, num_known)
    out[novel] = -1
    nodes = torch.nonzero(novel).flatten()
    if nodes.numel():
        patterns, inverse = torch.unique(ids[:, nodes].T, dim=0, return_inverse=True)
        if linkage == "components":
            group = co_association_groups(patterns, num_known)[inverse]
        else:
            weights = torch.bincount(inverse, minlength=patterns.shape[0])
            group = average_linkage_groups(patterns, weights, num_known)[inverse]
        sizes = torch.bincount(group)
        order = torch.argsort(-sizes, stable=True)  # largest first
        rank = torch.empty_like(order)
        rank[order] = torch.arange(order.numel())
        out[nodes] = num_known + rank[group]
    # a node no fit names known and no majority calls novel cannot occur with R >= 2 unless
    # every fit left it unassigned; name it by the first fit
    missing = out < 0
    out[missing] = ids[0][missing]
    return out


def agreement_share(class_ids: torch.Tensor, consensus: torch.Tensor,
                    num_known: int) -> torch.Tensor:
    """Per node, the share of the fits (R x N) that agree with the consensus: the same known
    class, or a novel class where the consensus is novel (a consensus answer's confidence)."""
    novel = consensus >= num_known
    agree = torch.where(novel.unsqueeze(0), class_ids >= num_known, class_ids == consensus)
    return agree.float().mean(dim=0)


def restart_seeds(seed: int, restarts: int) -> list[int]:
    """The model seeds of a consensus night: ``seed, seed + 1, ...`` (the first is the night's
    own seed, so one restart is the single fit)."""
    return [seed + r for r in range(restarts)]


def fit_consensus(config, x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                  val_labels: torch.Tensor, **fit_kwargs):
    """``config.consensus_restarts`` fits of ORAL on the same graph and split (model seeds
    :func:`restart_seeds`), one after another; returns ``(first fit, discovery)`` where the
    discovery's class ids are the consensus (:func:`consensus_class_ids`) and its confidence
    the fits' agreement (:func:`agreement_share`). The first fit stands for the model (its
    weights, history and selection are what the night saves); with ``consensus_linkage="medoid"``
    the chosen fit is the model and its own discovery the answer. ``fit_kwargs`` go to every fit
    (a warm start's ``init`` included); a progress callback sees the restarts' epochs in turn."""
    from dataclasses import replace

    from oral_core.trainer import ORAL

    seeds = restart_seeds(config.seed, config.consensus_restarts)
    on_progress = fit_kwargs.pop("on_progress", None)
    fits = []
    for r, seed in enumerate(seeds):
        def progress(done, total, r=r):
            if on_progress is not None:
                on_progress(r * total + done, len(seeds) * total)
        fits.append(ORAL(replace(config, seed=seed)).fit(
            x, edge_index, train_labels, val_labels, on_progress=progress, **fit_kwargs))
    first = fits[0]
    num_known = first.num_known_
    ids = torch.stack([f.predict().class_id for f in fits]).long()
    if config.consensus_linkage == "medoid":
        unlabelled = torch.nonzero((train_labels < 0) & (val_labels < 0)).flatten()
        chosen = fits[medoid_restart(ids, unlabelled)]
        return chosen, chosen.predict()
    consensus = consensus_class_ids(ids, num_known, config.consensus_linkage)
    found = first.predict()
    is_novel = consensus >= num_known
    seen = val_labels >= 0
    val_accuracy = (float((consensus[seen] == val_labels[seen]).float().mean())
                    if bool(seen.any()) else found.val_accuracy)
    return first, replace(found, class_id=consensus, confidence=agreement_share(ids, consensus,
                                                                              num_known),
                          is_novel=is_novel, val_accuracy=val_accuracy,
                          num_classes=int(num_known + torch.unique(consensus[is_novel]).numel()),
                          layer_class_ids=[])
