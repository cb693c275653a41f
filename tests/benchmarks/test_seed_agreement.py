"""benchmarks/seed_agreement.py: two seeds' night answers compared on unlabelled nodes."""
from __future__ import annotations

from benchmarks.seed_agreement import agreement, table


def answer(classes: dict, num_known: int = 2) -> dict:
    return {"num_known": num_known, "classes": classes}


def test_relabelled_classes_agree_and_a_split_novel_class_does_not():
    a = answer({"1": 0, "2": 0, "3": 1, "4": 2, "5": 2, "6": 2, "7": 2})
    same = answer({"1": 1, "2": 1, "3": 0, "4": 5, "5": 5, "6": 5, "7": 5})  # ids renamed
    got = agreement(a, same)
    assert got["ari"] == 1.0 and got["novel_ari"] == 1.0 and got["novel_both"] == 4
    assert got["novel_classes"] == [1, 1]
    split = answer({"1": 0, "2": 0, "3": 1, "4": 2, "5": 2, "6": 3, "7": 3})
    worse = agreement(a, split)
    assert worse["ari"] < 1.0 and worse["novel_classes"] == [1, 2]


def test_only_nodes_both_seeds_hold_unlabelled_are_compared_and_the_table_pairs_seeds():
    a = answer({"1": 0, "2": 1, "3": 2})
    b = answer({"2": 1, "3": 2, "9": 0})
    assert agreement(a, b)["nodes"] == 2
    rows = [{"loop": "cora-sim0", "night": 8, "seed": s} | answer({"1": 0, "2": 1, "3": 1})
            for s in (0, 1)]
    text = table(rows)
    assert "| cora-sim0 | 8 | 0, 1 | 3 | 1.00 |" in text and "| cora | 1 | 1.00 | 1.00 | 1 of 1 |" in text


def test_a_kept_fit_is_read_back_with_its_paths_in_its_own_folder(tmp_path):
    """``--keep``: the training kept beside a fit's files is read back pointing at that folder
    (which may have moved since it was written); a folder without one gives None."""
    import json

    from benchmarks.seed_agreement import KEPT_RESULT, kept_training

    assert kept_training(tmp_path) is None
    old = "/elsewhere/run"
    fields = {"run_dir": old, "model_path": f"{old}/model.pt",
              "predictions_path": f"{old}/predictions.parquet", "history_path": f"{old}/history.json",
              "config": {}, "config_hash": "c", "feature_mode": "dense", "val_accuracy": 0.9,
              "epoch": 3, "epochs": 4, "num_classes": 5, "num_known": 3, "num_novel": 2,
              "train_seconds": 1.0, "device": "cpu"}
    (tmp_path / KEPT_RESULT).write_text(json.dumps(fields))
    got = kept_training(tmp_path)
    assert got.run_dir == str(tmp_path) and got.num_known == 3
    assert got.predictions_path == str(tmp_path / "predictions.parquet")
    assert got.model_path == str(tmp_path / "model.pt")


def test_a_bad_answer_is_one_error_line(capsys, tmp_path):
    from benchmarks.seed_agreement import main

    assert main(["--loops", str(tmp_path), "--answer", "per_class+nonsense",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().out.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --answer:")
