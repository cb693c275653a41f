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
    text = (tmp_path / "per_class_sbm-noprior.md").read_text()
    assert "| 1 | no | 2 | 100.0 ± nan | 0.0 ± nan |" in text
    assert "| 0 | yes | 8 |" in text
    with pytest.raises(SystemExit, match="no finished seed"):
        main(["--dataset", "sbm", "--methods", "gcd", "--results", str(tmp_path)])
