"""The MLflow store: the embedded SQLite store made safe to open (created atomically, the scratch
tables of a failed migration dropped, a never-used broken store moved aside), :func:`client`
on it, and :func:`using`, which points MLflow's process-wide URIs at it for a block.

Only public MLflow APIs are used, except ``SqlAlchemyStore._engine_map`` (see
:func:`_dispose_cached_engines`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import urllib.parse
from pathlib import Path

import mlflow

from tasks.registry.config import TrackingConfig
from tasks.registry.retries import TrackingError, call_with_retries, short_message

log = logging.getLogger(__name__)


def _sqlite_uri(path: Path) -> str:
    return f"sqlite:///{urllib.parse.quote(Path(path).as_posix())}"


_ALEMBIC_TMP = "_alembic_tmp_"
_STORE_LOCK = threading.Lock()
_STORES_READY: set[str] = set()


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _drop_alembic_leftovers(path: Path) -> list[str]:
    """Drop the ``_alembic_tmp_<table>`` tables a migration left behind when it failed (a full
    disk during a batch migration: alembic copies ``<table>`` into ``_alembic_tmp_<table>``,
    drops ``<table>`` and renames the copy; SQLite runs that DDL outside a transaction). They
    are scratch copies: while ``<table>`` itself is there, dropping them lets the migration
    run again; ``CREATE TABLE _alembic_tmp_...`` fails for ever otherwise. A scratch table
    whose original is gone holds the only copy: then nothing is dropped and the error says so.
    One transaction; plain SQLite, before MLflow opens the file. Returns the dropped names."""
    import sqlite3

    con = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    try:
        tables = _tables(con)
        leftovers = sorted(t for t in tables if t.startswith(_ALEMBIC_TMP))
        if not leftovers:
            return []
        alone = [t for t in leftovers if t[len(_ALEMBIC_TMP):] not in tables]
        if alone:
            raise TrackingError(
                f"the MLflow store {path} is half-migrated and {', '.join(alone)} hold(s) the only "
                f"copy of a table (the original is gone): repair it by hand (rename the table back "
                f"to its name without {_ALEMBIC_TMP!r}) or move the file away")
        con.execute("BEGIN IMMEDIATE")
        try:
            for leftover in leftovers:
                con.execute(f'DROP TABLE "{leftover}"')  # a name read from sqlite_master, quoted
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    log.warning("MLflow store %s: dropped %s, left by a migration that failed (a full disk?); "
                "the migration runs again", path, ", ".join(leftovers))
    return leftovers


def _never_used(path: Path) -> bool:
    """Whether the SQLite store at ``path`` holds nothing anyone logged: no run, no registered
    model, no experiment but MLflow's ``Default`` (a store whose creation failed half-way)."""
    import sqlite3

    con = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True, timeout=60)
    try:
        tables = _tables(con)
        for table, allowed in (("runs", 0), ("registered_models", 0), ("experiments", 1)):
            if table in tables and con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > allowed:
                return False
        return True
    except sqlite3.DatabaseError:  # not a database at all: nothing readable in it either
        return True
    finally:
        con.close()


def _create_store(cfg: TrackingConfig, path: Path) -> None:
    """Create the MLflow schema in a hidden file beside ``path`` and link it into place only
    when it is complete: a failure (a full disk in the middle of the migrations) leaves no
    half-made store, only the hidden file, which is removed. ``os.link`` never replaces: when
    another process created the store meanwhile, its store stays and this one is dropped."""
    import uuid

    # a new name every time: MLflow keeps one engine (and its open connections) per store URI
    tmp = path.with_name(f".{path.name}.creating-{uuid.uuid4().hex}")
    uri = _sqlite_uri(tmp)
    try:
        _open_store(mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri))
        _dispose_cached_engines(uri)  # every connection closed: the file is complete on disk
        try:
            os.link(tmp, path)
            log.info("created the MLflow store %s", path)
        except FileExistsError:
            pass
    finally:
        _dispose_cached_engines(uri)
        tmp.unlink(missing_ok=True)


def prepare_store(cfg: TrackingConfig) -> None:
    """Make the embedded SQLite store safe to open, once per process and store (nothing for a
    remote tracking URI): create it atomically when missing (:func:`_create_store`), drop the
    scratch tables of a failed migration (:func:`_drop_alembic_leftovers`)."""
    if cfg.tracking_uri:
        return
    path = cfg.state_dir / "mlflow.db"
    with _STORE_LOCK:
        if str(path) in _STORES_READY and path.exists():
            return
        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size == 0:
            path.unlink()  # an empty file is no store: make one whole
        if not path.exists():
            _create_store(cfg, path)
        else:
            _drop_alembic_leftovers(path)
        _STORES_READY.add(str(path))


def _set_aside_unused_store(cfg: TrackingConfig, err: BaseException) -> bool:
    """After the embedded store failed to open: when it holds nothing anyone logged (its
    creation failed half-way, e.g. before :func:`_create_store` made creation atomic), move it
    aside (``mlflow.db.broken-<time>``, nothing deleted) so the next attempt creates it whole.
    Returns whether it did."""
    if cfg.tracking_uri:
        return False
    path = cfg.state_dir / "mlflow.db"
    with _STORE_LOCK:
        if not path.exists() or not _never_used(path):
            return False
        aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        os.replace(path, aside)
        _STORES_READY.discard(str(path))
        _dispose_cached_engines(cfg.uri)
    log.warning("the MLflow store %s could not be opened (%s) and held no runs or models: "
                "moved it to %s; a new store is created", path, short_message(err, 200), aside)
    return True


def _dispose_cached_engines(uri: str) -> None:
    """Close the pooled connections MLflow keeps per store URI (its stores share one engine per
    URI for the process): after the file was moved aside they still point at the old file.

    The one private MLflow attribute this project reads (``SqlAlchemyStore._engine_map``, the
    class-level engine cache): MLflow has no public way to close a store's connections, and a
    moved or freshly created SQLite file must not stay open under its old name."""
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as RegistryStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore as TrackingStore

    for store in (TrackingStore, RegistryStore):
        engine = getattr(store, "_engine_map", {}).get(uri)
        if engine is not None:
            engine.dispose()


def _open_store(c: "mlflow.MlflowClient", cfg: TrackingConfig | None = None) -> None:
    """Open a local store now (MLflow creates or migrates an SQLite schema when its store is
    first used) through a cheap public call; a remote server is left alone (no request)."""
    if cfg is None or not cfg.is_remote:
        c.search_experiments(max_results=1)


def client(cfg: TrackingConfig) -> "mlflow.MlflowClient":
    """An :class:`mlflow.MlflowClient` on ``cfg``'s stores (the local folders created first;
    the embedded SQLite store made safe to open first, :func:`prepare_store`)."""
    def make():
        if not cfg.is_remote:
            cfg.state_dir.mkdir(parents=True, exist_ok=True)
        prepare_store(cfg)
        try:
            c = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
            _open_store(c, cfg)  # opens the store now (creates or migrates its schema)
        except Exception as err:
            if not _set_aside_unused_store(cfg, err):
                raise
            prepare_store(cfg)
            c = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
            _open_store(c, cfg)
        return c
    return call_with_retries(cfg, make, "opening the MLflow store")


_URI_LOCK = threading.RLock()
_URI_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")


@contextlib.contextmanager
def using(cfg: TrackingConfig):
    """Point MLflow's process-wide tracking and registry URIs at ``cfg`` for the block, then
    restore the previous ones (and their environment variables).

    Parts of MLflow read only the process-wide URIs (``Model.log``, the SQL registry resolving
    ``models:/<id>``, ``mlflow.pyfunc.load_model``). The block holds a process-wide lock, so
    tasks running in threads (Prefect's default task runner) cannot switch the URIs under each
    other; the calls made inside it are short."""
    with _URI_LOCK:
        # mlflow.set_tracking_uri/set_registry_uri mirror an explicitly set URI into these
        # environment variables (and unset them for None): they hold the state to restore
        old_env = {key: os.environ.get(key) for key in _URI_ENV}
        mlflow.set_tracking_uri(cfg.uri)
        mlflow.set_registry_uri(cfg.registry)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(old_env["MLFLOW_TRACKING_URI"])
            mlflow.set_registry_uri(old_env["MLFLOW_REGISTRY_URI"])
            for key, value in old_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


class Registry:
    """One MLflow store bound to its settings (a :class:`TrackingConfig`): the client is opened
    once, on first use (:func:`client`), and every operation goes through :meth:`call`, which
    retries it with the settings' budget (:func:`tasks.registry.retries.call_with_retries`), so
    the registry's functions take one object instead of threading the settings and a client
    through every call. ``Registry.of`` accepts a registry or its settings."""

    def __init__(self, cfg: TrackingConfig, client=None):
        self.cfg = cfg
        self._client = client  # an MLflow client already open on ``cfg`` (or a stand-in)

    @classmethod
    def of(cls, where: "Registry | TrackingConfig") -> "Registry":
        return where if isinstance(where, Registry) else cls(where)

    @property
    def client(self) -> "mlflow.MlflowClient":
        if self._client is None:
            self._client = client(self.cfg)
        return self._client

    def call(self, what: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, retried; ``what`` names it in the log and the error."""
        return call_with_retries(self.cfg, lambda: fn(*args, **kwargs), what)

    def using(self):
        """MLflow's process-wide URIs pointed at this store for a block (:func:`using`)."""
        return using(self.cfg)

    def safe_uri(self) -> str:
        return self.cfg.safe_uri()
