"""The DuckDB warehouse: schema, one-transaction idempotent publishing, views, read-only SQL,
the single-writer lock, and hostile strings stored verbatim."""
from __future__ import annotations

import datetime as dt
import logging
import subprocess
import sys
import threading
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from tasks.warehouse.lineage import LineageConfig, track_lineage
from tasks.warehouse import (SCHEMA_VERSION, QueryRefused, Warehouse, WarehouseError,
                             WarehouseLocked, make_run_id)

D1, D2 = dt.date(2026, 4, 1), dt.date(2026, 4, 2)
TABLES = ["snapshots", "runs", "classes", "node_assignments", "class_lineage"]
ORDER = {"snapshots": "graph, snapshot_date, content_hash", "runs": "run_id",
         "classes": "run_id, class_key", "node_assignments": "run_id, node_id",
         "class_lineage": "run_id, lineage_id"}


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    w = Warehouse(tmp_path / "wh" / "oral.duckdb", lock_timeout=2.0, threads=1)
    w.ensure_schema()
    return w


def ids(lo: int, hi: int, prefix: str = "n") -> list[str]:
    return [f"{prefix}{i}" for i in range(lo, hi)]


def night(wh: Warehouse, graph: str, date: dt.date, members: dict, names: dict,
          content_hash: str | None = None, config_hash: str = "cfg1",
          lineage_config: LineageConfig | None = None) -> dict:
    """Everything one nightly run publishes, with lineage against the warehouse's previous run
    (at the default lineage rules, confirmation included, unless ``lineage_config``)."""
    content_hash = content_hash or f"hash-{date.isoformat()}"
    prev = wh.previous_run(graph, date)
    lineage = track_lineage(prev, members, graph=graph, snapshot_date=date, current_names=names,
                            max_novel_index=wh.max_novel_index(graph, before_date=date),
                            config=lineage_config or LineageConfig())
    node_ids, keys, conf = [], [], []
    for key, nodes in members.items():
        node_ids += nodes
        keys += [key] * len(nodes)
        conf += list(np.linspace(0.5, 0.99, len(nodes)))
    novel = [names.get(k) is None for k in keys]
    assignments = pa.table({"node_id": node_ids, "class_key": keys, "is_novel": novel,
                            "confidence": conf})
    classes = [{"class_key": k, "lineage_id": lineage.lineage_of[k], "class_name": names.get(k),
                "is_novel": names.get(k) is None, "size": len(v), "mean_confidence": 0.75,
                "top_features": [{"index": 3, "name": "f3", "lift": 2.5, "class_mean": 0.4}],
                "exemplars": v[:3], "purity": np.nan, "majority_true_label": None}
               for k, v in members.items()]
    run = {"graph": graph, "snapshot_date": date, "content_hash": content_hash,
           "config_hash": config_hash, "code_version": "abc123", "device": "cpu", "epochs": 50,
           "val_accuracy": 0.9, "num_classes": len(members),
           "num_novel": sum(n is None for n in (names.get(k) for k in members)),
           "num_nodes": len(node_ids), "train_seconds": 1.5,
           "published_at": dt.datetime(2026, 4, 3, 1, 0), "scores": {"all": 0.8, "known": 0.9, "novel": 0.7}}
    snapshot = {"path": f"/data/{graph}/snapshot={date}", "nodes": len(node_ids), "edges": 1000,
                "labelled_nodes": 40, "known_classes": 2, "validation_passed": True,
                "validated_at": dt.datetime(2026, 4, 3, 0, 30)}
    return {"run": run, "snapshot": snapshot, "assignments": assignments, "classes": classes,
            "lineage_rows": lineage.rows}


def first_night() -> tuple[dict, dict]:
    members = {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 250), 3: ids(250, 300)}
    return members, {0: "A", 1: "B"}


def second_night() -> tuple[dict, dict]:
    # same classes (novel keys reordered), plus a new novel class of 40 new nodes
    members = {0: ids(0, 100), 1: ids(100, 180), 2: ids(250, 300), 3: ids(180, 250),
               4: ids(300, 340)}
    return members, {0: "A", 1: "B"}


def dump(wh: Warehouse) -> dict:
    con = duckdb.connect(wh.path, read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY {ORDER[t]}").fetchall() for t in TABLES}
    finally:
        con.close()


def counts(wh: Warehouse, run_id: str | None = None) -> dict:
    con = duckdb.connect(wh.path, read_only=True)
    try:
        if run_id is None:
            return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
        return {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchall()[0][0]
                for t in TABLES if t != "snapshots"}
    finally:
        con.close()


def test_schema_is_created_once_with_version(wh: Warehouse) -> None:
    assert wh.ensure_schema() == SCHEMA_VERSION  # second call: nothing changes
    names = set(wh.query("SELECT table_name FROM information_schema.tables")["table_name"].to_pylist())
    assert set(TABLES) | {"meta", "latest_runs", "latest_classes", "emerged_classes",
                          "class_timeline"} <= names
    assert wh.query("SELECT value FROM meta WHERE key = ?", ["schema_version"]).to_pylist() == \
        [{"value": str(SCHEMA_VERSION)}]
    assert wh.previous_run("g", D1) is None and wh.last_processed_date("g") is None
    assert wh.max_novel_index("g") == 0 and wh.latest_classes().num_rows == 0


def test_queries_on_a_missing_warehouse_are_empty(tmp_path) -> None:
    w = Warehouse(tmp_path / "none.duckdb")
    assert w.previous_run("g", D1) is None and not w.run_exists("x")
    assert w.max_novel_index("g") == 0 and w.last_processed_date("g") is None
    assert not (tmp_path / "none.duckdb").exists()


def test_publish_writes_every_table_and_rerun_is_identical(wh: Warehouse) -> None:
    members, names = first_night()
    parts = night(wh, "g", D1, members, names)
    run_id = wh.publish_run(**parts)
    assert run_id == make_run_id("g", D1, "hash-2026-04-01", "cfg1") and wh.run_exists(run_id)
    assert counts(wh) == {"snapshots": 1, "runs": 1, "classes": 4, "node_assignments": 300,
                          "class_lineage": 4}
    before = dump(wh)
    accs = wh.query("SELECT acc_all, acc_known, acc_novel FROM runs WHERE run_id = ?",
                    [run_id]).to_pylist()
    assert accs == [{"acc_all": 0.8, "acc_known": 0.9, "acc_novel": 0.7}]  # from the scores
    # every node carries its class's lineage id and name
    bad = wh.query("SELECT count(*) AS n FROM node_assignments a JOIN classes c USING (run_id, class_key) "
                   "WHERE a.lineage_id IS DISTINCT FROM c.lineage_id "
                   "OR a.class_name IS DISTINCT FROM c.class_name")
    assert bad["n"].to_pylist() == [0]
    # the same run again: the same rows, no duplicates
    assert wh.publish_run(**night(wh, "g", D1, members, names)) == run_id
    assert dump(wh) == before
    # a backfill of the first night after a later one: the same lineage ids again
    wh.publish_run(**night(wh, "g", D2, *second_night()))
    assert wh.publish_run(**night(wh, "g", D1, members, names)) == run_id
    after = dump(wh)
    assert [r for r in after["class_lineage"] if r[2] == run_id] == before["class_lineage"]
    assert [r for r in after["node_assignments"] if r[0] == run_id] == before["node_assignments"]


def test_failure_mid_publish_rolls_back(wh: Warehouse, monkeypatch) -> None:
    members, names = first_night()
    run1 = wh.publish_run(**night(wh, "g", D1, members, names))
    before = dump(wh)
    members2, names2 = second_night()
    parts = night(wh, "g", D2, members2, names2)
    run2 = make_run_id("g", D2, parts["run"]["content_hash"], "cfg1")

    calls = []

    def boom(con, run_row):
        calls.append(con.execute("SELECT count(*) FROM node_assignments WHERE run_id = ?",
                                 [run_row["run_id"]]).fetchall()[0][0])
        raise RuntimeError("injected failure after the assignments insert")

    monkeypatch.setattr(Warehouse, "_insert_lineage", staticmethod(boom))
    with pytest.raises(RuntimeError, match="injected"):
        wh.publish_run(**parts)
    assert calls == [340]  # the assignments were in when it failed
    assert not wh.run_exists(run2) and counts(wh, run2) == {t: 0 for t in TABLES if t != "snapshots"}
    assert dump(wh) == before  # the first run (and its snapshot row) untouched
    # a failing rerun of the first run keeps its earlier publication (the delete rolls back too)
    with pytest.raises(RuntimeError, match="injected"):
        wh.publish_run(**night(wh, "g", D1, members, names))
    assert dump(wh) == before and wh.run_exists(run1)
    monkeypatch.undo()

    # a classes table with a column the warehouse does not know: refused, nothing written
    bad = night(wh, "g", D2, members2, names2)
    bad["classes"] = pa.Table.from_pylist(bad["classes"][:1]).append_column("oops", pa.array([1]))
    with pytest.raises(WarehouseError, match="oops"):
        wh.publish_run(**bad)
    # a class key assigned to nodes but missing from classes: refused
    bad = night(wh, "g", D2, members2, names2)
    bad["classes"] = bad["classes"][:-1]
    bad["lineage_rows"] = [r for r in bad["lineage_rows"] if r.class_key != 4]
    with pytest.raises(WarehouseError, match="no classes row"):
        wh.publish_run(**bad)
    # a database error inside the transaction (duplicate lineage rows break the primary key)
    bad = night(wh, "g", D2, members2, names2)
    bad["lineage_rows"] = bad["lineage_rows"] + bad["lineage_rows"][:1]
    with pytest.raises(duckdb.ConstraintException):
        wh.publish_run(**bad)
    assert dump(wh) == before


def test_views_over_two_nights(wh: Warehouse) -> None:
    m1, n1 = first_night()
    wh.publish_run(**night(wh, "g", D1, m1, n1))
    prev = wh.previous_run("g", D2)
    assert prev.snapshot_date == D1 and prev.members[2] == sorted(ids(180, 250))
    assert prev.lineage == {0: "known:A", 1: "known:B", 2: "g:novel:1", 3: "g:novel:2"}
    assert prev.names == {0: "A", 1: "B", 2: None, 3: None}
    assert prev.first_seen[2] == D1
    m2, n2 = second_night()
    run2 = wh.publish_run(**night(wh, "g", D2, m2, n2))
    # another graph, to check the views keep graphs apart
    wh.publish_run(**night(wh, "h", D1, {0: ids(0, 30, "h"), 1: ids(30, 50, "h")}, {0: "A"}))

    assert wh.last_processed_date("g") == D2 and wh.max_novel_index("g") == 3
    assert wh.max_novel_index("g", before_date=D2) == 2
    assert wh.max_novel_index("g", exclude_run_id=run2) == 2

    latest = wh.latest_classes("g").to_pylist()
    assert {r["run_id"] for r in latest} == {run2} and len(latest) == 5
    status = {r["lineage_id"]: (r["class_key"], r["status"]) for r in latest}
    # the first night's novel classes were candidates; going on tonight confirms them, and
    # tonight's new class is a candidate
    assert status == {"known:A": (0, "persisting"), "known:B": (1, "persisting"),
                      "g:novel:1": (3, "emerged"), "g:novel:2": (2, "emerged"),
                      "g:novel:3": (4, "candidate")}
    assert {r["graph"] for r in wh.latest_classes().to_pylist()} == {"g", "h"}

    emerged = wh.query("SELECT graph, lineage_id, size, snapshot_date FROM emerged_classes "
                       "ORDER BY graph, lineage_id").to_pylist()
    assert emerged == [{"graph": "g", "lineage_id": "g:novel:1", "size": 70, "snapshot_date": D2},
                       {"graph": "g", "lineage_id": "g:novel:2", "size": 50, "snapshot_date": D2}]
    candidates = wh.query("SELECT graph, lineage_id FROM candidate_classes "
                          "ORDER BY graph, lineage_id").to_pylist()
    assert candidates == [{"graph": "g", "lineage_id": "g:novel:3"},
                          {"graph": "h", "lineage_id": "h:novel:1"}]

    timeline = wh.query("SELECT lineage_id, snapshot_date, size, status FROM class_timeline "
                        "WHERE graph = ? ORDER BY lineage_id, snapshot_date", ["g"]).to_pylist()
    assert [(r["lineage_id"], r["snapshot_date"], r["status"]) for r in timeline] == [
        ("g:novel:1", D1, "candidate"), ("g:novel:1", D2, "emerged"),
        ("g:novel:2", D1, "candidate"), ("g:novel:2", D2, "emerged"),
        ("g:novel:3", D2, "candidate"),
        ("known:A", D1, "emerged"), ("known:A", D2, "persisting"),
        ("known:B", D1, "emerged"), ("known:B", D2, "persisting")]


def test_emerged_classes_is_what_is_new_tonight_whatever_its_status(wh: Warehouse) -> None:
    """Issue 48.6: a novel class new tonight whose lineage status is ``merged`` (a new class
    formed from parts of others, here grown to 150 nodes) or ``split`` was left out of
    ``emerged_classes`` (status = 'emerged' only), so "what is new" came back empty. The view is
    the latest run's novel classes whose lineage id was first seen on that run's date (without
    confirmation, ``LineageConfig.confirm_novel`` off: with it, new ids are candidates)."""
    import dataclasses

    plain = LineageConfig(confirm_novel=False)
    m1, n1 = first_night()
    wh.publish_run(**night(wh, "g", D1, m1, n1, lineage_config=plain))
    members = {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 250), 3: ids(250, 300),
               4: ids(300, 450), 5: ids(450, 480)}
    tonight = night(wh, "g", D2, members, {0: "A", 1: "B"}, lineage_config=plain)
    by_id = {r.lineage_id: r for r in tonight["lineage_rows"]}
    assert by_id["g:novel:3"].status == by_id["g:novel:4"].status == "emerged"
    assert by_id["g:novel:3"].first_seen == D2 and by_id["g:novel:1"].first_seen == D1
    tonight["lineage_rows"] = [
        dataclasses.replace(r, status="merged", parents=["g:novel:1"])
        if r.lineage_id == "g:novel:3" else
        dataclasses.replace(r, status="split", parents=["g:novel:2"])
        if r.lineage_id == "g:novel:4" else
        dataclasses.replace(r, status="merged", parents=["g:novel:2"])  # last night's class
        if r.lineage_id == "g:novel:1" else r for r in tonight["lineage_rows"]]
    wh.publish_run(**tonight)
    new = wh.query("SELECT lineage_id, status, size, snapshot_date FROM emerged_classes "
                   "ORDER BY lineage_id").to_pylist()
    assert new == [{"lineage_id": "g:novel:3", "status": "merged", "size": 150, "snapshot_date": D2},
                   {"lineage_id": "g:novel:4", "status": "split", "size": 30, "snapshot_date": D2}]
    # last night's class that absorbed another tonight is not new; nor is a known class
    statuses = {r["lineage_id"]: r["status"] for r in wh.latest_classes("g").to_pylist()}
    assert statuses["g:novel:1"] == "merged" and statuses["known:A"] == "persisting"


def test_degraded_run_is_kept_but_never_the_latest_answer(wh: Warehouse) -> None:
    """Issue 47: a run the champion gate found degraded is published for the record, but the
    latest views, the timeline and the next night's lineage all read the last good run."""
    m1, n1 = first_night()
    run1 = wh.publish_run(**night(wh, "g", D1, m1, n1))
    m2, n2 = second_night()
    bad = night(wh, "g", D2, m2, n2)
    bad["run"] |= {"gate_status": "degraded", "gate_reason": "trained with 5 epochs"}
    run2 = wh.publish_run(**bad)
    assert wh.query("SELECT gate_status, gate_reason FROM runs WHERE run_id = ?",
                    [run2]).to_pylist() == [{"gate_status": "degraded",
                                             "gate_reason": "trained with 5 epochs"}]
    assert wh.last_processed_date("g") == D2  # the night was processed: not picked again
    assert {r["run_id"] for r in wh.latest_classes("g").to_pylist()} == {run1}
    assert wh.query("SELECT count(*) AS n FROM emerged_classes WHERE snapshot_date = ?",
                    [D2]).to_pylist() == [{"n": 0}]
    days = wh.query("SELECT DISTINCT snapshot_date FROM class_timeline WHERE graph = 'g'")
    assert [r["snapshot_date"] for r in days.to_pylist()] == [D1]
    assert wh.previous_run("g", dt.date(2026, 4, 3)).run_id == run1
    from flows.demo import degraded_nights, timeline  # the demo reads it as the analyst does

    assert {r["snapshot_date"] for r in timeline(wh, "g").to_pylist()} == {D1}
    assert degraded_nights(wh, "g") == [{"snapshot_date": D2,
                                         "gate_reason": "trained with 5 epochs"}]
    ok = night(wh, "g", D2, m2, n2, config_hash="cfg2")
    ok["run"] |= {"gate_status": "ok"}
    run3 = wh.publish_run(**ok)
    assert {r["run_id"] for r in wh.latest_classes("g").to_pylist()} == {run3}
    assert degraded_nights(wh, "g") == []  # the night's latest run is good: not listed
    for cfg in ("cfg3", "cfg4"):  # the same night degraded twice more: listed once
        again = night(wh, "g", D2, m2, n2, config_hash=cfg)
        again["run"] |= {"gate_status": "degraded", "gate_reason": f"again {cfg}"}
        wh.publish_run(**again)
    assert degraded_nights(wh, "g") == [{"snapshot_date": D2, "gate_reason": "again cfg4"}]


def test_unchanged_snapshot_on_the_next_date_keeps_both_nights(wh: Warehouse) -> None:
    """Issue 21.1: the same snapshot bytes (same content hash) and configuration on two dates are
    two nights, not one run published twice: the second publish adds its own runs, classes,
    node_assignments and class_lineage rows (the known classes ``persisting``, the novel ones
    confirmed) instead of replacing the
    first night's; republishing the second night leaves the same rows."""
    members, names = first_night()
    run1 = wh.publish_run(**night(wh, "g", D1, members, names, content_hash="same"))
    night1 = dump(wh)
    run2 = wh.publish_run(**night(wh, "g", D2, members, names, content_hash="same"))
    assert run1 != run2
    assert run2 == make_run_id("g", D2, "same", "cfg1") and run1 == make_run_id("g", D1, "same", "cfg1")
    runs = wh.query("SELECT run_id, snapshot_date FROM runs ORDER BY snapshot_date").to_pylist()
    assert runs == [{"run_id": run1, "snapshot_date": D1}, {"run_id": run2, "snapshot_date": D2}]
    assert counts(wh, run1) == {"runs": 1, "classes": 4, "node_assignments": 300, "class_lineage": 4}
    assert counts(wh, run2) == counts(wh, run1)
    after = dump(wh)
    for table in TABLES:  # the first night's rows are all still there, unchanged
        assert all(row in after[table] for row in night1[table]), table
    timeline = wh.query("SELECT lineage_id, snapshot_date, status FROM class_timeline "
                        "WHERE graph = ? ORDER BY lineage_id, snapshot_date", ["g"]).to_pylist()
    assert [(r["lineage_id"], r["snapshot_date"], r["status"]) for r in timeline] == [
        (lin, day, ("candidate" if day == D1 else "emerged") if "novel" in lin
         else "emerged" if day == D1 else "persisting")  # novel: confirmed on the second night
        for lin in ("g:novel:1", "g:novel:2", "known:A", "known:B") for day in (D1, D2)]
    assert wh.last_processed_date("g") == D2 and wh.previous_run("g", D2).run_id == run1
    # a rerun of the second night replaces its own rows only
    assert wh.publish_run(**night(wh, "g", D2, members, names, content_hash="same")) == run2
    assert dump(wh) == after


def test_rerun_replaces_a_night_published_under_the_old_run_id(wh: Warehouse) -> None:
    """Rows published before the snapshot date joined the run id carry the old id (graph, content
    and configuration, :func:`make_training_id`): a rerun of that night replaces them instead of
    adding a second run of the date, and publishing the same bytes on the next date keeps them."""
    from tasks.warehouse import make_training_id

    members, names = first_night()
    new_id = wh.publish_run(**night(wh, "g", D1, members, names, content_hash="same"))
    old_id = make_training_id("g", "same", "cfg1")
    con = duckdb.connect(wh.path)
    try:  # what older code left: the same rows under the id without the date
        for table in ("runs", "classes", "node_assignments", "class_lineage"):
            con.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", [old_id, new_id])
    finally:
        con.close()
    legacy = dump(wh)
    # the next date with the same bytes: a night of its own, the old night stays
    run2 = wh.publish_run(**night(wh, "g", D2, members, names, content_hash="same"))
    assert counts(wh, old_id)["runs"] == 1 and counts(wh, run2)["node_assignments"] == 300
    assert all(row in dump(wh)[t] for t in TABLES for row in legacy[t])
    # a rerun of the old night: its rows now under the new id, no second run on that date
    assert wh.publish_run(**night(wh, "g", D1, members, names, content_hash="same")) == new_id
    assert counts(wh, old_id) == {"runs": 0, "classes": 0, "node_assignments": 0, "class_lineage": 0}
    assert counts(wh, new_id) == {"runs": 1, "classes": 4, "node_assignments": 300, "class_lineage": 4}
    assert wh.query("SELECT snapshot_date, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1").to_pylist() \
        == [{"snapshot_date": D1, "n": 1}, {"snapshot_date": D2, "n": 1}]


def test_query_is_read_only(wh: Warehouse) -> None:
    m1, n1 = first_night()
    wh.publish_run(**night(wh, "g", D1, m1, n1))
    for sql in ["DROP TABLE runs", "INSERT INTO meta VALUES ('x', 'y')",
                "SELECT 1; DROP TABLE runs", "DELETE FROM runs",
                "WITH x AS (SELECT 1) INSERT INTO meta SELECT 'a', 'b'",
                "EXPLAIN ANALYZE DELETE FROM runs", "COPY runs TO 'out.csv'",
                "ATTACH 'other.duckdb'", "PRAGMA version", "SET threads = 4", "CALL pragma_version()",
                "UPDATE runs SET device = 'x'", "CREATE TABLE t (a INT)", "", "   "]:
        with pytest.raises(QueryRefused):
            wh.query(sql)
    assert counts(wh)["runs"] == 1
    assert wh.query("SELECT count(*) AS n FROM node_assignments WHERE class_key = ?", [2]) \
        .to_pylist() == [{"n": 70}]
    assert wh.query("-- analysts' note\nWITH c AS (SELECT * FROM classes) SELECT count(*) AS n FROM c") \
        .to_pylist() == [{"n": 4}]
    assert wh.query("SHOW TABLES").num_rows >= 6
    assert wh.query("DESCRIBE runs").num_rows > 10
    assert wh.query("EXPLAIN SELECT * FROM runs").num_rows >= 1
    with pytest.raises(duckdb.Error):  # other files are out of reach of analysts' queries
        wh.query("SELECT * FROM read_csv(?)", [__file__])


def test_hostile_strings_are_stored_verbatim(tmp_path) -> None:
    wh = Warehouse(tmp_path / "x.duckdb", threads=1)
    graph = "g'; DROP TABLE runs; --"
    hostile = ["it's", 'say "hi"', "x'); DROP TABLE classes; --", "; DELETE FROM runs", "back\\slash"]
    members = {0: hostile + ids(0, 20), 1: ids(20, 40)}
    names = {0: "O'Brien; DROP TABLE node_assignments; --"}
    parts = night(wh, graph, D1, members, names, content_hash="h'ash")
    run_id = wh.publish_run(**parts)
    back = wh.query("SELECT node_id FROM node_assignments WHERE run_id = ? AND class_key = 0 "
                    "ORDER BY node_id", [run_id])["node_id"].to_pylist()
    assert back == sorted(hostile + ids(0, 20))
    cls = wh.query("SELECT class_name, lineage_id, exemplars FROM classes WHERE class_key = 0").to_pylist()[0]
    assert cls["class_name"] == names[0] and cls["lineage_id"] == f"known:{names[0]}"
    assert cls["exemplars"][:2] == ["it's", 'say "hi"']  # a list of node ids, verbatim
    assert wh.query("SELECT graph FROM runs").to_pylist() == [{"graph": graph}]
    assert wh.previous_run(graph, D2).members[0] == sorted(hostile + ids(0, 20))
    assert wh.max_novel_index(graph) == 1
    assert counts(wh) == {"snapshots": 1, "runs": 1, "classes": 2, "node_assignments": 45,
                          "class_lineage": 2}


def test_in_memory_warehouse_and_input_checks() -> None:
    wh = Warehouse(":memory:", threads=1)
    wh.ensure_schema()
    parts = night(wh, "g", D1, *first_night())
    run_id = wh.publish_run(**parts)
    assert wh.run_exists(run_id) and wh.latest_classes("g").num_rows == 4
    with pytest.raises(WarehouseError, match="run_id"):
        wh.publish_run(**{**parts, "run": {**parts["run"], "run_id": "forged"}})
    with pytest.raises(WarehouseError, match="unknown run fields"):
        wh.publish_run(**{**parts, "run": {**parts["run"], "bogus": 1}})
    dup = parts["assignments"].slice(0, 5)
    with pytest.raises(WarehouseError, match="repeat"):
        wh.publish_run(**{**parts, "assignments": pa.concat_tables([parts["assignments"], dup])})
    with pytest.raises(QueryRefused):
        wh.query("DROP TABLE runs")
    assert wh.query("SELECT count(*) AS n FROM node_assignments").to_pylist() == [{"n": 300}]
    wh.close()


HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
con.close()
"""


def test_locked_file_is_retried_then_refused_clearly(tmp_path, caplog) -> None:
    path = tmp_path / "locked.duckdb"
    Warehouse(path, threads=1).ensure_schema()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        wh = Warehouse(path, lock_timeout=2.0, initial_backoff=0.1, max_backoff=0.5, threads=1)
        caplog.set_level(logging.WARNING, logger="tasks.warehouse")
        start = time.monotonic()
        with pytest.raises(WarehouseLocked) as err:
            wh.connect()
        waited = time.monotonic() - start
        assert waited >= 1.9  # it waited its whole timeout ...
        assert str(path) in str(err.value) and "locked by another process" in str(err.value)
        # ... in backed-off, logged retries (0.1 s doubling to 0.5 s: a bounded number of them)
        assert 3 <= sum("is locked" in r.getMessage() for r in caplog.records) <= 20
        with pytest.raises(WarehouseLocked):  # readers wait too
            wh.latest_classes()

        # the holder lets go while we wait: the retry then succeeds
        threading.Timer(0.7, holder.stdin.close).start()
        con = wh.connect(timeout=120.0)
        try:
            assert con.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]
        finally:
            con.close()
    finally:
        if holder.poll() is None:
            if not holder.stdin.closed:
                holder.stdin.close()
            holder.wait(timeout=120)
        holder.stdout.close()


def test_known_last_reads_which_nodes_the_previous_answer_named_known(wh: Warehouse) -> None:
    """``known_last`` (``+lastsplit``'s input): per node of tonight, named a known class by the
    latest published answer before tonight (a degraded run is not the answer), new nodes not;
    None before any answer."""
    assert wh.known_last("g", D1, pa.array(ids(0, 5))) is None
    m1, n1 = first_night()  # known 0-179, novel 180-299
    wh.publish_run(**night(wh, "g", D1, m1, n1))
    tonight = pa.array(["n5", "n150", "n200", "n290", "n400"])  # n400 is new
    assert wh.known_last("g", D2, tonight).tolist() == [True, True, False, False, False]
    assert wh.known_last("g", D1, tonight) is None  # nothing before the first night
    m2, n2 = second_night()
    m2 = {0: ids(0, 100) + ids(180, 250), 1: ids(100, 180), 2: ids(250, 300)}
    bad = night(wh, "g", D2, m2, n2)
    bad["run"] |= {"gate_status": "degraded", "gate_reason": "trained with 5 epochs"}
    wh.publish_run(**bad)
    # the degraded night D2 is not an answer: D1's is still the one before D3
    assert wh.known_last("g", dt.date(2026, 4, 3), tonight).tolist() == [True, True, False,
                                                                          False, False]
    assert wh.known_last("h", D2, tonight) is None  # another graph has no answer


def test_the_answer_step_reads_last_nights_known_nodes_from_the_warehouse(wh: Warehouse,
                                                                           tmp_path) -> None:
    """``tasks.answer.known_last_night``: what ``+lastsplit`` reads on a night, a tensor over the
    snapshot's nodes; None without a warehouse file or before a first answer."""
    from types import SimpleNamespace

    from tasks.answer import known_last_night

    snapshot = SimpleNamespace(date=D2, node_ids=pa.array(["n5", "n200", "n999"]))
    assert known_last_night(str(tmp_path / "none.duckdb"), "g", snapshot) is None
    assert known_last_night(str(wh.path), "g", snapshot) is None
    m1, n1 = first_night()
    wh.publish_run(**night(wh, "g", D1, m1, n1))
    assert known_last_night(str(wh.path), "g", snapshot).tolist() == [True, False, False]


def test_a_candidates_nodes_are_published_under_their_known_class_when_asked(wh: Warehouse,
                                                                             tmp_path) -> None:
    """``ORAL_CANDIDATES_NAMED``: the nodes of a candidate (tonight's novel class 4, first seen
    tonight) take the lineage id and name of the known class in ``known_key``, ``is_novel``
    false; ``class_key`` stays the candidate's, which the next night's lineage reads, and the
    candidate keeps its classes and lineage rows. A node whose known class has no classes row
    stays under the candidate; the confirmed novel classes are not touched. Without the switch,
    or from predictions without ``known_key``, nothing changes."""
    from tasks.publishing import candidate_keys, has_known_key, write_run

    wh.publish_run(**night(wh, "g", D1, *first_night()))
    members, names = second_night()
    parts = night(wh, "g", D2, *second_night())
    statuses = {r.class_key: r.status for r in parts["lineage_rows"]}
    assert statuses[4] == "candidate" and statuses[2] != "candidate"
    keys = np.array(parts["assignments"].column("class_key").to_pylist())
    known_key = np.where(keys == 4, 1, 0)  # the classifier names the candidate's nodes B
    known_key[np.flatnonzero(keys == 4)[:5]] = 7  # ... but five a class with no classes row
    with_known = parts["assignments"].append_column("known_key", pa.array(known_key))
    path = tmp_path / "answer.parquet"
    import pyarrow.parquet as pq
    pq.write_table(with_known, path)
    result = type("Found", (), {"rows": parts["lineage_rows"]})()
    assert candidate_keys(result) == [4] and has_known_key(str(path))
    assert not has_known_key(parts["assignments"])
    found = {"run_id": make_run_id("g", D2, parts["run"]["content_hash"], "cfg1"),
             "result": type("R", (), {"rows": parts["lineage_rows"],
                                      "lineage_of": {c["class_key"]: c["lineage_id"]
                                                     for c in parts["classes"]}})(),
             "classes": parts["classes"]}

    def published() -> dict:
        rows = wh.query("SELECT class_key, lineage_id, class_name, is_novel, count(*) AS n "
                        "FROM node_assignments WHERE run_id = ? GROUP BY ALL ORDER BY ALL",
                        [found["run_id"]]).to_pylist()
        return {(r["class_key"], r["lineage_id"], r["class_name"], r["is_novel"]): r["n"]
                for r in rows}

    write_run(wh, parts["run"], parts["snapshot"], str(path), found)  # the switch off
    plain = published()
    candidate = next(c["lineage_id"] for c in parts["classes"] if c["class_key"] == 4)
    assert plain[(4, candidate, None, True)] == 40
    write_run(wh, parts["run"], parts["snapshot"], str(path), found, candidates_named=True)
    named = published()
    assert named[(4, "known:B", "B", False)] == 35 and named[(4, candidate, None, True)] == 5
    assert {k: v for k, v in named.items() if k[0] != 4} == \
        {k: v for k, v in plain.items() if k[0] != 4}  # every other node as before
    assert counts(wh, found["run_id"])["classes"] == 5  # the candidate's row stays
    assert candidate in wh.query("SELECT lineage_id FROM class_lineage WHERE run_id = ? AND "
                                 "status = 'candidate'", [found["run_id"]])["lineage_id"].to_pylist()
    # the next night's +lastsplit reads the class a node sat in, not the name it was published under
    tonight = pa.array(members[4][:3] + members[0][:2])
    assert wh.known_last("g", D2 + dt.timedelta(days=1), tonight).tolist() == \
        [False, False, False, True, True]
    # predictions without known_key (the model's own, a whole-night answer): as without the switch
    write_run(wh, parts["run"], parts["snapshot"], parts["assignments"], found,
              candidates_named=True)
    assert published() == plain
