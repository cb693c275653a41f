"""benchmarks.refinement_speed: the Gram step on planted inputs and on real fits, and its refusal."""
from __future__ import annotations

import csv

import pytest

from benchmarks import refinement_speed


def test_the_gram_step_times_both_paths_on_identical_edges(tmp_path):
    refinement_speed.main(["--step", "gram", "--nodes", "600", "--classes", "3",
                           "--repeats", "1", "--out", str(tmp_path)])
    [row] = list(csv.DictReader(open(tmp_path / "refinement_speed_gram.csv")))
    assert row["nodes"] == "600" and row["identical"] == "True"
    assert "--step gram --nodes 600 --classes 3" in (tmp_path / "refinement_speed_gram.md").read_text()


def test_fits_check_every_epoch_and_write_their_table(tmp_path):
    refinement_speed.main(["--step", "gram", "--fits", "synthetic:300:0", "--epochs", "34",
                           "--out", str(tmp_path)])
    [row] = list(csv.DictReader(open(tmp_path / "refinement_speed_gram_fits.csv")))
    assert row["graph"] == "synthetic:300" and row["seed"] == "0"
    assert int(row["epochs"]) > 0 and row["same"] == row["epochs"] and int(row["pairs"]) > 0
    assert "| synthetic:300 | 0 |" in (tmp_path / "refinement_speed_gram_fits.md").read_text()


def test_fits_without_the_gram_step_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        refinement_speed.main(["--fits", "cora:0", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "--fits checks the Gram path: pass --step gram" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_fits_that_never_refine_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="no epoch refined its structure in 12 epochs"):
        refinement_speed.main(["--step", "gram", "--fits", "synthetic:300:0", "--epochs", "12",
                               "--out", str(tmp_path)])
    assert not list(tmp_path.iterdir())
