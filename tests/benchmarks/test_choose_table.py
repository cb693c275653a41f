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
    text = (tmp_path / "choose" / "choose_paired.md").read_text()
    assert "| cora | noprior | ours | `gamma=0.1` | (no seed of this setting yet)" in text


def test_choices_of_another_folder_are_paired_with_the_previous_choice(tmp_path, monkeypatch):
    """--choices reads another oral choose output; --previous adds the earlier choice of the same
    cell (when it chose something else) to what the new choice is paired with."""
    import benchmarks.choose_table as ct

    for folder, chosen, overrides in (("choose", "gamma=0.1", {"gamma": 0.1}),
                                      ("choose_batch", "batch_size=4096", {"batch_size": 4096})):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "amazonphoto-prior.json").write_text(json.dumps({
            "chosen": chosen, "overrides": overrides, "candidates": []}))
    _seed(tmp_path, "amazonphoto-prior", ORALConfig(prior_num_classes=8))
    _seed(tmp_path / "g", "amazonphoto-prior", ORALConfig(gamma=0.1, prior_num_classes=8))
    _seed(tmp_path / "b", "amazonphoto-prior", ORALConfig(batch_size=4096, prior_num_classes=8))
    seen = []

    def fake_rows(side, chosen, *args):
        seen.append((side, chosen, args[-1]))
        return [{"seeds": 1, "base_all": 1.0, "new_all": 2.0, "diff": 1.0, "se": 0.0, "ahead": 1}]

    monkeypatch.setattr(ct, "paired_rows", fake_rows)
    out = tmp_path / "paired.md"
    assert ct.main(["--results", str(tmp_path), "--choices", str(tmp_path / "choose_batch"),
                    "--previous", str(tmp_path / "choose"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "`batch_size=4096` | `gamma=0.1` | 1 |" in text
    assert "`batch_size=4096` | defaults | 1 |" in text
    assert seen[0][1] == [tmp_path / "b"] and seen[1][0] == [tmp_path / "g"]
    assert "--choices" in text.splitlines()[2]
    # without --previous only the defaults and the baselines
    seen.clear()
    assert ct.main(["--results", str(tmp_path), "--choices", str(tmp_path / "choose_batch"),
                    "--out", str(out)]) == 0
    assert "`gamma=0.1` |" not in out.read_text()
    # an empty choices folder is one clear error
    (tmp_path / "empty").mkdir()
    try:
        ct.main(["--results", str(tmp_path), "--choices", str(tmp_path / "empty")])
    except SystemExit as err:
        assert "no choice under" in str(err)
    else:
        raise AssertionError("an empty --choices folder must stop")
