"""Planetoid graphs: the ``ind.<name>.{allx,ally,tx,ty,graph,test.index}`` files, read with the
restricted unpickler of :mod:`oral_core.datasets.unpickle`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..graph import Graph
from .common import DatasetNotFound, PathLike, check_edges, dense_float32, make_graph
from .unpickle import restricted_load


def _planetoid_path(directory: Path, name: str, part: str) -> Path:
    path = directory / f"ind.{name}.{part}"
    if not path.is_file():
        raise DatasetNotFound(f"Planetoid file {path} not found")
    return path


def _graph_dict_edges(graph: Any, source: Path) -> tuple[np.ndarray, np.ndarray]:
    """Edge arrays from a Planetoid adjacency dict ``{node: [neighbours]}``."""
    if not isinstance(graph, dict):
        raise ValueError(f"{source}: expected a dict of adjacency lists, "
                         f"found {type(graph).__name__}")
    lengths = np.fromiter((len(v) for v in graph.values()), dtype=np.int64, count=len(graph))
    rows = np.repeat(np.fromiter(graph.keys(), dtype=np.int64, count=len(graph)), lengths)
    cols = np.fromiter((int(c) for v in graph.values() for c in v), dtype=np.int64,
                       count=int(lengths.sum()))
    return rows, cols


def load_planetoid(directory: PathLike, name: str) -> Graph:
    """Load ``ind.<name>.*`` Planetoid files with a restricted unpickler.

    ``allx``/``ally`` hold the first nodes (they include ``x``/``y``, which are not needed);
    ``tx``/``ty`` hold the test nodes, row ``i`` belonging to node ``test.index[i]`` (the
    Planetoid reordering). Missing test ids inside the range (Citeseer) get zero features and,
    as in PyG, class 0. Classes are the argmax of the one-hot labels; Planetoid gives no class
    names, and its class order differs from the LINQS one.
    """
    directory = Path(directory)
    parts = {p: restricted_load(_planetoid_path(directory, name, p))
             for p in ("allx", "ally", "tx", "ty", "graph")}
    index_path = _planetoid_path(directory, name, "test.index")
    test_index = np.loadtxt(index_path, dtype=np.int64, ndmin=1)
    allx, tx = dense_float32(parts["allx"]), dense_float32(parts["tx"])
    ally, ty = np.asarray(parts["ally"]), np.asarray(parts["ty"])
    if len(tx) != len(test_index) or len(ty) != len(test_index):
        raise ValueError(f"{index_path}: {len(test_index)} test ids but tx/ty have "
                         f"{len(tx)}/{len(ty)} rows")
    n = max(len(allx), int(test_index.max()) + 1 if len(test_index) else 0)
    x = np.zeros((n, allx.shape[1]), dtype=np.float32)
    onehot = np.zeros((n, ally.shape[1]), dtype=np.float32)
    x[: len(allx)], onehot[: len(ally)] = allx, ally
    x[test_index], onehot[test_index] = tx, ty
    rows, cols = _graph_dict_edges(parts["graph"], directory / f"ind.{name}.graph")
    check_edges(rows, cols, n, directory / f"ind.{name}.graph")
    return make_graph(x, rows, cols, onehot.argmax(axis=1), name)


def find_planetoid_dir(roots: list[Path], name: str) -> Path | None:
    """The first ``<root>/<name>/planetoid`` directory holding the Planetoid files."""
    parts = ("allx", "ally", "tx", "ty", "graph", "test.index")
    for root in roots:
        directory = root / name / "planetoid"
        if all((directory / f"ind.{name}.{p}").is_file() for p in parts):
            return directory
    return None
