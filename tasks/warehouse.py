"""The DuckDB warehouse: what each nightly run publishes, and the views analysts query.

One embedded DuckDB file holds every graph's runs. A run is published in **one transaction**
(:meth:`Warehouse.publish_run`): its snapshot row, run row, classes, node assignments and
class-lineage rows appear together or not at all, and publishing the same run again (same graph,
snapshot date, snapshot content and configuration, hence the same ``run_id``) replaces its rows
with identical ones instead of adding duplicates. The snapshot date is part of the run id: a graph
that did not change overnight (a snapshot byte for byte equal to the previous one) is a night of
its own, with its own run, classes, assignments and lineage (``persisting``), and does not replace
the previous night's rows. (Training is reused across such nights: it is keyed on content and
configuration only, :func:`make_training_id`.)

DuckDB lets one process write a file at a time; a second process that opens it (even read-only)
fails at once with ``Could not set lock on file``. :meth:`Warehouse.connect` therefore retries
with exponential backoff for a bounded, configurable time and then raises
:class:`WarehouseLocked` naming the file. Connections are opened per operation and closed after
it, so the file is locked only while the pipeline is actually reading or writing (hold one
connection for a series of operations with ``with Warehouse(path) as wh: ...``).

Tables (``meta`` holds ``schema_version``)::

    snapshots        graph, snapshot_date, content_hash (PK together), path, nodes, edges,
                     labelled_nodes, known_classes, validation_passed, validated_at
    runs             run_id (PK), graph, snapshot_date, content_hash, config_hash, code_version,
                     prefect_flow_run_id, mlflow_run_id, model_name, model_version, device,
                     epochs, val_accuracy, num_classes, num_known, num_novel, num_nodes,
                     train_seconds, published_at, acc_all, acc_known, acc_novel,
                     scores MAP(VARCHAR, DOUBLE)
    classes          run_id, class_key (PK together), lineage_id, class_name, is_novel, size,
                     mean_confidence,
                     top_features STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[],
                     exemplars VARCHAR[] (node ids), purity, majority_true_label
    node_assignments run_id, node_id, class_key, lineage_id, class_name, is_novel, confidence
                     (unique per run_id and node_id; enforced by publish_run, not by an index,
                     which would cost memory on hundreds of millions of rows)
    class_lineage    graph, lineage_id, run_id (PK: run_id, lineage_id), snapshot_date,
                     class_key, status, size, previous_size, parents VARCHAR[], merged_into,
                     first_seen, last_seen
    class_labels     graph, lineage_id, name, labelled_by, labelled_at: the names people gave
                     classes (:meth:`Warehouse.label_class`); every label is kept, the latest
                     of a (graph, lineage id) counts

``lineage_id`` is the one key of a class across tables and nights (``known:<name>`` or
``<graph>:novel:<n>``); ``class_key`` is the model's class number within one run (join on
``(run_id, class_key)``).

Views: ``latest_runs`` (each graph's latest run: latest snapshot date, then latest published),
``latest_labels`` (the current label of each graph's lineage id), ``latest_classes`` (the
classes of each graph's latest run with their lineage status and ``label``),
``emerged_classes`` (those of them that emerged in that run), ``class_timeline`` (one row per
graph, lineage id and snapshot date: size, status and ``label``; when several configurations
ran on one date, the latest published run of that date counts).

Schema version 1 kept ``scores``, ``top_features``, ``exemplars`` and ``parents`` as JSON
text; :meth:`Warehouse.ensure_schema` (run by every publish, label and analyst query) converts
such a warehouse in place, in one transaction (:data:`MIGRATIONS`).

Values always travel as bound parameters or registered Arrow tables, never inside SQL text.

Large runs (millions of nodes) stay memory bounded: ``node_assignments`` is filled by one
``INSERT ... SELECT`` that DuckDB streams from the predictions Parquet file (``read_parquet``,
row group by row group) or from a registered Arrow table, joining each row to its class for the
lineage id and class name inside that same statement; its checks (null and repeated node ids,
class keys without a ``classes`` row) are SQL inside the publishing transaction. No step of
publishing builds a Python object per node.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .lineage import STATUSES, PreviousClasses

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
MEMORY = ":memory:"


class WarehouseError(RuntimeError):
    """A warehouse operation that cannot be done; the message says what and where."""


class WarehouseLocked(WarehouseError):
    """The DuckDB file stayed locked by another process for the whole allowed wait."""


class QueryRefused(WarehouseError, ValueError):
    """``Warehouse.query`` only runs one read-only statement."""


class LabelRefused(WarehouseError, ValueError):
    """``Warehouse.label_class`` cannot store the label as asked (nothing is written)."""


class UnknownLineage(LabelRefused, LookupError):
    """A lineage id that no published run of the graph has (``Warehouse.label_class``)."""


# ------------------------------------------------------------------------------------ schema
_STATUS_LIST = ", ".join(f"'{s}'" for s in STATUSES)  # constants of this module, not user values

TABLES = [
    """CREATE TABLE IF NOT EXISTS meta (
        key VARCHAR PRIMARY KEY,
        value VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        graph VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        content_hash VARCHAR NOT NULL,
        path VARCHAR,
        nodes BIGINT,
        edges BIGINT,
        labelled_nodes BIGINT,
        known_classes INTEGER,
        validation_passed BOOLEAN,
        validated_at TIMESTAMP,
        PRIMARY KEY (graph, snapshot_date, content_hash))""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY,
        graph VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        content_hash VARCHAR NOT NULL,
        config_hash VARCHAR NOT NULL,
        code_version VARCHAR,
        prefect_flow_run_id VARCHAR,
        mlflow_run_id VARCHAR,
        model_name VARCHAR,
        model_version VARCHAR,
        device VARCHAR,
        epochs INTEGER,
        val_accuracy DOUBLE,
        num_classes INTEGER,
        num_known INTEGER,
        num_novel INTEGER,
        num_nodes BIGINT,
        train_seconds DOUBLE,
        published_at TIMESTAMP NOT NULL,
        acc_all DOUBLE,
        acc_known DOUBLE,
        acc_novel DOUBLE,
        scores MAP(VARCHAR, DOUBLE),
        start_mode VARCHAR,
        start_reason VARCHAR,
        warm_from_run_id VARCHAR,
        warm_from_version VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS classes (
        run_id VARCHAR NOT NULL,
        class_key INTEGER NOT NULL,
        lineage_id VARCHAR NOT NULL,
        class_name VARCHAR,
        is_novel BOOLEAN NOT NULL,
        size BIGINT NOT NULL,
        mean_confidence DOUBLE,
        top_features STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[],
        exemplars VARCHAR[],
        purity DOUBLE,
        majority_true_label VARCHAR,
        PRIMARY KEY (run_id, class_key))""",
    """CREATE TABLE IF NOT EXISTS node_assignments (
        run_id VARCHAR NOT NULL,
        node_id VARCHAR NOT NULL,
        class_key INTEGER,
        lineage_id VARCHAR,
        class_name VARCHAR,
        is_novel BOOLEAN NOT NULL,
        confidence DOUBLE)""",
    f"""CREATE TABLE IF NOT EXISTS class_lineage (
        graph VARCHAR NOT NULL,
        lineage_id VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL,
        class_key INTEGER,
        status VARCHAR NOT NULL CHECK (status IN ({_STATUS_LIST})),
        size BIGINT NOT NULL,
        previous_size BIGINT,
        parents VARCHAR[] NOT NULL,
        merged_into VARCHAR,
        first_seen DATE,
        last_seen DATE,
        PRIMARY KEY (run_id, lineage_id))""",
    """CREATE TABLE IF NOT EXISTS class_labels (
        graph VARCHAR NOT NULL,
        lineage_id VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        labelled_by VARCHAR NOT NULL,
        labelled_at TIMESTAMP NOT NULL)""",
]

#: In-place conversions from an older schema version (the key) to the next, run in the schema
#: transaction of :meth:`Warehouse.ensure_schema` (all or nothing). 1 -> 2: the JSON text
#: columns become typed (a ``top_features`` entry's ``feature`` key, as version 1 wrote it,
#: becomes ``name``; a score that is not a number becomes NULL: the ``acc_*`` columns keep
#: the accuracies).
MIGRATIONS = {
    1: [
        """ALTER TABLE runs ALTER scores TYPE MAP(VARCHAR, DOUBLE)
            USING TRY_CAST(CAST(scores AS JSON) AS MAP(VARCHAR, DOUBLE))""",
        """ALTER TABLE classes ALTER top_features
            TYPE STRUCT(name VARCHAR, lift DOUBLE, class_mean DOUBLE)[]
            USING list_transform(CAST(top_features AS JSON[]), lambda f: struct_pack(
                name := coalesce(f ->> 'name', f ->> 'feature'),
                lift := TRY_CAST(f ->> 'lift' AS DOUBLE),
                class_mean := TRY_CAST(f ->> 'class_mean' AS DOUBLE)))""",
        """ALTER TABLE classes ALTER exemplars TYPE VARCHAR[]
            USING CAST(CAST(exemplars AS JSON) AS VARCHAR[])""",
        """ALTER TABLE class_lineage ALTER parents TYPE VARCHAR[]
            USING CAST(CAST(parents AS JSON) AS VARCHAR[])""",
    ],
    # 2 -> 3: how each run's training started (warm starts, issue 18.1); NULL for older runs
    2: [
        "ALTER TABLE runs ADD COLUMN start_mode VARCHAR",
        "ALTER TABLE runs ADD COLUMN start_reason VARCHAR",
        "ALTER TABLE runs ADD COLUMN warm_from_run_id VARCHAR",
        "ALTER TABLE runs ADD COLUMN warm_from_version VARCHAR",
    ],
}

VIEWS = [
    """CREATE OR REPLACE VIEW latest_runs AS
        SELECT * FROM runs
        QUALIFY row_number() OVER (PARTITION BY graph
                                   ORDER BY snapshot_date DESC, published_at DESC, run_id DESC) = 1""",
    """CREATE OR REPLACE VIEW latest_labels AS
        SELECT graph, lineage_id, name AS label, labelled_by, labelled_at FROM class_labels
        QUALIFY row_number() OVER (PARTITION BY graph, lineage_id
                                   ORDER BY labelled_at DESC, rowid DESC) = 1""",
    """CREATE OR REPLACE VIEW latest_classes AS
        SELECT r.graph, r.snapshot_date, r.run_id, c.lineage_id, lb.label, c.class_key,
               c.class_name, c.is_novel, c.size, c.mean_confidence, l.status, l.previous_size,
               l.parents, l.first_seen, l.last_seen, c.top_features, c.exemplars, c.purity,
               c.majority_true_label
        FROM latest_runs r
        JOIN classes c ON c.run_id = r.run_id
        LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id
        LEFT JOIN latest_labels lb ON lb.graph = r.graph AND lb.lineage_id = c.lineage_id""",
    """CREATE OR REPLACE VIEW emerged_classes AS
        SELECT * FROM latest_classes WHERE status = 'emerged'""",
    """CREATE OR REPLACE VIEW class_timeline AS
        WITH day_runs AS (
            SELECT run_id FROM runs
            QUALIFY row_number() OVER (PARTITION BY graph, snapshot_date
                                       ORDER BY published_at DESC, run_id DESC) = 1)
        SELECT l.graph, l.lineage_id, lb.label, l.snapshot_date, l.status, l.size,
               l.previous_size, l.class_key, c.class_name, c.is_novel, c.mean_confidence,
               l.parents, l.merged_into, l.first_seen, l.last_seen, l.run_id
        FROM class_lineage l
        JOIN day_runs d ON d.run_id = l.run_id
        LEFT JOIN classes c ON c.run_id = l.run_id AND c.class_key = l.class_key
        LEFT JOIN latest_labels lb ON lb.graph = l.graph AND lb.lineage_id = l.lineage_id""",
]

RUN_COLUMNS = ["run_id", "graph", "snapshot_date", "content_hash", "config_hash", "code_version",
               "prefect_flow_run_id", "mlflow_run_id", "model_name", "model_version", "device",
               "epochs", "val_accuracy", "num_classes", "num_known", "num_novel", "num_nodes",
               "train_seconds", "published_at", "acc_all", "acc_known", "acc_novel", "scores",
               "start_mode", "start_reason", "warm_from_run_id", "warm_from_version"]
SNAPSHOT_COLUMNS = ["graph", "snapshot_date", "content_hash", "path", "nodes", "edges",
                    "labelled_nodes", "known_classes", "validation_passed", "validated_at"]
TOP_FEATURE = pa.struct([("name", pa.string()), ("lift", pa.float64()),
                         ("class_mean", pa.float64())])
CLASS_SCHEMA = pa.schema([
    ("class_key", pa.int32()), ("lineage_id", pa.string()), ("class_name", pa.string()),
    ("is_novel", pa.bool_()), ("size", pa.int64()), ("mean_confidence", pa.float64()),
    ("top_features", pa.list_(TOP_FEATURE)), ("exemplars", pa.list_(pa.string())),
    ("purity", pa.float64()), ("majority_true_label", pa.string())])
ASSIGNMENT_COLUMNS = {"node_id", "class_key", "is_novel", "confidence"}
LINEAGE_SCHEMA = pa.schema([
    ("lineage_id", pa.string()), ("class_key", pa.int32()), ("status", pa.string()),
    ("size", pa.int64()), ("previous_size", pa.int64()), ("parents", pa.list_(pa.string())),
    ("merged_into", pa.string()), ("first_seen", pa.date32()), ("last_seen", pa.date32())])

#: ``Warehouse.node_pairs``: the class key of a node absent from one of the two runs.
NO_CLASS = np.iinfo(np.int64).min
_GLOB_CHARS = frozenset("*?[]{}")  # read_parquet would expand these in a path

_READ_ONLY_KEYWORDS = ("SELECT", "WITH", "SHOW", "DESCRIBE", "EXPLAIN", "FROM", "SUMMARIZE",
                       "VALUES", "(")


# ----------------------------------------------------------------------------------- helpers
def make_run_id(graph: str, snapshot_date: dt.date | str, content_hash: str,
                config_hash: str) -> str:
    """The run id: a hash of what makes a published run (graph, snapshot date, snapshot content,
    configuration), so publishing the same run twice replaces it, while the same bytes published
    under another date (a graph that did not change overnight) are another night's run."""
    day = _date(snapshot_date)
    if day is None:
        raise WarehouseError("a run id needs the snapshot date")
    payload = json.dumps(["run", graph, day.isoformat(), content_hash, config_hash],
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def make_training_id(graph: str, content_hash: str, config_hash: str) -> str:
    """What training depends on (graph, snapshot content, configuration), as a hash: it names the
    run folder, so nights whose snapshots have equal bytes share one training. It is also the
    run id that runs published before the snapshot date joined :func:`make_run_id` carry;
    :meth:`Warehouse.publish_run` replaces such a row of the same date like its own."""
    payload = json.dumps([graph, content_hash, config_hash], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _date(value) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def _timestamp(value) -> dt.datetime | None:
    """A naive UTC timestamp (aware values are converted to UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def _parsed(value, what: str):
    """``value``, or the value of its JSON text when it is a string (as version 1 stored it)."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError as err:
            raise WarehouseError(f"{what}: not JSON text ({err})") from None
    return value


def _number(value, what: str) -> float | None:
    """A float (NaN and infinities as None); anything but a number is refused."""
    value = _value(value)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WarehouseError(f"{what}: expected a number, got {value!r}")
    return float(value)


def _string_list(value, what: str) -> list[str] | None:
    """A list of strings (``VARCHAR[]``): node ids, lineage ids; None stays None."""
    value = _parsed(value, what)
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise WarehouseError(f"{what}: expected a list, got {type(value).__name__}")
    out = []
    for item in value:
        item = _value(item)
        if item is None or isinstance(item, (Mapping, list, tuple)):
            raise WarehouseError(f"{what}: expected plain values, got {item!r}")
        out.append(str(item))
    return out


#: the keys a ``top_features`` entry may have: ``name`` (or ``feature``, as
#: :func:`tasks.steps.describe_classes` writes it), ``lift``, ``class_mean``; ``index`` (of
#: :class:`oral_core.interpret.Feature`) is dropped
_FEATURE_KEYS = {"name", "feature", "lift", "class_mean", "index"}


def _top_features(value, what: str) -> list[dict] | None:
    """``top_features`` as a list of ``{name, lift, class_mean}`` (``TOP_FEATURE``)."""
    value = _parsed(value, what)
    if value is None:
        return None
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise WarehouseError(f"{what}: expected a list of features, got {type(value).__name__}")
    out = []
    for item in value:
        if hasattr(item, "_asdict"):
            item = item._asdict()
        if not isinstance(item, Mapping):
            raise WarehouseError(f"{what}: a feature must be a mapping, got {item!r}")
        extra = set(item) - _FEATURE_KEYS
        if extra:
            raise WarehouseError(f"{what}: unknown feature fields {sorted(extra)}; a feature "
                                 f"has name (or feature), lift, class_mean")
        name = item.get("name", item.get("feature"))
        out.append({"name": None if name is None else str(name),
                    "lift": _number(item.get("lift"), what),
                    "class_mean": _number(item.get("class_mean"), what)})
    return out


def _scores(value) -> dict[str, float | None] | None:
    """``scores`` as a ``MAP(VARCHAR, DOUBLE)``: a mapping of names to numbers."""
    value = _parsed(value, "run field 'scores'")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WarehouseError(f"run field 'scores' must be a mapping of names to numbers, got "
                             f"{type(value).__name__}")
    return {str(k): _number(v, f"run field 'scores' entry {k!r}") for k, v in value.items()}


def _value(value):
    """A scalar for a bound parameter: numpy scalars as Python ones, NaN and infinities as NULL."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _rollback(con, err: BaseException, what: str) -> bool:
    """Roll back after ``err`` broke a transaction; True when the rollback went through.

    A rollback that fails too (DuckDB already aborted the transaction after an I/O error such as
    a full disk: ``cannot rollback - no transaction is active``) is logged and attached to
    ``err`` as a note, never raised: the caller re-raises ``err``, the cause the user must see."""
    try:
        con.execute("ROLLBACK")
        return True
    except Exception as failed:  # noqa: BLE001 - the original error matters, this one is logged
        log.warning("%s failed (%s: %s); the rollback failed too: %s: %s", what,
                    type(err).__name__, err, type(failed).__name__, failed)
        if hasattr(err, "add_note"):
            err.add_note(f"(the rollback after this error failed too: {type(failed).__name__}: {failed})")
        return False


def _lock_error(err: Exception) -> bool:
    text = str(err)
    return "Could not set lock" in text or "Conflicting lock" in text


# --------------------------------------------------------------------------------- warehouse
class Warehouse:
    """The DuckDB warehouse at ``path`` (a ``.duckdb`` file, or ``:memory:`` for tests).

    ``lock_timeout``: how long :meth:`connect` keeps retrying while another process holds the
    file (seconds); ``threads``: DuckDB worker threads (None: DuckDB's default);
    ``memory_limit``: DuckDB's ``memory_limit`` (e.g. ``"512MB"``; None: DuckDB's default, 80%
    of the machine's memory). Under the limit DuckDB spills the hash tables of a large publish
    (the repeated-node check, lineage's node join) to its temporary folder instead of growing.
    """

    def __init__(self, path: str | os.PathLike, *, lock_timeout: float = 60.0,
                 initial_backoff: float = 0.05, max_backoff: float = 5.0,
                 threads: int | None = None, memory_limit: str | None = None):
        self.path = str(path)
        if not self.in_memory and "?" in self.path:
            # DuckDB reads '?' in a file path as the start of options: it keeps the database at
            # the path but puts the write-ahead log at '<text before ?>.wal?<rest>', another
            # folder (outside the state folder, over whatever is there)
            raise WarehouseError(f"DuckDB cannot keep a database at a path containing '?' "
                                 f"({self.path}): its write-ahead log would go elsewhere; "
                                 f"choose a state folder or ORAL_WAREHOUSE path without '?'")
        self.lock_timeout = float(lock_timeout)
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.threads = threads
        self.memory_limit = memory_limit
        self._held: duckdb.DuckDBPyConnection | None = None
        if self.in_memory:
            self._held = duckdb.connect(MEMORY, config=self._config())

    def __repr__(self) -> str:
        return f"Warehouse({self.path!r})"

    @property
    def in_memory(self) -> bool:
        return self.path == MEMORY

    # ---------------------------------------------------------------- connections
    def _config(self, read_only_query: bool = False) -> dict:
        config: dict[str, Any] = {}
        if self.threads is not None:
            config["threads"] = int(self.threads)
        if self.memory_limit is not None:
            config["memory_limit"] = str(self.memory_limit)
        if read_only_query:
            config["enable_external_access"] = False
        return config

    def connect(self, read_only: bool = False, *, timeout: float | None = None,
                _config: dict | None = None) -> duckdb.DuckDBPyConnection:
        """A new connection to the file; the caller closes it.

        While another process holds the file, retry with exponential backoff (``initial_backoff``
        doubling up to ``max_backoff``) for at most ``timeout`` (default ``lock_timeout``) seconds
        in total, logging each wait, then raise :class:`WarehouseLocked`.
        """
        if self.in_memory:
            if self._held is None:
                raise WarehouseError("this in-memory warehouse was closed; its data is gone")
            return self._held.cursor()
        config = self._config() if _config is None else _config
        limit = self.lock_timeout if timeout is None else float(timeout)
        if not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        delay = self.initial_backoff
        attempt = 0
        while True:
            attempt += 1
            try:
                return duckdb.connect(self.path, read_only=read_only, config=config)
            except duckdb.IOException as err:
                if not _lock_error(err):
                    raise WarehouseError(f"cannot open DuckDB file {self.path}: {err}") from err
                waited = time.monotonic() - start
                left = limit - waited
                if left <= 0:
                    raise WarehouseLocked(
                        f"DuckDB file {self.path} is locked by another process; gave up after "
                        f"{waited:.1f} s and {attempt} attempts (lock_timeout={limit:g} s). "
                        f"Only one process may write it at a time: wait for the other job or "
                        f"stop it. DuckDB said: {err}") from err
                pause = min(delay, left)
                log.warning("DuckDB file %s is locked by another process (attempt %d); "
                            "retrying in %.2f s (%.1f of %.1f s waited)",
                            self.path, attempt, pause, waited, limit)
                time.sleep(pause)
                delay = min(delay * 2.0, self.max_backoff)

    def __enter__(self) -> "Warehouse":
        if self._held is None:
            self._held = self.connect()
        return self

    def __exit__(self, *exc) -> None:
        if not self.in_memory:
            self.close()

    def close(self) -> None:
        """Close the held connection (for ``:memory:``, the database goes with it)."""
        if self._held is not None:
            self._held.close()
            self._held = None

    @contextlib.contextmanager
    def _connection(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation: a cursor of the held one, or a fresh one closed after."""
        if self._held is not None:
            cur = self._held.cursor()
            try:
                yield cur
            finally:
                cur.close()
            return
        con = self.connect(read_only=read_only)
        try:
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def _reader(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A read-only connection, or None when there is no warehouse (file or schema) yet."""
        if self._held is None and not Path(self.path).exists():
            yield None
            return
        with self._connection(read_only=True) as con:
            if not self._has_schema(con):
                yield None
            else:
                yield con

    @staticmethod
    def _has_schema(con) -> bool:
        found = con.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_schema = 'main' AND table_name = 'meta'").fetchall()
        return found[0][0] > 0

    # ---------------------------------------------------------------- schema
    def ensure_schema(self) -> int:
        """Create the tables and views when missing; return the schema version."""
        with self._connection() as con:
            return self._ensure_schema(con)

    def _ensure_schema(self, con) -> int:
        """Create what is missing and bring an older schema up to :data:`SCHEMA_VERSION`
        (:data:`MIGRATIONS`), all in one transaction: a failed migration leaves the warehouse
        as it was."""
        con.execute("BEGIN TRANSACTION")
        try:
            for ddl in TABLES:
                con.execute(ddl)
            found = con.execute("SELECT value FROM meta WHERE key = ?", ["schema_version"]).fetchall()
            version = int(found[0][0]) if found else None
            if version is not None and version > SCHEMA_VERSION:
                raise WarehouseError(
                    f"{self.path} has schema version {found[0][0]}, newer than this code's "
                    f"{SCHEMA_VERSION}: upgrade the pipeline before writing to it")
            if version is None:
                con.execute("INSERT INTO meta VALUES (?, ?)", ["schema_version", str(SCHEMA_VERSION)])
            elif version < SCHEMA_VERSION:
                self._migrate(con, version)
            for ddl in VIEWS:
                con.execute(ddl)
            con.execute("COMMIT")
        except BaseException as err:
            _rollback(con, err, f"setting up the schema of {self.path}")
            raise
        return SCHEMA_VERSION

    def _migrate(self, con, version: int) -> None:
        """Convert the tables from schema ``version`` to :data:`SCHEMA_VERSION` inside the open
        transaction (the caller commits, or rolls back on any error)."""
        start = version
        while version < SCHEMA_VERSION:
            if version not in MIGRATIONS:
                raise WarehouseError(f"{self.path} has schema version {start}, which this code "
                                     f"cannot migrate (no step from version {version})")
            for statement in MIGRATIONS[version]:
                try:
                    con.execute(statement)
                except duckdb.Error as err:
                    raise WarehouseError(
                        f"migrating {self.path} from schema version {start} to {SCHEMA_VERSION} "
                        f"failed at version {version} ({' '.join(str(err).split())}); nothing "
                        f"was changed") from err
            version += 1
        con.execute("UPDATE meta SET value = ? WHERE key = ?", [str(SCHEMA_VERSION), "schema_version"])
        log.info("migrated the warehouse %s from schema version %d to %d", self.path, start,
                 SCHEMA_VERSION)

    def schema_version(self) -> int | None:
        """The schema version stored in the warehouse (None: no warehouse or no schema yet)."""
        with self._reader() as con:
            if con is None:
                return None
            found = con.execute("SELECT value FROM meta WHERE key = ?", ["schema_version"]).fetchall()
            return int(found[0][0]) if found else None

    def _upgrade_for_reading(self) -> None:
        """Before an analyst's read: migrate a warehouse of an older schema (the views and
        typed columns analysts query are those of this version)."""
        if self._held is not None:
            return
        found = self.schema_version()
        if found is not None and found < SCHEMA_VERSION:
            try:
                self.ensure_schema()
            except WarehouseError as err:
                raise WarehouseError(f"{self.path} has schema version {found}; this code reads "
                                     f"version {SCHEMA_VERSION} and could not migrate it: {err}") from err

    # ---------------------------------------------------------------- publishing
    def publish_run(self, run: Mapping[str, Any], snapshot: Mapping[str, Any] | None,
                    assignments: pa.Table | str | os.PathLike,
                    classes: Sequence[Mapping[str, Any]] | pa.Table,
                    lineage_rows: Iterable = ()) -> str:
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
        ``lineage_rows``: :class:`tasks.lineage.LineageRow` objects or dicts with their fields.

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
        source = _AssignmentSource.of(assignments)
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
                nodes = self._insert_assignments(con, run_id, source)
                self._insert_lineage(con, run_row)
                con.execute("COMMIT")
            except BaseException as err:
                if _rollback(con, err, f"publishing run {run_id}"):
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
        row = {key: _value(run.get(key)) for key in RUN_COLUMNS}
        for key in ("graph", "content_hash", "config_hash", "code_version", "prefect_flow_run_id",
                    "mlflow_run_id", "model_name", "model_version", "device", "run_id",
                    "start_mode", "start_reason", "warm_from_run_id", "warm_from_version"):
            row[key] = None if row[key] is None else str(row[key])
        row["snapshot_date"] = _date(run["snapshot_date"])
        expected = make_run_id(row["graph"], row["snapshot_date"], row["content_hash"],
                               row["config_hash"])
        if row["run_id"] is not None and row["run_id"] != expected:
            raise WarehouseError(f"run_id {row['run_id']!r} is not the hash of graph, snapshot "
                                 f"date, content hash and configuration hash ({expected!r})")
        row["run_id"] = expected
        row["published_at"] = _timestamp(run.get("published_at")) or _utcnow()
        scores = run.get("scores")
        if isinstance(scores, Mapping):
            for part in ("all", "known", "novel"):
                if row[f"acc_{part}"] is None and scores.get(part) is not None:
                    row[f"acc_{part}"] = _value(scores[part])
        row["scores"] = _scores(scores)
        return row

    @staticmethod
    def _snapshot_row(run_row: dict, snapshot: Mapping[str, Any]) -> dict:
        extra = set(snapshot) - set(SNAPSHOT_COLUMNS)
        if extra:
            raise WarehouseError(f"unknown snapshot fields {sorted(extra)}; the snapshots table "
                                 f"has {SNAPSHOT_COLUMNS}")
        row = {key: _value(snapshot.get(key)) for key in SNAPSHOT_COLUMNS}
        for key in ("graph", "snapshot_date", "content_hash"):
            given = _date(row[key]) if key == "snapshot_date" else row[key]
            if given is not None and given != run_row[key]:
                raise WarehouseError(f"snapshot {key} {given!r} differs from the run's {run_row[key]!r}")
            row[key] = run_row[key]
        row["path"] = None if row["path"] is None else str(row["path"])
        row["validated_at"] = _timestamp(snapshot.get("validated_at"))
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
                    value = _top_features(value, f"class {row.get('class_key')} top_features")
                elif name == "exemplars":
                    value = _string_list(value, f"class {row.get('class_key')} exemplars")
                else:
                    value = _value(value)
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
                    value = _string_list(value or [], f"lineage row {row.get('lineage_id')} parents")
                elif name in ("first_seen", "last_seen"):
                    value = _date(value)
                else:
                    value = _value(value)
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

    @staticmethod
    def _insert_row(con, table: str, row: dict) -> None:
        names = list(row)
        sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        con.execute(sql, [row[n] for n in names])

    def _insert_snapshot(self, con, row: dict) -> None:
        con.execute("DELETE FROM snapshots WHERE graph = ? AND snapshot_date = ? AND content_hash = ?",
                    [row["graph"], row["snapshot_date"], row["content_hash"]])
        self._insert_row(con, "snapshots", row)

    @staticmethod
    @contextlib.contextmanager
    def _registered(con, name: str, table: pa.Table):
        con.register(name, table)
        try:
            yield name
        finally:
            con.unregister(name)

    @staticmethod
    def _insert_classes(con, run_id: str) -> None:
        con.execute(f"INSERT INTO classes (run_id, {', '.join(CLASS_SCHEMA.names)}) "
                    f"SELECT ?, {', '.join(CLASS_SCHEMA.names)} FROM _oral_classes", [run_id])

    @staticmethod
    def _insert_assignments(con, run_id: str, source: "_AssignmentSource") -> int:
        """One streaming ``INSERT ... SELECT`` from the source, joined to this run's classes (in
        the open transaction), then the checks in SQL: a row lost to the join (null node id, or
        a class key without a classes row) or a node id inserted twice raises
        :class:`WarehouseError`, which rolls the transaction back. Returns the rows inserted."""
        inserted = con.execute(
            "INSERT INTO node_assignments "
            "(run_id, node_id, class_key, lineage_id, class_name, is_novel, confidence) "
            "SELECT ?, CAST(a.node_id AS VARCHAR), c.class_key, c.lineage_id, c.class_name, "
            "CAST(a.is_novel AS BOOLEAN), CAST(a.confidence AS DOUBLE) FROM _oral_assignments a "
            "JOIN classes c ON c.run_id = ? AND c.class_key = a.class_key "
            "WHERE a.node_id IS NOT NULL", [run_id, run_id]).fetchall()[0][0]
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

    # ---------------------------------------------------------------- queries for the flow
    def run_exists(self, run_id: str) -> bool:
        with self._reader() as con:
            if con is None:
                return False
            found = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchall()
            return found[0][0] > 0

    def last_processed_date(self, graph: str, config_hash: str | None = None) -> dt.date | None:
        """The latest snapshot date with a published run of ``graph`` (of that configuration)."""
        with self._reader() as con:
            if con is None:
                return None
            found = con.execute(
                "SELECT max(snapshot_date) FROM runs WHERE graph = ? "
                "AND (CAST(? AS VARCHAR) IS NULL OR config_hash = ?)",
                [graph, config_hash, config_hash]).fetchall()
            return found[0][0]

    def max_novel_index(self, graph: str, before_date: dt.date | str | None = None,
                        exclude_run_id: str | None = None) -> int:
        """The largest ``n`` of the graph's ``<graph>:novel:<n>`` lineage ids (0 when none).

        ``before_date`` counts only runs of earlier snapshots, ``exclude_run_id`` leaves out one
        run. A nightly run passes ``before_date=<its snapshot date>`` (together with the
        :meth:`previous_run` of that date): a rerun or a backfill of a date then hands out the
        same new ids as the first time, so republishing it leaves identical rows."""
        prefix = f"{graph}:novel:"
        with self._reader() as con:
            if con is None:
                return 0
            found = con.execute(
                "SELECT max(TRY_CAST(substr(lineage_id, length(?) + 1) AS BIGINT)) "
                "FROM class_lineage WHERE graph = ? AND starts_with(lineage_id, ?) "
                "AND (CAST(? AS DATE) IS NULL OR snapshot_date < ?) "
                "AND (CAST(? AS VARCHAR) IS NULL OR run_id <> ?)",
                [prefix, graph, prefix, _date(before_date), _date(before_date),
                 exclude_run_id, exclude_run_id]).fetchall()
            return int(found[0][0] or 0)

    def previous_run(self, graph: str, before_date: dt.date | str,
                     config_hash: str | None = None, *,
                     with_members: bool = True) -> PreviousClasses | None:
        """The latest published run of ``graph`` with a snapshot date before ``before_date`` (of
        that configuration when given), as :class:`tasks.lineage.PreviousClasses`: member node
        ids per class key, lineage ids, known class names, first-seen dates. None if there is
        no such run.

        The member lists hold one Python string per node: for small graphs and inspection.
        ``with_members=False`` leaves ``members`` empty (``{}``, to be filled before lineage);
        :func:`tasks.steps.publish` does so and takes the members from :meth:`node_pairs`."""
        day = _date(before_date)
        with self._reader() as con:
            if con is None:
                return None
            found = con.execute(
                "SELECT run_id, snapshot_date FROM runs WHERE graph = ? AND snapshot_date < ? "
                "AND (CAST(? AS VARCHAR) IS NULL OR config_hash = ?) "
                "ORDER BY snapshot_date DESC, published_at DESC, run_id DESC LIMIT 1",
                [graph, day, config_hash, config_hash]).fetchall()
            if not found:
                return None
            run_id, prev_date = found[0]
            classes = con.execute(
                "SELECT c.class_key, c.lineage_id, c.class_name, l.first_seen FROM classes c "
                "LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id "
                "WHERE c.run_id = ? ORDER BY c.class_key", [run_id]).fetchall()
            if not with_members:
                return PreviousClasses(
                    members={}, lineage={int(k): lin for k, lin, *_ in classes},
                    names={int(k): name for k, _, name, _ in classes},
                    first_seen={int(k): first for k, _, _, first in classes if first is not None},
                    snapshot_date=prev_date, run_id=run_id)
            members = con.sql(
                "SELECT class_key, node_id FROM node_assignments WHERE run_id = ? "
                "ORDER BY class_key, node_id", params=[run_id]).to_arrow_table()
        keys = members["class_key"].to_numpy()
        nodes = members["node_id"].to_numpy(zero_copy_only=False)
        uniq, starts = np.unique(keys, return_index=True)
        bounds = list(starts) + [len(keys)]
        grouped = {int(k): nodes[bounds[i]:bounds[i + 1]].tolist() for i, k in enumerate(uniq)}
        return PreviousClasses(
            members={int(k): grouped.get(int(k), []) for k, *_ in classes},
            lineage={int(k): lin for k, lin, *_ in classes},
            names={int(k): name for k, _, name, _ in classes},
            first_seen={int(k): first for k, _, _, first in classes if first is not None},
            snapshot_date=prev_date, run_id=run_id)

    def node_pairs(self, run_id: str, assignments: pa.Table | str | os.PathLike
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Both runs' classes of every node, for lineage without a Python string per node.

        ``run_id``: a published run (the previous one); ``assignments``: tonight's rows (an
        Arrow table or a Parquet file, as for :meth:`publish_run`; ``node_id`` and ``class_key``
        are read). One full outer join on the node id in DuckDB (streamed from the file, its
        hash table in DuckDB's own memory) gives, per distinct node of either run, the int64
        arrays ``(previous_key, current_key)``: the node's class key in the published run and
        in ``assignments``, :data:`NO_CLASS` where the node is not in that run (or has a null
        class key). Row ``i`` of both arrays is one node, so ``i`` can stand for its id."""
        source = _AssignmentSource.of(assignments, columns=("node_id", "class_key"))
        with contextlib.ExitStack() as stack:
            con = stack.enter_context(self._connection(read_only=True))
            if not self._has_schema(con):
                raise WarehouseError(f"no warehouse schema in {self.path}: run {run_id} was "
                                     f"never published")
            stack.enter_context(source.registered(con))
            pairs = con.execute(
                "SELECT coalesce(CAST(p.class_key AS BIGINT), ?) AS previous_key, "
                "coalesce(CAST(c.class_key AS BIGINT), ?) AS current_key "
                "FROM (SELECT node_id, class_key FROM node_assignments WHERE run_id = ?) p "
                "FULL OUTER JOIN (SELECT CAST(a.node_id AS VARCHAR) AS node_id, a.class_key "
                "FROM _oral_assignments a) c ON p.node_id = c.node_id",
                [NO_CLASS, NO_CLASS, run_id]).fetchnumpy()
        return (np.asarray(pairs["previous_key"], dtype=np.int64),
                np.asarray(pairs["current_key"], dtype=np.int64))

    def latest_classes(self, graph: str | None = None) -> pa.Table:
        """The ``latest_classes`` view (of one graph or all), largest classes first."""
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                return pa.table({})
            return con.sql(
                "SELECT * FROM latest_classes WHERE CAST(? AS VARCHAR) IS NULL OR graph = ? "
                "ORDER BY graph, size DESC, class_key", params=[graph, graph]).to_arrow_table()

    def classes_for_display(self, graph: str | None = None, features: int = 3) -> pa.Table:
        """The latest classes as ``oral classes`` prints them, largest first: ``name`` is the
        class's label, else its known class name, else its lineage id (never empty);
        ``top_features`` the first ``features`` feature names with their lift, as text."""
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                return pa.table({})
            return con.sql(
                "SELECT graph, snapshot_date, lineage_id, "
                "coalesce(label, class_name, lineage_id) AS name, is_novel, size, status, "
                "mean_confidence, purity, majority_true_label, "
                "array_to_string(list_transform(top_features[1:?], lambda f: CASE "
                "WHEN f.lift IS NULL THEN f.name ELSE printf('%s (x%.2f)', f.name, f.lift) END), "
                "', ') AS top_features "
                "FROM latest_classes WHERE CAST(? AS VARCHAR) IS NULL OR graph = ? "
                "ORDER BY graph, size DESC, class_key",
                params=[int(features), graph, graph]).to_arrow_table()

    def with_lineage(self, predictions) -> pa.Table:
        """``predictions`` (the registered model's output: a pandas DataFrame or an Arrow table
        with ``run_id`` and ``class_key``) with two columns added: ``lineage_id``, from the
        ``classes`` row of ``(run_id, class_key)``, and that class's current ``label``. Rows
        keep their order; a row whose run is not in the warehouse, or whose class had no member
        on the night the model was trained (or ``-1``, unassigned), gets nulls."""
        table = predictions if isinstance(predictions, pa.Table) else pa.Table.from_pandas(
            predictions, preserve_index=False)
        missing = {"run_id", "class_key"} - set(table.column_names)
        if missing:
            raise WarehouseError(f"predictions lack columns {sorted(missing)}: pass the output "
                                 f"of the registered model (tasks.tracking.ORALPyfunc)")
        keys = pa.table({"_row": pa.array(np.arange(table.num_rows, dtype=np.int64)),
                         "run_id": table["run_id"].cast(pa.string()),
                         "class_key": table["class_key"].cast(pa.int64())})
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                found = pa.table({"lineage_id": pa.nulls(table.num_rows, pa.string()),
                                  "label": pa.nulls(table.num_rows, pa.string())})
            else:
                with self._registered(con, "_oral_predictions", keys):
                    found = con.sql(
                        "SELECT c.lineage_id, lb.label FROM _oral_predictions p "
                        "LEFT JOIN classes c ON c.run_id = p.run_id AND c.class_key = p.class_key "
                        "LEFT JOIN runs r ON r.run_id = c.run_id "
                        "LEFT JOIN latest_labels lb ON lb.graph = r.graph "
                        "AND lb.lineage_id = c.lineage_id ORDER BY p._row").to_arrow_table()
        for name in ("lineage_id", "label"):
            column = found[name].cast(pa.string())
            if name in table.column_names:
                table = table.set_column(table.column_names.index(name), name, column)
            else:
                table = table.append_column(name, column)
        return table

    # ---------------------------------------------------------------- class labels
    def label_class(self, lineage_id: str, name: str, *, by: str, graph: str | None = None,
                    at: dt.datetime | None = None) -> dict:
        """Give the class ``lineage_id`` of ``graph`` the human name ``name``; return the
        stored row (``graph, lineage_id, name, labelled_by, labelled_at``) and ``previous``,
        the label it replaces (None when it had none).

        The label is a new ``class_labels`` row (earlier ones are kept as history; the latest
        counts) keyed by the lineage id, so the views show it on every night the class lives,
        later nights included. ``graph`` may be left out when the lineage id belongs to one
        graph only. Raises :class:`UnknownLineage` when no published run of the graph has that
        lineage id, :class:`LabelRefused` for an empty name or ``by`` or a lineage id of several
        graphs without ``graph`` (nothing is written), :class:`WarehouseError` when there is no
        warehouse yet."""
        name = " ".join(str(name).split())
        by = str(by).strip()
        if not name:
            raise LabelRefused("a label needs a name: got an empty one")
        if not by:
            raise LabelRefused("a label needs who gave it (labelled_by): got an empty one")
        if self._held is None and not Path(self.path).exists():
            raise WarehouseError(f"no warehouse at {self.path}: nothing has been published yet")
        at = _timestamp(at) or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        with self._connection() as con:
            self._ensure_schema(con)
            con.execute("BEGIN TRANSACTION")
            try:
                graphs = [g for (g,) in con.execute(
                    "SELECT DISTINCT graph FROM class_lineage WHERE lineage_id = ? "
                    "AND (CAST(? AS VARCHAR) IS NULL OR graph = ?) ORDER BY graph",
                    [lineage_id, graph, graph]).fetchall()]
                if not graphs:
                    where = f" in graph {graph!r}" if graph is not None else ""
                    raise UnknownLineage(f"unknown lineage id {lineage_id!r}{where}: no published "
                                         f"run has it (see `oral classes` or the class_timeline view)")
                if len(graphs) > 1:
                    raise LabelRefused(f"lineage id {lineage_id!r} is in several graphs "
                                         f"({', '.join(graphs)}): name one with --graph")
                previous = con.execute(
                    "SELECT label FROM latest_labels WHERE graph = ? AND lineage_id = ?",
                    [graphs[0], lineage_id]).fetchall()
                row = {"graph": graphs[0], "lineage_id": lineage_id, "name": name,
                       "labelled_by": by, "labelled_at": at}
                self._insert_row(con, "class_labels", row)
                con.execute("COMMIT")
            except BaseException as err:
                _rollback(con, err, f"labelling {lineage_id!r}")
                raise
        return row | {"previous": previous[0][0] if previous else None}

    # ---------------------------------------------------------------- analysts' SQL
    @staticmethod
    def check_read_only(sql: str, con: duckdb.DuckDBPyConnection) -> None:
        """Refuse anything but one SELECT / WITH / SHOW / DESCRIBE / EXPLAIN statement."""
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as err:
            raise QueryRefused(f"cannot parse the query: {err}") from None
        if len(statements) != 1:
            raise QueryRefused(f"exactly one statement is allowed, got {len(statements)}")
        stmt = statements[0]
        head = _first_keyword(sql)
        if stmt.type not in (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN) or \
                head not in _READ_ONLY_KEYWORDS:
            raise QueryRefused(f"only SELECT, WITH, SHOW, DESCRIBE and EXPLAIN queries are allowed, "
                               f"got a {stmt.type.name} statement")
        if stmt.type == duckdb.StatementType.EXPLAIN:
            # EXPLAIN ANALYZE runs its statement: the explained statement must be read-only too
            body = _strip_keywords(sql, ("EXPLAIN", "ANALYZE", "ANALYSE"))
            inner = con.extract_statements(body) if body.strip() else []
            if len(inner) != 1 or inner[0].type != duckdb.StatementType.SELECT:
                raise QueryRefused("EXPLAIN is allowed on SELECT queries only")

    def query(self, sql: str, params: Sequence | Mapping | None = None) -> pa.Table:
        """Run one read-only query (for ``oral sql``) and return its rows as an Arrow table.

        The statement is checked (:meth:`check_read_only`), the file is opened read-only with
        access to other files disabled, and the query runs inside a transaction that is rolled
        back; values go in ``params`` (bound ``?`` or ``$name`` parameters). Inside
        ``with Warehouse(path)`` (and for ``:memory:``) the held read-write connection is used
        instead: the statement check and the rollback still apply."""
        if self._held is None and not Path(self.path).exists():
            raise WarehouseError(f"no warehouse at {self.path}: nothing has been published yet")
        self._upgrade_for_reading()
        if self._held is not None:
            con = self._held.cursor()
        else:
            con = self.connect(read_only=True, _config=self._config(read_only_query=True))
        try:
            self.check_read_only(sql, con)
            con.execute("BEGIN TRANSACTION")
            try:
                return con.sql(sql, params=params).to_arrow_table()
            finally:
                con.execute("ROLLBACK")
        finally:
            con.close()


class _AssignmentSource:
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
    def of(cls, assignments, columns: Iterable[str] = ASSIGNMENT_COLUMNS) -> "_AssignmentSource":
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


def _first_keyword(sql: str) -> str:
    """The first token of ``sql`` after comments and whitespace, upper-cased."""
    text = _skip_comments(sql)
    if text.startswith("("):
        return "("
    word = ""
    for ch in text:
        if not (ch.isalnum() or ch == "_"):
            break
        word += ch
    return word.upper()


def _skip_comments(sql: str) -> str:
    text = sql.lstrip()
    while True:
        if text.startswith("--"):
            end = text.find("\n")
            text = "" if end < 0 else text[end + 1:].lstrip()
        elif text.startswith("/*"):
            end = text.find("*/")
            text = "" if end < 0 else text[end + 2:].lstrip()
        else:
            return text


def _strip_keywords(sql: str, words: tuple[str, ...]) -> str:
    text = _skip_comments(sql)
    while True:
        head = _first_keyword(text)
        if head in words:
            text = _skip_comments(text[len(head):])
        else:
            return text
