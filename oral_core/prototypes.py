"""Prototypes: representativeness (Eq. 1), the balance regulariser (Eq. 2), the prototype graph.

Each prototypical attention layer owns ``N_pro`` trainable prototypes ``c_j`` living in the space of
that layer's projected node representations. Following the design notes, Eq. 1 scores nodes by
cosine similarity divided by a temperature: the paper's inner product ``h_i^T c_j`` on normalised
vectors, which keeps the softmax from saturating as the representations grow.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def representativeness(h: torch.Tensor, prototypes: torch.Tensor, temperature: float) -> torch.Tensor:
    """Eq. 1: ``r_ij = softmax_j(cos(h_i, c_j) / temperature)``; each row sums to one.

    Args:
        h: node representations ``[N, D]``.
        prototypes: ``[N_pro, D]``.
        temperature: softmax temperature (smaller is sharper).
    Returns:
        ``[N, N_pro]`` representativeness scores.
    """
    logits = F.normalize(h, dim=-1) @ F.normalize(prototypes, dim=-1).t()
    return torch.softmax(logits / temperature, dim=-1)


def balance_regulariser(r: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Eq. 2: ``KL[ u || mean_i r_i ]`` with ``u`` uniform over the prototypes.

    Small when every prototype represents a similar share of the nodes.
    """
    marginal = r.mean(dim=0).clamp_min(eps)
    n_pro = r.shape[1]
    return -math.log(n_pro) - torch.log(marginal).mean()


def top_k_association(r: torch.Tensor, k: int) -> torch.Tensor:
    """Each node is an associated instance of its ``k`` most representative prototypes.

    Returns the prototype ids ``[N, k]`` (``Gamma_j`` is the set of rows that contain ``j``).
    """
    k = min(k, r.shape[1])
    return torch.topk(r.detach(), k, dim=1).indices


def jaccard_prototype_graph(association: torch.Tensor, num_prototypes: int) -> torch.Tensor:
    """Prototype similarity ``s_ij = Jaccard(Gamma_i, Gamma_j)``, computed sparsely.

    ``|Gamma_i ∩ Gamma_j|`` is counted from the ``k^2`` prototype pairs of every node (one
    ``bincount``, linear in ``N``); the diagonal gives ``|Gamma_i|``. Returns a symmetric
    ``[N_pro, N_pro]`` float64 matrix in ``[0, 1]`` with a zero diagonal; prototypes with no
    associated node have similarity 0 to every other.
    """
    a = association.long().cpu()
    pairs = (a.unsqueeze(2) * num_prototypes + a.unsqueeze(1)).reshape(-1)
    inter = torch.bincount(pairs, minlength=num_prototypes * num_prototypes)
    inter = inter.reshape(num_prototypes, num_prototypes).double()
    size = inter.diagonal().clone()
    union = size.unsqueeze(0) + size.unsqueeze(1) - inter
    sim = torch.where(union > 0, inter / union.clamp_min(1.0), torch.zeros_like(inter))
    sim.fill_diagonal_(0.0)
    return sim
