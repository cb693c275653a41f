"""A fitted ORAL saved to a weights-only file, loaded back, assigns the same classes (Eq. 8-9 with
the fitted partitions and alignment), and refuses files that are not ORAL models."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.inference import ORALModel
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


@pytest.fixture(scope="module", params=[1, 2], ids=["paper_ensemble", "ensemble_from_layer_2"])
def fitted(request):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    graph = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=8.0,
                                homophily=0.85, feature_noise=2.0, seed=1)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    cfg = ORALConfig(epochs=30, hidden_dim=16, progress=False, pol_start_epoch=15,
                     cluster_warmup_epochs=5, seed=0, device="cpu",
                     ensemble_from_layer=request.param)
    model = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y), split.val_labels(graph.y))
    yield graph, model
    torch.set_num_threads(before)


@pytest.mark.slow
def test_roundtrip_assigns_the_selected_classes(fitted, tmp_path):
    graph, model = fitted
    found = model.predict()
    path = ORALModel.from_fit(model, ["a", "b", "c"]).save(tmp_path / "model.pt")
    loaded = ORALModel.load(path)
    edges = model.selected_state()["edges"]
    out = loaded.assign(graph.x, edges)
    assert torch.equal(out.class_id, found.class_id)
    assert torch.allclose(out.confidence, found.confidence, atol=1e-5)
    assert torch.equal(out.is_novel, found.is_novel)
    assert loaded.class_names == ["a", "b", "c"] and loaded.num_known == 3


def test_load_is_weights_only(fitted, tmp_path):
    _, model = fitted
    path = ORALModel.from_fit(model).save(tmp_path / "m.pt")
    payload = torch.load(path, weights_only=True)  # would raise on pickled objects
    assert payload["format"] == "oral-model/1"


def test_rejects_other_files_and_wrong_width(fitted, tmp_path):
    graph, model = fitted
    bogus = tmp_path / "bogus.pt"
    torch.save({"format": "something-else"}, bogus)
    with pytest.raises(ValueError, match="not an ORAL model"):
        ORALModel.load(bogus)
    loaded = ORALModel.from_fit(model)
    with pytest.raises(ValueError, match="features per node"):
        loaded.assign(graph.x[:, :5], graph.edge_index)


# ------------------------------------------------ inference in node chunks (moved from
# tests/pipeline/test_large_inference.py: it exercises oral_core only)
NAMES = ["alpha", "beta", "it's \"gamma\""]


def test_assign_in_node_chunks_is_the_same_as_at_once():
    import torch

    from oral_core.config import ORALConfig
    from oral_core.inference import ORALModel
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm
    from oral_core.trainer import ORAL

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        graph = make_attributed_sbm(num_nodes=300, num_classes=4, feature_dim=12, avg_degree=6.0,
                                    homophily=0.85, feature_noise=2.0, seed=3)
        split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
        cfg = ORALConfig(epochs=12, hidden_dim=8, progress=False, pol_start_epoch=6,
                         cluster_warmup_epochs=3, seed=0, device="cpu")
        fitted = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                               split.val_labels(graph.y))
        model = ORALModel.from_fit(fitted, NAMES)
        edges = fitted.selected_state()["edges"]
        whole = model.assign(graph.x, edges, chunk_size=None)
        for chunk in (1, 7, 300, 10_000):
            part = model.assign(graph.x, edges, chunk_size=chunk)
            assert torch.equal(part.class_id, whole.class_id)
            assert torch.equal(part.confidence, whole.confidence)
            assert torch.equal(part.is_novel, whole.is_novel)
            assert part.num_classes == whole.num_classes
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_a_saved_checked_model_assigns_what_the_fit_reported(tmp_path, one_thread):
    """With the known-split check (``known_split_share``), the saved ensemble mask carries the
    suppressed groups, so a loaded model assigns the checked classes, not the unchecked ones."""
    graph = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=8.0,
                                homophily=0.85, feature_noise=0.5, seed=2)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    val = split.val_labels(graph.y)
    # planted: half of the novel class's nodes pose as validation nodes of known class 0,
    # so the novel group looks like a split of a known class and the check suppresses it
    novel = (graph.y == 3).nonzero().flatten()
    val[novel[: novel.numel() // 2]] = 0
    cfg = ORALConfig(epochs=30, hidden_dim=16, progress=False, pol_start_epoch=15,
                     cluster_warmup_epochs=5, seed=0, device="cpu", known_split_share=0.5)
    model = ORAL(cfg).fit(graph.x, graph.edge_index, split.train_labels(graph.y), val)
    found, unchecked = model.predict(), model.discoveries_["last_unchecked"]
    assert unchecked.num_classes == 4 and found.num_classes == 3  # the check fired
    loaded = ORALModel.load(ORALModel.from_fit(model).save(tmp_path / "checked.pt"))
    out = loaded.assign(graph.x, model.selected_state()["edges"])
    assert torch.equal(out.class_id, found.class_id)
    assert not torch.equal(out.class_id, unchecked.class_id)
