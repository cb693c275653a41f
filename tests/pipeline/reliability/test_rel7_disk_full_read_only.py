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
import time
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
    from tasks import steps

    files = snap.read_snapshot_files(env.root / "base" / f"snapshot={D1}")
    reports = tmp_path / "reports"
    _, json_path, html_path = steps.validate(files, reports)
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    real = Path.write_text

    def full(self, data, *args, **kwargs):
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))
    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError, match="No space left"):
        steps.validate(files, reports)
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
    from flows.cli import main

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
    script = ("import sys; from flows.cli import main; "
              f"sys.exit(main(['run', '--graph', 'g', '--snapshots', {str(root)!r}, "
              f"'--state-dir', {str(state)!r}]))")
    shell = (f'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && '
             f'exec "$2" -c "$3"')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ORAL_"))}
    env |= {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "10", "OMP_NUM_THREADS": "1"}
    start = time.monotonic()
    out = subprocess.run(["unshare", "-rm", "sh", "-c", shell, "sh", str(mounted),
                          sys.executable, script], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    what = f"{mounted} in the state folder" if read_only else f"state folder {state}"
    assert out.stderr == (f"error: --state-dir {state}: {what} is not writable "
                          "(Read-only file system)\n"), out.stderr
    assert time.monotonic() - start < 60
    assert sorted(p.name for p in state.iterdir()) == ["prefect"]
