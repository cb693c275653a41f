"""Fault injection (issue 7): a crash, a retry, a second run or a locked database never loses or
duplicates a result. Every test names the guarantee it checks; benchmarks/results/reliability.md
lists them with what is injected and how to rerun one (``pytest tests/test_reliability.py -k NAME``).

One Prefect harness, one state folder (DuckDB file + MLflow SQLite store) and one snapshot root
serve the whole module; each test works on its own graph name, so tests do not see each other's
rows. Kills and concurrency run in child processes (``tests/reliability_helpers.py``): the nightly
flow in a child reports to this module's Prefect server and writes the same state folder.
The state folder and the snapshot root are named with quotes, a semicolon and SQL on purpose.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import errno
import json
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
HELPER = Path(__file__).resolve().with_name("reliability_helpers.py")
sys.path.insert(0, str(HELPER.parent))
import reliability_helpers as helpers  # noqa: E402

D1, D2 = "2026-03-01", "2026-03-02"
CONFIG = {"epochs": 10, "hidden_dim": 16, "pol_start_epoch": 5, "cluster_warmup_epochs": 3,
          "device": "cpu"}
TABLES = ("snapshots", "runs", "classes", "node_assignments", "class_lineage")
VOLATILE = {"published_at", "validated_at", "prefect_flow_run_id"}
LOCK_LINE = "is locked by another process"


# ------------------------------------------------------------------------------------ fixtures
class Env:
    """The module's state folder, snapshot root and stores, with readers for the tests."""

    def __init__(self, base: Path, state: Path, root: Path):
        self.base, self.state, self.root = base, state, root
        self.db = state / "oral.duckdb"
        self.prefect_env: dict[str, str] = {}
        self._client = None

    def graph(self, name: str, source: str = "base") -> str:
        """A graph of its own for one test: a copy of ``source``'s snapshots."""
        if not (self.root / name).exists():
            shutil.copytree(self.root / source, self.root / name)
        return name

    def night(self, graph: str, date: str = D1, state: Path | None = None):
        from flows.nightly import nightly_discovery

        return nightly_discovery(graph, str(self.root), date, CONFIG, str(state or self.state))

    @property
    def client(self):
        if self._client is None:
            import mlflow

            from tasks.registry import TrackingConfig

            cfg = TrackingConfig(None, self.state)
            self._client = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
        return self._client

    def versions(self, graph: str) -> list:
        """Every registered version of ``oral-<graph>`` (none when the model does not exist)."""
        return sorted(self.client.search_model_versions(f"name = 'oral-{graph}'"),
                      key=lambda v: int(v.version))

    def champion(self, graph: str):
        try:
            return int(self.client.get_model_version_by_alias(f"oral-{graph}", "champion").version)
        except Exception:  # noqa: BLE001 - no model or no alias
            return None

    @contextlib.contextmanager
    def con(self):
        import duckdb

        con = duckdb.connect(str(self.db), read_only=True)
        try:
            yield con
        finally:
            con.close()

    def rows(self, graph: str) -> dict[str, list[dict]]:
        """Every row of ``graph`` in every table as dicts (volatile timestamps left out), sorted."""
        if not self.db.exists():
            return {t: [] for t in TABLES}
        out = {}
        with self.con() as con:
            for table in TABLES:
                cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()
                        if r[0] not in VOLATILE]
                where = ("graph = ?" if table in ("snapshots", "runs", "class_lineage") else
                         "run_id IN (SELECT run_id FROM runs WHERE graph = ?)")
                found = con.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE {where}",
                                    [graph]).fetchall()
                out[table] = sorted((dict(zip(cols, row)) for row in found), key=repr)
        return out

    def child_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("ORAL_TRACKING_URI", "MLFLOW_TRACKING_URI", "ORAL_WAREHOUSE")}
        env.update(self.prefect_env, ORAL_STATE_DIR=str(self.state), OMP_NUM_THREADS="1",
                   PYTHONUNBUFFERED="1")
        return env


@pytest.fixture(scope="module")
def env(tmp_path_factory, one_thread):
    base = tmp_path_factory.mktemp("reliability")
    state = base / "st'ate; DROP TABLE runs; --"
    root = base / 'snap"shots\' OR 1=1; --'
    state.mkdir()  # Prefect creates its home inside it when it is first imported
    with pytest.MonkeyPatch.context() as mp:  # every variable is restored afterwards
        for k in ("ORAL_TRACKING_URI", "ORAL_WAREHOUSE", "MLFLOW_TRACKING_URI"):
            mp.delenv(k, raising=False)
        mp.setenv("ORAL_STATE_DIR", str(state))
        from flows.settings import configure_environment

        configure_environment(state)
        from prefect.testing.utilities import prefect_test_harness

        with prefect_test_harness(server_startup_timeout=120):
            import prefect.settings as ps

            from data_contracts.simulate import simulate
            from data_contracts.synthetic import make_static_graph

            static = make_static_graph(num_nodes=360, num_classes=4, num_features=16,
                                       separation=4.0, seed=0, name="base")
            simulate(static, 2, root, "base", start_date=D1, seed=0, known_classes=[0, 1, 2],
                     novel_start={3: 1})
            other = make_static_graph(num_nodes=330, num_classes=4, num_features=16,
                                      separation=4.0, seed=1, name="beta")
            simulate(other, 2, root, "beta", start_date=D1, seed=1, known_classes=[0, 1, 2],
                     novel_start={3: 1})
            e = Env(base, state, root)
            e.prefect_env = {"PREFECT_API_URL": str(ps.PREFECT_API_URL.value()),
                             "PREFECT_HOME": str(ps.PREFECT_HOME.value()),
                             "PREFECT_LOCAL_STORAGE_PATH": str(ps.PREFECT_LOCAL_STORAGE_PATH.value())}
            yield e


def check_consistent(env: Env) -> None:
    """Invariants over the whole state folder: every ``runs`` row names an MLflow version that
    exists and carries its run id; each run's assignments, classes and lineage are complete;
    no registered model holds two versions of one pipeline run."""
    with env.con() as con:
        runs = con.execute("SELECT run_id, model_name, model_version, mlflow_run_id, num_nodes, "
                           "num_classes FROM runs").fetchall()
        for run_id, name, version, mlflow_run, nodes, classes in runs:
            mv = env.client.get_model_version(name, str(version))  # raises if it does not exist
            assert mv.tags.get("oral_run_id") == run_id and mv.run_id == mlflow_run
            n, distinct = con.execute("SELECT count(*), count(DISTINCT node_id) FROM "
                                      "node_assignments WHERE run_id = ?", [run_id]).fetchall()[0]
            assert n == distinct == nodes
            assert con.execute("SELECT count(*) FROM classes WHERE run_id = ?",
                               [run_id]).fetchall()[0][0] == classes
            orphans = con.execute(
                "SELECT count(*) FROM node_assignments a LEFT JOIN classes c ON c.run_id = a.run_id "
                "AND c.class_key = a.class_key WHERE a.run_id = ? AND c.run_id IS NULL",
                [run_id]).fetchall()[0][0]
            no_lineage = con.execute(
                "SELECT count(*) FROM classes c LEFT JOIN class_lineage l ON l.run_id = c.run_id "
                "AND l.lineage_id = c.lineage_id WHERE c.run_id = ? AND l.run_id IS NULL",
                [run_id]).fetchall()[0][0]
            assert orphans == 0 and no_lineage == 0
    for model in env.client.search_registered_models():
        tags = [v.tags.get("oral_run_id") for v in env.client.search_model_versions(
            f"name = '{model.name}'")]
        assert len(tags) == len(set(tags)), f"{model.name} holds two versions of one run: {tags}"


# ----------------------------------------------------------------- 1. SIGKILL while publishing
def _spawn_publish(db: Path, tag: str, pause_at: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HELPER), "publish", str(db), tag, pause_at],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=os.environ | {"OMP_NUM_THREADS": "1"})


def _kill_when_paused(proc: subprocess.Popen) -> None:
    try:
        line = proc.stdout.readline().strip()
        assert line == "PAUSED", f"helper did not reach its pause: {line!r} {proc.stderr.read()}"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _publish_counts(db: Path, run_id: str) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchall()[0][0]
               for t in ("runs", "classes", "node_assignments", "class_lineage")}
        out["snapshots"] = con.execute(
            "SELECT count(*) FROM snapshots s JOIN runs r USING (graph, snapshot_date, content_hash) "
            "WHERE r.run_id = ?", [run_id]).fetchall()[0][0]
        return out
    finally:
        con.close()


def _dump(db: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}
    finally:
        con.close()


def test_sigkill_mid_publish_leaves_whole_run_or_none(tmp_path):
    """Case 1. A publisher killed (SIGKILL) inside its transaction leaves none of its run; one
    killed right after COMMIT leaves all of it; a killed republish leaves the old rows; the next
    publish succeeds cleanly."""
    from tasks.warehouse import Warehouse, make_run_id

    db = tmp_path / "wh" / "oral.duckdb"
    Warehouse(db, threads=1).publish_run(**helpers.publish_data("first"))
    first_id = make_run_id(helpers.GRAPH, helpers.RUN_DATES["first"], "content-first", "cfg")
    second_id = make_run_id(helpers.GRAPH, helpers.RUN_DATES["second"], "content-second",
                            "cfg")
    whole_first = _publish_counts(db, first_id)
    assert whole_first["node_assignments"] == helpers.NODES and whole_first["runs"] == 1
    before = _dump(db)

    # a new run killed between its inserts: none of it, the first run untouched
    _kill_when_paused(_spawn_publish(db, "second", "INSERT INTO node_assignments"))
    assert set(_publish_counts(db, second_id).values()) == {0}
    assert _dump(db) == before

    # a republish of the first run killed after its DELETEs and inserts: the old rows stay
    _kill_when_paused(_spawn_publish(db, "first", "INSERT INTO classes"))
    assert _dump(db) == before

    # killed right after COMMIT: the whole run is there
    _kill_when_paused(_spawn_publish(db, "second", "COMMIT"))
    whole_second = _publish_counts(db, second_id)
    assert whole_second == {"runs": 1, "classes": 6, "node_assignments": helpers.NODES,
                            "class_lineage": 6, "snapshots": 1}
    after_commit = _dump(db)

    # and the next publish (a rerun of the same run) is clean: same rows, nothing doubled
    proc = _spawn_publish(db, "second", "none")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and f"PUBLISHED {second_id}" in out, err
    assert _dump(db) == after_commit
    assert _publish_counts(db, first_id) == whole_first


def test_disk_full_in_duckdb_rolls_back(tmp_path, monkeypatch):
    """Case 7 (warehouse). The database refusing a write mid-transaction (disk full) rolls the
    run back: the earlier rows stay and the next publish works."""
    import duckdb

    from tasks.warehouse import Warehouse, make_run_id

    db = tmp_path / "oral.duckdb"
    wh = Warehouse(db, threads=1)
    wh.publish_run(**helpers.publish_data("first"))
    before = _dump(db)

    def full(con, run_row):
        raise duckdb.IOException("Could not write file: No space left on device")
    monkeypatch.setattr(Warehouse, "_insert_lineage", staticmethod(full))
    with pytest.raises(duckdb.IOException, match="No space left"):
        wh.publish_run(**helpers.publish_data("second"))
    assert _dump(db) == before
    monkeypatch.undo()
    wh.publish_run(**helpers.publish_data("second"))
    assert _publish_counts(db, make_run_id(helpers.GRAPH, helpers.RUN_DATES["second"],
                                           "content-second", "cfg"))["runs"] == 1


class _DiskFullConnection:
    """A DuckDB connection whose schema set-up hits a full disk the way DuckDB reports it: the
    first ``CREATE TABLE`` aborts the transaction (DuckDB invalidates it on an I/O error, so a
    later ROLLBACK says ``cannot rollback - no transaction is active``) and raises
    ``IOException: No space left on device``."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args, **kwargs):
        import duckdb

        if str(sql).lstrip().upper().startswith("CREATE TABLE"):
            self._con.execute("ROLLBACK")
            raise duckdb.IOException("Could not write file \"oral.duckdb.wal\": No space left on device")
        return self._con.execute(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)


def _disk_full_on_schema_set_up(monkeypatch) -> None:
    from tasks.warehouse import Warehouse

    real = Warehouse.connect
    monkeypatch.setattr(Warehouse, "connect",
                        lambda self, *a, **k: _DiskFullConnection(real(self, *a, **k)))


def test_disk_full_in_schema_set_up_names_the_cause(tmp_path, monkeypatch, caplog):
    """Issue 21.3 (a). A full disk while the warehouse sets up its schema: the error says
    ``No space left on device`` (the failed rollback is logged and noted, not raised)."""
    import duckdb

    from tasks.warehouse import Warehouse

    _disk_full_on_schema_set_up(monkeypatch)
    wh = Warehouse(tmp_path / "oral.duckdb", threads=1)
    with pytest.raises(duckdb.IOException, match="No space left on device") as raised:
        wh.ensure_schema()
    assert any("no transaction is active" in note for note in raised.value.__notes__)
    with pytest.raises(duckdb.IOException, match="No space left on device"):
        wh.publish_run(**helpers.publish_data("first"))
    assert "the rollback failed too" in caplog.text
    monkeypatch.undo()
    wh.publish_run(**helpers.publish_data("first"))
    assert _publish_counts(tmp_path / "oral.duckdb", make_run_id_of("first"))["runs"] == 1


def make_run_id_of(tag: str) -> str:
    from tasks.warehouse import make_run_id

    return make_run_id(helpers.GRAPH, helpers.RUN_DATES[tag], f"content-{tag}", "cfg")


def test_failed_publish_leaves_the_champion_where_it_was(env, monkeypatch):
    """Issue 21.3 (b). The second night's DuckDB publish fails on a full disk (every attempt):
    the flow fails naming ``No space left on device``; its version is registered but the
    champion alias has not moved (DuckDB holds no row of that night); the rerun publishes and
    only then runs the champion gate."""
    import duckdb

    from tasks import prefect_tasks as pt

    graph = env.graph("full-disk-publish")
    first = env.night(graph, D1)
    assert env.champion(graph) == first["model_version"]
    monkeypatch.setattr(pt.publish, "retry_delay_seconds", 0)
    _disk_full_on_schema_set_up(monkeypatch)
    with pytest.raises(duckdb.IOException, match="No space left on device"):
        env.night(graph, D2)
    monkeypatch.undo()
    versions = env.versions(graph)
    assert len(versions) == 2 and env.champion(graph) == first["model_version"]
    assert "champion_decision" not in versions[1].tags
    assert [r["snapshot_date"].isoformat() for r in env.rows(graph)["runs"]] == [D1]

    second = env.night(graph, D2)
    assert second["model_version"] == int(versions[1].version)
    assert len(env.versions(graph)) == 2
    assert "champion_decision" in env.client.get_model_version(f"oral-{graph}", versions[1].version).tags
    assert env.champion(graph) == (second["model_version"] if second["champion"] else first["model_version"])
    assert len(env.rows(graph)["runs"]) == 2
    check_consistent(env)


# ----------------------------------------------------------------- 2. crashes, retries, reruns
def test_crash_in_training_then_rerun_completes(env, monkeypatch):
    """Case 2. Training raises on the first attempt: the flow fails with nothing published or
    registered; the rerun trains, completes, and leaves one runs row and one model version."""
    from tasks import steps

    graph = env.graph("crash-train")
    real, calls = steps.train, []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected crash during training")
        return real(*args, **kwargs)
    monkeypatch.setattr(steps, "train", crashing)
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
    from tasks import steps

    graph = env.graph("crash-publish")
    monkeypatch.setattr(pt.publish, "retry_delay_seconds", 0)
    attempts = []

    def crashing(*args, **kwargs):
        attempts.append(1)
        raise RuntimeError("injected crash before publishing")
    monkeypatch.setattr(steps, "write_run", crashing)  # the publish task's DuckDB write
    with pytest.raises(RuntimeError, match="injected crash before publishing"):
        env.night(graph)
    assert len(attempts) == 3  # the task's own retries, bounded
    [registered] = env.versions(graph)
    assert env.rows(graph)["runs"] == []
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    monkeypatch.undo()

    trained = []
    real = steps.train
    monkeypatch.setattr(steps, "train", lambda *a, **k: trained.append(1) or real(*a, **k))
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


# ------------------------------------------------- 3-4. twice, at once, and two graphs at once
def _collect(proc: subprocess.Popen, lines: list[str]) -> None:
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))


@pytest.fixture(scope="module")
def concurrent(env, tmp_path_factory):
    """Three nightly runs started at once in three processes against one state folder: graph
    ``alpha`` twice (same snapshot: a child process and this test process), graph ``beta`` once
    (another child), while a fourth process holds the DuckDB file's write lock until every run
    has logged that it waits for it (at most 45 s, inside the warehouse's 60 s lock timeout).
    The two ``alpha`` runs meet before MLflow logging (``helpers.install_rendezvous``), so both
    find no registered version and both register: the race is forced, not left to timing."""
    import logging

    from tasks.warehouse import Warehouse

    from tasks.registry import champion as tracking

    env.graph("alpha")
    Warehouse(env.db, threads=1).ensure_schema()
    child_env = env.child_env()
    rendezvous = tmp_path_factory.mktemp("rendezvous")
    real_log = helpers.install_rendezvous(str(rendezvous), "this-process")
    holder = subprocess.Popen([sys.executable, str(HELPER), "hold", str(env.db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env=child_env)
    assert holder.stdout.readline().strip() == "LOCKED"
    workers: dict = {}
    here: dict = {"lines": [], "result": None, "error": None}

    class Lines(logging.Handler):
        def emit(self, record):
            here["lines"].append(record.getMessage())
    handler = Lines(level=logging.WARNING)
    for name in ("tasks.warehouse", "tasks.steps", "tasks.registry"):
        logging.getLogger(name).addHandler(handler)

    def in_this_process():
        try:
            here["result"] = env.night("alpha")
        except BaseException as err:  # noqa: BLE001 - reported by the tests
            here["error"] = err

    start = time.monotonic()
    try:
        for key, graph in (("alpha-child", "alpha"), ("beta-child", "beta")):
            spec = {"graph": graph, "root": str(env.root), "date": D1, "config": CONFIG,
                    "state_dir": str(env.state), "wait_for_go": True,
                    "rendezvous": str(rendezvous) if graph == "alpha" else None}
            proc = subprocess.Popen([sys.executable, str(HELPER), "night", json.dumps(spec)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=child_env)
            lines: list[str] = []
            thread = threading.Thread(target=_collect, args=(proc, lines), daemon=True)
            thread.start()
            workers[key] = (proc, lines, thread)
        deadline = time.monotonic() + 180
        while not all("READY" in lines for _, lines, _ in workers.values()):
            assert time.monotonic() < deadline and all(p.poll() is None for p, _, _ in workers.values()), \
                {k: lines[-20:] for k, (_, lines, _) in workers.items()}
            time.sleep(0.1)
        for proc, _, _ in workers.values():  # go, all at once
            proc.stdin.write("go\n")
            proc.stdin.close()
        local = threading.Thread(target=in_this_process)
        local.start()
        everyone = [lines for _, lines, _ in workers.values()] + [here["lines"]]
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if all(any(LOCK_LINE in line for line in lines) for lines in everyone):
                break
            if any(p.poll() is not None for p, _, _ in workers.values()) or not local.is_alive():
                break
            time.sleep(0.1)
        holder.stdin.close()
        assert holder.stdout.readline().strip() == "RELEASED"
        released_at = time.monotonic()
        local.join(timeout=400)
        for proc, _, thread in workers.values():
            proc.wait(timeout=400)
            thread.join(timeout=30)
    finally:
        tracking.log_training_run = real_log
        for name in ("tasks.warehouse", "tasks.steps", "tasks.registry"):
            logging.getLogger(name).removeHandler(handler)
        for proc in [p for p, _, _ in workers.values()] + [holder]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = {}
    for key, (proc, lines, _) in workers.items():
        found = [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]
        results[key] = {"rc": proc.returncode, "lines": lines, "result": found[0] if found else None}
    results["alpha-here"] = {"rc": 0 if here["error"] is None else repr(here["error"]),
                             "lines": here["lines"], "result": here["result"]}
    return {"workers": results, "held_s": released_at - start, "elapsed_s": time.monotonic() - start}


def _snapshot_node_ids(env: Env, graph: str, date: str = D1) -> list[str]:
    ids = pq.read_table(env.root / graph / f"snapshot={date}" / "nodes.parquet", columns=["node_id"])
    return sorted(map(str, ids.column("node_id").to_pylist()))


def _without(rows: dict, column: str) -> dict:
    return {t: [{k: v for k, v in r.items() if k != column} for r in rs] for t, rs in rows.items()}


def test_same_snapshot_at_once_in_two_processes_one_version_one_row(env, concurrent):
    """Case 3. The same snapshot run by two processes at the same time: both succeed and agree
    on one run id and one model version; the registry keeps one version of the run (the process
    that registered second dropped its duplicate and its MLflow run), the champion alias points
    at it, DuckDB holds one run with every node once. A rerun afterwards changes no row but
    ``train_seconds`` (each process trained; the last publisher's timing stays)."""
    alpha = [concurrent["workers"][k] for k in ("alpha-child", "alpha-here")]
    for w in alpha:
        assert w["rc"] == 0 and w["result"], "\n".join(map(str, w["lines"][-40:]))
    a, b = (w["result"] for w in alpha)
    raced = [w for w in alpha if any("registered concurrently" in line for line in w["lines"])]
    assert len(raced) == 1, "both processes should have registered, one then dropping its copy"
    assert a["run_id"] == b["run_id"] and a["model_version"] == b["model_version"]
    assert a["mlflow_run_id"] == b["mlflow_run_id"]
    versions = env.versions("alpha")
    assert [int(v.version) for v in versions] == [a["model_version"]]
    assert env.champion("alpha") == a["model_version"]
    rows = env.rows("alpha")
    assert len(rows["runs"]) == 1 and len(rows["snapshots"]) == 1
    assert sorted(r["node_id"] for r in rows["node_assignments"]) == _snapshot_node_ids(env, "alpha")
    experiment = env.client.get_run(versions[0].run_id).info.experiment_id
    active = env.client.search_runs([experiment], f"tags.oral_run_id = '{a['run_id']}'")
    assert [r.info.run_id for r in active] == [versions[0].run_id]  # a duplicate run was deleted
    check_consistent(env)

    env.night("alpha")  # and once more, sequentially
    assert _without(env.rows("alpha"), "train_seconds") == _without(rows, "train_seconds")
    assert [int(v.version) for v in env.versions("alpha")] == [a["model_version"]]


def test_same_snapshot_twice_leaves_the_same_rows(env):
    """Case 3. Running the same snapshot again (sequentially) changes nothing: the same rows
    exactly, the same single version, training from the cache."""
    graph = env.graph("twice")
    first = env.night(graph)
    before = env.rows(graph)
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    again = env.night(graph)
    assert env.rows(graph) == before
    assert [int(v.version) for v in env.versions(graph)] == [first["model_version"]]
    assert again["model_version"] == first["model_version"] and again["run_id"] == first["run_id"]
    assert model.stat().st_mtime_ns == stamp


def test_unchanged_graph_on_the_next_date_keeps_the_previous_night(env, monkeypatch):
    """Case 3 (issue 21.1). A snapshot copied byte for byte to the next date (a graph that did
    not change over a weekend) is a night of its own: both nights stay in ``runs``,
    ``node_assignments``, ``classes``, ``class_lineage`` and ``class_timeline`` (the second
    night's classes ``persisting`` with the first night's lineage ids), each night has its own
    MLflow run and version, training is reused by content (not run again), and rerunning the
    second night leaves the same rows and versions."""
    from tasks import steps

    graph = "unchanged"
    folder = env.root / graph
    shutil.copytree(env.root / "base" / f"snapshot={D1}", folder / f"snapshot={D1}")
    shutil.copytree(env.root / "base" / f"snapshot={D1}", folder / f"snapshot={D2}")
    first = env.night(graph, D1)
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    real, trained = steps.train, []
    monkeypatch.setattr(steps, "train", lambda *a, **k: trained.append(1) or real(*a, **k))
    second = env.night(graph, D2)
    assert trained == [] and model.stat().st_mtime_ns == stamp  # training reused by content
    assert [p.name for p in (env.state / "runs" / graph).iterdir()] == [model.parent.name]
    assert first["run_id"] != second["run_id"]

    rows = env.rows(graph)
    assert sorted((str(r["snapshot_date"]), r["run_id"]) for r in rows["runs"]) == [
        (D1, first["run_id"]), (D2, second["run_id"])]
    assert len({r["content_hash"] for r in rows["runs"]}) == 1
    assert sorted(str(r["snapshot_date"]) for r in rows["snapshots"]) == [D1, D2]
    nodes = _snapshot_node_ids(env, graph)
    for out in (first, second):
        assert sorted(r["node_id"] for r in rows["node_assignments"]
                      if r["run_id"] == out["run_id"]) == nodes
        assert any(r["run_id"] == out["run_id"] for r in rows["classes"])
    lineage = {out["run_id"]: {r["lineage_id"]: r["status"] for r in rows["class_lineage"]
                               if r["run_id"] == out["run_id"]} for out in (first, second)}
    assert lineage[first["run_id"]] and set(lineage[first["run_id"]].values()) == {"emerged"}
    assert lineage[second["run_id"]] == dict.fromkeys(lineage[first["run_id"]], "persisting")
    assert second["statuses"] == lineage[second["run_id"]]
    with env.con() as con:
        timeline = con.execute("SELECT DISTINCT CAST(snapshot_date AS VARCHAR), run_id FROM "
                               "class_timeline WHERE graph = ? ORDER BY 1", [graph]).fetchall()
    assert timeline == [(D1, first["run_id"]), (D2, second["run_id"])]
    versions = env.versions(graph)
    assert [v.tags.get("oral_run_id") for v in versions] == [first["run_id"], second["run_id"]]
    assert [int(v.version) for v in versions] == [first["model_version"], second["model_version"]]
    check_consistent(env)

    again = env.night(graph, D2)  # idempotent per graph, date and configuration
    assert again["run_id"] == second["run_id"] and again["model_version"] == second["model_version"]
    assert env.rows(graph) == rows
    assert [int(v.version) for v in env.versions(graph)] == [int(v.version) for v in versions]
    assert trained == []


def test_two_graphs_at_once_wait_for_the_lock_and_keep_their_rows(env, concurrent):
    """Case 4. Two graphs run at once against one DuckDB file and one MLflow store while another
    process holds the write lock: every run waits with a bounded, logged retry, all complete, and
    each graph's rows hold exactly its own nodes, classes and model."""
    workers = concurrent["workers"]
    for key, w in workers.items():
        assert w["rc"] == 0 and w["result"], f"{key}:\n" + "\n".join(map(str, w["lines"][-40:]))
        waits = [line for line in w["lines"] if LOCK_LINE in line]
        assert waits, f"{key} never logged waiting for the lock"
        assert re.search(r"\(attempt \d+\); retrying in [\d.]+ s \([\d.]+ of 60\.0 s waited\)",
                         waits[0]), waits[0]
    for graph in ("alpha", "beta"):
        rows = env.rows(graph)
        assert len(rows["runs"]) == 1
        assert sorted(r["node_id"] for r in rows["node_assignments"]) == _snapshot_node_ids(env, graph)
        lineage = {r["lineage_id"] for r in rows["class_lineage"]}
        assert all(lid.startswith((f"{graph}:novel:", "known:")) for lid in lineage)
        [version] = env.versions(graph)
        [run] = rows["runs"]
        assert run["model_name"] == f"oral-{graph}" and run["model_version"] == str(version.version)
        assert env.client.get_run(run["mlflow_run_id"]).data.tags["graph"] == graph
    assert workers["beta-child"]["result"]["run_id"] != workers["alpha-child"]["result"]["run_id"]
    check_consistent(env)


# ----------------------------------------------------------------------- 5. MLflow unreachable
def _fast_tracking_config():
    """TrackingConfig with short pauses between its (still three) attempts, to keep CI fast."""
    from tasks.registry import TrackingConfig

    return dataclasses.make_dataclass("FastTrackingConfig", [
        ("attempts", int, dataclasses.field(default=3)),
        ("base_delay", float, dataclasses.field(default=0.05)),
        ("max_delay", float, dataclasses.field(default=0.1))], bases=(TrackingConfig,))


def test_mlflow_unreachable_fails_clearly_and_publishes_nothing(env, monkeypatch, caplog):
    """Case 5. The tracking server is down (a closed port): bounded, logged retries, then a
    TrackingError naming the URI; the flow stops before DuckDB, so no run row points at a model
    that does not exist."""
    import logging

    from tasks import prefect_tasks as pt
    from tasks import registry as tracking

    graph = env.graph("mlflow-down")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("ORAL_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setattr(tracking, "TrackingConfig", _fast_tracking_config())
    monkeypatch.setattr(pt.register, "retry_delay_seconds", 0)
    caplog.set_level(logging.WARNING, logger="tasks.registry")
    start = time.monotonic()
    with pytest.raises(tracking.TrackingError) as err:
        env.night(graph)
    assert time.monotonic() - start < 120
    assert uri in str(err.value) and "after 3 attempt(s)" in str(err.value)
    retries = [r.getMessage() for r in caplog.records if "failed (attempt" in r.getMessage()]
    assert 2 <= len(retries) <= 3 * 2  # 2 logged retries per task attempt, at most 3 attempts
    assert env.rows(graph)["runs"] == [] and env.rows(graph)["snapshots"] == []
    check_consistent(env)


def test_artifact_store_not_writable_fails_clearly_and_publishes_nothing(env, monkeypatch):
    """Case 5. The artifact folder cannot be created (a file stands where it goes): bounded
    retries, a TrackingError naming the store, no version, no DuckDB row."""
    from tasks import prefect_tasks as pt
    from tasks import registry as tracking

    graph = env.graph("artifacts-blocked")
    blocker = env.state / "mlartifacts" / f"oral-{graph}"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder")
    monkeypatch.setattr(tracking, "TrackingConfig", _fast_tracking_config())
    monkeypatch.setattr(pt.register, "retry_delay_seconds", 0)
    with pytest.raises(tracking.TrackingError) as err:
        env.night(graph)
    assert "after 3 attempt(s)" in str(err.value) and "sqlite:///" in str(err.value)
    assert env.versions(graph) == [] and env.rows(graph)["runs"] == []
    assert blocker.read_text() == "not a folder"
    check_consistent(env)


def test_a_failing_version_search_is_retried_not_taken_for_none(tmp_path):
    """Case 5. The search for the run's registered version failing (a flaky server) used to be
    read as "no version yet", and the run then registered a second one; now it is retried, a
    missing model still means none, and a search that keeps failing raises TrackingError."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST

    from tasks.registry import TrackingConfig, TrackingError
    from tasks.registry import champion as steps

    cfg = TrackingConfig(None, tmp_path, attempts=3, base_delay=0.0, max_delay=0.0)
    run_id = "0" * 32

    class Flaky:
        def __init__(self, failures, error=ConnectionError("connection reset")):
            self.failures, self.error, self.calls = failures, error, 0

        def search_model_versions(self, text):
            self.calls += 1
            assert text == f"name = 'oral-g' and tags.oral_run_id = '{run_id}'"
            if self.calls <= self.failures:
                raise self.error
            return ["v1"]
    flaky = Flaky(failures=2)
    assert steps._versions_of_run(cfg, flaky, "oral-g", run_id) == ["v1"] and flaky.calls == 3
    missing = Flaky(failures=9, error=MlflowException("no such model",
                                                       error_code=RESOURCE_DOES_NOT_EXIST))
    assert steps._versions_of_run(cfg, missing, "oral-g", run_id) == []
    with pytest.raises(TrackingError, match="after 3 attempt"):
        steps._versions_of_run(cfg, Flaky(failures=9), "oral-g", run_id)
    with pytest.raises(ValueError, match="not a pipeline run id"):
        steps._versions_of_run(cfg, flaky, "oral-g", "x' or name != '")


# --------------------------------------------------------- 6. a snapshot rewritten while read
def _swap_in(source: Path, target: Path) -> None:
    """Replace snapshot folder ``target`` by a copy of ``source`` the way writers do (rename)."""
    from data_contracts import snapshots as snap

    tmp = target.parent / f".tmp-swap-{time.monotonic_ns()}"
    shutil.copytree(source, tmp)
    snap.publish_folder(tmp, target)


def test_snapshot_rewritten_while_read_gives_one_version(tmp_path, monkeypatch):
    """Case 6. The folder is replaced between reading nodes.parquet and edges.parquet: the
    reader notices and reads again, so the tables and the content hash are one version (the
    new one); a snapshot that keeps changing is refused clearly."""
    from data_contracts import snapshots as snap

    # two versions of one date: the first and second simulated nights of a base graph
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    static = make_static_graph(num_nodes=200, num_classes=3, num_features=8, seed=3, name="g")
    old, new = simulate(static, 2, tmp_path / "versions", "g", start_date=D1, seed=0,
                        known_classes=[0, 1])
    target = tmp_path / "root" / "g" / f"snapshot={D1}"
    shutil.copytree(old, target)
    want = snap.read_snapshot_files(new)
    real, swaps = snap.read_bytes, []

    def racing(path):
        if path.name == snap.EDGES and not swaps:
            swaps.append(path)
            _swap_in(new, target)  # a writer publishes the new version right now
        return real(path)
    monkeypatch.setattr(snap, "read_bytes", racing)
    got = snap.read_snapshot_files(target)
    assert swaps
    assert got.content_hash == want.content_hash
    assert got.nodes.equals(want.nodes) and got.edges.equals(want.edges)

    versions = [old, new]

    def always(path):
        if path.name == snap.EDGES:
            versions.reverse()
            _swap_in(versions[0], target)
        return real(path)
    monkeypatch.setattr(snap, "read_bytes", always)
    with pytest.raises(snap.SnapshotError, match="changed while it was being read"):
        snap.read_snapshot_files(target)


def test_flow_uses_the_bytes_it_hashed(env, monkeypatch):
    """Case 6 (flow). The snapshot is replaced by another version while the flow ingests it: the
    content hash in DuckDB, in MLflow and in the validation report, and the node count the run
    trained on, are all those of one version."""
    from data_contracts import snapshots as snap

    graph = env.graph("rewritten")
    folder = env.root / graph / f"snapshot={D1}"
    other = env.root / graph / f"snapshot={D2}"  # another version, same graph
    want = snap.read_snapshot_files(other)
    real, swaps = snap.read_bytes, []

    def racing(path):
        if path.name == snap.EDGES and not swaps:
            swaps.append(path)
            _swap_in(other, folder)
        return real(path)
    monkeypatch.setattr(snap, "read_bytes", racing)
    out = env.night(graph, D1)
    assert swaps
    rows = env.rows(graph)
    [snapshot_row] = rows["snapshots"]
    assert snapshot_row["content_hash"] == want.content_hash
    [run_row] = rows["runs"]
    assert run_row["content_hash"] == want.content_hash
    assert run_row["num_nodes"] == snapshot_row["nodes"] == want.nodes.num_rows
    mv = env.client.get_model_version(f"oral-{graph}", str(out["model_version"]))
    assert env.client.get_run(mv.run_id).data.tags["content_hash"] == want.content_hash
    report = json.loads(next((env.state / "reports" / graph).glob("*.json")).read_text())
    assert report["content_hash"] == want.content_hash
    check_consistent(env)


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
    from flows.cli import main
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
    from flows.cli import main

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
    from tasks import steps

    graph = env.graph("bad-config")

    def read(*args, **kwargs):
        raise AssertionError("the snapshot was read before the configuration was checked")

    monkeypatch.setattr(steps, "read_snapshot", read)
    monkeypatch.setattr(steps, "pick_snapshot", read)
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
    from flows.cli import main
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


def _write_snapshot_files(folder: Path, nodes: pa.Table | bytes, edges: pa.Table | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in (("nodes.parquet", nodes), ("edges.parquet", edges)):
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            pq.write_table(content, folder / name)
    return folder


def _good_nodes(n: int = 40, width: int = 4) -> pa.Table:
    from data_contracts import snapshots as snap

    rng = np.random.default_rng(0)
    labels = [["a", "b"][i % 2] if i < 20 else None for i in range(n)]
    return snap.nodes_table(list(range(n)), rng.random((n, width)).astype(np.float32), labels)


def _good_edges(n: int = 40) -> pa.Table:
    return pa.table({"src": pa.array(np.arange(n - 1)), "dst": pa.array(np.arange(1, n))})


def test_feature_width_over_the_limit_is_rejected_before_training(env):
    """Case 8. Feature vectors wider than the contract's limit (65,536) stop the run at
    validation: no training, no run folder, nothing published."""
    from flows.nightly import nightly_discovery
    from tasks.steps import ContractFailed

    graph = "too-wide"
    _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(n=40, width=70_000),
                          _good_edges(40))
    with pytest.raises(ContractFailed) as err:
        nightly_discovery(graph, str(env.root), D1, CONFIG, str(env.state))
    assert "feature_width_limit" in Path(err.value.report_path).read_text()
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []


def test_float32_overflow_is_refused_before_training(env, capsys, caplog):
    """Issue 21.5. ``list<float64>`` features holding 1e300 (finite in float64, infinite once
    cast to the float32 training uses) break the contract: ``oral run`` exits 1 with one line and
    the report, which names the file, the rule and the example rows; nothing is trained or
    published."""
    from flows.cli import main

    graph = "float32-overflow"
    good = _good_nodes()
    rows = good.column("features").to_pylist()
    rows[7][2], rows[30][0] = 1e300, -1e39
    nodes = good.set_column(good.column_names.index("features"), "features",
                            pa.array(rows, pa.list_(pa.float64())))
    _write_snapshot_files(env.root / graph / f"snapshot={D1}", nodes, _good_edges())
    capsys.readouterr()
    code = main(["run", "--graph", graph, "--snapshots", str(env.root), "--date", D1,
                 "--state-dir", str(env.state), "--epochs", "10", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]  # Prefect logs too
    assert len(errors) == 1 and "broke its data contract" in errors[0], err
    # Prefect logs the failed run without a traceback (its console handler may write to an
    # earlier test's stream, so the records are checked, not this test's stderr)
    failed = [r for r in caplog.records if r.name.startswith("prefect") and r.levelname == "ERROR"]
    assert failed and not [r for r in failed if r.exc_info], [r.getMessage() for r in failed]
    report_html = Path(errors[0].split("Report: ")[1].strip())
    doc = json.loads(report_html.with_suffix(".json").read_text())
    finding = next(f for f in doc["findings"] if f["rule"] == "features_float32_range")
    assert finding["file"] == "nodes.parquet" and finding["count"] == 2
    assert [(e["row"], e["value"]) for e in finding["examples"]] == [(7, 1e300), (30, -1e39)]
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lying_edges(claim: int = 100_000_000) -> bytes:
    """An edges file of 1.1 million (0, 0) rows in one row group, whose footer then claims
    ``claim`` rows: the row counts (Thrift compact varints) are patched in place."""
    import io
    import struct

    rows = 1_100_000
    table = pa.table({"src": pa.array(np.zeros(rows, np.int64)),
                      "dst": pa.array(np.zeros(rows, np.int64))})
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=rows)
    data = bytearray(buf.getvalue())
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - footer_len
    old, new = _varint(rows * 2), _varint(claim * 2)  # zigzag encoding of a positive i64
    assert len(old) == len(new)
    data[start:-8] = bytes(data[start:-8]).replace(old, new)
    assert pq.read_metadata(pa.BufferReader(bytes(data))).row_group(0).num_rows == claim
    return bytes(data)


def test_parquet_row_count_lie_is_refused_before_allocation(env, tmp_path, monkeypatch):
    """Case 8. A footer claiming 100 million edges (1.1 million in 9 KB): Arrow would reserve
    gigabytes from that claim (2.6 GB measured before the fix); the reader refuses the file from
    its footer, in a process whose Arrow memory stays small, the contract reports it, and the
    flow stops as for any broken contract (issue 21.8: the report names the file, the rule
    ``readable_parquet`` and the claim) and publishes nothing."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot
    from flows.nightly import nightly_discovery
    from tasks import prefect_tasks as pt
    from tasks.steps import ContractFailed

    monkeypatch.setattr(pt.ingest, "retry_delay_seconds", 0)
    graph = "liar"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(),
                                   lying_edges())
    code = ("import sys, pyarrow as pa\n"
            "from data_contracts.snapshots import read_snapshot_files, SnapshotError\n"
            "try:\n    read_snapshot_files(sys.argv[1])\nexcept SnapshotError as e:\n"
            "    print('REFUSED', e)\n"
            "print('PEAK', pa.default_memory_pool().max_memory())\n")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert "REFUSED" in out.stdout and "claims 100000000 rows" in out.stdout, out.stdout + out.stderr
    peak = int(re.search(r"PEAK (\d+)", out.stdout).group(1))
    assert peak < 64 * 2**20, f"Arrow reserved {peak / 2**20:.0f} MiB"
    report = validate_snapshot(folder)
    assert not report.passed and any("claims 100000000 rows" in f.message for f in report.findings)
    with pytest.raises(ContractFailed, match="edges.parquet readable_parquet") as err:
        nightly_discovery(graph, str(env.root), D1, CONFIG, str(env.state))
    assert "claims 100000000 rows" in Path(err.value.report_path).read_text()
    assert env.rows(graph)["runs"] == []

    # an honest file as extreme (1.1 million rows in 9 KB) still reads
    honest = tmp_path / "honest.parquet"
    pq.write_table(pa.table({"src": pa.array(np.zeros(1_100_000, np.int64))}), honest)
    assert snap.parse_parquet(honest, honest.read_bytes()).num_rows == 1_100_000


def _unsupported_codec(table: pa.Table) -> bytes:
    """``table`` as Parquet whose ``node_id`` column chunk names the LZO codec (3), which the
    format defines and Arrow's C++ reader does not implement: the Thrift compact field ``codec``
    (field 4, i32, zigzag varint) of that column's metadata is patched from SNAPPY (1)."""
    import io
    import struct

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    data = bytearray(buf.getvalue())
    start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    old = b"\x07node_id\x15\x02"  # path_in_schema ["node_id"], then codec = 1 (zigzag 2)
    assert bytes(data[start:-8]).count(old) == 1
    data[start:-8] = bytes(data[start:-8]).replace(old, b"\x07node_id\x15\x06")
    return bytes(data)


UNREADABLE = {
    # kind: (how nodes.parquet is broken, the rule that names it)
    "not-parquet": ("text", "readable_parquet"),
    "empty": ("empty", "readable_parquet"),
    "folder": ("folder", "file_present"),
    "unsupported-codec": ("codec", "readable_parquet"),
    "symlink-to-text": ("symlink", "readable_parquet"),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_unreadable_files_break_the_contract_with_a_report(env, capsys, monkeypatch, kind,
                                                           tmp_path):
    """Issue 21.8. A ``nodes.parquet`` that is not Parquet, empty, a folder, compressed with a
    codec Arrow lacks, or a symlink to a text file breaks the data contract like any other bad
    data: ``oral run`` exits 1 with one ``error:`` line naming the file, the rule and the report,
    which is kept under ``state/reports/<graph>/``; ``oral validate`` prints the finding (file
    and rule) and exits 1; nothing is trained or published. Before: exit 2 with a one-line
    ``SnapshotError``, no rule, no report."""
    from flows.cli import main
    from tasks import prefect_tasks as pt

    monkeypatch.setattr(pt.ingest, "retry_delay_seconds", 0)
    how, rule = UNREADABLE[kind]
    graph = f"unreadable-{kind}"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(),
                                   _good_edges())
    nodes = folder / "nodes.parquet"
    if how == "codec":
        nodes.write_bytes(_unsupported_codec(_good_nodes()))
    else:
        nodes.unlink()
        if how == "text":
            nodes.write_text("node_id,features,label\n0,\"[1, 2]\",a\n")
        elif how == "empty":
            nodes.write_bytes(b"")
        elif how == "folder":
            nodes.mkdir()
        elif how == "symlink":
            target = tmp_path / f"{graph}.txt"  # outside the module's folder (case 8 checks it)
            target.write_text("not a parquet file\n" * 20)
            nodes.symlink_to(target)
    capsys.readouterr()
    code = main(["run", "--graph", graph, "--snapshots", str(env.root), "--date", D1,
                 "--state-dir", str(env.state), "--epochs", "10", "--device", "cpu"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1, err
    assert len(errors) == 1 and "broke its data contract" in errors[0], err
    assert f"nodes.parquet {rule}" in errors[0], errors[0]
    report_html = Path(errors[0].split("Report: ")[1].strip())
    assert report_html.parent == env.state / "reports" / graph and report_html.exists()
    doc = json.loads(report_html.with_suffix(".json").read_text())
    finding = next(f for f in doc["findings"] if f["rule"] == rule)
    assert finding["file"] == "nodes.parquet" and finding["severity"] == "error"
    assert str(nodes) in finding["message"], finding
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []

    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"ERROR nodes.parquet rule {rule}" in out and str(nodes) in out, out


def encrypted_nodes(plaintext_footer: bool) -> bytes:
    """``_good_nodes()`` written with Parquet modular encryption (a toy in-memory KMS): the
    ``features`` column encrypted with its own key; the footer in plain text (magic ``PAR1``,
    column chunks carrying crypto metadata) or encrypted (magic ``PARE``)."""
    import base64
    import io

    import pyarrow.parquet.encryption as pe

    class ToyKms(pe.KmsClient):
        def __init__(self, config):
            pe.KmsClient.__init__(self)

        def wrap_key(self, key_bytes, master_key_identifier):
            return base64.b64encode(key_bytes)

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return base64.b64decode(wrapped_key)

    config = pe.EncryptionConfiguration(footer_key="footer", column_keys={"col": ["features"]},
                                        plaintext_footer=plaintext_footer, double_wrapping=False)
    props = pe.CryptoFactory(ToyKms).file_encryption_properties(pe.KmsConnectionConfig(), config)
    buf = io.BytesIO()
    pq.write_table(_good_nodes(), buf, encryption_properties=props)
    data = buf.getvalue()
    assert data[-4:] == (b"PAR1" if plaintext_footer else b"PARE")
    return data


def _has_parquet_encryption() -> bool:
    try:
        import pyarrow.parquet.encryption  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_parquet_encryption(), reason="pyarrow built without encryption")
@pytest.mark.parametrize("footer", ["plaintext-footer", "encrypted-footer"])
def test_encrypted_parquet_is_refused_without_aborting(env, footer):
    """Issue 21.4. A ``nodes.parquet`` with encrypted columns and a plain-text footer made Arrow
    abort the process (SIGABRT: ``Cannot decrypt ColumnMetadata``, thrown where nothing catches
    it) when the footer check read the column sizes: a user's file killed the worker. It is now
    recognised from the footer's own bytes before Arrow reads column metadata, and is a
    ``readable_parquet`` finding like any unreadable file: ``oral validate`` and ``oral run``
    (each in a child process, so the old code's abort cannot take pytest down) exit 1, the run
    with its report kept, and nothing is published. An encrypted footer (``PARE``) is named
    the same way."""
    graph = f"encrypted-{footer}"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}",
                                   encrypted_nodes(footer == "plaintext-footer"), _good_edges())
    cli = "import sys; from flows.cli import main; sys.exit(main(sys.argv[1:]))"
    child_env = env.child_env()

    out = subprocess.run([sys.executable, "-c", cli, "validate", str(folder)], capture_output=True,
                         text=True, cwd=ROOT, env=child_env, timeout=300)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "ERROR nodes.parquet rule readable_parquet" in out.stdout, out.stdout
    assert "encrypted" in out.stdout, out.stdout

    out = subprocess.run([sys.executable, "-c", cli, "run", "--graph", graph, "--snapshots",
                          str(env.root), "--date", D1, "--state-dir", str(env.state),
                          "--epochs", "10", "--device", "cpu"], capture_output=True, text=True,
                         cwd=ROOT, env=child_env, timeout=300)
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert out.returncode == 1, (out.returncode, out.stderr[-3000:])
    assert len(errors) == 1 and "nodes.parquet readable_parquet" in errors[0], out.stderr
    report = json.loads(Path(errors[0].split("Report: ")[1].strip()).with_suffix(".json")
                        .read_text())
    finding = next(f for f in report["findings"] if f["rule"] == "readable_parquet")
    assert finding["file"] == "nodes.parquet" and "encrypted" in finding["message"]
    assert env.rows(graph)["runs"] == []


def _nested(depth: int) -> pa.Array:
    typ = pa.float32()
    for _ in range(depth):
        typ = pa.list_(typ)
    return pa.array([None] * 40, typ)


def _malicious_nodes(kind: str) -> pa.Table:
    good = _good_nodes()
    if kind == "struct-features":
        feats = pa.array([{"a": 1.0, "b": [1.0]}] * good.num_rows)
        return good.set_column(good.column_names.index("features"), "features", feats)
    if kind == "thousands-of-columns":
        extra = {f"c{i}": pa.array(np.zeros(good.num_rows, np.int8)) for i in range(5000)}
        return pa.table({**{c: good.column(c) for c in good.column_names}, **extra})
    if kind == "node-id-twice":
        return pa.Table.from_arrays([good.column("node_id"), good.column("node_id"),
                                     good.column("features"), good.column("label")],
                                    names=["node_id", "node_id", "features", "label"])
    if kind == "deep-nesting":
        return good.append_column("deep", _nested(12))
    if kind == "metadata-lies":  # key-value claims the pipeline must ignore
        return good.replace_schema_metadata({b"num_rows": b"100000000",
                                             b"oral.num_edges": b"100000000",
                                             b"pandas": b'{"index_columns": ["../../x"]}'})
    raise ValueError(kind)


@pytest.mark.parametrize("kind,finding", [
    ("struct-features", "column_types"),
    ("thousands-of-columns", "5003 columns"),
    ("node-id-twice", "'node_id' occur more than once"),
    ("deep-nesting", "nested"),
])
def test_malicious_schemas_are_rejected_clearly(tmp_path, kind, finding):
    """Case 8. Nested struct features, thousands of columns, ``node_id`` twice, absurd nesting:
    the contract fails with a finding that says what is wrong (nothing is written into the
    snapshot folder, nothing else is read)."""
    from data_contracts import validate_snapshot

    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", _malicious_nodes(kind),
                                   _good_edges())
    before = sorted(p.name for p in folder.iterdir())
    report = validate_snapshot(folder)
    assert not report.passed
    text = " ".join(f"{f.rule} {f.message}" for f in report.errors)
    assert finding in text, text
    assert sorted(p.name for p in folder.iterdir()) == before


def test_labels_hidden_or_colliding_after_stripping_are_warned(tmp_path, capsys):
    """Issue 21.12. Labels ``a`` and ``a `` (two known classes that read as one), a label with a
    zero-width space and one made only of a zero-width space: the contract passes with two
    warnings that name the rows (labels spelled visibly) and the colliding labels; ``oral
    validate`` exits 0 and prints them."""
    from data_contracts import validate_snapshot
    from flows.cli import main

    good = _good_nodes()
    labels = good.column("label").to_pylist()
    for row in range(20):
        labels[row] = ["a", "a ", "b\u200b", "\u200b"][row % 4]
    nodes = good.set_column(good.column_names.index("label"), "label", pa.array(labels))
    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", nodes, _good_edges())
    report = validate_snapshot(folder)
    assert report.passed and report.counts["classes"] == 4, report.summary()
    found = {f.rule: f for f in report.warnings}
    hidden = found["label_hidden_characters"]
    assert hidden.count == 15 and [e["row"] for e in hidden.examples] == [1, 2, 3, 5, 6]
    assert [e["visible"] for e in hidden.examples[:3]] == ["'a '", "'b\\u200b'", "'\\u200b'"]
    collide = found["labels_distinct_after_stripping"]
    assert collide.count == 10 and collide.examples[0]["labels"] == ["'a'", "'a '"]
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "WARNING nodes.parquet rule label_hidden_characters" in out
    assert "WARNING nodes.parquet rule labels_distinct_after_stripping" in out


def test_metadata_claims_are_not_trusted(tmp_path):
    """Case 8. Key-value metadata claiming 100 million rows (and pandas metadata pointing
    elsewhere) change nothing: counts come from the data."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot

    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}",
                                   _malicious_nodes("metadata-lies"), _good_edges())
    report = validate_snapshot(folder)
    assert report.passed, report.summary()
    assert report.counts["nodes"] == 40 and report.counts["edges"] == 39
    assert snap.load_snapshot(folder).num_nodes == 40


SQL_START = re.compile(r"^\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|COPY|"
                       r"ATTACH|PRAGMA|INSTALL|LOAD|EXPORT|IMPORT)\b")
FILTER = re.compile(r"\b(name|run_id|tags\.\w+|params\.\w+|attributes\.\w+)\s*(=|LIKE|ILIKE)\s*'")
# interpolations allowed inside SQL or MLflow filter text, and why they are safe
ALLOWED = {
    "table": "a table name from a fixed tuple in tasks/warehouse/publish.py",
    "_STATUS_LIST": "a module constant (lineage statuses)",
    "', '.join(names)": "column names: the keys of rows built from RUN_COLUMNS/SNAPSHOT_COLUMNS",
    "', '.join(('?' for _ in names))": "placeholders",
    "', '.join(CLASS_SCHEMA.names)": "a schema constant",
    "', '.join(LINEAGE_SCHEMA.names)": "a schema constant",
    "name": "an MLflow model name: oral-<graph>, the graph name checked by check_graph_name",
    "oral_run_id": "a pipeline run id, checked to be hexadecimal before use",
    "run_id": "an MLflow run id returned by MLflow itself",
    "leftover": "an _alembic_tmp_* table name read from the MLflow store's sqlite_master, quoted",
    "day_runs": "constant SQL text (tasks/report.py, the latest run of each night) with a ? parameter",
    "PROMOTED_TAG": "a module constant, the registry tag name",
}


def test_no_sql_is_built_from_interpolated_values():
    """Case 8. Values reach DuckDB and MLflow as bound parameters: SQL text (and MLflow filter
    text) in tasks/, flows/ and data_contracts/ only interpolates fixed identifiers, and is
    never assembled with ``%`` or ``.format``."""
    problems = []
    for folder in ("tasks", "flows", "data_contracts"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(file.read_text(), str(file))
            for node in ast.walk(tree):
                where = f"{file.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
                if isinstance(node, ast.JoinedStr):
                    text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                    if SQL_START.search(text) or FILTER.search(text):
                        for v in node.values:
                            if isinstance(v, ast.FormattedValue) and ast.unparse(v.value) not in ALLOWED:
                                problems.append(f"{where}: f-string SQL interpolates "
                                                f"{ast.unparse(v.value)!r}")
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and \
                        isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
                        and SQL_START.search(node.left.value):
                    problems.append(f"{where}: SQL built with %")
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                        and isinstance(node.func.value.value, str) and \
                        SQL_START.search(node.func.value.value):
                    problems.append(f"{where}: SQL built with .format")
    assert problems == []


def test_nothing_was_written_outside_the_state_folder(env, concurrent):
    """Case 8. Everything the module's runs wrote lies in the state folder (or is a snapshot
    this module wrote into the snapshot root); no hostile name escaped it."""
    outside = [p for p in env.base.rglob("*") if p.is_file()
               and env.state not in p.parents and env.root not in p.parents]
    assert outside == []
    assert not any((env.base / n).exists() for n in ("evil", "etc", "b"))
    for p in env.root.rglob("*"):
        assert p.is_dir() or p.name in ("nodes.parquet", "edges.parquet", "truth.parquet"), p


# -------------------------------------------------------------------------- 9. no unpickling
class _Boom:
    """Unpickling this creates a marker file: proof that something unpickled it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
def test_model_files_never_unpickle_objects(tmp_path):
    """Case 9. ``ORALModel.load`` reads tensors and plain values only: a model file carrying a
    pickled object (in a valid-looking payload, or as a bare pickle) is refused and the
    object's code never runs."""
    import torch

    from oral_core.inference import ORALModel

    marker = tmp_path / "UNPICKLED"
    payload = tmp_path / "payload.pt"
    torch.save({"format": "oral-model/1", "config": {}, "trojan": _Boom(marker)}, payload)
    bare = tmp_path / "bare.pt"
    bare.write_bytes(pickle.dumps(_Boom(marker)))
    for path in (payload, bare):
        with pytest.raises(pickle.UnpicklingError):
            ORALModel.load(path)
    assert not marker.exists()


def test_snapshot_reading_never_unpickles(tmp_path):
    """Case 9. A snapshot cannot make the reader unpickle: an Arrow extension type whose
    metadata is a pickle (the pyarrow ``PyExtensionType`` route), a pickle file next to the
    Parquet files, and pandas metadata are all ignored."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot

    marker = tmp_path / "UNPICKLED"
    nodes = _good_nodes()
    field = pa.field("trojan", pa.binary(), metadata={
        b"ARROW:extension:name": b"arrow.py_extension_type",
        b"ARROW:extension:metadata": pickle.dumps(_Boom(marker))})
    nodes = nodes.append_column(field, pa.array([b"x"] * nodes.num_rows))
    nodes = nodes.replace_schema_metadata({b"pandas": pickle.dumps(_Boom(marker))})
    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", nodes, _good_edges())
    plain = snap.read_snapshot_files(folder).content_hash
    for name in ("nodes.pkl", "snapshot.pkl", "model.pt"):
        (folder / name).write_bytes(pickle.dumps(_Boom(marker)))
    files = snap.read_snapshot_files(folder)
    assert files.content_hash == plain  # the pickles were not even read
    assert validate_snapshot(files).passed
    loaded = snap.snapshot_from_files(files)
    assert loaded.extra.column("trojan").type == pa.binary()
    assert not marker.exists()


def test_logged_models_hold_no_pickle(env, concurrent):
    """Case 9. The registered models load through MLflow's pyfunc from code and a weights-only
    file: no pickle anywhere in the artifact store."""
    pickles = [p for p in (env.state / "mlartifacts").rglob("*")
               if p.suffix in (".pkl", ".pickle", ".cloudpickle")]
    assert pickles == []
    mlmodels = list((env.state / "mlartifacts").rglob("MLmodel"))
    assert mlmodels and all("python_model: oral_pyfunc.py" in p.read_text() or
                            "oral_pyfunc.py" in p.read_text() for p in mlmodels)
