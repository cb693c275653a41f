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


def is_canonical(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Whether ``edge_index`` is already what :func:`canonical_edges` returns for it."""
    edge_index = edge_index.long()
    return torch.equal(canonical_edges(edge_index, num_nodes), edge_index)


def union_with_canonical(canonical: torch.Tensor, extra: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``canonical_edges(cat([canonical, extra]))`` for a ``canonical`` that is already canonical.

    ``extra`` is canonicalised on its own (it is small: the recovered edges of Eq. 11), the keys
    it adds are found by binary search in the sorted ``canonical`` keys and both are written
    into their sorted positions: a linear merge instead of sorting the whole edge set again.
    The result is the same tensor (``tests/core/test_core_invariants.py``)."""
    extra = canonical_edges(extra, num_nodes)
    base = canonical[0].long() * num_nodes + canonical[1].long()
    more = extra[0] * num_nodes + extra[1]
    at = torch.searchsorted(base, more)  # where each extra key goes among the canonical keys
    if base.numel() and more.numel():
        new = base[at.clamp(max=base.numel() - 1)] != more
        more, at = more[new], at[new]
    if more.numel() == 0:
        return canonical.long()
    total = base.numel() + more.numel()
    slot = at + torch.arange(more.numel(), device=more.device)
    key = torch.empty(total, dtype=torch.long, device=base.device)
    from_base = torch.ones(total, dtype=torch.bool, device=base.device)
    from_base[slot] = False
    key[slot] = more
    key[from_base] = base
    return torch.stack([key // num_nodes, key % num_nodes])
