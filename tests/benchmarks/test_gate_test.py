"""The gate_test study's pure parts (benchmarks.gate_test): the novel classes' estimated known
share and the table of the nights the tests and scopes disagree on."""
from __future__ import annotations

import torch

from benchmarks.gate_test import novel_shares, table


def test_a_novel_class_holding_validation_nodes_is_estimated_known_in_proportion():
    # known classes: 20 unlabelled and 10 validation nodes (2 unlabelled per validation node);
    # novel class n1: 10 unlabelled, 2 validation nodes -> 2 * 2 / 10 = 0.4; n2: none -> 0
    lineage = ["known:a"] * 30 + ["n1"] * 12 + ["n2"] * 5 + ["known:a"] * 3
    in_known = torch.tensor([True] * 30 + [False] * 17 + [True] * 3)
    val = torch.tensor([False] * 20 + [True] * 10 + [False] * 10 + [True] * 2 + [False] * 8)
    train = torch.tensor([False] * 47 + [True] * 3)
    got = novel_shares(lineage, in_known, train, val, ["n1", "n2"])
    assert got == {"n1": 0.4, "n2": 0.0}


def row(graph, strict, mcnemar, strict_known, gap, share):
    return {"graph": graph, "strict": strict, "mcnemar": mcnemar, "strict_known": strict_known,
            "reference": 80.0, "model": 80.0 - gap, "worst_novel_share": share}


def test_the_table_lists_the_nights_the_tests_and_scopes_disagree_on():
    rows = [row("g", "ok", "ok", "ok", -1.0, None),
            row("g", "degraded", "ok", "ok", 3.1, 0.41),
            row("g", "degraded", "degraded", "degraded", 9.0, 0.6),
            row("h", "degraded", "ok", "degraded", 0.7, 0.1)]
    lines = table(rows)
    assert lines[2] == "| g | 3 | 2 / 1 / 1 | 3.1 | 0.41 |"
    assert lines[3] == "| h | 1 | 1 / 0 / 1 | 0.7 | – |"
