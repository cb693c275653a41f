"""The chunked DC-SBM generator: sizes, valid edges, homophily, heavy-tailed degrees, separable
features, labelling, determinism, chunk sizes, bounded memory, and ``oral snapshots generate``."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from data_contracts import snapshots as snap
from data_contracts.synthetic import (GENERATOR_KEY, class_counts, generate_snapshot,
                                      make_static_graph)
from cli.main import main

N = 20_000


def generate(root: Path, graph: str = "syn", **kwargs) -> Path:
    args = dict(num_nodes=N, num_classes=6, num_features=16, chunk_size=3_000, seed=1) | kwargs
    return generate_snapshot(root, graph, "2026-01-01", **args)


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    path = generate(tmp_path_factory.mktemp("syn"))
    return path, snap.load_snapshot(path)


def degrees(s: snap.Snapshot) -> np.ndarray:
    return np.bincount(s.edge_index.ravel(), minlength=s.num_nodes)


def edge_homophily(s: snap.Snapshot) -> float:
    return float((s.truth[s.edge_index[0]] == s.truth[s.edge_index[1]]).mean())


def test_nodes_and_edges_are_valid(default) -> None:
    path, s = default          # load_snapshot already rejects edges naming unknown nodes
    assert s.num_nodes == N and s.x.shape == (N, 16) and s.x.dtype == np.float32
    assert s.node_ids.to_pylist() == list(range(N))
    src, dst = s.edge_index
    assert (src != dst).all()                              # no self loops
    assert (src < dst).all()                               # each pair written once, src < dst
    assert src.min() >= 0 and dst.max() < N
    pairs = src * N + dst
    assert len(np.unique(pairs)) == len(pairs)             # no duplicates, across chunks too
    assert 8.5 < 2 * s.edge_index.shape[1] / N < 10.5      # mean degree about 10
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]   # no temp folder left
    meta = json.loads(pq.read_schema(path / snap.NODES).metadata[GENERATOR_KEY])
    assert meta["num_nodes"] == N and meta["homophily"] == 0.8 and meta["chunk_size"] == 3000


def test_classes_truth_and_labels(default) -> None:
    _, s = default
    assert s.truth_names == [f"class_0{i}" for i in range(6)]
    assert (s.truth >= 0).all()
    np.testing.assert_array_equal(np.bincount(s.truth), class_counts(N, 6))
    # floor(0.8 * 6) = 4 known classes; about half of their nodes labelled, novel never
    assert s.class_names == ["class_00", "class_01", "class_02", "class_03"]
    labelled = s.labels >= 0
    assert np.array_equal(np.asarray(s.class_names)[s.labels[labelled]],
                          np.asarray(s.truth_names)[s.truth[labelled]])
    known = s.truth < 4
    assert not (labelled & ~known).any()
    assert 0.47 < labelled.sum() / known.sum() < 0.53


def test_homophily_as_requested(default, tmp_path: Path) -> None:
    _, s = default
    assert abs(edge_homophily(s) - 0.8) < 0.04
    low = snap.load_snapshot(generate(tmp_path, homophily=0.3, num_nodes=8000))
    assert abs(edge_homophily(low) - 0.3) < 0.04
    # classes are placed at random: node ids say nothing about the class
    assert abs(np.corrcoef(np.arange(N), s.truth)[0, 1]) < 0.05


def test_degrees_heavy_tailed(default, tmp_path: Path) -> None:
    _, s = default
    deg = degrees(s)
    assert deg.max() > 15 * deg.mean()
    assert np.percentile(deg, 99) > 3 * np.median(deg)
    flat = degrees(snap.load_snapshot(generate(tmp_path, power_law_exponent=None)))
    assert flat.max() < 3 * flat.mean()                   # plain SBM: Poisson degrees
    assert abs(flat.mean() - deg.mean()) < 1.5


def test_features_separable(default) -> None:
    _, s = default
    train = np.arange(N) % 2 == 0
    centroids = np.stack([s.x[train & (s.truth == c)].mean(0) for c in range(6)])
    dist = ((s.x[~train, None, :] - centroids[None]) ** 2).sum(-1)
    accuracy = (dist.argmin(1) == s.truth[~train]).mean()
    assert accuracy > 0.6          # chance is 1/6
    easy = make_static_graph(2000, 6, 16, separation=10.0, seed=1)
    centroids = np.stack([easy.x[easy.y == c].mean(0) for c in range(6)])
    assert (((easy.x[:, None] - centroids[None]) ** 2).sum(-1).argmin(1) == easy.y).mean() > 0.99


def test_same_seed_same_files(default, tmp_path: Path) -> None:
    path, _ = default
    again = generate(tmp_path)
    for name in (snap.NODES, snap.EDGES, snap.TRUTH):
        assert (path / name).read_bytes() == (again / name).read_bytes()
    other = generate(tmp_path, graph="other", seed=2)
    assert (path / snap.EDGES).read_bytes() != (other / snap.EDGES).read_bytes()
    assert (path / snap.NODES).read_bytes() != (other / snap.NODES).read_bytes()


@pytest.mark.parametrize("chunk_size", [1, 997, N])
@pytest.mark.slow
def test_chunk_sizes_give_valid_graphs(default, tmp_path: Path, chunk_size: int) -> None:
    _, s = default
    n = 2000 if chunk_size == 1 else N
    other = snap.load_snapshot(generate(tmp_path, chunk_size=chunk_size, num_nodes=n))
    assert other.num_nodes == n
    src, dst = other.edge_index
    assert (src < dst).all() and len(np.unique(src * n + dst)) == len(src)
    assert 8.0 < 2 * len(src) / n < 10.5
    assert abs(edge_homophily(other) - 0.8) < 0.05
    if n == N:   # classes do not depend on the chunk size
        np.testing.assert_array_equal(other.truth, s.truth)


def test_static_graph_matches_the_snapshot(default) -> None:
    _, s = default
    g = make_static_graph(N, 6, 16, chunk_size=3_000, seed=1)
    np.testing.assert_array_equal(g.x, s.x)
    np.testing.assert_array_equal(g.y, s.truth)
    key = g.edges[0] * N + g.edges[1]
    assert (g.edges[0] < g.edges[1]).all() and len(np.unique(key)) == len(key)
    snap_keys = s.edge_index[0] * N + s.edge_index[1]
    np.testing.assert_array_equal(key, snap_keys)            # the same edges in the same order
    assert g.class_names == s.truth_names and g.num_edges == len(key)


def test_class_sizes_and_counts(tmp_path: Path) -> None:
    counts = class_counts(1003, 3, [1, 2, 7])
    assert counts.sum() == 1003 and counts.min() >= 1 and list(counts) == sorted(counts)
    assert abs(counts[2] / 1003 - 0.7) < 0.01
    assert list(class_counts(10, 10)) == [1] * 10
    g = make_static_graph(1000, 4, 4, class_sizes=[100, 200, 300, 400])
    assert list(np.bincount(g.y)) == [100, 200, 300, 400]
    s = snap.load_snapshot(generate(tmp_path, num_nodes=3000, num_classes=12, num_known=3,
                                    label_fraction=1.0))
    assert s.truth_names[:2] == ["class_00", "class_01"] and s.truth_names[-1] == "class_11"
    assert s.class_names == ["class_00", "class_01", "class_02"]
    assert ((s.labels >= 0) == (s.truth < 3)).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"num_nodes": 3}, "num_nodes must be"),
    ({"num_classes": 0}, "num_classes"),
    ({"num_features": 0}, "num_features"),
    ({"homophily": 1.2}, "homophily"),
    ({"avg_degree": -1.0}, "avg_degree"),
    ({"power_law_exponent": 1.5}, "power_law_exponent"),
    ({"label_fraction": -0.1}, "label_fraction"),
    ({"num_known": 7}, "num_known"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"seed": -1}, "seed"),
    ({"class_sizes": [1, 2]}, "class_sizes"),
])
def test_bad_arguments(tmp_path: Path, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        generate(tmp_path, **kwargs)
    assert not (tmp_path / "syn").exists() or not any((tmp_path / "syn").iterdir())


def test_existing_snapshot_needs_overwrite(tmp_path: Path) -> None:
    path = generate(tmp_path, num_nodes=500, seed=1)
    with pytest.raises(snap.SnapshotError, match="already exists"):
        generate(tmp_path, num_nodes=500, seed=2)
    generate(tmp_path, num_nodes=600, seed=2, overwrite=True)
    assert snap.load_snapshot(path).num_nodes == 600
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_failed_generation_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    import data_contracts.synthetic as synthetic

    real = synthetic._chunk_edges
    calls = []

    def fail_later(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("boom")
        return real(*args)

    monkeypatch.setattr(synthetic, "_chunk_edges", fail_later)
    with pytest.raises(RuntimeError, match="boom"):
        generate(tmp_path, num_nodes=5000, chunk_size=1000)
    assert list((tmp_path / "syn").iterdir()) == []


RSS_SCRIPT = textwrap.dedent("""
    import resource, sys
    from data_contracts.synthetic import generate_snapshot
    root, n = sys.argv[1], int(sys.argv[2])
    args = dict(num_features=128, chunk_size=10_000, avg_degree=10.0)
    generate_snapshot(root, "warm", "2026-01-01", num_nodes=20_000, **args)  # imports, pools
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    generate_snapshot(root, "big", "2026-01-01", num_nodes=n, **args)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
""")


@pytest.mark.slow
def test_peak_memory_bounded(tmp_path: Path) -> None:
    """200k nodes x 128 features is 102 MB of features alone (and ~16 MB of edges); chunked
    generation must stay far below that."""
    n = 200_000
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(tmp_path), str(n)],
                         capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2],
                         env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    growth = int(out.stdout.strip().splitlines()[-1])
    assert growth < 0.5 * n * 128 * 4, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert pq.read_metadata(tmp_path / "big" / "snapshot=2026-01-01" / snap.NODES).num_rows == n


def test_cli_generate(tmp_path: Path, capsys) -> None:
    rc = main(["snapshots", "generate", "--nodes", "3000", "--out", str(tmp_path),
               "--graph", "gen", "--date", "2026-06-01", "--classes", "5", "--features", "8",
               "--avg-degree", "6", "--homophily", "0.9", "--seed", "4", "--chunk-size", "700"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "snapshot=2026-06-01" in out and "3000 nodes" in out and "5 classes" in out
    s = snap.load_snapshot(tmp_path / "gen" / "snapshot=2026-06-01")
    assert s.x.shape == (3000, 8) and abs(edge_homophily(s) - 0.9) < 0.04
    assert s.class_names == ["class_00", "class_01", "class_02", "class_03"]
    rc = main(["snapshots", "generate", "--nodes", "3000", "--out", str(tmp_path),
               "--graph", "gen", "--date", "2026-06-01"])
    assert rc == 2 and "already exists: pass --overwrite" in capsys.readouterr().err
    rc = main(["snapshots", "generate", "--nodes", "300", "--out", str(tmp_path),
               "--date", "2026-06-01", "--classes", "3", "--features", "4"])
    assert rc == 0 and (tmp_path / "generated" / "snapshot=2026-06-01").is_dir()
    rc = main(["snapshots", "generate", "--nodes", "30", "--out", str(tmp_path),
               "--homophily", "2"])
    assert rc == 2 and "homophily" in capsys.readouterr().err
