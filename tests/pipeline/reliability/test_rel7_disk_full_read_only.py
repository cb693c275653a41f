"""Reliability point 7: a full disk while training or writing a report, a state folder that is
not writable or read-only.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from .harness import ROOT, D1, check_consistent


# -------------------------------------------------------------- 7. disk full, read-only folder
def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".tmp-") or
                  p.name.endswith(".tmp"))


def test_disk_full_while_training_leaves_no_partial_file(env, monkeypatch):
    """Case 7. The disk fills up while the predictions are written: the run fails with ENOSPC,
    no partial or temporary file is left in the run folder, nothing is published, and the next
    run (space freed) completes."""
    from oral_core.inference import ORALModel

    graph = env.graph("disk-full")
    real = pq.ParquetWriter.write_table

    def full(self, table, *args, **kwargs):  # the predictions are written row group by row group
        if "predictions" in str(self.where):
            real(self, table, *args, **kwargs)  # a row group made it to disk, then none
            raise OSError(errno.ENOSPC, "No space left on device", str(self.where))
        return real(self, table, *args, **kwargs)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    with pytest.raises(OSError) as err:
        env.night(graph)
    assert err.value.errno == errno.ENOSPC
    run_dir = next((env.state / "runs" / graph).iterdir())
    assert _leftovers(run_dir) == [] and not (run_dir / "predictions.parquet").exists()
    if (run_dir / "model.pt").exists():  # written whole before the disk filled up
        ORALModel.load(run_dir / "model.pt")
    assert env.rows(graph)["runs"] == [] and env.versions(graph) == []
    monkeypatch.undo()
    out = env.night(graph)
    assert len(env.rows(graph)["runs"]) == 1 and out["model_version"]
    pq.read_table(run_dir / "predictions.parquet")
    check_consistent(env)


def test_disk_full_while_writing_a_report_keeps_the_old_one(env, tmp_path, monkeypatch):
    """Case 7. Reports are replaced whole: a write that runs out of space leaves the previous
    report as it was and no temporary file."""
    from data_contracts import snapshots as snap
    from tasks import intake

    files = snap.read_snapshot_files(env.root / "base" / f"snapshot={D1}")
    reports = tmp_path / "reports"
    _, json_path, html_path = intake.validate(files, reports)
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    real = Path.write_text

    def full(self, data, *args, **kwargs):
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))
    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError, match="No space left"):
        intake.validate(files, reports)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before
    json.loads(json_path.read_text())


def test_state_folder_not_writable_fails_clearly(env, tmp_path):
    """Case 7. The state folder cannot be written (chmod does not bind root, so the folder is
    placed under a regular file): the run fails at its first write with an error naming the
    path, and nothing is written anywhere."""
    graph = env.graph("read-only")
    blocker = tmp_path / "a-regular-file"
    blocker.write_text("x")
    with pytest.raises(OSError) as err:
        env.night(graph, state=blocker / "state")
    assert err.value.errno in (errno.ENOTDIR, errno.EACCES, errno.EROFS)
    assert str(blocker) in str(err.value)
    assert blocker.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == [blocker.name]
    assert env.rows(graph)["runs"] == []


READ_ONLY_CASES = [
    # (command, what is read-only, the message after "error: --state-dir {state}: ")
    ("run", "", "state folder {state} is not writable (Read-only file system)"),
    ("run", "prefect", "{state}/prefect in the state folder is not writable (Read-only file system)"),
    ("backfill", "runs", "{state}/runs in the state folder is not writable (Read-only file system)"),
    ("run", "oral.duckdb", "{state}/oral.duckdb in the state folder is not writable (Read-only "
     "file system)"),
    ("run", "..", "state folder {state}/new cannot be created: {state} is not writable (Read-only "
     "file system)"),
    ("demo", "", "state folder {state} is not writable (Read-only file system)"),
]


@pytest.mark.parametrize("command,read_only,message", READ_ONLY_CASES,
                         ids=[f"{c}-{r or 'state'}" for c, r, _ in READ_ONLY_CASES])
def test_read_only_state_folder_is_refused_before_prefect_starts(tmp_path, capsys, monkeypatch,
                                                                 command, read_only, message):
    """Issue 21.7. A state folder (or its prefect/, runs/ subfolder, or its DuckDB file) that
    cannot be written: ``oral run``/``backfill``/``demo`` say so in one line naming it and exit 2
    before the environment is configured (Prefect's home, its server). Tests run as root, where
    chmod does not stop writes, so a read-only file system is emulated: ``os.open`` and
    ``os.mkdir`` fail with EROFS for every path in the read-only folder (the real thing, a
    read-only bind mount, is ``test_read_only_bind_mounted_state_folder``). Before: the check
    asked ``os.access`` (true for root; and on a read-only mount the pipeline went on to an
    ``OSError`` traceback, or a 126 s wait for Prefect's server and a timeout traceback)."""
    import flows.settings
    from cli.main import main

    def started(*args, **kwargs):
        raise AssertionError("work started before the state folder was checked")

    monkeypatch.setattr(flows.settings, "configure_environment", started)
    state = tmp_path / "state"
    for sub in ("prefect", "runs", "reports"):
        (state / sub).mkdir(parents=True)
    (state / "oral.duckdb").write_bytes(b"")
    target = state if read_only in ("", "..") else state / read_only
    real_open, real_mkdir = os.open, os.mkdir

    def read_only_fs(path) -> bool:
        path = Path(os.fsdecode(path)).absolute()
        return path == target or target in path.parents

    def fake_open(path, flags, *args, **kwargs):
        if read_only_fs(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if read_only_fs(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    root = tmp_path / "snapshots"
    (root / "g").mkdir(parents=True)
    state_dir = state / "new" if read_only == ".." else state
    args = [command] + ([] if command == "demo" else ["--graph", "g", "--snapshots", str(root)])
    capsys.readouterr()
    code = main(args + ["--state-dir", str(state_dir)])
    err = capsys.readouterr().err
    expected = f"error: --state-dir {state_dir}: " + message.replace("{state}", str(state))
    assert code == 2 and err == expected + "\n", err
    monkeypatch.undo()
    assert sorted(p.name for p in state.iterdir()) == ["oral.duckdb", "prefect", "reports", "runs"]
    assert not [p for p in state.rglob("*") if p.name.startswith(".")]  # no probe file left


def _can_bind_read_only() -> bool:
    """Whether this machine lets a process bind-mount a folder read-only in its own user and
    mount namespace (``unshare -rm``; the mount disappears with the process)."""
    import tempfile

    if not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as folder:
        try:
            return subprocess.run(
                ["unshare", "-rm", "sh", "-c", 'mount --bind "$1" "$1" && '
                 'mount -o remount,bind,ro "$1" && ! touch "$1/x" 2>/dev/null', "sh", folder],
                capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


@pytest.mark.skipif(not _can_bind_read_only(), reason="needs unshare -rm and bind mounts")
@pytest.mark.parametrize("read_only", ["prefect", ""])
def test_read_only_bind_mounted_state_folder(tmp_path, read_only):
    """Issue 21.7, for real: ``oral run`` in a mount namespace where Prefect's home in the state
    folder (left by an earlier run), or the whole state folder, is bind-mounted read-only. One
    line naming it, exit 2, within seconds. Before, with ``prefect/`` read-only: Prefect's
    in-process server could not open its database and the command waited for the start-up
    timeout (126 s by default; 10 s here), then printed a timeout traceback."""
    state = tmp_path / "state"
    (state / "prefect").mkdir(parents=True)
    mounted = state / read_only if read_only else state
    root = tmp_path / "snapshots"
    (root / "g").mkdir(parents=True)
    script = ("import sys; from cli.main import main; "
              f"sys.exit(main(['run', '--graph', 'g', '--snapshots', {str(root)!r}, "
              f"'--state-dir', {str(state)!r}]))")
    shell = (f'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && '
             f'exec "$2" -c "$3"')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ORAL_"))}
    env |= {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "10", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(["unshare", "-rm", "sh", "-c", shell, "sh", str(mounted),
                          sys.executable, script], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    what = f"{mounted} in the state folder" if read_only else f"state folder {state}"
    assert out.stderr == (f"error: --state-dir {state}: {what} is not writable "
                          "(Read-only file system)\n"), out.stderr
    assert sorted(p.name for p in state.iterdir()) == ["prefect"]


# ------------------------------------------------- 7. a full disk, told in one line (issue 49)
def _fake_free_space(monkeypatch, full: Path, free_mb: float = 2.0, when=lambda: True):
    """The free-space probe (:func:`tasks.diskspace.free_bytes`) says ``free_mb`` for every path
    inside ``full`` (while ``when()``), 50 GB elsewhere: a full disk without filling one."""
    from tasks import diskspace

    full = Path(full).absolute()

    def free_bytes(path):
        path = Path(path).absolute()
        inside = path == full or full in path.parents
        return int((free_mb if inside and when() else 50_000) * 1024 * 1024)
    monkeypatch.setattr(diskspace, "free_bytes", free_bytes)


DISK_CASES = ["state folder", "Prefect home", "MLflow store", "warehouse"]


@pytest.mark.parametrize("where", DISK_CASES)
def test_full_disk_is_one_line_before_prefect_starts(tmp_path, capsys, monkeypatch, where):
    """Issue 49. A folder the night writes to (the state folder, Prefect's home, the MLflow
    store, the DuckDB file's folder) with 2 MB free: ``oral run`` says so in one line naming the
    folder, its free space and what a night needs, within seconds, before Prefect's temporary
    server starts, no traceback. Before: with 1-3 MB free the run waited 130 s for Prefect's
    server and printed a timeout."""
    import flows.settings
    from cli.main import main

    def started(*args, **kwargs):
        raise AssertionError("Prefect's environment was set up on a full disk")

    monkeypatch.setattr(flows.settings, "configure_environment", started)
    for key in ("PREFECT_HOME", "ORAL_WAREHOUSE", "ORAL_TRACKING_URI", "MLFLOW_TRACKING_URI",
                "ORAL_MIN_FREE_MB"):
        monkeypatch.delenv(key, raising=False)
    state = tmp_path / "state"
    elsewhere = {"state folder": state, "Prefect home": tmp_path / "prefect-home",
                 "MLflow store": tmp_path / "mlflow", "warehouse": tmp_path / "warehouse"}
    for folder in elsewhere.values():
        folder.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(elsewhere["Prefect home"]))
    monkeypatch.setenv("ORAL_TRACKING_URI", f"sqlite:///{elsewhere['MLflow store']}/mlflow.db")
    monkeypatch.setenv("ORAL_WAREHOUSE", str(elsewhere["warehouse"] / "oral.duckdb"))
    _fake_free_space(monkeypatch, elsewhere[where])
    root = tmp_path / "snapshots"
    (root / "g").mkdir(parents=True)
    capsys.readouterr()
    code = main(["run", "--graph", "g", "--snapshots", str(root), "--state-dir", str(state)])
    err = capsys.readouterr().err
    assert code == 1 and err == (
        f"error: disk full: {where} {elsewhere[where]} has 2 MB free; a night needs at least "
        f"200 MB there (ORAL_MIN_FREE_MB), checked before starting Prefect's temporary server. "
        f"Free some space and run it again: nothing was published tonight\n"), err


def test_min_free_mb_is_a_setting(monkeypatch, tmp_path):
    """``ORAL_MIN_FREE_MB`` (default 200; 0: no check) through :class:`flows.settings.Settings`;
    a value that is not a number is refused naming it."""
    from flows.settings import Settings
    from tasks import diskspace

    monkeypatch.delenv("ORAL_MIN_FREE_MB", raising=False)
    assert Settings.from_env(tmp_path).min_free_mb == 200
    monkeypatch.setenv("ORAL_MIN_FREE_MB", "0")
    _fake_free_space(monkeypatch, tmp_path, free_mb=0)
    diskspace.check_free_space({"state folder": tmp_path})  # 0: no check
    monkeypatch.setenv("ORAL_MIN_FREE_MB", "lots")
    with pytest.raises(ValueError, match="ORAL_MIN_FREE_MB"):
        Settings.from_env(tmp_path)


def test_disk_filling_during_a_night_stops_it_in_one_line(env, capsys, monkeypatch):
    """Issue 49. The disk fills while a night trains (the state folder drops to 2 MB free after
    training): the night stops before anything is registered or published, with one ``error:``
    line naming the folder and no traceback on the terminal; once space is back the rerun
    publishes the night. Before: a Prefect server error 500 or an ENOSPC traceback."""
    from cli.main import main
    from tasks import scoring

    graph = env.graph("disk-fills")
    env.night(graph, D1)
    filled = {"on": False}
    real = scoring.describe_classes

    def describe_then_fill(*args, **kwargs):
        filled["on"] = True
        return real(*args, **kwargs)
    monkeypatch.setattr(scoring, "describe_classes", describe_then_fill)
    _fake_free_space(monkeypatch, env.state, when=lambda: filled["on"])
    args = ["run", "--graph", graph, "--snapshots", str(env.root), "--date", "2026-03-02",
            "--state-dir", str(env.state), "--epochs", "10", "--set", "hidden_dim=16",
            "--set", "pol_start_epoch=5", "--set", "cluster_warmup_epochs=3", "--device", "cpu"]
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and "Logging error" not in err, err
    assert err.splitlines()[-1] == (
        f"error: disk full: state folder {env.state} has 2 MB free; a night needs at least "
        f"200 MB there (ORAL_MIN_FREE_MB), checked before registering and publishing. Free some "
        f"space and run it again: nothing was published tonight"), err
    assert len(env.versions(graph)) == 1 and len(env.rows(graph)["runs"]) == 1
    monkeypatch.undo()
    assert main(args) == 0
    assert len(env.versions(graph)) == 2 and len(env.rows(graph)["runs"]) == 2
    check_consistent(env, graph)


def _prefect_500():
    import httpx
    from prefect.exceptions import PrefectHTTPStatusError

    request = httpx.Request("POST", "http://127.0.0.1:4200/api/task_runs/")
    response = httpx.Response(500, request=request, text="Internal Server Error")
    return PrefectHTTPStatusError.from_httpx_error(httpx.HTTPStatusError(
        "Server error '500 Internal Server Error'", request=request, response=response))


@pytest.mark.parametrize("error,full", [
    ("prefect-500", True), ("prefect-500", False), ("ephemeral-timeout", True),
    ("enospc", True), ("sqlite-full", True), ("other", True)])
def test_errors_caused_by_a_full_disk_are_one_line(tmp_path, capsys, monkeypatch, error, full):
    """Issue 49. What a full disk looks like from the CLI (a Prefect server error 500 on night
    2, the temporary server that never came up, an ENOSPC, SQLite's ``database or disk is
    full``) is one line naming the folder with the least space, its free space and what a night
    needs; a server error while every folder has space, or another error, stays what it was."""
    import sqlite3

    from cli import logs as cli_logging

    state = tmp_path / "state"
    (state / "prefect").mkdir(parents=True)
    for key in ("PREFECT_HOME", "ORAL_WAREHOUSE", "ORAL_TRACKING_URI", "MLFLOW_TRACKING_URI",
                "ORAL_MIN_FREE_MB"):
        monkeypatch.delenv(key, raising=False)
    if full:
        _fake_free_space(monkeypatch, state / "prefect", free_mb=3)
    else:
        _fake_free_space(monkeypatch, tmp_path / "nowhere")
    err = {"prefect-500": _prefect_500,
           "ephemeral-timeout": lambda: RuntimeError(
               "Timed out while attempting to connect to ephemeral Prefect API server."),
           "enospc": lambda: OSError(errno.ENOSPC, "No space left on device",
                                     str(state / "prefect" / "storage" / "x")),
           "sqlite-full": lambda: sqlite3.OperationalError("database or disk is full"),
           "other": lambda: KeyError("something else")}[error]()
    cli_logging.setup_console(False)
    assert cli_logging.open_log_file(state)
    try:
        assert cli_logging.report_unexpected(err, "run") == 1
    finally:
        cli_logging.close_log_file()
    out = capsys.readouterr().err
    assert len(out.splitlines()) == 1, out
    if error == "other" or not full:
        assert "disk full" not in out and out.startswith(f"error: {type(err).__name__}: ")
    else:
        assert out.startswith("error: disk full: ")
        assert f"{state / 'prefect'} has 3 MB free; a night needs at least 200 MB there" in out, out


def test_log_file_on_a_full_disk_costs_records_not_tracebacks(tmp_path, capsys):
    """Issue 49, a real ENOSPC: the log file is ``/dev/full``. Records written to it, and the
    close at the end of the command, print no ``--- Logging error ---`` and no traceback; one
    ``warning:`` line says the log file could not be written (none when the command already
    said the disk is full). Before: a traceback from the handler as it closed."""
    import logging

    from cli import logs as cli_logging

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    state = tmp_path / "state"
    (state / "logs").mkdir(parents=True)
    (state / "logs" / "oral.log").symlink_to("/dev/full")
    for told in (False, True):
        cli_logging.setup_console(False)
        assert cli_logging.open_log_file(state) == state / "logs" / "oral.log"
        try:
            logging.getLogger(cli_logging.TRACE_LOGGER).warning("a record the disk cannot take")
            try:
                raise RuntimeError("the run failed")
            except RuntimeError as err:
                logging.getLogger(cli_logging.TRACE_LOGGER).error("failed", exc_info=err)
            if told:
                cli_logging._state["disk_full_told"] = True
        finally:
            cli_logging.close_log_file()
        err = capsys.readouterr().err
        assert "Traceback" not in err and "Logging error" not in err, err
        assert err == ("" if told else f"warning: the log file {state / 'logs' / 'oral.log'} "
                       "could not be written (No space left on device); its last records are "
                       "lost\n"), err
