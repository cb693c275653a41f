"""The choose_recut study's table reads its rule clause by clause (no fit)."""
from __future__ import annotations

import json

from benchmarks.choose_recut import choose_argv, read_choice, table_lines


def _row(chosen: bool) -> dict:
    return {"candidate": "novel_recut=True", "gain": 3.0 if chosen else -2.0, "se": 1.0,
            "bound": 2.0 if chosen else -3.0, "ahead": 4, "seeds": 5, "chosen": chosen,
            "rule": "final@200"}


def test_the_rule_is_met_only_when_cora_chooses_and_amazonphoto_does_not():
    met = table_lines({"cora": _row(True), "amazonphoto": _row(False)})
    assert met[-1] == "Rule: met." and "- clause 1, chosen on cora: holds" in met
    failed = table_lines({"cora": _row(True), "amazonphoto": _row(True)})
    assert failed[-1] == "Rule: not met." and "- clause 2, not chosen on amazonphoto: fails" in failed
    assert table_lines({"cora": _row(True), "amazonphoto": None})[-1] == "Rule: pending."


def test_a_choice_file_is_read_and_the_command_scores_the_final_answer(tmp_path):
    (tmp_path / "cora").mkdir()
    (tmp_path / "cora" / "cora.json").write_text(json.dumps({
        "chosen": "novel_recut=True", "rule": "final@200",
        "candidates": [{"candidate": "novel_recut=True", "gain": 1.0, "se": 0.5, "bound": 0.5,
                        "ahead": 3, "seeds": 5}]}))
    assert read_choice(tmp_path, "cora")["chosen"] is True
    assert read_choice(tmp_path, "amazonphoto") is None
    argv = choose_argv("cora", tmp_path / "snaps", "2026-01-05", 5, tmp_path / "cora")
    assert argv[argv.index("--score") + 1] == "final" and "known_head=auto" in argv
