"""benchmarks.energy_separation and benchmarks.data_parallel on tiny inputs."""
from __future__ import annotations

import csv


def test_energy_separation_reads_the_proxys_labelled_nodes_only(tmp_path, one_thread):
    """On a simulated snapshot whose classes are well apart, both classifiers' energies put the
    held-out-class proxy's stand-ins above most of the visible classes' held nodes, and the
    known-like shares grow with the quantile."""
    from benchmarks.energy_separation import QUANTILES, separation
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    graph = make_static_graph(num_nodes=500, num_classes=5, num_features=16, separation=4.0,
                              seed=0, name="sep")
    [path] = simulate(graph, 1, tmp_path / "snaps", "sep", start_date="2026-04-01", seed=0,
                      known_classes=[0, 1, 2, 3])
    row = separation(str(path), 0)
    assert set(row) == {"lr", "gcn"}
    for r in row.values():
        assert r["auroc"] > 0.7 and 0 <= r["val_accuracy"] <= 1
        shares = [r[f"q{q}"]["visible"] for q in QUANTILES]
        assert shares == sorted(shares)


def test_the_data_parallel_benchmark_writes_curves_and_scaling(tmp_path, monkeypatch, one_thread):
    from benchmarks import data_parallel

    monkeypatch.setattr(data_parallel, "OUT", tmp_path)
    data_parallel.main(["curves", "--seeds", "0", "--epochs", "3", "--nodes", "300",
                        "--batch-size", "128"])
    [answer] = list(csv.DictReader((tmp_path / "answers.csv").open()))
    assert answer["workers_equal_parts"] == "True"
    data_parallel.main(["scaling", "--workers", "1", "2", "--nodes", "400", "--epochs", "2",
                        "--batch-size", "128"])
    rows = list(csv.DictReader((tmp_path / "scaling.csv").open()))
    assert [r["workers"] for r in rows] == ["1", "2"]
    assert float(rows[0]["speedup_vs_1"]) == 1.0 and float(rows[1]["all_reduce_s"]) > 0
