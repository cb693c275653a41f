"""The held-out-class proxy that chooses open settings: it must never read a test label."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from benchmarks.tune import _cast, hidden_class, hidden_classes, proxy_score
from oral_core.config import ORALConfig
from harness.experiment import Prepared
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm

TINY = ORALConfig(epochs=4, hidden_dim=8, num_prototypes=8, cluster_warmup_epochs=1,
                  pol_start_epoch=2, resolution_steps=5, progress=False, device="cpu")


@pytest.fixture(scope="module")
def prep():
    g = make_attributed_sbm(num_nodes=240, num_classes=5, feature_dim=8, seed=1)
    return Prepared(g, g.x, "none")


def test_proxy_ignores_test_labels(prep, one_thread, monkeypatch):
    score = proxy_score(prep, 0, TINY)
    split = make_split(prep.graph.y, seed=0)
    # the split protocol itself draws per class; hold it fixed, then make every test label wrong
    monkeypatch.setattr("harness.proxy.make_split", lambda y, seed: split)
    scrambled = prep.graph.y.clone()
    test = split.test_mask
    scrambled[test] = (scrambled[test] + 1) % prep.graph.num_classes
    other = Prepared(dataclasses.replace(prep.graph, y=scrambled), prep.x, "none")
    assert proxy_score(other, 0, TINY) == score
    assert 0 <= score["all"] <= 100 and score["classes"] >= 1


def test_hidden_class_last_or_rotating():
    known = torch.tensor([0, 1, 2, 3])
    assert [hidden_class(known, s) for s in range(3)] == [3, 3, 3]
    assert [hidden_class(known, s, "rotate") for s in range(6)] == [0, 1, 2, 3, 0, 1]
    with pytest.raises(ValueError, match="last' or 'rotate"):
        hidden_class(known, 0, "first")


def test_extremes_hides_largest_and_smallest_by_labelled_count():
    known = torch.tensor([0, 2, 3, 5])
    counts = torch.tensor([40, 99, 10, 40, 0, 25])  # class 1 and 4 are not known
    assert hidden_classes(known, 0, "extremes", counts) == (0, 2)  # largest: tie 0/3, lower id
    assert hidden_classes(known, 7, "extremes", counts) == (0, 2)  # no rotation
    assert hidden_classes(known, 1, "rotate") == (2,)
    assert hidden_classes(known, 0, "extremes", torch.full((6,), 5)) == (0, 2)  # all equal
    with pytest.raises(ValueError, match="at least 3 known classes"):
        hidden_classes(torch.tensor([0, 1]), 0, "extremes", counts)
    with pytest.raises(ValueError, match="labelled node count"):
        hidden_classes(known, 0, "extremes")


def test_rotating_proxy_hides_another_class(prep, one_thread):
    # seed 1 hides known class 1 instead of the last one: a different task, a different score
    last, rotate = proxy_score(prep, 1, TINY), proxy_score(prep, 1, TINY, "rotate")
    assert last != rotate


def test_grid_values_take_the_fields_type():
    assert _cast(None, "none") is None and _cast(None, "1024") == 1024
    assert _cast(0.3, "0.4") == 0.4 and _cast(True, "false") is False and _cast(40, "20") == 20


def test_prior_flag_gives_the_true_class_number_and_names_the_files(prep, tmp_path, monkeypatch):
    seen = []

    def fake_score(prep_, seed, cfg, hide):
        seen.append((seed, cfg.prior_num_classes, cfg.select_from_epoch))
        return {"all": 50.0, "known": 60.0, "novel": 40.0, "classes": 5}

    monkeypatch.setattr("benchmarks.tune.prepare", lambda name, data_dir: prep)
    monkeypatch.setattr("benchmarks.tune.proxy_score", fake_score)
    monkeypatch.setattr("benchmarks.tune.RESULTS", tmp_path)
    from benchmarks.tune import main
    main(["--dataset", "sbm", "--seeds", "2", "--prior", "--hide", "rotate",
          "--grid", "select_from_epoch=none,30"])
    assert seen == [(0, 5, None), (1, 5, None), (0, 5, 30), (1, 5, 30)]
    stem = f"tuning_{prep.graph.name.lower()}_select_from_epoch_prior_rotate"
    md = (tmp_path / "tuning" / f"{stem}.md").read_text()
    assert "| None | 50.00 | 60.00 | 40.00 | 5.0 |" in md and "| 30 | 50.00 |" in md
    assert (tmp_path / "tuning" / f"{stem}.csv").exists()


def test_false_novelty_trains_on_the_known_classes_only(prep, one_thread):
    """``benchmarks.false_novelty``: the graph keeps only the known classes' nodes, so every
    unlabelled node called novel is a false discovery; the row says how many there were."""
    from benchmarks.false_novelty import known_only_seed

    row = known_only_seed(prep, 0, TINY)
    split_known = 4  # floor(0.8 * 5) lowest classes
    assert row["classes_true"] == split_known
    assert row["nodes"] == int((prep.graph.y < split_known).sum())
    assert 0.0 <= row["false_novel_share"] <= 1.0 and 0.0 <= row["accuracy"] <= 100.0


def test_config_overrides_apply_set_items_and_refuse_bad_ones(capsys):
    """``--set`` of the proxy benchmarks: typed like the default, one-line errors otherwise."""
    import argparse

    from benchmarks.tune import config_overrides
    ap = argparse.ArgumentParser(prog="bench")
    config, overrides = config_overrides(ap, ["gamma=0.1", "known_split_share=0.5"])
    assert config.gamma == 0.1 and config.known_split_share == 0.5
    assert overrides == {"gamma": 0.1, "known_split_share": 0.5}
    for bad, says in ((["nosuch=1"], "'nosuch' is not an ORALConfig field"),
                      (["gamma=0"], "gamma must be in (0, 1]")):
        with pytest.raises(SystemExit) as exit_info:
            config_overrides(ap, bad)
        assert exit_info.value.code == 2 and says in capsys.readouterr().err
