"""A new Prefect home started from a migrated database (``ORAL_PREFECT_HOME_TEMPLATE``,
``flows.settings.seed_prefect_home``): copied only where the temporary server would create its
database, never over one, never for a server elsewhere; a template without a database refused in
one line."""
from __future__ import annotations

import os

import pytest


@pytest.fixture()
def homes(tmp_path, monkeypatch):
    from flows.settings import TEMPLATE_VARIABLE

    template, home = tmp_path / "template", tmp_path / "state" / "prefect"
    template.mkdir()
    (template / "prefect.db").write_bytes(b"migrated")
    for key in [k for k in os.environ if k.startswith("PREFECT_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv(TEMPLATE_VARIABLE, str(template))
    # Prefect's settings as a new process would read them from this environment (this process's
    # own were read when Prefect was first imported, by an earlier test)
    import prefect.settings

    monkeypatch.setattr(prefect.settings, "get_current_settings", prefect.settings.Settings)
    return template, home


def test_an_empty_home_starts_from_the_template(homes):
    from flows.settings import seed_prefect_home

    _, home = homes
    assert seed_prefect_home() is True
    assert (home / "prefect.db").read_bytes() == b"migrated"
    assert sorted(p.name for p in home.iterdir()) == ["prefect.db"]  # no partial copy left
    assert seed_prefect_home() is False  # there now: never copied over


def test_a_home_with_a_database_is_left_alone(homes):
    from flows.settings import seed_prefect_home

    _, home = homes
    home.mkdir(parents=True)
    (home / "prefect.db").write_bytes(b"last night's runs")
    assert seed_prefect_home() is False
    assert (home / "prefect.db").read_bytes() == b"last night's runs"


@pytest.mark.parametrize("setting", [
    {"PREFECT_API_URL": "http://127.0.0.1:4200/api"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:////elsewhere/prefect.db"}])
def test_no_copy_for_a_server_or_database_elsewhere(homes, monkeypatch, setting):
    from flows.settings import seed_prefect_home

    _, home = homes
    for key, value in setting.items():
        monkeypatch.setenv(key, value)
    assert seed_prefect_home() is False
    assert not (home / "prefect.db").exists()


def test_without_the_variable_nothing_is_copied(homes, monkeypatch):
    from flows.settings import TEMPLATE_VARIABLE, seed_prefect_home

    monkeypatch.delenv(TEMPLATE_VARIABLE)
    assert seed_prefect_home() is False
    assert not (homes[1] / "prefect.db").exists()


def test_a_copy_that_fails_leaves_nothing_behind(homes, monkeypatch):
    """A full disk or read-only folder: the server then creates its database as without the
    template (and meets the same error it would have met)."""
    import shutil

    from flows.settings import seed_prefect_home

    _, home = homes

    def full(src, dst):
        open(dst, "wb").write(b"mig")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copyfile", full)
    assert seed_prefect_home() is False
    assert not home.exists() or list(home.iterdir()) == []


def test_a_template_without_a_database_is_refused_in_one_line(homes):
    from flows.settings import TEMPLATE_VARIABLE, seed_prefect_home

    template, _ = homes
    (template / "prefect.db").unlink()
    with pytest.raises(ValueError) as err:
        seed_prefect_home()
    assert str(err.value).startswith(f"{TEMPLATE_VARIABLE}={template}: no prefect.db there")
    assert "\n" not in str(err.value)


def test_the_cli_starts_a_new_state_folder_from_the_template(homes, monkeypatch):
    """``flow_runs_started_here`` (every flow run the CLI starts) seeds the home first."""
    from flows.settings import flow_runs_started_here

    _, home = homes
    with flow_runs_started_here():
        assert (home / "prefect.db").read_bytes() == b"migrated"


def test_the_suite_template_is_a_migrated_prefect_database():
    """The template the suite builds (tests/prefect_harness.py) is a SQLite database with
    Prefect's migration table at a revision, and Prefect's test harness still names its database
    as the copy does (else the harness would migrate its own again, unseen)."""
    import inspect
    import sqlite3

    from prefect.testing.utilities import prefect_test_harness

    from tests.prefect_harness import HARNESS_DATABASE, prefect_home_template

    assert f'"{HARNESS_DATABASE}"' in inspect.getsource(prefect_test_harness)

    template = prefect_home_template()
    assert template is not None
    con = sqlite3.connect(template / "prefect.db")
    try:
        (revision,) = con.execute("select version_num from alembic_version").fetchone()
    finally:
        con.close()
    assert revision
