"""LINQS text graphs: ``<name>.content`` (``<paper_id> <0/1 words>... <class>``) and
``<name>.cites`` (``<cited> <citing>``), as Cora is published."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..graph import Graph
from .common import PathLike, make_graph


def _read_table(path: Path) -> np.ndarray:
    """Whitespace-separated text file as a 2-D array of strings (``ValueError`` names the file)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "empty input file"
            table = np.loadtxt(path, dtype=str, ndmin=2, encoding="utf-8", comments=None)
    except ValueError as err:
        raise ValueError(f"{path}: malformed table: {err}") from err
    return table


def _index_of(ids: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``queries`` in ``ids`` (vectorised) and a mask of the queries found."""
    sorter = np.argsort(ids, kind="stable")
    pos = np.searchsorted(ids, queries, sorter=sorter)
    pos = np.minimum(pos, max(len(ids) - 1, 0))
    if len(ids) == 0:
        return pos, np.zeros(queries.shape, dtype=bool)
    index = sorter[pos]
    return index, ids[index] == queries


def _read_content(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paper ids, float32 features and class names of a LINQS ``.content`` file."""
    rows = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows or len(rows[0]) < 3:
        raise ValueError(f"{path}: expected lines '<id> <features>... <class>'")
    bad = [i for i, row in enumerate(rows) if len(row) != len(rows[0])]
    if bad:
        raise ValueError(f"{path}: line {bad[0] + 1} has {len(rows[bad[0]])} fields, the first "
                         f"line has {len(rows[0])} ({len(bad)} ragged lines)")
    try:
        x = np.array([row[1:-1] for row in rows], dtype=np.float32)
    except ValueError as err:
        raise ValueError(f"{path}: non-numeric feature value: {err}") from err
    return np.array([row[0] for row in rows]), x, np.array([row[-1] for row in rows])


def load_linqs(content_path: PathLike, cites_path: PathLike, name: str | None = None,
               drop_unknown: bool = False) -> Graph:
    """Load a LINQS citation graph (``<paper_id> <0/1 words>... <class>`` and ``<cited> <citing>``).

    Nodes are numbered in ``content`` file order; class ids follow the sorted class names (Cora:
    Case_Based=0, ..., Theory=6). Edges naming a paper id absent from ``content`` raise
    ``ValueError`` (or are dropped with ``drop_unknown=True``, which Citeseer needs).
    """
    content_path, cites_path = Path(content_path), Path(cites_path)
    ids, x, labels = _read_content(content_path)
    unique_ids, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{content_path}: duplicate paper ids, e.g. "
                         f"{unique_ids[counts > 1][:3].tolist()}")
    class_names, y = np.unique(labels, return_inverse=True)

    cites = _read_table(cites_path)
    if cites.size == 0:
        cites = np.empty((0, 2), dtype=str)
    if cites.shape[1] != 2:
        raise ValueError(f"{cites_path}: expected two paper ids per line, found {cites.shape[1]}")
    index, found = _index_of(ids, cites)
    known = found.all(axis=1)
    if not known.all() and not drop_unknown:
        unknown = np.unique(cites[~found])
        raise ValueError(f"{cites_path}: {int((~known).sum())} citations refer to paper ids not in "
                         f"{content_path.name}, e.g. {unknown[:5].tolist()}")
    index = index[known]
    graph = make_graph(x, index[:, 1], index[:, 0], y.reshape(-1),
                       name or content_path.stem, [str(c) for c in class_names])
    graph.node_ids = [str(i) for i in ids]
    return graph
