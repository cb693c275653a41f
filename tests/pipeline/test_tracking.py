"""The MLflow layer: one run per training (params, per-epoch metrics, artifacts, tags, the pyfunc
model), the registry with its champion gate, and bounded retries that end in a TrackingError.

All tests share one SQLite store (module-scoped) so the schema is created once."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

mlflow = pytest.importorskip("mlflow")

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*:DeprecationWarning")  # inside MLflow

from data_contracts.snapshots import edges_table, load_snapshot, nodes_table, write_snapshot  # noqa: E402
from oral_core.config import ORALConfig  # noqa: E402
from oral_core.graph import canonical_edges  # noqa: E402
from oral_core.inference import ORALModel  # noqa: E402
from oral_core.splits import make_split  # noqa: E402
from oral_core.synthetic import make_attributed_sbm  # noqa: E402
from oral_core.trainer import ORAL  # noqa: E402
from tasks import registry as tracking  # noqa: E402
from tasks.registry import TrackingConfig, TrackingError  # noqa: E402

GRAPH = "toy"
CLASS_NAMES = ["alpha", "beta", "gamma"]
WAREHOUSE_RUN_ID = "0123456789abcdef0123456789abcdef"  # what the nightly flow tags: its DuckDB run id


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    graph = make_attributed_sbm(num_nodes=300, num_classes=4, feature_dim=16, seed=0)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    config = ORALConfig(epochs=20, hidden_dim=16, progress=False, pol_start_epoch=10,
                        cluster_warmup_epochs=5, device="cpu", seed=0)
    oral = ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                            split.val_labels(graph.y))
    model = ORALModel.from_fit(oral, CLASS_NAMES)
    root = tmp_path_factory.mktemp("tracking")
    ids = [f"n{i:03d}" for i in range(graph.x.shape[0])]
    train = split.train_labels(graph.y).numpy()
    labels = [CLASS_NAMES[c] if c >= 0 else None for c in train]
    src, dst = graph.edge_index.numpy()
    once = src < dst  # each pair stored once: the reader must symmetrise
    snap = write_snapshot(root / "snapshots", GRAPH, "2026-01-31",
                          nodes_table(ids, graph.x.numpy(), labels),
                          edges_table([ids[i] for i in src[once]], [ids[i] for i in dst[once]]))
    model_file = model.save(root / "model.pt")
    yield {"root": root, "config": config, "oral": oral, "model": model, "snapshot": snap,
           "model_file": model_file}
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def cfg(fitted):
    return TrackingConfig(None, fitted["root"] / "state", attempts=2, base_delay=0.01, max_delay=0.02)


@pytest.fixture(scope="module")
def logged(fitted, cfg):
    model = fitted["model"]
    predictions = tracking.assign_snapshot(model, fitted["snapshot"])
    report = fitted["root"] / "validation_report.json"
    report.write_text(json.dumps({"passed": True, "rules": []}))
    html = fitted["root"] / "validation_report.html"
    html.write_text("<html><body>passed</body></html>")
    summary = [{"class_id": 0, "class_name": "alpha", "size": 120, "is_novel": False,
                "top_features": ["f1", "f2"]},
               {"class_id": 3, "class_name": "novel_3", "size": 60, "is_novel": True}]
    oral = fitted["oral"]
    metrics = {"val_accuracy": float(oral.selected_state()["val_acc"]), "num_classes": 4,
               "num_novel": 1, "train_seconds": 1.5, "scores": {"all": 0.8, "known": 0.9}}
    tags = {"snapshot_date": "2026-01-31", "content_hash": "abc123",
            "prefect_flow_run_id": "flow-run-1", "contracts_passed": "true",
            "oral_run_id": WAREHOUSE_RUN_ID}
    started = time.perf_counter()
    run_id, model_uri = tracking.log_training_run(
        cfg, GRAPH, fitted["config"].to_dict(), oral.history_,
        {"predictions": predictions, "class_summary": summary,
         "validation_report": [report, html]}, tags, model, metrics)
    return {"run_id": run_id, "model_uri": model_uri, "metrics": metrics, "tags": tags,
            "predictions": predictions, "seconds": time.perf_counter() - started}


def test_import_tasks_does_not_import_mlflow():
    code = "import sys, tasks; assert 'mlflow' not in sys.modules, 'import tasks pulled in mlflow'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_config_defaults(tmp_path):
    cfg = TrackingConfig(None, tmp_path)
    assert cfg.uri == f"sqlite:///{tmp_path.absolute().as_posix()}/mlflow.db"
    assert cfg.artifact_base == tmp_path.absolute() / "mlartifacts"
    remote = TrackingConfig("http://user:secret@127.0.0.1:5000", tmp_path)
    assert remote.is_remote and remote.artifact_base is None and remote.registry == remote.uri
    assert "secret" not in remote.safe_uri()


def test_one_experiment_per_graph(cfg, logged):
    first = tracking.experiment_for(cfg, GRAPH)
    assert tracking.experiment_for(cfg, GRAPH) == first
    exp = tracking.client(cfg).get_experiment(first)
    assert exp.name == f"oral-{GRAPH}"
    assert exp.artifact_location == (cfg.state_dir / "mlartifacts" / f"oral-{GRAPH}").as_uri()
    assert tracking.experiment_for(cfg, "other") != first


def test_run_has_params_metrics_and_tags(fitted, cfg, logged):
    c = tracking.client(cfg)
    run = c.get_run(logged["run_id"])
    assert run.info.status == "FINISHED"
    assert run.info.experiment_id == tracking.experiment_for(cfg, GRAPH)
    config = fitted["config"].to_dict()
    assert set(config) <= set(run.data.params)
    assert run.data.params["hidden_dim"] == "16" and run.data.params["epochs"] == "20"
    history = fitted["oral"].history_
    for key in tracking.HISTORY_METRICS:
        points = c.get_metric_history(logged["run_id"], key)
        expected = [row["epoch"] for row in history if key in row]
        assert sorted(m.step for m in points) == expected, key
    val = sorted(c.get_metric_history(logged["run_id"], "val_acc"), key=lambda m: m.step)
    assert [m.value for m in val] == pytest.approx([row["val_acc"] for row in history])
    metrics = run.data.metrics
    assert metrics["val_accuracy"] == pytest.approx(logged["metrics"]["val_accuracy"])
    assert metrics["num_classes"] == 4 and metrics["num_novel"] == 1
    assert metrics["scores/all"] == pytest.approx(0.8)
    for key, value in logged["tags"].items():
        assert run.data.tags[key] == value
    assert run.data.tags["graph"] == GRAPH


def test_run_artifacts(cfg, logged):
    c = tracking.client(cfg)
    run = c.get_run(logged["run_id"])
    root = Path(run.info.artifact_uri.removeprefix("file://"))
    assert root.is_relative_to(cfg.state_dir / "mlartifacts")
    for rel in ("predictions/predictions.parquet", "summary/class_summary.json",
                "summary/class_summary.md", "validation/validation_report.json",
                "validation/validation_report.html", "plots/loss_curves.png",
                "plots/class_sizes.png", "history/history.json"):
        assert (root / rel).is_file(), rel
    assert pq.read_table(root / "predictions/predictions.parquet").equals(logged["predictions"])
    for png in root.glob("plots/*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (root / "summary/class_summary.md").read_text()
    assert "| class_id | class_name | size | is_novel | top_features |" in markdown
    assert "novel_3" in markdown
    assert json.loads((root / "summary/class_summary.json").read_text())[1]["size"] == 60
    listed = {a.path for a in c.list_artifacts(logged["run_id"], "plots")}
    assert listed == {"plots/loss_curves.png", "plots/class_sizes.png"}


def test_model_is_logged_as_code_with_pinned_requirements(cfg, logged):
    assert logged["model_uri"].startswith("models:/m-")
    with tracking.using(cfg):
        local = Path(mlflow.artifacts.download_artifacts(logged["model_uri"]))
    names = {p.name for p in local.rglob("*")}
    assert "oral_model.pt" in names and "oral_pyfunc.py" in names
    assert not any(name.endswith(".pkl") for name in names)  # nothing to unpickle
    requirements = (local / "requirements.txt").read_text().split()
    assert any(r.startswith("torch==2.") for r in requirements)
    assert any(r.startswith("torch-geometric==") for r in requirements)
    assert any(r.startswith("pyarrow==") for r in requirements)


def test_register_promote_and_load_champion(fitted, cfg, logged):
    version = tracking.register_model(cfg, GRAPH, logged["model_uri"], logged["run_id"])
    assert version == 1
    # a retried registration of the same run returns the same version
    assert tracking.register_model(cfg, GRAPH, logged["model_uri"], logged["run_id"]) == 1
    mv = tracking.client(cfg).get_model_version(f"oral-{GRAPH}", "1")
    assert mv.tags["snapshot_date"] == "2026-01-31" and mv.tags["contracts_passed"] == "true"
    assert float(mv.tags["val_accuracy"]) == pytest.approx(logged["metrics"]["val_accuracy"])
    assert tracking.champion_version(cfg, GRAPH) is None
    promoted, reason = tracking.promote_champion(cfg, GRAPH, version, True,
                                                 logged["metrics"]["val_accuracy"])
    assert promoted and "first champion" in reason
    assert tracking.champion_version(cfg, GRAPH) == 1

    snap = fitted["snapshot"]
    with tracking.using(cfg):
        pyfunc = mlflow.pyfunc.load_model(f"models:/oral-{GRAPH}@champion")
    import pandas as pd
    out = pyfunc.predict(pd.DataFrame({"snapshot_path": [str(snap)]}))
    assert list(out.columns) == ["snapshot_path", "node_id", "run_id", "class_key", "lineage_id",
                                 "class_name", "is_novel", "confidence"]
    assert list(out.columns) == list(tracking.oral_pyfunc.OUTPUT_COLUMNS)
    assert set(out["run_id"]) == {WAREHOUSE_RUN_ID}  # the key of the warehouse's classes rows
    # logged without a lineage map (outside the nightly flow): lineage_id null, as None not NaN
    assert out["lineage_id"].tolist() == [None] * len(out)
    # the reference: ORALModel.assign_raw on the same snapshot, edges symmetrised
    loaded = load_snapshot(snap)
    x = torch.tensor(loaded.x)
    edges = canonical_edges(torch.tensor(loaded.edge_index), loaded.num_nodes)
    expected = fitted["model"].assign_raw(x, edges)
    assert len(out) == loaded.num_nodes
    assert out["node_id"].tolist() == loaded.node_ids.to_pylist()
    assert np.array_equal(out["class_key"].to_numpy(), expected.class_id.numpy())
    assert np.array_equal(out["is_novel"].to_numpy(), expected.is_novel.numpy())
    assert np.allclose(out["confidence"].to_numpy(), expected.confidence.numpy(), atol=1e-6)
    for cid, name in zip(out["class_key"], out["class_name"]):
        if 0 <= cid < 3:
            assert name == CLASS_NAMES[cid]
        else:  # novel or unassigned: null, as in the warehouse (never novel_<id>)
            assert pd.isna(name)
    # two snapshots in one call: one block of rows per snapshot
    twice = pyfunc.predict(pd.DataFrame({"snapshot_path": [str(snap), str(snap)]}))
    assert len(twice) == 2 * loaded.num_nodes


def _pyfunc_with(fitted, model_config: dict):
    from types import SimpleNamespace
    model = tracking.ORALPyfunc()
    model.load_context(SimpleNamespace(artifacts={tracking.MODEL_ARTIFACT: str(fitted["model_file"])},
                                       model_config=model_config))
    return model


def test_pyfunc_lineage_id_from_the_model_config(fitted):
    """``oral_lineage`` in the model_config (JSON: text keys) names each node's lineage_id; an
    unassigned node and a class the map does not name get null; without a map every row is
    null (a model logged outside the nightly flow)."""
    import pandas as pd
    snap = pd.DataFrame({"snapshot_path": [str(fitted["snapshot"])]})
    plain = _pyfunc_with(fitted, {"graph": GRAPH, "oral_run_id": WAREHOUSE_RUN_ID}).predict(None, snap)
    assert list(plain.columns) == list(tracking.oral_pyfunc.OUTPUT_COLUMNS)
    assert plain["lineage_id"].tolist() == [None] * len(plain)
    keys = sorted(k for k in set(plain["class_key"].tolist()) if k >= 0)
    assert len(keys) >= 2
    lineage = {str(k): f"{GRAPH}:lin:{k}" for k in keys[1:]}  # keys[0] left out of the map
    lineage["-1"] = "never-used"  # the unassigned key is never named
    out = _pyfunc_with(fitted, {"graph": GRAPH, "oral_run_id": WAREHOUSE_RUN_ID,
                                "oral_lineage": lineage}).predict(None, snap)
    assert out["class_key"].tolist() == plain["class_key"].tolist()
    for key, lid in zip(out["class_key"], out["lineage_id"]):
        assert lid == (lineage.get(str(key)) if key >= 0 and key != keys[0] else None)
    assert not any(isinstance(v, float) for v in out["lineage_id"])  # None, never NaN
    empty = _pyfunc_with(fitted, {"oral_lineage": lineage}).predict(None, pd.DataFrame(
        {"snapshot_path": pd.Series([], dtype=object)}))
    assert list(empty.columns) == list(tracking.oral_pyfunc.OUTPUT_COLUMNS) and len(empty) == 0


def test_champion_gate(fitted, cfg):
    graph = "gates"
    model_file = fitted["model_file"]

    def new_version(acc: float, passed: bool = True) -> int:
        run_id, uri = tracking.log_training_run(
            cfg, graph, {"seed": 0}, [], {}, {"snapshot_date": "2026-02-01"}, model_file,
            {"val_accuracy": acc})
        return tracking.register_model(cfg, graph, uri, run_id, contracts_passed=passed)

    v1 = new_version(0.80, passed=False)
    assert tracking.promote_champion(cfg, graph, v1, False, 0.80)[0] is False
    assert tracking.champion_version(cfg, graph) is None  # failed contracts never promote
    v2 = new_version(0.80)
    assert tracking.promote_champion(cfg, graph, v2, True, 0.80) == (
        True, "first champion (val_accuracy 0.8000)")
    v3 = new_version(0.75)
    promoted, reason = tracking.promote_champion(cfg, graph, v3, True, 0.75, tolerance=0.02)
    assert not promoted and "below champion v2" in reason
    assert tracking.champion_version(cfg, graph) == v2
    v4 = new_version(0.79)
    assert tracking.promote_champion(cfg, graph, v4, True, 0.79, tolerance=0.02)[0] is True
    assert tracking.champion_version(cfg, graph) == v4
    v5 = new_version(0.99, passed=False)
    promoted, reason = tracking.promote_champion(cfg, graph, v5, False, 0.99)
    assert not promoted and "contracts" in reason
    assert tracking.champion_version(cfg, graph) == v4
    mv = tracking.client(cfg).get_model_version(f"oral-{graph}", str(v3))
    assert "below champion" in mv.tags["champion_decision"]


def result(fields: dict):
    """A training result carrying ``fields`` (what the gate reads), the rest filler."""
    from tasks.fitting import TrainResult

    filler = dict(run_dir="r", model_path="m", predictions_path="p", history_path="h",
                  config={}, config_hash="c", feature_mode="auto", val_accuracy=1.0, epoch=1,
                  epochs=1, num_classes=1, num_known=1, num_novel=0, train_seconds=0.0,
                  device="cpu")
    return TrainResult(**(filler | fields))


def test_degraded_model_is_never_champion(fitted, cfg):
    """Issue 47's gate: a shortened cold retrain (fewer configured epochs than the champion's
    run) and a model below the reference logistic regression are degraded; a degraded version
    is registered but never promoted, even with a better validation accuracy."""
    from tasks.registry import champion as rules

    graph = "degrade"

    def new_version(acc: float, epochs: int) -> int:
        run_id, uri = tracking.log_training_run(
            cfg, graph, {"seed": 0, "epochs": epochs}, [], {}, {"snapshot_date": "2026-02-01"},
            fitted["model_file"], {"val_accuracy": acc})
        return tracking.register_model(cfg, graph, uri, run_id, contracts_passed=True)

    v1 = new_version(1.0, 200)
    assert rules.degradation(cfg, graph, result({"val_accuracy": 1.0, "config": {"epochs": 200}})) is None
    assert tracking.promote_champion(cfg, graph, v1, True, 1.0)[0] is True

    short = {"val_accuracy": 0.982, "config": {"epochs": 5}, "start": "cold"}
    reason = rules.degradation(cfg, graph, result(short))
    assert reason == f"trained with 5 epochs where champion v{v1} was trained with 200"
    v2 = new_version(0.982, 5)
    promoted, why = tracking.promote_champion(cfg, graph, v2, True, 0.982, degraded=reason)
    assert not promoted and why.startswith("degraded: trained with 5 epochs")
    assert tracking.champion_version(cfg, graph) == v1
    # a warm fit continues the champion's training: not held to the epochs rule
    assert rules.degradation(cfg, graph, result(short | {"start": "warm"})) is None

    below = {"val_accuracy": 0.30, "reference_val_accuracy": 0.70, "config": {"epochs": 200}}
    assert "below the reference logistic regression's 0.7000" in rules.degradation(
        cfg, graph, result(below))
    assert rules.degradation(cfg, graph, result(below), reference_margin=0.5) is None
    assert rules.degradation(cfg, graph, result(below | {"reference_val_accuracy": None})) is None
    # the McNemar test (the default): below by a few nodes is within chance, by many is not
    near = {"val_accuracy": 0.80, "reference_val_accuracy": 0.82, "config": {"epochs": 200},
            "gate_worse": 2, "gate_better": 0}
    assert rules.degradation(cfg, graph, result(near)) is None
    assert "below the reference" in rules.degradation(cfg, graph, result(near), test="strict")
    far = near | {"val_accuracy": 0.70, "gate_worse": 13, "gate_better": 1}
    assert "beyond chance (McNemar p 0.00183: 13 nodes only the reference names right, 1 only" \
        in rules.degradation(cfg, graph, result(far))
    # the known part alone (ORAL_GATE_SCOPE=known): a novel class holding validation nodes the
    # reference names right no longer holds the night back; the known classes' own naming does
    demo = {"val_accuracy": 0.9756, "reference_val_accuracy": 0.9878, "gate_worse": 1,
            "gate_better": 0, "gate_known_worse": 0, "gate_known_better": 0,
            "gate_known_nodes": 81, "config": {"epochs": 200}}
    assert rules.degradation(cfg, graph, result(demo), test="strict") is not None
    assert rules.degradation(cfg, graph, result(demo), test="strict", scope="known") is None
    worse = demo | {"gate_known_worse": 9, "gate_known_better": 1}
    reason = rules.degradation(cfg, graph, result(worse), test="strict", scope="known")
    assert reason.startswith("on the 81 validation nodes it names a known class, the reference "
                             "logistic regression names 9 right that it does not and it 1")
    assert rules.degradation(cfg, graph, result(worse), test="mcnemar", scope="known").endswith(
        "9 nodes only the reference names right, 1 only the model)")
    v3 = new_version(1.0, 200)  # better on val, but degraded: the gate still refuses it
    assert tracking.promote_champion(cfg, graph, v3, True, 1.0, degraded="x")[0] is False
    assert tracking.champion_version(cfg, graph) == v1


def test_with_retries_backs_off_then_succeeds():
    calls, sleeps = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("down")
        return "ok"

    assert tracking.with_retries(flaky, attempts=3, base_delay=0.5, sleep=sleeps.append) == "ok"
    assert sleeps == [0.5, 1.0]


def test_with_retries_does_not_retry_permanent_errors():
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST
    calls = []

    def missing():
        calls.append(1)
        raise MlflowException("no such model", error_code=RESOURCE_DOES_NOT_EXIST)

    with pytest.raises(MlflowException):
        tracking.with_retries(missing, attempts=3, base_delay=0, sleep=lambda _: None)
    assert len(calls) == 1


def test_unreachable_server_gives_tracking_error(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends
    uri = f"http://127.0.0.1:{port}"
    cfg = TrackingConfig(uri, tmp_path, attempts=3, base_delay=0.01, max_delay=0.02)
    calls = []

    def search():
        calls.append(1)
        return mlflow.MlflowClient(uri).search_experiments()

    with pytest.raises(TrackingError, match=f"127.0.0.1:{port}"):
        tracking.with_retries(search, attempts=3, base_delay=0.01, uri=uri)
    assert len(calls) == 3
    caplog.clear()
    with caplog.at_level("WARNING", logger="tasks.registry"):
        with pytest.raises(TrackingError, match=f"after 3 attempt.*{uri}"):
            tracking.experiment_for(cfg, GRAPH)
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2


def test_artifact_root_that_cannot_be_created(fitted, cfg, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the artifact root should be")
    bad = TrackingConfig(None, cfg.state_dir, artifact_root=blocker / "mlartifacts",
                         attempts=2, base_delay=0.01, max_delay=0.02)
    with pytest.raises(TrackingError, match="tracking URI sqlite:///"):
        tracking.log_training_run(bad, "blocked", {}, [], {}, {}, fitted["model_file"],
                                  {"val_accuracy": 0.5})


def test_artifact_folder_that_breaks_mid_run(fitted, cfg):
    graph = "broken"
    exp_id = tracking.experiment_for(cfg, graph)
    folder = Path(tracking.client(cfg).get_experiment(exp_id).artifact_location.removeprefix("file://"))
    folder.rmdir()
    folder.write_text("the artifact folder was replaced by a file")  # even root cannot write here
    try:
        with pytest.raises(TrackingError, match="failed after 2 attempt"):
            tracking.log_training_run(cfg, graph, {}, [], {}, {}, fitted["model_file"],
                                      {"val_accuracy": 0.5})
    finally:
        folder.unlink()
        folder.mkdir()
    runs = tracking.client(cfg).search_runs([exp_id])
    assert [r.info.status for r in runs] == ["FAILED"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores file permissions")
def test_read_only_artifact_root(fitted, cfg, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        bad = TrackingConfig(None, cfg.state_dir, artifact_root=ro,
                             attempts=2, base_delay=0.01, max_delay=0.02)
        with pytest.raises(TrackingError, match="tracking URI"):
            tracking.log_training_run(bad, "readonly", {}, [], {}, {}, fitted["model_file"],
                                      {"val_accuracy": 0.5})
    finally:
        ro.chmod(0o755)


def test_inputs_are_checked_before_a_run_is_created(fitted, cfg):
    with pytest.raises(FileNotFoundError):
        tracking.log_training_run(cfg, "checked", {}, [], {"validation_report": "/nonexistent.json"},
                                  {}, fitted["model_file"], {})
    with pytest.raises(TypeError, match="predictions"):
        tracking.log_training_run(cfg, "checked", {}, [], {"predictions": [1, 2]}, {},
                                  fitted["model_file"], {})
    assert tracking.client(cfg).get_experiment_by_name("oral-checked") is None


def test_using_restores_the_process_wide_uris(cfg, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////tmp/elsewhere.db")
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    with tracking.using(cfg):
        assert mlflow.get_tracking_uri() == cfg.uri
        assert mlflow.get_registry_uri() == cfg.uri
    assert os.environ["MLFLOW_TRACKING_URI"] == "sqlite:////tmp/elsewhere.db"
    assert "MLFLOW_REGISTRY_URI" not in os.environ
    assert mlflow.get_tracking_uri() == "sqlite:////tmp/elsewhere.db"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """``mlflow server`` on loopback, in its own process group (stopped as a group)."""
    import urllib.request
    port = _free_port()
    log_file = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{tmp_path}/server.db",
         "--artifacts-destination", str(tmp_path / "server-artifacts"), "--workers", "1"],
        stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
             "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})  # no job-runner processes
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("mlflow server did not start: "
                            + (tmp_path / "server.log").read_text()[-2000:])
            time.sleep(0.5)
        yield url, tmp_path / "server-artifacts"
    finally:
        _stop_group(proc)
        log_file.close()


def _stop_group(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM the server's process group, wait until every member is gone, else SIGKILL it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()
        try:
            os.killpg(proc.pid, 0)  # still someone in the group?
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


@pytest.mark.slow
def test_against_an_mlflow_server(fitted, mlflow_server, tmp_path):
    url, server_artifacts = mlflow_server
    cfg = TrackingConfig(url, tmp_path / "client-state", attempts=2, base_delay=0.05)
    predictions = tracking.assign_snapshot(fitted["model"], fitted["snapshot"])
    run_id, model_uri = tracking.log_training_run(
        cfg, GRAPH, fitted["config"].to_dict(), fitted["oral"].history_,
        {"predictions": predictions}, {"snapshot_date": "2026-01-31"}, fitted["model"],
        {"val_accuracy": 0.9})
    c = tracking.client(cfg)
    assert {a.path for a in c.list_artifacts(run_id, "plots")} == {
        "plots/loss_curves.png", "plots/class_sizes.png"}
    assert len(c.get_metric_history(run_id, "val_acc")) == len(fitted["oral"].history_)
    version = tracking.register_model(cfg, GRAPH, model_uri, run_id, contracts_passed=True)
    assert tracking.promote_champion(cfg, GRAPH, version, True, 0.9)[0]
    assert tracking.champion_version(cfg, GRAPH) == version
    import pandas as pd
    out = tracking.load_champion(cfg, GRAPH).predict(
        pd.DataFrame({"snapshot_path": [str(fitted["snapshot"])]}))
    assert np.array_equal(out["class_key"].to_numpy(), predictions.column("class_key").to_numpy())
    # the server keeps the artifacts; nothing is written on the client side
    assert any(server_artifacts.rglob("predictions.parquet"))
    assert not (tmp_path / "client-state").exists()


# ------------------------------------------------------- issue 21.2: a full disk and the store
@contextlib.contextmanager
def _disk_full_when(folder: Path, predicate):
    """``sqlite3.OperationalError('database or disk is full')`` for the first SQL statement run
    on an SQLite store under ``folder`` for which ``predicate(statement, count)`` is true
    (``count``: statements seen so far), as SQLite says when the disk fills mid-migration."""
    import sqlite3

    import sqlalchemy
    from sqlalchemy import event

    seen, fired = [], []

    def before(conn, cursor, statement, parameters, context, executemany):
        if str(folder) not in str(conn.engine.url.database or "") or fired:
            return
        seen.append(statement)
        if predicate(statement, len(seen)):
            fired.append(statement)
            raise sqlite3.OperationalError("database or disk is full")
    event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", before)
    try:
        yield fired
    finally:
        event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", before)


def _is_batch_copy(statement: str) -> bool:
    """alembic's batch migration copying ``experiments`` into its scratch table."""
    return statement.lstrip().upper().startswith("INSERT INTO _ALEMBIC_TMP_EXPERIMENTS")


@pytest.fixture(scope="module")
def last_batch_copy(tmp_path_factory):
    """A predicate for the last batch copy of ``experiments`` among MLflow's migrations
    (counted in a clean creation): a failure there, after earlier migrations committed,
    leaves ``_alembic_tmp_experiments`` behind, as a full disk did."""
    import sqlalchemy
    from sqlalchemy import event

    folder = tmp_path_factory.mktemp("clean-store")
    copies = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if str(folder) in str(conn.engine.url.database or "") and _is_batch_copy(statement):
            copies.append(statement)
    event.listen(sqlalchemy.engine.Engine, "before_cursor_execute", count)
    try:
        _open_store(f"sqlite:///{folder / 'mlflow.db'}")
    finally:
        event.remove(sqlalchemy.engine.Engine, "before_cursor_execute", count)
    assert copies, "MLflow's migrations no longer batch-copy experiments"
    state = {"seen": 0}

    def predicate(statement: str, _count: int) -> bool:
        if _is_batch_copy(statement):
            state["seen"] += 1
            return state["seen"] == len(copies)
        return False

    def fresh():
        state["seen"] = 0
        return predicate
    return fresh


def _open_store(uri: str) -> None:
    """MLflow opens (creates or migrates) the SQLite store at ``uri``, through a cheap public
    call, as tasks/registry/store.py ``_open_store`` does."""
    mlflow.MlflowClient(tracking_uri=uri).search_experiments(max_results=1)


def _store_works(cfg: TrackingConfig) -> None:
    c = tracking.client(cfg)
    exp = c.create_experiment(f"after-the-full-disk-{time.monotonic_ns()}")
    run = c.create_run(exp)
    c.log_metric(run.info.run_id, "m", 1.0)
    assert c.get_run(run.info.run_id).data.metrics == {"m": 1.0}


def test_full_disk_while_creating_the_store_leaves_no_half_made_store(tmp_path, last_batch_copy):
    """Issue 21.2. The disk fills while MLflow creates its schema (alembic's batch copy into
    ``_alembic_tmp_experiments``): the run fails naming the cause, no half-made ``mlflow.db``
    (nor a hidden temporary file) is left, and the next run, space free again, creates the
    store and works (it failed with ``table _alembic_tmp_experiments already exists``)."""
    state = tmp_path / "state"
    cfg = TrackingConfig(None, state, attempts=1)
    with _disk_full_when(tmp_path, last_batch_copy()) as fired:
        with pytest.raises(TrackingError, match="database or disk is full"):
            tracking.client(cfg)
    assert fired, "the injected failure never fired"
    assert sorted(p.name for p in state.iterdir()) == []
    _store_works(cfg)


@pytest.mark.parametrize("where", ["batch-copy", "create-table-40"])
def test_half_migrated_store_is_repaired_before_mlflow_opens_it(tmp_path, last_batch_copy, where):
    """Issue 21.2. A store left half-migrated by a full disk before this fix (MLflow itself
    creating ``mlflow.db`` in place): leftover ``_alembic_tmp_*`` scratch tables are dropped in
    one transaction before MLflow opens the file and the migration runs again; a store whose
    creation failed elsewhere and that holds no runs or models is moved aside
    (``mlflow.db.broken-*``, kept) and made anew. Either way the next run works."""
    import sqlite3

    state = tmp_path / "state"
    state.mkdir()
    uri = f"sqlite:///{state / 'mlflow.db'}"
    predicate = last_batch_copy() if where == "batch-copy" else (
        lambda statement, count: statement.lstrip().upper().startswith("CREATE TABLE") and count > 40)
    with _disk_full_when(tmp_path, predicate) as fired:
        with pytest.raises(Exception, match="database or disk is full"):
            _open_store(uri)
    assert fired
    if where == "batch-copy":
        # SQLite rolls back the transaction on SQLITE_FULL and alembic's later DDL runs in
        # autocommit mode: the scratch copy stays, as the issue found it
        con = sqlite3.connect(state / "mlflow.db")
        con.execute("CREATE TABLE _alembic_tmp_experiments AS SELECT * FROM experiments")
        con.commit()
        con.close()
    with pytest.raises(Exception, match="already exists|duplicate column"):  # broken for good before the fix
        _open_store(uri)
    _store_works(TrackingConfig(None, state, attempts=1))
    with sqlite3.connect(state / "mlflow.db") as con:
        assert not [r for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE '\\_alembic\\_tmp\\_%' ESCAPE '\\'")]
    if where != "batch-copy":
        assert [p.name.startswith("mlflow.db.broken-") for p in state.iterdir()].count(True) == 1
