"""The known-split trim (``known_split_trim``, oral_core.novelty): before the known-split check
judges a novel group, its nodes the known head is surest of join the head's class, as many as
its validation nodes say are known."""
import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.novelty import (confidence_shift, known_split_groups, trim_cuts, trim_released,
                               unlabelled_per_val, validation_halves)
from oral_core.pseudo_labels import Ensemble
from oral_core.trainer import ORAL


def _nodes(parts):
    """``parts``: (group, kind, confidences) triples; the tensors of those nodes in order."""
    group, val, unl, labels, conf = [], [], [], [], []
    for g, kind, confs in parts:
        n = len(confs)
        group += [g] * n
        val += [kind == "val"] * n
        unl += [kind == "unl"] * n
        labels += [g if kind == "train" else -1] * n
        conf += list(confs)
    return (torch.tensor(group), torch.tensor(val), torch.tensor(unl), torch.tensor(labels),
            torch.tensor(conf, dtype=torch.float32))


def _slice(n_val: int, top: float = 0.99, step: float = 0.001):
    """Confidences of a known slice: ``n_val`` validation and ``2 * n_val`` unlabelled nodes,
    interleaved from ``top`` down (unlabelled, validation, unlabelled, ...)."""
    vals, unls, c = [], [], top
    for _ in range(n_val):
        for kind in ("unl", "val", "unl"):
            (vals if kind == "val" else unls).append(c)
            c -= step
    return vals, unls


def _mixed(n_val: int = 30, planted: int = 60):
    """Groups 0, 1: known classes 0, 1 (10 training, 20 validation, 40 unlabelled nodes each:
    2 unlabelled per validation node). Group 2: novel, a known slice (``n_val`` validation,
    ``2 * n_val`` unlabelled nodes, head confidence 0.99 down to about 0.9) and ``planted``
    planted nodes (0.3-0.5). Group 3: novel, 12 planted nodes, no validation node."""
    kv, ku = _slice(20)
    sv, su = _slice(n_val)
    pl = [0.5 - 0.2 * i / planted for i in range(planted)]
    parts = [(g, kind, c) for g in (0, 1)
             for kind, c in (("train", [0.99] * 10), ("val", kv), ("unl", ku))]
    parts += [(2, "val", sv), (2, "unl", su + pl), (3, "unl", [0.5] * 12)]
    return (*_nodes(parts), torch.tensor([0, 1, 2, 3]))


def test_the_cut_releases_the_known_slice_and_the_check_keeps_what_is_left():
    group, val, unl, _, conf, group_class = _mixed()
    assert unlabelled_per_val(group, group_class, unl, val, 2) == pytest.approx(2.0)
    # judged whole, the mixed group is a split: 2 * 30 / 120 = 0.5
    assert known_split_groups(group, group_class, unl, val, 2, 0.5).tolist() == [False, False, True, False]
    cut = trim_cuts(conf, group, group_class, unl, val, 2)
    # the best prefix is the whole slice (2 * 2 * 30 - 60 = 60); group 3 has no validation
    # node and known groups are never trimmed
    assert torch.isinf(cut[[0, 1, 3]]).all() and 0.85 < float(cut[2]) < 0.95
    released = trim_released(conf, group, cut)
    # the slice up to its last validation node (its last unlabelled node would cost 1)
    assert int(released.sum()) == 89 and bool((group[released] == 2).all())
    assert bool((conf[released] > 0.8).all())
    # what is left of group 2 (the planted nodes, no validation node) is kept
    assert not known_split_groups(group, group_class, unl, val, 2, 0.5, released).any()


def test_no_cut_where_nothing_gains_or_the_validation_nodes_are_not_surer():
    group, val, unl, _, conf, group_class = _mixed()
    # every validation node of group 2 below its planted nodes: not surer, and no prefix gains
    low = torch.where((group == 2) & val, conf - 0.7, conf)
    assert confidence_shift(low, group == 2, val, unl) < 0
    assert torch.isinf(trim_cuts(low, group, group_class, unl, val, 2)).all()
    # a split of a known class (its validation and unlabelled nodes interleaved alike): the
    # validation nodes are not surer, so no cut, though a prefix would gain
    split = (group == 2) & (conf > 0.8)
    assert abs(confidence_shift(conf, split, val, unl)) < 1
    only_split = torch.where((group == 2) & ~split, torch.tensor(3), group)
    assert torch.isinf(trim_cuts(conf, only_split, group_class, unl, val, 2)[2])
    assert torch.isfinite(trim_cuts(conf, only_split, group_class, unl, val, 2, min_shift=None)[2])
    # nothing to compare with (no validation node in a known group): no cut at all
    no_known_val = val & (group >= 2)
    assert not torch.isfinite(trim_cuts(conf, group, group_class, unl, no_known_val, 2)).any()


def _ensemble(group, num_groups):
    n = group.numel()
    p = torch.full((n, num_groups), 0.05)
    p[torch.arange(n), group] = 0.8
    return Ensemble(p, torch.ones(num_groups), [torch.arange(num_groups)] * 3, [num_groups] * 3)


def test_the_trainer_judges_the_trimmed_group_and_keeps_it():
    group, val, unl, labels, conf, group_class = _mixed()
    ens = _ensemble(group, 4)
    val_labels = torch.where(val, torch.where(group == 1, 1, 0), -1)
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_trim=True))
    model._trim = (conf, torch.zeros(group.numel(), dtype=torch.long))  # the fit's head
    assert model._known_split_check(ens, group_class, labels, val_labels, 2)[0] is ens
    checked, classes = model._known_split_check(ens, group_class, labels, val_labels, 2, trim=False)
    assert checked.mask.tolist() == [1.0, 1.0, 0.0, 1.0]
    # the answer: the released nodes take the head's class (0), the planted nodes stay novel
    class_id = group_class[group]
    cut, trimmed = model._trimmed(ens, group_class, None, class_id, labels, val_labels, 2)
    assert bool((trimmed[(group == 2) & (conf > 0.8)] == 0).mean(dtype=torch.float) > 0.9)
    assert bool((trimmed[(group == 2) & (conf < 0.6)] == 2).all())
    assert torch.equal(trimmed[group != 2], class_id[group != 2])


def test_what_is_left_is_judged_on_the_validation_nodes_that_did_not_cut():
    """A split of a known class whose first-half validation nodes happen to be the head's
    surest: cut and judged on the same nodes its rest would look novel; judged on the second
    half, whose nodes sit in the rest, it is a split and is suppressed whole."""
    kv, ku = _slice(20)
    # group 2: 30 validation nodes alternating sure / unsure (the halves alternate too, as the
    # 40 known validation nodes before them are even), 60 unlabelled nodes from sure to unsure
    sure = [0.99 - 0.001 * i for i in range(15)]
    unsure = [0.3 - 0.001 * i for i in range(15)]
    sv = [c for pair in zip(sure, unsure) for c in pair]
    su = [0.98 - 0.01 * i for i in range(60)]
    parts = [(g, kind, c) for g in (0, 1)
             for kind, c in (("train", [0.99] * 10), ("val", kv), ("unl", ku))]
    group, val, unl, labels, conf = _nodes(parts + [(2, "val", sv), (2, "unl", su)])
    choose, judge = validation_halves(val)
    assert bool((conf[choose & (group == 2)] > 0.9).all())
    assert bool((conf[judge & (group == 2)] < 0.4).all())
    ens = _ensemble(group, 3)
    val_labels = torch.where(val, torch.where(group == 1, 1, 0), -1)
    group_class = torch.tensor([0, 1, 2])
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_trim=True))
    model._trim = (conf, torch.zeros(group.numel(), dtype=torch.long))
    checked, classes = model._known_split_check(ens, group_class, labels, val_labels, 2)
    assert checked.mask.tolist() == [1.0, 1.0, 0.0] and classes[2] == -1
    # the biased form: cut and judged on the first half, the rest keeps no validation node
    cut = trim_cuts(conf, group, group_class, unl, choose, 2)
    assert torch.isfinite(cut[2])
    rest = known_split_groups(group, group_class, unl, choose, 2, 0.5, trim_released(conf, group, cut))
    assert not bool(rest[2])


def test_the_trim_needs_the_known_split_check():
    with pytest.raises(ValueError, match="known_split_trim needs the known-split check"):
        ORALConfig(known_split_trim=True, known_split_share=None).validate()
    ORALConfig(known_split_trim=True).validate()


@pytest.mark.slow
def test_a_trimmed_fit_trains_as_without_it_and_its_model_applies_the_cut(tmp_path, one_thread):
    """The head is fitted before training without drawing from the fit's random numbers, so the
    unchecked answer is a plain fit's; the saved model carries the cut and the head, and with a
    cut every novel node passes, a loaded model puts every novel node in the head's class."""
    from oral_core.inference import ORALModel
    from oral_core.known_head import head_probabilities
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=8.0,
                            homophily=0.85, feature_noise=0.5, seed=2)
    split = make_split(g.y, seed=0, known_classes=[0, 1, 2])
    train, val = split.train_labels(g.y), split.val_labels(g.y)
    base = dict(epochs=30, hidden_dim=16, progress=False, pol_start_epoch=15,
                cluster_warmup_epochs=5, seed=0, device="cpu", known_split_share=0.5)
    plain = ORAL(ORALConfig(**base)).fit(g.x, g.edge_index, train, val)
    trimmed = ORAL(ORALConfig(**base, known_split_trim=True)).with_diagnostics().fit(
        g.x, g.edge_index, train, val)
    quiet = ORAL(ORALConfig(**base, known_split_trim=True)).fit(g.x, g.edge_index, train, val)
    assert torch.equal(trimmed.discoveries["last_unchecked"].class_id,
                       plain.discoveries["last_unchecked"].class_id)
    assert torch.equal(trimmed.discoveries["last_no_trim"].class_id, plain.predict().class_id)
    assert "last_no_trim" not in plain.discoveries
    # the diagnostic is the harness's to ask for: the same fit without it answers the same
    assert "last_no_trim" not in quiet.discoveries and quiet.trim_moved == trimmed.trim_moved
    assert torch.equal(quiet.predict().class_id, trimmed.predict().class_id)
    edges = trimmed.selected_state()["edges"]
    loaded = ORALModel.load(ORALModel.from_fit(trimmed).save(tmp_path / "trim.pt"))
    assert torch.equal(loaded.assign(g.x, edges).class_id, trimmed.predict().class_id)
    # every novel node passes a cut of 0: all of them take the head's class
    loaded.split_trim["cut"] = torch.zeros_like(loaded.split_trim["cut"])
    head_class = head_probabilities(loaded.split_trim["head"], g.x, edges).argmax(dim=1)
    found = trimmed.predict().class_id
    assert bool((found >= 3).any())  # the fit reports a novel class to move
    expected = torch.where(found >= 3, head_class, found)
    assert torch.equal(loaded.assign(g.x, edges).class_id, expected)
