"""benchmarks/per_class.py: per-class accuracy under All's one-Hungarian matching."""
from __future__ import annotations

import json

import pytest

from benchmarks.per_class import class_accuracy, main


def test_a_small_class_merged_into_a_large_one_scores_zero_for_it():
    # true 0: 90 nodes, all in group 5; true 1: 10 nodes, also in group 5 (merged)
    merged = class_accuracy([[0, 5, 90], [1, 5, 10]])
    assert merged == {0: (1.0, 90), 1: (0.0, 10)}
    # split instead: group 6 takes class 1 and 20 nodes of class 0
    split = class_accuracy([[0, 5, 70], [0, 6, 20], [1, 6, 10]])
    assert split[0] == (70 / 90, 90) and split[1] == (1.0, 10)


def test_the_table_pairs_methods_per_class_and_refuses_missing_seeds(tmp_path, capsys):
    for method, table in (("oral", [[0, 0, 8], [1, 1, 2], [2, 2, 5]]),
                          ("opennc", [[0, 0, 8], [1, 2, 2], [2, 2, 5]])):
        folder = tmp_path / "runs" / method / "sbm-noprior"
        folder.mkdir(parents=True)
        (folder / "seed_0.json").write_text(json.dumps(
            {"all": 100.0, "contingency": table, "known_classes": [0]}))
    assert main(["--dataset", "sbm", "--methods", "oral,opennc", "--results", str(tmp_path)]) == 0
    text = (tmp_path / "per_class" / "per_class_sbm-noprior.md").read_text()
    assert "| 1 | no | 2 | 100.0 ± nan | 0.0 ± nan |" in text
    assert "| 0 | yes | 8 |" in text
    with pytest.raises(SystemExit, match="no finished seed"):
        main(["--dataset", "sbm", "--methods", "gcd", "--results", str(tmp_path)])


def test_class_balanced_means_and_the_paired_gaps(tmp_path):
    """A merge wins All, a split wins the class-balanced mean; both are paired by seed."""
    tables = {"oral": [[0, 0, 10], [1, 1, 60], [1, 2, 20], [2, 2, 10]],   # splits class 1, finds 2
              "opennc": [[0, 0, 10], [1, 1, 80], [2, 1, 10]]}             # merges 2 into 1
    for method, table in tables.items():
        folder = tmp_path / "runs" / method / "sbm-noprior"
        folder.mkdir(parents=True)
        for seed in (0, 1):
            (folder / f"seed_{seed}.json").write_text(json.dumps(
                {"seed": seed, "all": 80.0 if method == "oral" else 90.0, "contingency": table,
                 "known_classes": [0]}))
    assert main(["--dataset", "sbm", "--methods", "oral,opennc", "--results", str(tmp_path)]) == 0
    text = (tmp_path / "per_class" / "per_class_sbm-noprior.md").read_text()
    # oral: classes 100 / 75 / 100 -> 91.7 balanced, novel 87.5; opennc: 100 / 100 / 0 -> 66.7, 50.0
    assert "| Class-balanced (mean over classes) | | | 91.7 ± 0.0 | 66.7 ± 0.0 |" in text
    assert "| Novel, class-balanced | | | 87.5 ± 0.0 | 50.0 ± 0.0 |" in text
    assert "| opennc | -10.00 ± 0.00 (0/2) | +25.00 ± 0.00 (2/2) | +37.50 ± 0.00 (2/2) |" in text


def test_a_method_at_a_folder_reads_that_folders_rows_and_out_names_the_table(tmp_path):
    """``oral@choice``: ORAL's rows from ``<results>/choice`` (a per-graph choice's own rows)."""
    for root, table in ((tmp_path, [[0, 0, 8], [1, 2, 2], [2, 2, 5]]),
                        (tmp_path / "choice", [[0, 0, 8], [1, 1, 2], [2, 2, 5]])):
        folder = root / "runs" / "oral" / "sbm-noprior"
        folder.mkdir(parents=True)
        (folder / "seed_0.json").write_text(json.dumps(
            {"seed": 0, "all": 100.0, "contingency": table, "known_classes": [0]}))
    out = tmp_path / "t.md"
    assert main(["--dataset", "sbm", "--methods", "oral@choice,oral", "--results", str(tmp_path),
                 "--out", str(out)]) == 0
    text = out.read_text()
    assert "oral@choice (1 seeds)" in text and "| 1 | no | 2 | 100.0 ± nan | 0.0 ± nan |" in text
    assert "--out" in text and not (tmp_path / "per_class" / "per_class_sbm-noprior.md").exists()
    with pytest.raises(SystemExit, match="choice2/runs/oral/sbm-noprior: no finished seed"):
        main(["--dataset", "sbm", "--methods", "oral@choice2", "--results", str(tmp_path)])
