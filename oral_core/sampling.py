"""Vectorised neighbour sampling in pure torch (a stand-in for PyG's NeighborLoader).

PyG's ``NeighborLoader`` needs ``pyg-lib`` or ``torch-sparse``; this module does the same job with
plain torch operations and no Python loop over nodes or edges (only over hops and batches):

* :class:`CSR` stores the incoming adjacency, grouped by target node.
* :func:`sample_neighbors` draws, for every seed, ``min(deg, fanout)`` of its incoming edges
  uniformly without replacement: one random key per incident edge, a sort by (seed, key), and the
  first ``fanout`` of each seed's segment are kept. Cost is linear in the seeds' total degree
  (plus the sort).
* :func:`sample_subgraph` repeats this hop by hop, expanding each node at most once, and
  relabels the result to local ids with the seeds first.
* :func:`mini_batches` splits node ids into shuffled batches.

Random draws are made with a ``torch.Generator`` (on its own device, usually the CPU) and moved to
the device of the graph, so the same generator state gives the same sample on CPU and CUDA.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch


@dataclass
class CSR:
    """Incoming adjacency: for target node i, its sources are ``col[rowptr[i]:rowptr[i+1]]``.

    Attributes:
        rowptr: long ``[N+1]``; segment boundaries of the targets.
        col: long ``[E]``; source node of each edge, grouped by target.
        num_nodes: N.
    """

    rowptr: torch.Tensor
    col: torch.Tensor
    num_nodes: int

    @classmethod
    def from_edge_index(cls, edge_index: torch.Tensor, num_nodes: int) -> "CSR":
        """Builds the incoming CSR of ``edge_index`` (``[2, E]``, row 0 source j, row 1 target i).

        Edges are sorted by target with a stable sort, so each target's sources keep their order
        in ``edge_index``; duplicate edges are kept as given.
        """
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
        edge_index = edge_index.long()
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
            raise ValueError(f"edge_index holds node ids outside [0, {num_nodes})")
        src, dst = edge_index[0], edge_index[1]
        order = torch.argsort(dst, stable=True)
        counts = torch.bincount(dst, minlength=num_nodes)
        rowptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=edge_index.device)
        rowptr[1:] = torch.cumsum(counts, dim=0)
        return cls(rowptr=rowptr, col=src[order].contiguous(), num_nodes=int(num_nodes))

    @property
    def device(self) -> torch.device:
        return self.col.device

    def degree(self) -> torch.Tensor:
        """In-degree of every node, long ``[N]``."""
        return self.rowptr[1:] - self.rowptr[:-1]


@dataclass
class Subgraph:
    """A sampled subgraph.

    Attributes:
        nodes: long ``[M]`` global ids; the seeds first, in the order given, then the newly
            reached nodes in order of discovery (hop by hop).
        edge_index: long ``[2, E']`` local ids (indices into ``nodes``), row 0 source, row 1 target.
        num_seeds: number of seeds (``nodes[:num_seeds]``).
    """

    nodes: torch.Tensor
    edge_index: torch.Tensor
    num_seeds: int


def _as_seeds(csr: CSR, seeds: torch.Tensor) -> torch.Tensor:
    """Seeds as a long 1-D tensor on the graph's device, checked to lie in ``[0, N)``."""
    seeds = torch.as_tensor(seeds, dtype=torch.long).reshape(-1).to(csr.device)
    if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= csr.num_nodes):
        raise ValueError(f"seeds hold node ids outside [0, {csr.num_nodes})")
    return seeds


def _rand(n: int, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """``n`` uniform keys drawn on the generator's device, returned on ``device``."""
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.rand(n, generator=generator, device=gen_device).to(device)


def _segments(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For segments of the given lengths laid end to end: segment id and rank of every slot."""
    total = int(counts.sum())
    seg = torch.repeat_interleave(torch.arange(counts.numel(), device=counts.device), counts,
                                  output_size=total)
    starts = torch.cumsum(counts, dim=0) - counts
    rank = torch.arange(total, device=counts.device) - starts[seg]
    return seg, rank


def sample_neighbor_positions(csr: CSR, seeds: torch.Tensor, fanout: int,
                              generator: torch.Generator | None = None
                              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Like :func:`sample_neighbors`, but returns ``(pos, dst)``: positions into ``csr.col``.

    Every seed keeps ``min(deg, fanout)`` of its incoming edge positions (all when ``fanout < 0``),
    a uniform subset without replacement. Output is grouped by seed, in the order of ``seeds``.
    """
    seeds = _as_seeds(csr, seeds)
    start = csr.rowptr[seeds]
    deg = csr.rowptr[seeds + 1] - start
    seg, rank = _segments(deg)
    if fanout >= 0 and bool((deg > fanout).any()):
        # Random permutation within each segment: sort by key, then stably by segment.
        keys = _rand(seg.numel(), generator, seg.device)
        by_key = torch.argsort(keys)
        order = by_key[torch.argsort(seg[by_key], stable=True)]
        # Segments occupy the same slot ranges before and after the shuffle, so sorted slot i
        # has rank rank[i] in its segment: keep the first `fanout` of each shuffled segment.
        keep = rank < fanout
        chosen = order[keep]                 # slots (into seg/rank) that are kept
        seg, rank = seg[chosen], rank[chosen]
    pos = start[seg] + rank
    return pos, seeds[seg]


def sample_neighbors(csr: CSR, seeds: torch.Tensor, fanout: int,
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """For every seed, ``min(deg, fanout)`` of its incoming edges, uniformly without replacement.

    All edges are kept when ``deg <= fanout``, and ``fanout < 0`` means all; seeds of degree 0
    give no edges. Returns ``(src, dst)``: global node ids of the sampled edges (``dst`` is the
    seed), grouped by seed in the order of ``seeds``.
    """
    pos, dst = sample_neighbor_positions(csr, seeds, fanout, generator)
    return csr.col[pos], dst


def _first_occurrences(values: torch.Tensor) -> torch.Tensor:
    """The distinct entries of ``values`` in order of first occurrence (``torch.unique`` sorts)."""
    if values.numel() == 0:
        return values
    uniq, inverse = torch.unique(values, return_inverse=True)
    first = torch.full((uniq.numel(),), values.numel(), dtype=torch.long, device=values.device)
    first.scatter_reduce_(0, inverse, torch.arange(values.numel(), device=values.device), "amin")
    return uniq[torch.argsort(first)]


def sample_subgraph(csr: CSR, seeds: torch.Tensor, fanouts: list[int],
                    generator: torch.Generator | None = None) -> Subgraph:
    """Multi-hop neighbour sampling like PyG's ``NeighborLoader``.

    Hop 1 samples ``fanouts[0]`` incoming edges of each seed, hop 2 samples ``fanouts[1]``
    incoming edges of each node first reached in hop 1, and so on. The edge set is the union of
    all sampled edges; each node is expanded at most once, so no edge is sampled twice.

    Raises:
        ValueError: if the seeds are not unique or lie outside ``[0, N)``.
    """
    seeds = _as_seeds(csr, seeds)
    if torch.unique(seeds).numel() != seeds.numel():
        raise ValueError("sample_subgraph: seeds must be unique (duplicate node ids given)")
    device = csr.device
    local = torch.full((csr.num_nodes,), -1, dtype=torch.long, device=device)
    local[seeds] = torch.arange(seeds.numel(), device=device)
    nodes, srcs, dsts = [seeds], [], []
    frontier, count = seeds, seeds.numel()
    for fanout in fanouts:
        if frontier.numel() == 0:
            break
        src, dst = sample_neighbors(csr, frontier, fanout, generator)
        srcs.append(src)
        dsts.append(dst)
        frontier = _first_occurrences(src[local[src] < 0])
        local[frontier] = torch.arange(count, count + frontier.numel(), device=device)
        count += frontier.numel()
        nodes.append(frontier)
    empty = torch.empty(0, dtype=torch.long, device=device)
    src = torch.cat(srcs) if srcs else empty
    dst = torch.cat(dsts) if dsts else empty
    edge_index = torch.stack([local[src], local[dst]])
    return Subgraph(nodes=torch.cat(nodes), edge_index=edge_index, num_seeds=int(seeds.numel()))


def mini_batches(nodes: torch.Tensor, batch_size: int, generator: torch.Generator | None = None,
                 shuffle: bool = True) -> Iterator[torch.Tensor]:
    """Splits node ids into batches of ``batch_size`` (the last one smaller), shuffled with the
    generator unless ``shuffle`` is false."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    nodes = torch.as_tensor(nodes).reshape(-1)
    n = nodes.numel()
    if shuffle:
        gen_device = generator.device if generator is not None else torch.device("cpu")
        order = torch.randperm(n, generator=generator, device=gen_device).to(nodes.device)
        nodes = nodes[order]
    for start in range(0, n, batch_size):
        yield nodes[start:start + batch_size]
