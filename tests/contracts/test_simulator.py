"""The evolving-graph simulator: arrivals, novel classes, stable ids and labels, edges among
arrived nodes, determinism, validation and the ``oral snapshots simulate`` command."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from data_contracts import snapshots as snap
from data_contracts.simulate import plan_simulation, simulate
from data_contracts.synthetic import StaticGraph, make_static_graph
from cli.main import main

PERIODS = 6


@pytest.fixture(scope="module")
def static() -> StaticGraph:
    # 6 classes: 4 known (floor(0.8 * 6)), novel classes 4 and 5
    return make_static_graph(900, num_classes=6, num_features=8, avg_degree=8, seed=3)


@pytest.fixture(scope="module")
def run(static, tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    paths = simulate(static, PERIODS, root, "evolving", start_date="2026-01-01", interval_days=2,
                     seed=5)
    return root, paths, [snap.load_snapshot(p) for p in paths]


def truth_counts(s: snap.Snapshot) -> dict[str, int]:
    names, counts = np.unique(np.asarray(s.truth_names)[s.truth], return_counts=True)
    return dict(zip(names.tolist(), counts.tolist()))


def test_one_snapshot_per_period_with_dates(run) -> None:
    root, paths, snaps = run
    assert [p.name for p in paths] == [f"snapshot=2026-01-{d:02d}" for d in (1, 3, 5, 7, 9, 11)]
    assert snap.select_snapshots(root, "evolving") == [paths[-1]]
    assert all((p / snap.TRUTH).is_file() for p in paths)
    assert all((s.truth >= 0).all() for s in snaps)       # every node has its truth row


def test_novel_classes_appear_at_their_start_and_grow(run, static) -> None:
    _, _, snaps = run
    counts = [truth_counts(s) for s in snaps]
    # default starts: the second half of 6 periods, spread: class 4 at 3, class 5 at 4
    for name, start in (("class_04", 3), ("class_05", 4)):
        sizes = [c.get(name, 0) for c in counts]
        assert all(n == 0 for n in sizes[:start]), (name, sizes)
        assert all(n > 0 for n in sizes[start:]), (name, sizes)
        assert all(a < b for a, b in zip(sizes[start:], sizes[start + 1:])), (name, sizes)
        assert sizes[-1] == int((static.y == int(name[-1])).sum())   # all arrived at the end
    # known classes are all present from the first period
    assert set(counts[0]) == {"class_00", "class_01", "class_02", "class_03"}
    assert snaps[-1].num_nodes == static.num_nodes
    sizes = [s.num_nodes for s in snaps]
    assert all(a < b for a, b in zip(sizes, sizes[1:]))
    assert 0.4 * 600 < sizes[0] < 0.6 * 600     # about half of the 600 known-class nodes


def test_labels_name_only_known_classes_and_are_stable(run, static) -> None:
    _, _, snaps = run
    status: dict = {}
    for s in snaps:
        assert set(s.class_names) <= {"class_00", "class_01", "class_02", "class_03"}
        labelled = s.labels >= 0
        # a label is the node's true class
        assert np.array_equal(np.asarray(s.class_names)[s.labels[labelled]],
                              np.asarray(s.truth_names)[s.truth[labelled]])
        for node, lab in zip(s.node_ids.to_pylist(), s.labels.tolist()):
            name = s.class_names[lab] if lab >= 0 else None
            assert status.setdefault(node, name) == name      # decided once per node
    final = snaps[-1]
    known_nodes = np.isin(np.asarray(final.truth_names)[final.truth],
                          ["class_00", "class_01", "class_02", "class_03"])
    # floor(0.5 * n_c) per known class
    expected = sum(int((static.y == c).sum()) // 2 for c in range(4))
    assert (final.labels >= 0).sum() == expected
    assert not ((final.labels >= 0) & ~known_nodes).any()


def test_node_ids_and_features_stable(run, static) -> None:
    _, _, snaps = run
    for before, after in zip(snaps, snaps[1:]):
        ids_after = after.node_ids.to_pylist()
        pos = {n: i for i, n in enumerate(ids_after)}
        ids_before = before.node_ids.to_pylist()
        assert all(n in pos for n in ids_before)
        rows = [pos[n] for n in ids_before]
        np.testing.assert_array_equal(after.x[rows], before.x)
        np.testing.assert_array_equal(after.truth[rows], before.truth)
    final = snaps[-1]
    order = np.asarray(final.node_ids.to_pylist())
    np.testing.assert_array_equal(final.x, static.x[order])


def edge_ids(s: snap.Snapshot) -> set[tuple[int, int]]:
    ids = np.asarray(s.node_ids.to_pylist())
    return set(map(tuple, ids[s.edge_index].T.tolist()))


def test_edges_only_among_arrived_nodes(run, static) -> None:
    _, _, snaps = run
    all_edges = set(map(tuple, static.node_ids[static.edges].T.tolist()))
    previous: set = set()
    for s in snaps:
        present = set(s.node_ids.to_pylist())
        edges = edge_ids(s)
        # exactly the static edges whose two endpoints have arrived
        assert edges == {e for e in all_edges if e[0] in present and e[1] in present}
        assert previous <= edges
        previous = edges
        assert s.edge_index.shape[1] == len(edges)            # no duplicates
    assert previous == all_edges


def test_deterministic_for_a_seed(static, tmp_path: Path) -> None:
    a = simulate(static, 3, tmp_path / "a", "g", start_date="2026-01-01", seed=9)
    b = simulate(static, 3, tmp_path / "b", "g", start_date="2026-01-01", seed=9)
    c = simulate(static, 3, tmp_path / "c", "g", start_date="2026-01-01", seed=10)
    for pa_, pb in zip(a, b):
        for name in (snap.NODES, snap.EDGES, snap.TRUTH):
            assert (pa_ / name).read_bytes() == (pb / name).read_bytes()
    assert [snap.load_snapshot(p).content_hash for p in a] == [
        snap.load_snapshot(p).content_hash for p in b]
    assert [snap.load_snapshot(p).content_hash for p in a] != [
        snap.load_snapshot(p).content_hash for p in c]


def test_novel_start_options(static) -> None:
    plan = plan_simulation(static, 5, "2026-01-01", novel_start={"class_05": 1, 4: 4}, seed=1)
    assert plan.novel_start == {4: 4, 5: 1}
    first = {c: int(plan.arrival[static.y == c].min()) for c in range(6)}
    assert first == {0: 0, 1: 0, 2: 0, 3: 0, 4: 4, 5: 1}
    plan = plan_simulation(static, 5, "2026-01-01", novel_start=2, known_classes=[0, 1, 2])
    assert plan.known_classes == [0, 1, 2] and plan.novel_start == {3: 2, 4: 2, 5: 2}
    assert not plan.labelled[np.isin(static.y, [3, 4, 5])].any()
    # one period: everything arrives at once
    plan = plan_simulation(static, 1, "2026-01-01")
    assert (plan.arrival == 0).all() and plan.novel_start == {4: 0, 5: 0}
    # start date defaults so that the last snapshot is today
    plan = plan_simulation(static, 3, interval_days=7)
    assert plan.dates[-1] == dt.date.today() and plan.dates[0] == dt.date.today() - dt.timedelta(14)
    # an explicit arrival schedule
    arrival = np.where(static.y >= 4, 2, 0)
    plan = plan_simulation(static, 3, "2026-01-01", arrival=arrival)
    assert plan.novel_start == {4: 2, 5: 2} and (plan.arrival == arrival).all()


def test_simulate_accepts_an_oral_core_graph(tmp_path: Path) -> None:
    from oral_core.synthetic import make_attributed_sbm

    graph = make_attributed_sbm(num_nodes=200, num_classes=5, feature_dim=4, seed=2)
    paths = simulate(graph, 3, tmp_path, "core", start_date="2026-05-01", seed=0)
    last = snap.load_snapshot(paths[-1])
    assert last.num_nodes == 200 and last.edge_index.shape[1] == graph.num_edges // 2
    assert last.truth_names == ["class_00", "class_01", "class_02", "class_03", "class_04"]
    assert "class_04" not in truth_counts(snap.load_snapshot(paths[0]))


@pytest.mark.parametrize("kwargs, message", [
    ({"periods": 0}, "periods must be an integer >= 1"),
    ({"novel_start": {4: 6}}, r"must be a period in 0\.\.5"),
    ({"novel_start": {4: -1}}, r"must be a period in 0\.\.5"),
    ({"novel_start": {0: 2}}, "which is known"),
    ({"novel_start": {"class_99": 2}}, "unknown class"),
    ({"novel_start": {9: 2}}, "out of range"),
    ({"known_classes": [0, 1, 2, 3, 4, 5]}, "at least one class must be novel"),
    ({"known_classes": []}, "at least one class must be known"),
    ({"known_classes": [0, 0]}, "duplicates"),
    ({"label_fraction": 1.5}, "label_fraction"),
    ({"initial_fraction": 0.0}, "initial_fraction"),
    ({"interval_days": 0}, "interval_days"),
    ({"start_date": "2026-02-31"}, "invalid snapshot date"),
    ({"arrival": np.zeros(3, dtype=int)}, "arrival must be"),
    ({"arrival": np.full(900, 1)}, "no node arriving at period 0"),
    ({"arrival": np.zeros(900, dtype=int), "novel_start": 2}, "either arrival"),
])
def test_bad_arguments(static, tmp_path: Path, kwargs, message) -> None:
    args = {"periods": PERIODS, "start_date": "2026-01-01"} | kwargs
    with pytest.raises(ValueError, match=message):
        simulate(static, out_root=tmp_path, graph="g", **args)
    assert not (tmp_path / "g").exists()     # nothing written


def test_existing_snapshots_are_not_replaced(static, tmp_path: Path) -> None:
    simulate(static, 2, tmp_path, "g", start_date="2026-01-02")
    with pytest.raises(snap.SnapshotError, match="already exist"):
        simulate(static, 3, tmp_path, "g", start_date="2026-01-01")
    # nothing written by the refused call (2026-01-01 would have been first)
    assert [p.name for p in sorted((tmp_path / "g").iterdir())] == [
        "snapshot=2026-01-02", "snapshot=2026-01-03"]
    assert len(simulate(static, 3, tmp_path, "g", start_date="2026-01-01", overwrite=True)) == 3
    with pytest.raises(snap.SnapshotError, match="invalid graph name"):
        simulate(static, 2, tmp_path, "../g", start_date="2026-01-01")


def test_cli_simulate_synthetic(tmp_path: Path, capsys) -> None:
    rc = main(["snapshots", "simulate", "--dataset", "synthetic", "--periods", "4",
               "--out", str(tmp_path), "--nodes", "400", "--classes", "5",
               "--start-date", "2026-04-01", "--novel-start", "class_04=1", "--seed", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "class_04@1" in out and out.count("wrote ") == 4
    paths = snap.select_snapshots(tmp_path, "synthetic", start="2026-04-01")
    assert [p.name for p in paths] == [f"snapshot=2026-04-0{d}" for d in (1, 2, 3, 4)]
    counts = [truth_counts(snap.load_snapshot(p)).get("class_04", 0) for p in paths]
    assert counts[0] == 0 and 0 < counts[1] < counts[2] < counts[3] == 80


def test_cli_simulate_errors(tmp_path: Path, capsys) -> None:
    base = ["snapshots", "simulate", "--out", str(tmp_path), "--periods", "3"]
    assert main(base + ["--dataset", "synthetic", "--novel-start", "4=7"]) == 2
    assert "must be a period in 0..2" in capsys.readouterr().err
    assert main(base + ["--dataset", "synthetic", "--novel-start", "4"]) == 2
    assert "CLASS=PERIOD" in capsys.readouterr().err
    assert main(base + ["--dataset", str(tmp_path / "nope.mat")]) == 2
    assert "nope.mat" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["snapshots", "simulate", "--out", str(tmp_path), "--periods", "0",
              "--dataset", "synthetic"])
    assert not any(tmp_path.iterdir())
