"""k-means, plain and semi-supervised (labelled points stay in their class's cluster).

Used by the baselines (``harness.baselines``) and by the novel groups' re-cut
(:mod:`oral_core.recut`); it lives here so the method does not import the harness.
"""
from __future__ import annotations

import torch


def squared_distances(z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``[N, K]`` squared Euclidean distances between the rows of ``z`` and of ``c``."""
    return ((z * z).sum(1, keepdim=True) - 2 * z @ c.t() + (c * c).sum(1)[None, :]).clamp_min(0)


def kmeans_plus_plus(z: torch.Tensor, centres: torch.Tensor, k: int, pool: torch.Tensor,
               gen: torch.Generator) -> torch.Tensor:
    """Extend ``centres`` to ``k`` rows by k-means++ (D^2 sampling) over the rows ``pool`` of ``z``."""
    out = [centres]
    have = centres.shape[0]
    cand = z[pool]
    if cand.shape[0] == 0:
        cand = z
    d2 = squared_distances(cand, centres).min(dim=1).values if have else None
    while have < k:
        if d2 is None or float(d2.sum()) <= 0:
            pick = int(torch.randint(cand.shape[0], (1,), generator=gen))
        else:
            pick = int(torch.multinomial(d2 / d2.sum(), 1, generator=gen))
        new = cand[pick:pick + 1]
        out.append(new)
        have += 1
        nd = squared_distances(cand, new).squeeze(1)
        d2 = nd if d2 is None else torch.minimum(d2, nd)
    return torch.cat(out)


def semi_supervised_kmeans(z: torch.Tensor, k: int, labels: torch.Tensor | None = None,
                           restarts: int = 10, iterations: int = 100,
                           seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """k-means in which the nodes with ``labels >= 0`` stay in the cluster of their class.

    Clusters ``0..K-1`` (``K = labels.max() + 1``) are the known classes, their centroids start at
    the mean of their labelled points; clusters ``K..k-1`` start by k-means++ on the unlabelled
    points. Lloyd iterations assign every unlabelled point to its nearest centroid and move each
    centroid to the mean of its members (an empty cluster keeps its centroid). Of ``restarts``
    seeded starts, the one with the lowest inertia is returned. With ``labels`` ``None`` (or all
    -1) this is plain k-means with k-means++ starts.

    Returns ``(assignment [N], centroids [k, D], inertia)``; runs on the CPU.
    """
    z = z.detach().cpu().double()
    n = z.shape[0]
    labels = torch.full((n,), -1, dtype=torch.long) if labels is None else labels.cpu().long()
    fixed = labels >= 0
    num_known = int(labels.max()) + 1 if fixed.any() else 0
    if k < num_known:
        raise ValueError(f"k={k} is smaller than the number of labelled classes {num_known}")
    if k > n:
        raise ValueError(f"k={k} exceeds the number of points {n}")
    known_centres = torch.zeros(num_known, z.shape[1], dtype=z.dtype)
    if num_known:
        counts = torch.bincount(labels[fixed], minlength=num_known)
        if int(counts.min()) == 0:
            raise ValueError("every class 0..K-1 needs at least one labelled point")
        known_centres.index_add_(0, labels[fixed], z[fixed])
        known_centres /= counts[:, None].to(z.dtype)
    pool = (~fixed).nonzero().flatten()
    gen = torch.Generator().manual_seed(int(seed))
    best = None
    for _ in range(max(1, restarts)):
        centres = kmeans_plus_plus(z, known_centres, k, pool, gen)
        assign = None
        for _ in range(iterations):
            new = squared_distances(z, centres).argmin(dim=1)
            new[fixed] = labels[fixed]
            if assign is not None and torch.equal(new, assign):
                break
            assign = new
            sums = torch.zeros_like(centres).index_add_(0, assign, z)
            size = torch.bincount(assign, minlength=k)
            filled = size > 0
            centres[filled] = sums[filled] / size[filled, None].to(z.dtype)
        inertia = float(squared_distances(z, centres).gather(1, assign[:, None]).sum())
        if best is None or inertia < best[2]:
            best = (assign.clone(), centres.clone(), inertia)
    return best[0], best[1].float(), best[2]


def kmeans(z: torch.Tensor, k: int, restarts: int = 10, iterations: int = 100,
           seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Plain k-means (k-means++ starts, lowest inertia of ``restarts``)."""
    return semi_supervised_kmeans(z, k, None, restarts, iterations, seed)
