"""The :class:`Warehouse`: the DuckDB file, its connections and locking, and the schema setup
(creating the tables and views, migrating an older schema) that every write runs first.

DuckDB lets one process write a file at a time; a second process that opens it (even read-only)
fails at once with ``Could not set lock on file``. :meth:`Warehouse.connect` therefore retries
with exponential backoff for a bounded, configurable time and then raises
:class:`WarehouseLocked` naming the file. Connections are opened per operation and closed after
it, so the file is locked only while the pipeline is actually reading or writing (hold one
connection for a series of operations with ``with Warehouse(path) as wh: ...``).

What the warehouse does with a connection lives beside it: publishing
(:mod:`tasks.warehouse.publish`), the flow's reads of earlier runs
(:mod:`tasks.warehouse.history`), class labels (:mod:`tasks.warehouse.labels`) and the analysts'
reads and queries (:mod:`tasks.warehouse.analyst`), each a mixin of :class:`Warehouse`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from .analyst import Analyst
from .errors import WarehouseError, WarehouseLocked, rollback_after_error
from .history import History
from .labels import Labels
from .publish import Publishing
from .schema import MIGRATIONS, SCHEMA_VERSION, TABLES, VIEWS

log = logging.getLogger(__name__)

MEMORY = ":memory:"


def _lock_error(err: Exception) -> bool:
    text = str(err)
    return "Could not set lock" in text or "Conflicting lock" in text


# --------------------------------------------------------------------------------- warehouse
class Warehouse(Publishing, History, Labels, Analyst):
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
            rollback_after_error(con, err, f"setting up the schema of {self.path}")
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

    # ---------------------------------------------------------------- statements
    @staticmethod
    def _insert_row(con, table: str, row: dict) -> None:
        names = list(row)
        sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        con.execute(sql, [row[n] for n in names])

    @staticmethod
    @contextlib.contextmanager
    def _registered(con, name: str, table: pa.Table):
        con.register(name, table)
        try:
            yield name
        finally:
            con.unregister(name)
