"""What is new tonight, one rule everywhere (issue 48): the emerged_classes view, the report's
"New tonight" list, the night's summary line and its Prefect artifact all count a novel class
that emerged that night (with confirmation, its second night) and, without confirmation, one
whose lineage id was first seen that night, whatever its status. A candidate is not new yet."""
from __future__ import annotations

import datetime as dt

import pytest

from tasks.warehouse.lineage import new_tonight

pytestmark = pytest.mark.pipeline

TONIGHT, BEFORE = dt.date(2026, 5, 2), dt.date(2026, 5, 1)


@pytest.mark.parametrize("is_novel, status, first_seen, new", [
    (True, "emerged", TONIGHT, True),
    (True, "merged", TONIGHT, True),      # grew out of earlier classes: still new tonight
    (True, "split", TONIGHT, True),
    (True, "persisting", BEFORE, False),
    (True, "merged", BEFORE, False),      # an old lineage id that absorbed another
    (False, "emerged", TONIGHT, False),   # known classes are never "new"
    (None, "emerged", TONIGHT, False),
    (True, "emerged", None, True),        # no first-seen date recorded: its status decides
    (True, "persisting", None, False),
    (True, "emerged", BEFORE, True),      # confirmed tonight, first seen the night before
    (True, "candidate", TONIGHT, False),  # its first night: not published as a class yet
    (True, "dismissed", BEFORE, False),
])
def test_new_tonight(is_novel, status, first_seen, new):
    assert new_tonight(is_novel, status, first_seen, TONIGHT) is new


def test_the_summary_line_names_what_is_new_tonight():
    from flows.nightly import summary_line

    out = {"graph": "g", "snapshot_date": "2026-05-02", "classes": 4, "novel": 1,
           "statuses": {"g:novel:3": "merged"}, "model_version": 2,
           "new_tonight": ["g:novel:3"]}
    assert "new tonight g:novel:3," in summary_line(out)
    assert "new tonight none," in summary_line(out | {"new_tonight": []})
    # an older summary without the field falls back to the emerged status
    old = {k: v for k, v in out.items() if k != "new_tonight"}
    assert "new tonight none," in summary_line(old)
    assert "new tonight g:novel:3," in summary_line(old | {"statuses": {"g:novel:3": "emerged"}})
    # candidates are named apart: news if they are there again the next night
    line = summary_line(out | {"new_tonight": [], "statuses": {"g:novel:4": "candidate",
                                                              "known:a": "persisting"}})
    assert "new tonight none (candidates: g:novel:4)," in line


def test_a_night_without_novel_test_nodes_says_so_not_nan():
    """Before a novel class starts there is no novel node to score: the summary line says so
    instead of ``Novel nan%`` (issue 62)."""
    from flows.nightly import summary_line
    from tasks.scoring import scores_text

    assert scores_text({"all": 91.25, "known": 93.0, "novel": 80.04}) == (
        "All 91.2% Known 93.0% Novel 80.0%")
    quiet = scores_text({"all": 91.2, "known": 91.2, "novel": float("nan")}, ", ")
    assert quiet == "All 91.2%, Known 91.2%, Novel – (no novel test node)"
    out = {"graph": "g", "snapshot_date": "2026-01-01", "classes": 4, "novel": 0,
           "statuses": {}, "new_tonight": [], "model_version": 1,
           "scores": {"all": 90.0, "known": 90.0, "novel": float("nan")}}
    line = summary_line(out)
    assert "nan" not in line and "Novel – (no novel test node)" in line
