"""Small synthetic attributed graphs with planted classes (tests, examples, simulations)."""
from __future__ import annotations

from typing import Sequence

import torch

from .graph import Graph, canonical_edges


def make_attributed_sbm(num_nodes: int = 600, num_classes: int = 4, feature_dim: int = 32,
                        avg_degree: float = 8.0, homophily: float = 0.8, feature_noise: float = 1.0,
                        seed: int = 0, class_sizes: Sequence[int] | None = None) -> Graph:
    """An attributed stochastic block model with ``num_classes`` planted classes.

    Classes are balanced (sizes differ by at most one) unless ``class_sizes`` is given. Every
    class has a random Gaussian centroid ``N(0, I)`` in ``feature_dim`` dimensions; a node's
    features are its class centroid plus ``feature_noise * N(0, I)`` (float32). Edges: every node
    draws ``Poisson(avg_degree / 2)`` endpoints; each endpoint is, with probability
    ``homophily``, a uniform member of the node's own class, else a uniform member of one of the
    other classes. The draws are vectorised (no dense ``N x N`` matrix, no loop
    over nodes), then symmetrised without self loops or duplicates (:func:`canonical_edges`), so
    the mean degree is about ``avg_degree`` and the edge homophily about ``homophily``. The same
    ``seed`` always gives the same graph.
    """
    if class_sizes is None:
        class_sizes = [num_nodes // num_classes + (c < num_nodes % num_classes)
                       for c in range(num_classes)]
    sizes = torch.as_tensor(list(class_sizes), dtype=torch.long)
    if sizes.numel() < 1 or int(sizes.min()) < 1:
        raise ValueError(f"every class needs at least one node, got sizes {sizes.tolist()}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    n, k = int(sizes.sum()), sizes.numel()
    gen = torch.Generator().manual_seed(int(seed))
    y = torch.repeat_interleave(torch.arange(k), sizes)  # members of class c are contiguous
    starts = torch.cumsum(sizes, 0) - sizes
    centroids = torch.randn(k, feature_dim, generator=gen)
    x = (centroids[y] + feature_noise * torch.randn(n, feature_dim, generator=gen)).float()

    draws = torch.poisson(torch.full((n,), avg_degree / 2.0), generator=gen).long()
    src = torch.repeat_interleave(torch.arange(n), draws)
    m = src.numel()
    own = y[src]
    same = torch.rand(m, generator=gen) < homophily
    # same class: a uniform member of it; else a uniform node outside the class (skip its block)
    u = torch.rand(m, generator=gen)
    inside = starts[own] + (u * sizes[own]).long().clamp_max(sizes[own] - 1)
    outside_n = (n - sizes[own]).clamp_min(1)
    outside = (u * outside_n).long().clamp_max(outside_n - 1)
    outside = outside + sizes[own] * (outside >= starts[own]).long()
    dst = torch.where(same | (sizes[own] == n), inside, outside)
    # shuffle the node ids so that a class is not a contiguous id range
    perm = torch.randperm(n, generator=gen)  # new node i is old node perm[i]
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    edge_index = canonical_edges(inv[torch.stack([src, dst])], n)
    return Graph(x=x[perm], edge_index=edge_index, y=y[perm], name=f"sbm{n}x{k}")
