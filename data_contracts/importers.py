"""Import a raw benchmark dataset (Cora, AmazonPhoto, BlogCatalog or any file of their formats)
as one snapshot, labelled by the ORAL paper's open-world protocol.

Known classes are the ``floor(0.8 * C)`` lowest class ids (or an explicit list); the labelled
nodes are the training and validation nodes of :func:`oral_core.splits.make_split` (70% + 15% of
every known class, sampled with ``seed``); every other node, and every novel-class node, is
unlabelled. ``truth.parquet`` gives every node's true class name.

torch (through ``oral_core``) is imported only inside the functions that load a dataset.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import snapshots as snap
from .synthetic import StaticGraph


def static_snapshot_tables(static: StaticGraph, labelled: np.ndarray, rows: np.ndarray | None = None):
    """``(nodes, edges, truth)`` tables of ``static`` restricted to node positions ``rows``
    (all nodes when ``None``), labels only where ``labelled``. Edges whose endpoints are not
    both in ``rows`` are left out."""
    names = np.asarray(static.class_names, dtype=object)
    if rows is None:
        rows = np.arange(static.num_nodes)
        edges = static.edges
    else:
        inside = np.zeros(static.num_nodes, dtype=bool)
        inside[rows] = True
        edges = static.edges[:, inside[static.edges[0]] & inside[static.edges[1]]]
    ids = static.node_ids
    true = names[static.y[rows]]
    label = np.where(labelled[rows], true, None)
    nodes = snap.nodes_table(ids[rows], static.x[rows], label,
                             feature_names=static.feature_names)
    return (nodes, snap.edges_table(ids[edges[0]], ids[edges[1]]),
            snap.truth_table(ids[rows], true))


def import_dataset(dataset: str | Path, out_root: str | Path, graph: str | None = None,
                   date: str | dt.date | None = None, seed: int = 0,
                   known_classes: Sequence[int] | None = None, data_dir: str | Path | None = None,
                   overwrite: bool = False) -> Path:
    """Write ``dataset`` as the snapshot ``<out_root>/<graph>/snapshot=<date>``; return its folder.

    ``dataset``: a name (``cora``, ``amazonphoto``, ``blogcatalog``) resolved by
    :func:`oral_core.datasets.load_dataset` under ``data_dir``, or a path to a file of a supported
    format. ``graph`` defaults to the canonical dataset name, ``date`` to today. Node ids are the
    dataset's own (Cora's paper ids) when it has them, else ``0..N-1``; class names likewise, else
    ``class_00``, ``class_01``, ... Each undirected edge is written once (``src``, ``dst`` in
    node order). Raises :class:`oral_core.datasets.DatasetNotFound` for a missing dataset,
    ``ValueError`` for a malformed one or bad ``known_classes``, and
    :class:`~data_contracts.snapshots.SnapshotError` if the snapshot exists (unless
    ``overwrite``) or the graph name is invalid.
    """
    from oral_core.datasets import load_dataset
    from oral_core.datasets import canonical_name
    from oral_core.splits import make_split

    name = snap.check_graph_name(graph if graph is not None else canonical_name(str(dataset)))
    final = snap.snapshot_dir(out_root, name, date if date is not None else dt.date.today())
    if final.exists() and not overwrite:
        raise snap.already_exists(f"snapshot {final}")
    loaded = load_dataset(dataset, data_dir)
    static = StaticGraph.from_graph(loaded)
    split = make_split(loaded.y, seed, known_classes=known_classes)
    labelled = (split.train_mask | split.val_mask).numpy()
    nodes, edges, truth = static_snapshot_tables(static, labelled)
    return snap.write_snapshot(out_root, name, snap.snapshot_date(final), nodes, edges, truth,
                               overwrite=overwrite)


def snapshot_summary(path: str | Path) -> dict:
    """Counts of a written snapshot, read from Parquet metadata and two small columns: ``nodes``,
    ``edges``, ``labelled``, ``label_classes`` (distinct labels) and ``classes`` (distinct true
    labels, ``None`` without ``truth.parquet``)."""
    path = Path(path)
    out = {"path": str(path),
           "nodes": pq.read_metadata(path / snap.NODES).num_rows,
           "edges": pq.read_metadata(path / snap.EDGES).num_rows}
    label = pq.read_table(path / snap.NODES, columns=["label"]).column("label")
    out["labelled"] = len(label) - label.null_count
    out["label_classes"] = pc.count_distinct(label).as_py()
    out["classes"] = None
    if (path / snap.TRUTH).exists():
        truth = pq.read_table(path / snap.TRUTH, columns=["true_label"]).column("true_label")
        out["classes"] = pc.count_distinct(truth).as_py()
    return out
