"""Node feature preprocessing: row normalisation, log then row, standardisation, or the choice
``"auto"`` makes from the features' signs (per dataset: ``harness.experiment.FEATURES``)."""
from __future__ import annotations

import torch


def auto_feature_mode(x) -> str:
    """The mode ``"auto"`` stands for: ``"row"`` when no feature is negative, else ``"standard"``
    (``x``: a tensor or a numpy array)."""
    return "row" if bool((x >= 0).all()) else "standard"


def preprocess_features(x: torch.Tensor, mode: str = "row") -> torch.Tensor:
    """Normalise node features: ``"row"`` (rows sum to 1, zero rows stay zero), ``"log_row"``
    (``log1p`` first, for count features such as BlogCatalog's), ``"standard"`` (every feature
    centred and scaled to unit variance, for real-valued features that can be negative),
    ``"auto"`` (``"row"`` when no feature is negative, else ``"standard"``) or ``"none"``."""
    if mode == "auto":
        mode = auto_feature_mode(x)
    if mode == "none":
        return x
    if mode == "standard":
        std = x.std(dim=0, keepdim=True)
        return (x - x.mean(dim=0, keepdim=True)) / torch.where(std > 0, std, torch.ones_like(std))
    if mode not in ("row", "log_row"):
        raise ValueError(f"unknown feature preprocessing {mode!r}: use 'row', 'log_row', "
                         "'standard', 'auto' or 'none'")
    x = torch.log1p(x.clamp_min(0)) if mode == "log_row" else x
    total = x.sum(dim=1, keepdim=True)
    return x / torch.where(total == 0, torch.ones_like(total), total)
