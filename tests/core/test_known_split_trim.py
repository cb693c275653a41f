"""The known-split trim (``known_split_trim``, oral_core.novelty): before the known-split check
judges a novel group, its nodes the known head is surest of join the head's class, as many as
its validation nodes say are known."""
import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.novelty import known_split_groups, trim_cuts, trim_released, unlabelled_per_val
from oral_core.pseudo_labels import Ensemble
from oral_core.trainer import ORAL


def _mixed():
    """Groups 0, 1: known classes 0, 1 (10 training, 4 validation, 8 unlabelled nodes each:
    2 unlabelled per validation node). Group 2: novel, a known slice (4 validation, 8 unlabelled
    known nodes, head confidence 0.9) and 6 planted nodes (confidence 0.4). Group 3: novel, 12
    planted nodes, no validation node."""
    group, val, unl, labels, conf = [], [], [], [], []
    layout = [(0, [(10, "train", 0.9), (4, "val", 0.9), (8, "unl", 0.9)]),
              (1, [(10, "train", 0.9), (4, "val", 0.9), (8, "unl", 0.9)]),
              (2, [(4, "val", 0.9), (8, "unl", 0.9), (6, "unl", 0.4)]),
              (3, [(12, "unl", 0.5)])]
    for g, parts in layout:
        for n, kind, c in parts:
            group += [g] * n
            val += [kind == "val"] * n
            unl += [kind == "unl"] * n
            labels += [g if kind == "train" else -1] * n
            conf += [c] * n
    return (torch.tensor(group), torch.tensor(val), torch.tensor(unl), torch.tensor(labels),
            torch.tensor(conf), torch.tensor([0, 1, 2, 3]))


def test_the_cut_releases_the_known_slice_and_the_check_keeps_what_is_left():
    group, val, unl, _, conf, group_class = _mixed()
    assert unlabelled_per_val(group, group_class, unl, val, 2) == pytest.approx(2.0)
    # judged whole, the mixed group is a split: 2 * 4 / 14 = 0.57 >= 0.5
    assert known_split_groups(group, group_class, unl, val, 2, 0.5).tolist() == [False, False, True, False]
    cut = trim_cuts(conf, group, group_class, unl, val, 2)
    # prefix of the 12 confident nodes: 2 * 2 * 4 - 8 = 8, the best gain; group 3 has no
    # validation node and known groups are never trimmed
    assert cut.tolist() == [float("inf"), float("inf"), pytest.approx(0.9), float("inf")]
    released = trim_released(conf, group, cut)
    assert int(released.sum()) == 12 and bool((group[released] == 2).all())
    assert torch.allclose(conf[released], torch.tensor(0.9))
    # what is left of group 2 (6 planted nodes, no validation node) is kept
    assert not known_split_groups(group, group_class, unl, val, 2, 0.5, released).any()


def test_no_prefix_that_gains_means_no_cut():
    group, val, unl, _, conf, group_class = _mixed()
    # one validation node in the planted group, less confident than its 12 planted nodes: every
    # prefix loses (the best, all 13 nodes, gains 2 * 2 * 1 - 12 < 0)
    group, val = torch.cat([group, torch.tensor([3])]), torch.cat([val, torch.tensor([True])])
    unl, conf = torch.cat([unl, torch.tensor([False])]), torch.cat([conf, torch.tensor([0.1])])
    cut = trim_cuts(conf, group, group_class, unl, val, 2)
    assert cut[2] == pytest.approx(0.9) and cut[3] == float("inf")
    # nothing to compare with (no validation node in a known group): no cut at all
    no_known_val = val & (group >= 2)
    assert not torch.isfinite(trim_cuts(conf, group, group_class, unl, no_known_val, 2)).any()


def test_the_trainer_judges_the_trimmed_group_and_keeps_it():
    group, val, unl, labels, conf, group_class = _mixed()
    n = group.numel()
    p = torch.full((n, 4), 0.05)
    p[torch.arange(n), group] = 0.8
    ens = Ensemble(p, torch.ones(4), [torch.arange(4)] * 3, [4, 4, 4])
    val_labels = torch.where(val, torch.where(group == 1, 1, 0), -1)
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_trim=True))
    model._trim = (conf, torch.zeros(n, dtype=torch.long))  # what the fit's head gives
    assert model._known_split_check(ens, group_class, labels, val_labels, 2)[0] is ens
    checked, classes = model._known_split_check(ens, group_class, labels, val_labels, 2, trim=False)
    assert checked.mask.tolist() == [1.0, 1.0, 0.0, 1.0]
    # the answer: the released nodes take the head's class (0), the rest of group 2 stays novel
    class_id = group_class[group]
    cut, trimmed = model._trimmed(ens, group_class, None, class_id, labels, val_labels, 2)
    assert bool((trimmed[(group == 2) & (conf > 0.5)] == 0).all())
    assert bool((trimmed[(group == 2) & (conf < 0.5)] == 2).all())
    assert torch.equal(trimmed[group != 2], class_id[group != 2])


def test_what_is_left_is_judged_on_the_validation_nodes_that_did_not_cut():
    """A split of a known class whose validation nodes of the first half happen to be the head's
    surest: cut and judged on the same nodes its rest would look novel; judged on the second
    half, whose nodes sit in the rest, it is a split and is suppressed whole."""
    from oral_core.novelty import validation_halves

    group, val, unl, labels, conf = [], [], [], [], []
    for g in (0, 1):  # known groups: 10 training, 4 validation, 8 unlabelled nodes
        for n, kind in ((10, "train"), (4, "val"), (8, "unl")):
            group += [g] * n
            val += [kind == "val"] * n
            unl += [kind == "unl"] * n
            labels += [g if kind == "train" else -1] * n
            conf += [0.9] * n
    # group 2: validation nodes alternating sure / unsure (halves alternate too), 4 sure and
    # 12 unsure unlabelled nodes, all of known class 0
    group += [2] * 24
    val += [True] * 8 + [False] * 16
    unl += [False] * 8 + [True] * 16
    labels += [-1] * 24
    conf += [0.9, 0.2] * 4 + [0.9] * 4 + [0.2] * 12
    group, val, unl = torch.tensor(group), torch.tensor(val), torch.tensor(unl)
    labels, conf = torch.tensor(labels), torch.tensor(conf)
    choose, judge = validation_halves(val)
    assert bool((conf[choose & (group == 2)] == 0.9).all())
    assert bool((conf[judge & (group == 2)] == 0.2).all())
    n = group.numel()
    p = torch.full((n, 3), 0.05)
    p[torch.arange(n), group] = 0.8
    ens = Ensemble(p, torch.ones(3), [torch.arange(3)] * 3, [3, 3, 3])
    val_labels = torch.where(val, torch.where(group == 1, 1, 0), -1)
    group_class = torch.tensor([0, 1, 2])
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_trim=True))
    model._trim = (conf, torch.zeros(n, dtype=torch.long))
    checked, classes = model._known_split_check(ens, group_class, labels, val_labels, 2)
    assert checked.mask.tolist() == [1.0, 1.0, 0.0] and classes[2] == -1
    # the biased form: cut and judged on the first half, the rest keeps no validation node
    cut = trim_cuts(conf, group, group_class, unl, choose, 2)
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
    trimmed = ORAL(ORALConfig(**base, known_split_trim=True)).fit(g.x, g.edge_index, train, val)
    assert torch.equal(trimmed.discoveries["last_unchecked"].class_id,
                       plain.discoveries["last_unchecked"].class_id)
    assert torch.equal(trimmed.discoveries["last_no_trim"].class_id, plain.predict().class_id)
    assert "last_no_trim" not in plain.discoveries
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
