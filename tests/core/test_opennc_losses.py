"""OpenNCD's losses behind ``ORALConfig.opennc_losses`` (oral_core.opennc_losses, issue 17)."""
from __future__ import annotations

import math

import pytest
import torch

from oral_core.attention import LayerOutput
from oral_core.clustering import Partition
from oral_core.config import ORALConfig
from oral_core.identity import config_hash
from oral_core.opennc_losses import (BALANCE_WEIGHT, group_prior, group_prior_balance,
                                     group_similarity, opennc_terms, positive_pairs,
                                     prototype_similarity)
from oral_core.prototypes import balance_regulariser
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_labelled_partners_share_the_class_and_are_never_the_node_itself() -> None:
    labels = torch.tensor([0, 1, 0, 0, 2, 1, -1, -1])
    h = torch.randn(8, 4)
    for seed in range(20):
        pairs = positive_pairs(h, labels, pool=8, generator=torch.Generator().manual_seed(seed))
        known = labels >= 0
        assert torch.equal(labels[pairs[known]], labels[known])
        assert pairs[4] == 4  # class 2 has one labelled node: its own partner
        others = known & (torch.arange(8) != 4)
        assert (pairs[others] != torch.arange(8)[others]).all()


def test_every_labelled_class_member_can_be_drawn() -> None:
    labels = torch.tensor([0, 0, 0, 0])
    seen = {int(positive_pairs(torch.randn(4, 3), labels, 4, torch.Generator().manual_seed(s))[0])
            for s in range(60)}
    assert seen == {1, 2, 3}


def test_unlabelled_partner_is_the_nearest_other_node_of_the_pool() -> None:
    torch.manual_seed(0)
    h = torch.randn(30, 5)
    labels = torch.full((30,), -1)
    pairs = positive_pairs(h, labels, pool=30, generator=torch.Generator().manual_seed(1))
    z = torch.nn.functional.normalize(h, dim=1)
    sim = z @ z.t()
    sim.fill_diagonal_(-2.0)
    assert torch.equal(pairs, sim.argmax(dim=1))
    # a smaller pool: the partner is the best among the pool's members
    small = positive_pairs(h, labels, pool=5, generator=torch.Generator().manual_seed(2))
    assert (small != torch.arange(30)).all() and len(set(small.tolist())) <= 5


def test_prototype_similarity_is_zero_for_agreeing_one_hot_scores_and_positive_otherwise() -> None:
    r = torch.eye(4)
    assert prototype_similarity(r, r, torch.arange(4)).item() == pytest.approx(0.0, abs=1e-6)
    uniform = torch.full((4, 4), 0.25)
    assert prototype_similarity(uniform, uniform, torch.arange(4)).item() == pytest.approx(math.log(4))
    # a partner in another prototype: the agreement is 0 and the loss large
    assert prototype_similarity(r, r, torch.tensor([1, 0, 3, 2])).item() > 10


def test_group_similarity_is_symmetric_and_the_entropy_for_equal_views() -> None:
    p = torch.softmax(torch.randn(6, 3), dim=1)
    q = torch.softmax(torch.randn(6, 3), dim=1)
    assert group_similarity(p, q).item() == pytest.approx(group_similarity(q, p).item())
    entropy = -(p * p.log()).sum(dim=1).mean()
    assert group_similarity(p, p).item() == pytest.approx(entropy.item(), rel=1e-5)


def test_group_prior_gives_every_group_the_same_mass() -> None:
    groups = torch.tensor([0, 0, 0, 1, 2, 2])
    prior = group_prior(groups, 3)
    assert prior.sum().item() == pytest.approx(1.0)
    for g in range(3):
        assert prior[groups == g].sum().item() == pytest.approx(1 / 3)


def test_group_prior_balance_is_zero_at_the_prior_and_with_singletons_a_kl_to_uniform() -> None:
    groups = torch.tensor([0, 0, 1])
    at_prior = group_prior(groups, 2).expand(5, 3)
    assert group_prior_balance(at_prior, groups, 2).item() == pytest.approx(0.0, abs=1e-6)
    r = torch.softmax(torch.randn(10, 4), dim=1)
    marginal = r.mean(0)
    kl = (marginal * (marginal * 4).log()).sum()
    assert group_prior_balance(r, torch.arange(4), 4).item() == pytest.approx(kl.item(), rel=1e-5)
    assert group_prior_balance(r, torch.arange(4), 4).item() != pytest.approx(
        balance_regulariser(r).item())  # the other direction of the KL (Eq. 2)


def test_opennc_terms_sum_over_the_layers_and_weight_the_balance() -> None:
    torch.manual_seed(0)
    outs = [LayerOutput(torch.softmax(torch.randn(8, 4), 1), torch.softmax(torch.randn(8, 2), 1),
                        torch.randn(8, 3)) for _ in range(2)]
    part = Partition(torch.tensor([0, 0, 1, 1]), 2, torch.tensor([0, -1]), 1.0, 1.0)
    labels = torch.tensor([0, 0, 1, 1, -1, -1, -1, -1])
    terms = opennc_terms(outs, outs, [part, part], labels, 8, torch.Generator().manual_seed(0))
    balance = sum(group_prior_balance(o.r, part.prototype_group, 2) for o in outs)
    assert terms["balance"].item() == pytest.approx(BALANCE_WEIGHT * balance.item(), rel=1e-5)
    assert terms["group"].item() == pytest.approx(sum(group_similarity(o.p, o.p) for o in outs).item(),
                                                  rel=1e-5)
    assert terms["proto"].item() > 0


def _fit(**settings):
    graph = make_attributed_sbm(num_nodes=240, num_classes=4, feature_dim=12, seed=5)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    config = ORALConfig(epochs=4, hidden_dim=16, num_prototypes=10, progress=False,
                        cluster_warmup_epochs=1, pol_start_epoch=2, seed=0, **settings)
    return ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                            split.val_labels(graph.y))


@pytest.mark.parametrize("batch", [None, 64])
@pytest.mark.slow
def test_a_fit_with_the_switch_trains_on_the_opennc_terms(batch) -> None:
    """Full batch and mini-batch: every epoch's row carries the OpenNCD term (from epoch 0, before
    pseudo-labels start), the balance differs from Eq. 2's and the fit differs from the paper's."""
    on = _fit(opennc_losses=True, batch_size=batch)
    off = _fit(batch_size=batch)
    trained_on = [row for row in on.history_ if "l_ce" in row]  # the last row only evaluates
    trained_off = [row for row in off.history_ if "l_ce" in row]
    assert len(trained_on) == 4 and all(row["l_opennc"] > 0 for row in trained_on)
    assert not any("l_opennc" in row for row in off.history_)
    assert trained_on[0]["l_reg"] != pytest.approx(trained_off[0]["l_reg"])
    assert trained_on[-1]["loss"] != pytest.approx(trained_off[-1]["loss"])


def test_the_switch_is_named_in_the_hash_only_when_on_and_its_pool_is_checked() -> None:
    assert config_hash(ORALConfig(), "row") == config_hash(
        ORALConfig(opennc_losses=False, opennc_pair_pool=512), "row")
    assert config_hash(ORALConfig(opennc_losses=True), "row") != config_hash(ORALConfig(), "row")
    with pytest.raises(ValueError, match="opennc_pair_pool must be >= 2"):
        ORALConfig(opennc_pair_pool=1).validate()


def test_opennc_terms_computes_only_the_terms_asked_for() -> None:
    torch.manual_seed(1)
    outs = [LayerOutput(torch.softmax(torch.randn(8, 4), 1), torch.softmax(torch.randn(8, 2), 1),
                        torch.randn(8, 3))]
    part = Partition(torch.tensor([0, 0, 1, 1]), 2, torch.tensor([0, -1]), 1.0, 1.0)
    labels = torch.tensor([0, 0, 1, 1, -1, -1, -1, -1])
    every = opennc_terms(outs, outs, [part], labels, 8, torch.Generator().manual_seed(0))
    some = opennc_terms(outs, outs, [part], labels, 8, torch.Generator().manual_seed(0), ("group",))
    assert set(every) == {"proto", "group", "balance"} and set(some) == {"group"}
    assert some["group"].item() == every["group"].item()


def test_opennc_terms_switch_keeps_eq2_without_the_balance_and_is_checked() -> None:
    """``opennc_terms=proto+group``: Eq. 2 stays (the same l_reg as the paper's fit on the first
    step); the default, every term, is the earlier switch exactly (hash-neutral)."""
    part = _fit(opennc_losses=True, opennc_terms="proto+group")
    off = _fit()
    assert part.history_[0]["l_reg"] == pytest.approx(off.history_[0]["l_reg"])
    assert part.history_[0]["l_opennc"] > 0
    balance_only = _fit(opennc_losses=True, opennc_terms="balance")
    assert balance_only.history_[0]["l_opennc"] == 0.0
    assert balance_only.history_[0]["l_reg"] != pytest.approx(off.history_[0]["l_reg"])
    assert config_hash(ORALConfig(opennc_losses=True, opennc_terms="proto+group+balance"), "row") == \
        config_hash(ORALConfig(opennc_losses=True), "row")
    for bad in ("", "proto+proto", "proto,group", "ent"):
        with pytest.raises(ValueError, match="opennc_terms must join distinct terms"):
            ORALConfig(opennc_terms=bad).validate()
