"""The known-split check (``known_split_share``, oral_core.novelty): a novel group is suppressed
only when the validation nodes it holds say its unlabelled nodes are mostly of known classes."""
import json

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.novelty import known_share, known_split_groups, unlabelled_per_val
from oral_core.pseudo_labels import Ensemble
from oral_core.trainer import ORAL


def _planted():
    """Groups 0, 1 are known classes 0, 1; group 2 is a split of known class 0 (validation nodes
    at the known rate: 1 per 2 unlabelled); group 3 holds novel nodes only (no validation node).
    Known groups: 10 training, 4 validation, 8 unlabelled nodes each."""
    group, val, unl, labels = [], [], [], []
    for g, (n_train, n_val, n_unl, cls) in enumerate([(10, 4, 8, 0), (10, 4, 8, 1),
                                                      (0, 3, 6, -1), (0, 0, 12, -1)]):
        for kind, n in (("train", n_train), ("val", n_val), ("unl", n_unl)):
            group += [g] * n
            val += [kind == "val"] * n
            unl += [kind == "unl"] * n
            labels += [cls if kind == "train" else -1] * n
    return (torch.tensor(group), torch.tensor(val), torch.tensor(unl), torch.tensor(labels),
            torch.tensor([0, 1, 2, 3]))


def test_the_known_share_is_near_one_for_a_known_split_and_zero_for_novel_nodes():
    group, val, unl, _, group_class = _planted()
    rate = unlabelled_per_val(group, group_class, unl, val, num_known=2)
    assert rate == pytest.approx(16 / 8)
    share = known_share(group, unl, val, 4, rate)
    assert share.tolist() == pytest.approx([1.0, 1.0, 1.0, 0.0])
    assert known_split_groups(group, group_class, unl, val, 2, 0.5).tolist() == [False, False, True, False]
    # a higher bar keeps the split group; known groups are never suppressed, whatever their share
    assert not known_split_groups(group, group_class, unl, val, 2, 1.5).any()


def test_no_validation_node_in_a_known_group_means_no_check():
    group, val, unl, _, group_class = _planted()
    val = val & (group >= 2)  # validation nodes only in the novel groups
    assert unlabelled_per_val(group, group_class, unl, val, 2) is None
    assert not known_split_groups(group, group_class, unl, val, 2, 0.5).any()


def test_a_group_of_validation_nodes_only_counts_as_known():
    group = torch.tensor([0, 0, 0, 1, 1])
    val = torch.tensor([True, False, False, True, True])
    unl = ~val
    share = known_share(group, unl, val, 2, 2.0)
    assert share[0] == pytest.approx(1.0) and share[1] == float("inf")


def test_the_trainer_suppresses_the_split_group_and_its_nodes_take_their_next_group():
    group, val, unl, labels, group_class = _planted()
    n = group.numel()
    p = torch.full((n, 4), 0.05)
    p[torch.arange(n), group] = 0.8
    p[group == 2, 0] = 0.1  # the split's nodes lean to known class 0 next
    ens = Ensemble(p, torch.ones(4), [torch.arange(4)] * 3, [4, 4, 4])
    val_labels = torch.where(val, torch.where(group == 1, 1, 0), -1)
    model = ORAL(ORALConfig(known_split_share=0.5))
    checked, classes = model._known_split_check(ens, group_class, labels, val_labels, 2)
    assert checked.mask.tolist() == [1.0, 1.0, 0.0, 1.0]
    assert classes[2] == -1 and classes[3] == 2  # the real novel group keeps the first novel id
    moved = (checked.p + 1e-12 * checked.mask).argmax(dim=1)[group == 2]
    assert bool((moved == 0).all())
    # nothing to suppress: the ensemble itself comes back
    model = ORAL(ORALConfig(known_split_share=2.0))
    assert model._known_split_check(ens, group_class, labels, val_labels, 2)[0] is ens


def test_known_split_share_must_be_positive():
    with pytest.raises(ValueError, match="known_split_share must be > 0"):
        ORALConfig(known_split_share=0.0).validate()


@pytest.mark.slow
def test_a_checked_fit_keeps_the_unchecked_answer_of_the_same_training(one_thread):
    """The check changes the reported classes only: the training, and so the unchecked answer,
    is that of a fit without it."""
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=200, num_classes=4, feature_dim=8, seed=3)
    split = make_split(g.y, seed=0)
    train, val = split.train_labels(g.y), split.val_labels(g.y)
    # the other check off, and the plain fit without either, whatever the defaults are
    base = dict(epochs=12, hidden_dim=8, num_prototypes=8, pol_start_epoch=4, progress=False,
                cluster_warmup_epochs=2, known_absorb_share=None)
    plain = ORAL(ORALConfig(**base, known_split_share=None)).fit(g.x, g.edge_index, train, val)
    checked = ORAL(ORALConfig(**base, known_split_share=0.5))
    checked.record_epochs = True
    checked.fit(g.x, g.edge_index, train, val)
    assert torch.equal(checked.discoveries_["last_unchecked"].class_id, plain.predict().class_id)
    assert len(checked.epoch_unchecked_ids_) == len(checked.epoch_class_ids_) == 13
    assert torch.equal(checked.epoch_unchecked_ids_[-1].long(), plain.predict().class_id.long())
    assert "last_unchecked" not in plain.discoveries_


def test_the_no_novel_proxy_reads_labelled_nodes_only_and_keeps_a_label_per_class():
    from harness.proxy import no_novel_task
    from oral_core.splits import make_split
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=300, num_classes=5, feature_dim=8, seed=1)
    split = make_split(g.y, seed=2)
    task = no_novel_task(g.y, split.train_mask, split.val_mask, split.known_classes, seed=2)
    assert torch.equal(task["keep"], split.train_mask | split.val_mask)
    kept_train = split.train_mask[task["keep"]]
    # the stand-ins are training nodes that lost their label, about half of each class
    assert bool((kept_train[task["scored"]]).all()) and bool((task["train"][task["scored"]] == -1).all())
    for c in range(split.num_known):
        n = int(((task["y"] == c) & kept_train).sum())
        hidden = int(((task["y"] == c) & task["scored"]).sum())
        assert abs(hidden - n / 2) <= 1 and int((task["train"] == c).sum()) >= 1
    assert bool((task["val"][split.val_mask[task["keep"]]] >= 0).all())
    # test labels cannot change it
    y_other = g.y.clone()
    test = ~(split.train_mask | split.val_mask)
    y_other[test] = (y_other[test] + 1) % g.num_classes
    other = no_novel_task(y_other, split.train_mask, split.val_mask, split.known_classes, seed=2)
    assert all(torch.equal(task[k], other[k]) for k in task)
    with pytest.raises(ValueError, match="share must be in"):
        no_novel_task(g.y, split.train_mask, split.val_mask, split.known_classes, 0, share=1.0)


def test_false_novelty_reports_the_checked_and_unchecked_answers(tmp_path, one_thread, monkeypatch):
    """``benchmarks.false_novelty --labelled-only --set known_split_share=...``: one fit per seed
    gives both answers, and the table pairs them."""
    import benchmarks.false_novelty as fn
    from harness.experiment import Prepared
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=200, num_classes=5, feature_dim=8, seed=3)
    g.name = "tiny"
    monkeypatch.setattr(fn, "prepare", lambda dataset, data_dir=None: Prepared(g, g.x, "none"))
    small = ["epochs=12", "hidden_dim=8", "num_prototypes=8", "pol_start_epoch=4",
             "cluster_warmup_epochs=2", "known_split_share=0.5"]
    argv = ["--dataset", "tiny", "--seeds", "1", "--labelled-only", "--results", str(tmp_path)]
    assert fn.main(argv + [x for kv in small for x in ("--set", kv)]) == 0
    folder, = (p for p in (tmp_path / "false_novelty").iterdir() if p.is_dir())
    assert folder.name.startswith("tiny-labelled-epochs=12")
    row = json.loads((folder / "seed_0.json").read_text())
    assert row["labelled_only"] and set(row["unchecked"]) == {"classes_found", "false_novel_share", "accuracy"}
    text = (tmp_path / "false_novelty" / "false_novelty.md").read_text()
    assert "## No-novel proxy (labelled nodes only)" in text and "paired within each fit" in text
    assert "## Known-class subgraph" not in text
