"""benchmarks.stability: the std of All and the ARI between seeds per Table-2 cell."""
from __future__ import annotations

import json

import torch

from benchmarks.stability import main, seed_agreement
from harness.experiment import partition_from_text, partition_text


def _seed(folder, seed, all_, partition=None):
    folder.mkdir(parents=True, exist_ok=True)
    row = {"seed": seed, "all": all_}
    if partition is not None:
        row |= {"partition": partition, "device": "cuda:0"}
    (folder / f"seed_{seed}.json").write_text(json.dumps(row))


def test_partition_text_round_trips_with_unscored_nodes():
    pred = torch.tensor([3, 0, 7, 1])
    text = partition_text(pred, torch.tensor([True, False, True, True]))
    assert text == "3,-1,7,1"
    assert partition_from_text(text).tolist() == [3, -1, 7, 1]


def test_seeds_agree_on_the_nodes_both_scored():
    same = [{"partition": "0,0,1,1,-1"}, {"partition": "5,5,2,2,3"}]
    assert seed_agreement(same) == [1.0]  # node 4 is scored by one seed only
    apart = [{"partition": "0,0,1,1"}, {"partition": "0,1,0,1"}]
    assert seed_agreement(apart)[0] < 0
    assert seed_agreement([{"partition": "0,1"}, {}]) == []  # a seed file without a partition


def test_the_table_marks_each_goal(tmp_path, capsys):
    runs, parts = tmp_path / "runs", tmp_path / "parts"
    for s, a in enumerate([70.0, 71.0, 72.0]):
        _seed(runs / "oral" / "cora-noprior", s, a)
        _seed(parts / "oral" / "cora-noprior", s, a, "0,0,1,1,2,2")
    for s, a in enumerate([55.0, 85.0]):
        _seed(runs / "oral" / "blogcatalog-prior-paper", s, a)
    assert main(["--runs", str(runs), "--partitions", str(parts),
                 "--out", str(tmp_path / "README.md")]) == 0
    text = (tmp_path / "README.md").read_text()
    assert ("| cora, noprior, strict | 3 | 71.00 ± 1.00 | 3 (cuda:0) | 71.00 ± 1.00 | "
            "1.000 / 1.000 | std yes/yes, ARI yes |") in text
    # the answer counts the cells meeting each goal
    assert "at most 2 points in 1 of 2 cells" in text and "1 of them at 0.9 or more" in text
    assert "| blogcatalog, prior, paper protocol | 2 | 70.00 ± 21.21 | 0 | – | – (not run) | std no, ARI ? |" in text


def test_a_missing_runs_folder_is_one_line(tmp_path, capsys):
    assert main(["--runs", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: --runs ")
