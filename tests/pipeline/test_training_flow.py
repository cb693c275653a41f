"""Training outside the nightly flow's process (flows/training.py) without servers: the content-hash
check on the training host, the result file in the run folder, the device report, determinism
(the same seed gives the same classes on the same device, here the CPU), and the deployment
file's consistency with the CLI's defaults. The servers themselves: tests/e2e/test_e2e_servers.py."""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

CONFIG = {"epochs": 10, "hidden_dim": 16, "pol_start_epoch": 5, "cluster_warmup_epochs": 3,
          "device": "cpu", "progress": False, "seed": 3}



@pytest.fixture(scope="module")
def snapshot_path(tmp_path_factory) -> Path:
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    static = make_static_graph(num_nodes=400, num_classes=4, num_features=16, separation=4.0,
                               seed=0, name="tiny")
    root = tmp_path_factory.mktemp("snapshots")
    return simulate(static, 2, root, "tiny", start_date="2026-03-01", seed=0,
                    known_classes=[0, 1, 2], novel_start={3: 1})[-1]


def test_check_snapshot_accepts_the_validated_content(snapshot_path):
    from data_contracts import snapshots as snap
    from flows.training import check_snapshot

    expected = snap.read_snapshot_files(snapshot_path).content_hash
    assert check_snapshot(snapshot_path, expected).content_hash == expected


def test_check_snapshot_refuses_changed_or_missing_content(snapshot_path, tmp_path):
    from data_contracts import snapshots as snap
    from flows.training import SnapshotMismatch, check_snapshot

    expected = snap.read_snapshot_files(snapshot_path).content_hash
    changed = tmp_path / snapshot_path.name
    shutil.copytree(snapshot_path, changed)
    edges = pq.read_table(changed / "edges.parquet")
    pq.write_table(edges.slice(1), changed / "edges.parquet")  # one edge less
    with pytest.raises(SnapshotMismatch, match="not the validated"):
        check_snapshot(changed, expected)
    with pytest.raises(SnapshotMismatch, match="not visible on training host"):
        check_snapshot(tmp_path / "elsewhere" / snapshot_path.name, expected)


def test_result_file_round_trip(tmp_path):
    from flows.training import read_result, write_result

    (tmp_path / "model.pt").write_bytes(b"m")
    (tmp_path / "predictions.parquet").write_bytes(b"p")
    result = {"run_dir": str(tmp_path), "model_path": str(tmp_path / "model.pt"),
              "predictions_path": str(tmp_path / "predictions.parquet"), "config_hash": "c1",
              "device": "cpu", "num_classes": 4}
    write_result(tmp_path, result, content_hash="h1", host="somewhere")
    assert read_result(tmp_path, "h1", "c1") == result  # the extras stay in the file only
    assert read_result(tmp_path, "h2", "c1") is None    # another snapshot
    assert read_result(tmp_path, "h1", "c2") is None    # another configuration
    (tmp_path / "model.pt").unlink()
    assert read_result(tmp_path, "h1", "c1") is None    # the model is gone: train again


def test_describe_device_says_which_and_why():
    import torch

    from flows.training import describe_device

    assert describe_device("cpu") == ("cpu", "requested")
    device, why = describe_device("auto")
    assert device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert why.startswith("device auto: ")


def test_same_seed_gives_the_same_classes(snapshot_path, tmp_path, one_thread):
    """Two in-process fits with the same seed on the CPU: identical class ids and confidences."""
    from data_contracts import snapshots as snap
    from oral_core.config import ORALConfig
    from oral_core.columns import writable
    from tasks import fitting

    snapshot = snap.load_snapshot(snapshot_path)
    snapshot.x = writable(snapshot.x)
    snapshot.edge_index = writable(snapshot.edge_index)
    config = ORALConfig.from_dict(ORALConfig().to_dict() | CONFIG)
    first = fitting.train(snapshot, config, tmp_path / "a")
    second = fitting.train(snapshot, config, tmp_path / "b")
    a, b = pq.read_table(first.predictions_path), pq.read_table(second.predictions_path)
    assert first.device == second.device == "cpu"
    assert a.column("class_key").to_pylist() == b.column("class_key").to_pylist()
    assert a.column("confidence").to_pylist() == b.column("confidence").to_pylist()
    assert (first.num_classes, first.epoch, first.val_accuracy) == \
        (second.num_classes, second.epoch, second.val_accuracy)


def test_deployment_file_is_consistent():
    """Every deployment in deployments/prefect.yaml names an existing flow and pool, and flow runs
    get the same quiet, offline defaults as the ``oral`` CLI."""
    import importlib

    import yaml

    from flows.settings import QUIET, Settings

    root = Path(__file__).resolve().parents[2]
    spec = yaml.safe_load((root / "deployments" / "prefect.yaml").read_text())
    seen = set()
    for d in spec["deployments"]:
        path, name = d["entrypoint"].split(":")
        module = path.removesuffix(".py").replace("/", ".")
        flow = getattr(importlib.import_module(module), name)
        seen.add((flow.name, d["name"], d["work_pool"]["name"]))
        env = d["work_pool"]["job_variables"]["env"]
        assert {k: QUIET[k] for k in env} == env
    assert seen == {("nightly-discovery", "nightly", "cpu"), ("train-remote", "gpu", "gpu"),
                    ("backfill", "backfill", "cpu"), ("reproduce", "sweep", "cpu"),
                    ("choose", "graph", "cpu")}
    # the nightly flow's default training deployment is the one in the file
    assert Settings(Path("/tmp"), Path("/tmp/x"), None).training_deployment == "train-remote/gpu"


def test_remote_training_needs_a_prefect_server(tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.training import RemoteTrainingError, train_via_deployment

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        with pytest.raises(RemoteTrainingError, match="needs a Prefect server"):
            train_via_deployment("train-remote/gpu", 10, snapshot_path=str(tmp_path),
                                 content_hash="h", config={}, run_dir=str(tmp_path),
                                 feature_mode="row", graph="g", config_hash="c")


@pytest.mark.parametrize("scale", ["labelled", "all"])
def test_the_gate_floor_is_standardised_as_the_known_head(snapshot_path, tmp_path, one_thread,
                                                          scale, monkeypatch):
    """The champion gate's reference logistic regression reads the features standardised over
    the rows ``known_head_scale`` names, so a head at 0 steps is never below it by construction."""
    from data_contracts import snapshots as snap
    from oral_core import reference
    from oral_core.columns import writable
    from oral_core.config import ORALConfig
    from tasks import fitting

    asked, plain = [], reference.reference_val_predictions

    def spy(*args, **kwargs):
        asked.append(kwargs.get("scale", "labelled"))
        return plain(*args, **kwargs)
    monkeypatch.setattr(reference, "reference_val_predictions", spy)
    snapshot = snap.load_snapshot(snapshot_path)
    snapshot.x = writable(snapshot.x)
    snapshot.edge_index = writable(snapshot.edge_index)
    config = ORALConfig.from_dict(ORALConfig().to_dict() | CONFIG | {"known_head_scale": scale})
    result = fitting.train(snapshot, config, tmp_path / "run")
    assert asked == [scale] and result.reference_val_accuracy is not None
    # the gate's McNemar counts are the two accuracies' difference, node by node
    _, val = fitting.split_labelled(snapshot.labels, config.seed)
    n_val = int((val >= 0).sum())
    assert result.gate_worse is not None and result.gate_better is not None
    assert (result.gate_better - result.gate_worse) / n_val == pytest.approx(
        result.val_accuracy - result.reference_val_accuracy, abs=1e-6)
    # the known part: the validation nodes the model names a known class, counted the same way
    assert 0 < result.gate_known_nodes <= n_val
    assert result.gate_known_worse <= result.gate_worse
    assert result.gate_known_better == result.gate_better  # a node in a novel class is never right


def test_a_train_result_comes_back_from_its_dict():
    """The train task persists ``TrainResult.to_dict()`` (Prefect's JSON cache, a training
    deployment's answer); the flow reads it back typed: the same result, keys it does not know
    left out, missing optional ones at their defaults, a missing required one refused."""
    from tasks.fitting import TrainResult

    fields = dict(run_dir="r", model_path="m", predictions_path="p", history_path="h",
                  config={"epochs": 3}, config_hash="c", feature_mode="auto", val_accuracy=0.5,
                  epoch=2, epochs=3, num_classes=4, num_known=3, num_novel=1, train_seconds=1.5,
                  device="cpu")
    result = TrainResult(**fields, gate_worse=2)
    assert TrainResult.from_dict(result.to_dict()) == result
    assert TrainResult.from_dict(result.to_dict() | {"gone_field": 1}) == result
    assert TrainResult.from_dict(fields).gate_worse is None
    with pytest.raises(TypeError, match="device"):
        TrainResult.from_dict({k: v for k, v in fields.items() if k != "device"})
