"""The open-world split protocol of the ORAL paper (Section "Datasets").

80% of the classes (rounded down) are known; of the nodes of known classes, 70% form the labelled
training set and 15% the labelled validation set, sampled per class and per seed. The remaining
known-class nodes and every novel-class node form the unlabelled test set ``V_U``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

_EPS = 1e-9  # so that e.g. floor(0.7 * 10) is 7 despite floating-point rounding


@dataclass
class OpenWorldSplit:
    """Which classes are known and which nodes are labelled train / validation / test.

    Attributes:
        known_classes: sorted long tensor of the original class ids that are known (``Y^L``).
        train_mask: bool ``[N]``, labelled training nodes (known classes only).
        val_mask: bool ``[N]``, labelled validation nodes (known classes only).
        test_mask: bool ``[N]``, the unlabelled nodes ``V_U``: the rest of the known-class nodes
            and all novel-class nodes.
        seed: the seed that produced the split.
    """

    known_classes: torch.Tensor
    train_mask: torch.Tensor
    val_mask: torch.Tensor
    test_mask: torch.Tensor
    seed: int

    @property
    def num_known(self) -> int:
        """Number of known classes ``|Y^L|``."""
        return int(self.known_classes.numel())

    def known_index(self, y: torch.Tensor) -> torch.Tensor:
        """Long ``[N]``: position ``0..K-1`` of each node's class in ``known_classes``, ``-1`` for
        nodes of novel classes."""
        size = max(int(y.max()) + 1 if y.numel() else 0, int(self.known_classes.max()) + 1)
        table = torch.full((size,), -1, dtype=torch.long, device=y.device)
        table[self.known_classes.to(y.device)] = torch.arange(self.num_known, device=y.device)
        return table[y.long()]

    def train_labels(self, y: torch.Tensor) -> torch.Tensor:
        """Long ``[N]``: known-class index on training nodes, ``-1`` elsewhere."""
        return self._masked_labels(y, self.train_mask)

    def val_labels(self, y: torch.Tensor) -> torch.Tensor:
        """Long ``[N]``: known-class index on validation nodes, ``-1`` elsewhere."""
        return self._masked_labels(y, self.val_mask)

    def _masked_labels(self, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        index = self.known_index(y)
        return torch.where(mask.to(y.device), index, torch.full_like(index, -1))


def _check_fractions(known_fraction: float, train_fraction: float, val_fraction: float) -> None:
    """Raise ``ValueError`` for fractions outside their ranges."""
    if not 0.0 < known_fraction < 1.0:
        raise ValueError(f"known_fraction must be in (0, 1), got {known_fraction}")
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if train_fraction + val_fraction > 1.0 + _EPS:
        raise ValueError(f"train_fraction + val_fraction must be at most 1, got "
                         f"{train_fraction} + {val_fraction}")


def _explicit_known(known_classes: Sequence[int] | torch.Tensor,
                    classes: torch.Tensor) -> torch.Tensor:
    """Validate an explicit list of known class ids against the classes present in ``y``."""
    known = torch.as_tensor(known_classes, dtype=torch.long).reshape(-1)
    if known.numel() == 0:
        raise ValueError("known_classes is empty: at least one class must be known")
    if torch.unique(known).numel() != known.numel():
        raise ValueError(f"known_classes has duplicates: {known.tolist()}")
    unknown = known[~torch.isin(known, classes)]
    if unknown.numel():
        raise ValueError(f"known_classes {unknown.tolist()} do not occur in y "
                         f"(classes present: {classes.tolist()})")
    if known.numel() == classes.numel():
        raise ValueError("known_classes names every class: at least one class must be novel")
    return torch.sort(known).values


def _choose_known(classes: torch.Tensor, known_fraction: float, known_choice: str,
                  generator: torch.Generator) -> torch.Tensor:
    """``floor(known_fraction * C)`` known classes: the lowest ids or a seeded random choice."""
    num_classes = classes.numel()
    k = math.floor(known_fraction * num_classes + _EPS)
    if not 1 <= k <= num_classes - 1:
        raise ValueError(f"known_fraction={known_fraction} of {num_classes} classes gives {k} "
                         f"known classes; need between 1 and {num_classes - 1}")
    if known_choice == "lowest":
        return classes[:k].clone()
    if known_choice == "random":
        chosen = torch.randperm(num_classes, generator=generator)[:k]
        return torch.sort(classes[chosen]).values
    raise ValueError(f"known_choice must be 'lowest' or 'random', got {known_choice!r}")


def make_split(y: torch.Tensor, seed: int, known_fraction: float = 0.8,
               known_classes: Sequence[int] | torch.Tensor | None = None,
               known_choice: str = "lowest", train_fraction: float = 0.7,
               val_fraction: float = 0.15) -> OpenWorldSplit:
    """Build the paper's open-world split of the nodes with classes ``y``.

    Known classes are ``known_classes`` when given, else ``floor(known_fraction * C)`` of the
    ``C`` classes present in ``y`` (the lowest ids, or a seeded random choice). For every known
    class ``c`` with ``n_c`` nodes, ``floor(train_fraction * n_c)`` random nodes are labelled for
    training and ``floor(val_fraction * n_c)`` for validation; everything else is test. The
    same ``seed`` always gives the same split (a ``torch.Generator`` seeded with it).
    """
    y = torch.as_tensor(y)
    if y.dim() != 1 or y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise ValueError(f"y must be a 1-D integer tensor, got dtype {y.dtype} "
                         f"shape {tuple(y.shape)}")
    y = y.long().cpu()
    if y.numel() == 0 or int(y.min()) < 0:
        raise ValueError("y must be non-empty with non-negative class ids")
    _check_fractions(known_fraction, train_fraction, val_fraction)
    classes = torch.unique(y)
    generator = torch.Generator().manual_seed(int(seed))
    if known_classes is not None:
        known = _explicit_known(known_classes, classes)
    else:
        known = _choose_known(classes, known_fraction, known_choice, generator)

    train_mask = torch.zeros(y.numel(), dtype=torch.bool)
    val_mask = torch.zeros(y.numel(), dtype=torch.bool)
    for c in known.tolist():
        nodes = torch.nonzero(y == c).reshape(-1)
        nodes = nodes[torch.randperm(nodes.numel(), generator=generator)]
        n_train = math.floor(train_fraction * nodes.numel() + _EPS)
        n_val = math.floor(val_fraction * nodes.numel() + _EPS)
        train_mask[nodes[:n_train]] = True
        val_mask[nodes[n_train:n_train + n_val]] = True
    test_mask = ~(train_mask | val_mask)
    return OpenWorldSplit(known_classes=known, train_mask=train_mask, val_mask=val_mask,
                          test_mask=test_mask, seed=int(seed))
