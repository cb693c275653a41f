"""benchmarks/known_floor_proxy.py: its table pairs the answers before and after the floor."""
from __future__ import annotations

from benchmarks.known_floor_proxy import table


def _arm(all_: float, surfaced: int) -> dict:
    return {"all": all_, "known": 90.0, "novel": all_ - 10, "surfaced": surfaced,
            "stand_ins": [{}, {}], "novel_classes": 1}


def test_the_table_pairs_the_arms_by_fit_and_counts_where_the_floor_acted():
    rows = [{"source": "blogcatalog-sim0", "night": n, "seed": 0, "acted": n == 5,
             "arms": {"last_no_floor": _arm(60.0, 1), "last": _arm(60.0 + d, 1 - (n == 5))}}
            for n, d in ((5, -4.0), (6, 0.0))]
    got = table(rows)
    assert ("| blogcatalog | 2 | 1 | 60.0 / 90.0 / 50.0 | 58.0 / 90.0 / 48.0 | 2 -> 1 of 4 "
            "| -2.0 (2.0) |") in got
