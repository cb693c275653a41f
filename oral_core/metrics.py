"""Scoring of open-world node classification (Eq. 14 of the paper).

Two conventions are reported:

* GCD (Vaze et al. 2022), the paper's: one Hungarian matching between predicted groups and true
  classes over *all* test nodes, whose accuracy is then read off on the known-class and on the
  novel-class test nodes (:func:`open_world_accuracy`).
* ORCA (Cao et al. 2022): known-class accuracy compares predicted ids with true ids directly (the
  model keeps known class ids), novel-class accuracy uses a Hungarian matching computed on the
  novel-class nodes alone (:func:`orca_accuracy`).
* Fixed ids (open-set classification): a prediction with a known class id is right only when it
  is the true id, and the novel ids are matched (Hungarian) to the novel classes only, so a node
  of a novel class given any known id is wrong (:func:`fixed_id_accuracy`). A model that can only
  output known ids (the GCN baseline) scores 0 on novel classes here, as in the paper's Table 2.

Beside them, report-only and not in the paper: the class-balanced mean of the per-class shares
right under All's matching (:func:`class_balanced_accuracy`), which All's size weighting hides.

Class ids may be arbitrary non-negative integers; they are made contiguous before counting.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from .hungarian import hungarian_map


def _labels(values: torch.Tensor | Sequence[int], what: str) -> torch.Tensor:
    """A 1-D long CPU tensor of non-negative ids (``ValueError`` otherwise)."""
    t = torch.as_tensor(values)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{what} must hold integer ids, got dtype {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{what} must be 1-D, got shape {tuple(t.shape)}")
    t = t.long().cpu()
    if t.numel() and int(t.min()) < 0:
        raise ValueError(f"{what} must be non-negative, found {int(t.min())}")
    return t


def _pair(y_true: torch.Tensor, y_pred: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validated ``(y_true, y_pred)`` of equal length."""
    y_true, y_pred = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred differ in length: "
                         f"{y_true.numel()} vs {y_pred.numel()}")
    return y_true, y_pred


def _mean(correct: torch.Tensor) -> float:
    """Fraction of ``True`` entries, NaN when empty."""
    return float(correct.float().mean()) if correct.numel() else math.nan


def matched_correct(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
    """Bool ``[n]``: whether each item is right under the best one-to-one map of predicted groups
    to true classes (Hungarian algorithm; unmatched groups are wrong)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if y_true.numel() == 0:
        return torch.zeros(0, dtype=torch.bool)
    true_ids, true_idx = torch.unique(y_true, return_inverse=True)
    pred_ids, pred_idx = torch.unique(y_pred, return_inverse=True)
    mapping, _ = hungarian_map(pred_idx, true_idx, pred_ids.numel(), true_ids.numel())
    table = torch.full((pred_ids.numel(),), -1, dtype=torch.long)
    if mapping:
        table[torch.tensor(list(mapping.keys()))] = torch.tensor(list(mapping.values()))
    return table[pred_idx] == true_idx


def cluster_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor) -> float:
    """Clustering accuracy (Eq. 4 / Eq. 14): best one-to-one matching over all given items.

    NaN for empty input.
    """
    return _mean(matched_correct(y_true, y_pred))


def class_balanced_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor) -> float:
    """Mean over the true classes of the share of each class's items that are right under the
    one matching of Eq. 14 (:func:`matched_correct`), so every class weighs the same where
    :func:`cluster_accuracy` weighs each by its size. Not in the paper: a report-only companion
    of All that shows a small class merged into a large one (All barely notices). NaN for empty
    input."""
    y_true, y_pred = _pair(y_true, y_pred)
    correct = matched_correct(y_true, y_pred)
    shares = [_mean(correct[y_true == c]) for c in torch.unique(y_true).tolist()]
    return sum(shares) / len(shares) if shares else math.nan


def _known_mask(y_true: torch.Tensor, known_classes: torch.Tensor | Sequence[int]) -> torch.Tensor:
    return torch.isin(y_true, _labels(known_classes, "known_classes"))


def open_world_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor,
                        known_classes: torch.Tensor | Sequence[int]) -> dict[str, float]:
    """GCD convention: ``{"all", "known", "novel"}`` accuracies from ONE Hungarian matching over
    all given (test) nodes, read off on the nodes of known and of novel classes. NaN for an
    empty subset."""
    y_true, y_pred = _pair(y_true, y_pred)
    correct = matched_correct(y_true, y_pred)
    known = _known_mask(y_true, known_classes)
    return {"all": _mean(correct), "known": _mean(correct[known]), "novel": _mean(correct[~known])}


def orca_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor,
                  known_classes: torch.Tensor | Sequence[int]) -> dict[str, float]:
    """ORCA convention: ``known`` compares predicted with true ids directly, ``novel`` matches
    the novel-class nodes on their own, ``all`` is as in :func:`open_world_accuracy`."""
    y_true, y_pred = _pair(y_true, y_pred)
    known = _known_mask(y_true, known_classes)
    return {"all": cluster_accuracy(y_true, y_pred),
            "known": _mean(y_pred[known] == y_true[known]),
            "novel": cluster_accuracy(y_true[~known], y_pred[~known])}


def fixed_id_accuracy(y_true: torch.Tensor, y_pred: torch.Tensor,
                      known_classes: torch.Tensor | Sequence[int]) -> dict[str, float]:
    """Fixed-id convention: ``{"all", "known", "novel"}`` where a predicted known id counts only
    when equal to the true id, and predicted novel ids (any id outside ``known_classes``) are
    mapped one-to-one onto the novel classes by the Hungarian algorithm over the nodes that are
    both predicted novel and truly novel (the only nodes such a map can make right)."""
    y_true, y_pred = _pair(y_true, y_pred)
    known = _known_mask(y_true, known_classes)
    said_known = _known_mask(y_pred, known_classes)
    correct = said_known & (y_pred == y_true)
    both_novel = ~said_known & ~known
    correct[both_novel] = matched_correct(y_true[both_novel], y_pred[both_novel])
    return {"all": _mean(correct), "known": _mean(correct[known]), "novel": _mean(correct[~known])}


def contingency(y_true: torch.Tensor, y_pred: torch.Tensor) -> list[list[int]]:
    """Sparse contingency table ``[[true id, predicted id, count], ...]`` (sorted), from which
    every convention above can be recomputed (:func:`from_contingency`)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if y_true.numel() == 0:
        return []
    pairs, counts = torch.unique(torch.stack([y_true, y_pred], 1), dim=0, return_counts=True)
    return [[int(t), int(p), int(c)] for (t, p), c in zip(pairs.tolist(), counts.tolist())]


def from_contingency(table: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y_true, y_pred)`` expanded back from :func:`contingency` (order aside, the same items)."""
    if not table:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    t = torch.tensor([list(r) for r in table], dtype=torch.long)
    if t.dim() != 2 or t.shape[1] != 3 or int(t[:, 2].min()) < 0:
        raise ValueError("a contingency table is rows of [true id, predicted id, count >= 0]")
    return (torch.repeat_interleave(t[:, 0], t[:, 2]), torch.repeat_interleave(t[:, 1], t[:, 2]))


def adjusted_rand_index(a: torch.Tensor | Sequence[int], b: torch.Tensor | Sequence[int]) -> float:
    """Adjusted Rand index (Hubert and Arabie 1985) between two partitions of the same items:
    1 for the same grouping whatever the ids, about 0 for unrelated ones. It reads no label, so
    it may compare two seeds or two nights (report-only, not in the paper). NaN for fewer than
    two items; 1 when both put every item in one group."""
    a, b = _pair(a, b)
    n = a.numel()
    if n < 2:
        return math.nan
    pairs = torch.tensor([row[2] for row in contingency(a, b)], dtype=torch.float64)

    def comb2(x: torch.Tensor) -> float:
        return float((x * (x - 1) / 2).sum())

    index = comb2(pairs)
    rows = comb2(torch.unique(a, return_counts=True)[1].double())
    cols = comb2(torch.unique(b, return_counts=True)[1].double())
    expected = rows * cols / (n * (n - 1) / 2)
    top = (rows + cols) / 2
    return 1.0 if top == expected else (index - expected) / (top - expected)


def class_number_error(estimated: int | float, true: int | float) -> float:
    """Absolute error of an estimated number of classes."""
    return float(abs(estimated - true))
