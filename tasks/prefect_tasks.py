"""Prefect tasks: thin adapters around :mod:`tasks.steps`, :mod:`tasks.tracking` and the warehouse.

I/O tasks retry; training is cached on the snapshot's content hash and the configuration hash
(its small JSON result is persisted, the model and predictions live in the run folder), so a
rerun after a crash does not retrain; the DuckDB writer runs under a global concurrency limit
and the warehouse itself waits (bounded, logged) for a file lock held by another process.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from . import steps

WRITER_LIMIT = "oral-duckdb-writer"


@task(name="find-snapshot", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def find_snapshot(root: str, graph: str, date: str | None, last_processed: dt.date | None) -> str:
    path = steps.pick_snapshot(root, graph, date, last_processed)
    get_run_logger().info("snapshot %s (last processed: %s)", path, last_processed or "none")
    return str(path)


def _retry_unless_unreadable(task, task_run, state) -> bool:
    """Retry a failed read (a snapshot that kept changing while read), not a file that is
    missing or not readable Parquet: that is bad data, reported by the contract."""
    from data_contracts.snapshots import UnreadableFile

    try:
        state.result()
    except UnreadableFile:
        return False
    except Exception:  # noqa: BLE001 - any other failure is retried
        return True
    return True


@task(name="ingest", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_retry_unless_unreadable)
def ingest(path: str):
    files = steps.read_snapshot(path)
    get_run_logger().info("read %s: %s bytes, content hash %s", path,
                          sum(files.sizes.values()), files.content_hash[:12])
    return files


@task(name="validate", cache_policy=NO_CACHE)
def validate(files, report_dir: str, last_processed: dt.date | None):
    # report_dir is Settings.reports_dir / graph (<state>/reports/<graph>); GX lives in <state>/gx
    report, json_path, html_path = steps.validate(files, Path(report_dir), last_processed,
                                                  state_dir=Path(report_dir).parents[1])
    logger = get_run_logger()
    (logger.info if report.passed else logger.error)("%s", report.summary())
    return report, str(json_path), str(html_path)


def _train_key(context, parameters) -> str:
    return (f"oral-train-{parameters['graph']}-{parameters['content_hash']}-"
            f"{parameters['config_hash']}{parameters.get('start_key') or ''}")


@task(name="train", cache_key_fn=_train_key, persist_result=True, result_serializer="json")
def train(snapshot, config_dict: dict, run_dir: str, feature_mode: str, graph: str,
          content_hash: str, config_hash: str, init: dict | None = None,
          start_key: str = "") -> dict:
    """Fit ORAL; ``graph``, ``content_hash``, ``config_hash`` and ``start_key`` (empty for a cold
    start, the model continued for a warm one, :func:`tasks.steps.plan_start`) form the cache
    key. ``init``: the warm start's model and predictions (:func:`tasks.steps.train`)."""
    from oral_core.config import ORALConfig

    logger = get_run_logger()
    config = ORALConfig.from_dict(config_dict)
    logger.info("training ORAL on %d nodes, %s (%s features)", snapshot.num_nodes,
                f"{config.epochs} epochs, cold start" if init is None else
                f"{min(config.warm_epochs, config.epochs)} epochs, warm start from "
                f"{init.get('model_path')}", feature_mode)
    result = steps.train(snapshot, config, Path(run_dir), feature_mode, init=init)
    if result.config_hash != config_hash:
        raise RuntimeError(f"configuration hash changed during training: {result.config_hash} != {config_hash}")
    logger.info("trained on %s in %.1f s: %d classes (%d novel), validation accuracy %.3f at epoch %d",
                result.device, result.train_seconds, result.num_classes, result.num_novel,
                result.val_accuracy, result.epoch)
    return result.to_dict()


@task(name="register", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def register(tracking_cfg, graph: str, run: dict, trained: dict, report_paths: tuple[str, str],
             classes: list[dict], scores: dict | None, tags: dict, promote: bool = True) -> dict:
    """One MLflow run (params, per-epoch metrics, artifacts, model), a registered version, and
    (with ``promote``) the champion gate. Idempotent: a run already logged for this ``run_id`` is
    reused."""
    return steps.track(tracking_cfg, graph, run, trained, report_paths, classes, scores, tags,
                       promote)


@task(name="champion", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def champion(tracking_cfg, graph: str, version: int, val_accuracy: float) -> dict:
    """The champion gate for a registered version, run after the DuckDB publish committed."""
    return steps.champion_gate(tracking_cfg, graph, version, val_accuracy)


def ensure_writer_limit() -> None:
    """Create the one-slot global concurrency limit around the DuckDB writer if it is missing."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(WRITER_LIMIT)
        except ObjectNotFound:
            client.upsert_global_concurrency_limit_by_name(WRITER_LIMIT, 1)


@task(name="publish", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def publish(warehouse_path: str, run: dict, snapshot_row: dict, predictions_path: str,
            classes: list[dict], graph: str, snapshot_date: dt.date) -> dict:
    from pathlib import Path

    from prefect.concurrency.sync import concurrency

    from tasks.warehouse import Warehouse

    ensure_writer_limit()
    with concurrency(WRITER_LIMIT, occupy=1, timeout_seconds=600):
        # the Parquet file, not a loaded table: DuckDB streams it in row groups (memory bounded)
        out = steps.publish(Warehouse(warehouse_path), run, snapshot_row, Path(predictions_path),
                            classes, graph, snapshot_date)
    get_run_logger().info("published run %s to %s", out["run_id"][:12], warehouse_path)
    return out
