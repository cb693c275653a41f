"""ORAL end to end: a planted novel class on a synthetic graph is discovered, ablations run, the
API refuses misuse, training is deterministic, and Cora (when its files are present) is learnt.

Floors were measured on the CPU reference (torch 2.13, one thread) and set with a margin; see
the comments next to each."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.metrics import open_world_accuracy, orca_accuracy
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL, Discovery

NUM_KNOWN = 3


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small_config(**overrides) -> ORALConfig:
    values = dict(epochs=60, hidden_dim=32, progress=False, pol_start_epoch=20,
                  cluster_warmup_epochs=5, seed=0)
    values.update(overrides)
    return ORALConfig(**values)


@pytest.fixture(scope="module")
def sbm():
    """800 nodes, 4 classes of 200; classes 0-2 known, class 3 is the planted novel class."""
    graph = make_attributed_sbm(num_nodes=800, num_classes=4, feature_dim=32, avg_degree=8.0,
                                homophily=0.8, feature_noise=3.0, seed=0)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    return graph, split


def fit(graph, split, config: ORALConfig) -> Discovery:
    model = ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                             split.val_labels(graph.y))
    return model.predict()


def check_discovery(found: Discovery, num_nodes: int, num_known: int) -> None:
    assert found.class_id.shape == (num_nodes,) and found.class_id.dtype == torch.long
    assert found.confidence.shape == (num_nodes,)
    assert torch.all((found.confidence >= 0) & (found.confidence <= 1 + 1e-6))
    assert found.is_novel.dtype == torch.bool
    assert torch.equal(found.is_novel, found.class_id >= num_known)
    assert torch.all(found.class_id >= 0)
    assert found.num_known == num_known
    assert found.num_classes == torch.unique(found.class_id).numel()
    for layer in found.layer_class_ids:
        assert layer.shape == (num_nodes,)


@pytest.fixture(scope="module")
def sbm_discovery(sbm):
    graph, split = sbm
    return fit(graph, split, small_config())


def test_planted_novel_class_is_discovered(sbm, sbm_discovery) -> None:
    graph, split = sbm
    found = sbm_discovery
    check_discovery(found, graph.num_nodes, NUM_KNOWN)
    test = split.test_mask
    novel_test = test & (graph.y == 3)
    ids, counts = torch.unique(found.class_id[novel_test], return_counts=True)
    majority = int(ids[counts.argmax()])
    assert majority >= NUM_KNOWN, "the novel class was merged into a known class"
    # measured: 0.99 of the 200 novel test nodes share one novel id (other graph / model seeds
    # 0.73-0.99, always a novel id); without the supervised loss L_ce the novel class is merged
    # into known class 0 (the assertion above fails)
    assert float(counts.max()) / novel_test.sum() > 0.85
    scores = open_world_accuracy(graph.y[test], found.class_id[test], split.known_classes)
    orca = orca_accuracy(graph.y[test], found.class_id[test], split.known_classes)
    # measured 0.993 (other seeds 0.80-0.997). Predicting one class for every test node gives
    # 0.69 (200 of the 290 test nodes are novel), training without L_ce 0.755, chance ~0.3
    assert scores["all"] > 0.85
    # known ids are kept: measured 1.00; without L_ce 0.756, chance 1/3
    assert orca["known"] > 0.85
    assert 4 <= found.num_classes <= 5  # measured 4
    assert found.val_accuracy > 0.9  # measured 1.00, without L_ce 0.867


def test_ablation_without_pan_and_pol_runs(sbm) -> None:
    graph, split = sbm
    found = fit(graph, split, small_config(pan=False, pol=False, epochs=20))
    check_discovery(found, graph.num_nodes, NUM_KNOWN)
    assert found.num_classes >= 1
    assert 0 <= found.epoch <= 20


def test_predict_before_fit_raises() -> None:
    with pytest.raises(RuntimeError, match="fit"):
        ORAL(small_config()).predict()


def test_fit_without_labelled_nodes_raises(sbm) -> None:
    graph, _ = sbm
    none = torch.full((graph.num_nodes,), -1, dtype=torch.long)
    with pytest.raises(ValueError, match="labelled"):
        ORAL(small_config(epochs=2)).fit(graph.x, graph.edge_index, none)


def test_same_seed_gives_same_classes(sbm) -> None:
    graph, split = sbm
    config = small_config(epochs=12, pol_start_epoch=6, cluster_warmup_epochs=3)
    first, second = fit(graph, split, config), fit(graph, split, config)
    assert torch.equal(first.class_id, second.class_id)
    assert torch.equal(first.confidence, second.confidence)
    assert first.epoch == second.epoch


def test_select_from_epoch_keeps_the_best_eligible_epoch_of_the_same_run(sbm) -> None:
    """Selection does not change training: with ``select_from_epoch`` the kept epoch is the latest
    best-validation epoch at or after it, read from the same per-epoch history."""
    graph, split = sbm
    config = small_config(epochs=12, pol_start_epoch=6, cluster_warmup_epochs=3)
    free = ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                            split.val_labels(graph.y))
    late = ORAL(small_config(epochs=12, pol_start_epoch=6, cluster_warmup_epochs=3,
                             select_from_epoch=6)).fit(
        graph.x, graph.edge_index, split.train_labels(graph.y), split.val_labels(graph.y))
    assert [h["val_acc"] for h in free.history_] == [h["val_acc"] for h in late.history_]
    eligible = [h for h in late.history_ if h["epoch"] >= 6]
    best = max(h["val_acc"] for h in eligible)
    expected = max(h["epoch"] for h in eligible if h["val_acc"] == best)
    assert late.predict().epoch == expected >= 6
    assert late.predict().val_accuracy == pytest.approx(best)


def test_select_from_epoch_beyond_training_is_refused() -> None:
    with pytest.raises(ValueError, match="select_from_epoch"):
        ORAL(small_config(epochs=5, select_from_epoch=6))


# --------------------------------------------------------------------------- Cora (real data)
def cora_available() -> bool:
    env = os.environ.get("ORAL_DATA_DIR")
    root = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "datasets"
    linqs = all((root / "cora" / "linqs" / f"cora.{p}").is_file() for p in ("content", "cites"))
    planetoid = (root / "cora" / "planetoid" / "ind.cora.graph").is_file()
    return linqs or planetoid


@pytest.mark.skipif(not cora_available(),
                    reason="Cora files not found under $ORAL_DATA_DIR or ../shared/datasets/cora")
def test_cora_is_learnt() -> None:
    from oral_core.datasets import load_dataset, preprocess_features

    graph = load_dataset("cora", download=False)
    x = preprocess_features(graph.x, "row")
    split = make_split(graph.y, seed=0)
    assert split.num_known == 5
    config = ORALConfig(epochs=60, pol_start_epoch=30, cluster_warmup_epochs=10, seed=0,
                        hidden_dim=64, num_layers=3, top_k=2, lr=0.005, progress=False)
    found = ORAL(config).fit(x, graph.edge_index, split.train_labels(graph.y),
                             split.val_labels(graph.y)).predict()
    check_discovery(found, graph.num_nodes, split.num_known)
    test = split.test_mask
    y = graph.y[test]
    scores = open_world_accuracy(y, found.class_id[test], split.known_classes)
    orca = orca_accuracy(y, found.class_id[test], split.known_classes)
    # Measured (seed 0, 60 epochs, ~25 s): all 0.551, ORCA known 0.712, 9 classes. Predicting one
    # class gives 0.406 (Theory, a novel class, is 351 of the 857 test nodes); 40 epochs gave
    # 0.41-0.45, other model seeds at 60 epochs 0.44-0.55.
    assert scores["all"] > 0.45
    # one class: at most 0.372 (Neural_Networks' share of the known test nodes)
    assert orca["known"] > 0.6
    assert found.num_classes > split.num_known  # at least one novel class found
