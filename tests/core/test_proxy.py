"""The per-graph choice by the held-out-class proxy (``harness.proxy``; ``oral choose``)."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from oral_core.config import ORALConfig
from harness.proxy import (Choice, choose_setting, find_seed, lower_bound, proxy_task, run_key,
                             task_from_labels, window_rows)
from oral_core.synthetic import make_attributed_sbm


def test_lower_bound_is_mean_minus_standard_error():
    mean, se, bound = lower_bound([1.0, 3.0])
    assert mean == 2.0 and se == pytest.approx(1.0) and bound == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two seeds"):
        lower_bound([1.0])


def test_choice_takes_the_highest_positive_bound_else_the_defaults():
    scores = {"defaults": {0: 50.0, 1: 60.0, 2: 55.0},
              "a": {0: 58.0, 1: 66.0, 2: 63.0},      # +8, +6, +8: a steady gain
              "b": {0: 80.0, 1: 55.0, 2: 70.0},      # +30, -5, +15: larger mean, far noisier
              "c": {0: 40.0, 1: 50.0, 2: 45.0}}      # a loss
    cands = {"a": {"gamma": 0.1}, "b": {"mu": 0.1}, "c": {"pol": False}}
    got = choose_setting(scores, cands)
    assert isinstance(got, Choice) and got.name == "a" and got.overrides == {"gamma": 0.1}
    assert [r["candidate"] for r in got.rows] == ["a", "b", "c"]
    assert got.rows[0]["ahead"] == 3 and got.rows[2]["bound"] < 0
    # no candidate clears its standard error: the paper's settings stay
    noisy = {"defaults": {0: 50.0, 1: 60.0}, "b": {0: 70.0, 1: 50.0}}
    assert choose_setting(noisy, {"b": {"mu": 0.1}}).overrides == {}
    # only seeds every setting has are paired
    partial = {"defaults": {0: 50.0, 1: 60.0, 2: 0.0}, "a": {0: 55.0, 1: 66.0}}
    assert choose_setting(partial, {"a": {"gamma": 0.1}}).rows[0]["seeds"] == 2


def _seed_file(folder, config, seed, hide="extremes", all_=70.0, rule="mean@200:10"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"seed_{seed}.json").write_text(json.dumps(
        {"key": run_key(config, hide), "rows": [{"rule": rule, "seed": seed, "all": all_}]}))


def test_a_saved_fit_is_reused_only_for_the_same_proxy_run(tmp_path):
    cfg = ORALConfig(gamma=0.1)
    _seed_file(tmp_path / "a" / "deep", cfg, 0, all_=71.0)
    key = run_key(cfg, "extremes")
    assert find_seed([tmp_path], key, 0, "mean@200:10")["all"] == 71.0  # found recursively
    assert find_seed([tmp_path], key, 1, "mean@200:10") is None        # other seed
    assert find_seed([tmp_path], key, 0, "mean@200:25") is None        # other window
    assert find_seed([tmp_path], run_key(cfg, "rotate"), 0, "mean@200:10") is None
    assert find_seed([tmp_path], run_key(ORALConfig(gamma=0.3), "extremes"), 0, "mean@200:10") is None
    # a field added later, at its old default, and the progress bar do not change the training
    same = ORALConfig(gamma=0.1, eval_every=1, progress=False)
    assert find_seed([tmp_path], run_key(same, "extremes"), 0, "mean@200:10")["all"] == 71.0
    other_epochs = ORALConfig(gamma=0.1, epochs=150)  # horizon differs
    assert find_seed([tmp_path], run_key(other_epochs, "extremes"), 0, "mean@150:10") is None
    # a strict fit never answers the paper protocol (other known classes), nor the reverse
    assert find_seed([tmp_path], run_key(cfg, "extremes", "paper"), 0, "mean@200:10") is None
    _seed_file(tmp_path / "p", cfg, 2, all_=60.0)
    paper = run_key(cfg, "extremes", "paper")
    (tmp_path / "p" / "seed_2.json").write_text(json.dumps(
        {"key": paper, "rows": [{"rule": "mean@200:10", "seed": 2, "all": 60.0}]}))
    assert find_seed([tmp_path], paper, 2, "mean@200:10")["all"] == 60.0
    assert find_seed([tmp_path], key, 2, "mean@200:10") is None
    # the data is part of the key: a fit on another graph never answers
    cora, photo = run_key(cfg, "extremes", data="cora"), run_key(cfg, "extremes", data="photo")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "seed_5.json").write_text(json.dumps(
        {"key": cora, "rows": [{"rule": "mean@200:10", "seed": 5, "all": 50.0}]}))
    assert find_seed([tmp_path / "d"], cora, 5, "mean@200:10")["all"] == 50.0
    assert find_seed([tmp_path / "d"], photo, 5, "mean@200:10") is None
    # a file without data (benchmarks.epoch_vote) answers only from a folder named after it
    _seed_file(tmp_path / "photo-noprior-extremes", cfg, 6, all_=40.0)
    _seed_file(tmp_path / "cora-noprior-extremes", cfg, 7, all_=45.0)
    assert find_seed([tmp_path], photo, 6, "mean@200:10")["all"] == 40.0
    assert find_seed([tmp_path], photo, 7, "mean@200:10") is None
    (tmp_path / "a" / "seed_0.json").write_text("{not json")  # a broken file is passed over
    assert find_seed([tmp_path], key, 0, "mean@200:10")["all"] == 71.0


def test_snapshot_task_reads_labelled_nodes_only():
    """A snapshot's labels (-1 unlabelled): the hidden classes are the largest and the smallest
    known class, none of their nodes is trained on, and only labelled nodes are scored."""
    y = torch.tensor([0] * 10 + [1] * 6 + [2] * 3 + [-1] * 8)
    train_mask = torch.zeros(27, dtype=torch.bool)
    train_mask[[0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 16, 17]] = True
    val_mask = (y >= 0) & ~train_mask
    task = task_from_labels(y, train_mask, val_mask, torch.tensor([0, 1, 2]), 3, seed=0,
                            hide="extremes", disjoint_val=True)
    assert task.hidden == (0, 2) and task.visible.tolist() == [1]
    assert set(task.train[task.train >= 0].tolist()) == {0}             # class 1, re-indexed
    assert not task.train[(y == 0) | (y == 2)].ge(0).any()
    assert not task.scored[y < 0].any() and task.scored[(y == 0) | (y == 2)].all()
    assert not (task.scored & (task.val >= 0)).any()                    # selection half unscored


def test_window_score_never_reads_a_test_label(one_thread):
    """The mean-of-last-epochs score ``oral choose`` compares is the same with every test label
    scrambled (the split is held fixed)."""
    from harness import proxy

    g = make_attributed_sbm(num_nodes=200, num_classes=6, feature_dim=8, seed=2)
    cfg = ORALConfig(epochs=4, hidden_dim=8, num_prototypes=8, progress=False)
    split = proxy.make_split(g.y, seed=0)
    y = g.y.clone()
    y[split.test_mask] = (y[split.test_mask] + 1) % g.num_classes
    scrambled = dataclasses.replace(g, y=y)
    real = proxy.make_split
    try:
        proxy.make_split = lambda labels, seed: split
        a = window_rows(g.x, g.edge_index, g, proxy_task(g, 0, "extremes", True), 0, cfg, 2)
        b = window_rows(g.x, g.edge_index, scrambled, proxy_task(scrambled, 0, "extremes", True),
                        0, cfg, 2)
    finally:
        proxy.make_split = real
    assert a == b and [r["rule"] for r in a] == ["last@4", "mean@4:2", "final@4"]
    with pytest.raises(ValueError, match="window 5"):
        window_rows(g.x, g.edge_index, g, proxy_task(g, 0, "extremes", True), 0, cfg, 5)


def test_only_the_final_row_sees_the_steps_after_training(one_thread):
    """A switch read only after training (the novel re-cut) leaves the epochs' rows as they
    are, which is why ``oral choose`` scores such a candidate by ``final@E``."""
    from harness.proxy import score_rule

    g = make_attributed_sbm(num_nodes=240, num_classes=6, feature_dim=8, seed=3)
    task = proxy_task(g, 0, "extremes", True)
    cfg = ORALConfig(epochs=4, hidden_dim=8, num_prototypes=8, progress=False)
    plain = window_rows(g.x, g.edge_index, g, task, 0, cfg, 2)
    recut = window_rows(g.x, g.edge_index, g, task, 0,
                        dataclasses.replace(cfg, novel_recut=True, novel_recut_dims=4), 2)
    assert plain[:2] == recut[:2] and recut[2]["rule"] == "final@4"
    assert score_rule("final", 4, 2) == "final@4" and score_rule("mean", 4, 2) == "mean@4:2"
    with pytest.raises(ValueError, match="score 'best'"):
        score_rule("best", 4, 2)


def test_the_paper_protocol_proxy_hides_among_the_papers_known_classes(monkeypatch):
    from harness import experiment

    g = make_attributed_sbm(num_nodes=240, num_classes=6, feature_dim=8, seed=2)
    g = dataclasses.replace(g, name="cora-like")
    monkeypatch.setitem(experiment.PAPER_KNOWN, "cora-like", [1, 2, 3, 5])
    monkeypatch.setattr(experiment, "canonical_name", lambda name: name)
    strict = proxy_task(g, 0, "extremes", True)
    paper = proxy_task(g, 0, "extremes", True, protocol="paper")
    assert set(strict.visible.tolist()) | set(strict.hidden) <= {0, 1, 2, 3}
    assert set(paper.visible.tolist()) | set(paper.hidden) == {1, 2, 3, 5}
    labelled = (paper.train >= 0) | (paper.val >= 0)
    assert not torch.isin(g.y[labelled], torch.tensor([0, 4])).any()


def test_the_young_class_task_reads_labelled_nodes_only_and_cuts_one_class_small():
    """One known class (rotating with the seed) stays in the graph as a few unlabelled nodes,
    the rest of it leaves; half of the other classes' training nodes are unlabelled stand-ins;
    unlabelled nodes (-1) never enter, and what they would be is never read."""
    from harness import proxy
    from harness.proxy import young_class_task

    g = make_attributed_sbm(num_nodes=400, num_classes=5, feature_dim=8, seed=1)
    split = proxy.make_split(g.y, seed=0, known_classes=[0, 1, 2, 3])
    y = torch.where(split.train_mask | split.val_mask, g.y, -1)
    known = torch.arange(4)
    task = young_class_task(y, split.train_mask, split.val_mask, known, seed=1, size=0.05)
    assert task.hidden == (1,) and task.visible.tolist() == [0, 2, 3]
    young = task.y == 1
    others = int((~young).sum())
    assert int(young.sum()) == max(5, round(0.05 * others)) and task.scored[young].all()
    assert (task.train[young] < 0).all() and (task.val[young] < 0).all()
    assert (task.y >= 0).all()                       # only labelled nodes are in the graph
    assert set(task.train[task.train >= 0].tolist()) == {0, 1, 2}  # visible classes re-indexed
    stand_ins = task.scored & ~young
    assert stand_ins.any() and (task.train[stand_ins] < 0).all()
    assert young_class_task(y, split.train_mask, split.val_mask, known, 2, 0.05).hidden == (2,)
    with pytest.raises(ValueError, match="size must be in"):
        young_class_task(y, split.train_mask, split.val_mask, known, 0, 1.5)
    with pytest.raises(ValueError, match="at least 2 known classes"):
        young_class_task(y, split.train_mask, split.val_mask, torch.tensor([0]), 0, 0.05)



def test_the_young_class_beside_an_old_one_keeps_every_node_of_the_old_class_unnamed():
    """``beside_old``: the next known class (rotating with the seed) plays an older novel class:
    all its labelled nodes stay, none labelled, all scored; the young class is cut small as
    before; the visible classes are the rest, re-indexed; fewer than three known classes are
    refused."""
    from harness import proxy
    from harness.proxy import young_class_task

    g = make_attributed_sbm(num_nodes=400, num_classes=5, feature_dim=8, seed=1)
    split = proxy.make_split(g.y, seed=0, known_classes=[0, 1, 2, 3])
    y = torch.where(split.train_mask | split.val_mask, g.y, -1)
    task = young_class_task(y, split.train_mask, split.val_mask, torch.arange(4), seed=1,
                            size=0.05, beside_old=True)
    assert task.hidden == (1, 2) and task.visible.tolist() == [0, 3]
    old = task.y == 2
    assert int(old.sum()) == int(((split.train_mask | split.val_mask) & (g.y == 2)).sum())
    assert (task.train[old] < 0).all() and (task.val[old] < 0).all() and task.scored[old].all()
    young = task.y == 1
    assert int(young.sum()) == max(5, round(0.05 * int((~young).sum())))
    assert set(task.train[task.train >= 0].tolist()) == {0, 1}
    assert set(task.val[task.val >= 0].tolist()) == {0, 1}
    plain = young_class_task(y, split.train_mask, split.val_mask, torch.arange(4), seed=1,
                             size=0.05)
    assert torch.equal(plain.keep, task.keep)  # the same graph, one class less named
    with pytest.raises(ValueError, match="at least 3 known classes"):
        young_class_task(y, split.train_mask, split.val_mask, torch.tensor([0, 1]), 0, 0.05,
                         beside_old=True)


def test_two_young_classes_side_by_side_keep_only_their_recent_nodes():
    """``beside_young``: the next known class (rotating with the seed) is young too: only its
    labelled nodes among ``among`` stay, unlabelled and scored, the others leave the graph; the
    first young class is drawn from ``among`` as before. Without ``among``, or with
    ``beside_old`` too, it is refused."""
    from harness import proxy
    from harness.proxy import young_class_task

    g = make_attributed_sbm(num_nodes=400, num_classes=5, feature_dim=8, seed=1)
    split = proxy.make_split(g.y, seed=0, known_classes=[0, 1, 2, 3])
    labelled = split.train_mask | split.val_mask
    y = torch.where(labelled, g.y, -1)
    among = torch.arange(400) % 3 == 0
    task = young_class_task(y, split.train_mask, split.val_mask, torch.arange(4), seed=1,
                            size=0.05, among=among, beside_young=True)
    assert task.hidden == (1, 2) and task.visible.tolist() == [0, 3]
    second = task.y == 2
    assert int(second.sum()) == int((labelled & (g.y == 2) & among).sum())
    assert bool(among[task.keep][second].all())
    assert (task.train[second] < 0).all() and (task.val[second] < 0).all()
    assert task.scored[second].all()
    assert bool(among[task.keep][task.y == 1].all())
    with pytest.raises(ValueError, match="needs among"):
        young_class_task(y, split.train_mask, split.val_mask, torch.arange(4), 1, 0.05,
                         beside_young=True)
    with pytest.raises(ValueError, match="one of beside_old, beside_young and beside_near"):
        young_class_task(y, split.train_mask, split.val_mask, torch.arange(4), 1, 0.05,
                         among=among, beside_old=True, beside_young=True)


def test_the_young_class_beside_its_nearest_class_takes_the_class_it_links_to_most():
    """``beside_near``: the older novel class is the known class the young class's labelled
    nodes share most edges with (an unlabelled node's edges never count), not the next in
    turn; otherwise the task is ``beside_old``'s. With another beside it is refused."""
    from harness import proxy
    from harness.proxy import nearest_class, young_class_task

    g = make_attributed_sbm(num_nodes=400, num_classes=5, feature_dim=8, seed=1)
    split = proxy.make_split(g.y, seed=0, known_classes=[0, 1, 2, 3])
    labelled = split.train_mask | split.val_mask
    y = torch.where(labelled, g.y, -1)
    young = (labelled & (g.y == 1)).nonzero().flatten()
    three = (labelled & (g.y == 3)).nonzero().flatten()
    zero = (labelled & (g.y == 0)).nonzero().flatten()
    unlabelled = (~labelled).nonzero().flatten()
    # class 1 links to class 3 (6 edges, some written 3 -> 1) more than to class 0 (4 edges);
    # its edges to unlabelled nodes (many) are never read
    edges = torch.tensor([[young[0], young[1], three[2], three[3], young[4], young[5],
                           young[0], young[1], young[2], young[3]] + young[:8].tolist(),
                          [three[0], three[1], young[2], young[3], three[4], three[5],
                           zero[0], zero[1], zero[2], zero[3]] + unlabelled[:8].tolist()])
    known = torch.arange(4)
    assert nearest_class(y, labelled, edges, 1, torch.tensor([0, 2, 3])) == 3
    assert nearest_class(y, labelled, edges[:, 6:10], 1, torch.tensor([0, 2, 3])) == 0
    assert nearest_class(y, labelled, edges[:, :0], 1, torch.tensor([2, 0, 3])) == 2  # ties
    task = young_class_task(y, split.train_mask, split.val_mask, known, seed=1, size=0.05,
                            beside_near=edges)
    assert task.hidden == (1, 3) and task.visible.tolist() == [0, 2]
    old = young_class_task(y, split.train_mask, split.val_mask, known, seed=1, size=0.05,
                           beside_old=True)
    assert old.hidden == (1, 2) and torch.equal(old.keep, task.keep)
    near = task.y == 3
    assert (task.train[near] < 0).all() and (task.val[near] < 0).all() and task.scored[near].all()
    with pytest.raises(ValueError, match="one of beside_old"):
        young_class_task(y, split.train_mask, split.val_mask, known, 1, 0.05, beside_old=True,
                         beside_near=edges)
