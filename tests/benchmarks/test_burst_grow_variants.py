"""The burst-growth exploration's table (no fit) and its refusal without its inputs."""
from __future__ import annotations

import pytest

from benchmarks.burst_grow_variants import main, table


def _row(graph, old, young_all, grow_all, grow_surfaced):
    def answer(surfaced, all_):
        return {"surfaced": surfaced, "old_surfaced": None, "recall": 0.5, "precision": 0.8,
                "all": all_, "moved": 3}
    return {"graph": graph, "beside_old": old, "young_nodes": 20,
            "burstyoung": answer(False, young_all), "grow2:3": answer(grow_surfaced, grow_all)}


def test_the_table_counts_surfaced_fits_and_pairs_all_against_burstyoung():
    rows = [_row("cora", False, 70.0, 71.0, True), _row("cora", False, 70.0, 70.0, False),
            _row("cora", True, 60.0, 60.0, False)]
    lines = table(rows).splitlines()
    assert "| cora | young class | 2 | burstyoung | 0 | 50% / 80% | +0.00 (0.00) |" in lines
    assert "| cora | young class | 2 | grow2:3 | 1 | 50% / 80% | +0.50 (0.50) |" in lines
    assert "| cora | beside an old class | 1 | grow2:3 | 0 | 50% / 80% | +0.00 (0.00) |" in lines


def test_without_its_inputs_it_says_what_is_missing(capsys):
    with pytest.raises(SystemExit):
        main(["--graphs", "cora"])
    assert "--loops, --keep, --sims needed" in capsys.readouterr().err
