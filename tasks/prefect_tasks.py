"""Prefect tasks: thin adapters around the night's plain steps (:mod:`tasks.intake`,
:mod:`tasks.start_plan`, :mod:`tasks.fitting`, :mod:`tasks.scoring`, :mod:`tasks.publishing`),
:mod:`tasks.registry` and the warehouse.

- **Caching**: training is cached by :class:`TrainingKey`, a ``CachePolicy`` keyed on the graph,
  the snapshot's content hash, the configuration hash and the start (its small JSON result is
  persisted under ``PREFECT_HOME``; the model and predictions live in the run folder), so a rerun
  after a crash does not retrain.
- **Retries, one layer per resource**: file reads (``find-snapshot``, ``ingest``) and the DuckDB
  write (``publish``) retry as Prefect tasks; MLflow calls retry in :func:`tasks.registry.with_retries`
  only (bounded, logged, permanent errors not retried, also for the CLI outside any flow), so
  ``register`` and ``champion`` have no task retries and MLflow's own HTTP retries are off
  (``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``, :mod:`flows.settings`).
- **Transaction**: the nightly flow runs ``lineage`` -> ``register`` -> ``publish`` -> ``champion``
  in one ``prefect.transactions.transaction`` (lineage first, so the registered model carries
  tonight's lineage ids); ``register``'s ``on_rollback`` hook (:func:`undo_registry`) puts the
  champion alias back when anything after it fails.
- The DuckDB writer runs under a file lock the operating system drops with its holder
  (:func:`tasks.warehouse.writer_lock.writer_lock`, held by the flow around ``lineage``,
  ``register`` and ``publish``, so MLflow registration is serialized across concurrent runs) and
  the warehouse itself waits (bounded, logged) for DuckDB's own lock held by another process.
- **Free space**: :func:`check_disk` before the writes of the transaction and ``train`` before it
  trains stop a night whose folders are (almost) full in one line (:mod:`tasks.diskspace`).
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from dataclasses import dataclass

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE, CachePolicy
from prefect.transactions import get_transaction

from . import fitting, intake, publishing, scoring, start_plan


def check_disk(state_dir, warehouse_path: str | None, tracking_uri: str | None, step: str,
               minimum_mb: float | None = None) -> None:
    """Raise :class:`tasks.diskspace.DiskFull` when a folder the night writes to (the state
    folder, the Prefect home, a local MLflow store, the DuckDB file's folder) has less than
    ``minimum_mb`` (default ``ORAL_MIN_FREE_MB``) free, before ``step``."""
    from tasks import diskspace

    diskspace.check_free_space(diskspace.folders(state_dir, warehouse_path, tracking_uri), step,
                               minimum_mb)


@task(name="find-snapshot", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def find_snapshot(root: str, graph: str, date: str | None, last_processed: dt.date | None) -> str:
    path = intake.pick_snapshot(root, graph, date, last_processed)
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
    files = intake.read_snapshot(path)
    get_run_logger().info("read %s: %s bytes, content hash %s", path,
                          sum(files.sizes.values()), files.content_hash[:12])
    return files


@task(name="validate", cache_policy=NO_CACHE)
def validate(files, report_dir: str, last_processed: dt.date | None):
    # report_dir is Settings.reports_dir / graph (<state>/reports/<graph>); GX lives in <state>/gx
    report, json_path, html_path = intake.validate(files, Path(report_dir), last_processed,
                                                  state_dir=Path(report_dir).parents[1])
    logger = get_run_logger()
    (logger.info if report.passed else logger.error)("%s", report.summary())
    return report, str(json_path), str(html_path)


@task(name="load-snapshot", cache_policy=NO_CACHE)
def load_snapshot(files):
    """The validated files as one in-memory snapshot, and its feature preprocessing
    (:func:`oral_core.datasets.auto_feature_mode`). Arrow hands out read-only buffers; torch
    wants writable memory: one copy, shared by every later step."""
    from data_contracts.snapshots import snapshot_from_files
    from oral_core.columns import writable
    from oral_core.datasets import auto_feature_mode

    snapshot = snapshot_from_files(files)
    snapshot.x = writable(snapshot.x)
    snapshot.edge_index = writable(snapshot.edge_index)
    return snapshot, auto_feature_mode(snapshot.x)


@task(name="plan-start", cache_policy=NO_CACHE)
def plan_start(tracking_cfg, graph: str, files, snapshot, feature_mode: str, config,
               dest_root: Path, cold: bool | None, warm_start: bool,
               cold_every: int) -> start_plan.StartPlan:
    """Warm (continue the previous night's champion) or cold, with the reason
    (:func:`tasks.start_plan.plan_start`). ``cold`` None: warm starts only when ``warm_start``
    (``ORAL_WARM_START``) is on."""
    if cold is None and not warm_start:
        plan = start_plan.StartPlan("cold", "warm starts are off (ORAL_WARM_START=1 or --warm turns "
                                       "them on)")
    else:
        plan = start_plan.plan_start(tracking_cfg, graph, files.date, files.content_hash,
                                int(snapshot.x.shape[1]), feature_mode, config,
                                list(snapshot.class_names), dest_root, cold=bool(cold),
                                cold_every=cold_every)
    get_run_logger().info("%s start: %s", plan.start, plan.reason)
    return plan


@dataclass
class TrainingKey(CachePolicy):
    """The training's identity as a Prefect cache policy: ``graph``, ``content_hash``,
    ``config_hash`` and ``start_key`` (empty for a cold start). The snapshot itself, the run
    folder and the warm start's ``init`` paths are not part of it: the same bytes trained with
    the same configuration from the same start give the same model, whatever the date."""

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs) -> str | None:
        return (f"oral-train-{inputs['graph']}-{inputs['content_hash']}-"
                f"{inputs['config_hash']}{inputs.get('start_key') or ''}")


@task(name="train", cache_policy=TrainingKey(), persist_result=True, result_serializer="json")
def train(snapshot, config_dict: dict, run_dir: str, feature_mode: str, graph: str,
          content_hash: str, config_hash: str, init: dict | None = None,
          start_key: str = "") -> dict:
    """Fit ORAL; ``graph``, ``content_hash``, ``config_hash`` and ``start_key`` (empty for a cold
    start, the model continued for a warm one, :func:`tasks.start_plan.plan_start`) form the cache
    key. ``init``: the warm start's model and predictions (:func:`tasks.fitting.train`)."""
    from oral_core.config import ORALConfig

    import os

    from tasks import diskspace

    logger = get_run_logger()
    # the model, the predictions and the persisted result: stop now, in one line, when full
    where = {"run folder": Path(run_dir)}
    if os.environ.get("PREFECT_HOME"):
        where["Prefect home"] = Path(os.environ["PREFECT_HOME"])
    diskspace.check_free_space(where, "training")
    config = ORALConfig.from_dict(config_dict)
    logger.info("training ORAL on %d nodes, %s (%s features)%s", snapshot.num_nodes,
                f"{config.epochs} epochs, cold start" if init is None else
                f"{min(config.warm_epochs, config.epochs)} epochs, warm start from "
                f"{init.get('model_path')}", feature_mode,
                f", data parallel over {config.shards} worker processes (batches of "
                f"{config.batch_size} seed nodes)" if config.shards > 1 else "")
    result = fitting.train(snapshot, config, Path(run_dir), feature_mode, init=init,
                         progress=fitting.ProgressLog(logger))  # a line every few seconds
    if result.config_hash != config_hash:
        raise RuntimeError(f"configuration hash changed during training: {result.config_hash} != {config_hash}")
    logger.info("trained on %s in %.1f s: %d classes (%d novel), validation accuracy %.3f at epoch %d",
                result.device, result.train_seconds, result.num_classes, result.num_novel,
                result.val_accuracy, result.epoch)
    return result.to_dict()


@task(name="emergence-check", cache_policy=NO_CACHE)
def emergence_check(snapshot, predictions_path: str, previous_predictions_path: str | None,
                    num_known: int, alpha: float, history=None) -> dict:
    """After a warm fit: did a class emerge since the continued model (:mod:`tasks.emergence`,
    labelled nodes only)? ``{"fired", "reason", "rows", "new_labelled", "new_members"}``;
    ``alpha`` 0: only tonight's new-node counts (for the check's history), no test."""
    from tasks.emergence import check_night

    out = check_night(snapshot, predictions_path, previous_predictions_path, num_known, alpha,
                      history)
    if alpha > 0:
        (get_run_logger().warning if out.fired else get_run_logger().info)(
            "emergence check: %s", out.reason)
    return {"fired": out.fired, "reason": out.reason, "rows": out.rows,
            "new_labelled": out.new_labelled, "new_members": out.new_members}


@task(name="decide-per-class", cache_policy=NO_CACHE)
def decide_per_class(snapshot, trained: fitting.TrainResult, config_dict: dict, feature_mode: str,
                     parts: tuple[str, ...] = (), warehouse_path: str | None = None,
                     graph: str | None = None) -> dict:
    """Tonight's answer decided per class (``ORAL_NIGHT_ANSWER=per_class``, with ``parts``
    such as ``paired`` and ``rejected``: :func:`tasks.answer.decide_per_class`)."""
    from oral_core.config import ORALConfig
    from tasks.answer import decide_per_class as decide

    out = decide(snapshot, trained, ORALConfig.from_dict(config_dict), feature_mode, parts,
                 warehouse_path, graph)
    checked = (f"; {out['burst']} recent node(s) in bursts grouped as young classes"
               if "burst" in out else "")
    checked += (f"; {out['dropped']} novel class(es) of known nodes dropped by the known-split "
               "check" if "dropped" in out else "")
    checked += (f"; {out['last']} node(s) named known last night moved back to known classes"
                if "last" in out else "")
    checked += (f"; the novelty check named {out['moved']} node(s) of novel groups a known class "
               f"by the {out['scorer']}'s energy" if "moved" in out else "")
    checked += (f"; {out['returned']} node(s) of novel groups among known neighbours returned "
                "to a known class" if "returned" in out else "")
    checked += (f"; {out['rejected']} node(s) the known classes reject grouped as novel"
                if "rejected" in out else "")
    get_run_logger().info(
        "answered per class: known classes named by %s (%s of %d validation nodes ORAL names "
        "known, right per classifier; %d nodes renamed%s)", out["namer"],
        ", ".join(f"{k} {v}" for k, v in out["right"].items()), out["nodes"], out["renamed"],
        checked)
    return out


@task(name="score", cache_policy=NO_CACHE)
def score(snapshot, predictions_path: str, num_known: int) -> dict | None:
    """Open-world accuracy against the snapshot's truth table, None without one."""
    import pyarrow.parquet as pq

    class_id = pq.read_table(predictions_path, columns=["class_key"]).column("class_key").to_numpy()
    out = scoring.score(snapshot, class_id, num_known)
    if out:
        get_run_logger().info("scored against truth: %s", scoring.scores_text(out, ", "))
    return out


@task(name="describe-classes", cache_policy=NO_CACHE)
def describe(snapshot, predictions_path: str, num_known: int) -> list[dict]:
    """One description per class found: size, purity, top features, exemplars."""
    import pyarrow.parquet as pq

    classes = scoring.describe_classes(snapshot, pq.read_table(predictions_path), num_known)
    get_run_logger().info("%d classes described (%d novel)", len(classes),
                          sum(c["is_novel"] for c in classes))
    return classes


@task(name="register", cache_policy=NO_CACHE)
def register(tracking_cfg, graph: str, run: dict, trained: fitting.TrainResult,
             report_paths: tuple[str, str],
             classes: list[dict], scores: dict | None, tags: dict, promote: bool = True,
             lineage: dict | None = None) -> dict:
    """One MLflow run (params, per-epoch metrics, artifacts, model), a registered version, and
    (with ``promote``) the champion gate. Idempotent: a run already logged for this ``run_id`` is
    reused. ``lineage``: ``{class_key: lineage_id}`` of tonight's classes (from :func:`lineage`),
    stored with the model so the pyfunc outputs each node's ``lineage_id``. Inside a transaction
    it records what its rollback hook needs (the champion before)."""
    from tasks.registry import champion as champion_rules
    from tasks.registry.store import Registry

    registry = Registry(tracking_cfg)  # one store client for the task's calls
    before = champion_rules.champion_version(registry, graph)
    out = champion_rules.track(registry, graph, run, trained, report_paths, classes, scores,
                               tags, promote, lineage=lineage)
    txn = get_transaction()
    if txn is not None:
        for key, value in (("tracking_cfg", tracking_cfg), ("graph", graph),
                           ("model_version", out["model_version"]), ("champion_before", before)):
            txn.set(key, value)
    return out


@register.on_rollback
def undo_registry(txn) -> None:
    """``on_rollback`` hook of :func:`register`: the nightly transaction failed after the version
    was registered (publish or the champion gate): the champion alias goes back to where
    it was when the run registered (:func:`tasks.registry.champion.undo_champion`)."""
    from tasks.registry import champion as champion_rules

    done = champion_rules.undo_champion(txn.get("tracking_cfg"), txn.get("graph"),
                                        txn.get("model_version"), txn.get("champion_before"))
    get_run_logger().warning("rolled back the registry step of version %s of %s: %s",
                             txn.get("model_version"), txn.get("graph"), done)


def degraded_line(graph: str, reason: str, per_class: bool) -> str:
    """The night's warning for a degraded model: it is never champion; it is not the latest
    answer either unless the night is answered per class (``ORAL_NIGHT_ANSWER=per_class...``,
    the default), which publishes tonight's answer all the same."""
    if per_class:
        return (f"{graph}: tonight's model is degraded and will not be the champion; tonight's "
                f"answer is decided per class and published: {reason}")
    return (f"{graph}: tonight's model is degraded and will not be the latest answer or the "
            f"champion: {reason}")


@task(name="quality-gate", cache_policy=NO_CACHE)
def quality_gate(tracking_cfg, graph: str, trained: fitting.TrainResult, reference_margin: float,
                 test: str = "mcnemar", scope: str = "night", per_class: bool = False) -> str | None:
    """Before anything is published: is tonight's model degraded
    (:func:`tasks.registry.champion.degradation`)? Returns the one-line reason, or None
    (``per_class``: the night is answered per class, :func:`degraded_line`)."""
    from tasks.registry import champion as champion_rules

    reason = champion_rules.degradation(tracking_cfg, graph, trained, reference_margin, test,
                                        scope)
    if reason:
        get_run_logger().warning("%s", degraded_line(graph, reason, per_class))
    return reason


@task(name="champion", cache_policy=NO_CACHE)
def champion(tracking_cfg, graph: str, version: int, val_accuracy: float,
             degraded: str | None = None) -> dict:
    """The champion gate for a registered version, run after the DuckDB publish committed
    (``degraded``: why :func:`quality_gate` found the model degraded; then it is not promoted)."""
    from tasks.registry import champion as champion_rules

    out = champion_rules.champion_gate(tracking_cfg, graph, version, val_accuracy, degraded)
    get_run_logger().info("champion gate for version %s: %s", version, out["reason"])
    return out


@task(name="lineage", cache_policy=NO_CACHE)
def lineage(warehouse_path: str, run: dict, predictions_path: str, classes: list[dict],
            graph: str, snapshot_date: dt.date, confirm_novel: bool = True,
            confirm_size: float | None = None, contained: bool = False,
            published: bool = False) -> dict:
    """Tonight's classes against the previous run's (:func:`tasks.publishing.lineage`, read only),
    novel classes confirmed on their second night unless ``confirm_novel`` is off (or, with
    ``confirm_size``, unless large enough: ``ORAL_CONFIRM_SIZE``); with ``contained`` a novel
    class grown out of a single previous one continues it (``ORAL_LINEAGE_CONTAINED``); with
    ``published`` a class whose match was a candidate continues the published class it absorbs
    (``ORAL_LINEAGE_PUBLISHED``). Run under the DuckDB writer lock, with :func:`register` and :func:`publish`, so no other run lands between."""
    from tasks.warehouse import Warehouse
    from tasks.warehouse.lineage import LineageConfig

    found = publishing.lineage(Warehouse(warehouse_path), run, Path(predictions_path), classes, graph,
                          snapshot_date, LineageConfig(confirm_novel=confirm_novel,
                                                       confirm_size=confirm_size,
                                                       continue_contained=contained,
                                                       continue_published=published))
    statuses = [r.status for r in found["result"].rows]
    get_run_logger().info("lineage: %s", ", ".join(f"{statuses.count(s)} {s}"
                                                   for s in sorted(set(statuses))) or "no class")
    return found


@task(name="publish", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def publish(warehouse_path: str, run: dict, snapshot_row: dict, predictions_path: str,
            found: dict, candidates_named: bool = False) -> dict:
    """The run into DuckDB in one transaction (:func:`tasks.publishing.write_run`), with the lineage
    ``found`` by :func:`lineage`; with ``candidates_named`` a candidate's nodes are published
    under their known class (``ORAL_CANDIDATES_NAMED``). The caller holds the DuckDB writer lock
    (:func:`tasks.warehouse.writer_lock.writer_lock`)."""
    from tasks.warehouse import Warehouse

    # the Parquet file, not a loaded table: DuckDB streams it in row groups (memory bounded)
    out = publishing.write_run(Warehouse(warehouse_path), run, snapshot_row, Path(predictions_path),
                               found, candidates_named)
    get_run_logger().info("published run %s to %s", out["run_id"][:12], warehouse_path)
    return out
