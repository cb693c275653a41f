"""OpenNCD's training losses, as a switch on top of ORAL's Eq. 13 (``ORALConfig.opennc_losses``).

The ORAL paper builds on OpenNCD (Liu et al., "Open-world semi-supervised novel class discovery",
IJCAI 2023): its "neither module" ablation row is OpenNCD's result. OpenNCD trains prototypes with
terms the ORAL paper does not describe; with the switch on, every training step adds them to Eq. 13,
on each prototypical attention layer, between the plain forward pass and a second view of the
graph (the adaptive edge dropping of Eq. 12, from the first epoch on):

- **prototype similarity** (:func:`prototype_similarity`): a node's prototype scores ``r_i``
  (Eq. 1) and those of a positive partner in the second view should agree,
  ``-log sum_j r_ij r'_{pi(i) j}``; a labelled node's partner is a random labelled node of its
  class, an unlabelled node's its nearest neighbour (:func:`positive_pairs`);
- **group similarity** (:func:`group_similarity`): the group assignments (Eq. 3) of the two views,
  a symmetric cross-entropy;
- **group-prior balance** (:func:`group_prior_balance`), in place of Eq. 2: ``KL(mean_i r_i ||
  prior)`` weighted :data:`BALANCE_WEIGHT`, the prior giving every group the same mass, split
  evenly among its prototypes (with singleton groups, the uniform prior of Eq. 2).

OpenNCD finds the nearest neighbour within a batch of 512 images; here it is searched among a
random pool of ``opennc_pair_pool`` nodes per step (the seeds of a mini-batch when smaller).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

#: OpenNCD's weight of its balance term (``ent_loss * 10`` in its public code)
BALANCE_WEIGHT = 10.0
#: rows of the node-by-pool similarity computed at once
_CHUNK = 1 << 16


def positive_pairs(h: torch.Tensor, labels: torch.Tensor, pool: int,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """The partner ``pi(i)`` of every node (long ``[N]``) for :func:`prototype_similarity`.

    A labelled node (``labels >= 0``) gets a uniformly random labelled node of its class, never
    itself unless it is its class's only labelled node; an unlabelled node gets its nearest
    neighbour by cosine similarity of ``h`` (detached) among ``pool`` random nodes, never itself.
    """
    n = h.shape[0]
    device = h.device
    pairs = torch.empty(n, dtype=torch.long, device=device)
    known = (labels >= 0).nonzero().flatten()
    if known.numel():
        cls = labels[known]
        order = torch.argsort(cls, stable=True)
        members = known[order]  # labelled nodes grouped by class
        sorted_cls = cls[order]
        _, counts = torch.unique_consecutive(sorted_cls, return_counts=True)
        starts = torch.cumsum(counts, 0) - counts
        block = torch.repeat_interleave(torch.arange(counts.numel(), device=device), counts)
        pos = torch.arange(members.numel(), device=device) - starts[block]
        size = counts[block]
        offset = (torch.rand(members.numel(), generator=generator).to(device) * (size - 1).clamp_min(1)).long()
        partner = torch.where(size > 1, (pos + 1 + offset) % size, pos)
        pairs[members] = members[starts[block] + partner]
    unknown = (labels < 0).nonzero().flatten()
    if unknown.numel():
        size = min(pool, n)
        cand = torch.randperm(n, generator=generator)[:size].to(device)
        z = F.normalize(h.detach(), dim=-1)
        zc = z[cand]
        for start in range(0, unknown.numel(), _CHUNK):
            rows = unknown[start:start + _CHUNK]
            sim = z[rows] @ zc.t()
            sim[rows[:, None] == cand[None, :]] = float("-inf")  # never its own partner
            pairs[rows] = cand[sim.argmax(dim=1)]
    return pairs


def prototype_similarity(r: torch.Tensor, r_view: torch.Tensor, pairs: torch.Tensor,
                         eps: float = 1e-8) -> torch.Tensor:
    """OpenNCD's prototype similarity: ``-mean_i log sum_j r_ij r'_{pi(i) j}`` with ``r`` the
    representativeness of Eq. 1 in the plain view and ``r'`` in the second view."""
    agree = (r * r_view[pairs]).sum(dim=1)
    return -agree.clamp_min(eps).log().mean()


def group_similarity(p: torch.Tensor, p_view: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """OpenNCD's group similarity: the symmetric cross-entropy between the two views' group
    assignments (Eq. 3), ``(H(p', p) + H(p, p')) / 2`` averaged over the nodes."""
    one = -(p_view * p.clamp_min(eps).log()).sum(dim=1).mean()
    two = -(p * p_view.clamp_min(eps).log()).sum(dim=1).mean()
    return 0.5 * (one + two)


def group_prior(prototype_group: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Every group the same mass ``1 / N_clu``, split evenly among its prototypes (``[N_pro]``)."""
    size = torch.bincount(prototype_group, minlength=num_groups).to(torch.float64)
    prior = 1.0 / (num_groups * size[prototype_group])
    return (prior / prior.sum()).to(torch.float32)


def group_prior_balance(r: torch.Tensor, prototype_group: torch.Tensor, num_groups: int,
                        eps: float = 1e-12) -> torch.Tensor:
    """OpenNCD's balance term (unweighted): ``KL(mean_i r_i || group prior)``."""
    marginal = r.mean(dim=0).clamp_min(eps)
    prior = group_prior(prototype_group.to(r.device), num_groups).to(r.dtype)
    return (marginal * (marginal.log() - prior.log())).sum()


def opennc_terms(outs, outs_view, partitions, labels: torch.Tensor, pool: int,
                 generator: torch.Generator | None = None,
                 which=("proto", "group", "balance")) -> dict[str, torch.Tensor]:
    """The terms named in ``which`` (``ORALConfig.opennc_terms``) summed over the layers:
    ``proto`` and ``group`` (weight 1, as in OpenNCD) and ``balance`` (already weighted
    :data:`BALANCE_WEIGHT`). ``outs``/``outs_view``: the layers' outputs (``r``, ``p``, ``h``) in
    the two views; the partners come from the last layer's ``h`` in the plain view."""
    out = {}
    if "proto" in which:
        pairs = positive_pairs(outs[-1].h, labels, pool, generator)
        out["proto"] = sum(prototype_similarity(o.r, v.r, pairs) for o, v in zip(outs, outs_view))
    if "group" in which:
        out["group"] = sum(group_similarity(o.p, v.p) for o, v in zip(outs, outs_view))
    if "balance" in which:
        out["balance"] = BALANCE_WEIGHT * sum(group_prior_balance(o.r, part.prototype_group, part.num_groups)
                                              for o, part in zip(outs, partitions))
    return out
