"""benchmarks/known_split_trim.py: its tables pair the trimmed and plain answers of each fit, and
the kept loops' nights are listed as the study reads them."""
from __future__ import annotations

import pytest

from benchmarks.known_split_trim import main, table
from benchmarks.split_repeat_proxy import loop_nights


def _heldout(all_: float, classes: int) -> dict:
    return {"all": all_, "known": 80.0, "novel": all_ - 10, "surfaced": 1,
            "stand_ins": [{}, {}], "novel_classes": classes}


def _nonovel(share: float, classes: int) -> dict:
    return {"accuracy": 90.0, "novel_share": share, "novel_classes": classes}


def test_the_tables_pair_the_arms_by_fit_and_count_where_the_trim_acted():
    rows = [{"task": "heldout", "source": "cora-sim2", "night": n, "seed": 0,
             "arms": {"plain": _heldout(60.0, 2), "trim": _heldout(60.0 + d, 2 + (d > 0))}}
            for n, d in ((5, 4.0), (6, 0.0))]
    rows += [{"task": "nonovel", "source": "cora-sim2", "night": n, "seed": 0,
              "arms": {"plain": _nonovel(0.0, 0), "trim": _nonovel(s, int(s > 0))}}
             for n, s in ((5, 6.0), (6, 0.0))]
    got = table(rows)
    assert "| cora | 2 | 1 | 60.0 / 80.0 / 50.0 | 62.0 / 80.0 / 52.0 | 2 -> 2 of 4 | +2.0 (2.0) |" in got
    assert "| cora | 2 | 0.0 -> 3.0 | 0.0 -> 0.5 | 90.0 -> 90.0 | +3.0 (3.0) |" in got


def test_an_unknown_task_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--tasks", "heldout,bogus", "--report-only"])
    assert "unknown ['bogus']" in capsys.readouterr().err


def test_the_nights_of_kept_loops_in_order_and_a_missing_loop_said_and_skipped(tmp_path, capsys):
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        (tmp_path / "cora-sim0" / "snapshots" / "cora" / f"snapshot={day}").mkdir(parents=True)
    got = list(loop_nights(tmp_path, "cora,amazonphoto", "0", "3,1", "0,1"))
    assert [(s, n, k, p.rsplit("=", 1)[1]) for s, n, k, p in got] == [
        ("cora-sim0", 3, 0, "2026-01-03"), ("cora-sim0", 3, 1, "2026-01-03"),
        ("cora-sim0", 1, 0, "2026-01-01"), ("cora-sim0", 1, 1, "2026-01-01")]
    assert "[amazonphoto-sim0] no snapshots" in capsys.readouterr().out
