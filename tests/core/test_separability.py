"""The known-class separability yardstick (oral_core.separability) and the gate it puts on
``novel_wholeness`` (``novel_wholeness_if="separable"``)."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.separability import explained_share, known_separability, two_means
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


def blobs(centres: torch.Tensor, per: int, noise: float, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(centres.shape[0]).repeat_interleave(per)
    x = centres[y] + noise * torch.randn(y.numel(), centres.shape[1], generator=gen)
    return x, y


def no_edges() -> torch.Tensor:
    return torch.empty(2, 0, dtype=torch.long)


def test_two_means_finds_two_blobs_and_explains_most_of_their_spread():
    x, y = blobs(torch.tensor([[0.0, 0.0], [10.0, 0.0]]), 40, 1.0)
    cut = two_means(x, torch.Generator().manual_seed(0))
    agree = float((cut == y).float().mean())
    assert max(agree, 1 - agree) == 1.0
    assert explained_share(x, cut) > 0.9
    # one blob cut in two: far less of its spread
    one = x[y == 0]
    assert explained_share(one, two_means(one, torch.Generator().manual_seed(0))) < 0.7
    # nothing to cut
    assert explained_share(torch.ones(5, 2), torch.zeros(5, dtype=torch.long)) == 0.0


def test_compact_classes_are_separable_and_broad_overlapping_ones_are_not():
    gen = torch.Generator().manual_seed(1)
    centres = 8.0 * torch.randn(6, 20, generator=gen)
    x, y = blobs(centres, 60, 1.0)
    labels = torch.where(torch.arange(y.numel()) % 2 == 0, y, -1)
    got = known_separability(x, no_edges(), labels, 6)
    assert got["separable"] and got["pair_median"] > got["cut_max"] >= got["cut_quartile"]
    assert len(got["cuts"]) == 6 and len(got["pairs"]) == 15
    # the same nodes with classes drawn at random: no two classes apart, nothing separable
    shuffled = torch.where(labels >= 0, torch.randint(0, 6, labels.shape, generator=gen), -1)
    broad = known_separability(x, no_edges(), shuffled, 6)
    assert not broad["separable"]


def test_too_few_labelled_classes_give_no_yardstick():
    x, y = blobs(torch.tensor([[0.0, 0.0], [10.0, 0.0]]), 40, 1.0)
    got = known_separability(x, no_edges(), y, 2)
    assert got == {"separable": False, "cut_quartile": None, "cut_max": None,
                   "pair_median": None, "cuts": [], "pairs": [], "size": 0}


def test_upper_quartile():
    from oral_core.separability import upper_quartile

    assert upper_quartile([1.0, 2.0, 3.0, 4.0, 5.0]) == 4.0
    assert upper_quartile([4.0, 1.0, 3.0, 2.0]) == 3.25
    assert upper_quartile([7.0]) == 7.0


def small_fit_inputs(noise: float):
    g = make_attributed_sbm(num_nodes=240, num_classes=4, feature_dim=16, seed=2,
                            feature_noise=noise)
    n = g.y.numel()
    gen = torch.Generator().manual_seed(0)
    labelled = (torch.rand(n, generator=gen) < 0.6) & (g.y < 3)
    is_val = torch.rand(n, generator=gen) < 0.3
    train = torch.where(labelled & ~is_val, g.y, -1)
    val = torch.where(labelled & is_val, g.y, -1)
    return g, train, val


FAST = dict(epochs=12, cluster_warmup_epochs=2, pol_start_epoch=6, progress=False,
            resolution_steps=8, num_prototypes=12)


@pytest.mark.parametrize("noise", [0.3, 20.0])
def test_the_gate_applies_novel_wholeness_only_where_the_known_classes_are_separable(noise):
    g, train, val = small_fit_inputs(noise)
    gated = ORAL(ORALConfig(**FAST, novel_wholeness=0.9, novel_wholeness_if="separable"))
    gated.fit(g.x, g.edge_index, train, val)
    assert gated.separability_ is not None
    if noise < 1:  # compact classes: the fit is the novel_wholeness fit
        assert gated.separability_["separable"] and gated.novel_wholeness_used_ == 0.9
        twin = ORAL(ORALConfig(**FAST, novel_wholeness=0.9)).fit(g.x, g.edge_index, train, val)
    else:  # features that are mostly noise: the fit is the paper's, draw for draw
        assert not gated.separability_["separable"] and gated.novel_wholeness_used_ is None
        twin = ORAL(ORALConfig(**FAST)).fit(g.x, g.edge_index, train, val)
    assert twin.separability_ is None
    assert torch.equal(gated.discoveries_["last"].class_id, twin.discoveries_["last"].class_id)
    losses = [h["loss"] for h in gated.history_ if "loss" in h]
    assert len(losses) == FAST["epochs"]
    assert losses == [h["loss"] for h in twin.history_ if "loss" in h]


def test_the_gate_is_a_named_switch_left_out_of_the_configuration_hash():
    from oral_core.identity import config_hash

    with pytest.raises(ValueError, match="novel_wholeness_if"):
        ORALConfig(novel_wholeness_if="sometimes").validate()
    assert (config_hash(ORALConfig(), "raw")
            == config_hash(ORALConfig(novel_wholeness_if="always"), "raw")
            != config_hash(ORALConfig(novel_wholeness_if="separable"), "raw"))
