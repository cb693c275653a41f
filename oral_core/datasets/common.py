"""What the format loaders share: the not-found error and building a checked
:class:`~oral_core.graph.Graph` from numpy parts (symmetrised, deduplicated edges; dense float32
features; 0-based long class ids)."""
from __future__ import annotations

import re

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from ..graph import Graph, canonical_edges

PathLike = str | os.PathLike


class DatasetNotFound(FileNotFoundError):
    """The files of a dataset are neither on disk nor downloadable."""


def make_graph(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, y: np.ndarray, name: str,
               class_names: list[str] | None = None) -> Graph:
    """Assemble a :class:`Graph` from numpy parts (edges are symmetrised and deduplicated)."""
    n = int(x.shape[0])
    edges = torch.from_numpy(np.stack([np.asarray(rows, dtype=np.int64),
                                       np.asarray(cols, dtype=np.int64)]))
    return Graph(x=torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),
                 edge_index=canonical_edges(edges, n),
                 y=torch.from_numpy(np.asarray(y, dtype=np.int64)),
                 name=name, class_names=class_names)


def dense_float32(matrix: Any) -> np.ndarray:
    """A dense float32 array from a scipy sparse matrix or array-like."""
    if sp.issparse(matrix):
        return np.asarray(matrix.toarray(), dtype=np.float32)
    return np.asarray(matrix, dtype=np.float32)


def check_edges(rows: np.ndarray, cols: np.ndarray, n: int, source: Path) -> None:
    """Raise ``ValueError`` naming ``source`` if an edge endpoint is outside ``0..n-1``."""
    bad = (rows < 0) | (rows >= n) | (cols < 0) | (cols >= n)
    if bad.any():
        examples = list(zip(rows[bad][:3].tolist(), cols[bad][:3].tolist()))
        raise ValueError(f"{source}: {int(bad.sum())} edges point outside the {n} nodes, "
                         f"e.g. {examples}")


def check_labels(y: np.ndarray, n: int, source: Path) -> None:
    """Raise ``ValueError`` naming ``source`` unless ``y`` holds ``n`` non-negative ids."""
    if y.shape != (n,):
        raise ValueError(f"{source}: expected {n} labels, found shape {tuple(y.shape)}")
    if n and y.min() < 0:
        raise ValueError(f"{source}: labels must be non-negative, found {int(y.min())}")


def canonical_name(dataset: str) -> str:
    """A dataset's short key (``cora``, ``amazonphoto``, ...): lower case letters and digits only,
    so that it is safe in file names."""
    key = re.sub(r"[^a-z0-9]", "", Path(str(dataset)).stem.lower()) or "graph"
    return {"photo": "amazonphoto", "amazonelectronicsphoto": "amazonphoto"}.get(key, key)
