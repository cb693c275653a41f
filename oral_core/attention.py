"""The group-aware attention mechanism (Eq. 5-6) and the prototypical attention layer.

Written as PyG message passing, in the style of ``torch_geometric.nn.conv.GATConv``.

Shapes in the docstrings: ``N`` nodes, ``E`` directed edges (both directions of an undirected
edge), ``D`` feature dimensions (``D_in`` / ``D_out`` of a projection), ``K`` prototypes of a
layer (``N_pro``), ``G`` prototype groups of a layer (``N_clu``, from the clustering of Eq. 4).
Equation numbers are the paper's (Jin et al.): Eq. 1 representativeness, Eq. 3 group assignment,
Eq. 4 semi-supervised prototypical clustering, Eq. 5 group-aware attention, Eq. 6 aggregation.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import add_self_loops, remove_self_loops, softmax

from .clustering import Partition, group_assignment
from .config import ATTENTION_KERNELS
from .features import csr_matrix, is_sparse, sparse_linear
from .prototypes import representativeness
from .sampling import CSR


def with_self_loops(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Exactly one self loop per node (Eq. 6 sums over ``N(i) ∪ {i}``)."""
    edge_index, _ = remove_self_loops(edge_index)
    return add_self_loops(edge_index, num_nodes=num_nodes)[0]


def target_chunks(csr: CSR, max_edges: int) -> list[tuple[int, int]]:
    """Consecutive target-node ranges ``[a, b)`` whose incoming edges number at most
    ``max_edges`` each (a node with more edges gets a range of its own)."""
    n = csr.num_nodes
    bounds, a = [], 0
    rowptr = csr.rowptr.cpu()
    while a < n:
        b = int(torch.searchsorted(rowptr, int(rowptr[a]) + max_edges, right=True)) - 1
        b = min(max(b, a + 1), n)
        bounds.append((a, b))
        a = b
    return bounds


def chunk_edges(csr: CSR, a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The incoming edges of targets ``a..b-1``: global sources and targets relative to ``a``."""
    start, stop = int(csr.rowptr[a]), int(csr.rowptr[b])
    src = csr.col[start:stop]
    dst = torch.repeat_interleave(torch.arange(b - a, device=src.device), csr.rowptr[a + 1:b + 1] - csr.rowptr[a:b])
    return src, dst


def _rowptr(index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    rowptr = index.new_zeros(num_nodes + 1)
    rowptr[1:] = torch.cumsum(torch.bincount(index, minlength=num_nodes), dim=0)
    return rowptr


@dataclass
class EdgeLayout:
    """The edges of an ``edge_index`` ``(2, E)`` as two sparse layouts, for the ``"spmm"``
    attention kernel: grouped by target (the rows of the attention matrix ``A[i, j] = α_ij``) and
    grouped by source (the rows of ``Aᵀ``, for the gradient of ``z``). ``perm`` / ``perm_t``
    give, for each position of a layout, the edge's position in ``edge_index``, so edge values
    (``α``) stay in ``edge_index`` order outside the kernel. Built once per forward pass and
    shared by the layers (two stable sorts of ``E``); duplicate edges are kept."""

    num_nodes: int
    rowptr: torch.Tensor  # [N+1] by target
    col: torch.Tensor  # [E] source of each edge, grouped by target
    perm: torch.Tensor  # [E]
    rowptr_t: torch.Tensor  # [N+1] by source
    col_t: torch.Tensor  # [E] target of each edge, grouped by source
    perm_t: torch.Tensor  # [E]

    @classmethod
    def from_edge_index(cls, edge_index: torch.Tensor, num_nodes: int) -> "EdgeLayout":
        src, dst = edge_index
        perm = torch.argsort(dst, stable=True)
        perm_t = torch.argsort(src, stable=True)
        return cls(num_nodes, _rowptr(dst, num_nodes), src[perm], perm,
                   _rowptr(src, num_nodes), dst[perm_t], perm_t)

    def matrix(self, values: torch.Tensor) -> torch.Tensor:
        """``(N, N)`` CSR matrix, ``A[dst, src] = values`` (values in ``edge_index`` order)."""
        n = self.num_nodes
        return csr_matrix(self.rowptr, self.col, values.index_select(0, self.perm), (n, n))

    def transposed(self, values: torch.Tensor) -> torch.Tensor:
        """``Aᵀ`` as a CSR matrix, ``Aᵀ[src, dst] = values``."""
        n = self.num_nodes
        return csr_matrix(self.rowptr_t, self.col_t, values.index_select(0, self.perm_t), (n, n))


class _SparseAggregate(torch.autograd.Function):
    """``out = A z`` with ``A[i, j] = α_ij`` (Eq. 6 before σ) as a CSR sparse-dense product; no
    ``[E, D]`` tensor in the forward or the backward pass. Gradients: ``∂z = Aᵀ ∂out`` (a second
    sparse product) and ``∂α_ij = <∂out_i, z_j>`` (a sampled dense-dense product on ``A``'s
    pattern, ``torch.sparse.sampled_addmm``)."""

    @staticmethod
    def forward(ctx, alpha: torch.Tensor, z: torch.Tensor, layout: EdgeLayout) -> torch.Tensor:
        ctx.save_for_backward(alpha, z)
        ctx.layout = layout
        return layout.matrix(alpha) @ z

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        alpha, z = ctx.saved_tensors
        layout = ctx.layout
        grad = grad.contiguous()
        grad_alpha = grad_z = None
        if ctx.needs_input_grad[0]:
            values = _sddmm(layout.rowptr, layout.col, grad, z, layout.num_nodes)
            grad_alpha = torch.empty_like(alpha).index_copy_(0, layout.perm, values)
        if ctx.needs_input_grad[1]:
            grad_z = layout.transposed(alpha) @ grad
        return grad_alpha, grad_z, None


class _SparseEdgeDot(torch.autograd.Function):
    """``e_ij = <u_i, u_j>`` on every edge ``j -> i`` (Eq. 5's cosine of normalised group
    assignments) as a sampled dense-dense product on ``A``'s pattern: no ``[E, G]`` tensor.
    Gradient: ``∂u = S u + Sᵀ u`` with ``S[i, j] = ∂e_ij`` (two sparse products)."""

    @staticmethod
    def forward(ctx, u: torch.Tensor, layout: EdgeLayout) -> torch.Tensor:
        ctx.save_for_backward(u)
        ctx.layout = layout
        e = u.new_empty(layout.perm.shape[0])
        return e.index_copy_(0, layout.perm, _sddmm(layout.rowptr, layout.col, u, u,
                                                     layout.num_nodes))

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (u,) = ctx.saved_tensors
        layout = ctx.layout
        return layout.matrix(grad) @ u + layout.transposed(grad) @ u, None


def _sddmm(rowptr: torch.Tensor, col: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
           num_cols: int) -> torch.Tensor:
    """``<a_i, b_j>`` for every entry ``(i, j)`` of a CSR pattern (rows of ``a``, ``b`` ``(num_cols,
    D)``), in the pattern's order, with ``torch.sparse.sampled_addmm``."""
    pattern = csr_matrix(rowptr, col, a.new_zeros(col.shape[0]), (a.shape[0], num_cols))
    return torch.sparse.sampled_addmm(pattern, a.contiguous(), b.t(), beta=0.0).values()


def spmm_edge_dot(u: torch.Tensor, layout: EdgeLayout) -> torch.Tensor:
    """``<u_i, u_j>`` ``(E,)`` for every edge ``j -> i`` of ``layout``, in ``edge_index`` order;
    differentiable in ``u`` ``(N, G)``."""
    return _SparseEdgeDot.apply(u, layout)


def spmm_aggregate(alpha: torch.Tensor, z: torch.Tensor, layout: EdgeLayout) -> torch.Tensor:
    """``sum_j α_ij z_j`` for every target ``i`` (Eq. 6 before σ), as a sparse matrix product.
    ``alpha`` ``(E,)`` in the order of the edge index ``layout`` was built from, ``z`` ``(N, D)``
    -> ``(N, D)``; differentiable in ``alpha`` and ``z``."""
    return _SparseAggregate.apply(alpha, z, layout)


class GroupAwareAttention(MessagePassing):
    r"""Group-aware attention aggregation.

    .. math::
        e_{ij} = \cos(\mathbf{p}_i, \mathbf{p}_j), \qquad
        \alpha_{ij} = \frac{\exp(e_{ij} / t)}{\sum_{k \in N(i) \cup \{i\}} \exp(e_{ik} / t)}
        \quad \text{(Eq. 5)}

        \mathbf{h}^*_i = \sigma\Big(\sum_{j \in N(i) \cup \{i\}} \alpha_{ij} \mathbf{W}\mathbf{h}_j\Big)
        \quad \text{(Eq. 6)}

    ``W h_j`` is computed by the caller (the layer's projection). ``t`` is an attention temperature;
    ``t = 1`` is exactly Eq. 5. Self loops are added, as Eq. 6 sums over ``N(i) ∪ {i}``. The
    activation ``σ`` of Eq. 6 is left to the caller (:class:`PrototypicalAttentionLayer` applies
    ReLU), so the output is the attention-weighted sum.

    Args:
        temperature (float, optional): ``t`` of Eq. 5, dividing the cosine similarities before the
            softmax over each node's neighbourhood. (default: ``1.0``, the paper's Eq. 5)
        kernel (str, optional): how Eq. 5-6 run over the edges (``ORALConfig.attention_kernel``):
            ``"gather"``, PyG message passing (per-edge ``(E, G)`` products for the cosines and an
            ``(E, D)`` tensor of messages ``α_ij z_j`` scatter-added per target), or ``"spmm"``:
            the cosines as a sampled dense-dense product on the edge pattern
            (:func:`spmm_edge_dot`) and Eq. 6 as a CSR sparse-dense product ``A z`` with
            ``A[i, j] = α_ij`` (:func:`spmm_aggregate`), with no ``(E, D)`` or ``(E, G)`` tensor,
            forward or backward. Both give the same result up to float summation order (tested in
            ``tests/core/test_attention_kernels.py``). (default: ``"gather"``)

    Shapes:
        - **input:**
          projected node features ``z = W h`` ``(N, D)``,
          group assignments ``p`` ``(N, G)`` (Eq. 3; the attention reads their cosines),
          edge indices ``(2, E)`` (row 0 source ``j``, row 1 target ``i``), without self loops
          unless ``has_self_loops=True`` says that every node already has exactly one; optionally
          the :class:`EdgeLayout` of those edges (``"spmm"`` only, with ``has_self_loops=True``;
          built here when not given)
        - **output:** aggregated node features ``(N, D)`` (Eq. 6 before ``σ``); with
          ``return_attention=True``, ``((N, D), ((2, E'), (E',)))``: the edge indices with one
          self loop per node (``E'`` edges) and the attention ``α_ij`` of each (Eq. 5)
        - :meth:`chunked`: ``z`` ``(N, D)``, ``p`` ``(N, G)``, an incoming-adjacency ``CSR`` that
          holds the self loops -> ``(N, D)``, equal to :meth:`forward`, with no ``(E, D)``
          tensor of more than ``max_edges`` rows
    """

    def __init__(self, temperature: float = 1.0, kernel: str = "gather"):
        super().__init__(aggr="add", node_dim=0)
        if kernel not in ATTENTION_KERNELS:
            raise ValueError(f"attention kernel must be one of {list(ATTENTION_KERNELS)}, got {kernel!r}")
        self.temperature = temperature
        self.kernel = kernel

    def forward(self, z: torch.Tensor, p: torch.Tensor, edge_index: torch.Tensor,
                return_attention: bool = False, has_self_loops: bool = False,
                layout: EdgeLayout | None = None):
        if not has_self_loops:
            if layout is not None:
                raise ValueError("an EdgeLayout describes edges with their self loops: pass has_self_loops=True")
            edge_index = with_self_loops(edge_index, z.shape[0])
        pn = F.normalize(p, dim=-1)
        if self.kernel == "spmm":
            if layout is None:
                layout = EdgeLayout.from_edge_index(edge_index, z.shape[0])
            alpha = self.edge_attention(pn, edge_index, layout)
            out = spmm_aggregate(alpha, z, layout)
        else:
            alpha = self.edge_attention(pn, edge_index)
            out = self.propagate(edge_index, z=z, alpha=alpha)
        return (out, (edge_index, alpha)) if return_attention else out

    def edge_attention(self, pn: torch.Tensor, edge_index: torch.Tensor,
                       layout: EdgeLayout | None = None) -> torch.Tensor:
        """Eq. 5 on every edge ``j -> i`` (source row 0, target row 1), normalised per target.
        With a ``layout`` (the ``"spmm"`` kernel) the cosines are a sampled dense-dense product
        (:func:`spmm_edge_dot`), without the ``[E, G]`` products."""
        src, dst = edge_index
        if layout is not None:
            e = spmm_edge_dot(pn, layout)
        else:  # index_select, not pn[src]: its backward is a fast index_add on CPU
            e = (pn.index_select(0, src) * pn.index_select(0, dst)).sum(dim=-1)
        return softmax(e / self.temperature, dst, num_nodes=pn.shape[0])

    def message(self, z_j: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        return alpha.unsqueeze(-1) * z_j

    @torch.no_grad()
    def chunked(self, z: torch.Tensor, p: torch.Tensor, csr: CSR, max_edges: int) -> torch.Tensor:
        """Eq. 5-6 for every node, target range by target range (``csr`` holds the self loops):
        no ``[E, D]`` tensor larger than ``max_edges`` rows. Equal to :meth:`forward`."""
        pn = F.normalize(p, dim=-1)
        out = z.new_empty(z.shape)
        for a, b in target_chunks(csr, max_edges):
            src, dst = chunk_edges(csr, a, b)
            if self.kernel == "spmm":  # the chunk's edges are in CSR order already
                rowptr = csr.rowptr[a:b + 1] - csr.rowptr[a]
                e = _sddmm(rowptr, src, pn[a:b], pn, pn.shape[0])
                alpha = softmax(e / self.temperature, dst, num_nodes=b - a)
                out[a:b] = csr_matrix(rowptr, src, alpha, (b - a, z.shape[0])) @ z
            else:
                e = (pn.index_select(0, src) * pn[a:b].index_select(0, dst)).sum(dim=-1)
                alpha = softmax(e / self.temperature, dst, num_nodes=b - a)
                out[a:b] = z.new_zeros(b - a, z.shape[1]).index_add_(
                    0, dst, alpha.unsqueeze(-1) * z.index_select(0, src))
        return out


class GCNAggregation(MessagePassing):
    r"""The ablation's aggregation (no PAN): symmetric-normalised GCN propagation with self loops.

    .. math::
        \mathbf{h}^*_i = \sum_{j \in N(i) \cup \{i\}} \frac{1}{\sqrt{\hat d_i \hat d_j}}
        \mathbf{W}\mathbf{h}_j

    (``\hat d``: degree with the self loop). It replaces Eq. 5-6's attention ``α_ij`` in the
    paper's PAN ablation (Table 4); as for :class:`GroupAwareAttention`, ``σ`` is applied by the
    caller. It takes no arguments.

    Shapes:
        - **input:**
          projected node features ``z`` ``(N, D)``,
          group assignments ``p`` ``(N, G)`` (accepted for the same call as
          :class:`GroupAwareAttention`, not read),
          edge indices ``(2, E)``, without self loops unless ``has_self_loops=True``; a
          ``layout`` is accepted for the same call as :class:`GroupAwareAttention`, not read (the
          attention kernel switch does not apply to this ablation)
        - **output:** aggregated node features ``(N, D)``
        - :meth:`chunked`: ``z`` ``(N, D)``, ``p`` ``(N, G)`` (not read), an incoming-adjacency
          ``CSR`` that holds the self loops -> ``(N, D)``
    """

    def __init__(self):
        super().__init__(aggr="add", node_dim=0)

    def forward(self, z: torch.Tensor, p: torch.Tensor, edge_index: torch.Tensor,
                has_self_loops: bool = False, layout: EdgeLayout | None = None):
        edge_index, weight = gcn_norm(edge_index, None, z.shape[0], add_self_loops=not has_self_loops)
        return self.propagate(edge_index, z=z, weight=weight)

    def message(self, z_j: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return weight.unsqueeze(-1) * z_j

    @torch.no_grad()
    def chunked(self, z: torch.Tensor, p: torch.Tensor, csr: CSR, max_edges: int) -> torch.Tensor:
        """The GCN propagation target range by target range (``csr`` holds the self loops)."""
        dinv = csr.degree().to(z.dtype).pow(-0.5)
        dinv[torch.isinf(dinv)] = 0
        out = z.new_empty(z.shape)
        for a, b in target_chunks(csr, max_edges):
            src, dst = chunk_edges(csr, a, b)
            w = dinv.index_select(0, src) * dinv[a:b].index_select(0, dst)
            out[a:b] = z.new_zeros(b - a, z.shape[1]).index_add_(
                0, dst, w.unsqueeze(-1) * z.index_select(0, src))
        return out


@dataclass
class LayerOutput:
    """What one prototypical attention layer gives: ``(p^(l), h^(l))`` and the scores behind them."""

    r: torch.Tensor  # representativeness [N, N_pro] (Eq. 1)
    p: torch.Tensor  # group assignment [N, N_clu] (Eq. 3)
    h: torch.Tensor  # aggregated representation h* [N, D] (Eq. 6)


class PrototypicalAttentionLayer(nn.Module):
    """One prototypical attention network (PAN): projection, prototypes, group-aware attention.

    ``z = W dropout(h)``; the layer's own prototypes score ``z`` (Eq. 1); a partition of those
    prototypes gives the group assignment ``p`` (Eq. 3); ``h* = relu(sum alpha W h)`` (Eq. 5-6).
    With ``use_attention=False`` the aggregation is a GCN propagation (the paper's PAN ablation);
    prototypes and groups are kept, so the layer still predicts groups.

    Args:
        in_dim (int): ``D_in``, size of each input node representation (the feature count for
            the first layer).
        out_dim (int): ``D_out``, size of the projection ``W`` and of the prototypes.
        num_prototypes (int): ``K`` (the paper's ``N_pro``), trainable prototypes of this layer.
        temperature (float): softmax temperature of Eq. 1 over the cosine similarities of ``z``
            to the prototypes (smaller is sharper; ``ORALConfig.temperature``).
        attention_temperature (float, optional): ``t`` of Eq. 5 (see
            :class:`GroupAwareAttention`). (default: ``1.0``)
        dropout (float, optional): dropout on the input ``h`` before the projection, in
            training mode. (default: ``0.5``)
        use_attention (bool, optional): group-aware attention (Eq. 5-6), or
            :class:`GCNAggregation` for the PAN ablation. (default: ``True``)
        attention_kernel (str, optional): ``"gather"`` or ``"spmm"``, how Eq. 6 is summed (see
            :class:`GroupAwareAttention`). (default: ``"gather"``)

    Shapes:
        - **input:**
          node representations ``h`` ``(N, D_in)``,
          edge indices ``(2, E)``,
          a :class:`~oral_core.clustering.Partition` of the ``K`` prototypes into ``G`` groups
          (``prototype_group`` ``(K,)``, from Eq. 4)
        - **output:** a :class:`LayerOutput`: representativeness ``r`` ``(N, K)`` (Eq. 1), group
          assignment ``p`` ``(N, G)`` (Eq. 3), representation ``h`` ``(N, D_out)`` (Eq. 6)
        - :meth:`project`: ``(N, D_in)`` -> ``(N, D_out)``; :meth:`score`: ``(N, D_out)`` ->
          ``(N, K)``; prototypes: parameter ``(K, D_out)``
    """

    def __init__(self, in_dim: int, out_dim: int, num_prototypes: int, temperature: float,
                 attention_temperature: float = 1.0, dropout: float = 0.5,
                 use_attention: bool = True, attention_kernel: str = "gather"):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)
        self.prototypes = nn.Parameter(torch.empty(num_prototypes, out_dim))
        self.temperature = temperature
        self.dropout = dropout
        self.aggregate = (GroupAwareAttention(attention_temperature, attention_kernel)
                          if use_attention else GCNAggregation())
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        nn.init.normal_(self.prototypes)

    def project(self, h: torch.Tensor, dropout: bool = True) -> torch.Tensor:
        """``W dropout(h)``; a sparse CSR ``h`` (the first layer's input with
        ``ORALConfig.sparse_input_below``) is projected as it is: its dropout is the caller's
        (:func:`oral_core.features.input_dropout`)."""
        if is_sparse(h):
            if self.training and dropout:
                raise ValueError("a sparse input is dropped out by the caller "
                                 "(oral_core.features.input_dropout); pass input_dropout=False")
            return sparse_linear(h, self.lin)
        return self.lin(F.dropout(h, self.dropout, self.training and dropout))

    def score(self, z: torch.Tensor) -> torch.Tensor:
        """Eq. 1 against this layer's prototypes."""
        return representativeness(z, self.prototypes, self.temperature)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, partition: Partition) -> LayerOutput:
        z = self.project(h)
        r = self.score(z)
        return self.propagate_groups(z, r, edge_index, partition)

    def propagate_groups(self, z, r, edge_index, partition: Partition,
                         has_self_loops: bool = False, layout: EdgeLayout | None = None) -> LayerOutput:
        """Eq. 3 then Eq. 5-6 from a projection ``z`` ``(N, D_out)`` and its scores ``r``
        ``(N, K)`` (``layout``: the :class:`EdgeLayout` of ``edge_index``, ``"spmm"`` only)."""
        p = group_assignment(r, partition.prototype_group, partition.num_groups)
        h = self.aggregate(z, p, edge_index, has_self_loops=has_self_loops, layout=layout)
        return LayerOutput(r=r, p=p, h=F.relu(h))


class ORALNetwork(nn.Module):
    """``L`` stacked prototypical attention layers, ``h^(0) = x`` (Algorithm 1, lines 3-5).

    Layer ``l`` reads ``h^(l-1)`` and gives ``(p^(l), h^(l))``: the list of group assignments and
    representations at ``L`` scales that the per-layer cross-entropy (Eq. 7) and the
    pseudo-label generator (Eq. 8-9) use.

    Args:
        in_dim (int): ``F``, the number of node features.
        hidden_dim (int): ``D``, the size of every layer's projection, prototypes and output.
        num_layers (int): ``L``.
        num_prototypes (int): ``K`` (``N_pro``) prototypes per layer.
        temperature (float): Eq. 1 softmax temperature (see :class:`PrototypicalAttentionLayer`).
        attention_temperature (float, optional): ``t`` of Eq. 5. (default: ``1.0``)
        dropout (float, optional): dropout on each layer's input. (default: ``0.5``)
        use_attention (bool, optional): ``False`` for the PAN ablation (GCN propagation).
            (default: ``True``)
        attention_kernel (str, optional): ``"gather"`` or ``"spmm"`` (see
            :class:`GroupAwareAttention`); with ``"spmm"`` the sparse layout of the edges is built
            once per forward pass for all layers. (default: ``"gather"``)

    Shapes:
        - **input:** node features ``x`` ``(N, F)``, edge indices ``(2, E)`` (self loops are
          added once for all layers); :meth:`forward_chunked` takes an incoming-adjacency
          ``CSR`` that already holds one self loop per node instead
        - **output:** ``L`` :class:`LayerOutput` (``r`` ``(N, K)``, ``p`` ``(N, G_l)``, ``h``
          ``(N, D)``, ``G_l`` groups in layer ``l``) and the ``L`` partitions used
    """

    def __init__(self, in_dim: int, hidden_dim: int, num_layers: int, num_prototypes: int,
                 temperature: float, attention_temperature: float = 1.0, dropout: float = 0.5,
                 use_attention: bool = True, attention_kernel: str = "gather"):
        super().__init__()
        dims = [in_dim] + [hidden_dim] * num_layers
        self.layers = nn.ModuleList(
            PrototypicalAttentionLayer(dims[i], dims[i + 1], num_prototypes, temperature,
                                       attention_temperature, dropout, use_attention,
                                       attention_kernel)
            for i in range(num_layers))
        self.sparse_layout = use_attention and attention_kernel == "spmm"

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, partitions=None,
                cluster=None, input_dropout: bool = True,
                first: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[list[LayerOutput], list[Partition]]:
        """Run every layer. Partitions are either given (one per layer) or made by ``cluster``.

        Args:
            partitions: the prototype partition of each layer, or None.
            cluster: ``cluster(layer_index, r, prototypes) -> Partition``, called with the layer's
                representativeness when ``partitions`` is None (semi-supervised clustering, Eq. 4).
            input_dropout: apply dropout to ``x`` before the first layer (later layers' inputs
                always get it in training mode).
            first: the first layer's projection and Eq. 1 scores of ``x`` as
                :meth:`first_projection` gives them, reused instead of computed again (the two
                views of a training step, which share ``x``; ``input_dropout`` must be False).
        """
        if first is not None and input_dropout:
            raise ValueError("a reused first projection needs input_dropout=False (the caller "
                             "dropped the input out once for both)")
        outputs, used = [], []
        h = x
        edge_index = with_self_loops(edge_index, x.shape[0])  # once for all layers
        layout = EdgeLayout.from_edge_index(edge_index, x.shape[0]) if self.sparse_layout else None
        for idx, layer in enumerate(self.layers):
            if idx == 0 and first is not None:
                z, r = first
            else:
                z = layer.project(h, dropout=input_dropout or idx > 0)
                r = layer.score(z)
            part = partitions[idx] if partitions is not None else cluster(idx, r, layer.prototypes)
            out = layer.propagate_groups(z, r, edge_index, part, has_self_loops=True, layout=layout)
            outputs.append(out)
            used.append(part)
            h = out.h
        return outputs, used

    def first_projection(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The first layer's projection ``W x`` of an input already dropped out, and its Eq. 1
        scores: what :meth:`forward` computes first, for ``first=`` (``share_first_projection``)."""
        layer = self.layers[0]
        z = layer.project(x, dropout=False)
        return z, layer.score(z)

    @torch.no_grad()
    def forward_chunked(self, x: torch.Tensor, csr: CSR, partitions=None, cluster=None,
                        max_edges: int = 1 << 21, max_rows: int = 1 << 18,
                        keep_hidden: bool = False) -> tuple[list[LayerOutput], list[Partition]]:
        """Evaluation-mode :meth:`forward` on a large graph, layer by layer, in chunks.

        Every layer's projection runs over at most ``max_rows`` nodes at a time and its
        aggregation over at most ``max_edges`` edges at a time (``csr``: the incoming adjacency
        *with* one self loop per node, see :func:`with_self_loops`), so the peak memory is the
        ``[N, D]`` / ``[N, N_pro]`` results plus one chunk, never ``[E, D]``. Clustering and the
        group assignments still see every node's scores (Eq. 3-4 on the whole graph). The hidden
        representations of all but the last layer are dropped unless ``keep_hidden``.
        """
        outputs, used = [], []
        h = x
        for idx, layer in enumerate(self.layers):
            z = torch.cat([layer.lin(h[i:i + max_rows]) for i in range(0, h.shape[0], max_rows)])
            r = torch.cat([layer.score(z[i:i + max_rows]) for i in range(0, z.shape[0], max_rows)])
            part = partitions[idx] if partitions is not None else cluster(idx, r, layer.prototypes)
            p = group_assignment(r, part.prototype_group, part.num_groups)
            h = F.relu(layer.aggregate.chunked(z, p, csr, max_edges))
            del z
            if outputs and not keep_hidden:
                outputs[-1].h = None
            outputs.append(LayerOutput(r=r, p=p, h=h))
            used.append(part)
        return outputs, used
