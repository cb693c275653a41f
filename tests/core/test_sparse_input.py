"""The sparse first-layer input (``ORALConfig.sparse_input_below``, issue 18): the projection of a
CSR input equals the dense one with its gradients, the input dropout keeps the distribution of
dense dropout (zeros stay zero, kept values scaled by ``1 / (1 - p)``), and the fit chooses the
layout by feature density (full batch only)."""
from __future__ import annotations

import pytest
import torch

from oral_core.attention import ORALNetwork
from oral_core.clustering import finest_partition
from oral_core.config import ORALConfig
from oral_core.identity import LATER_FIELDS, config_hash
from oral_core.features import (feature_density, input_dropout, is_sparse, network_input,
                                sparse_linear)
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def bag_of_words(n: int = 200, f: int = 300, density: float = 0.03, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, f, generator=g) < density
    return mask.float() * (torch.rand(n, f, generator=g) + 0.5)


def test_network_input_is_sparse_only_below_the_density_threshold() -> None:
    x = bag_of_words(density=0.03)
    density = feature_density(x)
    assert 0.02 < density < 0.04
    assert is_sparse(network_input(x, density + 0.01))
    assert not is_sparse(network_input(x, density))  # at the threshold: dense
    assert not is_sparse(network_input(x, 0.0))  # 0: never
    assert network_input(x, 0.0) is x
    torch.testing.assert_close(network_input(x, 1.0).to_dense(), x, rtol=0, atol=0)


def test_sparse_projection_equals_dense_with_gradients() -> None:
    x = bag_of_words()
    torch.manual_seed(0)
    lin = torch.nn.Linear(x.shape[1], 16)
    dense = lin(x)
    dense.pow(2).sum().backward()
    ref = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad()
    sparse = sparse_linear(network_input(x, 1.0), lin)
    sparse.pow(2).sum().backward()
    torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=1e-5)
    for got, want in zip((p.grad for p in lin.parameters()), ref):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-5)


def test_sparse_input_dropout_keeps_zeros_and_scales_kept_values() -> None:
    x = bag_of_words(n=400, f=500, density=0.05)
    xs = network_input(x, 1.0)
    torch.manual_seed(0)
    dropped = input_dropout(xs, 0.5)
    assert is_sparse(dropped)
    out = dropped.to_dense()
    assert bool((out[x == 0] == 0).all())  # a zero feature stays zero
    kept = (out != 0) & (x != 0)
    torch.testing.assert_close(out[kept], 2.0 * x[kept])  # scaled by 1 / (1 - p)
    share = float(kept.sum()) / float((x != 0).sum())
    assert abs(share - 0.5) < 0.03, share  # ~ Binomial(10k, 0.5)
    assert not is_sparse(input_dropout(x, 0.5))  # a dense input gets torch's dropout


def test_network_with_sparse_input_equals_dense_and_refuses_its_own_dropout() -> None:
    graph = make_attributed_sbm(num_nodes=200, num_classes=4, feature_dim=24, seed=1)
    x = torch.relu(graph.x - 1.0)  # about 16% non-zero
    labels = torch.full((graph.num_nodes,), -1)
    labels[:60] = graph.y[:60] % 3

    def cluster(idx, r, prototypes):
        return finest_partition(r, labels, 3)

    torch.manual_seed(0)
    net = ORALNetwork(24, 16, 3, 10, 0.1, attention_kernel="spmm").eval()
    with torch.no_grad():
        dense, parts = net(x, graph.edge_index, cluster=cluster)
        sparse, _ = net(network_input(x, 1.0), graph.edge_index, partitions=parts)
    for a, b in zip(dense, sparse):
        torch.testing.assert_close(b.h, a.h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(b.p, a.p, atol=1e-5, rtol=1e-5)
    net.train()
    with pytest.raises(ValueError, match="input_dropout"):
        net(network_input(x, 1.0), graph.edge_index, partitions=parts)


def fit(graph, x, **overrides) -> ORAL:
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    config = ORALConfig(epochs=12, hidden_dim=16, num_prototypes=12, progress=False,
                        cluster_warmup_epochs=3, pol_start_epoch=6, seed=0, **overrides)
    return ORAL(config).fit(x, graph.edge_index, split.train_labels(graph.y),
                            split.val_labels(graph.y))


@pytest.mark.parametrize("below, overrides, layout", [
    (0.0, {}, "dense"), (0.5, {}, "sparse"), (0.05, {}, "dense"),
    (0.5, {"batch_size": 120}, "dense")],  # mini-batch training keeps the dense rows
    ids=["off", "sparse", "above-threshold", "mini-batch"])
def test_fit_chooses_the_input_layout(below, overrides, layout) -> None:
    graph = make_attributed_sbm(num_nodes=300, num_classes=4, feature_dim=24, seed=3)
    x = torch.relu(graph.x - 1.0)
    assert 0.1 < feature_density(x) < 0.3
    model = fit(graph, x, sparse_input_below=below, **overrides)
    assert model.input_layout_ == layout
    found = model.predict()
    assert found.class_id.shape == (graph.num_nodes,)
    # the known classes are still learnt through the sparse projection
    known = (graph.y < 3) & (found.class_id < 3)
    assert float((found.class_id[known] == graph.y[known]).float().mean()) > 0.5


def test_sparse_input_field_is_validated_and_left_out_of_old_hashes() -> None:
    with pytest.raises(ValueError, match="sparse_input_below"):
        ORALConfig(sparse_input_below=1.5).validate()
    assert LATER_FIELDS["sparse_input_below"] == 0.0
    off = ORALConfig(sparse_input_below=0.0)
    assert config_hash(off, "row") == config_hash(ORALConfig(**{
        k: v for k, v in off.to_dict().items() if k != "sparse_input_below"}), "row")
    assert config_hash(off, "row") != config_hash(ORALConfig(sparse_input_below=0.1), "row")
