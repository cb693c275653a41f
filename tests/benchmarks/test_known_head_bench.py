"""benchmarks/known_head.py: the two-fold estimate of ``known_head="auto"`` and the summaries,
on rows where the right answer is known."""
from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import known_head as kh


def test_auto_cross_validated_reads_each_half_on_the_other():
    val = np.array([0, 1] * 20 + [-1] * 10)
    right = np.where(val >= 0, val, 5)
    wrong = np.where(val >= 0, 1 - np.clip(val, 0, 1), 5)
    # the head always right, the groups always wrong: auto takes the head on both halves
    assert kh.auto_cross_validated(wrong, right, val) == pytest.approx(1.0)
    assert kh.auto_cross_validated(right, wrong, val) == pytest.approx(1.0)
    # both wrong: nothing to gain
    assert kh.auto_cross_validated(wrong, wrong, val) == pytest.approx(0.0)
    assert np.isnan(kh.auto_cross_validated(right, right, np.full(5, -1)))


def row(graph, sim, night, present, **values):
    base = {f"{m}_{v}": 50.0 for v in kh.VARIANTS for m in ("val", "known", "novel_kept")}
    base |= {f"novel_classes_{v}": 0 for v in kh.VARIANTS}
    base |= {"graph": graph, "sim": sim, "night": night, "date": "", "novel_present": present,
             "split_rounds": 1, "val_auto_cv": 50.0, "fit_seconds": 1.0, "head_seconds": 0.1}
    return {k: str(v) for k, v in (base | values).items()}


def test_summary_counts_invented_classes_on_quiet_nights_only():
    rows = [row("g", 0, 0, 0, novel_classes_once=2, novel_classes_repeat=0),
            row("g", 0, 1, 1, novel_classes_once=3, novel_classes_repeat=1)]
    line = kh.summary(rows).splitlines()[2]
    assert "| 2 / 0 (1 nights) |" in line
    assert "| 3 / 1 (planted present: 1) |" in line


def test_answer_pairs_gains_by_night():
    rows = [row("g", 0, 0, 0, val_once=50, val_repeat=60), row("g", 0, 1, 0, val_once=50,
                                                                  val_repeat=40)]
    text = kh.answer(rows)
    assert "repeat over once +0.0 (s.e. 10.0; 1 ahead, 1 behind)" in text


def test_table2_summary_takes_auto_only_where_validation_favours_the_head(tmp_path):
    folder = tmp_path / "oral" / "cora-noprior"
    folder.mkdir(parents=True)
    seeds = [(80.0, 70.0, 60.0, 65.0), (70.0, 75.0, 60.0, 66.0)]  # val head, val plain, alls
    for i, (vh, vp, a_plain, a_head) in enumerate(seeds):
        (folder / f"seed_{i}.json").write_text(json.dumps({
            "val_acc": vh, "all": a_head, "known": 90.0,
            "config": {"known_split_repeat": False},
            "selection_alternatives": {"last_no_head": {"val_acc": vp, "all": a_plain,
                                                        "known": 80.0, "classes": 7}}}))
    line = kh.table2_summary(tmp_path).splitlines()[2]
    # seed 0 takes the head (80 > 70), seed 1 keeps the groups: auto's All (65 + 60) / 2
    assert "| 1/2 |" in line and "62.5 |" in line
