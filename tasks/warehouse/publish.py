"""Publishing a run: one transaction for its snapshot, run, classes, node assignments and lineage.

One embedded DuckDB file holds every graph's runs. A run is published in **one transaction**
(:meth:`Warehouse.publish_run`): its snapshot row, run row, classes, node assignments and
class-lineage rows appear together or not at all, and publishing the same run again (same graph,
snapshot date, snapshot content and configuration, hence the same ``run_id``) replaces its rows
with identical ones instead of adding duplicates. The snapshot date is part of the run id: a graph
that did not change overnight (a snapshot byte for byte equal to the previous one) is a night of
its own, with its own run, classes, assignments and lineage (``persisting``), and does not replace
the previous night's rows. (Training is reused across such nights: it is keyed on content and
configuration only, :func:`make_training_id`.)

Values always travel as bound parameters or registered Arrow tables, never inside SQL text.

Large runs (millions of nodes) stay memory bounded: ``node_assignments`` is filled by one
``INSERT ... SELECT`` that DuckDB streams from the predictions Parquet file (``read_parquet``,
row group by row group) or from a registered Arrow table, joining each row to its class for the
lineage id and class name inside that same statement; its checks (null and repeated node ids,
class keys without a ``classes`` row) are SQL inside the publishing transaction. No step of
publishing builds a Python object per node.

:class:`Publishing` is mixed into :class:`tasks.warehouse.store.Warehouse` (its connections and
schema setup).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import WarehouseError, rollback_after_error
from .ids import make_run_id, make_training_id
from .schema import (ASSIGNMENT_COLUMNS, CLASS_SCHEMA, LINEAGE_SCHEMA, RUN_COLUMNS,
                     SNAPSHOT_COLUMNS)
from .values import (as_date, as_scalar, as_scores, as_string_list, as_timestamp, as_top_features,
                     utc_now)

log = logging.getLogger(__name__)

_GLOB_CHARS = frozenset("*?[]{}")  # read_parquet would expand these in a path


class Publishing:
    """:meth:`publish_run` and its steps (a mixin of :class:`tasks.warehouse.store.Warehouse`)."""

    def publish_run(self, run: Mapping[str, Any], snapshot: Mapping[str, Any] | None,
                    assignments: pa.Table | str | os.PathLike,
                    classes: Sequence[Mapping[str, Any]] | pa.Table,
                    lineage_rows: Iterable = (), named_known: Iterable[int] = ()) -> str:
        """Publish one run in a single transaction; return its ``run_id``.

        ``run``: ``graph``, ``snapshot_date``, ``content_hash``, ``config_hash`` and any of the
        other ``runs`` columns; ``scores`` (a dict of numbers, e.g. ``{"all": .., "known": ..,
        "novel": ..}``) is stored as a ``MAP(VARCHAR, DOUBLE)`` and its ``all``/``known``/``novel``
        entries fill ``acc_*``.
        ``published_at`` defaults to now (UTC; pass the first publication's time to make a
        rerun byte-identical, or let it record the republication). ``run_id``, when given, must equal
        :func:`make_run_id` of the graph, snapshot date, content hash and configuration hash.

        ``snapshot``: the ``snapshots`` columns (graph, date and hash default to the run's).
        ``assignments``: the per-node rows, as an Arrow table or the path of a Parquet file
        (e.g. the run's ``predictions.parquet``), with columns ``node_id`` (string or integer),
        ``class_key``, ``is_novel``, ``confidence`` (other columns are ignored); lineage id and
        class name come from ``classes``, and every class key must have a ``classes`` row. A
        Parquet file is streamed by DuckDB row group by row group (memory bounded by the row
        groups in flight, not by the number of nodes); a table is scanned in place, no copy.
        ``classes``: dicts or an Arrow table with the ``classes`` columns: ``top_features`` a
        list of mappings with ``name`` (or ``feature``), ``lift``, ``class_mean`` (or their JSON
        text), ``exemplars`` a list of node ids.
        ``lineage_rows``: :class:`tasks.warehouse.lineage.LineageRow` objects or dicts with their fields.
        ``named_known``: class keys (novel classes waiting for confirmation, ``candidate``)
        whose nodes are published under the known class of the assignments' ``known_key``
        column (its lineage id and name, ``is_novel`` false) while ``class_key`` keeps the class
        they sit in (``ORAL_CANDIDATES_NAMED``); a node whose known class has no ``classes`` row
        in this run stays under its own class.

        The run's previous rows are deleted inside the same transaction, so a rerun leaves
        exactly the rows of one publication (a row of the same graph, date, content and
        configuration published under the older run id without the date,
        :func:`make_training_id`, is replaced too); runs of other dates are never touched. On
        any error (a refused assignment row included: null or repeated node ids, class keys
        without a ``classes`` row) everything is rolled back.
        """
        run_row = self._run_row(run)
        run_id = run_row["run_id"]
        snap_row = self._snapshot_row(run_row, snapshot) if snapshot is not None else None
        class_table = self._class_table(classes)
        named_known = sorted({int(k) for k in named_known})
        source = AssignmentSource.of(assignments, ASSIGNMENT_COLUMNS | (
            {"known_key"} if named_known else set()))
        lineage_table = self._lineage_table(lineage_rows)
        self._check_lineage(class_table, lineage_table)
        with self._connection() as con, contextlib.ExitStack() as registered:
            self._ensure_schema(con)
            # Arrow tables are registered outside the transaction (an aborted transaction
            # refuses even the unregistering) and unregistered after COMMIT or ROLLBACK
            for name, table in (("_oral_classes", class_table), ("_oral_lineage", lineage_table)):
                registered.enter_context(self._registered(con, name, table))
            registered.enter_context(source.registered(con))
            con.execute("BEGIN TRANSACTION")
            try:
                self._delete_run(con, run_id)
                self._delete_legacy_run(con, run_row)
                if snap_row is not None:
                    self._insert_snapshot(con, snap_row)
                self._insert_row(con, "runs", run_row)
                self._insert_classes(con, run_id)
                nodes = self._insert_assignments(con, run_id, source, named_known)
                self._insert_lineage(con, run_row)
                con.execute("COMMIT")
            except BaseException as err:
                if rollback_after_error(con, err, f"publishing run {run_id}"):
                    log.error("publishing run %s of %r failed; rolled back", run_id, run_row["graph"])
                raise
        log.info("published run %s of %r (%s): %d nodes, %d classes, %d lineage rows", run_id,
                 run_row["graph"], run_row["snapshot_date"], nodes, class_table.num_rows,
                 lineage_table.num_rows)
        return run_id

    @staticmethod
    def _run_row(run: Mapping[str, Any]) -> dict:
        extra = set(run) - set(RUN_COLUMNS)
        if extra:
            raise WarehouseError(f"unknown run fields {sorted(extra)}; the runs table has {RUN_COLUMNS}")
        for key in ("graph", "snapshot_date", "content_hash", "config_hash"):
            if run.get(key) in (None, ""):
                raise WarehouseError(f"run field {key!r} is required")
        row = {key: as_scalar(run.get(key)) for key in RUN_COLUMNS}
        for key in ("graph", "content_hash", "config_hash", "code_version", "prefect_flow_run_id",
                    "mlflow_run_id", "model_name", "model_version", "device", "run_id",
                    "start_mode", "start_reason", "warm_from_run_id", "warm_from_version",
                    "gate_status", "gate_reason"):
            row[key] = None if row[key] is None else str(row[key])
        row["snapshot_date"] = as_date(run["snapshot_date"])
        expected = make_run_id(row["graph"], row["snapshot_date"], row["content_hash"],
                               row["config_hash"])
        if row["run_id"] is not None and row["run_id"] != expected:
            raise WarehouseError(f"run_id {row['run_id']!r} is not the hash of graph, snapshot "
                                 f"date, content hash and configuration hash ({expected!r})")
        row["run_id"] = expected
        row["published_at"] = as_timestamp(run.get("published_at")) or utc_now()
        scores = run.get("scores")
        if isinstance(scores, Mapping):
            for part in ("all", "known", "novel"):
                if row[f"acc_{part}"] is None and scores.get(part) is not None:
                    row[f"acc_{part}"] = as_scalar(scores[part])
        row["scores"] = as_scores(scores)
        return row

    @staticmethod
    def _snapshot_row(run_row: dict, snapshot: Mapping[str, Any]) -> dict:
        extra = set(snapshot) - set(SNAPSHOT_COLUMNS)
        if extra:
            raise WarehouseError(f"unknown snapshot fields {sorted(extra)}; the snapshots table "
                                 f"has {SNAPSHOT_COLUMNS}")
        row = {key: as_scalar(snapshot.get(key)) for key in SNAPSHOT_COLUMNS}
        for key in ("graph", "snapshot_date", "content_hash"):
            given = as_date(row[key]) if key == "snapshot_date" else row[key]
            if given is not None and given != run_row[key]:
                raise WarehouseError(f"snapshot {key} {given!r} differs from the run's {run_row[key]!r}")
            row[key] = run_row[key]
        row["path"] = None if row["path"] is None else str(row["path"])
        row["validated_at"] = as_timestamp(snapshot.get("validated_at"))
        return row

    @staticmethod
    def _class_table(classes) -> pa.Table:
        if isinstance(classes, pa.Table):
            rows = classes.to_pylist()
        else:
            rows = [dict(c) for c in classes]
        names = set(CLASS_SCHEMA.names)
        cols: dict[str, list] = {name: [] for name in CLASS_SCHEMA.names}
        for row in rows:
            extra = set(row) - names
            if extra:
                raise WarehouseError(f"unknown class fields {sorted(extra)}; the classes table "
                                     f"has {CLASS_SCHEMA.names}")
            for key in ("class_key", "lineage_id", "is_novel", "size"):
                if row.get(key) is None:
                    raise WarehouseError(f"class field {key!r} is required (class {row})")
            for name in CLASS_SCHEMA.names:
                value = row.get(name)
                if name == "top_features":
                    value = as_top_features(value, f"class {row.get('class_key')} top_features")
                elif name == "exemplars":
                    value = as_string_list(value, f"class {row.get('class_key')} exemplars")
                else:
                    value = as_scalar(value)
                cols[name].append(value)
        table = pa.table(cols, schema=CLASS_SCHEMA)
        if pc.count_distinct(table["class_key"]).as_py() != table.num_rows:
            raise WarehouseError("class keys repeat in classes")
        if pc.count_distinct(table["lineage_id"]).as_py() != table.num_rows:
            raise WarehouseError("lineage ids repeat in classes")
        return table

    @staticmethod
    def _lineage_table(rows: Iterable) -> pa.Table:
        cols: dict[str, list] = {name: [] for name in LINEAGE_SCHEMA.names}
        for row in rows:
            row = dataclasses.asdict(row) if dataclasses.is_dataclass(row) else dict(row)
            for name in LINEAGE_SCHEMA.names:
                value = row.get(name)
                if name == "parents":
                    value = as_string_list(value or [],
                                           f"lineage row {row.get('lineage_id')} parents")
                elif name in ("first_seen", "last_seen"):
                    value = as_date(value)
                else:
                    value = as_scalar(value)
                cols[name].append(value)
        return pa.table(cols, schema=LINEAGE_SCHEMA)

    @staticmethod
    def _check_lineage(class_table: pa.Table, lineage_table: pa.Table) -> None:
        """Every lineage row of a current class names that class's lineage id (per class and
        lineage row: both tables are small)."""
        of_class = dict(zip(class_table["class_key"].to_pylist(), class_table["lineage_id"].to_pylist()))
        for key, lin in zip(lineage_table["class_key"].to_pylist(), lineage_table["lineage_id"].to_pylist()):
            if key is not None and of_class.get(key) != lin:
                raise WarehouseError(f"lineage row {lin!r} names class {key}, whose lineage id in "
                                     f"classes is {of_class.get(key)!r}")

    @staticmethod
    def _delete_run(con, run_id: str) -> None:
        for table in ("node_assignments", "classes", "class_lineage", "runs"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    @classmethod
    def _delete_legacy_run(cls, con, run_row: dict) -> None:
        """Delete this run's rows published under the run id of before the snapshot date was
        part of it (:func:`make_training_id`), when that run is of this very date: a rerun of
        a night published by older code replaces it instead of adding a second run. The same
        id on another date is another night's run (published before the fix), left alone."""
        legacy = make_training_id(run_row["graph"], run_row["content_hash"], run_row["config_hash"])
        found = con.execute("SELECT count(*) FROM runs WHERE run_id = ? AND graph = ? "
                            "AND snapshot_date = ?",
                            [legacy, run_row["graph"], run_row["snapshot_date"]]).fetchall()
        if found[0][0]:
            cls._delete_run(con, legacy)

    def _insert_snapshot(self, con, row: dict) -> None:
        con.execute("DELETE FROM snapshots WHERE graph = ? AND snapshot_date = ? AND content_hash = ?",
                    [row["graph"], row["snapshot_date"], row["content_hash"]])
        self._insert_row(con, "snapshots", row)

    @staticmethod
    def _insert_classes(con, run_id: str) -> None:
        con.execute(f"INSERT INTO classes (run_id, {', '.join(CLASS_SCHEMA.names)}) "
                    f"SELECT ?, {', '.join(CLASS_SCHEMA.names)} FROM _oral_classes", [run_id])

    @staticmethod
    def _insert_assignments(con, run_id: str, source: "AssignmentSource",
                            named_known: Sequence[int] = ()) -> int:
        """One streaming ``INSERT ... SELECT`` from the source, joined to this run's classes (in
        the open transaction), then the checks in SQL: a row lost to the join (null node id, or
        a class key without a classes row) or a node id inserted twice raises
        :class:`WarehouseError`, which rolls the transaction back. Returns the rows inserted.
        ``named_known``: class keys whose nodes take the lineage id and name of the known class
        in their ``known_key`` (:meth:`publish_run`)."""
        if named_known:
            inserted = con.execute(INSERT_NAMED_ASSIGNMENTS,
                                   [run_id, run_id, [int(k) for k in named_known]]).fetchall()[0][0]
        else:
            inserted = con.execute(INSERT_ASSIGNMENTS, [run_id, run_id]).fetchall()[0][0]
        if inserted != source.num_rows:
            nulls = con.execute("SELECT count(*) FROM _oral_assignments a "
                                "WHERE a.node_id IS NULL").fetchall()[0][0]
            if nulls:
                raise WarehouseError(f"assignments hold null node ids ({nulls} rows)")
            bad = con.execute(
                "SELECT DISTINCT a.class_key FROM _oral_assignments a WHERE NOT EXISTS "
                "(SELECT 1 FROM classes c WHERE c.run_id = ? AND c.class_key = a.class_key) "
                "ORDER BY 1 NULLS FIRST LIMIT 5", [run_id]).fetchall()
            raise WarehouseError(f"assignments name class keys with no classes row: "
                                 f"{[r[0] for r in bad]} ({source.num_rows - inserted} rows)")
        repeated = con.execute(
            "SELECT node_id FROM node_assignments WHERE run_id = ? GROUP BY node_id "
            "HAVING count(*) > 1 ORDER BY node_id LIMIT 5", [run_id]).fetchall()
        if repeated:
            raise WarehouseError(f"node ids repeat in assignments: {[r[0] for r in repeated]}")
        return int(inserted)

    @staticmethod
    def _insert_lineage(con, run_row: dict) -> None:
        con.execute(f"INSERT INTO class_lineage (graph, run_id, snapshot_date, "
                    f"{', '.join(LINEAGE_SCHEMA.names)}) SELECT ?, ?, ?, "
                    f"{', '.join(LINEAGE_SCHEMA.names)} FROM _oral_lineage",
                    [run_row["graph"], run_row["run_id"], run_row["snapshot_date"]])


#: a run's assignments into ``node_assignments``: each node under its class's lineage id and name
INSERT_ASSIGNMENTS = (
    "INSERT INTO node_assignments "
    "(run_id, node_id, class_key, lineage_id, class_name, is_novel, confidence) "
    "SELECT ?, CAST(a.node_id AS VARCHAR), c.class_key, c.lineage_id, c.class_name, "
    "CAST(a.is_novel AS BOOLEAN), CAST(a.confidence AS DOUBLE) FROM _oral_assignments a "
    "JOIN classes c ON c.run_id = ? AND c.class_key = a.class_key "
    "WHERE a.node_id IS NOT NULL")
#: the same, the nodes of the class keys in the third parameter (a list) under the lineage id
#: and name of the known class in their ``known_key`` where it has a classes row
#: (``ORAL_CANDIDATES_NAMED``)
INSERT_NAMED_ASSIGNMENTS = (
    "INSERT INTO node_assignments "
    "(run_id, node_id, class_key, lineage_id, class_name, is_novel, confidence) "
    "SELECT ?, CAST(a.node_id AS VARCHAR), c.class_key, COALESCE(k.lineage_id, c.lineage_id), "
    "COALESCE(k.class_name, c.class_name), CAST(a.is_novel AS BOOLEAN) AND k.class_key IS NULL, "
    "CAST(a.confidence AS DOUBLE) FROM _oral_assignments a "
    "JOIN classes c ON c.run_id = ? AND c.class_key = a.class_key "
    "LEFT JOIN classes k ON k.run_id = c.run_id AND NOT k.is_novel "
    "AND k.class_key = a.known_key AND list_contains(?, a.class_key) "
    "WHERE a.node_id IS NOT NULL")


class AssignmentSource:
    """Per-node assignment rows for DuckDB to stream, registered on a connection as the
    temporary view ``_oral_assignments``: a Parquet file as DuckDB's own ``read_parquet``
    relation (row group by row group; the path is passed as a value, never inside SQL text),
    or an Arrow table (scanned in place). A file whose path holds pattern characters
    (``*?[]{}``), which ``read_parquet`` would expand, is registered as a pyarrow dataset over
    that one file instead."""

    NAME = "_oral_assignments"

    def __init__(self, table, path: str | None, num_rows: int):
        self.table, self.path, self.num_rows = table, path, num_rows

    @classmethod
    def of(cls, assignments, columns: Iterable[str] = ASSIGNMENT_COLUMNS) -> "AssignmentSource":
        """Check the columns (from the Parquet footer alone for a file) and count the rows."""
        if isinstance(assignments, (pa.Table, pa.RecordBatch)):
            table = pa.Table.from_batches([assignments]) if isinstance(
                assignments, pa.RecordBatch) else assignments
            schema, path, rows = table.schema, None, table.num_rows
        elif isinstance(assignments, (str, os.PathLike)):
            path = os.fspath(assignments)
            try:
                meta = pq.read_metadata(path)
            except (OSError, pa.ArrowException) as err:
                raise WarehouseError(f"cannot read the assignments file {path}: {err}") from err
            schema, table, rows = meta.schema.to_arrow_schema(), None, meta.num_rows
            if _GLOB_CHARS & set(path):  # read_parquet would take it for a pattern
                import pyarrow.dataset as ds
                table = ds.dataset(path, format="parquet")
        else:
            raise WarehouseError(f"assignments must be an Arrow table or the path of a Parquet "
                                 f"file, got {type(assignments).__name__}")
        missing = set(columns) - set(schema.names)
        if missing:
            raise WarehouseError(f"assignments lack columns {sorted(missing)}")
        return cls(table, path, int(rows))

    @contextlib.contextmanager
    def registered(self, con):
        """``_oral_assignments`` on ``con`` for the duration (register and unregister outside
        any transaction)."""
        con.register(self.NAME, con.read_parquet(self.path) if self.table is None else self.table)
        try:
            yield
        finally:
            con.unregister(self.NAME)
