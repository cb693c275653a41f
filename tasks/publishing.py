"""Publishing a night: lineage of tonight's classes against the graph's previous run
(:func:`lineage`, read only) and the run written to DuckDB in one transaction
(:func:`write_run`); :func:`publish` does both.

Neither builds a Python object per node: DuckDB streams the predictions file into
``node_assignments``, and lineage pairs the nights' nodes by a join in DuckDB and compares
8-byte stand-ins for their ids (:func:`node_keys`, :func:`lineage_members`)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def node_keys(index: np.ndarray) -> np.ndarray:
    """Compact stand-ins for node ids: node ``i`` (``0 <= i < 2**32``) as a two-character numpy
    string (``U2``, 8 bytes), bijective and built without a Python object per node.

    Lineage (:func:`tasks.warehouse.lineage.track_lineage`) compares member ids only for
    equality, after turning them into a numpy string array; these keys keep that at 8 bytes per
    node where node id strings would take their longest id's length times 4. Each character is
    a valid code point (``U+10000`` plus 16 bits of ``i``), so a key is an ordinary string if
    ever read."""
    index = np.asarray(index, dtype=np.int64)
    if index.size and (index.min() < 0 or index.max() >= 2**32):
        raise ValueError("node keys cover node indices 0 .. 2**32-1")
    units = np.empty((index.size, 2), dtype=np.uint32)
    units[:, 0] = 0x10000 + (index >> 16)
    units[:, 1] = 0x10000 + (index & 0xFFFF)
    return units.view(np.dtype("U2")).reshape(index.shape)


def _members(keys: np.ndarray, node: np.ndarray, valid: np.ndarray) -> dict[int, np.ndarray]:
    """Class key -> ``node[i]`` of the rows ``i`` of that class (``valid`` rows only), by one
    stable sort; one Python object per class."""
    idx = np.flatnonzero(valid)
    idx = idx[np.argsort(keys[idx], kind="stable")]
    sorted_keys = keys[idx]
    starts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    firsts = np.concatenate([[0], starts]) if idx.size else starts
    return {int(sorted_keys[i]): part for i, part in zip(firsts, np.split(node[idx], starts))}


def lineage_members(warehouse, predictions: pa.Table | str | Path, previous=None):
    """Members per class of the previous run and of tonight's, for
    :func:`tasks.warehouse.lineage.track_lineage`, as :func:`node_keys` (never a Python string
    per node).

    ``predictions``: tonight's table or Parquet file (``node_id``, ``class_key``; keys below 0
    are unassigned and belong to no class); ``previous``: the
    :class:`tasks.warehouse.lineage.PreviousClasses` of the previous run (its ``members`` are
    ignored), or None. The nodes of both runs are paired by one join in DuckDB
    (:meth:`tasks.warehouse.Warehouse.node_pairs`) and node ``i`` of that join gets key ``i``:
    a node keeps one key across the two runs, which is all lineage compares.

    Returns ``(previous with members filled in, or None; current members)``; every class of
    the previous run has an entry, empty when it had no nodes.
    """
    from tasks.warehouse import NO_CLASS

    if previous is None:
        if isinstance(predictions, pa.Table):
            cur = predictions.column("class_key")
        else:
            cur = pq.read_table(predictions, columns=["class_key"]).column("class_key")
        cur = np.asarray(pc.fill_null(cur, -1).to_numpy(), dtype=np.int64)
        return None, _members(cur, node_keys(np.arange(cur.size)), cur >= 0)
    prev, cur = warehouse.node_pairs(previous.run_id, predictions)
    node = node_keys(np.arange(prev.size))
    members = _members(prev, node, prev != NO_CLASS)
    empty = node[:0]
    members = {int(k): members.get(int(k), empty) for k in previous.lineage} | members
    current = _members(cur, node, cur >= 0)  # NO_CLASS is negative too
    return dataclasses.replace(previous, members=members), current


def lineage(warehouse, run: dict, predictions: pa.Table | str | Path, classes: list[dict],
            graph: str, snapshot_date: dt.date, lineage_config=None) -> dict:
    """Lineage of tonight's classes against the graph's previous run (read from DuckDB, nothing
    written). ``predictions`` as in :func:`publish`.

    Returns ``{"run_id", "result": tasks.warehouse.lineage.LineageResult, "classes": classes
    with their lineage_id, "new_tonight": the lineage ids new tonight}`` (the ``emerged_classes``
    rule, :func:`tasks.warehouse.lineage.new_tonight`); :func:`write_run` publishes it."""
    from tasks.warehouse.lineage import new_tonight_ids, track_lineage
    from tasks.warehouse import make_run_id

    if not isinstance(predictions, pa.Table):
        predictions = os.fspath(predictions)
    run_id = make_run_id(graph, snapshot_date, run["content_hash"], run["config_hash"])
    previous = warehouse.previous_run(graph, snapshot_date, with_members=False)
    max_index = warehouse.max_novel_index(graph, before_date=snapshot_date, exclude_run_id=run_id)
    names = {c["class_key"]: c["class_name"] for c in classes}
    previous, current = lineage_members(warehouse, predictions, previous)
    result = track_lineage(previous, current, graph=graph,
                           snapshot_date=snapshot_date, current_names=names,
                           max_novel_index=max_index, config=lineage_config)
    classes = [dict(c, lineage_id=result.lineage_of[c["class_key"]]) for c in classes]
    return {"run_id": run_id, "result": result, "classes": classes,
            "new_tonight": new_tonight_ids(result.rows, classes, snapshot_date)}


def candidate_keys(result) -> list[int]:
    """The class keys of tonight's novel classes waiting for confirmation (lineage status
    ``candidate``) in a :class:`tasks.warehouse.lineage.LineageResult`."""
    return sorted(int(r.class_key) for r in result.rows
                  if r.status == "candidate" and r.class_key is not None)


def write_run(warehouse, run: dict, snapshot_row: dict, predictions: pa.Table | str | Path,
              found: dict, candidates_named: bool = False) -> dict:
    """Everything of one run in one DuckDB transaction, with the lineage ``found`` by
    :func:`lineage`. With ``candidates_named`` (``ORAL_CANDIDATES_NAMED``) the nodes of a
    candidate class are published under the known class the known-class classifier names them
    (the predictions' ``known_key`` column, the night's answer per class) until the class is
    confirmed; the candidate keeps its ``classes`` and ``class_lineage`` rows and its nodes'
    ``class_key``, which the next night's lineage reads. Returns ``{"run_id", "lineage":
    {class_key: lineage_id}, "statuses": {lineage_id: status}}``."""
    if not isinstance(predictions, pa.Table):
        predictions = os.fspath(predictions)
    result = found["result"]
    named = candidate_keys(result) if candidates_named and has_known_key(predictions) else []
    warehouse.publish_run(run | {"run_id": found["run_id"]}, snapshot_row, predictions,
                          found["classes"], result.rows, named_known=named)
    statuses = {r.lineage_id: r.status for r in result.rows}
    return {"run_id": found["run_id"],
            "lineage": {int(k): v for k, v in result.lineage_of.items()}, "statuses": statuses}


def has_known_key(predictions: pa.Table | str) -> bool:
    """Whether the predictions carry the ``known_key`` column (the night's answer per class
    does; a model's own predictions do not), read from the Parquet footer for a file."""
    schema = predictions.schema if isinstance(predictions, pa.Table) else pq.read_schema(predictions)
    return "known_key" in schema.names


def publish(warehouse, run: dict, snapshot_row: dict, predictions: pa.Table | str | Path,
            classes: list[dict], graph: str, snapshot_date: dt.date, lineage_config=None,
            candidates_named: bool = False) -> dict:
    """Lineage against the graph's previous run (:func:`lineage`), then everything in one DuckDB
    transaction (:func:`write_run`); the nightly flow runs the two as tasks of their own.

    ``predictions``: the run's predictions (:func:`predictions_schema`) as an Arrow table or,
    for a large graph, the path of its ``predictions.parquet``, which DuckDB then streams
    (:meth:`tasks.warehouse.Warehouse.publish_run`); lineage pairs the nodes with the previous
    run's in DuckDB (:func:`lineage_members`). Neither builds a Python object per node.
    ``classes`` get their ``lineage_id``.

    ``candidates_named``: as in :func:`write_run`.

    Returns ``{"run_id", "lineage": {class_key: lineage_id}, "statuses": {lineage_id: status}}``.
    """
    found = lineage(warehouse, run, predictions, classes, graph, snapshot_date, lineage_config)
    for c, with_id in zip(classes, found["classes"]):
        c["lineage_id"] = with_id["lineage_id"]
    return write_run(warehouse, run, snapshot_row, predictions, found, candidates_named)
