"""benchmarks/loop_compare.py: two loop studies side by side on label-free and labelled-only
measures (the table a default's rule rests on)."""
from __future__ import annotations

from benchmarks.loop_compare import pooled, table


def measures(answered=8, acc=(0.8, 0.9), pairs=2, events=1, chain=8, gaps=(40.0, 60.0, 50.0)):
    return {"nights": 8, "answered": answered, "val_accuracy": list(acc), "novel_pairs": pairs,
            "events": events, "answered_chain": chain, "gaps": list(gaps)}


def test_pooled_sums_counts_and_rates_over_the_loops():
    p = pooled([measures(events=1, chain=8, gaps=(40.0, 60.0)),
                measures(answered=6, events=3, chain=2, acc=(0.7,), pairs=0, gaps=(10.0,))])
    assert p["loops"] == 2 and p["nights"] == 16 and p["answered"] == 14
    assert p["events_per_ten"] == 10 * 4 / 10  # events over the answered chain, not the nights
    assert abs(p["val_accuracy"] - 100 * (0.8 + 0.9 + 0.7) / 3) < 1e-9
    assert p["novel_pairs"] == 2 and p["median_seconds"] == 40.0


def test_the_table_pairs_only_the_loops_both_studies_finished():
    by = {"cold": {("cora", 0): measures(), ("cora", 1): measures(pairs=5)},
          "warm": {("cora", 0): measures(pairs=1, gaps=(5.0,))}}
    text = table("cold", "warm", by, ["cora", "synthetic15"])
    rows = [line for line in text.splitlines() if line.startswith("| cora")]
    assert len(rows) == 2 and "synthetic15" not in text
    cold, warm = rows
    assert "| 1 (sims 0) |" in cold and "| 2 |" in cold  # the unpaired sim 1 is left out
    assert "| 1 |" in warm and warm.endswith("| 5 |")
