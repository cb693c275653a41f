"""``benchmarks.paired`` (two result folders paired by seed) and ``benchmarks.speed --variant``."""
from __future__ import annotations

import csv
import json

import pytest

from benchmarks import paired, speed


def write_seed(results, dataset, prior, seed, all_, failed=False, method="oral"):
    folder = results / "runs" / method / f"{dataset}-{prior}"
    folder.mkdir(parents=True, exist_ok=True)
    row = {"method": method, "dataset": dataset, "seed": seed, "all": all_, "orca_known": 80.0,
           "orca_novel": 50.0, "classes_abs_err": 1.0, "seconds": 10.0}
    if failed:
        row["failed"] = "validation accuracy never rose above the majority share"
    (folder / f"seed_{seed}.json").write_text(json.dumps(row))


def test_paired_rows_pair_by_seed_and_flag_a_loss_beyond_the_tolerance(tmp_path) -> None:
    base, new = tmp_path / "base", tmp_path / "new"
    for seed, (a, b) in enumerate([(60, 61), (62, 64), (70, 69)]):
        write_seed(base, "cora", "noprior", seed, a)
        write_seed(new, "cora", "noprior", seed, b)
    write_seed(base, "cora", "noprior", 3, 50)  # only in base: not paired
    write_seed(new, "cora", "noprior", 4, 99)  # only in new: not paired
    write_seed(base, "blogcatalog", "prior", 0, 70)
    write_seed(new, "blogcatalog", "prior", 0, 60)
    write_seed(base, "blogcatalog", "prior", 1, 70)
    write_seed(new, "blogcatalog", "prior", 1, 10, failed=True)  # failed: left out
    rows = paired.paired_rows(base, new, "oral", ["cora", "blogcatalog"], ["no", "yes"],
                              "ours", 1.0)
    assert [(r["dataset"], r["prior"], r["seeds"]) for r in rows] == [
        ("cora", "no", 3), ("blogcatalog", "yes", 1)]
    cora, blog = rows
    assert cora["diff"] == pytest.approx((1 + 2 - 1) / 3)
    assert cora["ahead"] == 2 and cora["within"]
    assert blog["diff"] == pytest.approx(-10.0) and not blog["within"]
    text = paired.markdown(rows, "cmd", "label", 1.0)
    assert "| cora | no | 3 |" in text and "| NO |" in text


def test_repeated_folders_pool_their_seeds_and_refuse_a_clash(tmp_path, capsys) -> None:
    for folder, seeds in (("base0", range(0, 2)), ("base1", range(2, 4)), ("new", range(4))):
        for seed in seeds:
            write_seed(tmp_path / folder, "cora", "noprior", seed, 60 + seed)
    write_seed(tmp_path / "base1", "cora", "noprior", 1, 61)  # the same result twice: one seed
    out = tmp_path / "p.md"
    args = ["--base", str(tmp_path / "base0"), "--base", str(tmp_path / "base1"),
            "--new", str(tmp_path / "new"), "--dataset", "cora", "--out", str(out)]
    assert paired.main(args) == 0
    assert "| cora | no | 4 | 61.50 | 61.50 | +0.00 (0.00) |" in out.read_text()
    write_seed(tmp_path / "base1", "cora", "noprior", 0, 10)  # seed 0 disagrees across folders
    assert paired.main(args) == 2
    err = capsys.readouterr().err
    assert "cora no seed 0: two folders of one side disagree" in err and err.count("\n") == 1


def test_paired_cli_refuses_a_folder_without_runs(tmp_path, capsys) -> None:
    (tmp_path / "base" / "runs").mkdir(parents=True)
    code = paired.main(["--base", str(tmp_path / "base"), "--new", str(tmp_path / "nothing"),
                        "--dataset", "cora"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nothing" in err and "runs/" in err and err.count("\n") == 1


def test_paired_cli_fails_when_no_seed_is_shared(tmp_path) -> None:
    write_seed(tmp_path / "base", "cora", "noprior", 0, 60)
    write_seed(tmp_path / "new", "cora", "noprior", 1, 60)
    out = tmp_path / "p.md"
    assert paired.main(["--base", str(tmp_path / "base"), "--new", str(tmp_path / "new"),
                        "--dataset", "cora", "--out", str(out)]) == 1
    assert "no seed finished in both" in out.read_text()


@pytest.mark.usefixtures("one_thread")
def test_speed_variants_time_each_setting_in_one_process(tmp_path) -> None:
    out = tmp_path / "speed.csv"
    assert speed.main(["--dataset", "synthetic:300", "--epochs", "6", "--variant", "defaults",
                       "--variant", "attention_kernel=spmm,sparse_input_below=1.0",
                       "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["graph"] for r in rows] == [
        "synthetic300", "synthetic300 attention_kernel=spmm sparse_input_below=1.0"]
    assert all(float(r["ratio"]) > 0 for r in rows)
    with pytest.raises(SystemExit):
        speed.main(["--dataset", "synthetic:300", "--kernel", "spmm", "--variant", "defaults"])


def test_a_baseline_method_pairs_with_oral_seed_by_seed(tmp_path) -> None:
    for seed, (a, b) in enumerate([(60, 63), (62, 61)]):
        write_seed(tmp_path / "runs_a", "cora", "noprior", seed, a, method="opennc")
        write_seed(tmp_path / "runs_b", "cora", "noprior", seed, b)
    write_seed(tmp_path / "runs_a", "cora", "noprior", 2, 99)  # ORAL in base: not the base method
    out = tmp_path / "p.md"
    assert paired.main(["--base", str(tmp_path / "runs_a"), "--new", str(tmp_path / "runs_b"),
                        "--dataset", "cora", "--base-method", "opennc", "--out", str(out)]) == 0
    text = out.read_text()
    assert "paired by seed with opennc" in text
    assert "| cora | no | 2 | 61.00 | 62.00 | +1.00 (2.00) | 1/2 |" in text


def test_a_skipped_list_keeps_the_first_folders_seed_and_names_the_later_one(tmp_path) -> None:
    """benchmarks.choose_table pools every folder of a setting: a rerun of committed seeds on
    another device (same setting, another result) must not replace them or stop the table."""
    write_seed(tmp_path / "root", "cora", "noprior", 0, 60)
    write_seed(tmp_path / "gpu", "cora", "noprior", 0, 90)  # the same seed, another result
    write_seed(tmp_path / "gpu", "cora", "noprior", 1, 70)  # a seed the root lacks: pooled
    write_seed(tmp_path / "new", "cora", "noprior", 0, 61)
    write_seed(tmp_path / "new", "cora", "noprior", 1, 71)
    skipped: list[str] = []
    rows = paired.paired_rows([tmp_path / "root", tmp_path / "gpu"], tmp_path / "new", "oral",
                              ["cora"], ["no"], "ours", 1.0, skipped=skipped)
    assert rows[0]["seeds"] == 2 and rows[0]["base_all"] == pytest.approx(65.0)
    assert skipped == ["gpu/oral cora no seed 0"]
    with pytest.raises(paired.SeedClash):
        paired.paired_rows([tmp_path / "root", tmp_path / "gpu"], tmp_path / "new", "oral",
                           ["cora"], ["no"], "ours", 1.0)
