"""The per-node predictions file (``predictions.parquet``, columns :func:`predictions_schema`).

Per-node outputs stay in numpy and Arrow buffers, never one Python object per node, so a graph
of millions of nodes is handled in bounded memory: :func:`write_predictions` writes the file in
row groups of :data:`CHUNK_ROWS` rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from data_contracts import snapshots as snap


#: Rows per row group of the predictions Parquet (and per Arrow chunk built to write one).
CHUNK_ROWS = 1_000_000


def as_numpy(values) -> np.ndarray:
    """A torch tensor (any device) or array-like as a numpy array (no copy for CPU data)."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def as_arrow(values) -> pa.Array | pa.ChunkedArray:
    return values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(as_numpy(values))


def predictions_schema(node_id_type: pa.DataType, known_key: bool = False) -> pa.Schema:
    """The columns of ``predictions.parquet``: ``node_id`` (the snapshot's type), ``class_key``
    (int64; known ``0..K-1``, novel ``K..``), ``class_name`` (the known class's name, null for a
    novel class), ``is_novel``, ``confidence`` (float64); with ``known_key`` (the night's answer
    per class, ``answer.parquet``) also ``known_key`` (int64): the known class the known-class
    classifier names for every node, novel ones included (where a candidate's nodes are
    published while it waits for confirmation, ``ORAL_CANDIDATES_NAMED``)."""
    fields = [("node_id", node_id_type), ("class_key", pa.int64()),
              ("class_name", pa.string()), ("is_novel", pa.bool_()),
              ("confidence", pa.float64())]
    return pa.schema(fields + ([("known_key", pa.int64())] if known_key else []))


def _predictions_chunk(node_ids, class_id: np.ndarray, confidence: np.ndarray, num_known: int,
                       names: pa.Array, known_key: np.ndarray | None = None) -> pa.Table:
    """The predictions rows of one chunk. ``names``: the known class names plus a final null;
    each row's name is taken from it by index (Arrow ``take``), never a Python string per row."""
    class_id = np.asarray(class_id).astype(np.int64, copy=False)
    known = (class_id >= 0) & (class_id < min(num_known, len(names) - 1))
    name_idx = np.where(known, class_id, len(names) - 1)
    node_ids = as_arrow(node_ids)
    columns = {
        "node_id": node_ids,
        "class_key": pa.array(class_id),
        "class_name": names.take(pa.array(name_idx)),
        "is_novel": pa.array(class_id >= num_known),
        "confidence": pa.array(np.asarray(confidence).astype(np.float64, copy=False)),
    }
    if known_key is not None:
        columns["known_key"] = pa.array(np.asarray(known_key).astype(np.int64, copy=False))
    return pa.table(columns, schema=predictions_schema(node_ids.type, known_key is not None))


def _class_name_lookup(class_names) -> pa.Array:
    return pa.array(list(class_names) + [None], type=pa.string())


def predictions_table(snapshot: snap.Snapshot, class_id, confidence, num_known: int) -> pa.Table:
    """Every node's prediction as one Arrow table (columns: :func:`predictions_schema`). For a
    large graph write them with :func:`write_predictions` instead, chunk by chunk."""
    return _predictions_chunk(snapshot.node_ids, as_numpy(class_id), as_numpy(confidence), num_known,
                              _class_name_lookup(snapshot.class_names))


def write_predictions(path: str | Path, node_ids, class_id, confidence, num_known: int,
                      class_names, chunk_size: int = CHUNK_ROWS, known_key=None) -> Path:
    """Write the per-node predictions to the Parquet file ``path``, atomically, one row group
    of at most ``chunk_size`` rows at a time.

    ``node_ids``: an Arrow array (the snapshot's) or a numpy array; ``class_id`` and
    ``confidence``: numpy arrays or torch tensors, one entry per node; ``class_names``: the
    known classes' names; ``known_key`` (optional, one per node): the ``known_key`` column
    (:func:`predictions_schema`). Only one chunk's Arrow columns exist at a time (slices of the inputs,
    no Python object per node), and the file reads back as :func:`predictions_table` would
    build it (same columns, types and rows). The file is written under a temporary name and
    renamed into place (:func:`data_contracts.snapshots.write_file_atomically`): a failure
    leaves the previous file or none."""
    chunk_size = int(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    class_id, confidence = as_numpy(class_id), as_numpy(confidence)
    known_key = None if known_key is None else as_numpy(known_key)
    if not isinstance(node_ids, (pa.Array, pa.ChunkedArray)):
        node_ids = as_numpy(node_ids)
    n = len(node_ids)
    if class_id.shape != (n,) or confidence.shape != (n,):
        raise ValueError(f"one class id and one confidence per node: {n} nodes, class_id "
                         f"{class_id.shape}, confidence {confidence.shape}")
    if known_key is not None and known_key.shape != (n,):
        raise ValueError(f"one known key per node: {n} nodes, known_key {known_key.shape}")
    names = _class_name_lookup(class_names)
    if isinstance(node_ids, (pa.Array, pa.ChunkedArray)):
        node_type = node_ids.type
    elif node_ids.dtype.kind in "OUS":
        node_type = pa.array(node_ids[:1]).type if n else pa.string()
    else:
        node_type = pa.from_numpy_dtype(node_ids.dtype)
    schema = predictions_schema(node_type, known_key is not None)

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, schema) as writer:
            for start in range(0, n, chunk_size):
                stop = min(n, start + chunk_size)
                chunk = _predictions_chunk(node_ids[start:stop], class_id[start:stop],
                                           confidence[start:stop], num_known, names,
                                           None if known_key is None else known_key[start:stop])
                writer.write_table(chunk, row_group_size=chunk_size)
    return snap.write_file_atomically(path, write)
