"""A night answered by the consensus of several fits (``--set consensus_restarts=N``,
oral_core.consensus)."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import torch

CONFIG = {"epochs": 6, "hidden_dim": 16, "pol_start_epoch": 3, "cluster_warmup_epochs": 2,
          "device": "cpu"}


def night_snapshot(tmp_path):
    """One simulated night of a 300-node graph with four classes, three of them known."""
    from data_contracts import snapshots as snap
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    graph = make_static_graph(num_nodes=300, num_classes=4, num_features=16, separation=4.0,
                              seed=0, name="consensus")
    [path] = simulate(graph, 1, tmp_path / "snaps", "consensus", start_date="2026-04-01",
                      seed=0, known_classes=[0, 1, 2])
    return snap.load_snapshot(path)


def test_the_night_publishes_the_consensus_of_its_restarts(tmp_path, one_thread):
    """``fitting.train`` with ``consensus_restarts=3`` fits seeds 0, 1 and 2 on the night's one
    split and writes their consensus; the first fit is the saved model; the progress callback
    counts every restart's epochs."""
    from flows.configuration import resolve_config
    from oral_core.consensus import consensus_class_ids
    from oral_core.trainer import ORAL
    from tasks import fitting

    snapshot = night_snapshot(tmp_path)
    cfg = resolve_config(CONFIG | {"consensus_restarts": 3})
    seen = []
    trained = fitting.train(snapshot, cfg, tmp_path / "run", "auto",
                            progress=lambda done, total: seen.append((done, total)))
    x, edges, train_labels, val_labels, _ = fitting.fit_inputs(snapshot, "auto", cfg.seed)
    labelled = (torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    single = resolve_config(CONFIG)
    fits = [ORAL(single.__class__.from_dict(single.to_dict() | {"seed": s})).fit(x, edges, *labelled)
            for s in (0, 1, 2)]
    expected = consensus_class_ids([f.predict().class_id for f in fits], fits[0].num_known_)
    written = pq.read_table(trained.predictions_path)
    assert (written.column("class_key").to_numpy() == expected.numpy()).all()
    confidence = written.column("confidence").to_numpy()
    assert ((confidence > 0.5) & (confidence <= 1.0)).all()  # a majority agrees with each node
    assert trained.num_novel == int(torch.unique(expected[expected >= fits[0].num_known_]).numel())
    assert seen[-1][0] == seen[-1][1] and seen[-1][1] == 3 * CONFIG["epochs"]
    assert trained.config["consensus_restarts"] == 3


def test_a_medoid_night_publishes_the_fit_that_agrees_most_and_saves_it(tmp_path, one_thread):
    """``consensus_linkage=medoid``: the night writes the class ids of the restart whose answer
    agrees most with the others' on the nodes without labels, and that restart is the saved
    model."""
    from flows.configuration import resolve_config
    from oral_core.consensus import medoid_restart
    from oral_core.trainer import ORAL
    from tasks import fitting

    snapshot = night_snapshot(tmp_path)
    # at seed 2 the medoid is the second restart (seed 3), not the first
    cfg = resolve_config(CONFIG | {"seed": 2, "consensus_restarts": 3,
                                   "consensus_linkage": "medoid"})
    trained = fitting.train(snapshot, cfg, tmp_path / "run", "auto")
    x, edges, train_labels, val_labels, _ = fitting.fit_inputs(snapshot, "auto", cfg.seed)
    labelled = (torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    single = resolve_config(CONFIG)
    fits = [ORAL(single.__class__.from_dict(single.to_dict() | {"seed": s})).fit(x, edges, *labelled)
            for s in (2, 3, 4)]
    ids = torch.stack([f.predict().class_id for f in fits]).long()
    unlabelled = torch.nonzero((labelled[0] < 0) & (labelled[1] < 0)).flatten()
    medoid = medoid_restart(ids, unlabelled)
    assert medoid == 1 and not torch.equal(ids[1], ids[0])  # the test tells it from the first
    model = fits[medoid]
    chosen = model.predict()
    written = pq.read_table(trained.predictions_path)
    assert (written.column("class_key").to_numpy() == chosen.class_id.numpy()).all()
    assert torch.allclose(torch.from_numpy(written.column("confidence").to_numpy()).float(),
                          chosen.confidence.float(), atol=1e-5)
    saved = torch.load(trained.model_path, weights_only=False)
    for name, tensor in model.selected_state()["state"].items():
        assert torch.equal(saved["state_dict"][name], tensor), name


def test_consensus_restarts_and_shards_are_refused_together():
    from oral_core.config import ORALConfig

    with pytest.raises(ValueError, match="consensus_restarts > 1 fits whole models"):
        ORALConfig(consensus_restarts=2, shards=2, batch_size=64).validate()
    with pytest.raises(ValueError, match="consensus_restarts must be >= 1"):
        ORALConfig(consensus_restarts=0).validate()
    ORALConfig(consensus_restarts=3).validate()
    with pytest.raises(ValueError, match="consensus_linkage must be"):
        ORALConfig(consensus_restarts=3, consensus_linkage="single").validate()
