"""Are the known classes separable in the graph's own features? (``novel_wholeness_if``; not in
the paper)

``novel_wholeness`` cuts the novel groups as finely as the known groups stay whole. On graphs of
many compact classes (the generator) that separates novel classes Eq. 4's plateau merges; on
graphs of broad, overlapping classes (Cora, AmazonPhoto) the finer cut splits a novel class as
often as it separates two (``benchmarks/results/novel_wholeness_night``). Which kind a graph is
can be read from its labelled nodes before training, in features no training has shaped (the
known classes and the novel ones are then alike):

- the view: the features propagated twice over the normalised adjacency (``S^2 X``, as the
  known head reads them), standardised on the labelled training nodes and projected on their
  first :data:`VIEW_DIMS` principal axes;
- the split share of a set of nodes: the share of its spread (sum of squared distances to the
  mean) that the best of a few 2-means cuts explains, the median over :data:`DRAWS` random
  subsets of one common size (the median labelled class size, so that every set is judged at
  the same size);
- *cut*: the split share of each known class's labelled nodes (how far 2-means can cut one
  class in two); *pair*: the split share of every two known classes' labelled nodes together
  (how far it separates two classes);
- the graph is *separable* when the median pair share exceeds the upper quartile of the cut
  shares: two known classes are told apart better than three in four known classes are cut
  (the largest cut share, tried first, rides on one noisy class: on the generator's young
  nightly graphs, about 40 labelled nodes a class, it fired on 8 of 24 nights, and on none of
  Cora's, AmazonPhoto's or BlogCatalog's, ``benchmarks/results/novel_wholeness_separable``).

Only labelled training nodes are read (no validation node, no unlabelled node); the random draws
use their own generator, so a fit's random stream is the same whatever the answer.
"""
from __future__ import annotations

import statistics

import torch

from .known_head import propagated_features, standardised

#: principal axes of the view
VIEW_DIMS = 16
#: random subsets each split share is the median of
DRAWS = 9
#: 2-means restarts (k-means++ seeding) per cut; the cut of lowest spread is kept
RESTARTS = 4
#: Lloyd iterations per restart
ITERATIONS = 30
#: classes with fewer labelled nodes are left out of the yardstick
MIN_CLASS_NODES = 10


def labelled_view(x: torch.Tensor, edge_index: torch.Tensor, rows: torch.Tensor,
                  dims: int | None = None, seed: int = 0) -> torch.Tensor:
    """``[len(rows), <= dims]``: the rows of ``S^2 X`` standardised over ``rows`` and projected
    on their first ``dims`` principal axes (a label-free transform)."""
    z = standardised(propagated_features(x, edge_index)[rows])[0]
    q = min(dims or VIEW_DIMS, z.shape[0], z.shape[1])
    with torch.random.fork_rng(devices=[]):  # pca_lowrank draws from the global stream
        torch.manual_seed(seed)
        _u, _s, v = torch.pca_lowrank(z, q=q, center=True)
    return (z - z.mean(0)) @ v


def two_means(z: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """long ``[n]``: the 2-means cut (0/1) of ``z``'s rows of lowest within-group spread over
    :data:`RESTARTS` k-means++ seedings."""
    best, best_spread = torch.zeros(z.shape[0], dtype=torch.long), None
    for _ in range(RESTARTS):
        first = int(torch.randint(z.shape[0], (1,), generator=gen))
        d = ((z - z[first]) ** 2).sum(1)
        if float(d.sum()) <= 0:
            return best  # every row the same: nothing to cut
        second = int(torch.multinomial(d / d.sum(), 1, generator=gen))
        centres = z[[first, second]]
        for _ in range(ITERATIONS):
            cut = torch.cdist(z, centres).argmin(1)
            if int(cut.min()) == int(cut.max()):
                break
            moved = torch.stack([z[cut == k].mean(0) for k in range(2)])
            if torch.equal(moved, centres):
                break
            centres = moved
        spread = float(((z - centres[cut]) ** 2).sum())
        if best_spread is None or spread < best_spread:
            best, best_spread = cut, spread
    return best


def explained_share(z: torch.Tensor, cut: torch.Tensor) -> float:
    """The share of ``z``'s spread around its mean that the cut's two means explain."""
    total = float(((z - z.mean(0)) ** 2).sum())
    if total <= 0 or int(cut.min()) == int(cut.max()):
        return 0.0
    within = sum(float(((z[cut == k] - z[cut == k].mean(0)) ** 2).sum()) for k in range(2))
    return 1.0 - within / total


def split_share(z: torch.Tensor, size: int, gen: torch.Generator, draws: int | None = None
                ) -> float:
    """The median over ``draws`` (:data:`DRAWS`) random subsets of ``size`` rows (all rows when
    fewer) of the 2-means cut's explained share."""
    shares = []
    for _ in range(draws or DRAWS):
        rows = (torch.randperm(z.shape[0], generator=gen)[:size] if z.shape[0] > size
                else torch.arange(z.shape[0]))
        part = z[rows]
        shares.append(explained_share(part, two_means(part, gen)))
    return statistics.median(shares)


def known_separability(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                       num_known: int, seed: int = 0) -> dict:
    """The yardstick of the module docstring on the labelled training nodes
    (``train_labels >= 0``): ``{"separable", "cut_quartile", "cut_max", "pair_median", "cuts",
    "pairs", "size"}`` (shares in %; ``cut_quartile``: the upper quartile of the cut shares). Fewer than three classes of :data:`MIN_CLASS_NODES` labelled
    nodes: not separable (no yardstick)."""
    labels = train_labels.long().cpu()
    counts = torch.bincount(labels[labels >= 0], minlength=num_known)
    classes = [c for c in range(num_known) if int(counts[c]) >= MIN_CLASS_NODES]
    out = {"separable": False, "cut_quartile": None, "cut_max": None, "pair_median": None,
           "cuts": [], "pairs": [], "size": 0}
    if len(classes) < 3:
        return out
    rows = torch.nonzero(torch.isin(labels, torch.tensor(classes))).flatten()
    z, y = labelled_view(x, edge_index, rows, seed=seed), labels[rows]
    size = int(statistics.median(int(counts[c]) for c in classes))
    gen = torch.Generator().manual_seed(seed)
    cuts = [100 * split_share(z[y == c], size, gen) for c in classes]
    pairs = [100 * split_share(z[(y == a) | (y == b)], size, gen)
             for i, a in enumerate(classes) for b in classes[i + 1:]]
    quartile, pair_median = upper_quartile(cuts), statistics.median(pairs)
    return {"separable": pair_median > quartile, "cut_quartile": round(quartile, 2),
            "cut_max": round(max(cuts), 2),
            "pair_median": round(pair_median, 2), "cuts": [round(v, 2) for v in cuts],
            "pairs": [round(v, 2) for v in pairs], "size": size}


def upper_quartile(values: list[float]) -> float:
    """The 75th percentile (linear interpolation between order statistics)."""
    ordered = sorted(values)
    at = 0.75 * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (at - low) * (ordered[high] - ordered[low])
