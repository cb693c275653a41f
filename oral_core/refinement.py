"""Pseudo-label enhanced structure refinement (Eq. 10-11).

``E_hat = (E \\ E_-) ∪ E_+``: ``E_-`` are the edges whose two ends carry different (pseudo-)labels;
``E_+`` are the ``mu`` fraction of same-label node pairs with the lowest prototype-score similarity
(Eq. 10). A group of ``n`` nodes has ``n(n-1)/2`` pairs, so a large group is never enumerated: its
candidate pairs are a uniform sample of at most ``candidates_per_node * n`` pairs, and ``E_+`` takes
the ``mu`` fraction of that sample with the lowest similarity (exactly the paper's rule whenever the
group is small enough to be enumerated).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .graph import canonical_edges, union_with_canonical

#: pairs per chunk of :func:`node_similarity`: small on the CPU, where the chunk's gathered rows
#: stay in cache (``benchmarks/refinement_speed.py``); large on a GPU, where a 16k-pair chunk is
#: a handful of tiny kernels and 64M candidate pairs (a 1M-node graph) became ~60k launches
#: (``benchmarks/results/profile/profile_gpu_1M.md``: refinement 79% of an H200 epoch). Each pair's
#: value is the same whatever the chunk.
SIMILARITY_CHUNK = {"cpu": 1 << 14, "cuda": 1 << 20}


def normalised_scores(r_layers: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every layer's representativeness rows scaled to unit length (for Eq. 10's cosines)."""
    return [F.normalize(r.detach(), dim=-1) for r in r_layers]


def node_similarity(r_layers: list[torch.Tensor], src: torch.Tensor, dst: torch.Tensor,
                    chunk: int | None = None, normed: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Eq. 10: ``s^n_ij = (1/L) sum_l cos(r^(l)_i, r^(l)_j)`` for the given pairs (chunked).

    ``normed``: :func:`normalised_scores` of ``r_layers``, when the caller already has them.
    Rows are gathered with ``index_select`` (not ``rn[s]``) in chunks of 16k pairs, whose
    temporaries stay in cache: the same floating-point operations per pair as the one-shot
    formula, bitwise equal, 3-7 times faster on CPU (``benchmarks/refinement_speed.py``).
    ``chunk`` None: :data:`SIMILARITY_CHUNK` of the device."""
    normed = normalised_scores(r_layers) if normed is None else normed
    if chunk is None:
        chunk = SIMILARITY_CHUNK.get(src.device.type, SIMILARITY_CHUNK["cuda"])
    out = torch.empty(src.numel(), dtype=normed[0].dtype, device=src.device)
    for start in range(0, src.numel(), chunk):
        s, d = src[start:start + chunk], dst[start:start + chunk]
        out[start:start + chunk] = torch.stack(
            [(rn.index_select(0, s) * rn.index_select(0, d)).sum(dim=-1) for rn in normed]
        ).mean(dim=0)
    return out


#: groups of at most this many members read Eq. 10 off their Gram matrix first
#: (:func:`lowest_similarity`): a 2,048-member group's ``n x n`` cosines are 4.2M floats, and there
#: the matrix product is 4 times faster than gathering its 262k candidate pairs row by row (20
#: times at 256-1,024 members; even at 4,096; ``benchmarks/results/refinement_speed``, step
#: ``gram``). Larger groups gather their sampled pairs (:func:`node_similarity`), whose cost grows
#: with the pairs, not with ``n^2``.
GRAM_MEMBERS = 2048

#: how far a Gram-matrix cosine may sit from :func:`node_similarity`'s value for the same pair
#: (both float32 sums of at most a few hundred products of unit-length rows: about 1e-7 apart,
#: measured; this bound is 1,000 times wider)
GRAM_TOLERANCE = 1e-4


def group_similarity(normed: list[torch.Tensor], members: torch.Tensor, i: torch.Tensor,
                     j: torch.Tensor) -> torch.Tensor:
    """Eq. 10 for the pairs ``(members[i], members[j])`` of one group, read off the group's Gram
    matrix: ``S = (1/L) sum_l R_l R_l^T`` with ``R_l`` the group's unit-length rows of layer ``l``,
    one matrix product over the layers' rows side by side. The same cosines as
    :func:`node_similarity`, summed in the matrix product's order: equal to within float rounding
    (:data:`GRAM_TOLERANCE`), not bitwise."""
    rows = torch.cat([rn.index_select(0, members) for rn in normed], dim=1)
    return (rows @ rows.T).div_(len(normed))[i.long(), j.long()]


def lowest_similarity(r_layers: list[torch.Tensor], normed: list[torch.Tensor],
                      members: torch.Tensor, i: torch.Tensor, j: torch.Tensor, take: int,
                      gram_members: int) -> torch.Tensor:
    """Indices of the ``take`` candidate pairs ``(members[i], members[j])`` with the lowest
    Eq. 10 similarity, as :func:`node_similarity` computes it for every pair.

    A group of at most ``gram_members`` members first reads every pair off its Gram matrix
    (:func:`group_similarity`), keeps the pairs within ``2 * GRAM_TOLERANCE`` of the
    ``take``-th lowest value there (a superset of the exact ``take`` lowest and of every pair tied
    with them: no pair's two values are further apart than the tolerance), and ranks only those by
    :func:`node_similarity`. Where pairs tie at the cut, which of them ``torch.topk`` keeps
    depends on all the pairs, so every pair is ranked as before. Either way the same pairs as
    ranking every pair exactly, mostly at the Gram matrix's cost."""
    if members.numel() > gram_members:
        sim = node_similarity(r_layers, members[i], members[j], normed=normed)
        return torch.topk(sim, take, largest=False).indices
    approx = group_similarity(normed, members, i, j)
    near = torch.nonzero(approx <= torch.kthvalue(approx, take).values + 2 * GRAM_TOLERANCE)
    near = near.squeeze(1)
    sim = node_similarity(r_layers, members[i[near]], members[j[near]], normed=normed)
    cut = torch.kthvalue(sim, take).values
    lowest = sim <= cut
    if int(lowest.sum()) == take:
        return near[lowest]
    # pairs tied at the cut: which of them topk keeps depends on every pair, so rank them all
    sim = node_similarity(r_layers, members[i], members[j], normed=normed)
    return torch.topk(sim, take, largest=False).indices


def inter_class_edges(edge_index: torch.Tensor, node_label: torch.Tensor) -> torch.Tensor:
    """``E_-`` as a bool mask over edges: both ends labelled (or pseudo-labelled) and different."""
    a, b = node_label[edge_index[0]], node_label[edge_index[1]]
    return (a >= 0) & (b >= 0) & (a != b)


def candidate_pairs(num_members: int, max_pairs: int, generator: torch.Generator,
                    device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct unordered pairs ``(i < j)`` of ``0..n-1``: all when there are at most
    ``max_pairs``, else a uniform sample of about ``max_pairs`` (never all ``n(n-1)/2``)."""
    n = num_members
    total = n * (n - 1) // 2
    if total <= max_pairs:
        iu = torch.triu_indices(n, n, 1, device=device)
        return iu[0], iu[1]
    # int32 draws: the same numbers as int64 draws from the same generator state, half the
    # memory and transfer; the keys stay int32 (sorting them in unique is 2-3 times faster on
    # CPU) while n * n fits, and the pairs are the same tensors either way
    i = torch.randint(0, n, (max_pairs,), generator=generator, dtype=torch.int32).to(device)
    j = torch.randint(0, n - 1, (max_pairs,), generator=generator, dtype=torch.int32).to(device)
    j = j + (j >= i).to(torch.int32)
    lo, hi = torch.minimum(i, j), torch.maximum(i, j)
    if n * n >= 2 ** 31:
        lo, hi = lo.long(), hi.long()
    key = torch.unique(lo * n + hi).long()
    return key // n, key % n


def intra_class_recovery(node_label: torch.Tensor, r_layers: list[torch.Tensor], mu: float,
                         candidates_per_node: int, generator: torch.Generator,
                         gram_members: int | None = None) -> torch.Tensor:
    """``E_+``: per label, the ``mu`` fraction of candidate same-label pairs with the lowest
    Eq. 10 similarity. Returns long ``[2, M]`` (one direction; the caller symmetrises).

    ``gram_members``: groups up to this size are ranked through their Gram matrix
    (:func:`lowest_similarity`), larger ones pair by pair; 0 ranks every group pair by pair;
    None: :data:`GRAM_MEMBERS`. The same pairs either way."""
    gram_members = GRAM_MEMBERS if gram_members is None else gram_members
    device = node_label.device
    found = []
    normed = normalised_scores(r_layers)  # once, not once per label
    labels = torch.unique(node_label[node_label >= 0])
    order = torch.argsort(node_label, stable=True)
    sorted_labels = node_label[order]
    for c in labels.tolist():
        lo = int(torch.searchsorted(sorted_labels, c))
        hi = int(torch.searchsorted(sorted_labels, c, right=True))
        members = order[lo:hi]
        n = members.numel()
        if n < 2:
            continue
        i, j = candidate_pairs(n, candidates_per_node * n, generator, device)
        take = int(round(mu * i.numel()))
        if take == 0:
            continue
        lowest = lowest_similarity(r_layers, normed, members, i, j, take, gram_members)
        found.append(torch.stack([members[i[lowest]], members[j[lowest]]]))
    if not found:
        return torch.empty(2, 0, dtype=torch.long, device=device)
    return torch.cat(found, dim=1)


def refine_structure(edge_index: torch.Tensor, node_label: torch.Tensor,
                     r_layers: list[torch.Tensor], mu: float, candidates_per_node: int,
                     generator: torch.Generator, remove_inter: bool = True,
                     canonical: bool = False) -> torch.Tensor:
    """Eq. 11: ``E_hat = (E \\ E_-) ∪ E_+``, symmetric and without duplicates.

    ``remove_inter`` False (the switch ``ORALConfig.remove_inter_edges``, a deviation from the
    paper) keeps ``E_-``: ``E_hat = E ∪ E_+``.

    Args:
        edge_index: the original edges ``E`` ``[2, E]`` (both directions).
        node_label: long ``[N]``: the label of labelled nodes and the pseudo-label of confident
            nodes, in one id space; -1 for nodes without either.
        r_layers: each layer's representativeness (for Eq. 10).
        canonical: ``edge_index`` is already canonical (:func:`oral_core.graph.is_canonical`,
            checked once per fit by the trainer): the recovered edges are merged into it
            (:func:`oral_core.graph.union_with_canonical`) instead of re-sorting every edge;
            the same result.
    """
    kept = edge_index[:, ~inter_class_edges(edge_index, node_label)] if remove_inter else edge_index
    added = intra_class_recovery(node_label, r_layers, mu, candidates_per_node, generator)
    n = node_label.numel()
    if canonical:
        return union_with_canonical(kept, added, n).to(edge_index.device)
    return canonical_edges(torch.cat([kept, added], dim=1), n).to(edge_index.device)
