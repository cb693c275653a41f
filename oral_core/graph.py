"""The attributed graph that every part of ORAL works on."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Graph:
    """An attributed graph G = (V, E, X) with optional ground-truth classes.

    Attributes:
        x: node features, float32 ``[N, F]``.
        edge_index: long ``[2, E]``; undirected graphs store both directions, no self loops,
            no duplicates (see :func:`canonical_edges`).
        y: long ``[N]`` ground-truth class ids ``0..C-1`` (benchmarks and simulations only; never
            used for training except through an :class:`~oral_core.splits.OpenWorldSplit`).
        name: a short name used in reports.
        class_names: optional names of the classes, indexed by class id.
        node_ids: optional original ids of the nodes (e.g. Cora's LINQS paper ids, as strings),
            indexed like the rows of ``x``; ``None`` when the source file has none.
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    y: torch.Tensor
    name: str = "graph"
    class_names: list[str] | None = field(default=None)
    node_ids: list | None = field(default=None)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        """Number of directed edges stored (an undirected edge counts twice)."""
        return int(self.edge_index.shape[1])

    @property
    def num_classes(self) -> int:
        return int(self.y.max().item()) + 1 if self.y.numel() else 0


def canonical_edges(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Symmetrise, drop self loops and duplicates; returns a sorted long ``[2, E]`` tensor."""
    edge_index = edge_index.long()
    src = torch.cat([edge_index[0], edge_index[1]])
    dst = torch.cat([edge_index[1], edge_index[0]])
    keep = src != dst
    key = torch.unique(src[keep] * num_nodes + dst[keep])
    return torch.stack([key // num_nodes, key % num_nodes])
