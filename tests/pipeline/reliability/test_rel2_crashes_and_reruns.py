"""Reliability point 2: crashes in training, before publishing and in the champion gate; the rerun
finishes the night, reusing what was done.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import pytest

from .harness import check_consistent


# ----------------------------------------------------------------- 2. crashes, retries, reruns
def test_crash_in_training_then_rerun_completes(env, monkeypatch):
    """Case 2. Training raises on the first attempt: the flow fails with nothing published or
    registered; the rerun trains, completes, and leaves one runs row and one model version."""
    from tasks import fitting

    graph = env.graph("crash-train")
    real, calls = fitting.train, []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected crash during training")
        return real(*args, **kwargs)
    monkeypatch.setattr(fitting, "train", crashing)
    with pytest.raises(RuntimeError, match="injected crash during training"):
        env.night(graph)
    assert env.rows(graph)["runs"] == [] and env.versions(graph) == []

    out = env.night(graph)
    assert len(calls) == 2
    assert len(env.rows(graph)["runs"]) == 1
    [version] = env.versions(graph)
    assert out["model_version"] == int(version.version) and env.champion(graph) == out["model_version"]
    check_consistent(env)


def test_crash_before_publish_reuses_training_and_version(env, monkeypatch):
    """Case 2. The run dies after MLflow registered its model but before DuckDB (publish fails on
    every retry): the rerun takes training from the cache (the model file is not rewritten) and
    the MLflow version from the registry: one version, one runs row pointing at it."""
    from tasks import prefect_tasks as pt
    from tasks import fitting, publishing

    graph = env.graph("crash-publish")
    monkeypatch.setattr(pt.publish, "retry_delay_seconds", 0)
    attempts = []

    def crashing(*args, **kwargs):
        attempts.append(1)
        raise RuntimeError("injected crash before publishing")
    monkeypatch.setattr(publishing, "write_run", crashing)  # the publish task's DuckDB write
    with pytest.raises(RuntimeError, match="injected crash before publishing"):
        env.night(graph)
    assert len(attempts) == 3  # the task's own retries, bounded
    [registered] = env.versions(graph)
    assert env.rows(graph)["runs"] == []
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    monkeypatch.undo()

    trained = []
    real = fitting.train
    monkeypatch.setattr(fitting, "train", lambda *a, **k: trained.append(1) or real(*a, **k))
    out = env.night(graph)
    assert trained == [] and model.stat().st_mtime_ns == stamp  # training came from the cache
    assert [v.version for v in env.versions(graph)] == [registered.version]
    [run] = env.rows(graph)["runs"]
    assert out["model_version"] == int(registered.version)
    check_consistent(env)


def test_crash_in_champion_gate_rolls_back_and_the_rerun_finishes_it(env, monkeypatch):
    """Case 2 (issue 19.3). The champion gate fails after the version was registered and DuckDB
    committed the night. MLflow calls have one retry layer (tasks.registry.with_retries), not
    Prefect task retries on top, so the night fails; the transaction rolls back (the alias is not
    on the version, no decision tag is left) and the DuckDB run stays. The rerun finds the version
    (no second one) and runs the gate it missed."""
    from tasks import registry as tracking
    from tasks.registry import champion

    graph = env.graph("crash-gate")
    real, calls = tracking.promote_champion, []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise tracking.TrackingError("injected failure of the champion gate")
        return real(*args, **kwargs)
    monkeypatch.setattr(champion, "promote_champion", crashing)
    with pytest.raises(tracking.TrackingError, match="injected failure"):
        env.night(graph)
    [version] = env.versions(graph)
    assert env.champion(graph) is None and "champion_decision" not in version.tags
    assert len(env.rows(graph)["runs"]) == 1  # DuckDB committed before the gate
    out = env.night(graph)
    assert len(calls) == 2
    assert [v.version for v in env.versions(graph)] == [version.version]
    assert out["model_version"] == int(version.version)
    assert "champion_decision" in env.client.get_model_version(f"oral-{graph}", version.version).tags
    assert env.champion(graph) == int(version.version) and out["champion"] is True
    check_consistent(env)
