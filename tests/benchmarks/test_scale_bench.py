"""benchmarks/scale.py --warm: the warm night's snapshot (the cold night's graph, 1% of edges dropped)."""
from __future__ import annotations


def test_next_night_drops_one_percent_of_edges_and_keeps_the_nodes(tmp_path):
    import pyarrow.parquet as pq

    from benchmarks import scale
    from data_contracts.synthetic import generate_snapshot

    root = tmp_path / "snapshots"
    generate_snapshot(root, "synthetic", date="2026-01-01", num_nodes=400, seed=0)
    first = root / "synthetic" / "snapshot=2026-01-01"
    assert scale.next_night(root) == "2026-01-02"
    second = root / "synthetic" / "snapshot=2026-01-02"
    e1, e2 = pq.read_table(first / "edges.parquet"), pq.read_table(second / "edges.parquet")
    assert e1.num_rows - e2.num_rows == len(range(0, e1.num_rows, 100))  # every 100th row dropped
    assert pq.read_table(second / "nodes.parquet").equals(pq.read_table(first / "nodes.parquet"))
    assert scale._edge_count(root, "2026-01-02") == 2 * e2.num_rows
    assert scale._edge_count(root) == 2 * e1.num_rows  # the first night's when no date is given
    # a second call reuses the night already written (the first snapshot stays the source)
    assert scale.next_night(root) == "2026-01-02"
    assert pq.read_table(second / "edges.parquet").num_rows == e2.num_rows
    assert not list(root.glob("synthetic/*.partial"))


def test_report_pairs_scores_by_position_when_graph_labels_repeat(tmp_path):
    import csv

    from benchmarks import scale

    out = tmp_path / "scale.csv"
    for nightly, score in [("100.0", "All 98.2%"), ("90.0", "All 98.3%")]:
        scale._record({"graph": "synthetic-100k (200 epochs)", "nodes": 100000, "edges": 10,
                       "device": "cpu-1threads", "epoch_s": 1.0, "nightly_s": nightly,
                       "peak_mem_gb": 1.0, "accuracy": score}, out)
    assert len(list(csv.DictReader(out.open()))) == 2
    scale.write_report(out)
    table = [l for l in out.with_suffix(".md").read_text().splitlines() if l.startswith("| synthetic")]
    assert [l.split("|")[-2].strip() for l in table] == ["All 98.2%", "All 98.3%"]


def test_the_wide_snapshot_loads_with_sparse_words_and_half_the_known_classes_labelled(tmp_path):
    import numpy as np

    from benchmarks import scale
    from data_contracts.snapshots import load_snapshot

    root = tmp_path / "snapshots"
    folder = scale.wide_snapshot(root, 600, 200)
    assert folder == root / "synthetic" / "snapshot=2026-01-01"
    snapshot = load_snapshot(folder)
    x = np.asarray(snapshot.x)
    assert x.shape == (600, 200)
    assert set(np.unique(x)) <= {0.0, 1.0} and 0 < (x > 0).mean() < 0.25  # sparse binary words
    labelled = np.asarray(snapshot.labels) >= 0
    assert 0.25 < labelled.mean() < 0.55  # half the nodes of 8 of the 10 classes
    assert len(snapshot.class_names) == 8 and snapshot.truth is not None
    # the same folder is reused, not written again
    assert scale.generate(600, tmp_path, wide=200) == root


def test_too_few_wide_features_are_refused(capsys):
    import pytest

    from benchmarks import scale

    with pytest.raises(SystemExit) as exc:
        scale.main(["--nodes", "100", "--wide", "3"])
    assert exc.value.code == 2
    assert "--wide 3: need at least 10 features" in capsys.readouterr().err
