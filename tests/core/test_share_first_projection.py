"""``ORALConfig.share_first_projection`` (issue 61, build item 1: "the two views sharing what they
can"): the augmented view of a training step (Eq. 12) reuses the training view's first-layer
projection ``W x`` and its Eq. 1 scores, since both views read the same dropped-out input. The
forward pass is the same to the bit; the gradients equal up to float summation order (the two
views' gradients of ``W x`` are summed before the product with the input, not after)."""
from __future__ import annotations

import pytest
import torch

from oral_core.attention import ORALNetwork
from oral_core.clustering import finest_partition
from oral_core.config import ORALConfig
from oral_core.identity import config_hash
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def graph():
    return make_attributed_sbm(num_nodes=300, num_classes=4, feature_dim=24, seed=3)


def two_views(graph, share: bool):
    """A training step's two forward passes (the second on a view with half the edges), the
    input dropped out once: their summed outputs, and every parameter's gradient of a loss
    over both views."""
    labels = torch.full((graph.num_nodes,), -1)
    labels[:80] = graph.y[:80] % 3
    torch.manual_seed(0)
    net = ORALNetwork(24, 16, 3, 10, 0.1, attention_temperature=0.5).train()
    with torch.no_grad():
        _, parts = net(graph.x, graph.edge_index,
                       cluster=lambda idx, r, protos: finest_partition(r, labels, 3))
    torch.manual_seed(1)  # the same input mask and later layers' dropout masks
    x_in = torch.nn.functional.dropout(graph.x, 0.5)
    first = net.first_projection(x_in) if share else None
    outs, _ = net(x_in, graph.edge_index, partitions=parts, input_dropout=False, first=first)
    view = graph.edge_index[:, ::2]
    aug, _ = net(x_in, view, partitions=parts, input_dropout=False, first=first)
    loss = sum((o.p * torch.arange(o.p.shape[1])).sum() + o.h.square().mean()
               for o in outs + aug)
    loss.backward()
    return ([o.h.detach() for o in outs + aug] + [o.p.detach() for o in outs + aug],
            {k: v.grad for k, v in net.named_parameters()})


def test_the_views_share_the_projection_with_the_same_outputs_and_gradients(graph) -> None:
    (out_ref, grad_ref), (out_new, grad_new) = two_views(graph, False), two_views(graph, True)
    for a, b in zip(out_new, out_ref):
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # the same forward, to the bit
    assert grad_ref.keys() == grad_new.keys()
    for k in grad_ref:
        scale = float(grad_ref[k].abs().max())  # summation order: relative to the largest
        torch.testing.assert_close(grad_new[k], grad_ref[k], rtol=0, atol=1e-6 * scale, msg=k)


def test_a_reused_projection_refuses_a_second_input_dropout(graph) -> None:
    net = ORALNetwork(24, 16, 2, 10, 0.1).train()
    first = net.first_projection(graph.x)
    with pytest.raises(ValueError, match="input_dropout=False"):
        net(graph.x, graph.edge_index, cluster=lambda i, r, p: None, first=first)


def fit(graph, **overrides):
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    config = ORALConfig(epochs=10, hidden_dim=16, num_prototypes=12, progress=False,
                        cluster_warmup_epochs=3, pol_start_epoch=5, seed=0, **overrides)
    return ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                            split.val_labels(graph.y))


@pytest.mark.parametrize("overrides", [{}, {"batch_size": 120}, {"sparse_input_below": 1.0}],
                         ids=["full-batch", "mini-batch", "sparse-input"])
def test_a_fit_with_the_shared_projection_follows_the_same_losses(graph, overrides) -> None:
    """The first epoch's loss is the same (the same forward); later epochs drift by float
    summation order only, so every epoch's loss stays within a small tolerance here."""
    ref = [e for e in fit(graph, **overrides).history_ if "loss" in e]  # the training epochs
    new = [e for e in fit(graph, share_first_projection=True, **overrides).history_ if "loss" in e]
    assert len(ref) == len(new) > 5
    assert new[0]["loss"] == pytest.approx(ref[0]["loss"], rel=1e-6)
    for a, b in zip(new, ref):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-3), (a["epoch"], a["loss"], b["loss"])


def test_the_switch_off_leaves_result_hashes_unchanged() -> None:
    base = ORALConfig()
    assert base.share_first_projection is False
    assert config_hash(base, "row") == config_hash(ORALConfig(share_first_projection=False), "row")
    assert config_hash(base, "row") != config_hash(ORALConfig(share_first_projection=True), "row")
