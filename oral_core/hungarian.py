"""Hungarian matching between two labelings (used by Eq. 4, Eq. 8 and Eq. 14)."""
from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment


def contingency(pred: torch.Tensor, true: torch.Tensor, n_pred: int, n_true: int) -> torch.Tensor:
    """Counts ``M[a, b]`` of items predicted ``a`` whose truth is ``b`` (float64 ``[n_pred, n_true]``)."""
    pred = pred.long().cpu()
    true = true.long().cpu()
    flat = torch.bincount(pred * n_true + true, minlength=n_pred * n_true)
    return flat.reshape(n_pred, n_true).double()


def max_assignment(weight: torch.Tensor | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the assignment that maximises the summed ``weight`` (rectangular ok)."""
    w = weight.detach().cpu().numpy() if isinstance(weight, torch.Tensor) else np.asarray(weight)
    rows, cols = linear_sum_assignment(w, maximize=True)
    return rows, cols


def hungarian_map(pred: torch.Tensor, true: torch.Tensor, n_pred: int | None = None,
                  n_true: int | None = None) -> tuple[dict[int, int], float]:
    """The one-to-one map ``f: pred id -> true id`` maximising agreement, and that accuracy.

    Prediction ids left unmatched (more predicted groups than true classes) map to nothing and
    count as errors, as in the clustering accuracy of Eq. 4 and Eq. 14.
    """
    if pred.numel() == 0:
        return {}, 0.0
    n_pred = int(pred.max()) + 1 if n_pred is None else n_pred
    n_true = int(true.max()) + 1 if n_true is None else n_true
    m = contingency(pred, true, n_pred, n_true)
    rows, cols = max_assignment(m)
    hits = float(m[rows, cols].sum())
    return {int(r): int(c) for r, c in zip(rows, cols)}, hits / pred.numel()
