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
