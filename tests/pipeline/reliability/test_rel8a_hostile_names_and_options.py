"""Reliability point 8 (part 1): hostile graph names, dates, options, configuration, folder names
and state paths are refused before any write, or stay data.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .harness import D1, D2, CONFIG


# ------------------------------------------------------------------------- 8. hostile input
HOSTILE_GRAPHS = ["../evil", "..", "a/../../b", "x'; DROP TABLE runs; --", 'q"uote', "",
                  "a" * 65, "-leading-dash", "new\nline", "semi;colon"]


@pytest.mark.parametrize("name", HOSTILE_GRAPHS)
def test_hostile_graph_names_are_refused(name):
    """Case 8. Graph names are folder names: paths, quotes and SQL are refused everywhere."""
    from data_contracts import snapshots as snap
    from tasks import registry as tracking

    with pytest.raises(snap.SnapshotError, match="invalid graph name"):
        snap.check_graph_name(name)
    with pytest.raises(snap.SnapshotError):
        tracking.model_name(name)


def test_hostile_names_and_dates_stop_the_flow_before_any_write(env, capsys, monkeypatch):
    """Case 8. The flow and the CLI refuse a hostile graph name or date before writing anything."""
    from data_contracts import snapshots as snap
    from cli.main import main
    from flows.nightly import nightly_discovery
    from tasks import prefect_tasks as pt

    monkeypatch.setattr(pt.find_snapshot, "retry_delay_seconds", 0)

    prefect_home = Path(env.prefect_env["PREFECT_HOME"])

    def listing():  # Prefect's own bookkeeping (failed states it persists) aside
        return sorted(str(p) for p in env.base.rglob("*") if p != prefect_home
                      and prefect_home not in p.parents and p not in prefect_home.parents)
    before = listing()
    for graph, date in (("../../etc", D1), ("x'; DROP TABLE runs; --", D1),
                        ("base", "2026-03-01' OR '1'='1"), ("base", "../../2026-03-01")):
        with pytest.raises(snap.SnapshotError):
            nightly_discovery(graph, str(env.root), date, CONFIG, str(env.state))
    assert main(["run", "--graph", "../evil", "--snapshots", str(env.root),
                 "--state-dir", str(env.state)]) == 2
    assert "invalid graph name" in capsys.readouterr().err
    assert listing() == before
    assert not [p for p in env.base.rglob("*") if p.name in ("evil", "etc")]


BAD_OPTIONS = [
    # (command, options, the one-line message after "error: ")
    ("run", ["--epochs", "0"], "--epochs 0: epochs must be >= 1"),
    ("run", ["--set", "gamma=5"], "--set gamma=5: gamma must be in (0, 1]"),
    ("run", ["--set", "gamma=abc"], "--set gamma=abc: gamma must be a number, got 'abc'"),
    ("run", ["--device", "cuda"], "--device cuda: CUDA is not available on this machine"),
    ("run", ["--state-dir", "{file}"], "--state-dir {file}: {file} is not a folder"),
    ("run", ["--state-dir", "{file}/state"], "--state-dir {file}/state: {file}/state lies under "
     "{file}, which is not a folder"),
    ("run", ["--set", "pol=ture"], "--set pol=ture: pol must be true or false"),
    ("run", ["--set", "cluster_freeze_epoch=0.5"],
     "--set cluster_freeze_epoch=0.5: cluster_freeze_epoch must be an integer or none, got '0.5'"),
    ("run", ["--set", "gama=0.3"], "--set gama=0.3: unknown configuration key 'gama'; did you "
     "mean gamma?"),
    ("run", ["--set", "cluster_every=0"], "--set cluster_every=0: cluster_every must be >= 1"),
    ("run", ["--date", "2026-13-45"], "--date 2026-13-45: not a date; expected YYYY-MM-DD"),
    ("backfill", ["--set", "gamma=5", "--epochs", "0"],
     "--set gamma=5: gamma must be in (0, 1]; --epochs 0: epochs must be >= 1"),
    ("demo", ["--epochs", "0"], "--epochs 0: epochs must be >= 1"),
    ("demo", ["--device", "cuda"], "--device cuda: CUDA is not available on this machine"),
]


@pytest.mark.parametrize("command,options,message", BAD_OPTIONS,
                         ids=[" ".join([c, *o]) for c, o, _ in BAD_OPTIONS])
def test_bad_options_are_refused_before_any_work(tmp_path, capsys, monkeypatch, command, options,
                                                 message):
    """Issue 21.6. A configuration that cannot work is refused by the CLI before anything starts
    (no Prefect server, no snapshot read, no state folder): one line naming the option, exit 2.
    Before: tracebacks, some after ingest and validation; ``pol=ture`` silently became False."""
    import torch

    import flows.settings
    from cli.main import main

    def started(*args, **kwargs):
        raise AssertionError("work started before the options were checked")

    monkeypatch.setattr(flows.settings, "configure_environment", started)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # also on a GPU host
    monkeypatch.delenv("ORAL_REMOTE_TRAINING", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    root = tmp_path / "snapshots"
    (root / "g").mkdir(parents=True)
    options = [o.replace("{file}", str(blocker)) for o in options]
    message = message.replace("{file}", str(blocker))
    args = [command] + ([] if command == "demo" else ["--graph", "g", "--snapshots", str(root)])
    if "--state-dir" not in options:
        args += ["--state-dir", str(tmp_path / "state")]
    capsys.readouterr()
    assert main(args + options) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "state").exists() and blocker.read_text() == "x"


def test_bad_configuration_fails_the_flow_before_the_snapshot_is_read(env, monkeypatch):
    """Issue 21.6. Called directly (a deployment, Python), the flow checks its configuration
    before it looks for, reads or validates a snapshot."""
    from flows.nightly import backfill, nightly_discovery
    from tasks import intake

    graph = env.graph("bad-config")

    def read(*args, **kwargs):
        raise AssertionError("the snapshot was read before the configuration was checked")

    monkeypatch.setattr(intake, "read_snapshot", read)
    monkeypatch.setattr(intake, "pick_snapshot", read)
    with pytest.raises(ValueError, match="gamma must be in"):
        nightly_discovery(graph, str(env.root), D1, CONFIG | {"gamma": 5}, str(env.state))
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        backfill(graph, str(env.root), config=CONFIG | {"epochs": 0}, state_dir=str(env.state))
    assert env.rows(graph)["runs"] == []


def test_misnamed_snapshot_folders_are_named_not_skipped(env, capsys, monkeypatch):
    """Issue 21.9. A folder ``snapshot=20260302`` beside ``snapshot=2026-03-02`` (the same date
    spelled twice) and one ``snapshot=2026-13-45``: the flow stops with a SnapshotError that
    names them before reading any snapshot (before, the first was read as 2026-03-02 and won
    over the correct folder, the second was skipped silently); ``oral run`` says so on one line
    and exits 2 before Prefect starts. A writer's hidden ``.tmp-*`` folder stays ignored."""
    from data_contracts import snapshots as snap
    from cli.main import main
    from flows.nightly import nightly_discovery
    from tasks import prefect_tasks as pt

    monkeypatch.setattr(pt.find_snapshot, "retry_delay_seconds", 0)
    graph = env.graph("misnamed")
    base = env.root / graph
    shutil.copytree(base / f"snapshot={D2}", base / f".tmp-snapshot={D2}-0123abcd")
    shutil.copytree(base / f"snapshot={D2}", base / "snapshot=20260302")
    with pytest.raises(snap.SnapshotError) as err:
        nightly_discovery(graph, str(env.root), None, CONFIG, str(env.state))
    assert "'snapshot=20260302' (not snapshot=YYYY-MM-DD" in str(err.value)
    (base / "snapshot=2026-13-45").mkdir()
    with pytest.raises(snap.SnapshotError, match="2 entries named snapshot=") as err:
        nightly_discovery(graph, str(env.root), D1, CONFIG, str(env.state))
    assert "'snapshot=2026-13-45'" in str(err.value) and str(base) in str(err.value)
    assert env.rows(graph)["runs"] == []

    import flows.settings

    def started(*args, **kwargs):
        raise AssertionError("work started before the snapshot folders were checked")

    monkeypatch.setattr(flows.settings, "configure_environment", started)
    capsys.readouterr()
    assert main(["run", "--graph", graph, "--snapshots", str(env.root),
                 "--state-dir", str(env.state)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "'snapshot=2026-13-45'" in err and "'snapshot=20260302'" in err
    shutil.rmtree(base / "snapshot=20260302")
    (base / "snapshot=2026-13-45").rmdir()
    assert [d for d, _ in snap.list_snapshots(env.root, graph)] == [snap.parse_date(D1),
                                                                    snap.parse_date(D2)]


def test_state_and_snapshot_paths_with_quotes_and_sql_are_data(env, concurrent):
    """Case 8. The state folder and the snapshot root of this module are named with quotes and
    SQL: the runs above stored them verbatim (bound parameters) and kept every store inside."""
    assert "DROP TABLE" in str(env.state) and "' OR 1=1" in str(env.root)
    with env.con() as con:
        paths = {p for (p,) in con.execute("SELECT path FROM snapshots").fetchall()}
    assert str(env.root / "alpha" / f"snapshot={D1}") in paths
    assert (env.state / "mlflow.db").is_file() and env.db.is_file()


@pytest.mark.parametrize("name", ["a?b#c", "x%2F..%2Fy", "it's; DROP TABLE runs; --"])
def test_state_folder_names_cannot_move_the_stores(tmp_path, name):
    """Case 8. A state folder named with URI characters keeps the stores inside it: the MLflow
    SQLite URI is percent-encoded (before the fix '?' cut the path and '%2F' was decoded), and
    DuckDB, which would put its write-ahead log at '<before ?>.wal?<after>', is refused a path
    with '?' instead."""
    from sqlalchemy.engine import make_url

    from tasks.registry import TrackingConfig
    from tasks.warehouse import Warehouse, WarehouseError

    state = tmp_path / name / "state"
    url = make_url(TrackingConfig(None, state).uri)
    assert url.database == str(state / "mlflow.db") and not url.query
    if "?" in name:
        with pytest.raises(WarehouseError, match="containing '\\?'"):
            Warehouse(state / "oral.duckdb", threads=1)
        assert list(tmp_path.iterdir()) == []
        return
    Warehouse(state / "oral.duckdb", threads=1).ensure_schema()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert (state / "oral.duckdb") in written and all(state in p.parents for p in written)
