"""Training runs in MLflow: one experiment per graph (:func:`experiment_for`, ``oral-<graph>``,
created with an explicit artifact location ``<artifact_root>/oral-<graph>``, so nothing lands in
``./mlruns``) and one run per training (:func:`log_training_run`: params, per-epoch metrics,
artifacts laid out by :func:`write_artifacts`, tags, and the model as an MLflow pyfunc).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
from mlflow.entities import Metric, Param, RunStatus
from mlflow.exceptions import MlflowException

from tasks.registry.config import TrackingConfig, experiment_name
from tasks.registry.plots import class_sizes, plot_class_sizes, plot_loss_curves
from tasks.registry.pyfunc import MODEL_NAME_IN_RUN, log_pyfunc
from tasks.registry.retries import TrackingError, short_message
from tasks.registry.store import Registry
from tasks.registry.values import (chunked, flatten_mapping, is_number, mlflow_key, now_ms,
                                   param_value, tag_value, to_json)

log = logging.getLogger(__name__)

HISTORY_METRICS = ("val_acc", "loss", "l_ce", "l_reg", "l_con", "classes", "seconds")
# MLflow's per-batch limits (mlflow.utils.validation)
_MAX_METRICS_PER_BATCH = 1000
_MAX_PARAMS_TAGS_PER_BATCH = 100


def experiment_for(registry: Registry | TrackingConfig, graph: str) -> str:
    """The id of experiment ``oral-<graph>``, created when absent (restored when deleted)."""
    name = experiment_name(graph)
    reg = Registry.of(registry)
    c = reg.client
    base = reg.cfg.artifact_base

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

    return reg.call(f"getting or creating experiment {name!r}", get_or_create)


# ----------------------------------------------------------------------------- training runs
def log_training_run(registry: Registry | TrackingConfig, graph: str, params: Mapping[str, Any],
                     history: Sequence[Mapping[str, Any]], artifacts: Mapping[str, Any],
                     tags: Mapping[str, Any], model, metrics: Mapping[str, Any],
                     run_name: str | None = None,
                     lineage: Mapping[Any, str] | None = None) -> tuple[str, str]:
    """Log one training as one MLflow run of experiment ``oral-<graph>``; returns
    ``(run_id, model_uri)`` (``model_uri`` is ``models:/<logged model id>``).

    - ``params``: every configuration value (nested mappings flattened to ``a/b`` keys; lists and
      other values as JSON text).
    - ``history``: the per-epoch rows of ``ORAL.history_``; every numeric value (``val_acc``,
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
      pinned ``pip_requirements`` (no inference runs); see :func:`log_pyfunc`.
    - ``lineage``: ``{class_key: lineage_id}`` of the classes this training found (the nightly
      flow computes lineage before it registers), stored in the model's ``model_config`` as
      ``oral_lineage`` so the pyfunc outputs each node's ``lineage_id``; without it (a model
      logged outside the nightly flow) the pyfunc's ``lineage_id`` is null.

    Calls: one ``create_run`` (with the tags), ``log_batch`` per 100 params and per 1000
    metrics, one ``log_artifacts``, and MLflow's own calls to log the model.

    Inputs are checked before anything is written. A failure after the run was created marks
    it ``FAILED`` (best effort) and raises :class:`TrackingError`.
    """
    from oral_core.inference import ORALModel

    flat_params = flatten_mapping(params or {})
    epoch_metrics = history_metrics(history or [])
    final = {k: v for k, v in flatten_mapping(metrics or {}).items() if is_number(v)}
    run_tags = {str(k): v for k, v in (tags or {}).items() if v is not None}
    run_tags.setdefault("graph", graph)
    _check_artifacts(artifacts or {})
    if not isinstance(model, (ORALModel, str, os.PathLike)):
        raise TypeError(f"model must be an ORALModel or the path of a saved one, got {type(model)}")
    if not isinstance(model, ORALModel) and not Path(model).is_file():
        raise FileNotFoundError(f"model file {model} does not exist")

    reg = Registry.of(registry)
    c = reg.client
    experiment_id = experiment_for(reg, graph)
    tags_dict = {mlflow_key(k): tag_value(k, v) for k, v in run_tags.items()}
    run = reg.call(f"creating a run in experiment oral-{graph}", c.create_run, experiment_id,
                   run_name=run_name, tags=tags_dict)
    run_id = run.info.run_id
    try:
        now = now_ms()
        params_list = [Param(mlflow_key(k), param_value(k, v)) for k, v in flat_params.items()]
        for chunk in chunked(params_list, _MAX_PARAMS_TAGS_PER_BATCH):
            reg.call("logging params", c.log_batch, run_id, params=chunk)
        with tempfile.TemporaryDirectory(prefix="oral-mlflow-") as tmp:
            tmp = Path(tmp)
            tree = tmp / "artifacts"
            write_artifacts(tree, artifacts or {}, history or [])
            reg.call("logging artifacts", c.log_artifacts, run_id, str(tree))
            if isinstance(model, ORALModel):
                model_path = model.save(tmp / "oral_model.pt")
            else:
                model_path = Path(model)
            logged = reg.call("creating the logged model", c.create_logged_model,
                              experiment_id, name=MODEL_NAME_IN_RUN, source_run_id=run_id,
                              params={p.key: p.value for p in params_list})
            model_id = logged.model_id
            model_config = {"graph": graph}
            if run_tags.get("oral_run_id"):  # the warehouse's run id: the pyfunc outputs it
                model_config["oral_run_id"] = str(run_tags["oral_run_id"])
            if lineage:  # tonight's class_key -> lineage_id: the pyfunc outputs it per node
                model_config["oral_lineage"] = {str(int(k)): str(v)
                                                for k, v in lineage.items() if v is not None}
            reg.call("logging the pyfunc model", log_pyfunc, reg.cfg, run_id, model_id,
                     model_path, model_config)

        # metrics after the model: MLflow links a run's step-0 metrics to a model logged after
        # them by logging them again, which would duplicate the first epoch in the history.
        # Final metrics carry the model id, so they show on the logged model too.
        all_metrics = [Metric(mlflow_key(k), float(v), now, int(step))
                       for k, v, step in epoch_metrics]
        all_metrics += [Metric(mlflow_key(k), float(v), now, 0, model_id=model_id)
                        for k, v in final.items()]
        for chunk in chunked(all_metrics, _MAX_METRICS_PER_BATCH):
            reg.call("logging metrics", c.log_batch, run_id, metrics=chunk)
        finished = RunStatus.to_string(RunStatus.FINISHED)
        reg.call("finishing the run", c.set_terminated, run_id, finished)
    except BaseException as err:
        with contextlib.suppress(Exception):
            c.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        if isinstance(err, (TrackingError, KeyboardInterrupt)) or not isinstance(err, Exception):
            raise
        raise TrackingError(f"logging run {run_id} against tracking URI {reg.safe_uri()} failed: "
                            f"{type(err).__name__}: {short_message(err)}") from err
    return run_id, f"models:/{model_id}"


def history_metrics(history: Iterable[Mapping[str, Any]]) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` for every finite-or-NaN numeric scalar of every history row
    (``step`` = the row's ``epoch``, else its position); lists and text are skipped."""
    out = []
    for i, row in enumerate(history):
        step = int(row.get("epoch", i))
        for key, value in row.items():
            if key == "epoch" or not is_number(value):
                continue
            out.append((str(key), float(value), step))
    return out



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
        (root / "summary" / "class_summary.json").write_text(to_json(summary))
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
            (root / f"{safe}.json").write_text(to_json(value))
    if history:
        (root / "history").mkdir(exist_ok=True)
        (root / "history" / "history.json").write_text(to_json(list(history)))
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



def _file_stem(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in str(key)).strip(".") or "artifact"
