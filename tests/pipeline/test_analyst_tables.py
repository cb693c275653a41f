"""What analysts query (issue 19, point 4): typed columns instead of JSON text, the migration of
warehouses written by schema version 1, one class key across DuckDB, the pyfunc and lineage,
and human labels of classes (``oral label``). DuckDB in tmp_path, no training."""
from __future__ import annotations

import dataclasses
import datetime as dt
from types import SimpleNamespace

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from test_warehouse import D1, D2, first_night, night, second_night

from tasks.warehouse import (SCHEMA_VERSION, QueryRefused, UnknownLineage, Warehouse,
                             WarehouseError)


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    return Warehouse(tmp_path / "wh" / "oral.duckdb", lock_timeout=2.0, threads=1)


def two_nights(wh: Warehouse) -> tuple[str, str]:
    run1 = wh.publish_run(**night(wh, "g", D1, *first_night()))
    run2 = wh.publish_run(**night(wh, "g", D2, *second_night()))
    return run1, run2


def column_types(wh: Warehouse, table: str) -> dict:
    return {r["column_name"]: r["column_type"] for r in wh.query(f"DESCRIBE {table}").to_pylist()}


# ----------------------------------------------------------------------------- typed columns
def test_json_columns_are_typed_and_queryable(wh: Warehouse) -> None:
    _, run2 = two_nights(wh)
    assert column_types(wh, "classes")["top_features"] == \
        "STRUCT(\"name\" VARCHAR, lift DOUBLE, class_mean DOUBLE)[]"
    assert column_types(wh, "classes")["exemplars"] == "VARCHAR[]"
    assert column_types(wh, "runs")["scores"] == "MAP(VARCHAR, DOUBLE)"
    assert column_types(wh, "class_lineage")["parents"] == "VARCHAR[]"
    # straight into the values, no JSON functions
    feats = wh.query("SELECT DISTINCT unnest(top_features).name AS f FROM classes").to_pylist()
    assert feats == [{"f": "f3"}]
    lifts = wh.query("SELECT max(f.lift) AS lift FROM (SELECT unnest(top_features) AS f FROM classes)")
    assert lifts.to_pylist() == [{"lift": 2.5}]
    ex = wh.query("SELECT exemplars, exemplars[1] AS first, len(exemplars) AS n FROM classes "
                  "WHERE run_id = ? AND class_key = 0", [run2]).to_pylist()
    assert ex == [{"exemplars": ["n0", "n1", "n2"], "first": "n0", "n": 3}]
    scores = wh.query("SELECT scores['all'] AS a, scores['novel'] AS n, scores['missing'] AS m "
                      "FROM runs WHERE run_id = ?", [run2]).to_pylist()
    assert scores == [{"a": 0.8, "n": 0.7, "m": None}]
    # the views carry the typed columns too
    row = wh.query("SELECT top_features, exemplars, parents FROM emerged_classes").to_pylist()[0]
    assert row["top_features"] == [{"name": "f3", "lift": 2.5, "class_mean": 0.4}]
    assert isinstance(row["exemplars"], list) and row["parents"] == []


def test_class_fields_in_every_accepted_shape(wh: Warehouse) -> None:
    """``describe_classes`` writes ``feature``; Feature tuples and JSON text (what version 1
    callers passed) are accepted as well; NaN becomes NULL; node ids become strings."""
    from oral_core.interpret import Feature

    members, names = first_night()
    parts = night(wh, "g", D1, members, names)
    shapes = [[{"feature": "w1", "lift": 3.0, "class_mean": 0.2}],
              [Feature(7, "w7", float("nan"), 0.1)],
              '[{"name": "w2", "lift": 1.5}]',
              None]
    for cls, feats in zip(parts["classes"], shapes):
        cls["top_features"] = feats
    parts["classes"][0]["exemplars"] = [1, 2, np.int64(3)]
    parts["classes"][1]["exemplars"] = '["a", "b"]'
    parts["run"]["scores"] = '{"all": 80, "test_nodes": 12}'
    run_id = wh.publish_run(**parts)
    got = wh.query("SELECT class_key, top_features, exemplars FROM classes WHERE run_id = ? "
                   "ORDER BY class_key", [run_id]).to_pylist()
    assert [g["top_features"] for g in got] == [
        [{"name": "w1", "lift": 3.0, "class_mean": 0.2}],
        [{"name": "w7", "lift": None, "class_mean": 0.1}],
        [{"name": "w2", "lift": 1.5, "class_mean": None}], None]
    assert got[0]["exemplars"] == ["1", "2", "3"] and got[1]["exemplars"] == ["a", "b"]
    scores = wh.query("SELECT scores FROM runs").to_pylist()[0]["scores"]  # Arrow: a MAP is pairs
    assert dict(scores) == {"all": 80.0, "test_nodes": 12.0}


@pytest.mark.parametrize("field, value, message", [
    ("top_features", [{"name": "x", "colour": "red"}], "unknown feature fields"),
    ("top_features", [{"name": "x", "lift": "high"}], "expected a number"),
    ("top_features", {"name": "x"}, "expected a list of features"),
    ("top_features", "[not json", "not JSON text"),
    ("top_features", ["x"], "a feature must be a mapping"),
    ("exemplars", "n1", "not JSON text"),
    ("exemplars", {"a": 1}, "expected a list"),
    ("exemplars", [["nested"]], "expected plain values"),
    ("scores", {"all": "good"}, "expected a number"),
    ("scores", {"nested": {"a": 1}}, "expected a number"),
    ("scores", [1, 2], "must be a mapping"),
])
def test_malformed_typed_fields_are_refused_and_nothing_is_written(wh, field, value, message) -> None:
    parts = night(wh, "g", D1, *first_night())
    if field == "scores":
        parts["run"]["scores"] = value
    else:
        parts["classes"][0][field] = value
    with pytest.raises(WarehouseError, match=message):
        wh.publish_run(**parts)
    assert wh.schema_version() is None  # checked before the file was opened: nothing written


def test_malformed_lineage_parents_are_refused(wh: Warehouse) -> None:
    parts = night(wh, "g", D1, *first_night())
    rows = [dataclasses.asdict(r) for r in parts["lineage_rows"]]
    rows[0]["parents"] = [{"not": "an id"}]
    with pytest.raises(WarehouseError, match="parents"):
        wh.publish_run(**(parts | {"lineage_rows": rows}))


def test_analyst_sql_guard_still_refuses_writes(wh: Warehouse) -> None:
    two_nights(wh)
    wh.label_class("g:novel:1", "Graph learning", by="ana")
    for sql in ["INSERT INTO class_labels VALUES ('g', 'g:novel:1', 'x', 'me', now())",
                "UPDATE classes SET top_features = []", "DELETE FROM class_labels",
                "ALTER TABLE runs ALTER scores TYPE VARCHAR", "DROP VIEW latest_labels"]:
        with pytest.raises(QueryRefused):
            wh.query(sql)
    assert wh.query("SELECT count(*) AS n FROM class_labels").to_pylist() == [{"n": 1}]


# -------------------------------------------------------------------- migration from version 1
#: the schema of version 1, as the warehouse (then tasks/warehouse.py) created it before the
#: typed columns
V1_TABLES = [
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    """CREATE TABLE snapshots (graph VARCHAR NOT NULL, snapshot_date DATE NOT NULL,
        content_hash VARCHAR NOT NULL, path VARCHAR, nodes BIGINT, edges BIGINT,
        labelled_nodes BIGINT, known_classes INTEGER, validation_passed BOOLEAN,
        validated_at TIMESTAMP, PRIMARY KEY (graph, snapshot_date, content_hash))""",
    """CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, graph VARCHAR NOT NULL,
        snapshot_date DATE NOT NULL, content_hash VARCHAR NOT NULL, config_hash VARCHAR NOT NULL,
        code_version VARCHAR, prefect_flow_run_id VARCHAR, mlflow_run_id VARCHAR,
        model_name VARCHAR, model_version VARCHAR, device VARCHAR, epochs INTEGER,
        val_accuracy DOUBLE, num_classes INTEGER, num_known INTEGER, num_novel INTEGER,
        num_nodes BIGINT, train_seconds DOUBLE, published_at TIMESTAMP NOT NULL, acc_all DOUBLE,
        acc_known DOUBLE, acc_novel DOUBLE, scores VARCHAR)""",
    """CREATE TABLE classes (run_id VARCHAR NOT NULL, class_key INTEGER NOT NULL,
        lineage_id VARCHAR NOT NULL, class_name VARCHAR, is_novel BOOLEAN NOT NULL,
        size BIGINT NOT NULL, mean_confidence DOUBLE, top_features VARCHAR, exemplars VARCHAR,
        purity DOUBLE, majority_true_label VARCHAR, PRIMARY KEY (run_id, class_key))""",
    """CREATE TABLE node_assignments (run_id VARCHAR NOT NULL, node_id VARCHAR NOT NULL,
        class_key INTEGER, lineage_id VARCHAR, class_name VARCHAR, is_novel BOOLEAN NOT NULL,
        confidence DOUBLE)""",
    """CREATE TABLE class_lineage (graph VARCHAR NOT NULL, lineage_id VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL, snapshot_date DATE NOT NULL, class_key INTEGER,
        status VARCHAR NOT NULL CHECK (status IN ('emerged', 'persisting', 'grown', 'shrunk',
        'merged', 'split', 'vanished')), size BIGINT NOT NULL, previous_size BIGINT,
        parents VARCHAR NOT NULL, merged_into VARCHAR, first_seen DATE, last_seen DATE,
        PRIMARY KEY (run_id, lineage_id))""",
    """CREATE VIEW latest_runs AS SELECT * FROM runs QUALIFY row_number() OVER (
        PARTITION BY graph ORDER BY snapshot_date DESC, published_at DESC, run_id DESC) = 1""",
    """CREATE VIEW latest_classes AS
        SELECT r.graph, r.snapshot_date, r.run_id, c.lineage_id, c.class_key, c.class_name,
               c.is_novel, c.size, c.mean_confidence, l.status, l.previous_size, l.parents,
               l.first_seen, l.last_seen, c.top_features, c.exemplars, c.purity,
               c.majority_true_label
        FROM latest_runs r JOIN classes c ON c.run_id = r.run_id
        LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id""",
    "CREATE VIEW emerged_classes AS SELECT * FROM latest_classes WHERE status = 'emerged'",
]
V1_RUN = ("r1", "g", D1, "h1", "c1", None, None, None, None, None, "cpu", 10, 0.9, 3, 2, 1, 6,
          1.0, dt.datetime(2026, 4, 2), 80.0, 90.0, 70.0,
          '{"all": 80.0, "known": 90.0, "novel": 70.0, "test_nodes": 4, "note": "text"}')
V1_CLASSES = [
    ("r1", 0, "known:A", "A", False, 3, 0.9,
     '[{"feature": "w1", "lift": 2.5, "class_mean": 0.4}, {"feature": "w2", "lift": 1.2, '
     '"class_mean": 0.1}]', '["n0", "n1"]', 1.0, "A"),
    ("r1", 2, "g:novel:1", None, True, 2, 0.7, '[{"feature": "it\'s \\"odd\\"", "lift": 4.0, '
     '"class_mean": 0.3}]', '["n4", 5]', None, None),
    ("r1", 1, "known:B", "B", False, 1, 0.8, "[]", "[]", None, None),
]
V1_LINEAGE = [
    ("g", "known:A", "r1", D1, 0, "emerged", 3, None, "[]", None, D1, D1),
    ("g", "g:novel:1", "r1", D1, 2, "emerged", 2, None, '["g:novel:0"]', None, D1, D1),
    ("g", "known:B", "r1", D1, 1, "emerged", 1, None, "[]", None, D1, D1),
]


def make_v1_warehouse(path, corrupt: bool = False) -> None:
    con = duckdb.connect(str(path))
    try:
        for ddl in V1_TABLES:
            con.execute(ddl)
        con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        con.execute("INSERT INTO snapshots VALUES ('g', ?, 'h1', '/s', 6, 9, 3, 2, true, NULL)", [D1])
        con.execute(f"INSERT INTO runs VALUES ({', '.join('?' * len(V1_RUN))})", list(V1_RUN))
        for row in V1_CLASSES:
            con.execute(f"INSERT INTO classes VALUES ({', '.join('?' * len(row))})", list(row))
        for row in V1_LINEAGE:
            con.execute(f"INSERT INTO class_lineage VALUES ({', '.join('?' * len(row))})", list(row))
        for i, (key, lin, name) in enumerate([(0, "known:A", "A")] * 3 + [(1, "known:B", "B")]
                                             + [(2, "g:novel:1", None)] * 2):
            con.execute("INSERT INTO node_assignments VALUES ('r1', ?, ?, ?, ?, ?, 0.5)",
                        [f"n{i}", key, lin, name, name is None])
        if corrupt:  # a row no JSON reader accepts: the migration must change nothing
            con.execute("UPDATE classes SET exemplars = '[\"n0\", ' WHERE class_key = 1")
    finally:
        con.close()


def raw(path, sql: str) -> list:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_version_1_warehouse_is_migrated_in_place(tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    make_v1_warehouse(path)
    before = {t: raw(path, f"SELECT count(*) FROM {t}")[0][0]
              for t in ("snapshots", "runs", "classes", "node_assignments", "class_lineage")}
    wh = Warehouse(path, threads=1)
    assert wh.schema_version() == 1
    assert wh.ensure_schema() == SCHEMA_VERSION == 5
    assert wh.schema_version() == 5
    after = {t: raw(path, f"SELECT count(*) FROM {t}")[0][0] for t in before}
    assert after == before  # every row kept
    # schema 3: how a run's training started; unknown (NULL) for the runs from before
    assert raw(path, "SELECT start_mode, start_reason, warm_from_run_id, warm_from_version "
                     "FROM runs") == [(None, None, None, None)]
    # schema 4: the champion gate's verdict; NULL for older runs, which stay the latest answer
    assert raw(path, "SELECT gate_status, gate_reason FROM runs") == [(None, None)]
    assert raw(path, "SELECT count(*) FROM latest_runs") == [(1,)]
    classes = wh.query("SELECT class_key, lineage_id, top_features, exemplars, size FROM classes "
                       "ORDER BY class_key").to_pylist()
    assert classes == [
        {"class_key": 0, "lineage_id": "known:A", "size": 3, "exemplars": ["n0", "n1"],
         "top_features": [{"name": "w1", "lift": 2.5, "class_mean": 0.4},
                          {"name": "w2", "lift": 1.2, "class_mean": 0.1}]},
        {"class_key": 1, "lineage_id": "known:B", "size": 1, "exemplars": [], "top_features": []},
        {"class_key": 2, "lineage_id": "g:novel:1", "size": 2, "exemplars": ["n4", "5"],
         "top_features": [{"name": 'it\'s "odd"', "lift": 4.0, "class_mean": 0.3}]}]
    run = wh.query("SELECT scores, acc_all, published_at FROM runs").to_pylist()[0]
    # a score that is not a number becomes NULL; the accuracies are in acc_* anyway
    assert dict(run["scores"]) == {"all": 80.0, "known": 90.0, "novel": 70.0, "test_nodes": 4.0,
                             "note": None}
    assert run["acc_all"] == 80.0 and run["published_at"] == dt.datetime(2026, 4, 2)
    parents = wh.query("SELECT lineage_id, parents FROM class_lineage ORDER BY lineage_id")
    assert parents.to_pylist() == [{"lineage_id": "g:novel:1", "parents": ["g:novel:0"]},
                                   {"lineage_id": "known:A", "parents": []},
                                   {"lineage_id": "known:B", "parents": []}]
    # the new table and views are there, and the old warehouse takes new nights and labels
    assert wh.query("SELECT label FROM latest_classes").num_rows == 3
    wh.label_class("g:novel:1", "Graph learning", by="ana")
    members = {0: [f"n{i}" for i in range(3)], 1: ["n3"], 2: ["n4", "n5"]}
    run2 = wh.publish_run(**night(wh, "g", D2, members, {0: "A", 1: "B"}))
    timeline = wh.query("SELECT lineage_id, snapshot_date, status, label FROM class_timeline "
                        "WHERE lineage_id = 'g:novel:1' ORDER BY snapshot_date").to_pylist()
    assert timeline == [
        {"lineage_id": "g:novel:1", "snapshot_date": D1, "status": "emerged", "label": "Graph learning"},
        {"lineage_id": "g:novel:1", "snapshot_date": D2, "status": "persisting",
         "label": "Graph learning"}]
    assert wh.query("SELECT count(*) AS n FROM classes WHERE run_id = ?", [run2]).to_pylist() == [{"n": 3}]
    # schema 5: the rebuilt lineage table takes the confirmation statuses (a new class is a
    # candidate on its first night)
    members[3] = ["n6", "n7"]
    wh.publish_run(**night(wh, "g", dt.date(2026, 4, 3), members, {0: "A", 1: "B"}))
    assert wh.query("SELECT lineage_id FROM candidate_classes").to_pylist() == [
        {"lineage_id": "g:novel:2"}]
    assert wh.ensure_schema() == 5  # a second time: nothing to do


def test_analyst_reads_migrate_an_old_warehouse_first(tmp_path) -> None:
    """``oral sql`` / ``oral classes`` on a warehouse nobody has written since the upgrade."""
    path = tmp_path / "old.duckdb"
    make_v1_warehouse(path)
    rows = Warehouse(path, threads=1).query(
        "SELECT unnest(top_features).name AS f FROM classes WHERE class_key = 0").to_pylist()
    assert rows == [{"f": "w1"}, {"f": "w2"}]
    assert raw(path, "SELECT value FROM meta")[0][0] == str(SCHEMA_VERSION)
    make_v1_warehouse(other := tmp_path / "other.duckdb")
    shown = Warehouse(other, threads=1).classes_for_display("g").to_pylist()
    assert [r["name"] for r in shown] == ["A", "g:novel:1", "B"]


def test_failed_migration_changes_nothing(tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    make_v1_warehouse(path, corrupt=True)
    before = {t: raw(path, f"SELECT * FROM {t} ORDER BY ALL")
              for t in ("meta", "runs", "classes", "class_lineage")}
    wh = Warehouse(path, threads=1)
    with pytest.raises(WarehouseError, match=f"from schema version 1 to {SCHEMA_VERSION} failed at version 1.*nothing was changed"):
        wh.ensure_schema()
    after = {t: raw(path, f"SELECT * FROM {t} ORDER BY ALL") for t in before}
    assert after == before  # still version 1, JSON text intact, no half-converted column
    assert raw(path, "SELECT data_type FROM information_schema.columns WHERE table_name = "
                     "'runs' AND column_name = 'scores'") == [("VARCHAR",)]
    assert not raw(path, "SELECT * FROM information_schema.tables WHERE table_name = 'class_labels'")
    with pytest.raises(WarehouseError, match=f"schema version 1; this code reads version {SCHEMA_VERSION}"):
        wh.query("SELECT * FROM classes")


def test_newer_schema_is_refused(tmp_path) -> None:
    path = tmp_path / "new.duckdb"
    wh = Warehouse(path, threads=1)
    wh.ensure_schema()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(WarehouseError, match="newer than this code"):
        wh.ensure_schema()


# ------------------------------------------------------- one class key: DuckDB, pyfunc, lineage
class _StubModel:
    """Stands in for a trained ORALModel: assigns each node the class key it had in the
    warehouse's night (what the model trained that night assigns on its own snapshot)."""

    def __init__(self, keys: list[int], num_known: int, class_names: list[str]):
        self.keys, self.num_known, self.class_names = keys, num_known, class_names

    def assign_raw(self, x, edge_index):
        import torch
        from types import SimpleNamespace

        key = torch.tensor(self.keys, dtype=torch.int64)
        return SimpleNamespace(class_id=key, is_novel=key >= self.num_known,
                               confidence=torch.full((len(self.keys),), 0.9, dtype=torch.float64))


def pyfunc_output(tmp_path, wh: Warehouse, run_id: str, members: dict, monkeypatch):
    """The registered model's output on the night's snapshot, through ORALPyfunc.load_context
    (the model_config the nightly flow logs) and predict, with the trained model stubbed."""
    import pandas as pd

    from data_contracts.snapshots import edges_table, nodes_table, write_snapshot
    from oral_core import inference
    from tasks import registry as tracking

    node_ids = [n for nodes in members.values() for n in nodes] + ["stray"]
    keys = [k for k, nodes in members.items() for _ in nodes] + [-1]
    x = np.ones((len(node_ids), 2), dtype=np.float32)
    snap = write_snapshot(tmp_path / "snaps", "g", D2, nodes_table(node_ids, x),
                          edges_table(node_ids[:1], node_ids[1:2]))
    stub = _StubModel(keys, 2, ["A", "B"])
    monkeypatch.setattr(inference.ORALModel, "load", staticmethod(lambda path: stub))
    model = tracking.ORALPyfunc()
    model.load_context(SimpleNamespace(artifacts={tracking.MODEL_ARTIFACT: "model.pt"},
                                       model_config={"graph": "g", "oral_run_id": run_id}))
    return model.predict(None, pd.DataFrame({"snapshot_path": [str(snap)]}))


def test_pyfunc_output_joins_duckdb_and_lineage_on_one_key(tmp_path, wh, monkeypatch) -> None:
    _, run2 = two_nights(wh)
    members, _ = second_night()
    out = pyfunc_output(tmp_path, wh, run2, members, monkeypatch)
    assert list(out.columns) == ["snapshot_path", "node_id", "run_id", "class_key", "lineage_id",
                                 "class_name", "is_novel", "confidence"]
    assert set(out["run_id"]) == {run2} and out["class_key"].dtype.kind == "i"
    # class_name as DuckDB has it: the known name, NULL for a novel class (no novel_<id>)
    assert set(out.loc[out["is_novel"], "class_name"].isna()) == {True}
    assert not out["class_name"].astype(str).str.startswith("novel_").any()

    joined = wh.with_lineage(out).to_pylist()
    assert [r["node_id"] for r in joined] == out["node_id"].tolist()  # order kept
    stray = joined.pop()
    assert stray["class_key"] == -1 and stray["lineage_id"] is None
    # the pyfunc's rows, DuckDB's node assignments and the lineage rows agree on lineage_id
    duck = {r["node_id"]: r for r in wh.query(
        "SELECT node_id, class_key, lineage_id, class_name FROM node_assignments WHERE run_id = ?",
        [run2]).to_pylist()}
    lineage = {r["lineage_id"]: r["class_key"] for r in wh.query(
        "SELECT lineage_id, class_key FROM class_lineage WHERE run_id = ?", [run2]).to_pylist()}
    for row in joined:
        assert row["lineage_id"] == duck[row["node_id"]]["lineage_id"]
        assert row["class_key"] == duck[row["node_id"]]["class_key"] == lineage[row["lineage_id"]]
        assert row["class_name"] == duck[row["node_id"]]["class_name"]
    assert {r["lineage_id"] for r in joined} == set(lineage)  # nothing lost, nothing extra
    # the documented SQL join gives the same, and picks the label up once there is one
    wh.label_class("g:novel:3", "Late bloomers", by="ana")
    con = duckdb.connect(wh.path, read_only=True)
    try:
        con.register("predictions", out)
        sql = ("SELECT p.node_id, c.lineage_id, lb.label FROM predictions p "
               "JOIN classes c USING (run_id, class_key) JOIN runs r USING (run_id) "
               "LEFT JOIN latest_labels lb ON lb.graph = r.graph AND lb.lineage_id = c.lineage_id")
        by_sql = {n: (lin, lab) for n, lin, lab in con.execute(sql).fetchall()}
    finally:
        con.close()
    assert by_sql == {r["node_id"]: (r["lineage_id"], "Late bloomers" if r["lineage_id"] ==
                                     "g:novel:3" else None) for r in joined}
    assert {r["label"] for r in wh.with_lineage(out).to_pylist()} == {None, "Late bloomers"}


def test_with_lineage_failure_paths(tmp_path, wh) -> None:
    import pandas as pd

    frame = pd.DataFrame({"run_id": ["nope", None], "class_key": [0, 1], "node_id": ["a", "b"]})
    # no warehouse yet: nulls, and no file is created
    got = Warehouse(tmp_path / "none.duckdb").with_lineage(frame)
    assert got["lineage_id"].to_pylist() == [None, None]
    assert not (tmp_path / "none.duckdb").exists()
    two_nights(wh)
    assert wh.with_lineage(frame)["lineage_id"].to_pylist() == [None, None]  # unknown run
    with pytest.raises(WarehouseError, match=r"lack columns \['run_id'\]"):
        wh.with_lineage(pd.DataFrame({"class_key": [0]}))


# -------------------------------------------------------------------------------- class labels
def test_labels_show_in_every_view_and_survive_later_nights(wh: Warehouse) -> None:
    wh.publish_run(**night(wh, "g", D1, *first_night()))
    first = wh.label_class("g:novel:1", "  Graph\tlearning ", by="ana",
                           at=dt.datetime(2026, 4, 1, 9, 0))
    assert first == {"graph": "g", "lineage_id": "g:novel:1", "name": "Graph learning",
                     "labelled_by": "ana", "labelled_at": dt.datetime(2026, 4, 1, 9, 0),
                     "previous": None}
    wh.publish_run(**night(wh, "g", D2, *second_night()))  # a later night: the label stays
    latest = {r["lineage_id"]: r["label"] for r in wh.latest_classes("g").to_pylist()}
    assert latest["g:novel:1"] == "Graph learning" and latest["g:novel:2"] is None
    timeline = wh.query("SELECT snapshot_date, label FROM class_timeline WHERE lineage_id = ? "
                        "ORDER BY snapshot_date", ["g:novel:1"]).to_pylist()
    assert [r["label"] for r in timeline] == ["Graph learning", "Graph learning"]
    # the classes confirmed on the second night, and its candidate, labelled: the views show it
    wh.label_class("g:novel:3", "Late bloomers", by="bob")
    assert wh.query("SELECT lineage_id, label FROM emerged_classes ORDER BY 1").to_pylist() == \
        [{"lineage_id": "g:novel:1", "label": "Graph learning"},
         {"lineage_id": "g:novel:2", "label": None}]
    assert wh.query("SELECT lineage_id, label FROM candidate_classes").to_pylist() == \
        [{"lineage_id": "g:novel:3", "label": "Late bloomers"}]
    # labelled again: the latest wins, the history is kept
    again = wh.label_class("g:novel:1", "GNNs", by="bob", at=dt.datetime(2026, 4, 2, 9, 0))
    assert again["previous"] == "Graph learning"
    assert {r["lineage_id"]: r["label"] for r in wh.latest_classes("g").to_pylist()}[
        "g:novel:1"] == "GNNs"
    history = wh.query("SELECT name, labelled_by FROM class_labels WHERE lineage_id = ? "
                       "ORDER BY labelled_at", ["g:novel:1"]).to_pylist()
    assert history == [{"name": "Graph learning", "labelled_by": "ana"},
                       {"name": "GNNs", "labelled_by": "bob"}]
    # republishing a night does not touch labels
    wh.publish_run(**night(wh, "g", D2, *second_night()))
    assert wh.query("SELECT count(*) AS n FROM class_labels").to_pylist() == [{"n": 3}]


def test_label_is_per_graph_and_refusals_write_nothing(tmp_path, wh: Warehouse) -> None:
    from tasks.warehouse import LabelRefused

    wh.publish_run(**night(wh, "g", D1, *first_night()))
    wh.publish_run(**night(wh, "h", D1, {0: [f"h{i}" for i in range(30)]}, {0: "A"}))
    with pytest.raises(UnknownLineage, match="unknown lineage id 'g:novel:99'"):
        wh.label_class("g:novel:99", "x", by="ana")
    with pytest.raises(UnknownLineage, match="'g:novel:1' in graph 'h'"):
        wh.label_class("g:novel:1", "x", by="ana", graph="h")
    with pytest.raises(LabelRefused, match="several graphs \\(g, h\\): name one with --graph"):
        wh.label_class("known:A", "Alpha", by="ana")
    with pytest.raises(LabelRefused, match="empty"):
        wh.label_class("g:novel:1", "   ", by="ana")
    with pytest.raises(LabelRefused, match="who gave it"):
        wh.label_class("g:novel:1", "x", by=" ")
    assert wh.query("SELECT count(*) AS n FROM class_labels").to_pylist() == [{"n": 0}]
    wh.label_class("known:A", "Alpha", by="ana", graph="h")  # only h's known:A
    labels = {(r["graph"], r["lineage_id"]): r["label"] for r in wh.latest_classes().to_pylist()}
    assert labels[("h", "known:A")] == "Alpha" and labels[("g", "known:A")] is None
    with pytest.raises(WarehouseError, match="nothing has been published"):
        Warehouse(tmp_path / "none.duckdb").label_class("g:novel:1", "x", by="ana")
    assert not (tmp_path / "none.duckdb").exists()


def test_oral_label_and_oral_classes_commands(tmp_path, capsys, monkeypatch) -> None:
    from cli.main import main

    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", threads=1)
    two_nights(wh)
    monkeypatch.delenv("ORAL_WAREHOUSE", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "analyst7")
    assert main(["label", "g:novel:3", "Late bloomers", "--state-dir", str(state)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("g g:novel:3: labelled 'Late bloomers' by analyst7 at ")
    assert main(["label", "g:novel:3", "Latecomers", "--graph", "g", "--by", "ana",
                 "--state-dir", str(state)]) == 0
    assert "by ana" in (out := capsys.readouterr().out) and "(was 'Late bloomers')" in out
    assert wh.query("SELECT label, labelled_by FROM latest_labels").to_pylist() == \
        [{"label": "Latecomers", "labelled_by": "ana"}]

    # oral classes: labels and lineage ids as names, top features as text, nothing cut
    assert main(["classes", "--graph", "g", "--state-dir", str(state)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[:4] == ["graph", "snapshot_date", "lineage_id", "name"]
    by_lineage = {line.split()[2]: line for line in lines[1:]}
    assert len(by_lineage) == 5
    assert "Latecomers" in by_lineage["g:novel:3"]
    assert by_lineage["g:novel:1"].split()[3] == "g:novel:1"  # no label: its lineage id
    assert by_lineage["known:A"].split()[3] == "A"
    assert all(line.rstrip().endswith("f3 (x2.50)") for line in lines[1:])
    assert "{" not in "".join(lines) and "..." not in "".join(lines)


@pytest.mark.parametrize("argv, message", [
    (["label", "g:novel:42", "x"], "error: unknown lineage id 'g:novel:42'"),
    (["label", "g:novel:1", "x", "--graph", "nope"], "error: no published run of graph 'nope' in "),
    (["label", "g:novel:1", "x", "--graph", "../x"], "error: --graph ../x: invalid graph name"),
    (["label", "g:novel:1", " "], "error: a label needs a name"),
    (["label", "g:novel:1", "x", "--by", ""], "error: a label needs who gave it"),
])
def test_oral_label_refusals_are_one_line_exit_2(tmp_path, capsys, monkeypatch, argv, message) -> None:
    from cli.main import main

    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", threads=1)
    wh.publish_run(**night(wh, "g", D1, *first_night()))
    monkeypatch.delenv("ORAL_WAREHOUSE", raising=False)
    code = main(argv + ["--state-dir", str(state)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(message) and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert wh.query("SELECT count(*) AS n FROM class_labels").to_pylist() == [{"n": 0}]


def test_oral_label_and_classes_without_a_warehouse(tmp_path, capsys, monkeypatch) -> None:
    from cli.main import main

    monkeypatch.delenv("ORAL_WAREHOUSE", raising=False)
    for argv in (["label", "g:novel:1", "x"], ["classes"]):
        assert main(argv + ["--state-dir", str(tmp_path / "empty")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: no warehouse at ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "empty").exists()


def test_readme_analyst_sql_runs_on_a_labelled_warehouse(wh: Warehouse) -> None:
    """Every ```sql block of the analysts' page (docs/analysts.md, and of the README if it has
    any) runs here too (test_pipeline runs them after real training; this is the fast check of
    the typed columns and labels they use)."""
    import re
    from pathlib import Path

    two_nights(wh)
    wh.label_class("g:novel:3", "Late bloomers", by="ana")
    root = Path(__file__).resolve().parents[2]
    blocks = [block for doc in ("README.md", "docs/analysts.md")
              for block in re.findall(r"```sql\n(.*?)```", (root / doc).read_text(), re.S)]
    assert blocks
    for sql in blocks:
        for statement in [s.strip() for s in sql.split(";") if s.strip()]:
            wh.query(statement)


def test_oral_sql_csv_writes_every_table_and_view(tmp_path, capsys, monkeypatch) -> None:
    """Issue 48.1: ``oral sql --format csv`` failed (``ArrowInvalid: Unsupported Type: map``) on
    ``runs``, ``classes`` and the ``latest_*`` views; lists, structs and maps are JSON text now."""
    import csv
    import io
    import json

    from cli.main import main

    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", threads=1)
    _, run2 = two_nights(wh)
    wh.label_class("g:novel:3", "Late bloomers", by="ana")
    monkeypatch.delenv("ORAL_WAREHOUSE", raising=False)
    names = [r["table_name"] for r in wh.query(
        "SELECT table_name FROM information_schema.tables ORDER BY 1").to_pylist()]
    assert {"runs", "classes", "latest_runs", "latest_classes", "emerged_classes",
            "class_timeline"} <= set(names)
    rows = {}
    for name in names:
        code = main(["sql", f"SELECT * FROM {name}", "--format", "csv", "--state-dir", str(state)])
        out, err = capsys.readouterr()
        assert code == 0 and err == "", (name, err)
        rows[name] = list(csv.DictReader(io.StringIO(out)))
        assert len(rows[name]) == wh.query(f"SELECT count(*) AS n FROM {name}")["n"][0].as_py()
    run = next(r for r in rows["runs"] if r["run_id"] == run2)
    assert json.loads(run["scores"]) == {"all": 0.8, "known": 0.9, "novel": 0.7}
    cls = rows["latest_classes"][0]
    assert json.loads(cls["top_features"]) == [{"name": "f3", "lift": 2.5, "class_mean": 0.4}]
    assert isinstance(json.loads(cls["exemplars"]), list)
    assert json.loads(rows["emerged_classes"][0]["parents"]) == []


def test_an_unknown_graph_is_one_line_exit_2_in_every_analyst_command(tmp_path, capsys,
                                                                      monkeypatch) -> None:
    """Issue 48.4: ``oral classes --graph nope`` printed "no classes ... published yet" and
    exited 0 while ``oral report --graph nope`` exited 2. Every analyst command with --graph
    (classes, label, report) now says the same line, naming the graphs there are, exit 2."""
    from cli.main import main

    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", threads=1)
    two_nights(wh)
    wh.publish_run(**night(wh, "h", D1, {0: [f"h{i}" for i in range(30)]}, {0: "A"}))
    monkeypatch.delenv("ORAL_WAREHOUSE", raising=False)
    expected = (f"error: no published run of graph 'nope' in {state.resolve() / 'oral.duckdb'} "
                f"(graphs with runs: g, h)\n")
    for argv in (["classes", "--graph", "nope"], ["label", "g:novel:1", "x", "--graph", "nope"],
                 ["report", "--graph", "nope"]):
        capsys.readouterr()
        assert main(argv + ["--state-dir", str(state)]) == 2, argv
        out, err = capsys.readouterr()
        assert err == expected and out == "", (argv, err)
    for argv in (["classes", "--graph", "../x"], ["report", "--graph", "../x"]):
        assert main(argv + ["--state-dir", str(state)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --graph ../x: invalid graph name") and err.count("\n") == 1
    assert wh.query("SELECT count(*) AS n FROM class_labels").to_pylist() == [{"n": 0}]
    # a known graph, and no --graph at all, still list classes
    assert main(["classes", "--graph", "h", "--state-dir", str(state)]) == 0
    assert "known:A" in capsys.readouterr().out
    assert main(["classes", "--state-dir", str(state)]) == 0
