"""The granularity proxy's own measures on toy answers where the right answer is known."""
from __future__ import annotations

import torch

from benchmarks.granularity_proxy import graph_of, surfaced, table


def test_a_stand_in_surfaces_only_when_one_novel_class_holds_it_cleanly():
    # scored nodes: 10 of stand-in 5, 10 of stand-in 6, 10 visible validation nodes (class 0)
    y = torch.tensor([5] * 10 + [6] * 10 + [0] * 10)
    scored = torch.ones(30, dtype=torch.bool)
    # visible classes 0..1; novel ids from 2: stand-in 5 whole in 2, stand-in 6 merged into 2 too
    merged = torch.tensor([2] * 10 + [2] * 10 + [0] * 10)
    found = surfaced(y, scored, merged, (5, 6), 2)
    assert [f["surfaced"] for f in found] == [False, False]  # precision 0.5 each
    clean = torch.tensor([2] * 10 + [3] * 8 + [0] * 2 + [0] * 10)
    found = surfaced(y, scored, clean, (5, 6), 2)
    assert [f["surfaced"] for f in found] == [True, True]
    assert found[1]["recall"] == 0.8 and found[1]["precision"] == 1.0
    # split in three: recall under one half
    split = torch.tensor([2] * 4 + [3] * 3 + [4] * 3 + [5] * 10 + [0] * 10)
    assert surfaced(y, scored, split, (5,), 2)[0]["surfaced"] is False
    # nothing novel at all
    known = torch.zeros(30, dtype=torch.long)
    assert surfaced(y, scored, known, (5, 6), 2) == [
        {"class": 5, "recall": 0.0, "precision": 0.0, "surfaced": False},
        {"class": 6, "recall": 0.0, "precision": 0.0, "surfaced": False}]


def test_the_table_pairs_each_position_with_the_median_by_graph():
    def row(source, pos, all_):
        return {"kind": "night-heldout", "source": source, "seed": 0, "position": pos,
                "all": all_, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2,
                "stand_ins": [{}, {}]}
    rows = [row("cora-sim0 night 8", 0.5, 50.0), row("cora-sim0 night 8", 0.75, 60.0),
            row("cora-sim1 night 8", 0.5, 50.0), row("cora-sim1 night 8", 0.75, 40.0),
            {"kind": "night-nonovel", "source": "cora-sim0 night 8", "seed": 0, "position": 0.5,
             "accuracy": 80.0, "novel_share": 5.0, "novel_classes": 1}]
    text = table(rows)
    assert "| night-heldout | cora | 0.75 | 2 | 50.0 |" in text
    assert "+0.0 (10.0)" in text  # +10 and -10 paired with the median
    assert "| night-nonovel | cora | 0.5 | 1 |" in text and "| 1.0 | 5.0 |" in text
    assert graph_of("amazonphoto-sim1 night 5") == "amazonphoto" and graph_of("synthetic15") == "synthetic15"


def test_the_table_pairs_a_set_option_with_the_defaults():
    def row(source, all_, set_=()):
        return {"kind": "night-heldout", "source": source, "seed": 0, "position": 0.5,
                "set": list(set_), "all": all_, "known": 70.0, "novel": 50.0, "surfaced": 1,
                "novel_classes": 2, "stand_ins": [{}, {}]}
    on = ["novel_wholeness=0.9"]
    rows = [row("cora-sim0 night 8", 50.0), row("cora-sim0 night 8", 56.0, on),
            row("cora-sim1 night 8", 50.0), row("cora-sim1 night 8", 54.0, on)]
    text = table(rows)
    assert "| night-heldout | cora | 0.5 novel_wholeness=0.9 | 2 | 55.0 |" in text
    assert "+5.0 (1.0)" in text
    assert "| night-heldout | cora | 0.5 | 2 | 50.0 |" in text
