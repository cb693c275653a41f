"""The pseudo-label generator: pad, align, ensemble, suppress, select (Eq. 8-9).

Layers group the nodes independently, so their group ids are not aligned and their group counts
differ. The generator pads every layer's assignment to one group count, aligns each layer to the
first with the Hungarian algorithm on assignment overlap, averages (Eq. 8), masks groups whose
mean mass is at most ``eta`` (Eq. 9), and keeps the ``gamma`` most confident unlabelled nodes of
every remaining group as pseudo-labels.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .hungarian import max_assignment


def pad_assignments(assignments: list[torch.Tensor]) -> list[torch.Tensor]:
    """Pad every ``[N, G_l]`` assignment with zero columns to ``[N, max_l G_l]``."""
    width = max(p.shape[1] for p in assignments)
    return [torch.nn.functional.pad(p, (0, width - p.shape[1])) for p in assignments]


def align_layers(padded: list[torch.Tensor], first: int = 0) -> list[torch.Tensor]:
    """Permutations aligning each layer's groups to the reference groups (Hungarian).

    Returns ``perm_l`` (long ``[G]``) with ``aligned_l = padded_l[:, perm_l]``; ``perm_1`` is the
    identity, so ensemble group ``j`` is group ``j`` of the first layer and group ``perm_l[j]``
    (``j_l`` in Eq. 8) of layer ``l``. The reference is the mean of the layers aligned so far, which
    is exactly the first layer for ``L = 2``; for deeper stacks it keeps groups that are missing
    from the first layer (its padding) together across the later layers.

    ``first`` (0-based) is the first layer the ensemble averages (the switch
    ``ORALConfig.ensemble_from_layer``; 0 is the paper): the reference starts from it, and the
    layers before it are aligned to the final reference without changing it (they still need a
    permutation, as pseudo-labels supervise every layer through it).
    """
    width = padded[0].shape[1]
    perms: list[torch.Tensor | None] = [None] * len(padded)
    perms[first] = torch.arange(width)
    reference = padded[first].detach().double()

    def align(p: torch.Tensor) -> torch.Tensor:
        overlap = reference.t() @ p.detach().double()  # [G_ref, G_l]
        rows, cols = max_assignment(overlap)
        perm = torch.empty(p.shape[1], dtype=torch.long)
        perm[torch.as_tensor(rows, dtype=torch.long)] = torch.as_tensor(cols, dtype=torch.long)
        return perm

    for k, idx in enumerate(range(first + 1, len(padded)), start=1):
        perms[idx] = align(padded[idx])
        reference = (reference * k + padded[idx].detach().double()[:, perms[idx]]) / (k + 1)
    for idx in range(first):
        perms[idx] = align(padded[idx])
    return perms


def ensemble_assignment(padded: list[torch.Tensor], perms: list[torch.Tensor],
                        first: int = 0) -> torch.Tensor:
    """Eq. 8: ``p_hat_ij = (1/L) sum_l p^(l)_{i j_l}`` over the layers ``first..L-1`` (0-based;
    ``first = 0``, every layer, is the paper)."""
    return torch.stack([p[:, perm.to(p.device)] for p, perm in
                        zip(padded[first:], perms[first:])]).mean(dim=0)


def suppression_mask(p_hat: torch.Tensor, eta: float) -> torch.Tensor:
    """Eq. 9: ``m_j = 1( (1/|V|) sum_i p_hat_ij > eta )`` as a float ``[G]`` mask."""
    return (p_hat.mean(dim=0) > eta).to(p_hat.dtype)


def select_confident(p_masked: torch.Tensor, candidates: torch.Tensor, gamma: float) -> torch.Tensor:
    """Reliable pseudo-labels: per group, the top ``gamma`` of the candidate nodes predicted in it.

    Args:
        p_masked: the suppressed ensemble ``[N, G]``.
        candidates: bool ``[N]``, the unlabelled nodes that may receive a pseudo-label.
        gamma: fraction kept per group (rounded up, so a non-empty group keeps at least one).
    Returns:
        long ``[N]``: the ensemble group of each selected node, -1 elsewhere.
    """
    conf, group = p_masked.max(dim=1)
    valid = candidates & (conf > 0)
    idx = valid.nonzero().flatten()
    out = torch.full_like(group, -1)
    if idx.numel() == 0:
        return out
    g, c = group[idx], conf[idx]
    order = torch.argsort(c, descending=True, stable=True)
    order = order[torch.argsort(g[order], stable=True)]  # by group, most confident first
    g_sorted = g[order]
    counts = torch.bincount(g_sorted, minlength=p_masked.shape[1])
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(order.numel(), device=g.device) - starts[g_sorted]
    quota = torch.ceil(counts.double() * gamma).long()
    chosen = idx[order[rank < quota[g_sorted]]]
    out[chosen] = group[chosen]
    return out


def novel_groups_only(pseudo: torch.Tensor, group_class: torch.Tensor, num_known: int) -> torch.Tensor:
    """The pseudo-labels of :func:`select_confident` whose group is novel (class id
    ``>= num_known``); the others become -1. Not in the paper, whose pseudo-labels come from
    every kept group (``ORALConfig.pseudo_label_groups = "novel"``).

    Args:
        pseudo: long ``[N]``, ensemble group per node, -1 for none.
        group_class: long ``[G]``, class id of each ensemble group (-1: suppressed or empty).
    """
    known = group_class.to(pseudo.device)[pseudo.clamp_min(0)] < num_known
    return torch.where((pseudo >= 0) & known, -1, pseudo)


@dataclass
class Ensemble:
    """Aligned, suppressed ensemble of the layers' group assignments."""

    p: torch.Tensor  # [N, G] Eq. 8 after the mask of Eq. 9
    mask: torch.Tensor  # [G]
    perms: list[torch.Tensor]  # ensemble group j -> group perm_l[j] of layer l (padded ids)
    layer_groups: list[int]  # real group count of each layer


def ensemble_layers(assignments: list[torch.Tensor], eta: float, first: int = 0) -> Ensemble:
    """Pad, align, average and suppress (Eq. 8-9); ``first``: see :func:`align_layers`."""
    if not 0 <= first < len(assignments):
        raise ValueError(f"the ensemble's first layer {first} is not one of {len(assignments)} layers")
    padded = pad_assignments([p.detach() for p in assignments])
    perms = align_layers(padded, first)
    p_hat = ensemble_assignment(padded, perms, first)
    mask = suppression_mask(p_hat, eta)
    if mask.sum() == 0:  # never mask everything away
        mask[p_hat.mean(dim=0).argmax()] = 1
    return Ensemble(p_hat * mask, mask, perms, [p.shape[1] for p in assignments])
