"""Large inference: predictions written to Parquet in row-group chunks, published to DuckDB by a
streaming INSERT ... SELECT inside the one publishing transaction, lineage on compact node keys
(the ensemble step of inference in node chunks: tests/core/test_inference.py). Fast, CPU only."""
from __future__ import annotations

import datetime as dt
import math
import tracemalloc
import types

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tasks import predictions, publishing, scoring
from tasks.warehouse.lineage import LineageConfig, track_lineage
from tasks.warehouse import Warehouse, WarehouseError, make_run_id

NAMES = ["alpha", "beta", "it's \"gamma\""]
TABLES = ["snapshots", "runs", "classes", "node_assignments", "class_lineage"]


def string_ids(lo: int, hi: int) -> pa.Array:
    """``n<i>`` node ids built by Arrow (no Python string per node)."""
    return pc.binary_join_element_wise("n", pc.cast(pa.array(np.arange(lo, hi)), pa.string()), "")


def fake_predictions(n: int, seed: int = 0, num_classes: int = 6, unassigned: bool = True):
    rng = np.random.default_rng(seed)
    class_id = rng.integers(0, num_classes, n)
    if unassigned and n:
        class_id[rng.random(n) < 0.02] = -1
    return class_id.astype(np.int64), rng.random(n)


def snapshot_like(node_ids, class_names=NAMES, x=None):
    n = len(node_ids)
    return types.SimpleNamespace(node_ids=node_ids, class_names=list(class_names), num_nodes=n,
                                 x=np.ones((n, 4), np.float32) if x is None else x,
                                 feature_names=None, truth=None, truth_names=None)


def dump(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}
    finally:
        con.close()


# ------------------------------------------------------------------------------ the writer
@pytest.mark.parametrize("chunk", [1, 7, 100, 299, 300, 1000])
def test_chunked_writer_gives_the_one_piece_table(tmp_path, chunk):
    n = 300
    ids = string_ids(0, n)
    class_id, conf = fake_predictions(n)
    path = predictions.write_predictions(tmp_path / "p.parquet", ids, class_id, conf, 3, NAMES,
                                   chunk_size=chunk)
    expected = predictions.predictions_table(snapshot_like(ids), class_id, conf, 3)
    back = pq.read_table(path)
    assert back.schema == expected.schema and back.equals(expected)
    assert pq.ParquetFile(path).metadata.num_row_groups == math.ceil(n / chunk)
    # the same file as the one-piece write of earlier versions reads back
    pq.write_table(expected, tmp_path / "one.parquet")
    assert pq.read_table(tmp_path / "one.parquet").equals(back)
    # names come from the lookup: known classes only, novel and unassigned nodes have none
    names = back["class_name"].to_numpy(zero_copy_only=False)
    known = (class_id >= 0) & (class_id < 3)
    assert [NAMES[k] for k in class_id[known][:20]] == list(names[known][:20])
    assert back["class_name"].null_count == int((~known).sum())
    assert back["is_novel"].to_numpy().tolist() == (class_id >= 3).tolist()


def test_writer_takes_torch_tensors_integer_ids_and_no_rows(tmp_path):
    import torch

    n = 1000
    ids = pa.array(np.arange(10**12, 10**12 + n, dtype=np.int64))
    class_id, conf = fake_predictions(n, seed=1)
    path = predictions.write_predictions(tmp_path / "p.parquet", ids, torch.from_numpy(class_id),
                                   torch.from_numpy(conf).float(), 3, NAMES, chunk_size=64)
    back = pq.read_table(path)
    assert back.schema.field("node_id").type == pa.int64()
    assert back.equals(predictions.predictions_table(snapshot_like(ids), class_id,
                                               torch.from_numpy(conf).float(), 3))
    # numpy node ids work too
    path2 = predictions.write_predictions(tmp_path / "q.parquet", np.arange(10**12, 10**12 + n),
                                    class_id, torch.from_numpy(conf).float(), 3, NAMES)
    assert pq.read_table(path2).equals(back)
    # no nodes: a valid file with the schema
    empty = predictions.write_predictions(tmp_path / "e.parquet", string_ids(0, 0),
                                    np.zeros(0, np.int64), np.zeros(0), 3, NAMES)
    assert pq.read_table(empty).num_rows == 0
    assert pq.read_schema(empty).names == ["node_id", "class_key", "class_name", "is_novel",
                                           "confidence"]
    with pytest.raises(ValueError, match="one class id"):
        predictions.write_predictions(tmp_path / "x.parquet", ids, class_id[:-1], conf, 3, NAMES)
    # the night's answer adds every node's known class (known_key), in every chunk
    known = np.arange(n) % 3
    path3 = predictions.write_predictions(tmp_path / "k.parquet", ids, class_id,
                                          torch.from_numpy(conf).float(), 3, NAMES,
                                          chunk_size=64, known_key=torch.from_numpy(known))
    with_known = pq.read_table(path3)
    assert with_known.drop(["known_key"]).equals(back)
    assert with_known["known_key"].to_pylist() == known.tolist()
    with pytest.raises(ValueError, match="one known key per node"):
        predictions.write_predictions(tmp_path / "x.parquet", ids, class_id, conf, 3, NAMES,
                                      known_key=known[:-1])
    with pytest.raises(ValueError, match="chunk_size"):
        predictions.write_predictions(tmp_path / "x.parquet", ids, class_id, conf, 3, NAMES,
                                chunk_size=0)


def test_writer_failure_mid_file_keeps_the_previous_file(tmp_path, monkeypatch):
    n = 500
    ids = string_ids(0, n)
    class_id, conf = fake_predictions(n)
    path = predictions.write_predictions(tmp_path / "p.parquet", ids, class_id, conf, 3, NAMES)
    before = path.read_bytes()
    real = pq.ParquetWriter.write_table
    calls = []

    def full(self, table, *args, **kwargs):
        calls.append(table.num_rows)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, table, *args, **kwargs)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    with pytest.raises(OSError, match="No space left"):
        predictions.write_predictions(path, ids, 1 - class_id, conf, 3, NAMES, chunk_size=100)
    assert calls == [100, 100, 100]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.parquet"]  # no temporary left


def test_node_keys_are_compact_distinct_strings():
    index = np.array([0, 1, 65535, 65536, 2**20 + 3, 2**32 - 1])
    keys = publishing.node_keys(index)
    assert keys.dtype == np.dtype("U2") and keys.nbytes == 8 * index.size
    assert np.unique(keys).size == index.size
    assert all(len(k) == 2 and k.encode("utf-8") for k in keys.tolist())  # valid strings
    assert np.array_equal(keys, publishing.node_keys(index.copy()))
    with pytest.raises(ValueError):
        publishing.node_keys(np.array([2**32]))


# ----------------------------------------------------------------------------- publishing
def nights():
    """Three nights of 2000 nodes; the node set moves by 300 a night, a novel class emerges on
    the second night and one merges into another on the third."""
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 6, 3000)
    for night in range(3):
        lo = 300 * night
        cid = truth[lo:lo + 2000].copy()
        if night == 0:
            cid[cid == 5] = 4
        if night == 2:
            cid[cid == 3] = 2
        noisy = rng.random(2000) < 0.05
        cid = np.where(noisy, rng.integers(0, 6, 2000), cid).astype(np.int64)
        yield night, string_ids(lo, lo + 2000), cid, rng.random(2000)


def previous_behaviour(wh: Warehouse, table: pa.Table, classes: list[dict], graph: str,
                       date: dt.date, run_id: str):
    """What publishing did before chunking, on a small run: lineage from member node id strings
    (the warehouse's string member lists, the table's ids per class), and one node_assignments
    row per node with its class's lineage id and name."""
    previous = wh.previous_run(graph, date)  # member lists of Python strings
    ids = table["node_id"].cast(pa.string()).to_pylist()
    keys = table["class_key"].to_pylist()
    members: dict[int, list] = {}
    for node, key in zip(ids, keys):
        if key >= 0:
            members.setdefault(key, []).append(node)
    lineage = track_lineage(previous, members, graph=graph, snapshot_date=date,
                            current_names={c["class_key"]: c["class_name"] for c in classes},
                            max_novel_index=wh.max_novel_index(graph, before_date=date,
                                                               exclude_run_id=run_id),
                            config=LineageConfig())
    name = {c["class_key"]: c["class_name"] for c in classes}
    rows = sorted((run_id, node, key, lineage.lineage_of[key], name[key], novel, conf)
                  for node, key, novel, conf in zip(ids, keys, table["is_novel"].to_pylist(),
                                                    table["confidence"].to_pylist()))
    return lineage, rows


def run_of(night: int) -> dict:
    return {"graph": "g", "snapshot_date": dt.date(2026, 6, 1 + night),
            "content_hash": f"h{night}", "config_hash": "cfg",
            "published_at": dt.datetime(2026, 6, 10)}


@pytest.mark.parametrize("chunk", [1000, 333])
def test_chunked_publish_matches_the_previous_behaviour(tmp_path, chunk):
    from_file = Warehouse(tmp_path / "file.duckdb", threads=1, memory_limit="64MB")
    from_table = Warehouse(tmp_path / "table.duckdb", threads=1)
    for night, ids, class_id, conf in nights():
        # unassigned nodes have no classes row (publishing refuses them): leave them out here
        keep = class_id >= 0
        ids, class_id, conf = ids.filter(pa.array(keep)), class_id[keep], conf[keep]
        path = predictions.write_predictions(tmp_path / f"p{night}.parquet", ids, class_id, conf, 3,
                                       NAMES, chunk_size=chunk)
        table = pq.read_table(path)
        classes = scoring.describe_classes(snapshot_like(ids), table, 3)
        run = run_of(night)
        run_id = make_run_id("g", run["snapshot_date"], run["content_hash"], "cfg")
        lineage, rows = previous_behaviour(from_file, table, classes, "g", run["snapshot_date"],
                                           run_id)
        out = publishing.publish(from_file, run, {"nodes": len(ids)}, path, [dict(c) for c in classes],
                            "g", run["snapshot_date"])
        publishing.publish(from_table, run, {"nodes": len(ids)}, table, [dict(c) for c in classes],
                      "g", run["snapshot_date"])
        assert out["lineage"] == lineage.lineage_of
        assert out["statuses"] == {r.lineage_id: r.status for r in lineage.rows}
        got = from_file.query("SELECT * FROM node_assignments WHERE run_id = ? "
                              "ORDER BY node_id", [run_id])
        assert sorted(tuple(r.values()) for r in got.to_pylist()) == rows
        lin = from_file.query("SELECT lineage_id, class_key, status, size, previous_size "
                              "FROM class_lineage WHERE run_id = ? ORDER BY lineage_id", [run_id])
        assert lin.to_pylist() == sorted(
            ({"lineage_id": r.lineage_id, "class_key": r.class_key, "status": r.status,
              "size": r.size, "previous_size": r.previous_size} for r in lineage.rows),
            key=lambda r: r["lineage_id"])
    assert from_file.query("SELECT current_setting('memory_limit') AS m")["m"][0].as_py() \
        .startswith("61.0 MiB")  # 64 MB
    statuses = {r["status"] for r in
                from_file.query("SELECT status FROM class_lineage").to_pylist()}
    assert {"emerged", "merged"} <= statuses  # the nights did exercise lineage
    assert dump(from_file.path) == dump(from_table.path)
    # republishing the last night from the file leaves identical rows
    before = dump(from_file.path)
    publishing.publish(from_file, run, {"nodes": len(ids)}, path, [dict(c) for c in classes], "g",
                  run["snapshot_date"])
    assert dump(from_file.path) == before


def broken_file(tmp_path, name: str, ids: pa.Array, class_id, conf, *, last: dict) -> str:
    """A predictions file of row groups of 250 rows whose last row group is altered."""
    table = predictions.predictions_table(snapshot_like(ids), class_id, conf, 3)
    n = table.num_rows
    cols = {c: table[c] for c in table.column_names}
    for col, (pos, value) in last.items():
        values = cols[col].to_pylist()  # small test data only
        values[n - 1 - pos] = value
        cols[col] = pa.array(values, type=table.schema.field(col).type)
    path = tmp_path / name
    pq.write_table(pa.table(cols), path, row_group_size=250)
    return str(path)


def test_failure_mid_insert_leaves_nothing_published(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path / "wh.duckdb", threads=1)
    data = list(nights())
    for night in (0, 1):
        _, ids, class_id, conf = data[night]
        class_id = np.maximum(class_id, 0)
        path = predictions.write_predictions(tmp_path / f"p{night}.parquet", ids, class_id, conf, 3,
                                       NAMES, chunk_size=250)
        table = pq.read_table(path)
        if night == 0:
            publishing.publish(wh, run_of(0), {"nodes": 2000}, path,
                          scoring.describe_classes(snapshot_like(ids), table, 3), "g",
                          run_of(0)["snapshot_date"])
    before = dump(wh.path)
    run1 = make_run_id("g", run_of(1)["snapshot_date"], "h1", "cfg")
    classes = scoring.describe_classes(snapshot_like(ids), table, 3)

    def attempt(source, error, match):
        with pytest.raises(error, match=match):
            publishing.publish(wh, run_of(1), {"nodes": 2000}, source, [dict(c) for c in classes],
                          "g", run_of(1)["snapshot_date"])
        assert dump(wh.path) == before and not wh.run_exists(run1)

    # DuckDB fails inside the streaming insert, after earlier row groups went in
    attempt(broken_file(tmp_path, "null-novel.parquet", ids, class_id, conf,
                        last={"is_novel": (3, None)}), duckdb.ConstraintException, "NOT NULL")
    # rows the checks refuse, found after the insert ran: the whole transaction rolls back
    attempt(broken_file(tmp_path, "dup.parquet", ids, class_id, conf,
                        last={"node_id": (0, "n301")}), WarehouseError, "repeat.*n301")
    unknown = broken_file(tmp_path, "unknown.parquet", ids, class_id, conf,
                          last={"class_key": (5, 99)})
    attempt(unknown, WarehouseError, "lineage row .* names class 99")  # lineage refuses first
    with pytest.raises(WarehouseError, match=r"no classes row: \[99\]"):  # and the insert too
        wh.publish_run(run_of(1), None, unknown,
                       [c | {"lineage_id": f"lin{c['class_key']}"} for c in classes])
    assert dump(wh.path) == before and not wh.run_exists(run1)
    attempt(broken_file(tmp_path, "null-id.parquet", ids, class_id, conf,
                        last={"node_id": (1, None)}), WarehouseError, "null node ids")
    attempt(str(tmp_path / "missing.parquet"), WarehouseError, "cannot read")

    # a failure injected right after the streaming insert (lineage insert next)
    seen = []

    def boom(con, run_row):
        seen.append(con.execute("SELECT count(*) FROM node_assignments WHERE run_id = ?",
                                [run_row["run_id"]]).fetchall()[0][0])
        raise RuntimeError("injected after the assignments insert")
    monkeypatch.setattr(Warehouse, "_insert_lineage", staticmethod(boom))
    attempt(path, RuntimeError, "injected")
    assert seen == [2000]
    monkeypatch.undo()
    # and the same run then publishes cleanly
    publishing.publish(wh, run_of(1), {"nodes": 2000}, path, [dict(c) for c in classes], "g",
                  run_of(1)["snapshot_date"])
    assert wh.query("SELECT count(*) AS n FROM node_assignments WHERE run_id = ?",
                    [run1]).to_pylist() == [{"n": 2000}]


def test_paths_with_pattern_characters_are_read_literally(tmp_path):
    ids = string_ids(0, 400)
    class_id, conf = fake_predictions(400, unassigned=False)
    odd = tmp_path / "we*rd[1]?"
    odd.mkdir()
    path = predictions.write_predictions(odd / "p.parquet", ids, class_id, conf, 3, NAMES,
                                   chunk_size=100)
    decoy = tmp_path / "wexrd1z"  # what the path would match as a pattern
    decoy.mkdir()
    predictions.write_predictions(decoy / "p.parquet", string_ids(1000, 1100), class_id[:100],
                            conf[:100], 3, NAMES)
    wh = Warehouse(tmp_path / "wh.duckdb", threads=1)
    table = pq.read_table(path)
    classes = scoring.describe_classes(snapshot_like(ids), table, 3)
    publishing.publish(wh, run_of(0), None, path, classes, "g", run_of(0)["snapshot_date"])
    publishing.publish(wh, run_of(1), None, path, classes, "g", run_of(1)["snapshot_date"])
    assert wh.query("SELECT count(*) AS n FROM node_assignments").to_pylist() == [{"n": 800}]
    # the same classes on the second night: the known ones persist, the novel one (a
    # candidate the first night) is confirmed
    assert {r["status"] for r in wh.query("SELECT status FROM class_lineage WHERE "
                                          "snapshot_date = ? AND lineage_id LIKE 'known:%'",
                                          [run_of(1)["snapshot_date"]]).to_pylist()} == {
        "persisting"}
    assert {r["status"] for r in wh.query("SELECT status FROM class_lineage WHERE "
                                          "snapshot_date = ? AND lineage_id LIKE '%:novel:%'",
                                          [run_of(1)["snapshot_date"]]).to_pylist()} == {
        "emerged"}


# --------------------------------------------------------------------------------- memory
def _traced(fn):
    """Run ``fn``; return (its tracemalloc peak: numpy buffers and Python objects, the Arrow
    peak of a proxy pool in front of the default one: Arrow buffers allocated from Python)."""
    proxy = pa.proxy_memory_pool(pa.default_memory_pool())
    default = pa.default_memory_pool()
    pa.set_memory_pool(proxy)
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1], proxy.max_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(default)


def test_memory_stays_bounded_by_the_chunk(tmp_path):
    """300k nodes, chunks of 10k rows. Deterministic quantities (allocation sizes), not RSS;
    DuckDB's own memory is outside Python's and Arrow's accounting: the benchmark
    (benchmarks/large_inference.py) measures the whole process's peak RSS."""
    n, chunk = 300_000, 10_000
    ids = string_ids(0, n)
    class_id, conf = fake_predictions(n, unassigned=False)
    full = predictions.predictions_table(snapshot_like(ids), class_id, conf, 3)
    full_bytes = full.nbytes  # ~10 MB
    del full
    path = tmp_path / "p.parquet"

    def write(size):
        return lambda: predictions.write_predictions(path, ids, class_id, conf, 3, NAMES,
                                               chunk_size=size)
    py_peak, arrow_peak = _traced(write(chunk))
    assert py_peak + arrow_peak < full_bytes / 8, (py_peak, arrow_peak, full_bytes)
    # the measurement does see a whole-table write (the bound is not vacuous)
    py_one, arrow_one = _traced(write(n))
    assert py_one + arrow_one > full_bytes / 4, (py_one, arrow_one, full_bytes)
    write(chunk)()

    classes = scoring.describe_classes(snapshot_like(ids, x=np.ones((n, 1), np.float32)),
                                     pq.read_table(path), 3)
    wh = Warehouse(tmp_path / "wh.duckdb", threads=1)
    run0 = {**run_of(0), "run_id": make_run_id("g", run_of(0)["snapshot_date"], "h0", "cfg")}
    lineage = track_lineage(None, {c["class_key"]: [] for c in classes}, graph="g",
                            snapshot_date=run0["snapshot_date"])
    for c in classes:
        c["lineage_id"] = lineage.lineage_of[c["class_key"]]
    # the DuckDB insert streams from the file: nothing per node on the Python or Arrow side
    py_peak, arrow_peak = _traced(lambda: wh.publish_run(run0, None, str(path), classes, []))
    assert py_peak + arrow_peak < full_bytes / 20, (py_peak, arrow_peak, full_bytes)
    assert wh.query("SELECT count(*) AS n FROM node_assignments").to_pylist() == [{"n": n}]

    # lineage against that run: numpy int and 8-byte keys per node, no Python string per node
    # (one-piece lineage on node id strings peaked near 600 bytes per node here)
    ids2 = string_ids(5_000, n + 5_000)
    path2 = predictions.write_predictions(tmp_path / "p2.parquet", ids2, class_id, conf, 3, NAMES,
                                    chunk_size=chunk)
    py_peak, arrow_peak = _traced(lambda: publishing.publish(
        wh, run_of(1), None, path2, [dict(c) for c in classes], "g", run_of(1)["snapshot_date"]))
    assert (py_peak + arrow_peak) / n < 300, (py_peak, arrow_peak)
    assert wh.query("SELECT count(*) AS n FROM node_assignments").to_pylist() == [{"n": 2 * n}]
