"""Perturbation-consistent training (Eq. 12) with adaptive edge dropping.

The second view drops edges with probabilities that grow as the edge's centrality falls, as in
GCA (Zhu et al., "Graph contrastive learning with adaptive augmentation"): with the degree
centrality ``s_e = log(mean degree of its two ends)``, ``p_e = min(p * (s_max - s_e) /
(s_max - mean(s)), p_max)``. Important (central) edges are kept more often.
"""
from __future__ import annotations

import torch
from torch_geometric.utils import degree


def edge_drop_probabilities(edge_index: torch.Tensor, num_nodes: int, drop_rate: float,
                            max_drop: float) -> torch.Tensor:
    """GCA degree-centrality drop probability of every edge, in ``[0, max_drop]``."""
    deg = degree(edge_index[1], num_nodes=num_nodes)
    s = torch.log((deg[edge_index[0]] + deg[edge_index[1]]) / 2 + 1)
    spread = (s.max() - s.mean()).clamp_min(1e-12)
    return ((s.max() - s) / spread * drop_rate).clamp(max=max_drop)


def adaptive_edge_drop(edge_index: torch.Tensor, num_nodes: int, drop_rate: float,
                       max_drop: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Drop undirected edges (both directions together) with centrality-weighted probabilities."""
    src, dst = edge_index
    one_way = edge_index[:, src < dst]
    prob = edge_drop_probabilities(edge_index, num_nodes, drop_rate, max_drop)[src < dst]
    u = torch.rand(prob.shape, generator=generator).to(prob.device)
    keep = one_way[:, u >= prob]
    return torch.cat([keep, keep.flip(0)], dim=1)


def sampled_edge_drop(edge_index: torch.Tensor, degrees: torch.Tensor, drop_rate: float,
                      max_drop: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Adaptive edge dropping on a sampled (directed) subgraph for mini-batch training.

    The same GCA probabilities as :func:`edge_drop_probabilities`, from the *whole graph's*
    degrees of each edge's two ends (``degrees``: one per subgraph node), each sampled edge
    dropped on its own (a sampled subgraph need not hold both directions of an edge)."""
    if edge_index.shape[1] == 0:
        return edge_index
    deg = degrees.to(torch.float32)
    s = torch.log((deg[edge_index[0]] + deg[edge_index[1]]) / 2 + 1)
    spread = (s.max() - s.mean()).clamp_min(1e-12)
    prob = ((s.max() - s) / spread * drop_rate).clamp(max=max_drop)
    u = torch.rand(prob.shape, generator=generator).to(prob.device)
    return edge_index[:, u >= prob]


def consistency_loss(p_layers: list[torch.Tensor], p_aug_layers: list[torch.Tensor],
                     eps: float = 1e-8) -> torch.Tensor:
    """Eq. 12: ``sum_l KL(p^(l)_i || p_bar^(l)_i)``, averaged over nodes (the paper sums; the mean
    keeps its scale independent of the graph's size)."""
    total = p_layers[0].new_zeros(())
    for p, q in zip(p_layers, p_aug_layers):
        p = p.clamp_min(eps)
        total = total + (p * (p.log() - q.clamp_min(eps).log())).sum(dim=1).mean()
    return total
