"""benchmarks.candidates_named: a seeded loop with ORAL_CANDIDATES_NAMED against its source,
on two small warehouses (the nights of tests/pipeline/test_warehouse.py)."""
from __future__ import annotations

import types

import numpy as np
import pyarrow as pa
import pytest

from benchmarks import candidates_named as cn
from tasks.publishing import write_run
from tasks.warehouse import Warehouse, make_run_id
from tests.pipeline.test_warehouse import D1, D2, first_night, night, second_night


def _loop(folder, named: bool, known_of_candidate: int = 1):
    """Two nights of graph ``g`` in ``folder/state/oral.duckdb``; the second night's candidate
    (class 4, 40 nodes) published under the known class ``known_of_candidate`` with ``named``."""
    wh = Warehouse(folder / "state" / "oral.duckdb", threads=1)
    wh.ensure_schema()
    wh.publish_run(**night(wh, "g", D1, *first_night()))
    parts = night(wh, "g", D2, *second_night())
    keys = np.array(parts["assignments"].column("class_key").to_pylist())
    table = parts["assignments"].append_column(
        "known_key", pa.array(np.where(keys == 4, known_of_candidate, 0)))
    found = {"run_id": make_run_id("g", D2, parts["run"]["content_hash"], "cfg1"),
             "result": types.SimpleNamespace(rows=parts["lineage_rows"], lineage_of={
                 c["class_key"]: c["lineage_id"] for c in parts["classes"]}),
             "classes": parts["classes"]}
    write_run(wh, parts["run"], parts["snapshot"], table, found, candidates_named=named)


def _snapshot(date, labels: dict[str, int]):
    ids = [f"n{i}" for i in range(340)]
    return types.SimpleNamespace(date=date, node_ids=pa.array(ids), class_names=["A", "B"],
                                 labels=np.array([labels.get(n, -1) for n in ids]))


@pytest.fixture
def snapshots(monkeypatch):
    """Both nights' snapshots: nodes n300-n309 (in the candidate) labelled B, n0-n9 labelled A;
    the split at seed 0 holds some of each out for validation."""
    labels = {f"n{i}": 1 for i in range(300, 310)} | {f"n{i}": 0 for i in range(10)}
    shots = {D1: _snapshot(D1, labels), D2: _snapshot(D2, labels)}
    from data_contracts import snapshots as snap

    monkeypatch.setattr(snap, "list_snapshots", lambda root, graph: [(d, d) for d in shots])
    monkeypatch.setattr(snap, "load_snapshot", lambda path: shots[path])
    return shots


def test_a_seeded_loop_with_the_switch_keeps_the_lineage_and_names_the_candidates(tmp_path,
                                                                                  snapshots):
    _loop(tmp_path / "source" / "g-sim1", named=False)
    _loop(tmp_path / "named" / "g-sim1", named=True)
    _, val = __import__("tasks.fitting", fromlist=["split_labelled"]).split_labelled(
        snapshots[D2].labels, 0)
    in_candidate = int((val[300:340] >= 0).sum())
    assert in_candidate > 0  # the test's split holds out some candidate nodes
    rows = cn.compare(tmp_path / "source", tmp_path / "named", seed=0)
    assert len(rows) == 1
    row = rows[0]
    assert row["same_lineage"] and row["same_classes"] and row["nights"] == 2
    # the first night's two candidates (120 nodes, published without the switch here) and the
    # second night's, all 40 under their known class
    assert row["candidate_nodes"] == 160 and row["named_known"] == 40
    assert row["validation_in_candidates"] == in_candidate
    assert row["validation_named_right"] == in_candidate and row["validation_right_before"] == 0
    lines = cn.table(rows)
    assert lines[-1].startswith("| all 1 loops | 2 | 1 of 1 |")


def test_a_wrong_known_class_and_a_different_lineage_are_seen(tmp_path, snapshots):
    _loop(tmp_path / "source" / "g-sim1", named=False)
    _loop(tmp_path / "named" / "g-sim1", named=True, known_of_candidate=0)
    row = cn.compare(tmp_path / "source", tmp_path / "named", seed=0)[0]
    assert row["validation_in_candidates"] > 0 and row["validation_named_right"] == 0
    # a loop whose lineage differs from its source's (one more night published) says so
    wh = Warehouse(tmp_path / "named" / "g-sim1" / "state" / "oral.duckdb", threads=1)
    wh.publish_run(**night(wh, "g", D2 + __import__("datetime").timedelta(days=1),
                           *second_night()))
    row = cn.compare(tmp_path / "source", tmp_path / "named", seed=0)[0]
    assert not row["same_lineage"] and "NO" in cn.table([row])[2]


def test_the_command_refuses_missing_folders(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cn.main(["--source", str(tmp_path / "nope"), "--states", str(tmp_path)])
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        cn.main(["--source", str(tmp_path), "--states", str(tmp_path / "empty")])
    assert "no seeded loop" in capsys.readouterr().err
