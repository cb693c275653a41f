"""Describing discovered classes to a person: characteristic features, exemplars and purity.

Everything here is computed from the model's output (one class id and one confidence per node)
and the node features; nothing is trained. All per-node work is vectorised (``index_add`` /
``bincount`` sums and one sort); the only Python loops run over classes.

Measures
--------
*Lift* of feature ``f`` for class ``c`` (:func:`characteristic_features`)::

    lift(c, f) = (mean of x[:, f] over the members of c + eps)
                 / (mean of x[:, f] over every other node of the graph + eps)

A lift of 4 means the feature is, on average, four times as strong inside the class as in the
rest of the graph. ``eps`` (in feature units) smooths the ratio so that a feature that is rare
everywhere cannot win on a tiny denominator alone. Lift is a ratio of means, so it is meaningful
for non-negative features (counts, TF-IDF, one-hot attributes); a feature that takes negative
values is shifted by its minimum over the graph first, so that its smallest value reads as 0.
Features whose (shifted) class mean is (almost) zero are never reported for that class: a
feature absent from a class does not characterise it, however absent it is elsewhere.

*Exemplars* (:func:`exemplars`): a class's members with the highest confidence, i.e. the nodes the
model is surest belong to it (ties broken by the lower node index).

*Purity* (:func:`purity`, only when ground truth exists, for simulated or benchmark snapshots):
the fraction of a class's members (with a truth label) that carry the class's most common true
label, and that label (the *majority true label*).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import torch

from oral_core.columns import writable


class Feature(NamedTuple):
    """One characteristic feature of a class."""

    index: int
    name: str
    lift: float
    class_mean: float


def _as_tensor(values, dtype) -> torch.Tensor:
    if isinstance(values, torch.Tensor):
        return values.detach().cpu().to(dtype)
    # Arrow-backed arrays are read-only; torch wants writable memory (a copy only in that case)
    return torch.as_tensor(writable(np.asarray(values)), dtype=dtype)


def _valid_classes(class_id: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Mask of nodes with a class id in ``[0, num_classes)`` (e.g. -1 = unassigned is left out)."""
    return (class_id >= 0) & (class_id < num_classes)


def characteristic_features(x, class_id, num_classes: int, top: int = 5,
                            feature_names: Sequence[str] | None = None, eps: float = 1e-3,
                            min_mean: float = 1e-6) -> list[list[Feature]]:
    """The ``top`` features of highest lift per class (see the module docstring for lift).

    ``x``: ``[N, F]`` node features (numpy or torch); ``class_id``: ``[N]`` class per node, ids
    outside ``[0, num_classes)`` belong to no class (but still count as "the rest of the graph").
    Returns, for every class ``0..num_classes-1``, a list of :class:`Feature`
    ``(index, name, lift, class_mean)`` sorted by decreasing lift (ties: higher class mean, then
    lower index); ``name`` is ``feature_names[index]`` or ``f<index>``. A class without members
    gets an empty list; features whose class mean is at most ``min_mean`` are skipped.
    """
    x = _as_tensor(x, torch.float64)
    cid = _as_tensor(class_id, torch.long)
    if x.ndim != 2 or cid.ndim != 1 or x.shape[0] != cid.shape[0]:
        raise ValueError(f"x must be [N, F] and class_id [N]; got {tuple(x.shape)} and {tuple(cid.shape)}")
    n, f = x.shape
    if feature_names is not None and len(feature_names) != f:
        raise ValueError(f"{len(feature_names)} feature names for {f} features")
    if n == 0 or f == 0 or num_classes <= 0:
        return [[] for _ in range(max(num_classes, 0))]
    low = x.min(dim=0).values
    x = x - torch.clamp(low, max=0.0)  # shift only features that go negative
    valid = _valid_classes(cid, num_classes)
    sums = torch.zeros(num_classes, f, dtype=torch.float64).index_add_(0, cid[valid], x[valid])
    counts = torch.bincount(cid[valid], minlength=num_classes).to(torch.float64)
    total = x.sum(dim=0)
    inside = sums / counts.clamp_min(1.0)[:, None]
    rest_n = (n - counts).clamp_min(1.0)[:, None]
    outside = (total[None, :] - sums) / rest_n
    lift = (inside + eps) / (outside + eps)
    result: list[list[Feature]] = []
    index = torch.arange(f)
    for c in range(num_classes):
        if counts[c] == 0:
            result.append([])
            continue
        keep = inside[c] > min_mean
        cand = index[keep]
        if cand.numel() == 0:
            result.append([])
            continue
        # stable sorts: lowest index first, then higher class mean, then higher lift
        order = torch.argsort(-inside[c, cand], stable=True)
        cand = cand[order]
        order = torch.argsort(-lift[c, cand], stable=True)
        cand = cand[order][:top]
        result.append([Feature(int(i), feature_names[i] if feature_names is not None else f"f{int(i)}",
                               float(lift[c, i]), float(inside[c, i])) for i in cand.tolist()])
    return result


def exemplars(class_id, confidence, num_classes: int, top: int = 5) -> list[list[int]]:
    """Per class ``0..num_classes-1``, the node indices of its ``top`` most confident members
    (decreasing confidence, ties by lower index); an empty class gets an empty list."""
    cid = _as_tensor(class_id, torch.long).numpy()
    conf = _as_tensor(confidence, torch.float64).numpy()
    if cid.shape != conf.shape or cid.ndim != 1:
        raise ValueError(f"class_id and confidence must be [N]; got {cid.shape} and {conf.shape}")
    idx = np.flatnonzero((cid >= 0) & (cid < num_classes))
    # one sort: by class, then decreasing confidence, then index (lexsort: last key is primary)
    order = idx[np.lexsort((idx, -conf[idx], cid[idx]))]
    sorted_cls = cid[order]
    starts = np.searchsorted(sorted_cls, np.arange(num_classes), side="left")
    ends = np.searchsorted(sorted_cls, np.arange(num_classes), side="right")
    return [order[s:min(e, s + top)].tolist() for s, e in zip(starts, ends)]


def purity(class_id, truth, num_classes: int, num_truth: int | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per class: purity (fraction of members with a truth label that carry the majority one; NaN
    when no member has one) and the index of that majority true label (-1 when none).

    ``truth``: ``[N]`` true label index per node, -1 where unknown."""
    cid = _as_tensor(class_id, torch.long).numpy()
    tru = _as_tensor(truth, torch.long).numpy()
    if cid.shape != tru.shape:
        raise ValueError(f"class_id and truth must have the same shape; got {cid.shape} and {tru.shape}")
    if num_truth is None:
        num_truth = int(tru.max()) + 1 if tru.size else 0
    if num_truth <= 0:
        return np.full(num_classes, np.nan), np.full(num_classes, -1, dtype=np.int64)
    ok = (cid >= 0) & (cid < num_classes) & (tru >= 0) & (tru < num_truth)
    table = np.bincount(cid[ok] * num_truth + tru[ok],
                        minlength=num_classes * num_truth).reshape(num_classes, num_truth)
    members = table.sum(axis=1)
    majority = table.argmax(axis=1)
    top = table[np.arange(num_classes), majority]
    with np.errstate(invalid="ignore", divide="ignore"):
        pur = np.where(members > 0, top / np.maximum(members, 1), np.nan)
    majority = np.where(members > 0, majority, -1).astype(np.int64)
    return pur, majority
