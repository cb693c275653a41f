"""The first layer's input as a sparse matrix (``ORALConfig.sparse_input_below``).

Bag-of-words node features are mostly zeros (Cora 1.3% non-zero of 1,433 columns, BlogCatalog
0.9% of 8,189). A dense ``[N, F]`` input costs, every epoch, one random draw per matrix entry for
the input dropout and dense ``[N, F] x [F, D]`` products in the projection of the first layer
(forward, both views, and the weight gradient). With the input stored as CSR, the dropout draws
one value per stored feature and the projection is a sparse-dense product.

The dropout distribution is the same (each stored feature is kept with probability ``1 - p`` and
scaled by ``1 / (1 - p)``; a zero stays zero whatever its mask), but the random stream is not: a
fit with the sparse input is a fit with other dropout masks, not the same numbers faster. The
projection equals the dense one up to float summation order.
"""
from __future__ import annotations

import contextlib
import warnings

import torch
import torch.nn.functional as F


@contextlib.contextmanager
def _csr_beta_quiet():
    """Silence torch's "sparse CSR support is in beta" warning (the uses here are tested)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        yield


def csr_matrix(rowptr: torch.Tensor, col: torch.Tensor, values: torch.Tensor,
               size: tuple[int, int]) -> torch.Tensor:
    """A ``torch.sparse_csr`` matrix from valid (sorted) indices: torch's invariant checks (a
    pass over the indices) are off."""
    with _csr_beta_quiet():
        return torch.sparse_csr_tensor(rowptr, col, values, size, check_invariants=False)


def feature_density(x: torch.Tensor) -> float:
    """The share of non-zero entries of ``x``."""
    return float((x != 0).sum()) / max(x.numel(), 1)


def network_input(x: torch.Tensor, below: float) -> torch.Tensor:
    """``x`` as a sparse CSR matrix when its density is below ``below`` (0: never), else ``x``."""
    if below <= 0 or x.dim() != 2 or feature_density(x) >= below:
        return x
    with _csr_beta_quiet():
        return x.to_sparse_csr()


def is_sparse(x: torch.Tensor) -> bool:
    return x.layout == torch.sparse_csr


def input_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Training-mode dropout of the input features, dense or CSR (on the stored values only)."""
    if not is_sparse(x):
        return F.dropout(x, p, training=True)
    values = F.dropout(x.values(), p, training=True)
    return csr_matrix(x.crow_indices(), x.col_indices(), values, tuple(x.shape))


def sparse_linear(x: torch.Tensor, lin: torch.nn.Linear) -> torch.Tensor:
    """``lin(x)`` for a CSR ``x`` (``x W^T + b``; differentiable in ``W`` and ``b``)."""
    out = torch.sparse.mm(x, lin.weight.t())
    return out + lin.bias if lin.bias is not None else out
