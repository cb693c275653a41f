"""The ORAL model as an MLflow pyfunc: the code file logged with every model ("models from code").

:func:`tasks.registry.runs.log_training_run` passes this file's path as ``python_model`` to
``mlflow.pyfunc.log_model`` and the ``oral_core`` package as ``code_paths``; MLflow copies both
into the logged model. The file must therefore stand alone: it imports only ``oral_core`` (which
has no orchestration imports), torch, numpy, pandas, pyarrow and mlflow, never ``tasks`` or
``data_contracts``, so a model loaded or served where this project is not installed works with
nothing but its own ``requirements.txt``. In-process, :mod:`tasks.registry` imports the same
class, so the pipeline and a served model share one implementation.

Input (a pandas DataFrame; JSON ``dataframe_records``/``dataframe_split`` when served), one of:

- **the graph itself**, one row per node: ``node_id`` (string), ``features`` (list of numbers, the
  width the model was trained on) and ``neighbors`` (list of node ids, optional: an edge from the
  row's node to each; edges are symmetrised, duplicates and self loops dropped; a neighbor that
  is not a row of the input is an error);
- **snapshots**: a column ``snapshot_path``, one row per snapshot folder holding ``nodes.parquet``
  (``node_id``, ``features``) and ``edges.parquet`` (``src``, ``dst``): a local path or any URI
  pyarrow reads (``file://``, ``s3://``, ``gs://``, ``hdfs://``...).

Output: one row per node: ``snapshot_path`` (null for inline nodes), ``node_id``, ``run_id``,
``class_key``, ``lineage_id``, ``class_name``, ``is_novel``, ``confidence`` (see
:class:`ORALPyfunc`).
"""
from __future__ import annotations

import os
from typing import Any

import mlflow.models
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from mlflow.pyfunc import PythonModel

MODEL_ARTIFACT = "oral_model"  # the key of the ORAL model file among the pyfunc's artifacts
OUTPUT_COLUMNS = ("snapshot_path", "node_id", "run_id", "class_key", "lineage_id", "class_name",
                  "is_novel", "confidence")
SNAPSHOT_COLUMN = "snapshot_path"
NODE_COLUMNS = ("node_id", "features", "neighbors")
NODES_FILE, EDGES_FILE = "nodes.parquet", "edges.parquet"


class ORALPyfunc(PythonModel):
    """An ORAL model as an MLflow pyfunc.

    Output: one row per node of every input graph: ``snapshot_path, node_id, run_id, class_key,
    lineage_id, class_name, is_novel, confidence``, the same keys and values as the warehouse's
    ``node_assignments``: ``class_key`` is the model's class number (known ``0..K-1``, novel
    ``K..``, ``-1`` unassigned), ``class_name`` the known class's name and null for a novel or
    unassigned class, ``run_id`` the warehouse run id of the night that trained the model (null
    for a model logged outside the nightly flow). ``lineage_id`` is the class's id across nights,
    as in the warehouse's ``classes`` row of ``(run_id, class_key)``: the nightly flow computes
    lineage before it registers the model and stores tonight's ``{class_key: lineage_id}`` in
    the model's ``model_config`` (``oral_lineage``). It is null for an unassigned node, for a
    class the map does not name (a class with no member on the training night) and for a model
    logged without a lineage map (outside the nightly flow), where
    :meth:`tasks.warehouse.Warehouse.with_lineage` still joins ``(run_id, class_key)`` to it.

    The only artifact is the ORAL model file, read with ``ORALModel.load`` (``weights_only``);
    nothing is unpickled.
    """

    def load_context(self, context):
        from oral_core.inference import ORALModel
        self._model = ORALModel.load(context.artifacts[MODEL_ARTIFACT])
        config = getattr(context, "model_config", None) or {}
        self._run_id = config.get("oral_run_id")
        self._lineage = lineage_map(config.get("oral_lineage"))

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None):
        model = getattr(self, "_model", None)
        if model is None:
            self.load_context(context)
            model = self._model
        run_id = getattr(self, "_run_id", None)
        lineage = getattr(self, "_lineage", None)
        if isinstance(model_input, (str, os.PathLike)):
            model_input = pd.DataFrame({SNAPSHOT_COLUMN: [os.fspath(model_input)]})
        elif not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame({SNAPSHOT_COLUMN: [os.fspath(p) for p in model_input]})
        tables = [assign_graph(model, *graph, run_id=run_id, lineage=lineage)
                  for graph in input_graphs(model_input)]
        if not tables:
            return empty_output()
        return _nulls_as_none(pd.concat([t.to_pandas() for t in tables], ignore_index=True))


def _nulls_as_none(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as objects with ``None`` for null (pandas 3 reads Arrow strings with NaN for
    null, which a served model would write as ``NaN``, not JSON)."""
    for col in ("snapshot_path", "node_id", "run_id", "lineage_id", "class_name"):
        values = frame[col].astype(object)
        frame[col] = values.where(values.notna(), None)
    return frame


def empty_output() -> pd.DataFrame:
    return pd.DataFrame({"snapshot_path": pd.Series([], dtype=object),
                         "node_id": pd.Series([], dtype=object),
                         "run_id": pd.Series([], dtype=object),
                         "class_key": pd.Series([], dtype="int64"),
                         "lineage_id": pd.Series([], dtype=object),
                         "class_name": pd.Series([], dtype=object),
                         "is_novel": pd.Series([], dtype=bool),
                         "confidence": pd.Series([], dtype="float64")})


def _present(frame: pd.DataFrame, column: str) -> bool:
    return column in frame.columns and bool(frame[column].notna().any())


def input_graphs(frame: pd.DataFrame):
    """``(snapshot_path, node_ids, x, edge_index)`` per graph of the input (see the module)."""
    by_path = _present(frame, SNAPSHOT_COLUMN)
    by_nodes = _present(frame, "node_id") or _present(frame, "features")
    if by_path and by_nodes:
        raise ValueError("model input: give either 'snapshot_path' rows or node rows "
                         "('node_id', 'features', 'neighbors'), not both")
    if by_nodes:
        yield (None, *graph_from_nodes(frame))
    elif by_path:
        for path in frame[SNAPSHOT_COLUMN].tolist():
            if path is None or (isinstance(path, float) and np.isnan(path)):
                raise ValueError("model input: a null 'snapshot_path'")
            yield (str(path), *read_snapshot(str(path)))
    elif len(frame):
        raise ValueError("model input needs a column 'snapshot_path' or the columns 'node_id' "
                         "and 'features' (and optionally 'neighbors')")


def graph_from_nodes(frame: pd.DataFrame) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Node rows (``node_id``, ``features``, optional ``neighbors``) to arrays."""
    from oral_core.columns import index_of
    for col in ("node_id", "features"):
        if col not in frame.columns:
            raise ValueError(f"model input: column {col!r} is missing")
    if frame["node_id"].isna().any():
        raise ValueError("model input: null node_id")
    node_ids = pa.array([str(v) for v in frame["node_id"].tolist()], type=pa.string())
    if len(pc.unique(node_ids)) != len(node_ids):
        raise ValueError("model input: node ids repeat")
    rows = [np.asarray(v, dtype=np.float32).reshape(-1) for v in frame["features"].tolist()]
    widths = {r.shape[0] for r in rows}
    if len(widths) > 1:
        raise ValueError(f"model input: feature lists of different lengths {sorted(widths)}")
    width = widths.pop() if widths else 0
    x = np.stack(rows).astype(np.float32) if rows else np.zeros((0, width), dtype=np.float32)
    src: list[int] = []
    dst: list[str] = []
    if "neighbors" in frame.columns:
        for i, nbrs in enumerate(frame["neighbors"].tolist()):
            if nbrs is None or (isinstance(nbrs, float) and np.isnan(nbrs)):
                continue
            for n in list(nbrs):
                src.append(i)
                dst.append(str(n))
    pos = index_of(pa.array(dst, type=pa.string()), node_ids)
    if (pos < 0).any():
        unknown = sorted({d for d, p in zip(dst, pos.tolist()) if p < 0})[:5]
        raise ValueError(f"model input: neighbors name unknown nodes {unknown}")
    edge_index = np.stack([np.asarray(src, dtype=np.int64), pos]).astype(np.int64)
    return node_ids, x, edge_index


def read_snapshot(uri: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """``nodes.parquet`` and ``edges.parquet`` of a snapshot folder (a path or a URI) to arrays.
    Only what assignment needs is read; the pipeline validates snapshots before it scores them."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    from oral_core.columns import feature_matrix, index_of

    if "://" in uri:
        fs, base = pafs.FileSystem.from_uri(uri)
    else:
        fs, base = pafs.LocalFileSystem(), os.path.abspath(uri)
    base = base.rstrip("/")
    nodes = pq.read_table(f"{base}/{NODES_FILE}", filesystem=fs, columns=["node_id", "features"])
    edges = pq.read_table(f"{base}/{EDGES_FILE}", filesystem=fs, columns=["src", "dst"])
    node_ids = nodes.column("node_id").combine_chunks()
    if node_ids.null_count:
        raise ValueError(f"{uri}/{NODES_FILE}: {node_ids.null_count} null node ids")
    if len(pc.unique(node_ids)) != len(node_ids):
        raise ValueError(f"{uri}/{NODES_FILE}: node ids repeat")
    x = feature_matrix(nodes.column("features"), f"{uri}/{NODES_FILE}")
    src = index_of(edges.column("src").combine_chunks(), node_ids)
    dst = index_of(edges.column("dst").combine_chunks(), node_ids)
    unknown = (src < 0) | (dst < 0)
    if unknown.any():
        raise ValueError(f"{uri}/{EDGES_FILE}: {int(unknown.sum())} edges name unknown nodes")
    return node_ids, x, np.stack([src, dst]).astype(np.int64)


def class_names_for(model, class_id: np.ndarray) -> list[str | None]:
    """Known ids -> the model's class names; novel and unassigned ids -> None, as in the
    warehouse (a novel class is named by its lineage id or its label there): the rule of
    :func:`oral_core.inference.class_name_of`, looked up once per distinct id."""
    from oral_core.inference import class_names_of

    return class_names_of(class_id.tolist(), list(model.class_names), model.num_known)


def lineage_map(value) -> dict[int, str] | None:
    """``model_config["oral_lineage"]`` (``{str(class_key): lineage_id}``, JSON keys are text)
    as ``{class_key: lineage_id}``; None when the model has none."""
    if not value:
        return None
    return {int(k): str(v) for k, v in dict(value).items() if v is not None}


def lineage_ids_for(class_id: np.ndarray, lineage: dict[int, str] | None) -> pa.Array:
    """Class numbers -> lineage ids (:func:`lineage_map`), looked up once per distinct id; null
    for ``-1``, for a class the map does not name and when there is no map."""
    if not lineage:
        return pa.nulls(len(class_id), type=pa.string())
    keys, inverse = np.unique(class_id, return_inverse=True)
    ids = pa.array([lineage.get(int(k)) if k >= 0 else None for k in keys.tolist()],
                   type=pa.string())
    return ids.take(pa.array(np.asarray(inverse, dtype=np.int64).reshape(-1)))


def assign_graph(model, snapshot_path: str | None, node_ids: pa.Array, x: np.ndarray,
                 edge_index: np.ndarray, run_id: str | None = None,
                 lineage: dict[int, str] | None = None) -> pa.Table:
    """Symmetrise the edges and assign every node with ``model.assign_raw``: the output columns
    (``run_id``: the model's warehouse run id; ``lineage``: its ``{class_key: lineage_id}``,
    :func:`lineage_map`, or None: null lineage ids)."""
    import torch
    from oral_core.graph import canonical_edges
    from oral_core.columns import writable

    n = len(node_ids)
    # the arrays may be read-only views of Arrow buffers: torch wants writable memory
    edges = torch.from_numpy(writable(edge_index, np.int64))
    features = torch.from_numpy(writable(x, np.float32))
    out = model.assign_raw(features, canonical_edges(edges, n))
    class_id = out.class_id.numpy().astype(np.int64)
    return pa.table({
        "snapshot_path": pa.array([snapshot_path] * n, type=pa.string()),
        "node_id": node_ids,
        "run_id": pa.array([run_id] * n, type=pa.string()),
        "class_key": pa.array(class_id),
        "lineage_id": lineage_ids_for(class_id, lineage),
        "class_name": pa.array(class_names_for(model, class_id), type=pa.string()),
        "is_novel": pa.array(out.is_novel.numpy().astype(bool)),
        "confidence": pa.array(out.confidence.numpy().astype(np.float64)),
    })


def model_signature():
    """Inputs: either ``snapshot_path`` or ``node_id``/``features``/``neighbors`` (all optional
    columns, one of the two forms required); outputs: :data:`OUTPUT_COLUMNS`."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema
    from mlflow.types.schema import Array
    inputs = Schema([ColSpec("string", SNAPSHOT_COLUMN, required=False),
                     ColSpec("string", "node_id", required=False),
                     ColSpec(Array("double"), "features", required=False),
                     ColSpec(Array("string"), "neighbors", required=False)])
    outputs = Schema([ColSpec("string", "snapshot_path", required=False),
                      ColSpec("string", "node_id"),
                      ColSpec("string", "run_id", required=False), ColSpec("long", "class_key"),
                      ColSpec("string", "lineage_id", required=False),
                      ColSpec("string", "class_name", required=False),
                      ColSpec("boolean", "is_novel"), ColSpec("double", "confidence")])
    return ModelSignature(inputs=inputs, outputs=outputs)


def input_example(width: int, nodes: int = 3) -> pd.DataFrame:
    """A tiny graph in the node-rows form: ``nodes`` nodes in a path, features of ``width``."""
    ids = [f"n{i}" for i in range(nodes)]
    feats = [[float((i + j) % 2) for j in range(width)] for i in range(nodes)]
    nbrs = [[ids[i + 1]] if i + 1 < nodes else [] for i in range(nodes)]
    return pd.DataFrame({"node_id": ids, "features": feats, "neighbors": nbrs})


mlflow.models.set_model(ORALPyfunc())
