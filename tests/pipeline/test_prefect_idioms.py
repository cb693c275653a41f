"""Prefect as its docs intend (issue 19.3): one transaction around the registry and the warehouse
with an ``on_rollback`` hook, a ``CachePolicy`` for training, one retry layer, scoring /
description / lineage as tasks, flow run names, the project's loggers in the UI, table and link
artifacts, events, and a typed configuration parameter.

The first tests need no Prefect server; the ``slow`` ones share one harness and state folder
(each works on its own graph)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: a small night (10 resolutions, the known-class head's hops fixed): these tests are about
#: Prefect's idioms, not the method
CONFIG = {"epochs": 8, "hidden_dim": 16, "pol_start_epoch": 4, "cluster_warmup_epochs": 2,
          "device": "cpu", "resolution_steps": 10, "known_head_hops": 2}
D1, D2 = "2026-04-01", "2026-04-02"


# ------------------------------------------------------------------------ no server needed
def test_config_parameter_is_typed():
    import inspect

    import pydantic

    from flows.configuration import resolve_config
    from flows.nightly import backfill, nightly_discovery
    from flows.params import ORALOverrides, as_overrides

    for fl in (nightly_discovery, backfill):
        assert inspect.signature(fl.fn).parameters["config"].annotation in (
            ORALOverrides | None, "ORALOverrides | None")
    model = ORALOverrides.model_validate({"epochs": "60", "pol": "false", "gamma": 0.4})
    assert model.overrides() == {"epochs": 60, "pol": False, "gamma": 0.4}
    # null means the default: a rerun from the UI sends every field, the empty ones as null
    assert as_overrides({"prior_num_classes": None, "epochs": None}) == {}
    assert as_overrides(ORALOverrides(epochs=5).model_dump()) == {"epochs": 5}
    # ... except where None is a setting: minibatch_above_edges=None turns the automatic
    # mini-batch switch off (its form entry starts at the default, which is no override)
    assert as_overrides({"minibatch_above_edges": None}) == {"minibatch_above_edges": None}
    assert resolve_config({"minibatch_above_edges": None}).minibatch_above_edges is None
    assert resolve_config({}).minibatch_above_edges == 2_000_000
    for bad in ({"pol": "ture"}, {"cluster_freeze_epoch": 0.5}, {"no_such_key": 1}):
        with pytest.raises(pydantic.ValidationError):
            ORALOverrides.model_validate(bad)
    assert resolve_config(model).epochs == 60 == resolve_config({"epochs": 60}).epochs
    with pytest.raises(ValueError, match="gamma must be in"):  # ranges stay in ORALConfig
        resolve_config({"gamma": 5})
    # the flow's parameter schema (the Prefect UI's form) has one typed entry per setting
    schema = nightly_discovery.parameters.model_dump()
    assert "ORALOverrides" in str(schema["definitions"]) and "warm_epochs" in str(schema)


def test_cli_set_values_map_to_the_typed_parameter(monkeypatch, tmp_path):
    """``oral run --set KEY=VALUE`` gives the flow overrides that validate into ORALOverrides."""
    import cli.pipeline as cp
    import flows.nightly as nightly
    from cli.main import main
    from flows.params import ORALOverrides

    seen = []
    out = {"graph": "g", "snapshot_date": "2026-01-01", "classes": 1, "novel": 0,
           "statuses": {}, "model_version": "1"}

    def fake_nightly(graph, root, date, config, *args, **kw):
        seen.append(config)
        return out
    monkeypatch.setattr(nightly, "nightly_discovery", fake_nightly)
    monkeypatch.setattr(cp, "start_pipeline", lambda state_dir: None)
    monkeypatch.setattr(cp, "_run_flow", lambda fn: fn() or 0)
    (tmp_path / "snaps" / "g" / "snapshot=2026-01-01").mkdir(parents=True)
    assert main(["run", "--graph", "g", "--snapshots", str(tmp_path / "snaps"), "--state-dir",
                 str(tmp_path / "state"), "--device", "cpu", "--set", "epochs=7",
                 "--set", "pol=false", "--set", "minibatch_above_edges=none"]) == 0
    overrides = ORALOverrides.model_validate(seen[0]).overrides()
    assert overrides["epochs"] == 7 and overrides["pol"] is False
    assert overrides["minibatch_above_edges"] is None  # the automatic mini-batch switch off


def test_training_cache_policy_is_the_training_key():
    from prefect.cache_policies import CachePolicy

    from tasks import prefect_tasks as pt

    policy = pt.train.cache_policy
    assert isinstance(policy, pt.TrainingKey) and isinstance(policy, CachePolicy)
    inputs = {"graph": "g", "content_hash": "c" * 8, "config_hash": "h-s0", "start_key": "",
              "snapshot": object(), "run_dir": "/a", "init": None}
    key = policy.compute_key(None, inputs, {})
    assert key == "oral-train-g-cccccccc-h-s0"
    # the snapshot object, the run folder and the date do not change the training's identity
    assert policy.compute_key(None, inputs | {"snapshot": object(), "run_dir": "/b"}, {}) == key
    assert policy.compute_key(None, inputs | {"start_key": "+warm-abc"}, {}) == key + "+warm-abc"


def test_one_retry_layer():
    """MLflow calls retry in tasks.registry.with_retries only; file reads and the DuckDB write
    retry as tasks."""
    from flows.settings import QUIET
    from tasks import prefect_tasks as pt

    assert pt.register.retries == 0 and pt.champion.retries == 0
    assert QUIET["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "0"
    assert pt.publish.retries == 2 and pt.ingest.retries == 2 and pt.find_snapshot.retries == 2
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES: \"0\"" in (ROOT / "deployments" / "prefect.yaml").read_text()


def test_flow_runs_the_cli_starts_send_no_heartbeats(monkeypatch):
    """A flow run the CLI starts (``_run_flow``) reads no heartbeat interval, so Prefect starts
    no heartbeat thread (which held each run up to a second at its end); outside it Prefect's
    own setting is back; an operator's PREFECT_FLOWS_HEARTBEAT_FREQUENCY is left to Prefect."""
    from prefect.settings import get_current_settings

    import cli.pipeline as cp
    from flows.settings import HEARTBEAT_VARIABLE, flow_runs_started_here

    def interval():
        return get_current_settings().flows.heartbeat_frequency

    monkeypatch.delenv(HEARTBEAT_VARIABLE, raising=False)
    before = interval()
    assert before is not None  # Prefect 3.8 sends them by default
    seen = []
    assert cp._run_flow(lambda: seen.append(interval())) == 0
    assert seen == [None] and interval() == before
    monkeypatch.setenv(HEARTBEAT_VARIABLE, "60")
    with flow_runs_started_here():
        assert interval() == before  # the variable set: Prefect's settings, untouched


def test_steps_are_tasks():
    from prefect import Task

    from tasks import prefect_tasks as pt

    for name in ("score", "describe", "lineage", "publish", "register", "champion"):
        assert isinstance(getattr(pt, name), Task), name
    assert pt.undo_registry in pt.register.on_rollback_hooks


def test_project_loggers_reach_prefect(tmp_path):
    """With the CLI's environment (configure_environment before prefect is imported), the
    project's loggers carry Prefect's API handler, so their records show in the run's logs."""
    code = ("import logging, sys; from flows.settings import configure_environment; "
            f"configure_environment({str(tmp_path)!r}); from prefect import flow; "
            "from prefect.logging.handlers import APILogHandler; "
            "print(*[any(isinstance(h, APILogHandler) for h in logging.getLogger(n).handlers) "
            "for n in ('tasks', 'oral_core', 'flows')]); "
            "logging.getLogger('tasks.fitting').warning('outside a flow: no warning, no error')")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PREFECT_")}
    out = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "True"]
    assert "API log handler" not in out.stderr


def test_flow_run_names(monkeypatch):
    """``<graph>-<date>`` replaces the name Prefect generates; a name the caller chose stays."""
    import flows.run_names as nightly

    params = {"graph": "papers", "date": "2026-11-20", "start": None, "end": "2026-11-30"}
    monkeypatch.setattr(nightly.flow_run, "get_parameters", lambda: params)
    for generated in ("crafty-okapi", "", None):
        monkeypatch.setattr(nightly.flow_run, "get_name", lambda g=generated: g)
        assert nightly.night_name() == "papers-2026-11-20"
        assert nightly.backfill_name() == "backfill-papers-first..2026-11-30"
    monkeypatch.setattr(nightly.flow_run, "get_name", lambda: "e2e-1234")
    assert nightly.night_name() == "e2e-1234" == nightly.backfill_name()
    # a chosen two-lower-case-word name stays (issue 19 review): only Prefect's own words go
    for chosen in ("papers-rerun", "nightly-fix", "crafty-papers"):
        monkeypatch.setattr(nightly.flow_run, "get_name", lambda c=chosen: c)
        assert nightly.night_name() == chosen == nightly.backfill_name()
    from prefect.utilities.names import generate_slug

    for generated in {generate_slug(2) for _ in range(200)}:  # what Prefect's server names a run
        monkeypatch.setattr(nightly.flow_run, "get_name", lambda g=generated: g)
        assert nightly.night_name() == "papers-2026-11-20", generated
    params["date"] = None
    monkeypatch.setattr(nightly.flow_run, "get_name", lambda: "crafty-okapi")
    assert nightly.night_name() == "papers-next"


def test_class_events(monkeypatch):
    import prefect.events

    from tasks import events

    sent = []
    monkeypatch.setattr(prefect.events, "emit_event", lambda **kw: sent.append(kw))
    row = lambda lid, status, **kw: SimpleNamespace(lineage_id=lid, status=status, size=5, **kw)  # noqa: E731
    rows = [row("g:novel:1", "emerged"), row("known:a", "persisting"), row("g:novel:2", "merged",
            merged_into="known:a"), row("g:novel:3", "vanished"), row("known:b", "grown")]
    classes = [{"lineage_id": "g:novel:1", "class_name": None}, {"lineage_id": "known:a",
                                                               "class_name": "a"}]
    names = events.class_events("g", "2026-01-02", "r" * 16, rows, classes)
    assert names == ["oral.class.emerged", "oral.class.merged", "oral.class.vanished"]
    assert [e["event"] for e in sent] == names
    assert sent[0]["resource"]["prefect.resource.id"] == "oral.class.g:novel:1"
    assert sent[0]["resource"]["oral.novel"] == "true" and sent[0]["payload"]["size"] == 5
    assert sent[1]["payload"]["merged_into"] == "known:a"
    assert sent[0]["related"][0]["prefect.resource.id"] == "oral.graph.g"

    report = SimpleNamespace(errors=[SimpleNamespace(rule="features_finite")], data_docs_page=None)
    events.contract_failed("g", "/x/g/snapshot=2026-01-03", report, "/r.html")
    assert sent[-1]["event"] == "oral.contract.failed"
    assert sent[-1]["resource"]["prefect.resource.id"] == "oral.snapshot.g.2026-01-03"
    assert sent[-1]["payload"]["rules"] == ["features_finite"]
    assert "data_docs" not in sent[-1]["payload"]  # GX's pages need the internet: not linked

    def broken(**kw):
        raise RuntimeError("no events client")
    monkeypatch.setattr(prefect.events, "emit_event", broken)
    assert events.class_events("g", "2026-01-02", "r" * 16, rows[:1], classes)  # never raises


def test_operators_docs_document_the_automation():
    """The automation example of docs/operators.md (and deployments/automations.yaml) is what
    ``prefect automation create --from-file`` accepts, triggered by the events the flow emits."""
    import re

    import yaml
    from prefect.events.schemas.automations import AutomationCore

    operators = (ROOT / "docs" / "operators.md").read_text()
    [block] = re.findall(r"```yaml\n(.*?)```", operators, re.S)
    assert "prefect automation create --from-file" in block
    for text in (block, (ROOT / "deployments" / "automations.yaml").read_text()):
        automations = [AutomationCore.model_validate(a) for a in yaml.safe_load(text)]
        assert {e for a in automations for e in a.trigger.expect} == {"oral.class.emerged",
                                                                      "oral.contract.failed"}


# ------------------------------------------------------------------- one harness, slow tests
@pytest.fixture(scope="module")
def env(tmp_path_factory, one_thread):
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ORAL_STATE_DIR", str(state))
        mp.delenv("ORAL_TRACKING_URI", raising=False)
        mp.delenv("ORAL_WAREHOUSE", raising=False)
        from flows.settings import configure_environment

        configure_environment(state)
        import logging

        from tests.prefect_harness import prefect_harness

        # Prefect attaches the API handler to PREFECT_LOGGING_EXTRA_LOGGERS when it is imported;
        # in this test process it may have been imported before configure_environment ran
        handlers = logging.getLogger("prefect.extra").handlers
        added = [(name, h) for name in ("tasks", "oral_core", "flows") for h in handlers
                 if h not in logging.getLogger(name).handlers]
        for name, h in added:
            logging.getLogger(name).addHandler(h)
        # the project's INFO lines reach the UI when the level lets them (oral -v, or a level
        # set for ``tasks``); without it its warnings and errors do
        level = logging.getLogger("tasks").level
        logging.getLogger("tasks").setLevel(logging.INFO)
        mp.setenv("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
        try:
            with prefect_harness():
                from data_contracts.simulate import simulate
                from data_contracts.synthetic import make_static_graph

                static = make_static_graph(num_nodes=300, num_classes=4, num_features=12,
                                           separation=4.0, seed=0, name="idioms")
                root = state / "snapshots"
                simulate(static, 2, root, "base", start_date=D1, seed=0,
                         known_classes=[0, 1, 2], novel_start={3: 1})
                yield SimpleNamespace(state=state, root=root)
        finally:
            logging.getLogger("tasks").setLevel(level)
            for name, h in added:
                logging.getLogger(name).removeHandler(h)


def _graph(env, name):
    if not (env.root / name).exists():
        shutil.copytree(env.root / "base", env.root / name)
    return name


def _night(env, graph, date=D1, **kw):
    from flows.nightly import nightly_discovery

    return nightly_discovery(graph, str(env.root), date, CONFIG, str(env.state), **kw)


def _client(env):
    import mlflow

    from tasks.registry import TrackingConfig

    cfg = TrackingConfig(None, env.state)
    return mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)


def _champion(env, graph):
    try:
        return int(_client(env).get_model_version_by_alias(f"oral-{graph}", "champion").version)
    except Exception:  # noqa: BLE001 - no model or no alias
        return None


def _runs(env, graph):
    import duckdb

    con = duckdb.connect(str(env.state / "oral.duckdb"), read_only=True)
    try:
        return con.execute("SELECT CAST(snapshot_date AS VARCHAR), model_version FROM runs "
                           "WHERE graph = ? ORDER BY 1", [graph]).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_a_night_in_the_ui(env):
    """Run name, tasks, artifacts and the project's logs of one night, read back from the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId,
                                                LogFilter, LogFilterFlowRunId, FlowRunFilter,
                                                FlowRunFilterId)
    from prefect.logging.handlers import APILogWorker

    graph = _graph(env, "ui")
    state = _night(env, graph, return_state=True)
    out = state.result()
    run_id = state.state_details.flow_run_id
    APILogWorker.drain_all(timeout=10)
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(run_id)
        assert flow_run.name == f"{graph}-{D1}"
        assert flow_run.parameters["config"]["epochs"] == CONFIG["epochs"]
        names = {t.name.rsplit("-", 1)[0] for t in client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))}
        assert {"find-snapshot", "ingest", "validate", "load-snapshot", "plan-start", "train",
                "decide-per-class", "score", "describe-classes", "quality-gate", "lineage",
                "register", "publish", "champion"} <= names  # one named task per recipe step
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
        by_key = {a.key: a for a in artifacts}
        key = f"oral-{graph}"
        assert by_key[key].type == "table"
        assert {f"{key}-mlflow", f"{key}-contract", f"{key}-report"} <= set(by_key)
        assert all(by_key[k].type == "markdown" or by_key[k].type == "link"
                   for k in (f"{key}-mlflow", f"{key}-contract", f"{key}-report"))
        assert "file://" in str(by_key[f"{key}-contract"].data)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
    assert out["classes"] >= 1 and str(out["classes"]) in str(by_key[key].description)
    loggers = {log.name for log in logs}
    assert any(n.startswith("tasks.") for n in loggers), sorted(loggers)


@pytest.mark.slow
def test_failed_publish_rolls_back_and_the_alias_stays(env, monkeypatch):
    """Publishing fails (every attempt) on the second night: the transaction rolls back, the
    alias stays on the first night's version, DuckDB holds the first night only; the rerun
    publishes and only then moves the alias (when the gate promotes)."""
    from tasks import prefect_tasks as pt
    from tasks import publishing

    graph = _graph(env, "rollback-publish")
    first = _night(env, graph, D1)
    assert _champion(env, graph) == first["model_version"]
    monkeypatch.setattr(pt.publish, "retry_delay_seconds", 0)

    def failing(*args, **kwargs):
        raise OSError("injected publish failure")
    monkeypatch.setattr(publishing, "write_run", failing)
    with pytest.raises(OSError, match="injected publish failure"):
        _night(env, graph, D2)
    monkeypatch.undo()
    assert _champion(env, graph) == first["model_version"]
    assert [d for d, _ in _runs(env, graph)] == [D1]
    second = _night(env, graph, D2)
    assert [d for d, _ in _runs(env, graph)] == [D1, D2]
    assert _champion(env, graph) == (second["model_version"] if second["champion"]
                                     else first["model_version"])


def _gate_moves_alias_then_fails(monkeypatch, env):
    """The champion gate moves the alias to the new version, then fails (e.g. the tracking
    server went away before the gate's tags were written)."""
    from tasks.registry import champion

    def gate(tracking_cfg, graph, version, val_accuracy, degraded=None):
        client = _client(env)
        client.set_registered_model_alias(f"oral-{graph}", "champion", str(version))
        client.set_model_version_tag(f"oral-{graph}", str(version), "champion_decision", "x")
        raise RuntimeError("injected failure after the alias moved")
    monkeypatch.setattr(champion, "champion_gate", gate)


@pytest.mark.slow
def test_rollback_hook_moves_the_alias_back(env, monkeypatch):
    """The gate fails after moving the alias: register's on_rollback hook moves it back to the
    previous version and drops the gate's decision tag; DuckDB keeps the committed run; the
    rerun runs the gate again."""
    graph = _graph(env, "rollback-gate")
    first = _night(env, graph, D1)
    assert _champion(env, graph) == first["model_version"]
    _gate_moves_alias_then_fails(monkeypatch, env)
    with pytest.raises(RuntimeError, match="injected failure after the alias moved"):
        _night(env, graph, D2)
    monkeypatch.undo()
    assert _champion(env, graph) == first["model_version"]
    [v1, v2] = sorted(_client(env).search_model_versions(f"name = 'oral-{graph}'"),
                      key=lambda v: int(v.version))
    assert "champion_decision" not in v2.tags
    second = _night(env, graph, D2)
    assert second["model_version"] == int(v2.version)
    assert "champion_decision" in _client(env).get_model_version(f"oral-{graph}", v2.version).tags


@pytest.mark.slow
def test_rollback_hook_removes_an_alias_there_was_not(env, monkeypatch):
    """The same on a graph's first night: there was no champion, so the alias is removed."""
    graph = _graph(env, "rollback-first")
    _gate_moves_alias_then_fails(monkeypatch, env)
    with pytest.raises(RuntimeError, match="injected failure after the alias moved"):
        _night(env, graph, D1)
    monkeypatch.undo()
    assert _champion(env, graph) is None
    assert [d for d, _ in _runs(env, graph)] == [D1]  # DuckDB had committed
    out = _night(env, graph, D1)
    assert _champion(env, graph) == out["model_version"]


@pytest.mark.slow
def test_contract_failure_emits_an_event_and_table_artifact(env, monkeypatch):
    import numpy as np
    import prefect.events

    from data_contracts import snapshots as snap
    from tasks.intake import ContractFailed

    graph = _graph(env, "bad-night")
    good = snap.load_snapshot(env.root / graph / f"snapshot={D1}")
    x = good.x.copy()
    x[:2, 0] = np.nan
    labels = np.asarray(good.class_names + [None], dtype=object)[
        np.where(good.labels >= 0, good.labels, -1)]
    nodes = snap.nodes_table(good.node_ids, x, labels.tolist())
    edges = snap.edges_table(good.node_ids.take(good.edge_index[0]),
                             good.node_ids.take(good.edge_index[1]))
    snap.write_snapshot(env.root, graph, "2026-04-05", nodes, edges)
    sent = []
    real = prefect.events.emit_event
    monkeypatch.setattr(prefect.events, "emit_event", lambda **kw: sent.append(kw) or real(**kw))
    with pytest.raises(ContractFailed):
        _night(env, graph, "2026-04-05")
    assert [e["event"] for e in sent] == ["oral.contract.failed"]
    assert "features_finite" in sent[0]["payload"]["rules"]
