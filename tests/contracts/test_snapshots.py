"""The snapshot format (write -> load roundtrip, selection, atomic writes, errors, hashing) and
the dataset importer (a small .npz always; Cora when ../shared/datasets is present)."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from data_contracts import snapshots as snap
from data_contracts.importers import import_dataset, snapshot_summary
from cli.main import main


def shared_datasets_dir() -> Path:
    env = os.environ.get("ORAL_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "datasets"


CORA = shared_datasets_dir() / "cora" / "linqs" / "cora.content"
needs_cora = pytest.mark.skipif(not CORA.is_file(),
                                reason=f"real Cora files not found at {CORA} "
                                       "(../shared/datasets or $ORAL_DATA_DIR)")


pytestmark = pytest.mark.usefixtures("offline")  # tests/conftest.py: no network, no ~/.cache


def small_tables(ids, weight: bool = False):
    """Four nodes (two labelled), three edges, an extra column, feature names and truth."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    nodes = snap.nodes_table(ids, x, ["beta", None, "alpha", None],
                             extra={"age": [1, 2, 3, 4], "city": ["a", "b", "c", "d"]},
                             feature_names=["f0", "f1", "f2"])
    edges = snap.edges_table([ids[0], ids[1], ids[3]], [ids[1], ids[2], ids[0]],
                             [0.5, 1.0, 2.0] if weight else None)
    truth = snap.truth_table([ids[2], ids[0], ids[1], ids[3]], ["alpha", "beta", "gamma", "beta"])
    return x, nodes, edges, truth


@pytest.mark.parametrize("ids", [["n-a", "n-b", "n-c", "n-d"], [1000, 7, -3, 2**40]],
                         ids=["string", "int64"])
def test_roundtrip(tmp_path: Path, ids) -> None:
    x, nodes, edges, truth = small_tables(ids, weight=isinstance(ids[0], int))
    path = snap.write_snapshot(tmp_path, "g1", "2026-01-05", nodes, edges, truth)
    assert path == tmp_path / "g1" / "snapshot=2026-01-05"
    s = snap.load_snapshot(path)
    assert s.date == dt.date(2026, 1, 5)
    assert s.node_ids.to_pylist() == ids
    if isinstance(ids[0], int):
        assert s.node_ids.type == pa.int64()
        np.testing.assert_allclose(s.edge_weight, [0.5, 1.0, 2.0])
    else:
        assert s.edge_weight is None
    np.testing.assert_array_equal(s.x, x)
    assert s.x.dtype == np.float32
    np.testing.assert_array_equal(s.edge_index, [[0, 1, 3], [1, 2, 0]])
    assert s.class_names == ["alpha", "beta"]                 # sorted label strings
    np.testing.assert_array_equal(s.labels, [1, -1, 0, -1])
    assert s.extra.column_names == ["age", "city"]
    assert s.extra.column("city").to_pylist() == ["a", "b", "c", "d"]
    assert s.feature_names == ["f0", "f1", "f2"]
    assert s.truth_names == ["alpha", "beta", "gamma"]
    np.testing.assert_array_equal(s.truth, [1, 2, 0, 1])      # mapped by id, not by row
    assert len(s.content_hash) == 64


def test_roundtrip_without_truth_or_labels(tmp_path: Path) -> None:
    x = np.ones((2, 2), np.float32)
    path = snap.write_snapshot(tmp_path, "g", "2026-01-01", snap.nodes_table(["a", "b"], x),
                               snap.edges_table(["a"], ["b"]))
    s = snap.load_snapshot(path)
    assert s.truth is None and s.truth_names is None and s.feature_names is None
    assert s.class_names == [] and (s.labels == -1).all()


def test_unknown_edge_endpoint_is_an_error(tmp_path: Path) -> None:
    x = np.ones((2, 2), np.float32)
    path = snap.write_snapshot(tmp_path, "g", "2026-01-01", snap.nodes_table(["a", "b"], x),
                               snap.edges_table(["a"], ["zzz"]))
    with pytest.raises(snap.SnapshotError, match="edges.parquet.*unknown nodes"):
        snap.load_snapshot(path)


def write_dates(root: Path, graph: str, dates: list[str]) -> None:
    _, nodes, edges, truth = small_tables(["a", "b", "c", "d"])
    for d in dates:
        snap.write_snapshot(root, graph, d, nodes, edges, truth)


def test_select_snapshots(tmp_path: Path) -> None:
    write_dates(tmp_path, "g", ["2026-01-03", "2026-01-01", "2026-01-02", "2026-01-10"])
    base = tmp_path / "g"
    # a writer's temporary folder (even one with a later date), a stray folder and a file
    # (a misnamed snapshot=... folder is an error: test_misnamed_snapshot_entries_are_named)
    (base / ".tmp-snapshot=2026-12-31-abcd1234").mkdir()
    (base / ".tmp-snapshot=2026-12-31-abcd1234" / snap.NODES).write_bytes(b"half")
    (base / "old-exports").mkdir()
    (base / "notes.txt").write_text("x")
    assert snap.select_snapshots(tmp_path, "g") == [base / "snapshot=2026-01-10"]
    assert snap.select_snapshots(tmp_path, "g", date="2026-01-02") == [base / "snapshot=2026-01-02"]
    assert snap.select_snapshots(tmp_path, "g", start="2026-01-02", end="2026-01-05") == [
        base / "snapshot=2026-01-02", base / "snapshot=2026-01-03"]
    assert [p.name for p in snap.select_snapshots(tmp_path, "g", start="2026-01-03")] == [
        "snapshot=2026-01-03", "snapshot=2026-01-10"]
    assert len(snap.select_snapshots(tmp_path, "g", end="2026-01-02")) == 2
    assert [d for d, _ in snap.list_snapshots(tmp_path, "g")] == [
        dt.date(2026, 1, 1), dt.date(2026, 1, 2), dt.date(2026, 1, 3), dt.date(2026, 1, 10)]
    with pytest.raises(snap.SnapshotError, match="no snapshot of 'g' dated 2026-01-04"):
        snap.select_snapshots(tmp_path, "g", date="2026-01-04")
    with pytest.raises(snap.SnapshotError, match="does not exist"):
        snap.select_snapshots(tmp_path, "other")
    with pytest.raises(snap.SnapshotError, match="invalid snapshot date"):
        snap.select_snapshots(tmp_path, "g", date="2026-13-01")


@pytest.mark.parametrize("name,why", [
    ("snapshot=2026-13-45", "not snapshot=YYYY-MM-DD"),
    ("snapshot=20260101", "not snapshot=YYYY-MM-DD"),      # ISO basic format: 2026-01-01 twice
    ("snapshot=2026-W01-4", "not snapshot=YYYY-MM-DD"),    # ISO week date
    ("snapshot=2026-01-1", "not snapshot=YYYY-MM-DD"),
    ("snapshot=", "not snapshot=YYYY-MM-DD"),
    ("snapshot=2026-01-05", "a file, not a folder"),
])
def test_misnamed_snapshot_entries_are_named(tmp_path: Path, name: str, why: str) -> None:
    """Issue 21.9. One spelling, snapshot=YYYY-MM-DD: anything else under the graph folder that
    starts with snapshot= is an error naming it (before, it was skipped silently, and
    snapshot=20260101 was read as 2026-01-01 and won over snapshot=2026-01-01); writers' hidden
    .tmp-* folders stay ignored."""
    write_dates(tmp_path, "g", ["2026-01-01", "2026-01-02"])
    base = tmp_path / "g"
    (base / ".tmp-snapshot=20261231-abcd1234").mkdir()
    if why.startswith("a file"):
        (base / name).write_text("x")
    else:
        (base / name).mkdir()
    for call in (lambda: snap.list_snapshots(tmp_path, "g"),
                 lambda: snap.select_snapshots(tmp_path, "g"),
                 lambda: snap.select_snapshots(tmp_path, "g", date="2026-01-01")):
        with pytest.raises(snap.SnapshotError) as err:
            call()
        message = str(err.value)
        assert repr(name) in message and why in message and str(base) in message
        assert "\n" not in message
    (base / name).rmdir() if (base / name).is_dir() else (base / name).unlink()
    assert [d.isoformat() for d, _ in snap.list_snapshots(tmp_path, "g")] == ["2026-01-01",
                                                                              "2026-01-02"]


def test_dates_have_one_spelling() -> None:
    assert snap.parse_date("2026-01-31") == dt.date(2026, 1, 31)
    for text in ("20260131", "2026-W05-6", "2026-1-31", "2026-02-30", "٢٠٢٦-٠١-٣١", " 2026-01-31"):
        with pytest.raises(snap.SnapshotError, match="expected YYYY-MM-DD"):
            snap.parse_date(text)
    with pytest.raises(snap.SnapshotError):
        snap.snapshot_date("/x/g/snapshot=20260131")


def test_atomic_write_leaves_no_temporary_folder(tmp_path: Path, monkeypatch) -> None:
    write_dates(tmp_path, "g", ["2026-01-01"])
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == ["snapshot=2026-01-01"]
    with pytest.raises(snap.SnapshotError, match="already exists"):
        write_dates(tmp_path, "g", ["2026-01-01"])

    real = pq.write_table

    def fail_on_edges(table, where, *args, **kwargs):
        if str(where).endswith(snap.EDGES):
            raise OSError("disk full")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(snap.pq, "write_table", fail_on_edges)
    with pytest.raises(OSError, match="disk full"):
        write_dates(tmp_path, "g", ["2026-01-02"])
    # neither a half-written snapshot nor a temporary folder is left behind
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == ["snapshot=2026-01-01"]
    # replacing an existing snapshot also goes through a temporary folder
    monkeypatch.setattr(snap.pq, "write_table", real)
    _, nodes, edges, _ = small_tables(["p", "q", "r", "s"])
    snap.write_snapshot(tmp_path, "g", "2026-01-01", nodes, edges, overwrite=True)
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == ["snapshot=2026-01-01"]
    s = snap.load_snapshot(tmp_path / "g" / "snapshot=2026-01-01")
    assert s.node_ids.to_pylist() == ["p", "q", "r", "s"] and s.truth is None


@pytest.mark.parametrize("name", ["..", "a/b", "a\\b", "a'b", 'a"b', "", ".hidden", "x" * 65,
                                  "a..b", "../etc", "a b", None])
def test_invalid_graph_names_rejected(tmp_path: Path, name) -> None:
    with pytest.raises(snap.SnapshotError, match="invalid graph name"):
        snap.check_graph_name(name)
    _, nodes, edges, _ = small_tables(["a", "b", "c", "d"])
    with pytest.raises(snap.SnapshotError):
        snap.write_snapshot(tmp_path, name, "2026-01-01", nodes, edges)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["cora", "Amazon-Photo_2", "g.v1", "x" * 64])
def test_valid_graph_names(name) -> None:
    assert snap.check_graph_name(name) == name


@pytest.mark.parametrize("victim", [snap.NODES, snap.EDGES, snap.TRUTH])
def test_missing_or_truncated_file_names_the_file(tmp_path: Path, victim: str) -> None:
    write_dates(tmp_path, "g", ["2026-01-01"])
    path = tmp_path / "g" / "snapshot=2026-01-01"
    data = (path / victim).read_bytes()
    (path / victim).write_bytes(data[: len(data) // 2])
    with pytest.raises(snap.SnapshotError, match=f"{victim}: not a readable Parquet file"):
        snap.load_snapshot(path)
    (path / victim).unlink()
    if victim == snap.TRUTH:   # truth is optional
        assert snap.load_snapshot(path).truth is None
    else:
        with pytest.raises(snap.SnapshotError, match=f"{victim}: file is missing"):
            snap.load_snapshot(path)
    with pytest.raises(snap.SnapshotError, match="snapshot folder does not exist"):
        snap.load_snapshot(tmp_path / "g" / "snapshot=2030-01-01")


def test_content_hash_follows_the_bytes(tmp_path: Path) -> None:
    write_dates(tmp_path, "g", ["2026-01-01", "2026-01-02"])
    first = snap.load_snapshot(tmp_path / "g" / "snapshot=2026-01-01").content_hash
    same = snap.load_snapshot(tmp_path / "g" / "snapshot=2026-01-02").content_hash
    assert first == same                      # identical files, identical hash
    path = tmp_path / "g" / "snapshot=2026-01-02"
    for name in (snap.EDGES, snap.TRUTH):
        table = pq.read_table(path / name)
        flipped = pa.concat_tables([table.slice(1), table.slice(0, 1)])   # same rows, moved
        pq.write_table(flipped, path / name)
        changed = snap.load_snapshot(path).content_hash
        assert changed != first
        first = changed
    (path / snap.TRUTH).unlink()              # removing the optional file changes it too
    assert snap.load_snapshot(path).content_hash != first
    assert snap.read_snapshot_files(path).sizes.keys() == {snap.NODES, snap.EDGES}


# ---------------------------------------------------------------------------- importer
def tiny_npz(path: Path) -> Path:
    """An 8-node, 4-class gnn-benchmark archive (no class names)."""
    rows = np.array([0, 1, 2, 3, 4, 5, 6, 0])
    cols = np.array([1, 2, 3, 4, 5, 6, 7, 7])
    adj = sp.csr_matrix((np.ones(8), (rows, cols)), shape=(8, 8))
    attr = sp.csr_matrix(np.eye(8, 5, dtype=np.float32))
    np.savez(path, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, attr_data=attr.data, attr_indices=attr.indices,
             attr_indptr=attr.indptr, attr_shape=attr.shape,
             labels=np.array([0, 0, 1, 1, 2, 2, 3, 3]))
    return path


def test_import_small_npz(tmp_path: Path) -> None:
    source = tiny_npz(tmp_path / "My-Graph.npz")
    path = import_dataset(source, tmp_path / "out", date="2026-02-01", seed=1)
    assert path == tmp_path / "out" / "mygraph" / "snapshot=2026-02-01"   # canonical name
    s = snap.load_snapshot(path)
    assert s.node_ids.to_pylist() == list(range(8))
    assert s.truth_names == ["class_00", "class_01", "class_02", "class_03"]
    np.testing.assert_array_equal(s.truth, [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(s.x, np.eye(8, 5, dtype=np.float32))
    # each undirected edge once
    assert sorted(map(tuple, s.edge_index.T.tolist())) == [
        (0, 1), (0, 7), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
    # floor(0.8 * 4) = 3 known classes; 2 nodes each: floor(0.7*2) + floor(0.15*2) = 1 labelled
    assert set(s.class_names) <= {"class_00", "class_01", "class_02"}
    assert (s.labels >= 0).sum() == 3
    labelled_truth = [s.truth_names[t] for t in s.truth[s.labels >= 0]]
    assert sorted(labelled_truth) == ["class_00", "class_01", "class_02"]
    assert [s.class_names[c] for c in s.labels[s.labels >= 0]] == [
        s.truth_names[t] for t in s.truth[s.labels >= 0]]
    # explicit known classes, graph name; an existing snapshot is not replaced silently
    path2 = import_dataset(source, tmp_path / "out", graph="g2", date="2026-02-01",
                           known_classes=[3])
    assert snap.load_snapshot(path2).class_names == ["class_03"]
    with pytest.raises(snap.SnapshotError, match="already exists"):
        import_dataset(source, tmp_path / "out", graph="g2", date="2026-02-01")
    with pytest.raises(ValueError, match="known_classes"):
        import_dataset(source, tmp_path / "out", graph="g3", known_classes=[0, 1, 2, 3])
    with pytest.raises(snap.SnapshotError, match="invalid graph name"):
        import_dataset(source, tmp_path / "out", graph="../up")
    # the date defaults to today
    today = import_dataset(source, tmp_path / "out", graph="g4")
    assert today.name == f"snapshot={dt.date.today().isoformat()}"


@pytest.fixture(scope="module")
def cora_snapshot(tmp_path_factory) -> Path:
    if not CORA.is_file():
        pytest.skip(f"real Cora files not found at {CORA}")
    root = tmp_path_factory.mktemp("cora")
    return import_dataset("cora", root, date="2026-03-01", seed=0,
                          data_dir=shared_datasets_dir())


@needs_cora
@pytest.mark.slow
def test_import_cora(cora_snapshot: Path) -> None:
    s = snap.load_snapshot(cora_snapshot)
    assert cora_snapshot.parent.name == "cora"
    assert s.num_nodes == 2708 and s.x.shape == (2708, 1433)
    assert s.node_ids.type == pa.int64()                     # LINQS paper ids
    assert 31336 in set(s.node_ids.to_pylist())
    assert s.edge_index.shape[1] == 5278                     # each undirected pair once
    assert s.truth_names == ["Case_Based", "Genetic_Algorithms", "Neural_Networks",
                             "Probabilistic_Methods", "Reinforcement_Learning", "Rule_Learning",
                             "Theory"]
    assert (s.truth >= 0).all()                              # truth covers every node
    assert s.class_names == s.truth_names[:5]                # labels only of 5 known classes
    labelled = s.labels >= 0
    assert np.array_equal(np.asarray(s.class_names)[s.labels[labelled]],
                          np.asarray(s.truth_names)[s.truth[labelled]])
    known_nodes = s.truth < 5
    assert not (labelled & ~known_nodes).any()
    assert 0.83 < labelled.sum() / known_nodes.sum() < 0.86
    summary = snapshot_summary(cora_snapshot)
    assert summary == {"path": str(cora_snapshot), "nodes": 2708, "edges": 5278,
                       "labelled": int(labelled.sum()), "label_classes": 5, "classes": 7}


@needs_cora
@pytest.mark.slow
def test_cli_import_cora(tmp_path: Path, capsys) -> None:
    rc = main(["snapshots", "import", "--dataset", "cora", "--out", str(tmp_path),
               "--date", "2026-03-02", "--known-classes", "0,1,2", "--seed", "3",
               "--data-dir", str(shared_datasets_dir())])
    out = capsys.readouterr().out
    assert rc == 0
    assert "snapshot=2026-03-02" in out and "2708 nodes" in out and "5278 edges" in out
    s = snap.load_snapshot(tmp_path / "cora" / "snapshot=2026-03-02")
    assert s.class_names == ["Case_Based", "Genetic_Algorithms", "Neural_Networks"]


def test_cli_import_errors(tmp_path: Path, capsys) -> None:
    rc = main(["snapshots", "import", "--dataset", str(tmp_path / "missing.npz"),
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc != 0 and "missing.npz" in err and err.startswith("error:")
    rc = main(["snapshots", "import", "--dataset", "no-such-dataset", "--out", str(tmp_path)])
    assert rc != 0 and "unknown dataset" in capsys.readouterr().err
    source = tiny_npz(tmp_path / "t.npz")
    rc = main(["snapshots", "import", "--dataset", str(source), "--out", str(tmp_path / "out"),
               "--graph", "a/b"])
    assert rc != 0 and "invalid graph name" in capsys.readouterr().err
    rc = main(["snapshots", "import", "--dataset", str(source), "--out", str(tmp_path / "out"),
               "--date", "2026-02-30"])
    assert rc != 0 and "invalid snapshot date" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["snapshots", "import", "--dataset", str(source), "--out", str(tmp_path),
              "--known-classes", "a,b"])
    assert not (tmp_path / "out").exists()
    rc = main(["snapshots", "import", "--dataset", str(source), "--out", str(tmp_path / "out")])
    assert rc == 0 and "8 nodes" in capsys.readouterr().out


def _with_footer(footer: bytes) -> bytes:
    """A file shaped like Parquet (magics, footer length) around ``footer``."""
    return b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def test_parquet_footer_walk_refuses_garbage_and_passes_real_files(tmp_path: Path) -> None:
    """Issue 21.4. The footer is walked without Arrow (``parquet_encryption``) to find
    encryption before Arrow reads column metadata: real files of many shapes (nested and map
    columns, statistics, page indexes, many row groups, every codec) pass; a footer that cannot
    be walked (cut short, an unknown type, nesting beyond the bound, a list longer than the
    footer) is an ``UnreadableFile`` naming the file, never handed to Arrow."""
    import io

    table = pa.table({"a": pa.array(np.arange(300)), "s": [str(i % 7) for i in range(300)],
                      "l": pa.array([[1.0, 2.0]] * 300, pa.list_(pa.float64())),
                      "st": pa.array([{"x": 1, "y": [True, False]}] * 300),
                      "m": pa.array([[("k", 1)]] * 300, pa.map_(pa.string(), pa.int32()))})
    table = table.replace_schema_metadata({"k": "v" * 300})
    for compression in ("none", "snappy", "gzip", "zstd", "lz4", "brotli"):
        for options in ({}, {"write_page_index": True}, {"row_group_size": 7},
                        {"use_dictionary": False, "write_statistics": False}):
            buf = io.BytesIO()
            pq.write_table(table, buf, compression=compression, **options)
            assert snap.parquet_encryption(buf.getvalue()) is None, (compression, options)
            snap.check_parquet_footer(tmp_path / "x.parquet", buf.getvalue())
    garbage = {
        "cut short": b"\x15\x02\x19",
        "unknown type": b"\x1e\x00",
        "too deep": b"\x1c" * 40 + b"\x00" * 40,
        "list longer than the footer": b"\x19\xfc\xff\xff\xff\x0f" + b"\x00",
    }
    for footer in garbage.values():
        with pytest.raises(ValueError):
            snap.parquet_encryption(_with_footer(footer))
        with pytest.raises(snap.UnreadableFile, match=r"x\.parquet: not a readable Parquet file "
                                                      r"\(its footer cannot be parsed"):
            snap.check_parquet_footer(tmp_path / "x.parquet", _with_footer(footer))


def test_recent_nodes_are_those_absent_from_the_snapshot_window_back(tmp_path):
    """Three dated snapshots of one graph, nodes a; a, b; a, b, c: on the third, with a window of
    one snapshot only c is recent, with two b and c; with three there is no snapshot that far
    back (None); a window below one is refused."""
    x = np.zeros((3, 2), dtype=np.float32)
    for day, ids in (("2026-01-01", ["a"]), ("2026-01-02", ["a", "b"]),
                     ("2026-01-03", ["a", "b", "c"])):
        snap.write_snapshot(tmp_path, "g", day, snap.nodes_table(ids, x[:len(ids)]),
                            snap.edges_table([ids[0]], [ids[-1]]))
    path = snap.snapshot_dir(tmp_path, "g", "2026-01-03")
    ids = pa.array(["c", "a", "b"])  # in the snapshot's own order, whatever it is
    assert snap.recent_nodes(path, ids, 1).tolist() == [True, False, False]
    assert snap.recent_nodes(path, ids, 2).tolist() == [True, False, True]
    assert snap.recent_nodes(path, ids, 3) is None
    with pytest.raises(ValueError, match="window must be at least 1"):
        snap.recent_nodes(path, ids, 0)
