"""benchmarks/recut_rule.py: the novel_recut_embedding rule read clause by clause, re-cut arm
minus fitted arm of the same fit."""
from __future__ import annotations

from benchmarks.answer_proxy import BURST_SPLIT, FITTED
from benchmarks.recut_rule import GRAPHS, TASKS_PER_GRAPH, clauses, decide


def rows_for(graph: str, gain: float = 1.0, surfaced=(1, 1), invented=(0, 0), known=0.0,
             classes=(1, 1)) -> list[dict]:
    """A graph's 18 rows: 6 of each proxy, the re-cut arm ``gain`` points of All above the
    fitted one (with a little spread), the counts per row as given."""
    rows = []
    for i in range(TASKS_PER_GRAPH // 3):
        spread = 0.1 * (i % 3 - 1)  # -0.1, 0, +0.1: a mean of exactly ``gain``
        rows.append({"kind": "heldout", "graph": graph,
                     BURST_SPLIT: {"all": 50 + gain + spread, "surfaced": surfaced[0]},
                     FITTED + BURST_SPLIT: {"all": 50.0, "surfaced": surfaced[1]}})
        rows.append({"kind": "nonovel", "graph": graph, BURST_SPLIT: {"novel_classes": invented[0]},
                     FITTED + BURST_SPLIT: {"novel_classes": invented[1]}})
        rows.append({"kind": "witness", "graph": graph,
                     BURST_SPLIT: {"known": 90 + known + spread, "novel_classes": classes[0]},
                     FITTED + BURST_SPLIT: {"known": 90.0, "novel_classes": classes[1]}})
    return rows


def test_every_clause_holding_on_every_graph_with_a_gain_meets_the_rule():
    rows = [r for g in GRAPHS for r in rows_for(g, gain=1.0 if g == "amazonphoto" else 0.0)]
    text, met = decide(rows)
    assert met and "becomes the night's default" in text


def test_each_clause_can_fail_on_its_own():
    assert not clauses(rows_for("cora", gain=-2.0))["holds"][1]
    assert not clauses(rows_for("cora", surfaced=(0, 1)))["holds"][2]
    assert not clauses(rows_for("cora", invented=(1, 0)))["holds"][3]
    assert not clauses(rows_for("cora", known=-1.0))["holds"][4]
    assert not clauses(rows_for("cora", classes=(3, 1)))["holds"][5]
    assert all(clauses(rows_for("cora", gain=0.0))["holds"].values())


def test_no_gain_anywhere_or_a_missing_graph_is_not_met():
    flat = [r for g in GRAPHS for r in rows_for(g, gain=0.0)]
    text, met = decide(flat)
    assert not met and "not met; the switches stay options" in text
    partial = [r for g in GRAPHS[:4] for r in rows_for(g)]
    text, met = decide(partial)
    assert not met and "waits for the rows" in text and "| blogcatalog | 0 |" in text


def test_a_clause_failing_on_a_finished_graph_decides_before_the_rest():
    """The rule needs every clause on every graph: a graph with all its tasks in and a clause
    failing there decides it, whatever the graphs still running show; a failing clause on a
    graph still running decides nothing."""
    rows = rows_for("cora", invented=(1, 0)) + rows_for("amazonphoto", gain=2.0)[:5]
    text, met = decide(rows)
    assert not met and "not met: clauses fail" in text and "(cora, clause 3)" in text
    unfinished = rows_for("cora", gain=1.0) + rows_for("blogcatalog", invented=(1, 0))[:5]
    text, met = decide(unfinished)
    assert not met and "waits for the rows" in text
