"""gnn-benchmark ``.npz`` graphs (CSR ``adj_*``, ``attr_*`` or ``attr_matrix``, ``labels``), read
without pickling (AmazonPhoto)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..graph import Graph
from .common import PathLike, check_edges, check_labels, dense_float32, make_graph


def _npz_csr(data: Any, prefix: str) -> sp.csr_matrix:
    """The CSR matrix stored as ``<prefix>_data/_indices/_indptr/_shape`` in an npz."""
    return sp.csr_matrix((data[f"{prefix}_data"], data[f"{prefix}_indices"],
                          data[f"{prefix}_indptr"]), shape=tuple(data[f"{prefix}_shape"]))


def _npz_class_names(data: Any) -> list[str] | None:
    """``class_names`` from an npz when present and stored without pickling."""
    if "class_names" not in data.files:
        return None
    try:
        return [str(c) for c in data["class_names"]]
    except ValueError:  # an object array would need allow_pickle
        return None


def load_npz(path: PathLike, name: str | None = None) -> Graph:
    """Load a gnn-benchmark ``.npz`` graph (``np.load`` with ``allow_pickle=False``).

    Features come from CSR ``attr_*`` arrays or a dense ``attr_matrix``; ``labels`` are class ids
    (a one-hot matrix is reduced by argmax). The adjacency is symmetrised, self loops dropped.
    """
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable .npz archive: {err}") from err
    with data:
        missing = [k for k in ("adj_data", "adj_indices", "adj_indptr", "adj_shape", "labels")
                   if k not in data.files]
        if missing or ("attr_data" not in data.files and "attr_matrix" not in data.files):
            raise ValueError(f"{path}: missing arrays {missing or ['attr_data or attr_matrix']} "
                             f"(found {sorted(data.files)})")
        adj = _npz_csr(data, "adj").tocoo()
        x = dense_float32(_npz_csr(data, "attr") if "attr_data" in data.files
                          else data["attr_matrix"])
        labels = np.asarray(data["labels"])
        class_names = _npz_class_names(data)
    y = labels.argmax(axis=1) if labels.ndim == 2 else labels
    check_labels(y, x.shape[0], path)
    check_edges(adj.row, adj.col, x.shape[0], path)
    return make_graph(x, adj.row, adj.col, y, name or path.stem, class_names)
