"""The single DuckDB writer: a lock the operating system gives back when its holder dies.

The nightly flow holds :func:`writer_lock` from lineage to publish (MLflow registration included),
so no other run lands in DuckDB between tonight's lineage and its publish. It is an exclusive
``fcntl.flock`` on ``<warehouse>.writer-lock``, a file next to the DuckDB file: the kernel drops
the lock with the process that holds it, so a run killed in the middle (``kill -9``, a crash, a
lost machine's process) never locks later nights out (the Prefect global concurrency limit used
before kept a dead process's slot for ever). ``flock`` locks belong to an open file, so two
``open()`` calls conflict even inside one process: threads of a fan-out are covered too.

The holder writes who it is into the file (pid, host, graph, since when) and empties it when it
lets go. A run that finds the lock free but a holder record left behind says in one log line
that the holder died without letting go, and carries on; a live holder makes it wait, logged,
for at most ``timeout`` seconds (``ORAL_WRITER_LOCK_TIMEOUT``, default 600), then
:class:`WriterLockTimeout` names the holder in one line.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Iterator

from .errors import WarehouseLocked

log = logging.getLogger(__name__)

#: the suffix of the lock file, next to the DuckDB file (``oral.duckdb.writer-lock``)
SUFFIX = ".writer-lock"
#: seconds a waiting run waits by default (``ORAL_WRITER_LOCK_TIMEOUT``)
DEFAULT_TIMEOUT = 600.0


class WriterLockTimeout(WarehouseLocked):
    """Another live run held the DuckDB writer lock for the whole allowed wait."""


def lock_path(warehouse_path: str | os.PathLike) -> Path:
    """The lock file of the DuckDB file ``warehouse_path``."""
    path = Path(warehouse_path)
    return path.with_name(path.name + SUFFIX)


def read_holder(path: str | os.PathLike) -> dict | None:
    """The holder record in the lock file ``path`` (None: none, or not readable)."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return {"raw": text[:200]}
    return record if isinstance(record, dict) else {"raw": text[:200]}


def describe(holder: dict | None) -> str:
    """``pid 123 on host h (graph g, since 2026-03-01T02:00:00+00:00)``."""
    if not holder:
        return "an unknown process (no holder record)"
    if "raw" in holder:
        return f"an unknown process (holder record {holder['raw']!r})"
    return (f"pid {holder.get('pid')} on host {holder.get('host')} (graph {holder.get('graph')}, "
            f"since {holder.get('since')})")


def _alive(holder: dict | None) -> bool | None:
    """Whether the holder's process still runs (None: on another host, or unknown)."""
    if not holder or holder.get("host") != socket.gethostname():
        return None
    try:
        os.kill(int(holder["pid"]), 0)
    except (KeyError, TypeError, ValueError):
        return None
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as err:
        if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def _write_holder(fd: int, record: dict) -> None:
    """Replace the file's content with ``record`` (best effort: the lock is what counts)."""
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError as err:  # a full disk: the lock still holds, only the record is missing
        log.warning("could not write the holder record of the DuckDB writer lock (%s)", err)


@contextlib.contextmanager
def writer_lock(warehouse_path: str | os.PathLike, graph: str = "",
                timeout: float = DEFAULT_TIMEOUT, poll: float = 0.5) -> Iterator[dict]:
    """Hold the DuckDB writer lock of ``warehouse_path`` for the ``with`` block; yields the holder
    record written. Waits (bounded by ``timeout`` seconds, logged) while another live process or
    thread holds it; raises :class:`WriterLockTimeout` naming the holder when the wait runs out.
    A holder that died let go with its process: its record is reported (one line) and replaced."""
    path = lock_path(warehouse_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        start = time.monotonic()
        told = None
        while not _try_lock(fd):
            holder = read_holder(path)
            waited = time.monotonic() - start
            if waited >= timeout:
                raise WriterLockTimeout(
                    f"the DuckDB writer lock {path} is held by {describe(holder)}; gave up after "
                    f"{waited:.0f} s (ORAL_WRITER_LOCK_TIMEOUT={timeout:g}): wait for that run to "
                    f"finish, or stop it")
            if told is None or time.monotonic() - told >= 60:
                log.warning("waiting for the DuckDB writer lock %s, held by %s (%.0f of %g s "
                            "waited)", path, describe(holder), waited, timeout)
                told = time.monotonic()
            time.sleep(min(poll, max(0.01, timeout - waited)))
        stale = read_holder(path)
        if stale:
            alive = _alive(stale)
            log.warning("the DuckDB writer lock %s was left by %s, which %s without letting go; "
                        "the lock is free, carrying on", path, describe(stale),
                        "died" if alive is False else "stopped")
        record = {"pid": os.getpid(), "host": socket.gethostname(), "graph": graph,
                  "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        _write_holder(fd, record)
        try:
            yield record
        finally:
            with contextlib.suppress(OSError):  # an empty file: nobody holds the lock
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
