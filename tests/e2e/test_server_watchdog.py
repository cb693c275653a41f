"""``kill -9`` of ``oral run`` stops Prefect's temporary server too (issue 21.11).

Without ``PREFECT_API_URL`` Prefect starts a ``uvicorn`` server for the process and stops it at
exit; a process killed with SIGKILL runs no exit handler, and the server ran on, orphaned
(6 of 9 kill points in the issue). ``oral`` now starts a watchdog with each such server
(``flows/server_watchdog.py``) that stops it once its parent is gone. Killed while the server
starts and while the run trains, the server is gone within 15 s, and so is the watchdog.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

ROOT = Path(__file__).resolve().parents[2]
D1 = "2026-03-01"


def _snapshot(root: Path) -> None:
    import numpy as np

    from data_contracts import snapshots as snap

    n = 200
    rng = np.random.default_rng(0)
    ids = [f"n{i}" for i in range(n)]
    labels = [["a", "b", "c"][i % 3] if i < 90 else None for i in range(n)]
    snap.write_snapshot(root, "g", D1, snap.nodes_table(ids, rng.random((n, 8)).astype(np.float32),
                                                        labels),
                        snap.edges_table(ids[:-1], ids[1:]))


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _is_server(proc) -> bool:
    return "prefect.server.api.server:create_app" in " ".join(_cmdline(proc))


def _gone(proc) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


@pytest.mark.parametrize("when", ["server-starting", "run-under-way"])
def test_sigkill_of_oral_run_stops_the_prefect_server(tmp_path, when):
    """SIGKILL to ``oral run`` right after its server process appears (before it answers), or
    once the flow run has begun (the server answering, the run training): the server and the
    watchdog are gone (waited for up to 120 s). Before: the server ran on until killed by hand."""
    root, state, log = tmp_path / "snapshots", tmp_path / "state", tmp_path / "oral.log"
    _snapshot(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ORAL_",
                                                                     "MLFLOW_"))}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())",
           "run", "--graph", "g", "--snapshots", str(root), "--state-dir", str(state),
           "--epochs", "2000", "--device", "cpu"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    oral = psutil.Process(proc.pid)
    found = []
    try:
        deadline = time.monotonic() + 180
        server = None
        while time.monotonic() < deadline and proc.poll() is None:
            children = oral.children(recursive=True)
            server = server or next((c for c in children if _is_server(c)), None)
            found = children
            if server is not None and (when == "server-starting" or
                                       "Beginning flow run" in log.read_text()):
                break
            time.sleep(0.02)
        assert server is not None and proc.poll() is None, log.read_text()[-3000:]
        if when == "run-under-way":
            time.sleep(2)  # into ingest, validation, training
            assert proc.poll() is None, log.read_text()[-3000:]
        watchdogs, until = [], time.monotonic() + 60  # started right after the server
        while not watchdogs and time.monotonic() < until:
            found = oral.children(recursive=True)
            watchdogs = [c for c in found if "server_watchdog" in " ".join(_cmdline(c))]
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (_gone(server) and all(map(_gone, watchdogs))):
            time.sleep(0.1)
        assert _gone(server), f"Prefect's server (pid {server.pid}) outlived `oral run`"
        assert watchdogs and all(map(_gone, watchdogs)), watchdogs
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for child in found:
            if not _gone(child):
                child.kill()
