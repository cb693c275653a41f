"""Reliability point 1: a publisher killed (SIGKILL) mid-publish, a full disk in DuckDB, a failed
publish: whole run or none, the champion where it was.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import ROOT, HELPER, helpers, D1, D2, TABLES, check_consistent


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
        assert proc.wait(timeout=120) == -signal.SIGKILL
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
