"""Which snapshot ``oral run`` takes without ``--date`` (issue 48.2): the next unprocessed night.
With no published run of the graph that is the oldest snapshot (before: the latest, so a fresh
state skipped every night but the last); otherwise the oldest newer than the last published one;
once every snapshot is processed, the latest. Folders only, no training."""
from __future__ import annotations

import datetime as dt

import pytest

from tasks.intake import pick_snapshot
from tasks.warehouse import Warehouse

DAYS = ["2026-03-01", "2026-03-02", "2026-03-04"]


@pytest.fixture
def root(tmp_path):
    for day in DAYS:
        (tmp_path / "snaps" / "g" / f"snapshot={day}").mkdir(parents=True)
    return tmp_path / "snaps"


def test_a_fresh_state_starts_with_the_oldest_snapshot(root, tmp_path):
    last = Warehouse(tmp_path / "state" / "oral.duckdb").last_processed_date("g")  # no warehouse
    assert last is None
    assert pick_snapshot(root, "g", None, last).name == "snapshot=2026-03-01"


@pytest.mark.parametrize("last, expected", [
    (dt.date(2026, 2, 1), "2026-03-01"),   # published before the first snapshot
    (dt.date(2026, 3, 1), "2026-03-02"),
    (dt.date(2026, 3, 2), "2026-03-04"),   # a gap in the dates: the next one there is
    (dt.date(2026, 3, 3), "2026-03-04"),
    (dt.date(2026, 3, 4), "2026-03-04"),   # all processed: the latest
    (dt.date(2026, 5, 1), "2026-03-04"),
])
def test_then_the_oldest_newer_than_the_last_published_else_the_latest(root, last, expected):
    assert pick_snapshot(root, "g", None, last).name == f"snapshot={expected}"


def test_a_date_names_its_snapshot_whatever_was_processed(root):
    assert pick_snapshot(root, "g", "2026-03-02", None).name == "snapshot=2026-03-02"
    assert pick_snapshot(root, "g", "2026-03-01", dt.date(2026, 3, 4)).name == \
        "snapshot=2026-03-01"
