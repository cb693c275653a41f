"""tasks.registry.store.Registry: one MLflow store bound to its settings, its client opened once,
every call retried inside (issue 62)."""
from __future__ import annotations

import pytest

from tasks.registry import store
from tasks.registry.champion import champion_version, model_version, promote_champion
from tasks.registry.config import TrackingConfig
from tasks.registry.retries import TrackingError


class Version:
    def __init__(self, version, tags=None):
        self.version, self.tags, self.run_id = str(version), dict(tags or {}), None


class FakeClient:
    """The MLflow client calls the champion rules make, in memory; the first ``failures``
    calls of each kind raise a connection error."""

    def __init__(self, failures: int = 0):
        self.failures, self.calls, self.alias, self.tags = failures, [], None, {}

    def _call(self, name):
        self.calls.append(name)
        if self.calls.count(name) <= self.failures:
            raise ConnectionError("connection reset")

    def get_model_version_by_alias(self, name, alias):
        self._call("alias")
        return None if self.alias is None else Version(self.alias, {"val_accuracy": "0.8"})

    def get_model_version(self, name, version):
        self._call("version")
        return Version(version)

    def set_registered_model_alias(self, name, alias, version):
        self._call("set_alias")
        self.alias = version

    def set_model_version_tag(self, name, version, key, value):
        self._call("tag")
        self.tags[(version, key)] = value


@pytest.fixture()
def opened(monkeypatch):
    """Count the store clients opened."""
    made = []

    def client(_cfg):
        made.append(FakeClient(failures=1))
        return made[-1]
    monkeypatch.setattr(store, "client", client)
    return made


def cfg(tmp_path, attempts=3):
    return TrackingConfig(None, tmp_path, attempts=attempts, base_delay=0.0, max_delay=0.0)


def test_one_registry_opens_one_client_for_all_its_calls_and_retries_each(tmp_path, opened):
    registry = store.Registry(cfg(tmp_path))
    assert champion_version(registry, "g") is None
    promoted, reason = promote_champion(registry, "g", 3, True, 0.9)
    assert promoted and "first champion" in reason
    assert champion_version(registry, "g") == 3
    assert model_version(registry, "g", 3).version == "3"
    assert len(opened) == 1  # one client, opened on first use
    fake = opened[0]
    assert fake.tags[("3", "champion_decision")] == reason
    # every kind of call failed once and was retried inside the registry
    assert all(fake.calls.count(kind) >= 2 for kind in ("alias", "set_alias", "tag", "version"))


def test_settings_alone_still_work_and_open_a_client_per_call(tmp_path, opened):
    settings = cfg(tmp_path)
    assert champion_version(settings, "g") is None
    assert model_version(settings, "g", 1).version == "1"
    assert len(opened) == 2
    assert store.Registry.of(settings).cfg is settings
    registry = store.Registry(settings)
    assert store.Registry.of(registry) is registry


def test_a_call_that_keeps_failing_ends_in_one_tracking_error(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "client", lambda _cfg: FakeClient(failures=9))
    registry = store.Registry(cfg(tmp_path, attempts=2))
    with pytest.raises(TrackingError, match="reading version 4 of 'oral-g' failed after 2 attempt"):
        model_version(registry, "g", 4)
