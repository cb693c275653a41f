"""oral_core/recut.py and oral_core/kmeans.py: the novel groups re-cut on fixed propagated
features (the novel_recut study), and the k-means it uses."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.kmeans import kmeans
from oral_core.recut import recut_novel
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


def two_blob_graph():
    """12 known nodes (class 0 and 1) and 40 novel nodes in two feature blobs (20 each), no
    edges: the propagated features are the features themselves, scaled."""
    gen = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 0.0, 0.0], [8.0, 8.0, 0.0], [0.0, 8.0, 8.0], [8.0, 0.0, 8.0]])
    group = torch.tensor([0] * 6 + [1] * 6 + [2] * 20 + [3] * 20)
    x = centres[group] + 0.3 * torch.randn(group.numel(), 3, generator=gen)
    return x, torch.empty(2, 0, dtype=torch.long), group


def test_kmeans_separates_two_blobs_whatever_the_seed():
    x, _, group = two_blob_graph()
    z = x[12:].double()
    a, _, _ = kmeans(z, 2, seed=0)
    b, _, _ = kmeans(z, 2, seed=5)
    truth = group[12:] - 2
    assert torch.equal(a, truth) or torch.equal(a, 1 - truth)
    assert torch.equal(a, b) or torch.equal(a, 1 - b)


def test_the_recut_finds_the_blobs_keeps_known_nodes_and_the_fits_ids():
    x, edges, group = two_blob_graph()
    fitted = group.clone()
    fitted[12:] = torch.tensor([2, 5] * 20)  # the fit's novel ids 2 and 5, cut across the blobs
    fitted[12] = fitted[14] = 5  # ...with a slight majority of blob 2 (nodes 12-31) in id 5
    got = recut_novel(fitted, x, edges, num_known=2, dims=3)
    assert torch.equal(got[:12], group[:12])  # known nodes untouched
    assert set(got[12:].tolist()) == {2, 5}  # the fit's ids, no new ones
    assert len(set(got[12:32].tolist())) == 1 and len(set(got[32:].tolist())) == 1
    assert got[12] == 5 and got[32] == 2  # each blob takes the id it overlaps most


def test_two_fits_that_agree_on_the_novel_nodes_agree_on_their_recut():
    x, edges, group = two_blob_graph()
    gen = torch.Generator().manual_seed(1)
    a, b = group.clone(), group.clone()
    a[12:] = 2 + torch.randint(2, (40,), generator=gen)  # two unrelated cuts, ids 2-3 ...
    b[12:] = torch.where(torch.randint(2, (40,), generator=gen) > 0, 7, 4)  # ... and 4, 7
    ra, rb = recut_novel(a, x, edges, 2, dims=3), recut_novel(b, x, edges, 2, dims=3)
    pairs = set(zip(ra[12:].tolist(), rb[12:].tolist()))
    assert len(pairs) == 2  # the same two groups, named by each fit's own ids


def test_an_answer_with_fewer_than_two_novel_classes_is_left_as_it_is():
    x, edges, group = two_blob_graph()
    one = group.clone()
    one[12:] = 2
    assert torch.equal(recut_novel(one, x, edges, 2, dims=3), one)
    known_only = torch.zeros_like(group)
    assert torch.equal(recut_novel(known_only, x, edges, 2, dims=3), known_only)


@pytest.mark.slow
def test_a_fit_with_the_recut_answers_the_recut_of_the_same_fit_without_it():
    """What benchmarks/novel_recut.py relies on: the re-cut runs after training and draws from
    its own generator, so the option's answer is the re-cut of the plain fit's, node for node,
    and the plain answer stays beside it as ``last_no_recut``."""
    graph = make_attributed_sbm(num_nodes=150, num_classes=4, feature_dim=8, seed=3)
    train = graph.y.clone()
    train[train >= 2] = -1
    train[torch.arange(150) % 2 == 1] = -1
    base = dict(epochs=10, hidden_dim=8, num_prototypes=12, cluster_warmup_epochs=2,
                pol_start_epoch=4, progress=False, device="cpu", seed=1)
    plain = ORAL(ORALConfig(**base)).fit(graph.x, graph.edge_index, train)
    cut = ORAL(ORALConfig(**base, novel_recut=True, novel_recut_dims=4)).fit(
        graph.x, graph.edge_index, train)
    expected = recut_novel(plain.predict().class_id, graph.x, graph.edge_index, 2, dims=4)
    assert torch.equal(cut.predict().class_id, expected)
    assert torch.equal(cut.discoveries["last"].class_id, expected)
    assert torch.equal(cut.discoveries["last_no_recut"].class_id, plain.predict().class_id)


def test_the_recut_dims_must_be_positive():
    with pytest.raises(ValueError, match="novel_recut_dims"):
        ORALConfig(novel_recut_dims=0).validate()
