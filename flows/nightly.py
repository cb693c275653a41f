"""The nightly discovery flow and the backfill, as Prefect flows.

    snapshot -> ingest -> validate -> train ORAL -> score -> describe-classes
             -> transaction [ lineage -> register (MLflow) -> publish (DuckDB) -> champion ]
             -> events, artifacts

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
the date). The ``config`` parameter is typed (:data:`flows.params.ORALOverrides`).
Call :func:`flows.settings.configure_environment` before importing this module.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_link_artifact, create_table_artifact
from prefect.runtime import flow_run
from prefect.transactions import transaction

from data_contracts import snapshots as snap
from flows.params import ORALOverrides, as_overrides
from flows.settings import Settings
from oral_core.columns import writable
from tasks import prefect_tasks as pt
from tasks import steps
from tasks.warehouse.writer_lock import writer_lock


#: Where the nightly pipeline's defaults differ from ORALConfig's (the method's, which the
#: reproduction tables use): no progress bar (the flow logs a progress line instead), and the
#: known head where the validation nodes favour it (``known_head="auto"``, docs/method.md,
#: "Known-class fidelity"): on the nightly loop's young Cora graphs it named the known classes
#: +3.4 points better on validation nodes (s.e. 1.0, 24 nights, chosen and scored on separate
#: halves), +0.1 (0.2, 24 nights) on the 15-class generator, and it never acted on the static Table-2
#: graphs (14 seeds), whose rows therefore stay at ORALConfig's defaults
#: (benchmarks/results/known_head/README.md)
PIPELINE_DEFAULTS = {"progress": False, "known_head": "auto"}


def resolve_config(overrides: ORALOverrides | dict | None, device: str | None = None):
    """Pipeline defaults for ORAL (ORALConfig's, the paper's where it gives them, then
    :data:`PIPELINE_DEFAULTS`) plus ``overrides`` (an :data:`flows.params.ORALOverrides` or a
    dict of its keys)."""
    from oral_core.config import ORALConfig

    values = ORALConfig().to_dict() | PIPELINE_DEFAULTS | as_overrides(overrides)
    if device:
        values["device"] = device
    config = ORALConfig.from_dict(values)
    config.validate()
    return config


def _with_choice(config, device, settings, graph: str, logger):
    """The night's configuration: the defaults, then the graph's choice of ``oral choose``
    (``<state>/choose/<graph>.json``, :func:`tasks.steps.read_choice`), then the run's own
    ``config`` overrides, which win key by key. Returns it and what the choice contributed
    (``gamma=0.1``, ``defaults`` when the choice kept the defaults or everything it set was
    overridden, ``none`` without a usable choice). A bad configuration fails here, before any
    snapshot is read."""
    explicit = as_overrides(config)
    choice = steps.read_choice(settings.state_dir, graph)
    if choice is None:
        return resolve_config(explicit, device), "none"
    if choice.problem:
        logger.warning("the graph's choice is not applied: %s", choice.problem)
        return resolve_config(explicit, device), "none"
    applied = {k: v for k, v in choice.overrides.items() if k not in explicit}
    cfg = resolve_config(applied | explicit, device)
    label = ",".join(f"{k}={v}" for k, v in applied.items()) or "defaults"
    overridden = sorted(set(choice.overrides) - set(applied))
    logger.info("settings chosen by oral choose (%s): %s%s", choice.source, label,
                f" ({', '.join(overridden)} overridden by the run's config)" if overridden else "")
    return cfg, label


@functools.cache
def _slug_pairs() -> tuple[tuple[frozenset[str], ...], ...]:
    """The word lists of Prefect's generated run names: ``generate_slug(2)``
    (``prefect.utilities.names``) draws coolname's two-word names, each a cartesian product of
    an adjective list and an animal list; one tuple of word sets per such product."""
    from coolname.data import config  # Prefect's dependency: the words generate_slug draws

    def words(key: str) -> frozenset[str]:
        node = config.get(key, {})
        return frozenset(node.get("words", ())).union(*(words(k) for k in node.get("lists", ())))

    def products(key: str):
        node = config.get(key, {})
        if node.get("type") == "cartesian":
            yield tuple(words(k) for k in node["lists"])
        elif node.get("type") == "nested":
            for k in node["lists"]:
                yield from products(k)
    return tuple(products("2"))


def _generated_name(name: str) -> bool:
    """Whether ``name`` is one Prefect generated for an unnamed run (``crafty-okapi``): every
    word from the word list of its place; ``papers-rerun`` is a chosen name."""
    parts = tuple(name.split("-"))
    return any(len(parts) == len(lists) and all(w in ws for w, ws in zip(parts, lists))
               for lists in _slug_pairs())


def _given_name() -> str | None:
    """The run's name when its caller chose one (``prefect deployment run --flow-run-name``,
    ``run_deployment(flow_run_name=...)``), None when Prefect generated it (an
    ``adjective-animal`` pair from its word lists): Prefect applies ``flow_run_name`` to every
    run, and a name chosen on purpose (``papers-rerun`` too) is kept."""
    name = flow_run.get_name() or ""
    return None if not name or _generated_name(name) else name


def _night_name() -> str:
    """Flow run name of a night: ``<graph>-<date>`` (``<graph>-next``: the flow picks the date)."""
    params = flow_run.get_parameters() or {}
    return _given_name() or f"{params.get('graph', 'graph')}-{params.get('date') or 'next'}"


def _backfill_name() -> str:
    """Flow run name of a backfill: ``backfill-<graph>-<start>..<end>``."""
    params = flow_run.get_parameters() or {}
    return _given_name() or (f"backfill-{params.get('graph', 'graph')}-"
                             f"{params.get('start') or 'first'}..{params.get('end') or 'last'}")


def _train_night(plan, settings, graph: str, path, snapshot, files, cfg, chash: str, mode: str,
                 remote_training: bool | None) -> tuple[dict, str, str]:
    """Tonight's training for ``plan`` (in this process or on the training deployment): the
    train task's result, the run key (configuration hash + start key) and the run id."""
    from tasks.warehouse import make_run_id, make_training_id

    logger = get_run_logger()
    # the published run (DuckDB rows, MLflow run and version) is one per graph, snapshot date,
    # content, configuration and start (a warm start names the model it continued); training
    # depends on content, configuration and start only, so a graph that did not change
    # overnight is a new night that reuses the previous night's training
    run_key = chash + plan.key
    run_id = make_run_id(graph, files.date, files.content_hash, run_key)
    run_dir = settings.runs_dir / graph / make_training_id(graph, files.content_hash, run_key)[:16]
    remote = settings.remote_training if remote_training is None else bool(remote_training)
    if remote:  # the snapshot goes by path, results come back through the (shared) run folder
        from flows.training import train_via_deployment

        trained = train_via_deployment(
            settings.training_deployment, settings.remote_training_timeout, snapshot_path=str(path),
            content_hash=files.content_hash, config=cfg.to_dict(), run_dir=str(run_dir),
            feature_mode=mode, graph=graph, config_hash=chash, init=plan.init,
            start_key=plan.key)
    else:
        import socket

        from flows.training import describe_device

        where, why = describe_device(cfg.device)
        logger.info("training runs in-process on host %s, device %s (%s)", socket.gethostname(),
                    where, why)
        trained = pt.train(snapshot, cfg.to_dict(), str(run_dir), mode, graph, files.content_hash,
                           chash, plan.init, plan.key)
        if not all(Path(trained[k]).exists() for k in ("model_path", "predictions_path", "history_path")):  # the cache outlived its files: train again
            trained = pt.train.with_options(refresh_cache=True)(
                snapshot, cfg.to_dict(), str(run_dir), mode, graph, files.content_hash, chash,
                plan.init, plan.key)

    return trained, run_key, run_id


@flow(name="nightly-discovery", flow_run_name=_night_name)
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
            when it applies (a warm start, :func:`tasks.steps.plan_start`; a warm fit whose
            emergence check fires, :mod:`tasks.emergence`, is set aside and the night trained
            cold); ``None``: the ``ORAL_WARM_START`` setting (default off: cold).
    """
    from tasks.registry import TrackingConfig
    from tasks.warehouse import Warehouse

    logger = get_run_logger()
    settings = Settings.from_env(state_dir)
    snap.check_graph_name(graph)
    cfg, chosen = _with_choice(config, device, settings, graph, logger)
    warehouse = Warehouse(settings.warehouse_path)
    last = warehouse.last_processed_date(graph) if settings.warehouse_path.exists() else None
    path = pt.find_snapshot(snapshot_root, graph, date, last)
    unreadable = None
    try:
        files = pt.ingest(path)
    except snap.UnreadableFile as err:
        # a missing or unreadable file is bad data like any other: the contract reads the
        # folder file by file and reports it (file_present, readable_parquet)
        files, unreadable = None, err
    report, report_json, report_html = pt.validate(
        files if files is not None else path, str(settings.reports_dir / graph), last)
    if not report.passed:
        from tasks import events

        events.contract_failed(graph, path, report, report_html)
        _artifact_failed(graph, path, report, report_json, report_html)
        _artifact_report(graph, settings, settings.tracking_uri)  # lists the rejected snapshot
        broken = ", ".join(dict.fromkeys(f"{f.file} {f.rule}" for f in report.errors))
        raise steps.ContractFailed(
            f"snapshot {path} broke its data contract ({len(report.errors)} error(s): {broken}); "
            f"nothing was trained or published. Report: {report_html}", Path(report_html))
    if unreadable is not None:  # readable by the time the contract read it: not tonight's bytes
        raise unreadable
    snapshot_date = files.date

    snapshot = snap.snapshot_from_files(files)
    # Arrow hands out read-only buffers; torch wants writable memory (one copy, shared below)
    snapshot.x = writable(snapshot.x)
    snapshot.edge_index = writable(snapshot.edge_index)
    from oral_core.datasets import auto_feature_mode

    mode = auto_feature_mode(snapshot.x)
    from oral_core.identity import code_version

    chash = steps.run_config_hash(cfg, mode)
    tracking_cfg = TrackingConfig(settings.tracking_uri, settings.state_dir)
    # warm (continue the champion of the night before) or cold, with the reason
    if cold is None and not settings.warm_start:
        plan = steps.StartPlan("cold", "warm starts are off (ORAL_WARM_START=1 or --warm turns "
                                       "them on)")
    else:
        plan = steps.plan_start(tracking_cfg, graph, snapshot_date, files.content_hash,
                                int(snapshot.x.shape[1]), mode, cfg, list(snapshot.class_names),
                                settings.runs_dir / "_previous" / graph, cold=bool(cold),
                                cold_every=settings.cold_every)
    logger.info("%s start: %s", plan.start, plan.reason)
    trained, run_key, run_id = _train_night(plan, settings, graph, path, snapshot, files, cfg,
                                            chash, mode, remote_training)
    from tasks import emergence

    history = emergence.parse_history(plan.history)
    check = None
    if plan.start == "warm" and settings.emergence_alpha > 0:
        # a warm fit keeps the classes it started with; the new nodes' labels tell when a class
        # emerged meanwhile (tasks.emergence): then tonight is trained again from scratch
        check = pt.emergence_check(snapshot, trained["predictions_path"],
                                   (plan.init or {}).get("predictions_path"),
                                   trained["num_known"], settings.emergence_alpha, list(history))
        if check["fired"]:
            warm_seconds = trained["train_seconds"]
            plan = dataclasses.replace(
                plan, start="cold", reason=f"the warm fit was set aside, {check['reason']}",
                key="", init=None)
            logger.info("cold start: %s", plan.reason)
            trained, run_key, run_id = _train_night(plan, settings, graph, path, snapshot, files,
                                                    cfg, chash, mode, remote_training)
            trained = trained | {"train_seconds": trained["train_seconds"] + warm_seconds}
    if plan.previous_predictions:  # tonight's new-node label counts join the check's history
        same = (check is not None and not check["fired"]
                and (plan.init or {}).get("predictions_path") == plan.previous_predictions)
        counts = check if same else pt.emergence_check(
            snapshot, trained["predictions_path"], plan.previous_predictions,
            trained["num_known"], 0.0)
        if counts["new_members"]:
            history.append((counts["new_labelled"], counts["new_members"]))

    scores = pt.score(snapshot, trained["predictions_path"], trained["num_known"])
    classes = pt.describe(snapshot, trained["predictions_path"], trained["num_known"])
    warm = plan.start == "warm"
    start = {"start": plan.start, "start_reason": plan.reason, "start_key": plan.key,
             "warm_from": plan.source_run_id if warm else None,
             "warm_from_version": str(plan.source_version) if warm else None,
             "emergence_history": emergence.format_history(history) or None}
    run = {
        "graph": graph, "snapshot_date": snapshot_date, "content_hash": files.content_hash,
        "config_hash": run_key, "code_version": code_version(), "device": trained["device"],
        "epochs": trained["epochs"], "val_accuracy": trained["val_accuracy"],
        "num_classes": trained["num_classes"], "num_known": trained["num_known"],
        "num_novel": trained["num_novel"], "num_nodes": snapshot.num_nodes,
        "train_seconds": trained["train_seconds"], "scores": scores,
        "prefect_flow_run_id": str(flow_run.get_id() or ""),
    }
    from tasks.warehouse import RUN_COLUMNS

    run |= {k: v for k, v in {"start_mode": plan.start, "start_reason": plan.reason,
                              "warm_from_run_id": start["warm_from"],
                              "warm_from_version": start["warm_from_version"]}.items()
            if k in RUN_COLUMNS}
    # the gate's verdict before anything is published: a degraded model is registered and kept
    # for the record, but is never champion and never the latest answer (tasks.registry.champion)
    margin = settings.gate_reference_margin
    degraded = pt.quality_gate(tracking_cfg, graph, trained, math.inf if margin is None else margin)
    run |= {"gate_status": "degraded" if degraded else "ok", "gate_reason": degraded}
    tags = {"snapshot_date": snapshot_date.isoformat(), "content_hash": files.content_hash,
            "chosen_settings": chosen,
            "prefect_flow_run_id": run["prefect_flow_run_id"], "oral_run_id": run_id,
            **{k: v for k, v in start.items() if v not in (None, "")}}
    snapshot_row = {"path": str(path), "nodes": snapshot.num_nodes,
                    "edges": int(report.counts.get("edges", snapshot.edge_index.shape[1])),
                    "labelled_nodes": int((snapshot.labels >= 0).sum()),
                    "known_classes": len(snapshot.class_names), "validation_passed": True,
                    "validated_at": dt.datetime.now(dt.timezone.utc)}
    # one transaction: lineage, then the model registered with tonight's lineage ids (so the
    # pyfunc names each node's lineage_id), then DuckDB, and the champion alias only once DuckDB
    # holds the run; if the publish or the gate fails, register's on_rollback hook puts the
    # alias back (a failed lineage stops the run before anything is registered).
    with transaction():
        # a folder the night writes to that is (almost) full stops it here, in one line, before
        # anything is registered or published (tasks.diskspace)
        pt.check_disk(settings.state_dir, str(settings.warehouse_path), settings.tracking_uri,
                      "registering and publishing", settings.min_free_mb)
        # The DuckDB writer lock is held from lineage to publish, register included, so no other
        # run lands in DuckDB between tonight's lineage and its publish (MLflow registration is
        # serialized across concurrent runs too). A file lock the operating system drops with
        # its holder: a run killed here never locks later nights out (tasks.warehouse.writer_lock).
        # The champion gate runs after publish, outside the lock.
        with writer_lock(settings.warehouse_path, graph, settings.writer_lock_timeout):
            found = pt.lineage(str(settings.warehouse_path), run, trained["predictions_path"],
                               classes, graph, snapshot_date)
            lineage_ids = {str(k): v for k, v in found["result"].lineage_of.items()}
            tracked = pt.register(tracking_cfg, graph, run | {"run_id": run_id}, trained,
                                  (report_json, report_html), classes, scores, tags,
                                  promote=False, lineage=lineage_ids)
            run |= {"mlflow_run_id": tracked["mlflow_run_id"], "model_name": tracked["model_name"],
                    "model_version": tracked["model_version"]}
            published = pt.publish(str(settings.warehouse_path), run, snapshot_row,
                                   trained["predictions_path"], found)
        tracked = tracked | pt.champion(tracking_cfg, graph, tracked["model_version"],
                                        trained["val_accuracy"], degraded)
    classes = found["classes"]
    from tasks import events

    events.class_events(graph, snapshot_date, published["run_id"], found["result"].rows, classes)
    summary = {"graph": graph, "snapshot_date": snapshot_date.isoformat(), "run_id": published["run_id"],
               "classes": len(classes), "novel": sum(c["is_novel"] for c in classes),
               "statuses": published["statuses"], "scores": scores,
               "mlflow_run_id": tracked["mlflow_run_id"], "model_version": tracked["model_version"],
               "champion": tracked.get("promoted"), "val_accuracy": trained["val_accuracy"],
               "train_seconds": trained["train_seconds"], "start": plan.start,
               "start_reason": plan.reason, "warm_from_version": start["warm_from_version"],
               "epochs": trained["epochs"], "chosen_settings": chosen, "degraded": degraded}
    _artifact_summary(graph, snapshot_date, classes, published, tracked, scores, settings,
                      report_html, summary, tracking_cfg)
    _artifact_report(graph, settings, tracking_cfg.uri)
    logger.info("run %s: %s", published["run_id"][:12], json.dumps(summary, default=str))
    return summary


@flow(name="backfill", flow_run_name=_backfill_name)
def backfill(graph: str, snapshot_root: str, start: str | None = None, end: str | None = None,
             config: ORALOverrides | None = None, state_dir: str | None = None,
             device: str | None = None, remote_training: bool | None = None,
             cold: bool | None = None) -> list[dict]:
    """Every snapshot of ``graph`` dated in ``[start, end]``, oldest first, each as one nightly
    run (``cold`` as in :func:`nightly_discovery`)."""
    resolve_config(config, device)  # a bad configuration fails before the first night
    paths = snap.select_snapshots(snapshot_root, graph, start=start or dt.date.min,
                                  end=end or dt.date.max)
    if not paths:
        raise snap.SnapshotError(f"no snapshot of {graph!r} between {start or 'the first'} and {end or 'the last'}")
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
    emerged = [k for k, v in out["statuses"].items() if v == "emerged" and ":novel:" in k]
    score = (f"; scored All {out['scores']['all']:.1f}% Known {out['scores']['known']:.1f}% "
             f"Novel {out['scores']['novel']:.1f}%" if out.get("scores") else "")
    start = (f"; {out['start']} start ({out.get('start_reason', '')}), {out.get('epochs')} epochs"
             if out.get("start") else "")
    return (f"{out['graph']} {out['snapshot_date']}: {out['classes']} classes ({out['novel']} novel), "
            f"emerged {emerged or 'none'}, model version {out['model_version']}"
            f"{' (champion)' if out.get('champion') else ''}{score}{start}"
            + (f"; DEGRADED, not published as the latest answer: {out['degraded']}"
               if out.get("degraded") else ""))


def _link(path_or_uri) -> str:
    """A clickable link: URIs as they are, local paths as ``file://`` URIs."""
    text = str(path_or_uri)
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def _artifact_failed(graph, path, report, report_json, report_html) -> None:
    """A rejected snapshot: a table artifact of the broken rules and a link artifact to the
    contract report (self-contained HTML; GX's Data Docs need the internet to render and are
    not linked)."""
    key = _artifact_key(graph)
    rows = [{"file": f.file, "rule": f.rule, "severity": f.severity, "count": f.count,
             "message": f.message} for f in report.findings]
    create_table_artifact(rows, key=key, description=f"{graph}: snapshot `{path}` rejected by its "
                          "data contract; nothing was trained or published")
    create_link_artifact(_link(report_html), link_text=f"{graph}: contract report",
                         key=key + "-contract", description=f"JSON: {_link(report_json)}")


def _mlflow_link(tracking_cfg, mlflow_run_id: str) -> str | None:
    """The MLflow run in the MLflow UI (an ``http(s)`` tracking server), else its artifact
    folder (a local store); None when it cannot be read."""
    from tasks.registry import client

    try:
        info = client(tracking_cfg).get_run(mlflow_run_id).info
    except Exception:  # noqa: BLE001 - a missing link is no failed night
        return None
    uri = str(tracking_cfg.uri or "")
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/#/experiments/{info.experiment_id}/runs/{mlflow_run_id}"
    return _link(info.artifact_uri)


def _artifact_summary(graph, day, classes, published, tracked, scores, settings, report_html,
                      summary=None, tracking_cfg=None) -> None:
    """A published night: a table artifact of its classes (key ``oral-<graph>``) and link
    artifacts to the MLflow run and the contract report."""
    lineage, statuses = published["lineage"], published["statuses"]
    emerged = [c for c in classes if statuses.get(lineage[c["class_key"]]) == "emerged" and c["is_novel"]]
    rows = []
    for c in sorted(classes, key=lambda c: -c["size"]):
        lid = lineage[c["class_key"]]
        rows.append({"lineage_id": lid, "name": c["class_name"] or "", "novel": bool(c["is_novel"]),
                     "size": int(c["size"]), "status": statuses.get(lid, ""),
                     "purity": None if c["purity"] is None else round(float(c["purity"]), 3),
                     "top_features": ", ".join(str(f["feature"]) for f in c["top_features"][:3])})
    parts = [f"{graph} on {day}: {len(classes)} classes, {sum(c['is_novel'] for c in classes)} "
             f"novel, {len(emerged)} novel emerged tonight."]
    if summary:
        parts.append(f"Training: {summary['start']} start ({summary['start_reason']}), "
                     f"{summary['epochs']} epochs, {summary['train_seconds']:.1f} s"
                     + ("." if summary.get("chosen_settings", "none") == "none" else
                        f", settings chosen by oral choose: {summary['chosen_settings']}."))
    if scores:
        parts.append(f"Scored against truth: All {scores['all']:.1f}%, Known {scores['known']:.1f}%, "
                     f"Novel {scores['novel']:.1f}%.")
    parts.append(f"Model {tracked['model_name']} version {tracked['model_version']} (champion: "
                 f"{tracked.get('promoted')}); DuckDB run {published['run_id']}.")
    key = _artifact_key(graph)
    create_table_artifact(rows, key=key, description=" ".join(parts))
    link = _mlflow_link(tracking_cfg, tracked["mlflow_run_id"]) if tracking_cfg else None
    if link:
        create_link_artifact(link, link_text=f"{graph}: MLflow run {tracked['mlflow_run_id'][:12]}",
                             key=key + "-mlflow", description=f"model {tracked['model_name']} "
                             f"version {tracked['model_version']}, tracking store "
                             f"{tracked.get('tracking_uri', settings.tracking_uri)}")
    create_link_artifact(_link(report_html), link_text=f"{graph}: contract report",
                         key=key + "-contract", description="the snapshot's validation report")


def _artifact_report(graph: str, settings: Settings, tracking_uri: str | None) -> None:
    """Rewrite the graph's HTML report (:mod:`tasks.report`, as ``oral report`` does) and link
    it as an artifact; a report that cannot be written is a warning, never a failed night."""
    import os

    from prefect.artifacts import create_link_artifact

    from tasks.report import NoWarehouse, report

    try:
        path = report(settings.warehouse_path, graph, settings.reports_dir / graph / "report.html",
                      contract_dir=settings.reports_dir / graph, tracking_uri=tracking_uri,
                      prefect_api_url=os.environ.get("PREFECT_API_URL"),
                      state_dir=settings.state_dir)
    except NoWarehouse:  # a first night rejected by its contract: nothing to show yet
        return
    except Exception as err:  # noqa: BLE001 - the night is published; the page can be redone
        get_run_logger().warning("the HTML report of %s was not written (%s: %s); `oral report "
                                 "--graph %s` writes it", graph, type(err).__name__, err, graph)
        return
    create_link_artifact(path.resolve().as_uri(), link_text=f"{graph}: classes over nights",
                         key=_artifact_key(graph) + "-report", description="HTML report (oral report)")


def _artifact_key(graph: str) -> str:
    """Prefect artifact keys allow lower-case letters, digits and dashes only."""
    import re
    return "oral-" + (re.sub(r"[^a-z0-9-]", "-", graph.lower()) or "graph")
