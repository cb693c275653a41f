"""The known-absorb check (``known_absorb_share``, oral_core.novelty): a known group releases
unlabelled nodes to the novel groups only when it holds more than its validation nodes account
for, and then exactly the excess, least attached first."""
import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.novelty import (median_unlabelled_per_val, novelty_margin, release_absorbed,
                               release_margins, released_known_bound)
from oral_core.pseudo_labels import Ensemble
from oral_core.trainer import ORAL, discover


def _planted():
    """Groups 0-2 are known classes 0-2 (10 training, 4 validation, 4 unlabelled nodes each);
    group 0 also holds 8 unlabelled nodes of a novel class (absorbed), which lean to group 3,
    the novel group (10 unlabelled nodes), more than its own unlabelled nodes do."""
    group, val, unl, absorbed = [], [], [], []
    for g, (n_train, n_val, n_unl) in enumerate([(10, 4, 4), (10, 4, 4), (10, 4, 4), (0, 0, 10)]):
        for kind, n in (("train", n_train), ("val", n_val), ("unl", n_unl)):
            group += [g] * n
            val += [kind == "val"] * n
            unl += [kind == "unl"] * n
            absorbed += [False] * n
    group += [0] * 8
    val += [False] * 8
    unl += [True] * 8
    absorbed += [True] * 8
    group, absorbed = torch.tensor(group), torch.tensor(absorbed)
    p = torch.full((group.numel(), 4), 0.05)
    p[torch.arange(group.numel()), group] = 0.8
    p[absorbed, 3] = 0.3  # the absorbed nodes' second choice is the novel group, by far
    return group, torch.tensor(val), torch.tensor(unl), absorbed, p, torch.tensor([0, 1, 2, 3])


def test_the_rate_is_the_median_so_one_contaminated_group_does_not_inflate_it():
    group, val, unl, _, _, group_class = _planted()
    # per known group unlabelled / validation: 12/4, 4/4, 4/4; a pooled rate would be 20/12
    assert median_unlabelled_per_val(group, group_class, unl, val, 3) == pytest.approx(1.0)
    assert median_unlabelled_per_val(group, group_class, unl, val & (group == 3), 3) is None


def test_the_excess_of_a_contaminated_known_group_moves_to_the_novel_group():
    group, val, unl, absorbed, p, group_class = _planted()
    tau = release_margins(p, group, group_class, unl, val, 3, threshold=0.5)
    # group 0: known share 1 * 4 / 12 = 0.33 < 0.5, excess 8; the others hold no excess
    assert torch.isfinite(tau).tolist() == [True, False, False, False]
    moved = release_absorbed(p, group, group_class, tau, 3)
    assert torch.equal(moved != group, absorbed)
    assert bool((moved[absorbed] == 3).all())
    # a lower bar than the group's share (0.33) releases nothing
    assert not torch.isfinite(release_margins(p, group, group_class, unl, val, 3, 0.3)).any()


def test_the_least_attached_nodes_go_first():
    group, val, unl, absorbed, p, group_class = _planted()
    margin, best = novelty_margin(p, group, group_class >= 3)
    assert bool((best == 3).all())
    assert float(margin[absorbed].max()) < float(margin[~absorbed & (group == 0)].min())


def test_an_excess_under_one_node_releases_nothing():
    # known groups 1, 2: 8 validation, 9 unlabelled nodes (rate 9/8); group 0: 4 validation, 5
    # unlabelled nodes, share 4.5 / 5 = 0.9 < 1.0 but an excess of 0.5 rounds to no node
    sizes = {0: (4, 5), 1: (8, 9), 2: (8, 9), 3: (0, 6)}
    group = torch.tensor([g for g, (v, u) in sizes.items() for _ in range(v + u)])
    val = torch.tensor([i < v for g, (v, u) in sizes.items() for i in range(v + u)])
    unl, group_class = ~val, torch.tensor([0, 1, 2, 3])
    p = torch.full((group.numel(), 4), 0.1)
    p[torch.arange(group.numel()), group] = 0.7
    assert median_unlabelled_per_val(group, group_class, unl, val, 3) == pytest.approx(9 / 8)
    assert not torch.isfinite(release_margins(p, group, group_class, unl, val, 3, 1.0)).any()
    # without validation nodes in group 0 its estimated share is 0: its 5 unlabelled nodes are
    # all excess, and (every node of the group being as attached here) the whole group moves
    no_val = val & (group != 0)
    tau = release_margins(p, group, group_class, unl, no_val, 3, 0.5)
    moved = release_absorbed(p, group, group_class, tau, 3)
    assert torch.equal(moved != group, group == 0) and bool((moved[group == 0] == 3).all())


def _unseparated():
    """The planted graph, but group 0's validation nodes lean to the novel group as much as
    its 8 extra unlabelled nodes do: the margin cannot tell them apart (the BlogCatalog seed 7
    failure: a known class's own nodes, validation nodes included, released)."""
    group, val, unl, absorbed, p, group_class = _planted()
    p[(group == 0) & val, 3] = 0.3
    return group, val, unl, absorbed, p, group_class


def test_unguarded_the_release_takes_validation_nodes_that_the_margin_cannot_separate():
    group, val, unl, absorbed, p, group_class = _unseparated()
    tau = release_margins(p, group, group_class, unl, val, 3, 0.5)
    moved = release_absorbed(p, group, group_class, tau, 3)
    assert bool((moved[(group == 0) & val] == 3).all())


def test_the_guard_keeps_a_release_whose_nodes_look_known():
    group, val, unl, absorbed, p, group_class = _unseparated()
    margin, _ = novelty_margin(p, group, group_class >= 3)
    cut = float(margin[absorbed].max())
    # all 4 validation nodes of group 0 under the cut (share 1) * 12 unlabelled / excess 8
    assert released_known_bound(margin, group, 0, cut, unl, val, 8) == pytest.approx(1.5)
    tau = release_margins(p, group, group_class, unl, val, 3, 0.5, guard=True)
    assert not torch.isfinite(tau).any()
    # half of them under the cut: bound 0.75, under a bar of 0.8 the release goes through
    p[((group == 0) & val).nonzero().flatten()[:2], 3] = 0.05
    assert released_known_bound(margin := novelty_margin(p, group, group_class >= 3)[0], group, 0,
                                cut, unl, val, 8) == pytest.approx(0.75)
    assert torch.isfinite(release_margins(p, group, group_class, unl, val, 3, 0.8, guard=True)[0])
    assert not torch.isfinite(release_margins(p, group, group_class, unl, val, 3, 0.75,
                                              guard=True)).any()


def test_the_guard_lets_a_separated_release_through_unchanged():
    group, val, unl, absorbed, p, group_class = _planted()
    for threshold in (0.5, 0.75):
        unguarded = release_margins(p, group, group_class, unl, val, 3, threshold)
        guarded = release_margins(p, group, group_class, unl, val, 3, threshold, guard=True)
        assert torch.equal(guarded, unguarded) and bool(torch.isfinite(guarded[0]))


def test_without_a_novel_group_nothing_is_released():
    group, val, unl, _, p, group_class = _planted()
    no_novel = torch.tensor([0, 1, 2, -1])
    tau = release_margins(p, group, no_novel, unl, val, 3, 0.5)
    assert not torch.isfinite(tau).any()
    assert torch.equal(release_absorbed(p, group, no_novel, tau, 3), group)


def test_discover_reports_the_released_nodes_as_novel_with_their_new_confidence():
    group, val, unl, absorbed, p, group_class = _planted()
    ens = Ensemble(p, torch.ones(4), [torch.arange(4)] * 3, [4, 4, 4])
    labels = torch.where(~val & ~unl, group, torch.full_like(group, -1))
    val_labels = torch.where(val, group, torch.full_like(group, -1))
    model = ORAL(ORALConfig(known_absorb_share=0.5))
    tau = model._known_absorb_check(ens, group_class, labels, val_labels, 3)
    class_id, conf, novel = discover(ens, group_class, 3, tau)
    assert torch.equal(novel, (group == 3) | absorbed)
    assert conf[absorbed] == pytest.approx(torch.full((8,), 0.3 / 1.2))
    # nothing to release: no margins
    assert ORAL(ORALConfig(known_absorb_share=0.2))._known_absorb_check(
        ens, group_class, labels, val_labels, 3) is None


def test_known_absorb_share_must_be_a_share():
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match=r"known_absorb_share must be in \(0, 1\]"):
            ORALConfig(known_absorb_share=bad).validate()


def _planted_fit():
    """A 4-class SBM with classes 0-2 known, and half of known class 0's validation nodes
    unlabelled, so its group looks like it holds twice the unlabelled nodes its validation nodes
    account for: the check releases nodes of class 0 itself (there is no absorbed novel node)."""
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=400, num_classes=4, feature_dim=16, avg_degree=8.0,
                            homophily=0.85, feature_noise=0.5, seed=2)
    split = make_split(g.y, seed=0, known_classes=[0, 1, 2])
    train, val = split.train_labels(g.y), split.val_labels(g.y)
    # the other check off, and the plain fit without either, whatever the defaults are
    base = dict(epochs=30, hidden_dim=16, progress=False, pol_start_epoch=15,
                cluster_warmup_epochs=5, seed=0, device="cpu", known_split_share=None)
    val0 = (val == 0).nonzero().flatten()
    val_cut = val.clone()
    val_cut[val0[: val0.numel() // 2 + 1]] = -1
    return g, train, val_cut, base


@pytest.mark.slow
def test_the_guard_stops_a_release_that_cuts_through_a_known_class(one_thread):
    """Unguarded, the planted fit releases class-0 nodes (validation nodes among them: its
    validation accuracy falls); guarded, the validation nodes under the margin show the release
    would be mostly known nodes, and nothing moves."""
    g, train, val_cut, base = _planted_fit()
    has_val = val_cut >= 0
    results = {}
    for guard in (False, True):
        fit = ORAL(ORALConfig(**base, known_absorb_share=0.75, known_absorb_guard=guard)
                   ).with_diagnostics().fit(g.x, g.edge_index, train, val_cut)
        found, unchecked = fit.predict(), fit.discoveries_["last_unchecked"]
        moved = found.class_id != unchecked.class_id
        results[guard] = (fit.selected_state()["release_margin"], moved,
                          float((found.class_id[has_val] == val_cut[has_val]).float().mean()),
                          float((unchecked.class_id[has_val] == val_cut[has_val]).float().mean()))
    margins, moved, val_acc, unchecked_acc = results[False]
    assert margins is not None and bool(moved.any()) and bool((g.y[moved] == 0).all())
    assert val_acc < unchecked_acc
    margins, moved, val_acc, unchecked_acc = results[True]
    assert margins is None and not bool(moved.any()) and val_acc == unchecked_acc
    # the guarded fit also keeps what the unguarded check would have reported
    unguarded = fit.discoveries_["last_unguarded"]
    assert bool((unguarded.class_id != fit.predict().class_id).any())
    assert unguarded.val_accuracy == pytest.approx(results[False][2])


@pytest.mark.slow
def test_an_absorb_checked_fit_keeps_the_unchecked_answer_and_its_model_assigns_the_checked_one(
        tmp_path, one_thread):
    """The check changes the reported classes only (the unchecked answer is a plain fit's), and
    the saved model carries its margins, so a loaded model assigns the checked classes."""
    from oral_core.inference import ORALModel

    g, train, val_cut, base = _planted_fit()
    plain = ORAL(ORALConfig(**base, known_absorb_share=None)).fit(g.x, g.edge_index, train, val_cut)
    checked = ORAL(ORALConfig(**base, known_absorb_share=0.75,
                              known_absorb_guard=False)).fit(g.x, g.edge_index, train, val_cut)
    found, unchecked = checked.predict(), checked.discoveries_["last_unchecked"]
    assert torch.isfinite(checked.selected_state()["release_margin"]).any()  # the check fired
    assert int(found.is_novel.sum()) > int(unchecked.is_novel.sum())
    loaded = ORALModel.load(ORALModel.from_fit(checked).save(tmp_path / "absorb.pt"))
    out = loaded.assign(g.x, checked.selected_state()["edges"])
    assert torch.equal(out.class_id, found.class_id)
    assert torch.equal(unchecked.class_id, plain.predict().class_id)
    assert "last_unchecked" not in plain.discoveries_
