"""The MLflow layer of the nightly pipeline: runs, artifacts, the registered model, the champion.

Plain functions (no Prefect): the flow's tasks wrap them.

- :class:`TrackingConfig` says where MLflow lives. By default an embedded SQLite store
  ``sqlite:///<state_dir>/mlflow.db`` with artifacts under ``<state_dir>/mlartifacts``; an
  ``http(s)://`` URI (an ``mlflow server``) works the same way.
- :func:`experiment_for`: one experiment per graph, ``oral-<graph>``, created when absent with an
  explicit artifact location ``<artifact_root>/oral-<graph>`` (nothing lands in ``./mlruns``).
- :func:`log_training_run`: one run per training: every configuration value as a param, the
  per-epoch history as step metrics, final metrics, artifacts (predictions as Parquet, the class
  summary as JSON and Markdown, the validation report, PNG plots) and tags, and the model as an
  MLflow pyfunc (:class:`ORALPyfunc`) whose only artifact is the weights-only ORAL model file;
  it takes the nodes and edges themselves or a snapshot path/URI (:mod:`tasks.oral_pyfunc`).
- :func:`register_model`, :func:`promote_champion`, :func:`champion_version`: the model is
  registered as ``oral-<graph>``; the ``champion`` alias moves only when the quality gates pass.
- :func:`with_retries`: bounded retries with exponential backoff around every MLflow call; after
  the last attempt a :class:`TrackingError` names the tracking URI and what failed.

MLflow is imported at the top of this module; ``import tasks`` does not import this module, so
only code that tracks pays for the import. The pyfunc is logged as code ("models from code",
``mlflow.pyfunc.log_model(python_model=<file>)``): the file is :mod:`tasks.oral_pyfunc`, which
imports only ``oral_core`` (shipped inside the model as ``code_paths``), torch, numpy, pandas,
pyarrow and mlflow. Loading it unpickles nothing, and it loads and serves in an environment made
from nothing but the model's own ``requirements.txt`` (no project install). Only public MLflow APIs
are used, except ``SqlAlchemyStore._engine_map`` (see :func:`_dispose_cached_engines`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import tempfile
import threading
import time
import urllib.parse
import warnings
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import mlflow  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from mlflow.entities import Metric, Param, RunStatus  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

from tasks import oral_pyfunc as _pyfunc_module  # noqa: E402
from tasks.oral_pyfunc import (  # noqa: E402,F401 - re-exported
    MODEL_ARTIFACT, ORALPyfunc, assign_graph, class_names_for, input_example, model_signature)

log = logging.getLogger(__name__)

T = TypeVar("T")

CHAMPION = "champion"
MODEL_NAME_IN_RUN = "model"            # the logged model's name within its run
HISTORY_METRICS = ("val_acc", "loss", "l_ce", "l_reg", "l_con", "classes", "seconds")
LOSS_KEYS = ("loss", "l_ce", "l_reg", "l_con")
# packages whose installed versions are pinned in the logged model's requirements
# (everything the code file and oral_core import: oral_core's Leiden clustering needs igraph)
PINNED_PACKAGES = ("torch", "torch-geometric", "numpy", "scipy", "igraph", "pandas", "pyarrow",
                   "mlflow")
# MLflow's per-batch and per-value limits (mlflow.utils.validation)
_MAX_METRICS_PER_BATCH = 1000
_MAX_PARAMS_TAGS_PER_BATCH = 100
_MAX_PARAM_LENGTH = 6000
_MAX_TAG_LENGTH = 8000
# MLflow errors that say the request itself is wrong: retrying cannot help
_PERMANENT_CODES = {"INVALID_PARAMETER_VALUE", "RESOURCE_ALREADY_EXISTS", "RESOURCE_DOES_NOT_EXIST",
                    "NOT_FOUND", "ALREADY_EXISTS", "INVALID_STATE", "PERMISSION_DENIED",
                    "UNAUTHENTICATED", "BAD_REQUEST"}


# errors of the calling code, not of the store: never retried
_PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, ImportError, AssertionError)


class TrackingError(RuntimeError):
    """An MLflow call that kept failing (server down, store or artifact path not writable...).
    The message names the tracking URI and the operation."""


# ------------------------------------------------------------------------------- configuration
@dataclasses.dataclass
class TrackingConfig:
    """Where MLflow lives.

    ``tracking_uri``: ``None`` for the embedded SQLite store ``sqlite:///<state_dir>/mlflow.db``;
    any MLflow URI otherwise (``http://127.0.0.1:5000`` for an ``mlflow server``).
    ``registry_uri``: defaults to the tracking URI.
    ``artifact_root``: where new experiments keep their artifacts (``<artifact_root>/oral-<graph>``).
    Default ``<state_dir>/mlartifacts`` for a local store; for an ``http(s)`` server the server's
    own artifact destination (a client-side path would only work on the server's host).
    ``attempts``/``base_delay``/``max_delay``: the retry budget of every MLflow call
    (:func:`with_retries`).
    """

    tracking_uri: str | None
    state_dir: Path
    registry_uri: str | None = None
    artifact_root: Path | str | None = None
    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 15.0

    def __post_init__(self):
        self.state_dir = Path(self.state_dir).expanduser().absolute()
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    @property
    def uri(self) -> str:
        """The tracking URI in effect."""
        if self.tracking_uri:
            return str(self.tracking_uri)
        # percent-encoded: SQLAlchemy reads '?' as the start of a query and decodes '%xx', so a
        # state folder named with them would put the store somewhere else
        return f"sqlite:///{urllib.parse.quote((self.state_dir / 'mlflow.db').as_posix())}"

    @property
    def registry(self) -> str:
        return str(self.registry_uri) if self.registry_uri else self.uri

    @property
    def is_remote(self) -> bool:
        return urllib.parse.urlparse(self.uri).scheme in ("http", "https")

    @property
    def artifact_base(self) -> Path | None:
        """The folder new experiments' artifacts go under (``None``: the server decides)."""
        if self.artifact_root is not None:
            return Path(self.artifact_root).expanduser().absolute()
        return None if self.is_remote else self.state_dir / "mlartifacts"

    def safe_uri(self) -> str:
        return safe_uri(self.uri)


def safe_uri(uri: str) -> str:
    """``uri`` without a password, for messages and logs."""
    parts = urllib.parse.urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urllib.parse.urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def model_name(graph: str) -> str:
    """The registered model of ``graph``: ``oral-<graph>``."""
    return f"oral-{_check_graph(graph)}"


def experiment_name(graph: str) -> str:
    return f"oral-{_check_graph(graph)}"


def champion_uri(graph: str) -> str:
    """``models:/oral-<graph>@champion`` (load it with :func:`load_champion`)."""
    return f"models:/{model_name(graph)}@{CHAMPION}"


def _check_graph(graph: str) -> str:
    from data_contracts.snapshots import check_graph_name
    return check_graph_name(graph)


# ------------------------------------------------------------------------------------- retries
def _is_permanent(err: BaseException) -> bool:
    return isinstance(err, MlflowException) and str(err.error_code) in _PERMANENT_CODES


def with_retries(fn: Callable[[], T], attempts: int = 3, base_delay: float = 1.0,
                 max_delay: float = 15.0, *, uri: str | None = None, what: str | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``fn()`` up to ``attempts`` times, sleeping ``base_delay * 2**k`` (at most
    ``max_delay``) between tries and logging each retry; then raise :class:`TrackingError`
    naming ``uri`` and ``what``, chained to the last error.

    MLflow errors that say the request itself is wrong (unknown resource, invalid value,
    already exists, permission denied by the server) and errors of the calling code
    (``TypeError``, ``AttributeError``...) are not retried and propagate unchanged so that callers
    can react to them; a :class:`TrackingError` from an inner call propagates unchanged too.
    Operating-system errors (a store or artifact folder that is not writable) are retried.
    This is the one retry layer of MLflow calls: the pipeline turns MLflow's own HTTP retries off
    (``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0`` in ``flows/settings.py`` and the deployments) and the
    register / champion tasks have no Prefect task retries.
    """
    attempts = max(1, int(attempts))
    label = what or getattr(fn, "__name__", "MLflow call")
    where = safe_uri(uri or mlflow.get_tracking_uri())
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except (TrackingError, KeyboardInterrupt):
            raise
        except _PROGRAMMING_ERRORS:  # a bug, not an outage: no point in waiting
            raise
        except Exception as err:  # noqa: BLE001 - any failure of the store is retried
            if _is_permanent(err):
                raise
            if attempt == attempts:
                raise TrackingError(
                    f"{label} failed after {attempts} attempt(s) against tracking URI {where}: "
                    f"{type(err).__name__}: {_short(err)}") from err
            delay = min(max_delay, base_delay * 2 ** (attempt - 1))
            log.warning("%s failed (attempt %d/%d) against tracking URI %s: %s: %s; retrying in "
                        "%.2f s", label, attempt, attempts, where, type(err).__name__, _short(err),
                        delay)
            sleep(delay)
    raise AssertionError("unreachable")


def _short(err: BaseException, limit: int = 500) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _retry(cfg: TrackingConfig, fn: Callable[[], T], what: str) -> T:
    return with_retries(fn, cfg.attempts, cfg.base_delay, cfg.max_delay, uri=cfg.uri, what=what)


# ------------------------------------------------------------------------------------- clients
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
                "moved it to %s; a new store is created", path, _short(err, 200), aside)
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
    return _retry(cfg, make, "opening the MLflow store")


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


# ---------------------------------------------------------------------------------- experiments
def experiment_for(cfg: TrackingConfig, graph: str, mlflow_client=None) -> str:
    """The id of experiment ``oral-<graph>``, created when absent (restored when deleted)."""
    name = experiment_name(graph)
    c = mlflow_client or client(cfg)
    base = cfg.artifact_base

    def get_or_create() -> str:
        exp = c.get_experiment_by_name(name)
        if exp is not None:
            if exp.lifecycle_stage == "deleted":
                log.warning("experiment %s was deleted; restoring it", name)
                c.restore_experiment(exp.experiment_id)
            return exp.experiment_id
        location = None
        if base is not None:
            folder = base / name
            folder.mkdir(parents=True, exist_ok=True)
            location = folder.as_uri()
        try:
            return c.create_experiment(name, artifact_location=location, tags={"graph": graph})
        except MlflowException as err:  # another process created it in between
            if str(err.error_code) not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
                raise
            exp = c.get_experiment_by_name(name)
            if exp is None:
                raise
            return exp.experiment_id

    return _retry(cfg, get_or_create, f"getting or creating experiment {name!r}")


# ----------------------------------------------------------------------------- training runs
def log_training_run(cfg: TrackingConfig, graph: str, params: Mapping[str, Any],
                     history: Sequence[Mapping[str, Any]], artifacts: Mapping[str, Any],
                     tags: Mapping[str, Any], model, metrics: Mapping[str, Any],
                     run_name: str | None = None) -> tuple[str, str]:
    """Log one training as one MLflow run of experiment ``oral-<graph>``; returns
    ``(run_id, model_uri)`` (``model_uri`` is ``models:/<logged model id>``).

    - ``params``: every configuration value (nested mappings flattened to ``a/b`` keys; lists and
      other values as JSON text).
    - ``history``: the per-epoch rows of ``ORAL.history``; every numeric value (``val_acc``,
      ``loss``, ``l_ce``, ``l_reg``, ``l_con``, ``classes``, ``seconds``, ...) becomes a metric at
      ``step=epoch``. All rows are written with a few ``log_batch`` calls.
    - ``metrics``: final metrics (``val_accuracy``, ``num_classes``, ``num_novel``,
      ``train_seconds``, scores...); nested mappings flattened to ``a/b``. They are linked to the
      logged model too.
    - ``artifacts``: ``predictions`` (a pyarrow Table) -> ``predictions/predictions.parquet``;
      ``class_summary`` (a list of per-class dicts, or a dict) -> ``summary/class_summary.json``
      and ``summary/class_summary.md``; ``validation_report`` (a path or a list of paths: the
      JSON/HTML report) -> ``validation/``; any other key: a Table -> ``<key>.parquet``, a dict
      or list -> ``<key>.json``, a path (``str``/``Path``, must exist) -> ``files/``. Plots are
      made here: ``plots/loss_curves.png`` (from ``history``) and ``plots/class_sizes.png`` (from
      the predictions, else from the class summary); ``history/history.json`` keeps the raw rows.
    - ``tags``: e.g. ``snapshot_date``, ``content_hash``, ``prefect_flow_run_id`` (``None``
      values skipped); ``graph`` is added.
    - ``model``: an :class:`~oral_core.inference.ORALModel` or the path of a saved one; logged as
      an MLflow pyfunc (:class:`ORALPyfunc`, as code, with ``oral_core`` as ``code_paths``) with
      the ORAL model file as its artifact, an explicit signature, an input example and complete
      pinned ``pip_requirements`` (no inference runs); see :func:`_log_pyfunc`.

    Calls: one ``create_run`` (with the tags), ``log_batch`` per 100 params and per 1000
    metrics, one ``log_artifacts``, and MLflow's own calls to log the model.

    Inputs are checked before anything is written. A failure after the run was created marks
    it ``FAILED`` (best effort) and raises :class:`TrackingError`.
    """
    from oral_core.inference import ORALModel

    flat_params = _flatten(params or {})
    epoch_metrics = history_metrics(history or [])
    final = {k: v for k, v in _flatten(metrics or {}).items() if _is_number(v)}
    run_tags = {str(k): v for k, v in (tags or {}).items() if v is not None}
    run_tags.setdefault("graph", graph)
    _check_artifacts(artifacts or {})
    if not isinstance(model, (ORALModel, str, os.PathLike)):
        raise TypeError(f"model must be an ORALModel or the path of a saved one, got {type(model)}")
    if not isinstance(model, ORALModel) and not Path(model).is_file():
        raise FileNotFoundError(f"model file {model} does not exist")

    c = client(cfg)
    experiment_id = experiment_for(cfg, graph, c)
    tags_dict = {_key(k): _tag_value(k, v) for k, v in run_tags.items()}
    run = _retry(cfg, lambda: c.create_run(experiment_id, run_name=run_name, tags=tags_dict),
                 f"creating a run in experiment oral-{graph}")
    run_id = run.info.run_id
    try:
        now = _now_ms()
        params_list = [Param(_key(k), _param_value(k, v)) for k, v in flat_params.items()]
        for chunk in _chunks(params_list, _MAX_PARAMS_TAGS_PER_BATCH):
            _retry(cfg, lambda chunk=chunk: c.log_batch(run_id, params=chunk), "logging params")
        with tempfile.TemporaryDirectory(prefix="oral-mlflow-") as tmp:
            tmp = Path(tmp)
            tree = tmp / "artifacts"
            write_artifacts(tree, artifacts or {}, history or [])
            _retry(cfg, lambda: c.log_artifacts(run_id, str(tree)), "logging artifacts")
            if isinstance(model, ORALModel):
                model_path = model.save(tmp / "oral_model.pt")
            else:
                model_path = Path(model)
            logged = _retry(cfg, lambda: c.create_logged_model(
                experiment_id, name=MODEL_NAME_IN_RUN, source_run_id=run_id,
                params={p.key: p.value for p in params_list}), "creating the logged model")
            model_id = logged.model_id
            model_config = {"graph": graph}
            if run_tags.get("oral_run_id"):  # the warehouse's run id: the pyfunc outputs it
                model_config["oral_run_id"] = str(run_tags["oral_run_id"])
            _retry(cfg, lambda: _log_pyfunc(cfg, run_id, model_id, model_path, model_config),
                   "logging the pyfunc model")

        # metrics after the model: MLflow links a run's step-0 metrics to a model logged after
        # them by logging them again, which would duplicate the first epoch in the history.
        # Final metrics carry the model id, so they show on the logged model too.
        all_metrics = [Metric(_key(k), float(v), now, int(step)) for k, v, step in epoch_metrics]
        all_metrics += [Metric(_key(k), float(v), now, 0, model_id=model_id)
                        for k, v in final.items()]
        for chunk in _chunks(all_metrics, _MAX_METRICS_PER_BATCH):
            _retry(cfg, lambda chunk=chunk: c.log_batch(run_id, metrics=chunk), "logging metrics")
        _retry(cfg, lambda: c.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED)),
               "finishing the run")
    except BaseException as err:
        with contextlib.suppress(Exception):
            c.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        if isinstance(err, (TrackingError, KeyboardInterrupt)) or not isinstance(err, Exception):
            raise
        raise TrackingError(f"logging run {run_id} against tracking URI {cfg.safe_uri()} failed: "
                            f"{type(err).__name__}: {_short(err)}") from err
    return run_id, f"models:/{model_id}"


def history_metrics(history: Iterable[Mapping[str, Any]]) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` for every finite-or-NaN numeric scalar of every history row
    (``step`` = the row's ``epoch``, else its position); lists and text are skipped."""
    out = []
    for i, row in enumerate(history):
        step = int(row.get("epoch", i))
        for key, value in row.items():
            if key == "epoch" or not _is_number(value):
                continue
            out.append((str(key), float(value), step))
    return out


def _log_pyfunc(cfg: TrackingConfig, run_id: str, model_id: str, model_path: Path,
                model_config: Mapping[str, Any] | None = None) -> None:
    """Write ``model_path`` as an :class:`ORALPyfunc` into the logged model ``model_id`` with
    ``mlflow.pyfunc.log_model``: the code file :data:`PYFUNC_CODE_FILE` as ``python_model``
    ("models from code": nothing is pickled), the ``oral_core`` package as ``code_paths``, the
    ORAL model file as the only artifact, complete pinned ``pip_requirements``
    (:func:`pip_requirements`), an explicit signature and an input example (a three-node graph
    of the model's feature width; MLflow checks it against the model when logging and writes
    ``serving_input_example.json``). The model thus loads and serves where only its
    ``requirements.txt`` is installed. ``model_config`` (``graph``, and ``oral_run_id``: the
    warehouse run id of the night that trained it) goes into the ``MLmodel`` file, where the
    pyfunc reads it when loaded.

    The logged model is created beforehand in the run's experiment (left to itself, MLflow
    3.17 puts a model logged for a run that is not the fluent active run into the *default*
    experiment) and linked to the run as its output here. The version is registered by
    :func:`register_model` (tags, idempotent under retries), not by ``registered_model_name``."""
    import oral_core
    from mlflow.entities import LoggedModelOutput
    from oral_core.inference import ORALModel

    width = int(ORALModel.load(model_path).payload["in_dim"])
    code_paths = [str(Path(oral_core.__file__).parent)]
    with using(cfg), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Any type hint.*")
        mlflow.pyfunc.log_model(
            name=MODEL_NAME_IN_RUN, python_model=str(PYFUNC_CODE_FILE), code_paths=code_paths,
            artifacts={MODEL_ARTIFACT: str(model_path)}, pip_requirements=pip_requirements(),
            signature=model_signature(), input_example=input_example(width),
            model_config=dict(model_config or {}), model_id=model_id)
        c = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
        c.log_outputs(run_id, [LoggedModelOutput(model_id, step=0)])


def pip_requirements() -> list[str]:
    """The pins of this environment for the logged model (no inference runs): every package the
    model's code file and ``oral_core`` import (:data:`PINNED_PACKAGES`), so that
    ``pip install -r requirements.txt`` in a new environment is enough to load and serve it."""
    reqs = []
    for name in PINNED_PACKAGES:
        try:
            version = _metadata.version(name)
        except _metadata.PackageNotFoundError:
            log.warning("package %s is not installed: the logged model's requirements.txt lacks "
                        "it and the model will not load elsewhere", name)
            continue
        reqs.append(f"{name}=={version.split('+')[0]}")  # drop local tags like +cpu
    return reqs


# ---------------------------------------------------------------------------------- artifacts
_RESERVED = {"predictions", "class_summary", "validation_report"}


def _as_paths(value) -> list[Path]:
    if isinstance(value, (str, os.PathLike)):
        return [Path(value)]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, os.PathLike)) for v in value):
        return [Path(v) for v in value]
    raise TypeError(f"expected a path or a list of paths, got {type(value).__name__}")


def _check_artifacts(artifacts: Mapping[str, Any]) -> None:
    for key, value in artifacts.items():
        if value is None:
            continue
        if key == "predictions" and not isinstance(value, pa.Table):
            raise TypeError(f"artifact 'predictions' must be a pyarrow Table, got {type(value).__name__}")
        if key == "class_summary" and not isinstance(value, (list, tuple, dict)):
            raise TypeError("artifact 'class_summary' must be a list of per-class dicts or a dict")
        if key == "validation_report" or isinstance(value, (str, os.PathLike)):
            for path in _as_paths(value):
                if not path.exists():
                    raise FileNotFoundError(f"artifact {key!r}: {path} does not exist")
        elif key not in _RESERVED and not isinstance(value, (pa.Table, dict, list, tuple)):
            raise TypeError(f"artifact {key!r}: unsupported value of type {type(value).__name__}")


def write_artifacts(root: Path, artifacts: Mapping[str, Any], history: Sequence[Mapping]) -> Path:
    """Lay out the run's artifact tree under ``root`` (see :func:`log_training_run`)."""
    import pyarrow.parquet as pq
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    predictions = artifacts.get("predictions")
    summary = artifacts.get("class_summary")
    if predictions is not None:
        (root / "predictions").mkdir(exist_ok=True)
        pq.write_table(predictions, root / "predictions" / "predictions.parquet")
    if summary is not None:
        (root / "summary").mkdir(exist_ok=True)
        (root / "summary" / "class_summary.json").write_text(_json(summary))
        (root / "summary" / "class_summary.md").write_text(summary_markdown(summary))
    report = artifacts.get("validation_report")
    if report is not None:
        _copy_paths(_as_paths(report), root / "validation")
    for key, value in artifacts.items():
        if key in _RESERVED or value is None:
            continue
        safe = _file_stem(key)
        if isinstance(value, pa.Table):
            pq.write_table(value, root / f"{safe}.parquet")
        elif isinstance(value, (str, os.PathLike)) or (
                isinstance(value, (list, tuple)) and value
                and all(isinstance(v, (str, os.PathLike)) for v in value)):
            _copy_paths(_as_paths(value), root / "files")
        else:
            (root / f"{safe}.json").write_text(_json(value))
    if history:
        (root / "history").mkdir(exist_ok=True)
        (root / "history" / "history.json").write_text(_json(list(history)))
        (root / "plots").mkdir(exist_ok=True)
        plot_loss_curves(history, root / "plots" / "loss_curves.png")
    sizes = class_sizes(predictions, summary)
    if sizes:
        (root / "plots").mkdir(exist_ok=True)
        plot_class_sizes(sizes, root / "plots" / "class_sizes.png")
    return root


def _copy_paths(paths: Sequence[Path], dest: Path) -> None:
    import shutil
    dest.mkdir(parents=True, exist_ok=True)
    for path in paths:
        if path.is_dir():
            shutil.copytree(path, dest / path.name, dirs_exist_ok=True)
        else:
            shutil.copy2(path, dest / path.name)


def summary_markdown(summary) -> str:
    """The class summary as a Markdown table (one row per class)."""
    rows = summary.get("classes") if isinstance(summary, dict) else summary
    if isinstance(summary, dict) and not isinstance(rows, (list, tuple)):
        rows = [{"key": k, "value": v} for k, v in summary.items()]
    rows = [r for r in (rows or []) if isinstance(r, Mapping)]
    lines = ["# Class summary", ""]
    if not rows:
        return "\n".join(lines + ["(no classes)", ""])
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    lines.append("| " + " | ".join(_md_cell(c) for c in columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for row in rows:
        lines.append("| " + " | ".join(_md_cell(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _md_cell(value, limit: int = 120) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_md_cell(v, limit) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, default=str)
    elif value is None:
        text = ""
    else:
        text = str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def class_sizes(predictions: pa.Table | None, summary=None) -> list[tuple[str, int, bool]]:
    """``(label, size, is_novel)`` per class, in class id order, from the predictions (column
    ``class_id`` or ``class_key``, with ``class_name``/``is_novel`` when present), else from
    the class summary's ``size`` entries."""
    if predictions is not None and predictions.num_rows:
        id_col = next((c for c in ("class_id", "class_key") if c in predictions.column_names), None)
        if id_col is not None:
            has_name = "class_name" in predictions.column_names
            has_novel = "is_novel" in predictions.column_names
            aggs = [(id_col, "count")]
            if has_name:
                aggs.append(("class_name", "min"))
            if has_novel:
                aggs.append(("is_novel", "max"))
            grouped = predictions.group_by(id_col).aggregate(aggs).sort_by(id_col)
            ids = grouped.column(id_col).to_pylist()
            counts = grouped.column(f"{id_col}_count").to_pylist()
            names = grouped.column("class_name_min").to_pylist() if has_name else [None] * len(ids)
            novel = grouped.column("is_novel_max").to_pylist() if has_novel else [False] * len(ids)
            return [(str(n) if n is not None else ("unassigned" if i is None or i < 0 else str(i)),
                     int(k), bool(v)) for i, k, n, v in zip(ids, counts, names, novel)]
    rows = summary.get("classes") if isinstance(summary, dict) else summary
    out = []
    for row in rows or []:
        if isinstance(row, Mapping) and _is_number(row.get("size")):
            label = row.get("class_name") or row.get("class_id") or row.get("class_key") or len(out)
            out.append((str(label), int(row["size"]), bool(row.get("is_novel", False))))
    return out


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def plot_loss_curves(history: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """PNG: the loss terms per epoch (left) and validation accuracy with class count (right).
    Uses the Agg canvas directly: no pyplot, no global backend switch."""
    fig = _figure(10, 4)
    ax_loss, ax_val = fig.subplots(1, 2)
    for key in LOSS_KEYS:
        pts = [(r.get("epoch", i), r[key]) for i, r in enumerate(history) if _is_number(r.get(key))]
        if pts:
            ax_loss.plot(*zip(*pts), label=key)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_title("training losses")
    if ax_loss.lines:
        ax_loss.legend()
    pts = [(r.get("epoch", i), r["val_acc"]) for i, r in enumerate(history)
           if _is_number(r.get("val_acc"))]
    if pts:
        ax_val.plot(*zip(*pts), color="tab:blue", label="val_acc")
    ax_val.set_xlabel("epoch")
    ax_val.set_ylabel("validation accuracy (known classes)")
    ax_val.set_title("model selection")
    pts = [(r.get("epoch", i), r["classes"]) for i, r in enumerate(history)
           if _is_number(r.get("classes"))]
    if pts:
        twin = ax_val.twinx()
        twin.step(*zip(*pts), where="post", color="tab:orange", label="classes")
        twin.set_ylabel("classes")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def plot_class_sizes(sizes: Sequence[tuple[str, int, bool]], path: Path) -> Path:
    """PNG: one bar per class, known classes blue, novel ones orange."""
    fig = _figure(max(5.0, min(20.0, 0.4 * len(sizes) + 2)), 4)
    ax = fig.subplots()
    labels = [s[0] for s in sizes]
    colors = ["tab:orange" if s[2] else "tab:blue" for s in sizes]
    ax.bar(range(len(sizes)), [s[1] for s in sizes], color=colors)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("nodes")
    ax.set_title("class sizes (blue: known, orange: novel)")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


# ------------------------------------------------------------------------------------ the pyfunc
# The pyfunc lives in tasks/oral_pyfunc.py, the self-contained code file logged with every model
# (it imports oral_core, never this package); its names are re-exported here for the pipeline.
PYFUNC_CODE_FILE = Path(_pyfunc_module.__file__)


def assign_snapshot(model, snapshot_path: str | Path, run_id: str | None = None) -> pa.Table:
    """Load a snapshot (``data_contracts.snapshots.load_snapshot``: one consistent version of
    its files), symmetrise its edges and assign every node with ``model.assign_raw``; the
    columns of :class:`ORALPyfunc`'s output (``run_id``: the model's warehouse run id)."""
    from data_contracts.snapshots import load_snapshot
    snap = load_snapshot(snapshot_path)
    return assign_graph(model, str(snapshot_path), snap.node_ids, snap.x, snap.edge_index,
                        run_id=run_id)


def load_champion(cfg: TrackingConfig, graph: str):
    """The champion of ``graph`` as a pyfunc (``mlflow.pyfunc.load_model``)."""
    with using(cfg):
        return _retry(cfg, lambda: mlflow.pyfunc.load_model(champion_uri(graph)),
                      f"loading {champion_uri(graph)}")


# ------------------------------------------------------------------------------------ registry
def register_model(cfg: TrackingConfig, graph: str, model_uri: str, run_id: str, *,
                   val_accuracy: float | None = None, contracts_passed: bool | None = None,
                   snapshot_date: str | None = None, tags: Mapping[str, Any] | None = None) -> int:
    """Register ``model_uri`` (from :func:`log_training_run`) as a new version of
    ``oral-<graph>``; returns the version number.

    The version is tagged with ``val_accuracy``, ``contracts_passed`` and ``snapshot_date``
    (taken from the run's metrics and tags when not given) and ``tags``. Idempotent per run and
    model: when a version of this run with this source already exists (a retried task), that
    version is returned instead of a second one.
    """
    name = model_name(graph)
    c = client(cfg)
    run = _retry(cfg, lambda: c.get_run(run_id), f"reading run {run_id}")
    if val_accuracy is None:
        val_accuracy = run.data.metrics.get("val_accuracy")
    if contracts_passed is None and "contracts_passed" in run.data.tags:
        contracts_passed = run.data.tags["contracts_passed"].lower() == "true"
    if snapshot_date is None:
        snapshot_date = run.data.tags.get("snapshot_date")
    version_tags = {"graph": graph, "run_id": run_id}
    if val_accuracy is not None:
        version_tags["val_accuracy"] = repr(float(val_accuracy))
    if contracts_passed is not None:
        version_tags["contracts_passed"] = str(bool(contracts_passed)).lower()
    if snapshot_date is not None:
        version_tags["snapshot_date"] = str(snapshot_date)
    version_tags.update({str(k): str(v) for k, v in (tags or {}).items() if v is not None})

    def ensure_model():
        try:
            c.create_registered_model(name, tags={"graph": graph},
                                      description=f"ORAL novel-class discovery on graph {graph}")
        except MlflowException as err:
            if str(err.error_code) not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
                raise
    _retry(cfg, ensure_model, f"creating registered model {name!r}")

    def existing():
        found = c.search_model_versions(f"name = '{name}' and run_id = '{run_id}'")
        return [v for v in found if v.source == model_uri]
    prior = _retry(cfg, existing, f"searching versions of {name!r}")
    if prior:
        version = max(prior, key=lambda v: int(v.version))
        for key, value in version_tags.items():
            if version.tags.get(key) != value:
                _retry(cfg, lambda key=key, value=value: c.set_model_version_tag(
                    name, version.version, key, value), "tagging the model version")
        return int(version.version)
    model_id = _model_id(model_uri)

    def create():
        # the SQL registry resolves ``models:/<id>`` with a default MlflowClient(): point the
        # process-wide URIs at this store for the call
        with using(cfg):
            return c.create_model_version(name, source=model_uri, run_id=run_id,
                                          tags=version_tags, model_id=model_id)
    version = _retry(cfg, create, f"registering a version of {name!r}")
    return int(version.version)


def _model_id(model_uri: str) -> str | None:
    """``m-...`` of ``models:/m-...`` (a logged model), else None."""
    if not model_uri.startswith("models:/"):
        return None
    rest = model_uri[len("models:/"):]
    return rest if rest and "/" not in rest and "@" not in rest else None


def champion_version(cfg: TrackingConfig, graph: str) -> int | None:
    """The version the ``champion`` alias of ``oral-<graph>`` points at (None: no champion)."""
    mv = _champion(cfg, graph, client(cfg))
    return None if mv is None else int(mv.version)


def _champion(cfg: TrackingConfig, graph: str, c):
    name = model_name(graph)

    def get():
        try:
            return c.get_model_version_by_alias(name, CHAMPION)
        except MlflowException as err:
            if str(err.error_code) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND", "INVALID_PARAMETER_VALUE"):
                return None
            raise
    return _retry(cfg, get, f"reading the {CHAMPION} alias of {name!r}")


def _version_accuracy(c, mv) -> float | None:
    value = mv.tags.get("val_accuracy")
    if value is None and mv.run_id:
        with contextlib.suppress(Exception):
            value = c.get_run(mv.run_id).data.metrics.get("val_accuracy")
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def promote_champion(cfg: TrackingConfig, graph: str, version: int | str, contracts_passed: bool,
                     val_accuracy: float, tolerance: float = 0.02) -> tuple[bool, str]:
    """Move the ``champion`` alias of ``oral-<graph>`` to ``version`` when the gates pass.

    Gates, in order: the data contracts passed; the validation accuracy (known classes) is a
    number; it is not below the current champion's by more than ``tolerance``
    (``val_accuracy >= champion - tolerance``). With no champion yet, passing contracts suffice.
    Returns ``(promoted, reason)``; the reason is also written to the version's
    ``champion_decision`` tag.
    """
    name = model_name(graph)
    version = str(int(version))
    c = client(cfg)
    current = _champion(cfg, graph, c)
    if not contracts_passed:
        promoted, reason = False, "data contracts failed: the champion stays"
    elif val_accuracy is None or not math.isfinite(float(val_accuracy)):
        promoted, reason = False, f"validation accuracy {val_accuracy!r} is not a number"
    elif current is None:
        promoted, reason = True, f"first champion (val_accuracy {float(val_accuracy):.4f})"
    elif current.version == version:
        promoted, reason = True, f"version {version} already is the champion"
    else:
        best = _version_accuracy(c, current)
        if best is None:
            promoted, reason = True, (f"champion v{current.version} has no recorded val_accuracy; "
                                      f"v{version} ({float(val_accuracy):.4f}) takes over")
        elif float(val_accuracy) >= best - tolerance:
            promoted, reason = True, (f"val_accuracy {float(val_accuracy):.4f} vs champion "
                                      f"v{current.version} {best:.4f} (tolerance {tolerance})")
        else:
            promoted, reason = False, (f"val_accuracy {float(val_accuracy):.4f} is more than "
                                       f"{tolerance} below champion v{current.version} {best:.4f}")
    if promoted and (current is None or current.version != version):
        _retry(cfg, lambda: c.set_registered_model_alias(name, CHAMPION, version),
               f"moving the {CHAMPION} alias of {name!r}")
    _retry(cfg, lambda: c.set_model_version_tag(name, version, "champion_decision", reason),
           "tagging the model version")
    log.info("%s v%s: %s (%s)", name, version, "promoted" if promoted else "not promoted", reason)
    return promoted, reason


# ------------------------------------------------------------------------------------- helpers
def _is_number(value) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # 0-d tensor or array
        return isinstance(value.item(), (int, float))
    return False


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings (and dataclasses) to ``a/b`` keys; 0-d arrays/tensors to Python scalars."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        if isinstance(value, Mapping):
            out.update(_flatten(value, full + "/"))
        elif hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            out[full] = value.item()
        else:
            out[full] = value
    return out


def _key(key: str) -> str:
    """An MLflow key: letters, digits, ``_ - . : / space``; anything else becomes ``_``."""
    ok = "".join(ch if ch.isalnum() or ch in "_-.:/ " else "_" for ch in str(key))
    return ok[:250] or "_"


def _param_value(key: str, value) -> str:
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, (bool, int, float)):
        text = str(value)
    else:
        text = _json(value, indent=None)
    if len(text) > _MAX_PARAM_LENGTH:
        log.warning("param %s is %d characters long; truncated to %d", key, len(text), _MAX_PARAM_LENGTH)
        text = text[: _MAX_PARAM_LENGTH - 3] + "..."
    return text


def _tag_value(key: str, value) -> str:
    text = value if isinstance(value, str) else str(value)
    if len(text) > _MAX_TAG_LENGTH:
        log.warning("tag %s is %d characters long; truncated", key, len(text))
        text = text[: _MAX_TAG_LENGTH - 3] + "..."
    return text


def _json(value, indent: int | None = 2) -> str:
    def default(obj):
        if hasattr(obj, "tolist"):
            return obj.tolist()
        if isinstance(obj, Path):
            return str(obj)
        if hasattr(obj, "isoformat"):
            return obj.isoformat()
        return str(obj)
    return json.dumps(value, indent=indent, default=default, allow_nan=True)


def _file_stem(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in str(key)).strip(".") or "artifact"


def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _now_ms() -> int:
    return int(time.time() * 1000)
