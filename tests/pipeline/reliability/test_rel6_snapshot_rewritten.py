"""Reliability point 6: a snapshot rewritten while it is read gives one version; the flow uses
the bytes it hashed.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from .harness import D1, D2, check_consistent


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
