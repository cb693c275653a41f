"""The epoch-vote diagnostic: novel ids aligned across epochs before the vote."""
from __future__ import annotations

import pytest
import torch

from benchmarks.epoch_vote import aligned, epoch_vote


def test_novel_ids_are_renamed_to_the_reference_they_overlap():
    reference = torch.tensor([0, 1, 2, 2, 3, 3])  # two known classes (0, 1), novel 2 and 3
    earlier = torch.tensor([0, 1, 3, 3, 2, 2])    # the same grouping, novel ids swapped
    assert aligned(earlier, reference, num_known=2).tolist() == reference.tolist()


def test_known_ids_keep_their_meaning():
    reference = torch.tensor([0, 0, 1, 2])
    earlier = torch.tensor([1, 0, 0, 2])
    assert aligned(earlier, reference, num_known=2)[:3].tolist() == [1, 0, 0]


def test_vote_takes_each_nodes_most_frequent_aligned_class():
    last = torch.tensor([0, 2, 2, 3])
    swapped = torch.tensor([0, 3, 3, 2])          # same as last once aligned
    other = torch.tensor([1, 3, 2, 3])            # node 0 says 1 once; node 1 disagrees once
    voted = epoch_vote([swapped, other, swapped, last], num_known=2)
    assert voted.tolist() == [0, 2, 2, 3]


def test_epoch_mean_averages_every_score():
    from benchmarks.epoch_vote import epoch_mean
    got = epoch_mean([{"all": 80.0, "classes": 6}, {"all": 70.0, "classes": 8}])
    assert got == {"all": 75.0, "classes": 7.0}


def test_compare_pairs_seeds_both_runs_finished(tmp_path):
    import json
    from benchmarks.epoch_vote import compare
    for name, scores in (("a", {0: 60.0, 1: 70.0}), ("b", {0: 65.0, 1: 68.0, 2: 99.0})):
        folder = tmp_path / "epoch_vote" / name
        folder.mkdir(parents=True)
        for seed, value in scores.items():
            (folder / f"seed_{seed}.json").write_text(json.dumps(
                {"key": {}, "rows": [{"rule": "last@200", "seed": seed, "all": value, "classes": 6}]}))
    assert compare(tmp_path, "a", "b") == 0
    table = (tmp_path / "epoch_vote" / "epoch_vote_compare_a_vs_b.md").read_text()
    assert "| last@200 | 2 | 65.00 | 66.50 | +1.50 (3.50) | 1/2 |" in table  # seed 2: b only


def test_seed_files_from_before_the_mean_rule_are_kept():
    from benchmarks.epoch_vote import RULES, _same_run
    key = {"horizon": 200, "votes": [10], "rules": RULES, "config": {"lr": 0.005}}
    old = {"horizon": 200, "votes": [10], "config": {"lr": 0.005}}
    assert _same_run(old, key) and _same_run(dict(key), key)
    assert not _same_run(old | {"config": {"lr": 0.01}}, key)
    assert not _same_run(None, key)


def test_change_curve_aligns_novel_ids_and_stable_epoch_waits_for_patience():
    from benchmarks.epoch_vote import change_curve, stable_epoch

    a = torch.tensor([0, 1, 2, 2, 3, 3])
    renamed = torch.tensor([0, 1, 3, 3, 2, 2])  # the two novel classes swapped ids: no change
    moved = torch.tensor([0, 0, 3, 3, 2, 2])  # one node of six moved
    assert change_curve([a, renamed, moved], num_known=2) == [1.0, 0.0, pytest.approx(1 / 6)]
    changed = [1.0, 0.5, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.3]
    assert stable_epoch(changed, start=0, share=0.1, patience=2) == 3
    assert stable_epoch(changed, start=4, share=0.1, patience=2) == 6  # after the start only
    assert stable_epoch(changed, start=0, share=0.1, patience=4) == 8  # never: the last epoch


def test_stop_rules_score_the_stop_against_the_last_epoch(tmp_path):
    import json

    from benchmarks.stop_rules import grid, main

    folder = tmp_path / "epoch_vote" / "toy"
    folder.mkdir(parents=True)
    # 41 epochs, pol_start_epoch 0: calm from epoch 12 on, where the proxy is 90, then 70 at the end
    changed = [1.0] * 12 + [0.0] * 29
    all_by_epoch = [50.0] * 12 + [90.0] * 28 + [70.0]
    row = {"rule": "curve", "seed": 0, "all_by_epoch": all_by_epoch, "changed_by_epoch": changed}
    (folder / "seed_0.json").write_text(json.dumps({"key": {"config": {"pol_start_epoch": 0}},
                                                    "rows": [row]}))
    rows = {(r["share"], r["patience"]): r for r in grid([row | {"pol_start_epoch": 0}])}
    assert rows[(0.02, 10)]["diff"] == 20.0 and rows[(0.02, 10)]["epochs"] == 21 / 40
    assert main(["toy", "--results", str(tmp_path)]) == 0
    assert "| 2% **chosen** | 10 | +20.00" in (tmp_path / "stop_rules" / "stop_rules.md").read_text()


@pytest.mark.parametrize("module", ["benchmarks.epoch_vote", "benchmarks.proxy_rules"])
def test_rules_read_off_every_epoch_refuse_an_early_stop(module, capsys):
    import importlib
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exit_info:
        main(["--dataset", "cora", "--set", "stop_when_stable=0.02"])
    assert exit_info.value.code == 2
    assert "stop_when_stable=0.02" in capsys.readouterr().err


def test_a_seed_file_answers_only_its_own_hidden_classes():
    from benchmarks.epoch_vote import RULES, _same_run
    rotate = {"horizon": 200, "votes": [10], "rules": RULES, "config": {"lr": 0.005}}
    extremes = rotate | {"hide": "extremes"}
    assert _same_run(rotate, rotate) and _same_run(extremes, extremes)
    assert not _same_run(rotate, extremes) and not _same_run(extremes, rotate)


def test_seed_rows_hide_what_they_are_told(monkeypatch):
    """``--hide extremes`` reaches the proxy task (the two classes are hidden, not one)."""
    import benchmarks.epoch_vote as ev
    seen = []

    def fake_task(graph, seed, hide, disjoint_val):
        seen.append(hide)
        raise RuntimeError("stop here")

    monkeypatch.setattr(ev, "proxy_task", fake_task)
    with pytest.raises(RuntimeError, match="stop here"):
        ev.seed_rows(type("P", (), {"graph": None})(), 0, None, 10, [5], "extremes")
    assert seen == ["extremes"]


def test_check_lines_pair_each_rule_with_its_unchecked_twin():
    """The known-split check's table pairs a rule with the same rule on the unchecked classes of
    the same fit, seed by seed; without unchecked rows there is no table."""
    from benchmarks.epoch_vote import check_lines
    rows = [{"rule": "last@200", "seed": s, "all": a, "classes": 6} for s, a in ((0, 70.0), (1, 60.0))]
    rows += [{"rule": "unchecked last@200", "seed": s, "all": a, "classes": 7}
             for s, a in ((0, 65.0), (1, 61.0))]
    lines = check_lines(rows)
    row = next(line for line in lines if line.startswith("| last@200 |"))
    assert "| 2 | 63.00 | 65.00 | +2.00 (3.00) | 1 / 1 | 7.0 → 6.0 |" in row
    assert check_lines(rows[:2]) == []


def test_a_guarded_fit_also_scores_its_unguarded_answer(one_thread):
    """With ``known_absorb_guard`` on, one training run answers the guarded and the unguarded
    check (the ``unguarded last@E`` row); without it there is no such row."""
    from benchmarks.epoch_vote import seed_rows
    from oral_core.config import ORALConfig
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=300, num_classes=5, feature_dim=16, avg_degree=8.0,
                            homophily=0.85, feature_noise=0.5, seed=1)
    prep = type("P", (), {"graph": g, "x": g.x})()
    base = dict(hidden_dim=16, progress=False, pol_start_epoch=6, cluster_warmup_epochs=3,
                device="cpu", known_split_share=0.5, known_absorb_share=0.5)
    rules = {}
    for guard in (False, True):
        cfg = ORALConfig(**base, known_absorb_guard=guard)
        rules[guard] = [r["rule"] for r in seed_rows(prep, 0, cfg, 10, [2], "extremes")]
    assert "unguarded last@10" in rules[True] and "unguarded last@10" not in rules[False]
    assert "unchecked last@10" in rules[True]
