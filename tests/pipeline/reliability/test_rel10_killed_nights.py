"""Reliability point 10 (issue 49): a night killed (SIGKILL) at any point never locks later nights
out. The DuckDB writer is guarded by a file lock the operating system drops with its holder
(:mod:`tasks.warehouse.writer_lock`), no longer by the Prefect global concurrency limit
``oral-duckdb-writer``, whose slot a killed run kept for ever (every later night of every graph on
that state then waited after "N classes described").

A night is killed before, inside and after each of lineage, MLflow registration, the DuckDB
publish and the champion alias move (``reliability_helpers.PAUSE_POINTS``); then the same
snapshot runs again and the next one after it: the rerun does not wait, nothing is published
twice, the registry and DuckDB agree. The killed nights are forked from one process that imported
the pipeline once (``reliability_helpers.py forkserver``), so each costs a night, not an import.
The external-server variant is ``tests/e2e/test_e2e_servers.py::test_killed_night_with_servers``.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .harness import CONFIG, D1, D2, HELPER, ROOT, check_consistent, helpers

WAIT_LINE = "waiting for the DuckDB writer lock"
STALE_LINE = "without letting go"
#: the points at which the killed night held the DuckDB writer lock
LOCKED = ("lineage-start", "lineage-end", "register-start", "register-mid", "register-end",
          "publish-mid", "publish-end")


# ------------------------------------------------------------------ the lock on its own
def _hold_lock_in_a_child(db: Path, graph: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(HELPER), "writer-lock", str(db), graph],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=os.environ | {"OMP_NUM_THREADS": "1"})
    line = proc.stdout.readline().strip()
    assert line == "LOCKED", f"{line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=120)
    proc.stdout.close()
    proc.stderr.close()


class _Lines(logging.Handler):
    """The messages of one logger (a handler of its own: Prefect's logging set-up may stop
    propagation to pytest's caplog)."""

    def __init__(self, name: str = "tasks.warehouse.writer_lock"):
        super().__init__(logging.DEBUG)
        self.name_, self.lines = name, []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def __enter__(self):
        logger = logging.getLogger(self.name_)
        self.level = logger.level
        logger.addHandler(self)
        logger.setLevel(logging.INFO)
        return self.lines

    def __exit__(self, *exc):
        logger = logging.getLogger(self.name_)
        logger.removeHandler(self)
        logger.setLevel(self.level)


def test_the_lock_of_a_killed_holder_is_free_at_once(tmp_path):
    """A holder killed with SIGKILL lets go with its process: the next writer takes the lock at
    once (timeout 0) and says in one line that the holder (pid, host, graph) died without letting
    go; its own record replaces the dead one's, and it empties the file when done."""
    from tasks.warehouse.writer_lock import lock_path, read_holder, writer_lock

    db = tmp_path / "oral.duckdb"
    proc = _hold_lock_in_a_child(db, "shop")
    dead = proc.pid
    assert read_holder(lock_path(db))["pid"] == dead
    proc.send_signal(signal.SIGKILL)
    _stop(proc)
    with _Lines() as lines:
        with writer_lock(db, "social", timeout=0) as record:
            assert read_holder(lock_path(db)) == record and record["pid"] == os.getpid()
    [line] = lines
    assert f"pid {dead} on host" in line and "graph shop" in line and "died without letting go" in line
    assert read_holder(lock_path(db)) is None  # released: no holder record


def test_a_live_holder_makes_a_writer_wait_then_fail_naming_it(tmp_path):
    """A live holder: the writer waits, logged, for the bounded time, then fails in one line
    naming the holder (pid, graph) and the setting; once the holder is gone the lock is free."""
    from tasks.warehouse import WarehouseError, WriterLockTimeout, writer_lock

    db = tmp_path / "oral.duckdb"
    proc = _hold_lock_in_a_child(db, "shop")
    try:
        start = time.monotonic()
        with _Lines() as lines, pytest.raises(WriterLockTimeout) as raised:
            with writer_lock(db, "social", timeout=1.0, poll=0.1):
                pass
        assert time.monotonic() - start >= 1.0  # it waited its whole timeout
        assert isinstance(raised.value, WarehouseError)  # the CLI's one-line warehouse error
        message = str(raised.value)
        assert "\n" not in message and f"pid {proc.pid} on host" in message
        assert "graph shop" in message and "ORAL_WRITER_LOCK_TIMEOUT=1" in message
        assert any(WAIT_LINE in line and f"pid {proc.pid}" in line for line in lines)
    finally:
        proc.terminate()
        _stop(proc)
    with writer_lock(db, "social", timeout=0):
        pass


def test_threads_of_one_process_exclude_each_other(tmp_path):
    """flock locks belong to an open file: two threads of one process (a Dask fan-out's) take
    turns; the second waits for the first to let go."""
    from tasks.warehouse.writer_lock import writer_lock

    db = tmp_path / "oral.duckdb"
    events: list[str] = []
    held = threading.Event()

    def first():
        with writer_lock(db, "a", timeout=120):
            events.append("a in")
            held.set()
            time.sleep(0.5)
            events.append("a out")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(120)
    with writer_lock(db, "b", timeout=120, poll=0.05):
        events.append("b in")
    thread.join()
    assert events == ["a in", "a out", "b in"]


def test_the_wait_is_a_setting(monkeypatch):
    """``ORAL_WRITER_LOCK_TIMEOUT`` (default 600 s) through :class:`flows.settings.Settings`."""
    from flows.settings import Settings

    monkeypatch.delenv("ORAL_WRITER_LOCK_TIMEOUT", raising=False)
    assert Settings.from_env("state").writer_lock_timeout == 600
    monkeypatch.setenv("ORAL_WRITER_LOCK_TIMEOUT", "12.5")
    assert Settings.from_env("state").writer_lock_timeout == 12.5
    monkeypatch.setenv("ORAL_WRITER_LOCK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="ORAL_WRITER_LOCK_TIMEOUT"):
        Settings.from_env("state")


def test_a_stuck_prefect_writer_slot_does_not_block_a_night(env):
    """A state whose Prefect database still holds the old limit ``oral-duckdb-writer`` with its
    one slot taken for ever (active_slots 1, no decay: what a night killed under it left) runs
    its nights: nothing waits on that limit any more. Before: the night waited 600 s after
    "N classes described" and failed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    graph = env.graph("stuck-slot")
    with get_client(sync_client=True) as client:
        try:
            client.delete_global_concurrency_limit_by_name("oral-duckdb-writer")
        except Exception:  # noqa: BLE001 - not there
            pass
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(
            name="oral-duckdb-writer", limit=1, active_slots=1, slot_decay_per_second=0.0))
        try:
            out = env.night(graph)  # finishes: the flow no longer waits on the stuck slot
            limit = client.read_global_concurrency_limit_by_name("oral-duckdb-writer")
            assert limit.active_slots == 1  # untouched: the flow no longer asks for it
        finally:
            client.delete_global_concurrency_limit_by_name("oral-duckdb-writer")
    assert [int(v.version) for v in env.versions(graph)] == [out["model_version"]]
    assert len(env.rows(graph)["runs"]) == 1


# ------------------------------------------------------------------ nights killed at every point
class Forks:
    """The fork server (``reliability_helpers.py forkserver``): nights forked from one process
    that imported the pipeline, each reporting ``STARTED`` / ``PAUSED`` / ``RESULT`` /
    ``FAILED`` lines, read by a thread."""

    def __init__(self, env, logs: Path):
        self.env, self.logs = env, logs
        spec = {"state_dir": str(env.state)}
        self.proc = subprocess.Popen([sys.executable, str(HELPER), "forkserver", json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=(logs / "forkserver.log").open("wb"), text=True,
                                     cwd=ROOT, env=env.child_env())
        self.lines: list[str] = []
        self.pids: dict[str, int] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self._wait(lambda: "READY" in self.lines, 180, "the fork server to import the pipeline")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def _wait(self, done, timeout: float, what: str, tag: str | None = None):
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                log = (self.logs / f"{tag}.log") if tag else self.logs / "forkserver.log"
                text = log.read_text(errors="replace")[-4000:] if log.exists() else ""
                pytest.fail(f"gave up waiting for {what}; lines: {self.lines[-20:]}\n{text}")
            time.sleep(0.05)

    def start(self, tag: str, graph: str, date: str, pause_at: str = "none") -> None:
        night = {"tag": tag, "graph": graph, "root": str(self.env.root), "date": date,
                 "config": CONFIG, "state_dir": str(self.env.state), "pause_at": pause_at,
                 "log": str(self.logs / f"{tag}.log")}
        self.proc.stdin.write(json.dumps(night) + "\n")
        self.proc.stdin.flush()
        self._wait(lambda: self._line("STARTED", tag), 120, f"{tag} to start", tag)
        self.pids[tag] = int(self._line("STARTED", tag).split()[2])

    def _line(self, kind: str, tag: str) -> str | None:
        return next((line for line in self.lines if line.startswith(f"{kind} {tag} ")), None)

    def result(self, tag: str, timeout: float = 300) -> dict:
        self._wait(lambda: self._line("RESULT", tag) or self._line("FAILED", tag), timeout,
                   f"{tag} to finish", tag)
        failed = self._line("FAILED", tag)
        assert failed is None, f"{failed}\n{self.log(tag)[-4000:]}"
        return json.loads(self._line("RESULT", tag).split(" ", 2)[2])

    def log(self, tag: str) -> str:
        return (self.logs / f"{tag}.log").read_text(errors="replace")

    def paused(self, tag: str) -> bool:
        return any(line.startswith("PAUSED ") and line.endswith(f" {self.pids[tag]}")
                   for line in self.lines)

    def kill(self, tag: str) -> int:
        """SIGKILL the night ``tag`` (paused); returns once it is gone. Its pid."""
        pid = self.pids[tag]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while _running(pid):
            assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
            time.sleep(0.02)
        return pid

    def kill_all(self, nights: list[tuple[str, str]], date: str, at_once: int = 3,
                 timeout: float = 600) -> dict[str, int]:
        """Start a night of each ``(graph, point)``, ``at_once`` at a time, and SIGKILL each
        when it reaches its point (a night paused inside the writer lock holds up the others
        only until then). Returns ``{graph: pid of the killed night}``."""
        pending, running, killed = list(nights), {}, {}
        deadline = time.monotonic() + timeout
        while pending or running:
            while pending and len(running) < at_once:
                graph, point = pending.pop(0)
                tag = f"{graph}-{date}-killed"
                self.start(tag, graph, date, point)
                running[tag] = graph
            for tag, graph in list(running.items()):
                if self.paused(tag):
                    killed[graph] = self.kill(tag)
                    del running[tag]
                elif self._line("FAILED", tag) or self._line("RESULT", tag):
                    pytest.fail(f"{tag} ended before its pause:\n{self.log(tag)[-4000:]}")
            assert time.monotonic() < deadline, f"nights not paused: {running}"
            time.sleep(0.05)
        return killed

    def close(self) -> None:
        for pid in self.pids.values():
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose, but only once every thread is: the leader of a killed
    # multi-threaded process turns zombie while its other threads still exit, holding its open
    # files (and the DuckDB file lock) until the last one is gone; under load that window is long
    states = []
    try:
        stats = list(Path(f"/proc/{pid}/task").glob("*/stat"))
    except FileNotFoundError:  # reaped between the signal check and the listing: gone
        return False
    for stat in stats:
        try:
            states.append(stat.read_text().split(")")[-1].split()[0])
        except OSError:  # that thread is gone
            continue
    return any(state not in ("Z", "X") for state in states)


@pytest.fixture(scope="module")
def forks(env, tmp_path_factory):
    server = Forks(env, tmp_path_factory.mktemp("forks"))
    try:
        yield server
    finally:
        server.close()


#: the graphs of the two-runs-at-once test, each with the point its first night is killed at
TWICE = {"kill-twice-register-mid": "register-mid", "kill-twice-publish-mid": "publish-mid"}


@pytest.fixture(scope="module")
def killed(env, forks):
    """Every graph of this module with its first night (``D1``) killed at its point, three nights
    at a time; ``{graph: {"pid", "versions", "runs", "champion"}}``: the killed night's pid and
    what it left in the registry and DuckDB (read once every killed night is gone)."""
    nights = [(f"kill-{p}", p) for p in helpers.PAUSE_POINTS] + list(TWICE.items())
    for graph, _ in nights:
        env.graph(graph)
    start = time.monotonic()
    pids = forks.kill_all(nights, D1)
    print(f"\n{len(pids)} nights killed in {time.monotonic() - start:.1f} s: {pids}")
    return {graph: {"pid": pid, "versions": len(env.versions(graph)),
                    "runs": len(env.rows(graph)["runs"]), "champion": env.champion(graph)}
            for graph, pid in pids.items()}


def _left_whole_steps(left: dict, point: str) -> None:
    """What a night killed at ``point`` left: whole steps or nothing of them."""
    after = helpers.PAUSE_POINTS.index(point)
    registered = after >= helpers.PAUSE_POINTS.index("register-end")
    published = after >= helpers.PAUSE_POINTS.index("publish-end")
    moved = after >= helpers.PAUSE_POINTS.index("champion-mid")
    assert left["versions"] == (1 if registered else 0), left
    assert left["runs"] == (1 if published else 0), left
    assert (left["champion"] is not None) == moved, left


@pytest.mark.parametrize("point", helpers.PAUSE_POINTS)
def test_night_killed_then_the_rerun_and_the_next_night_finish(env, killed, point):
    """A night killed (SIGKILL) at ``point`` leaves whole steps or none of them; the same
    snapshot then runs again without waiting (a lock left by the dead night is reported in one
    line and taken), nothing is published twice (one version, one DuckDB run, the champion on
    it), and the next snapshot's night completes too, the registry and DuckDB agreeing."""
    graph = f"kill-{point}"
    dead = killed[graph]["pid"]
    _left_whole_steps(killed[graph], point)

    with _Lines() as lines:
        start = time.monotonic()
        first = env.night(graph, D1)
        took = time.monotonic() - start
    assert not any(WAIT_LINE in line for line in lines), lines
    stale = [line for line in lines if STALE_LINE in line and f"pid {dead} " in line]
    # the first rerun after the kill finds the dead night's record if it held the lock (the
    # nights killed inside it were killed before any rerun: the first one reports them all)
    assert len(stale) <= 1 and all(point in LOCKED for _ in stale), lines
    assert took < 120
    [version] = env.versions(graph)
    assert first["model_version"] == int(version.version)
    assert [r["snapshot_date"].isoformat() for r in env.rows(graph)["runs"]] == [D1]
    assert env.champion(graph) == first["model_version"] and first["champion"] is True
    check_consistent(env, graph)

    second = env.night(graph, D2)
    versions = [int(v.version) for v in env.versions(graph)]
    assert versions == [first["model_version"], second["model_version"]]
    runs = env.rows(graph)["runs"]
    assert sorted(r["snapshot_date"].isoformat() for r in runs) == [D1, D2]
    assert sorted(int(r["model_version"]) for r in runs) == versions
    assert env.champion(graph) == (second["model_version"] if second["champion"]
                                   else first["model_version"])
    check_consistent(env, graph)


@pytest.mark.parametrize("graph", list(TWICE))
def test_two_nights_at_once_after_a_kill(env, forks, killed, graph):
    """Point 3 after a kill: a night killed inside the writer lock, then two runs of the same
    snapshot started together: neither waits for the dead night; one takes the lock, the other
    waits for that live run only, then reuses its version; one version, one DuckDB run, the
    champion on it. The next snapshot's night completes."""
    dead = killed[graph]["pid"]
    _left_whole_steps(killed[graph], TWICE[graph])
    forks.start(f"{graph}-a", graph, D1)
    forks.start(f"{graph}-b", graph, D1)
    a, b = forks.result(f"{graph}-a"), forks.result(f"{graph}-b")
    logs = forks.log(f"{graph}-a") + forks.log(f"{graph}-b")
    assert f"held by pid {dead} " not in logs  # nobody waited for the dead night
    assert a["run_id"] == b["run_id"] and a["model_version"] == b["model_version"]
    assert [int(v.version) for v in env.versions(graph)] == [a["model_version"]]
    assert len(env.rows(graph)["runs"]) == 1
    assert env.champion(graph) == a["model_version"]
    check_consistent(env, graph)
    second = env.night(graph, D2)
    assert len(env.versions(graph)) == 2 and len(env.rows(graph)["runs"]) == 2
    assert second["run_id"] != a["run_id"]
    check_consistent(env, graph)
