"""A night's training step over two worker processes (``--set shards=2``, oral_core.data_parallel)."""
from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import torch

CONFIG = {"epochs": 8, "hidden_dim": 16, "pol_start_epoch": 4, "cluster_warmup_epochs": 2,
          "warm_epochs": 3, "device": "cpu", "batch_size": 64, "shards": 2}
GRAPH = "parallel"


def night_snapshot(tmp_path):
    """One simulated night of a 300-node graph with four classes, three of them known."""
    from data_contracts import snapshots as snap
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    graph = make_static_graph(num_nodes=300, num_classes=4, num_features=16, separation=4.0,
                              seed=0, name=GRAPH)
    [path] = simulate(graph, 1, tmp_path / "snaps", GRAPH, start_date="2026-04-01", seed=0,
                      known_classes=[0, 1, 2])
    return snap.load_snapshot(path)


def test_a_night_trained_by_two_workers_is_the_one_process_computation(tmp_path, one_thread):
    """``fitting.train`` with ``shards=2`` trains in two processes and writes the same
    predictions as the same configuration computed in one process; a warm night passes the
    previous model to both workers."""
    from flows.configuration import resolve_config
    from oral_core.trainer import ORAL
    from tasks import fitting

    snapshot = night_snapshot(tmp_path)
    cfg = resolve_config(CONFIG)
    trained = fitting.train(snapshot, cfg, tmp_path / "run-1", "auto")
    assert trained.config["shards"] == 2
    history = [row for row in trained_history(trained) if "loss" in row]
    assert history and all(row["communication_seconds"] > 0 for row in history)

    x, edges, train_labels, val_labels, _ = fitting.fit_inputs(snapshot, "auto", cfg.seed)
    alone = ORAL(cfg).fit(x, edges, torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    written = pq.read_table(trained.predictions_path).column("class_key").to_numpy()
    assert (written == alone.predict().class_id.numpy()).all()

    init = {"model_path": trained.model_path, "predictions_path": trained.predictions_path,
            "warm_from": "night1"}
    warm = fitting.train(snapshot, cfg, tmp_path / f"run-{dt.date(2026, 4, 2)}", "auto", init=init)
    assert warm.start == "warm" and warm.epochs == CONFIG["warm_epochs"]


def trained_history(trained) -> list[dict]:
    import json
    from pathlib import Path

    return json.loads(Path(trained.history_path).read_text())


def test_the_other_workers_can_run_on_a_dask_cluster(tmp_path, monkeypatch, one_thread):
    """With ``ORAL_TRAIN_CLUSTER`` the second worker runs on the Dask cluster's worker process
    (the job meets through a file in the run folder): the same predictions as one process
    computing both parts. A cluster with too few worker processes, or none answering, is refused
    in one sentence."""
    import pytest
    from distributed import LocalCluster

    from flows.configuration import resolve_config
    from oral_core.trainer import ORAL
    from tasks import fitting, workers

    snapshot = night_snapshot(tmp_path)
    cfg = resolve_config(CONFIG)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        monkeypatch.setenv("ORAL_TRAIN_CLUSTER", cluster.scheduler_address)
        trained = fitting.train(snapshot, cfg, tmp_path / "run-dask", "auto")
        with pytest.raises(workers.ClusterError, match="the cluster has 1 worker process\\(es\\); "
                                                       "shards=3 needs 2 besides this one"):
            fitting.train(snapshot, resolve_config(CONFIG | {"shards": 3}), tmp_path / "run-3",
                        "auto")
    assert not list((tmp_path / "run-dask").glob("rendezvous-*"))  # the meeting file is gone
    x, edges, train_labels, val_labels, _ = fitting.fit_inputs(snapshot, "auto", cfg.seed)
    alone = ORAL(cfg).fit(x, edges, torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    written = pq.read_table(trained.predictions_path).column("class_key").to_numpy()
    assert (written == alone.predict().class_id.numpy()).all()

    monkeypatch.setattr(workers, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.setenv("ORAL_TRAIN_CLUSTER", "127.0.0.1:9")
    with pytest.raises(workers.ClusterError, match="ORAL_TRAIN_CLUSTER=tcp://127.0.0.1:9: no Dask "
                                                   "scheduler answers"):
        fitting.train(snapshot, cfg, tmp_path / "run-none", "auto")
