"""benchmarks.night_stages: a night's steps and their seconds from its Prefect task runs."""
from __future__ import annotations

import sqlite3

import pytest


def _prefect_db(state):
    """A Prefect-shaped database: two flow runs, the latest with three task runs."""
    (state / "prefect").mkdir(parents=True)
    con = sqlite3.connect(state / "prefect" / "prefect.db")
    con.execute("CREATE TABLE flow_run (id TEXT, name TEXT, start_time TEXT, end_time TEXT)")
    con.execute("CREATE TABLE task_run (flow_run_id TEXT, name TEXT, start_time TEXT, "
                "end_time TEXT, state_type TEXT)")
    con.executemany("INSERT INTO flow_run VALUES (?, ?, ?, ?)", [
        ("old", "g-old", "2026-12-01 10:00:00.000000", "2026-12-01 10:00:05.000000"),
        ("new", "g-next", "2026-12-02 10:00:00.000000", "2026-12-02 10:00:10.000000")])
    con.executemany("INSERT INTO task_run VALUES (?, ?, ?, ?, ?)", [
        ("new", "train-263", "2026-12-02 10:00:02.000000", "2026-12-02 10:00:08.000000",
         "COMPLETED"),
        ("new", "ingest-bc4", "2026-12-02 10:00:00.500000", "2026-12-02 10:00:01.500000",
         "COMPLETED"),
        ("new", "publish-018", "2026-12-02 10:00:09.000000", None, "CRASHED"),
        ("old", "train-111", "2026-12-01 10:00:00.000000", "2026-12-01 10:00:04.000000",
         "COMPLETED")])
    con.commit()
    con.close()


def test_the_latest_flow_runs_steps_in_order_with_their_seconds(tmp_path, capsys):
    from benchmarks.night_stages import main, stage_rows

    _prefect_db(tmp_path)
    name, seconds, rows = stage_rows(tmp_path)
    assert name == "g-next" and seconds == 10.0
    assert [(r["step"], r["seconds"], r["state"]) for r in rows] == [
        ("ingest", 1.0, "COMPLETED"), ("train", 6.0, "COMPLETED"), ("publish", None, "CRASHED")]
    out = tmp_path / "stages.md"
    assert main([str(tmp_path), "--wall", "14", "--label", "a night", "--out", str(out)]) == 0
    text = out.read_text()
    assert "### a night" in text and "| train | 6.0 | 60.0% | COMPLETED |" in text
    assert "| between steps (orchestration) | 3.0 | 30.0% | |" in text
    assert "| outside the flow (start, imports, Prefect's server) | 4.0 | | |" in text


def test_a_state_without_a_prefect_database_is_one_error_line(tmp_path):
    from benchmarks.night_stages import main

    with pytest.raises(SystemExit) as err:
        main([str(tmp_path)])
    assert str(err.value).startswith("error: ") and "no Prefect database" in str(err.value)
    assert "\n" not in str(err.value)
