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


def test_the_replay_is_the_pipelines_rule():
    """Replaying stored rows made without confirmation gives the statuses the pipeline's lineage
    writes with it (``tasks.warehouse.lineage``), night after night."""
    import datetime as dt

    from tasks.warehouse.lineage import LineageConfig, PreviousClasses, track_lineage

    nights = [{0: ["a1", "a2"], 1: ["n1", "n2", "n3"], 2: ["m1"]},
              {0: ["a1", "a2", "m1"], 1: ["n1", "n2", "n3", "n4"], 3: ["p1", "p2"]},
              {0: ["a1", "a2", "m1"], 1: ["n1", "n2", "n3", "n4", "p1", "p2"]}]
    names = {0: "A"}
    state = {rule: None for rule in ("plain", "confirmed")}
    max_n = {rule: 0 for rule in state}
    candidates: set[str] = set()
    for k, members in enumerate(nights):
        day = dt.date(2026, 1, 1 + k)
        got = {}
        for rule, confirm in (("plain", False), ("confirmed", True)):
            res = track_lineage(state[rule], members, graph="g", snapshot_date=day,
                                current_names=names, max_novel_index=max_n[rule],
                                config=LineageConfig(confirm_novel=confirm))
            got[rule] = res.rows
            statuses = {res.lineage_of[key]: row.status for key in members
                        for row in res.rows if row.lineage_id == res.lineage_of[key]}
            state[rule] = PreviousClasses(members=members, lineage=res.lineage_of, names=names,
                                          statuses={key: statuses[res.lineage_of[key]]
                                                    for key in members},
                                          snapshot_date=day)
            max_n[rule] = res.max_novel_index
        replay = replayed([(r.lineage_id, r.status, r.class_key, r.previous_size)
                           for r in got["plain"]], candidates, day)
        assert replay == {r.lineage_id: r.status for r in got["confirmed"]}, k
        candidates = {lid for lid, st in replay.items() if st == "candidate"}
    # the last night: the confirmed class absorbs the candidate, which is dismissed
    assert replay == {"known:A": "persisting", "g:novel:1": "merged", "g:novel:3": "dismissed"}
