"""benchmarks/answer_rule.py: one answer against another over an answer study's rows."""
from __future__ import annotations

import json

import pytest

from benchmarks.answer_proxy import BURST_GROW_MOST, BURST_JOIN
from benchmarks.answer_rule import main, rule_lines


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_graph_pairs_the_fits_and_counts_what_each_answer_surfaces(tmp_path):
    held = [{"graph": "cora", "kind": "heldout",
             BURST_JOIN: {"all": 80.0, "surfaced": 1}, BURST_GROW_MOST: {"all": a, "surfaced": s}}
            for a, s in ((81.0, 2), (79.0, 1))]
    none = [{"graph": "cora", "kind": "nonovel",
             BURST_JOIN: {"accuracy": 90.0, "novel_classes": 0},
             BURST_GROW_MOST: {"accuracy": 89.0, "novel_classes": 1}}]
    _write(tmp_path / "proxies" / "fits.jsonl", held + none)
    _write(tmp_path / "young" / "cora" / "rows.jsonl",
           [{"burstjoin": {"all": 50.0, "surfaced": False},
             "burstgrowmost": {"all": 52.0, "surfaced": True}}, {"other": {}}])
    lines = rule_lines(tmp_path, "burstgrowmost", "burstjoin")
    assert "| cora | held-out class: All; stand-ins surfaced | 2 | +0.00 (1.00) | 2 / 3 |" in lines
    assert "| cora | no novel class: accuracy; classes invented | 1 | -1.00 (0.00) | 0 / 1 |" in lines
    assert "| cora | young class: All; surfaced | 1 | +2.00 (0.00) | 0 / 1 |" in lines


def test_witness_rows_pair_the_known_named_right_and_count_fits_better_and_worse(tmp_path):
    """``--tasks witness`` rows: Known (held-back validation nodes named right) paired per fit;
    a fit without witnesses in a known class (``known`` None) is left out."""
    rows = [{"graph": "cora", "kind": "witness", BURST_JOIN: {"known": b},
             BURST_GROW_MOST: {"known": a}} for a, b in ((85.0, 56.0), (70.0, 70.0),
                                                         (60.0, 62.0), (None, 50.0))]
    _write(tmp_path / "proxies" / "fits.jsonl", rows)
    lines = rule_lines(tmp_path, "burstgrowmost", "burstjoin")
    assert ("| cora | witness: Known (held-back validation nodes named right); fits better / "
            "worse | 3 | +9.00 (10.02) | 1 / 1 |") in lines


@pytest.mark.parametrize("kind,graph,label", [
    ("young_beside_young", "cora", "two young classes side by side"),
    ("young_beside_near", "amazonphoto", "young class beside the class it links to most")])
def test_both_hidden_classes_count_where_a_row_has_two(tmp_path, kind, graph, label):
    """A young class beside a second young one, or beside the class it links to most: each
    answer's surfaced count holds both classes (``beside_surfaced``)."""
    _write(tmp_path / "proxies" / "fits.jsonl", [])
    _write(tmp_path / kind / graph / "rows.jsonl",
           [{"burstgrowmost": {"all": 50.0, "surfaced": True, "beside_surfaced": False},
             "burstgrowkeep": {"all": 51.0, "surfaced": True, "beside_surfaced": True}}])
    lines = rule_lines(tmp_path, "burstgrowkeep", "burstgrowmost")
    assert (f"| {graph} | {label}: All; surfaced (both classes counted) | 1 | "
            "+1.00 (0.00) | 1 / 2 |") in lines


def test_a_study_without_rows_or_an_unknown_answer_is_one_error_line(tmp_path, capsys):
    assert main(["--study", str(tmp_path), "--new", "burstgrowmost", "--base", "burstjoin"]) == 2
    _write(tmp_path / "proxies" / "fits.jsonl", [])
    assert main(["--study", str(tmp_path), "--new", "nonsense", "--base", "burstjoin"]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 2 and all(line.startswith("error: ") for line in out)
