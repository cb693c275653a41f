"""Stops Prefect's temporary server when the ``oral`` process that started it dies (issue 21.11).

Without a Prefect server (``PREFECT_API_URL`` unset) Prefect starts one for the process: a
``uvicorn`` child (``SubprocessASGIServer``) that it stops at exit. A process killed with
SIGKILL runs no exit handler, and the server ran on, orphaned. :func:`guard_ephemeral_server`
makes each such server come with this watchdog, a small child process of its own session (a
Ctrl-C in the terminal does not stop it before it has done its job) that polls, four times a
second, whether the process that started the server is still its parent: once it is not (the
parent died, however), it terminates the server (SIGTERM, then SIGKILL after 10 s) and exits.
It also exits as soon as the server is gone (the normal exit, where Prefect stops the server).

    python flows/server_watchdog.py PARENT_PID SERVER_PID

Standard library only, plus ``psutil`` when installed (it tells a reused process id from the
server by its start time).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_SECONDS = 0.25
TERM_GRACE_SECONDS = 10.0

_watchdogs: list[subprocess.Popen] = []  # kept so that Python reaps them


def _server_handle(pid: int):
    """A ``psutil.Process`` for ``pid`` (None when psutil is missing or the process is gone)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return False


def _alive(pid: int, handle) -> bool:
    if handle is False:
        return False
    if handle is not None:
        import psutil

        try:
            return handle.is_running() and handle.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pid: int, handle, sig: int) -> None:
    try:
        if handle:
            handle.send_signal(sig)
        else:
            os.kill(pid, sig)
    except Exception:  # noqa: BLE001 - gone already
        pass


def watch(parent: int, server: int) -> int:
    """Poll until the server is gone (return 0) or ``parent`` is no longer this process's
    parent (terminate the server, return 1)."""
    handle = _server_handle(server)
    while True:
        if not _alive(server, handle):
            return 0
        if os.getppid() != parent:
            break
        time.sleep(POLL_SECONDS)
    _signal(server, handle, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_SECONDS
    while time.monotonic() < deadline:
        if not _alive(server, handle):
            return 1
        time.sleep(0.1)
    _signal(server, handle, signal.SIGKILL)
    return 1


def start_watchdog(server_pid: int) -> subprocess.Popen | None:
    """A watchdog for ``server_pid`` with this process as the parent it watches."""
    try:
        # -P: the script's folder (flows/) is not put on sys.path
        proc = subprocess.Popen([sys.executable, "-P", str(Path(__file__).resolve()),
                                 str(os.getpid()), str(server_pid)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return None
    _watchdogs.append(proc)
    return proc


def guard_ephemeral_server() -> bool:
    """Give every temporary Prefect server this process starts a watchdog, started right after
    the server's process (before Prefect waits for it to answer). Prefect 3 starts it in
    ``SubprocessASGIServer._run_uvicorn_command`` (again on a port clash); that method is
    wrapped once per process. Returns whether the wrapper is in place (False: Prefect has no
    such method, the server is not guarded)."""
    try:
        from prefect.server.api.server import SubprocessASGIServer
    except ImportError:
        return False
    original = getattr(SubprocessASGIServer, "_run_uvicorn_command", None)
    if original is None:
        return False
    if getattr(original, "_oral_guarded", False):
        return True

    def run_uvicorn_command(self):
        proc = original(self)
        start_watchdog(proc.pid)
        return proc

    run_uvicorn_command._oral_guarded = True
    run_uvicorn_command.__wrapped__ = original
    SubprocessASGIServer._run_uvicorn_command = run_uvicorn_command
    return True


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(watch(int(sys.argv[1]), int(sys.argv[2])))
