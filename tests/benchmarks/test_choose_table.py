"""benchmarks.choose_table: finds the strict seeds of the chosen setting by their configuration."""
from __future__ import annotations

import json

from oral_core.config import ORALConfig


def _seed(folder, cell, config, seed=0):
    d = folder / "runs" / "oral" / cell
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed_{seed}.json").write_text(json.dumps({"config": config.to_dict(), "seed": seed}))


def test_folders_are_found_by_the_setting_they_ran(tmp_path):
    from benchmarks.choose_table import folders_with, setting

    _seed(tmp_path, "cora-prior", ORALConfig(prior_num_classes=7, progress=False))
    _seed(tmp_path / "g", "cora-prior", ORALConfig(gamma=0.1, prior_num_classes=7, seed=3))
    _seed(tmp_path / "k", "cora-prior", ORALConfig(attention_kernel="spmm", prior_num_classes=7))
    assert folders_with(tmp_path, "oral", "cora-prior", setting(ORALConfig().to_dict())) == [tmp_path]
    assert folders_with(tmp_path, "oral", "cora-prior",
                        setting(ORALConfig(gamma=0.1).to_dict())) == [tmp_path / "g"]
    assert len(folders_with(tmp_path, "oral", "cora-prior")) == 3


def test_a_choice_without_strict_seeds_says_so(tmp_path):
    from benchmarks.choose_table import main

    (tmp_path / "choose").mkdir()
    (tmp_path / "choose" / "cora-noprior.json").write_text(json.dumps({
        "chosen": "gamma=0.1", "overrides": {"gamma": 0.1},
        "candidates": [{"candidate": "gamma=0.1"}]}))
    _seed(tmp_path, "cora-noprior", ORALConfig())
    assert main(["--results", str(tmp_path)]) == 0
    text = (tmp_path / "choose_paired.md").read_text()
    assert "| cora | noprior | ours | `gamma=0.1` | (no seed of this setting yet)" in text
