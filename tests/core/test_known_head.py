"""Known-class fidelity (``known_head``, ``known_head_pull``; oral_core.known_head): the head's
propagation, its relabelling rule, its place in a fit (the answer without it kept as a
diagnostic, validation accuracy measured again) and in a saved model."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.inference import ORALModel
from oral_core.known_head import (SGC_HOPS, choose_hops, cross_validated_accuracy,
                                  fit_known_head, head_probabilities, keep_known_fidelity,
                                  normalised_adjacency, propagated_features)
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


def test_normalised_adjacency_is_symmetric_with_self_loops():
    edges = torch.tensor([[0, 1, 2, 2], [1, 2, 2, 0]])  # one self-loop given, one direction each
    s = normalised_adjacency(edges, 4).to_dense()
    assert torch.allclose(s, s.T)
    assert torch.all(torch.diag(s) > 0)  # every node, the isolated node 3 included
    assert s[3, 3] == pytest.approx(1.0)
    # D^-1/2 (A + I) D^-1/2 of the triangle: every entry 1/3
    assert torch.allclose(s[:3, :3], torch.full((3, 3), 1 / 3))


def test_propagated_features_average_over_neighbourhoods():
    edges = torch.tensor([[0], [1]])
    x = torch.tensor([[1.0], [0.0], [5.0]])
    z = propagated_features(x, edges, hops=1)
    assert torch.allclose(z[:2], torch.full((2, 1), 0.5))
    assert z[2, 0] == pytest.approx(5.0)  # an isolated node keeps its own features


def test_fidelity_relabels_known_nodes_only_unless_pulled():
    class_id = torch.tensor([0, 1, 3, 3, -1])
    probs = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.95, 0.05], [0.6, 0.4], [0.99, 0.01]])
    out = keep_known_fidelity(class_id, probs, num_known=2)
    assert out.tolist() == [1, 0, 3, 3, -1]  # known nodes take the head's class; others stay
    pulled = keep_known_fidelity(class_id, probs, num_known=2, pull=0.9)
    assert pulled.tolist() == [1, 0, 0, 3, 0]  # confident novel / unassigned nodes join


def test_head_learns_a_graph_signal_the_features_lack():
    """Two communities, features pure noise except a weak label signal smoothed by the graph:
    the propagated head beats chance clearly on held-out nodes."""
    graph = make_attributed_sbm(num_nodes=300, num_classes=2, feature_dim=8, avg_degree=10.0,
                                homophily=0.95, feature_noise=4.0, seed=3)
    labels = torch.full_like(graph.y, -1)
    labels[::3] = graph.y[::3]
    head = fit_known_head(graph.x, graph.edge_index, labels, num_known=2)
    pred = head_probabilities(head, graph.x, graph.edge_index).argmax(1)
    held = labels < 0
    assert float((pred[held] == graph.y[held]).float().mean()) > 0.8


def _labelled(graph, every: int = 3) -> torch.Tensor:
    labels = torch.full_like(graph.y, -1)
    labels[::every] = graph.y[::every]
    return labels


def test_hops_chosen_by_cross_validation_follow_the_graph():
    """``known_head_hops=None``: on a graph whose edges join different classes (homophily 0.05)
    with informative features the features alone win; on a homophilous graph with noisy
    features the propagated ones. Only the labelled training nodes are read."""
    across = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=10.0,
                                 homophily=0.05, feature_noise=1.0, seed=1)
    hops, scores = choose_hops(across.x, across.edge_index, _labelled(across), num_known=4)
    assert hops == 0 and set(scores) == {0, 1, 2}
    assert scores[0] > scores[2] + 0.1
    within = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=10.0,
                                 homophily=0.95, feature_noise=4.0, seed=1)
    hops, scores = choose_hops(within.x, within.edge_index, _labelled(within), num_known=4)
    assert hops >= 1 and scores[hops] > scores[0] + 0.1


def test_cross_validation_reads_training_labels_only():
    """The choice depends on the labelled training nodes alone: changing what the unlabelled
    nodes' true classes are (they are never passed) or adding validation labels elsewhere cannot
    move it; too few labelled nodes keep the default steps."""
    graph = make_attributed_sbm(num_nodes=300, num_classes=3, feature_dim=8, avg_degree=8.0,
                                homophily=0.9, feature_noise=2.0, seed=2)
    labels = _labelled(graph)
    z = propagated_features(graph.x, graph.edge_index, 1)
    a = cross_validated_accuracy(z, labels, 3, seed=0)
    assert 0.0 <= a <= 1.0 and a == cross_validated_accuracy(z, labels, 3, seed=0)
    few = torch.full_like(graph.y, -1)
    few[:6] = graph.y[:6]
    assert choose_hops(graph.x, graph.edge_index, few, 3) == (SGC_HOPS, {})


def test_a_head_with_chosen_hops_keeps_them_for_the_model_file():
    graph = make_attributed_sbm(num_nodes=300, num_classes=3, feature_dim=8, avg_degree=8.0,
                                homophily=0.05, feature_noise=1.0, seed=4)
    head = fit_known_head(graph.x, graph.edge_index, _labelled(graph), num_known=3, hops=None)
    assert head["hops"] == 0 and set(head["cv"]) == {0, 1, 2}
    fixed = fit_known_head(graph.x, graph.edge_index, _labelled(graph), num_known=3)
    assert fixed["hops"] == SGC_HOPS and fixed["cv"] == {}
    # the relabelling reads the stored steps: a head of 0 steps ignores the edges
    no_edges = torch.empty(2, 0, dtype=torch.long)
    assert torch.allclose(head_probabilities(head, graph.x, graph.edge_index),
                          head_probabilities(head, graph.x, no_edges))


@pytest.mark.parametrize("scale", ["labelled", "all"])
def test_at_zero_steps_the_head_is_the_reference_classifier(scale):
    """Standardised on the rows ``known_head_scale`` names, as the champion gate's reference
    logistic regression is, a 0-step head names the validation nodes exactly as the reference
    does: a model whose known classes the head names is never below the gate's floor because of
    the head."""
    from oral_core.reference import reference_accuracy

    graph = make_attributed_sbm(num_nodes=300, num_classes=3, feature_dim=8, avg_degree=8.0,
                                homophily=0.3, feature_noise=2.5, seed=7)
    train, val = torch.full_like(graph.y, -1), torch.full_like(graph.y, -1)
    train[::3], val[1::5] = graph.y[::3], graph.y[1::5]
    val[::3] = -1
    head = fit_known_head(graph.x, graph.edge_index, train, 3, hops=0,
                          labelled=(train >= 0) | (val >= 0) if scale == "labelled" else None)
    guess = head_probabilities(head, graph.x, graph.edge_index).argmax(1)
    seen = val >= 0
    assert float((guess[seen] == val[seen]).float().mean()) == reference_accuracy(
        graph.x, train, val, scale=scale)
    # a sparse feature matrix gives the same reference
    assert reference_accuracy(graph.x.to_sparse(), train, val, scale=scale) == reference_accuracy(
        graph.x, train, val, scale=scale)


def test_the_head_standardises_over_the_rows_known_head_scale_names(one_thread):
    """``known_head_scale="labelled"``: the mean and spread of the training and validation
    nodes; ``"all"``: of every node, the nodes the head names. The fit passes the rows on and
    the model file keeps the statistics it used."""
    graph = make_attributed_sbm(num_nodes=200, num_classes=3, feature_dim=8, avg_degree=6.0,
                                homophily=0.85, feature_noise=1.0, seed=4)
    split = make_split(graph.y, seed=0, known_classes=[0, 1])
    train, val = split.train_labels(graph.y), split.val_labels(graph.y)
    z = propagated_features(graph.x, graph.edge_index, SGC_HOPS)
    rows = (train >= 0) | (val >= 0)
    assert not torch.allclose(z[rows].mean(0), z.mean(0))
    for scale, expected in (("labelled", z[rows].mean(0)), ("all", z.mean(0))):
        cfg = ORALConfig(epochs=6, hidden_dim=8, progress=False, pol_start_epoch=4,
                         cluster_warmup_epochs=2, seed=0, device="cpu", known_head="sgc",
                         known_head_scale=scale)
        model = ORAL(cfg).fit(graph.x, graph.edge_index, train, val)
        head = ORALModel.from_fit(model).payload["known_head"]
        assert torch.allclose(head["mean"], expected, atol=1e-6), scale
    direct = fit_known_head(graph.x, graph.edge_index, train, 2, labelled=None)
    assert torch.allclose(direct["mean"], z.mean(0), atol=1e-6)


def test_config_refuses_unknown_heads_and_a_pull_without_head():
    with pytest.raises(ValueError, match="known_head_scale must be one of"):
        ORALConfig(known_head="sgc", known_head_scale="val").validate()
    with pytest.raises(ValueError, match="known_head must be one of"):
        ORALConfig(known_head="gcn").validate()
    with pytest.raises(ValueError, match="known_head_pull needs a known_head"):
        ORALConfig(known_head_pull=0.9).validate()
    with pytest.raises(ValueError, match="known_head_pull must be in"):
        ORALConfig(known_head="sgc", known_head_pull=1.5).validate()
    with pytest.raises(ValueError, match="known_head_hops must be in"):
        ORALConfig(known_head="sgc", known_head_hops=7).validate()
    ORALConfig(known_head="sgc", known_head_hops=None).validate()


@pytest.fixture(scope="module")
def headed_fit(one_thread):
    graph = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=8.0,
                                homophily=0.85, feature_noise=1.5, seed=6)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    cfg = ORALConfig(epochs=30, hidden_dim=16, progress=False, pol_start_epoch=15,
                     cluster_warmup_epochs=5, seed=0, device="cpu", known_head="sgc")
    val = split.val_labels(graph.y)
    model = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y), val)
    return graph, val, model


@pytest.mark.slow
def test_a_fit_with_the_head_reports_the_relabelled_answer(headed_fit):
    graph, val, model = headed_fit
    found, plain = model.predict(), model.discoveries_["last_no_head"]
    head = model.selected_state()["known_head"]
    probs = head_probabilities(head, graph.x, graph.edge_index)
    assert torch.equal(found.class_id, keep_known_fidelity(plain.class_id, probs, 3))
    # novel classes are untouched: the same nodes, the same ids
    novel = plain.class_id >= 3
    assert torch.equal(found.class_id[novel], plain.class_id[novel])
    seen = val >= 0
    assert found.val_accuracy == pytest.approx(float((found.class_id[seen] == val[seen]).float().mean()))


@pytest.mark.slow
def test_a_saved_model_relabels_with_its_head(headed_fit, tmp_path):
    graph, _, model = headed_fit
    loaded = ORALModel.load(ORALModel.from_fit(model).save(tmp_path / "headed.pt"))
    assert loaded.known_head is not None
    edges = graph.edge_index
    out = loaded.assign(graph.x, edges)
    loaded.known_head = None
    bare = loaded.assign(graph.x, edges)
    probs = head_probabilities(model.selected_state()["known_head"], graph.x, edges)
    assert torch.equal(out.class_id, keep_known_fidelity(bare.class_id, probs, 3))


def test_without_the_head_nothing_changes_and_no_head_is_saved():
    graph = make_attributed_sbm(num_nodes=200, num_classes=3, feature_dim=8, avg_degree=6.0,
                                homophily=0.85, feature_noise=1.0, seed=4)
    split = make_split(graph.y, seed=0, known_classes=[0, 1])
    cfg = ORALConfig(epochs=12, hidden_dim=8, progress=False, pol_start_epoch=8,
                     cluster_warmup_epochs=3, seed=0, device="cpu")
    model = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                          split.val_labels(graph.y))
    assert "last_no_head" not in model.discoveries_
    assert ORALModel.from_fit(model).payload["known_head"] is None


@pytest.mark.parametrize("noise", [0.5, 3.0])
@pytest.mark.slow
def test_auto_uses_the_head_only_where_validation_nodes_favour_it(noise):
    graph = make_attributed_sbm(num_nodes=300, num_classes=4, feature_dim=16, avg_degree=8.0,
                                homophily=0.85, feature_noise=noise, seed=5)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    cfg = ORALConfig(epochs=20, hidden_dim=16, progress=False, pol_start_epoch=10,
                     cluster_warmup_epochs=5, seed=0, device="cpu", known_head="auto")
    model = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                          split.val_labels(graph.y))
    plain, headed = model.discoveries_["last_no_head"], model.discoveries_["last_head"]
    better = headed.val_accuracy > plain.val_accuracy
    assert model.known_head_used_ == better
    assert model.predict() is (headed if better else plain)
    assert (ORALModel.from_fit(model).payload["known_head"] is not None) == better


def test_a_saved_configuration_with_a_removed_switch_off_loads_and_one_with_it_on_is_refused():
    """``known_floor`` and ``known_split_trim`` left the method after their studies kept them
    off (issue 62): a configuration saved before, with them off, loads as it did; one with
    either on is refused with the study that decided it, not run without it."""
    from oral_core.config import RETIRED

    old = ORALConfig().to_dict() | {name: off for name, (off, _) in RETIRED.items()}
    assert ORALConfig.from_dict(old) == ORALConfig()
    for name, (off, study) in RETIRED.items():
        with pytest.raises(ValueError, match=f"{name}=True: the switch was removed") as err:
            ORALConfig.from_dict(ORALConfig().to_dict() | {name: True})
        assert study in str(err.value)
        with pytest.raises(TypeError):
            ORALConfig(**{name: off})
    with pytest.raises(ValueError, match="unknown ORAL configuration keys"):
        ORALConfig.from_dict(ORALConfig().to_dict() | {"known_flor": False})
