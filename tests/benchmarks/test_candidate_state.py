"""The candidate-state replay (benchmarks.candidate_state): the confirmation rule on stored
lineage rows, and the label-free counts."""
from __future__ import annotations

from benchmarks.candidate_state import label_free, replayed


def test_replay_makes_new_novel_ids_candidates_and_confirms_or_dismisses_them():
    rows = [("known:a", "emerged", 0, None), ("g:novel:1", "emerged", 1, None),
            ("g:novel:2", "split", 2, None), ("g:novel:3", "merged", 3, None),
            ("g:novel:4", "grown", 4, 10), ("g:novel:5", "vanished", None, 7)]
    first = replayed(rows, set(), None)
    assert first == {"known:a": "emerged", "g:novel:1": "candidate", "g:novel:2": "candidate",
                     "g:novel:3": "candidate", "g:novel:4": "grown", "g:novel:5": "vanished"}
    second = replayed([("g:novel:1", "persisting", 1, 5), ("g:novel:2", "merged", None, 4),
                       ("g:novel:3", "merged", 3, 8)], {"g:novel:1", "g:novel:2", "g:novel:3"},
                      None)
    assert second == {"g:novel:1": "emerged", "g:novel:2": "dismissed", "g:novel:3": "emerged"}


def test_label_free_counts_follow_the_answered_nights():
    def night(stored, replay, degraded=False):
        return {"stored": stored, "replayed": replay, "degraded": degraded}

    nights = [night({"g:novel:1": "emerged"}, {"g:novel:1": "candidate"}),
              night({"g:novel:2": "emerged"}, {"g:novel:2": "candidate"}, degraded=True),
              night({"g:novel:1": "vanished"}, {"g:novel:1": "dismissed"})]
    got = label_free(nights)
    assert got == {"appeared": 1, "gone_next_night": 1, "answered_nights": 2, "stored": 2,
                   "replayed": 0}
