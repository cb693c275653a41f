"""MATLAB v5 ``.mat`` graphs with ``Network``, ``Attributes`` and ``Label`` (BlogCatalog)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from ..graph import Graph
from .common import PathLike, check_edges, check_labels, dense_float32, make_graph


def load_mat(path: PathLike, name: str | None = None) -> Graph:
    """Load a MATLAB v5 graph with ``Network`` (N x N), ``Attributes`` (N x F) and ``Label``.

    Labels that start at 1 (BlogCatalog: 1..6) are shifted to start at 0; labels already starting
    at 0 are kept.
    """
    path = Path(path)
    try:
        data = scipy.io.loadmat(path)
    except (OSError, ValueError, NotImplementedError) as err:
        raise ValueError(f"{path}: not a readable MATLAB v5 file: {err}") from err
    missing = [k for k in ("Network", "Attributes", "Label") if k not in data]
    if missing:
        found = sorted(k for k in data if not k.startswith("__"))
        raise ValueError(f"{path}: missing variables {missing} (found {found})")
    adj = sp.coo_matrix(data["Network"])
    x = dense_float32(data["Attributes"])
    y = np.asarray(data["Label"]).reshape(-1).astype(np.int64)
    if y.size and y.min() >= 1:
        y = y - 1
    check_labels(y, x.shape[0], path)
    check_edges(adj.row, adj.col, x.shape[0], path)
    return make_graph(x, adj.row, adj.col, y, name or path.stem)
