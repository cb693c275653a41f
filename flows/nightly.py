"""The nightly discovery flow and the backfill, as Prefect flows.

    find snapshot -> read -> validate -> plan the start -> train (emergence check)
    -> [decide per class] -> score -> describe -> gate -> transaction [ lineage
    -> register (MLflow) -> publish (DuckDB) -> champion ] -> events, artifacts

With ``ORAL_NIGHT_ANSWER=per_class+paired+burstgrowmost+burstsplit+split+lastsplit+rejected+regroupcal`` (the default) every night publishes
an answer decided per class (:mod:`tasks.answer`): its known classes named by ORAL unless
another known-class classifier names the validation nodes better beyond chance, its novel
classes as ORAL found them unless one holds validation nodes as the known classes do (the
known-split check: then its nodes are named known; of a class it keeps, the part the previous
published answer named known goes back to known where that part alone holds validation nodes
as the known classes do) and the nodes that arrived in a burst
within the last two snapshots grouped as young classes first (joining a novel class they lie
in unless its other nodes look known, and grown over the recent nodes around them where they outnumber a node's own class), and the nodes the known classes reject,
among rejected neighbours, grouped as novel, and its novel classes cut where the cut is
reproducible on nights whose labelled classes show the cut telling them apart; the gate then
decides the champion alone (``whole``: the night judged whole, as before).

Every step is a Prefect task. The registry and the warehouse change in one
``prefect.transactions.transaction``: the ``champion`` alias moves only after DuckDB committed
the run, and when anything in the transaction fails the ``register`` task's ``on_rollback`` hook
puts the alias back where it was (:func:`tasks.prefect_tasks.undo_registry`). Lineage is computed
before the model is registered, so the registered pyfunc outputs each node's ``lineage_id`` (the
same key as DuckDB's); lineage, register and publish run under the DuckDB writer lock
(:func:`tasks.warehouse.writer_lock.writer_lock`, released by the OS if the run dies) so no other
run lands between lineage and publish. The cost: MLflow registration is serialized across
concurrent runs too.

A failed contract stops the run before training: nothing is published, the report is kept under
``state/reports`` and linked from the run's artifacts, an ``oral.contract.failed`` event is
emitted and the flow run fails. Lineage emits ``oral.class.emerged|merged|vanished`` events
(:mod:`tasks.events`). Flow runs are named ``<graph>-<date>`` (``<graph>-next`` when the flow picks
the date). The ``config`` parameter is typed (:data:`flows.params.ORALOverrides`); it is built and validated once, in
:func:`flows.configuration.resolve_config`.
Call :func:`flows.settings.configure_environment` before importing this module.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.transactions import transaction

from data_contracts import snapshots as snap
from flows import artifacts
from flows.configuration import resolve_config, with_choice
from flows.params import ORALOverrides
from flows.run_names import backfill_name, night_name
from flows.settings import Settings
from tasks import prefect_tasks as pt
from tasks import fitting, intake, scoring, start_plan
from tasks.warehouse.writer_lock import writer_lock


@dataclasses.dataclass
class Night:
    """What every step of one night reads: the graph, its settings, its configuration (built
    once, :func:`flows.configuration.with_choice`, and what ``oral choose`` contributed), the
    tracking store and the last night already published."""

    graph: str
    settings: Settings
    config: object
    chosen: str
    tracking: object
    last_processed: dt.date | None
    remote_training: bool


@dataclasses.dataclass
class Training:
    """Tonight's training: the train task's ``result``, the run key (configuration hash + start
    key) and run id it is published under, the start ``plan`` that made it, the emergence
    check's ``history`` of new-node label counts and whether the model was ``reused`` (the same
    snapshot content, settings and start trained before)."""

    result: fitting.TrainResult
    run_key: str
    run_id: str
    plan: start_plan.StartPlan
    history: list
    reused: bool = False


@flow(name="nightly-discovery", flow_run_name=night_name)
def nightly_discovery(graph: str, snapshot_root: str, date: str | None = None,
                      config: ORALOverrides | None = None, state_dir: str | None = None,
                      device: str | None = None, remote_training: bool | None = None,
                      cold: bool | None = None) -> dict:
    """Discover classes in one snapshot of ``graph`` and publish them.

    Args:
        graph: the graph's folder name under ``snapshot_root``.
        snapshot_root: the folder of Hive-style snapshots (``<graph>/snapshot=<date>/``).
        date: a snapshot date (``YYYY-MM-DD``); default: the next unprocessed night (the
            oldest snapshot when nothing was published for this graph, else the oldest newer
            than the last one published; the latest when every one has been).
        config: ORALConfig overrides, typed (:data:`flows.params.ORALOverrides`; a dict such
            as ``{"epochs": 60}`` is validated into one).
        state_dir: where the DuckDB file, MLflow store, reports and run folders live.
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        remote_training: hand training to the deployment ``ORAL_TRAINING_DEPLOYMENT`` (default
            ``train-remote/gpu``, see :mod:`flows.training`) and wait for it; ``None``: the
            ``ORAL_REMOTE_TRAINING`` setting (default off: training runs in this process).
        cold: ``True``: train from scratch; ``False``: continue the previous night's champion
            when it applies (a warm start, :func:`tasks.start_plan.plan_start`; a warm fit whose
            emergence check fires, :mod:`tasks.emergence`, is set aside and the night trained
            cold); ``None``: the ``ORAL_WARM_START`` setting (default off: cold).
    """
    night = open_night(graph, config, state_dir, device, remote_training)
    path = pt.find_snapshot(snapshot_root, graph, date, night.last_processed)
    files, report, report_json, report_html = read_and_validate(night, path)
    snapshot, mode = pt.load_snapshot(files)
    plan = pt.plan_start(night.tracking, graph, files, snapshot, mode, night.config,
                         night.settings.runs_dir / "_previous" / graph, cold,
                         night.settings.warm_start, night.settings.cold_every)
    training = train_night(night, plan, path, snapshot, files, mode)
    trained = training.result
    answer = answer_night(night, snapshot, trained, mode)  # what the night publishes
    predictions = answer["predictions_path"] if answer else trained.predictions_path
    scores = pt.score(snapshot, predictions, trained.num_known)
    classes = pt.describe(snapshot, predictions, trained.num_known)
    margin = night.settings.gate_reference_margin
    # the gate's verdict before anything is published: a degraded model is registered and kept
    # for the record, but is never champion and, unless the night is answered per class, never
    # the latest answer (tasks.registry.champion)
    degraded = pt.quality_gate(night.tracking, graph, trained,
                               math.inf if margin is None else margin, night.settings.gate_test,
                               night.settings.gate_scope, per_class=answer is not None)
    run, tags = run_record(night, files, snapshot, training, scores, degraded, answer)
    snapshot_row = {"path": str(path), "nodes": snapshot.num_nodes,
                    "edges": int(report.counts.get("edges", snapshot.edge_index.shape[1])),
                    "labelled_nodes": int((snapshot.labels >= 0).sum()),
                    "known_classes": len(snapshot.class_names), "validation_passed": True,
                    "validated_at": dt.datetime.now(dt.timezone.utc)}
    # one transaction: lineage, then the model registered with tonight's lineage ids (so the
    # pyfunc names each node's lineage_id), then DuckDB, and the champion alias only once DuckDB
    # holds the run; if the publish or the gate fails, register's on_rollback hook puts the
    # alias back (a failed lineage stops the run before anything is registered).
    settings, warehouse_path = night.settings, str(night.settings.warehouse_path)
    with transaction():
        # a (nearly) full folder stops the night here, in one line (tasks.diskspace)
        pt.check_disk(settings.state_dir, warehouse_path, settings.tracking_uri,
                      "registering and publishing", settings.min_free_mb)
        # held from lineage to publish, so no other run lands in DuckDB in between; a file lock
        # the operating system drops with its holder (tasks.warehouse.writer_lock)
        with writer_lock(settings.warehouse_path, graph, settings.writer_lock_timeout):
            found = pt.lineage(warehouse_path, run, predictions, classes, graph,
                               files.date, settings.confirm_novel,
                               settings.lineage_size(trained.known_separable),
                               settings.lineage_contained, settings.lineage_published)
            lineage_ids = {str(k): v for k, v in found["result"].lineage_of.items()}
            # the predictions artifact is what DuckDB gets: the answer, per class or whole
            tracked = pt.register(night.tracking, graph, run | {"run_id": training.run_id},
                                  dataclasses.replace(trained, predictions_path=predictions),
                                  (report_json, report_html), classes, scores, tags,
                                  promote=False, lineage=lineage_ids)
            run |= {k: tracked[k] for k in ("mlflow_run_id", "model_name", "model_version")}
            published = pt.publish(warehouse_path, run, snapshot_row, predictions, found,
                                   settings.candidates_named)
        tracked = tracked | pt.champion(night.tracking, graph, tracked["model_version"],
                                        trained.val_accuracy, degraded)
    return announce(night, files.date, found, published, tracked, training, scores, degraded,
                    report_html, answer)


def open_night(graph: str, config, state_dir, device, remote_training) -> Night:
    """The night's settings and configuration (a bad one fails here, before any snapshot is
    read) and the last night published for ``graph``."""
    from tasks.registry import TrackingConfig
    from tasks.warehouse import Warehouse

    settings = Settings.from_env(state_dir)
    snap.check_graph_name(graph)
    cfg, chosen = with_choice(config, device, settings, graph, get_run_logger())
    last = (Warehouse(settings.warehouse_path).last_processed_date(graph)
            if settings.warehouse_path.exists() else None)
    remote = settings.remote_training if remote_training is None else bool(remote_training)
    return Night(graph, settings, cfg, chosen, TrackingConfig(settings.tracking_uri,
                                                              settings.state_dir), last, remote)


def read_and_validate(night: Night, path: str):
    """Read the snapshot's files and check them against the data contract. A broken contract
    stops the night before training: nothing is published, the report is kept and linked, an
    ``oral.contract.failed`` event is emitted, and :class:`tasks.intake.ContractFailed` raised.
    Returns the files and the report (with its JSON and HTML paths)."""
    unreadable = None
    try:
        files = pt.ingest(path)
    except snap.UnreadableFile as err:
        # a missing or unreadable file is bad data like any other: the contract reads the
        # folder file by file and reports it (file_present, readable_parquet)
        files, unreadable = None, err
    settings, graph = night.settings, night.graph
    report, report_json, report_html = pt.validate(
        files if files is not None else path, str(settings.reports_dir / graph),
        night.last_processed)
    if not report.passed:
        from tasks import events

        events.contract_failed(graph, path, report, report_html)
        artifacts.contract_failed(graph, path, report, report_json, report_html)
        artifacts.graph_report(graph, settings, settings.tracking_uri)  # lists the rejected one
        broken = ", ".join(dict.fromkeys(f"{f.file} {f.rule}" for f in report.errors))
        raise intake.ContractFailed(
            f"snapshot {path} broke its data contract ({len(report.errors)} error(s): {broken}); "
            f"nothing was trained or published. Report: {report_html}", Path(report_html))
    if unreadable is not None:  # readable by the time the contract read it: not tonight's bytes
        raise unreadable
    return files, report, report_json, report_html


def train_once(night: Night, plan, path, snapshot, files, mode: str
               ) -> tuple[fitting.TrainResult, str, str, bool]:
    """Tonight's training for ``plan``, in this process or on the training deployment
    (:mod:`flows.training`): the train task's result, the run key (configuration hash + start
    key), the run id and whether the model was reused (trained before for the same snapshot
    content, settings and start)."""
    from tasks.warehouse import make_run_id, make_training_id

    graph, settings, cfg = night.graph, night.settings, night.config
    chash = fitting.run_config_hash(cfg, mode)
    # the published run (DuckDB rows, MLflow run and version) is one per graph, snapshot date,
    # content, configuration and start (a warm start names the model it continued); training
    # depends on content, configuration and start only, so a graph that did not change
    # overnight is a new night that reuses the previous night's training
    run_key = chash + plan.key
    run_id = make_run_id(graph, files.date, files.content_hash, run_key)
    run_dir = settings.runs_dir / graph / make_training_id(graph, files.content_hash, run_key)[:16]
    if night.remote_training:  # the snapshot goes by path, results come back by the run folder
        from flows.training import train_via_deployment

        trained = train_via_deployment(
            settings.training_deployment, settings.remote_training_timeout, snapshot_path=str(path),
            content_hash=files.content_hash, config=cfg.to_dict(), run_dir=str(run_dir),
            feature_mode=mode, graph=graph, config_hash=chash, init=plan.init,
            start_key=plan.key)
        return fitting.TrainResult.from_dict(trained), run_key, run_id, False
    import socket

    from flows.training import describe_device

    where, why = describe_device(cfg.device)
    get_run_logger().info("training runs in-process on host %s, device %s (%s)",
                          socket.gethostname(), where, why)
    args = (snapshot, cfg.to_dict(), str(run_dir), mode, graph, files.content_hash, chash,
            plan.init, plan.key)
    before = (run_dir / "model.pt").stat().st_mtime_ns if (run_dir / "model.pt").exists() else None
    trained = fitting.TrainResult.from_dict(pt.train(*args))  # a dict: Prefect's JSON cache
    if not all(Path(p).exists() for p in (trained.model_path, trained.predictions_path,
                                          trained.history_path)):
        # the cache outlived its files
        trained = fitting.TrainResult.from_dict(pt.train.with_options(refresh_cache=True)(*args))
    # the same snapshot content, settings and start trained before: its model is reused as is
    reused = before is not None and (run_dir / "model.pt").stat().st_mtime_ns == before
    return trained, run_key, run_id, reused


def train_night(night: Night, plan, path, snapshot, files, mode: str):
    """Tonight's training by ``plan``; a warm fit whose emergence check fires
    (:mod:`tasks.emergence`: the new nodes' labels say a class emerged meanwhile) is set aside
    and the night trained again from scratch. Returns the training (its result, run key and run
    id), the plan that made it and the check's history of new-node label counts
    (:class:`Training`)."""
    from tasks import emergence

    logger = get_run_logger()
    trained, run_key, run_id, reused = train_once(night, plan, path, snapshot, files, mode)
    history = emergence.parse_history(plan.history)
    check = None
    alpha = night.settings.emergence_alpha
    if plan.start == "warm" and alpha > 0:
        check = pt.emergence_check(snapshot, trained.predictions_path,
                                   (plan.init or {}).get("predictions_path"),
                                   trained.num_known, alpha, list(history))
        if check["fired"]:
            warm_seconds = trained.train_seconds
            plan = dataclasses.replace(
                plan, start="cold", reason=f"the warm fit was set aside, {check['reason']}",
                key="", init=None)
            logger.info("cold start: %s", plan.reason)
            trained, run_key, run_id, reused = train_once(night, plan, path, snapshot, files, mode)
            trained = dataclasses.replace(trained,
                                          train_seconds=trained.train_seconds + warm_seconds)
    if plan.previous_predictions:  # tonight's new-node label counts join the check's history
        same = (check is not None and not check["fired"]
                and (plan.init or {}).get("predictions_path") == plan.previous_predictions)
        counts = check if same else pt.emergence_check(
            snapshot, trained.predictions_path, plan.previous_predictions,
            trained.num_known, 0.0)
        if counts["new_members"]:
            history.append((counts["new_labelled"], counts["new_members"]))
    return Training(trained, run_key, run_id, plan, history, reused)


def answer_night(night: Night, snapshot, trained: fitting.TrainResult, mode: str
                 ) -> dict | None:
    """Tonight's answer decided per class (``ORAL_NIGHT_ANSWER``, default ``per_class+paired+burstgrowmost+burstsplit+split+lastsplit+rejected+regroupcal``:
    :func:`tasks.prefect_tasks.decide_per_class`), which the night publishes whatever the gate
    thinks of the model; None when the night is judged whole (``whole``)."""
    rule = night.settings.night_answer.split("+")
    if rule[0] == "whole":
        return None
    return pt.decide_per_class(snapshot, trained, night.config.to_dict(), mode, tuple(rule[1:]),
                               str(night.settings.warehouse_path), night.graph)


def run_record(night: Night, files, snapshot, training: Training, scores, degraded,
               answer: dict | None = None):
    """The night's ``runs`` row (what DuckDB and MLflow record of it) and its MLflow tags. A night
    answered per class (``answer``, :mod:`tasks.answer`) whose known classes another classifier
    names, or whose model the gate held back, is published with ``gate_status`` ``per_class``
    (an answer the analyst reads) and says why in ``gate_reason``."""
    from oral_core.identity import code_version
    from tasks import emergence
    from tasks.warehouse import RUN_COLUMNS

    trained, plan = training.result, training.plan
    warm = plan.start == "warm"
    start = {"start": plan.start, "start_reason": plan.reason, "start_key": plan.key,
             "warm_from": plan.source_run_id if warm else None,
             "warm_from_version": str(plan.source_version) if warm else None,
             "emergence_history": emergence.format_history(training.history) or None}
    run = {
        "graph": night.graph, "snapshot_date": files.date, "content_hash": files.content_hash,
        "config_hash": training.run_key, "code_version": code_version(), "device": trained.device,
        "epochs": trained.epochs, "val_accuracy": trained.val_accuracy,
        "num_classes": trained.num_classes, "num_known": trained.num_known,
        "num_novel": trained.num_novel, "num_nodes": snapshot.num_nodes,
        "train_seconds": trained.train_seconds, "scores": scores,
        "prefect_flow_run_id": str(flow_run.get_id() or ""),
    }
    run |= {k: v for k, v in {"start_mode": plan.start, "start_reason": plan.reason,
                              "warm_from_run_id": start["warm_from"],
                              "warm_from_version": start["warm_from_version"]}.items()
            if k in RUN_COLUMNS}
    run |= {"gate_status": "degraded" if degraded else "ok", "gate_reason": degraded}
    if answer is not None:  # the classes published are the answer's
        run |= {"num_classes": answer["num_classes"], "num_novel": answer["num_novel"]}
    if answer is not None and (degraded or answer["namer"] != "oral"):
        from tasks.answer import answer_reason

        run |= {"gate_status": "per_class", "gate_reason": answer_reason(degraded, answer)}
    tags = {"snapshot_date": files.date.isoformat(), "content_hash": files.content_hash,
            "chosen_settings": night.chosen,
            "prefect_flow_run_id": run["prefect_flow_run_id"], "oral_run_id": training.run_id,
            **{k: v for k, v in start.items() if v not in (None, "")}}
    if answer is not None:
        tags |= {"night_answer": night.settings.night_answer, "known_namer": answer["namer"]}
    return run, tags


def announce(night: Night, snapshot_date, found, published, tracked, training: Training,
             scores, degraded, report_html, answer: dict | None = None) -> dict:
    """After the transaction: the lineage events, the Prefect artifacts (the classes, the links,
    the graph's HTML report) and the night's summary, which the flow returns, logs and
    ``oral run`` prints (:func:`summary_line`)."""
    from tasks import events

    graph, classes, settings = night.graph, found["classes"], night.settings
    trained, plan = training.result, training.plan
    events.class_events(graph, snapshot_date, published["run_id"], found["result"].rows, classes)
    summary = {"graph": graph, "snapshot_date": snapshot_date.isoformat(),
               "run_id": published["run_id"], "classes": len(classes),
               "novel": sum(c["is_novel"] for c in classes), "statuses": published["statuses"],
               "new_tonight": found["new_tonight"],
               "scores": scores, "mlflow_run_id": tracked["mlflow_run_id"],
               "model_version": tracked["model_version"], "champion": tracked.get("promoted"),
               "val_accuracy": trained.val_accuracy, "train_seconds": trained.train_seconds,
               "start": plan.start, "start_reason": plan.reason,
               "warm_from_version": str(plan.source_version) if plan.start == "warm" else None,
               "epochs": trained.epochs, "chosen_settings": night.chosen,
               "reused": training.reused,
               # a held-back model whose night is answered per class is no degraded night
               "degraded": degraded if answer is None else None,
               "held_back": degraded if answer is not None else None,
               "known_namer": answer["namer"] if answer else None}
    artifacts.night_summary(graph, snapshot_date, classes, published, tracked, scores, settings,
                            report_html, summary, night.tracking)
    artifacts.graph_report(graph, settings, night.tracking.uri)
    get_run_logger().info("run %s: %s", published["run_id"][:12],
                          json.dumps(summary, default=str))
    return summary


@flow(name="backfill", flow_run_name=backfill_name)
def backfill(graph: str, snapshot_root: str, start: str | None = None, end: str | None = None,
             config: ORALOverrides | None = None, state_dir: str | None = None,
             device: str | None = None, remote_training: bool | None = None,
             cold: bool | None = None) -> list[dict]:
    """Every snapshot of ``graph`` dated in ``[start, end]``, oldest first, each as one nightly
    run (``cold`` as in :func:`nightly_discovery`)."""
    resolve_config(config, device)  # a bad configuration fails before the first night
    paths = snap.backfill_snapshots(snapshot_root, graph, start, end)
    logger = get_run_logger()
    results = []
    for i, path in enumerate(paths, 1):
        day = snap.snapshot_date(path).isoformat()
        logger.info("backfill %d/%d: %s %s", i, len(paths), graph, day)
        results.append(nightly_discovery(graph, snapshot_root, day, config, state_dir, device,
                                         remote_training, cold))
    return results


def summary_line(out: dict) -> str:
    """One line of a night's summary (what :func:`nightly_discovery` returns) for the terminal."""
    emerged = out.get("new_tonight")  # the emerged_classes rule (tasks.warehouse.new_tonight)
    if emerged is None:  # a summary from before that field
        emerged = [k for k, v in out["statuses"].items() if v == "emerged" and ":novel:" in k]
    score = f"; scored {scoring.scores_text(out['scores'])}" if out.get("scores") else ""
    start = (f"; {out['start']} start ({out.get('start_reason', '')}), {out.get('epochs')} epochs"
             if out.get("start") else "")
    if out.get("reused"):
        start += " (training reused: this snapshot was trained before with the same settings)"
    candidates = [k for k, v in (out.get("statuses") or {}).items() if v == "candidate"]
    pending = f" (candidates: {', '.join(candidates)})" if candidates else ""
    return (f"{out['graph']} {out['snapshot_date']}: {out['classes']} classes ({out['novel']} novel), "
            f"new tonight {', '.join(emerged) or 'none'}{pending}, model version {out['model_version']}"
            f"{' (champion)' if out.get('champion') else ''}{score}{start}"
            + (f"; answered per class, known classes named by {out['known_namer']}"
               if out.get("known_namer") else "")
            + (f"; the model is held back as champion: {out['held_back']}"
               if out.get("held_back") else "")
            + (f"; DEGRADED, not published as the latest answer: {out['degraded']}"
               if out.get("degraded") else ""))


