"""``ORALConfig.eval_every`` (a speed option, not the paper): the evaluation pass every k epochs."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL, evaluated_epoch


def _graph():
    graph = make_attributed_sbm(num_nodes=150, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(150) % 2 == 1] = -1
    return graph, train


def _fit(**overrides) -> ORAL:
    graph, train = _graph()
    cfg = ORALConfig(epochs=14, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=4,
                     progress=False, device="cpu", **overrides)
    return ORAL(cfg).fit(graph.x, graph.edge_index, train)


def test_evaluated_epochs_are_the_first_the_final_and_every_kth() -> None:
    assert [e for e in range(11) if evaluated_epoch(e, 10, e, 4)] == [0, 4, 8, 10]
    assert [e for e in range(11) if evaluated_epoch(e, 10, e, 1)] == list(range(11))
    # a warm fit counts the schedule's epochs (total = offset + epoch)
    assert [e for e in range(6) if evaluated_epoch(e, 5, 200 + e, 3)] == [0, 1, 4, 5]


@pytest.mark.slow
def test_skipped_epochs_train_on_the_last_evaluated_structure() -> None:
    model = _fit(eval_every=3)
    rows = model.history_
    evaluated = [r["epoch"] for r in rows if r.get("evaluated", True)]
    assert evaluated == [0, 3, 6, 9, 12, 14]
    for r in rows:
        if r.get("evaluated", True):
            assert "val_acc" in r and "groups" in r
        else:
            assert "val_acc" not in r and "loss" in r
    # pseudo-labels and refinement only where evaluated, or at POL's first epoch (4 is skipped)
    assert [r["epoch"] for r in rows if "pseudo_labels" in r] == [4, 6, 9, 12]
    by_epoch = {r["epoch"]: r for r in rows}
    for skipped, source in [(5, 4), (7, 6), (8, 6), (10, 9), (11, 9), (13, 12)]:
        assert by_epoch[skipped]["edges"] == by_epoch[source]["edges"]
    found = model.predict()
    assert found.epoch == 14 and found.class_id.shape[0] == 150


@pytest.mark.slow
def test_eval_every_one_is_the_paper_loop() -> None:
    rows = _fit(eval_every=1).history_
    assert all("val_acc" in r and "evaluated" not in r for r in rows)
    assert [r["epoch"] for r in rows if "pseudo_labels" in r] == list(range(4, 14))


@pytest.mark.parametrize("overrides, message", [
    ({"eval_every": 0}, "eval_every must be >= 1"),
    ({"eval_every": 2, "stop_when_stable": 0.01}, "eval_every > 1 needs stop_when_stable none"),
])
def test_eval_every_refuses_nonsense(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ORALConfig(**overrides).validate()


def test_recording_every_epoch_needs_every_epoch_evaluated() -> None:
    graph, train = _graph()
    model = ORAL(ORALConfig(epochs=4, hidden_dim=8, progress=False, device="cpu", eval_every=2))
    model.record_epochs = True
    with pytest.raises(ValueError, match="record_epochs .* needs eval_every=1"):
        model.fit(graph.x, graph.edge_index, train)
