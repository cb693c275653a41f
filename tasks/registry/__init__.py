"""The MLflow side of the nightly pipeline: runs, artifacts, the registered model, the champion.

Plain functions (no Prefect): the flow's tasks wrap them. What lives where:

- :mod:`~tasks.registry.config`: :class:`TrackingConfig` (where MLflow lives: an embedded SQLite
  store ``sqlite:///<state_dir>/mlflow.db`` with artifacts under ``<state_dir>/mlartifacts`` by
  default, or an ``http(s)://`` ``mlflow server``) and the names of a graph's experiment,
  registered model and champion (``oral-<graph>``, :func:`champion_uri`).
- :mod:`~tasks.registry.retries`: :func:`with_retries`, bounded retries with exponential backoff
  around every MLflow call; after the last attempt a :class:`TrackingError` names the tracking URI
  and what failed.
- :mod:`~tasks.registry.store`: the SQLite store made safe to open, :func:`client`,
  :func:`using` (MLflow's process-wide URIs pointed at a store for a block), and
  :class:`Registry`, the store bound to its settings (one client, every call retried inside):
  what the functions of :mod:`~tasks.registry.runs` and :mod:`~tasks.registry.champion` take
  (or its :class:`TrackingConfig`).
- :mod:`~tasks.registry.runs`: :func:`experiment_for` (one experiment per graph) and
  :func:`log_training_run` (one run per training: params, per-epoch metrics, artifacts, tags, the
  model); :mod:`~tasks.registry.plots` draws its PNGs and :mod:`~tasks.registry.values` turns
  values into MLflow params, tags and JSON.
- :mod:`~tasks.registry.oral_pyfunc`: the model as an MLflow pyfunc (:class:`ORALPyfunc`), the
  self-contained code file logged with every model ("models from code"): it imports only
  ``oral_core`` (shipped inside the model as ``code_paths``), torch, numpy, pandas, pyarrow and
  mlflow, never ``tasks``, so a registered model loads and serves in an environment made from
  nothing but its own ``requirements.txt``. Loading it unpickles nothing.
- :mod:`~tasks.registry.pyfunc`: how that file is logged (``code_paths``, pinned requirements,
  signature, input example) and used in-process (:func:`assign_snapshot`, :func:`load_champion`).
- :mod:`~tasks.registry.champion`: the registered model ``oral-<graph>`` and every champion rule:
  :func:`register_model`, :func:`track` (a pipeline run's MLflow side, once per run id),
  :func:`promote_champion` (the gates), :func:`champion_gate`, :func:`undo_champion`,
  :func:`previous_champion` and :func:`download_model` (what warm starts read back).

Importing this package imports nothing heavy: each name is loaded from its submodule the first
time it is read, so MLflow is imported only by code that tracks (the names of
:mod:`~tasks.registry.config`, such as ``TrackingConfig`` and ``safe_uri``, are light).

Only public MLflow APIs are used, except
``SqlAlchemyStore._engine_map`` (see :func:`tasks.registry.store._dispose_cached_engines`).

These are the names callers use; a test that replaces one of them patches the submodule that
calls it (e.g. :mod:`tasks.registry.champion` for ``promote_champion``).
"""
import importlib
import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

#: the public names and the submodule each lives in; a submodule (and MLflow with it, for all
#: but ``config``) is imported the first time one of its names is read
_HOMES = {
    "champion": ("PROMOTED_TAG", "START_TAGS", "champion_gate", "champion_version",
                 "download_model", "previous_champion", "promote_champion", "register_model",
                 "track", "undo_champion"),
    "config": ("CHAMPION", "TrackingConfig", "champion_uri", "experiment_name", "model_name",
               "safe_uri"),
    "oral_pyfunc": ("MODEL_ARTIFACT", "ORALPyfunc", "assign_graph", "input_example",
                    "model_signature"),
    "plots": ("class_sizes", "plot_class_sizes", "plot_loss_curves"),
    "pyfunc": ("MODEL_NAME_IN_RUN", "PINNED_PACKAGES", "PYFUNC_CODE_FILE", "assign_snapshot",
               "load_champion", "pip_requirements"),
    "retries": ("TrackingError", "with_retries"),
    "runs": ("HISTORY_METRICS", "experiment_for", "history_metrics", "log_training_run",
             "summary_markdown", "write_artifacts"),
    "store": ("Registry", "client", "prepare_store", "using"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME_OF)


def __getattr__(name: str):
    """A public name, from its submodule, imported on first use (PEP 562)."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tasks.registry' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tasks.registry.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
