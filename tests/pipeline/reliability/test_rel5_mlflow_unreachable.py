"""Reliability point 5: MLflow unreachable, an artifact store not writable, a failing version
search.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import dataclasses
import socket

import pytest

from .harness import check_consistent


# ----------------------------------------------------------------------- 5. MLflow unreachable
def _fast_tracking_config():
    """TrackingConfig with short pauses between its (still three) attempts, to keep CI fast."""
    from tasks.registry import TrackingConfig

    return dataclasses.make_dataclass("FastTrackingConfig", [
        ("attempts", int, dataclasses.field(default=3)),
        ("base_delay", float, dataclasses.field(default=0.05)),
        ("max_delay", float, dataclasses.field(default=0.1))], bases=(TrackingConfig,))


def test_mlflow_unreachable_fails_clearly_and_publishes_nothing(env, monkeypatch, caplog):
    """Case 5. The tracking server is down (a closed port): bounded, logged retries, then a
    TrackingError naming the URI; the flow stops before DuckDB, so no run row points at a model
    that does not exist."""
    import logging

    from tasks import prefect_tasks as pt
    from tasks import registry as tracking

    graph = env.graph("mlflow-down")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("ORAL_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setattr(tracking, "TrackingConfig", _fast_tracking_config())
    monkeypatch.setattr(pt.register, "retry_delay_seconds", 0)
    caplog.set_level(logging.WARNING, logger="tasks.registry")
    with pytest.raises(tracking.TrackingError) as err:
        env.night(graph)
    assert uri in str(err.value) and "after 3 attempt(s)" in str(err.value)
    retries = [r.getMessage() for r in caplog.records if "failed (attempt" in r.getMessage()]
    assert 2 <= len(retries) <= 3 * 2  # 2 logged retries per task attempt, at most 3 attempts
    assert env.rows(graph)["runs"] == [] and env.rows(graph)["snapshots"] == []
    check_consistent(env)


def test_artifact_store_not_writable_fails_clearly_and_publishes_nothing(env, monkeypatch):
    """Case 5. The artifact folder cannot be created (a file stands where it goes): bounded
    retries, a TrackingError naming the store, no version, no DuckDB row."""
    from tasks import prefect_tasks as pt
    from tasks import registry as tracking

    graph = env.graph("artifacts-blocked")
    blocker = env.state / "mlartifacts" / f"oral-{graph}"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder")
    monkeypatch.setattr(tracking, "TrackingConfig", _fast_tracking_config())
    monkeypatch.setattr(pt.register, "retry_delay_seconds", 0)
    with pytest.raises(tracking.TrackingError) as err:
        env.night(graph)
    assert "after 3 attempt(s)" in str(err.value) and "sqlite:///" in str(err.value)
    assert env.versions(graph) == [] and env.rows(graph)["runs"] == []
    assert blocker.read_text() == "not a folder"
    check_consistent(env)


def test_a_failing_version_search_is_retried_not_taken_for_none(tmp_path):
    """Case 5. The search for the run's registered version failing (a flaky server) used to be
    read as "no version yet", and the run then registered a second one; now it is retried, a
    missing model still means none, and a search that keeps failing raises TrackingError."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST

    from tasks.registry import Registry, TrackingConfig, TrackingError
    from tasks.registry import champion as steps

    cfg = TrackingConfig(None, tmp_path, attempts=3, base_delay=0.0, max_delay=0.0)
    run_id = "0" * 32

    class Flaky:
        def __init__(self, failures, error=ConnectionError("connection reset")):
            self.failures, self.error, self.calls = failures, error, 0

        def search_model_versions(self, text):
            self.calls += 1
            assert text == f"name = 'oral-g' and tags.oral_run_id = '{run_id}'"
            if self.calls <= self.failures:
                raise self.error
            return ["v1"]
    flaky = Flaky(failures=2)
    assert steps._versions_of_run(Registry(cfg, flaky), "oral-g", run_id) == ["v1"]
    assert flaky.calls == 3
    missing = Flaky(failures=9, error=MlflowException("no such model",
                                                       error_code=RESOURCE_DOES_NOT_EXIST))
    assert steps._versions_of_run(Registry(cfg, missing), "oral-g", run_id) == []
    with pytest.raises(TrackingError, match="after 3 attempt"):
        steps._versions_of_run(Registry(cfg, Flaky(failures=9)), "oral-g", run_id)
    with pytest.raises(ValueError, match="not a pipeline run id"):
        steps._versions_of_run(Registry(cfg, flaky), "oral-g", "x' or name != '")
