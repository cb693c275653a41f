"""Class lineage across nights, on hand-made consecutive runs.

The matching rules (continuation, absorption, split) are tested without the confirmation rule
(``LineageConfig(confirm_novel=False)``), which only renames statuses; the confirmation rule
has its own tests at the end, at the default configuration."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from tasks.warehouse.lineage import LineageConfig, PreviousClasses, overlap_matrix
from tasks.warehouse.lineage import track_lineage as tracked

#: the matching rules alone: a novel id emerges the night it appears
MATCHING = LineageConfig(confirm_novel=False)


def track_lineage(*args, config: LineageConfig = MATCHING, **kwargs):
    return tracked(*args, config=config, **kwargs)

D1, D2 = dt.date(2026, 3, 1), dt.date(2026, 3, 2)


def ids(lo: int, hi: int) -> list[str]:
    return [f"n{i}" for i in range(lo, hi)]


def previous(classes: dict, lineage: dict, names: dict | None = None,
             first_seen: dict | None = None, statuses: dict | None = None) -> PreviousClasses:
    return PreviousClasses(members=classes, lineage=lineage, names=names or {},
                           first_seen=first_seen or {}, statuses=statuses or {},
                           snapshot_date=D1, run_id="r1")


def by_lineage(result) -> dict:
    rows = {}
    for row in result.rows:
        assert row.lineage_id not in rows, "a lineage id appears twice in one run"
        rows[row.lineage_id] = row
    return rows


def test_overlap_matrix_counts_shared_members() -> None:
    prev = {0: ids(0, 10), 1: ids(10, 20)}
    cur = {"a": ids(5, 15), "b": ids(15, 30)}
    ov, ps, cs = overlap_matrix(prev, cur, [0, 1], ["a", "b"])
    assert ov.tolist() == [[5, 0], [5, 5]]
    assert ps.tolist() == [10, 10] and cs.tolist() == [10, 15]
    with pytest.raises(ValueError, match="more than one"):
        overlap_matrix({0: ["x"], 1: ["x"]}, {}, [0, 1], [])


def test_first_run_everything_emerges_and_known_keep_their_name() -> None:
    res = track_lineage(None, {0: ids(0, 10), 1: ids(10, 20), 2: ids(20, 25)}, graph="g",
                        snapshot_date=D1, current_names={0: "A"}, max_novel_index=0)
    assert res.lineage_of == {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}
    assert {r.status for r in res.rows} == {"emerged"}
    assert res.max_novel_index == 2
    assert all(r.first_seen == D1 and r.last_seen == D1 for r in res.rows)


def test_identical_classes_persist_with_the_same_ids() -> None:
    classes = {0: ids(0, 50), 1: ids(50, 80), 2: ids(80, 100)}
    prev = previous(classes, {0: "known:A", 1: "g:novel:3", 2: "g:novel:4"}, {0: "A"},
                    first_seen={1: dt.date(2026, 2, 1)})
    # same members under different class keys tonight (novel ids are reordered every night)
    res = track_lineage(prev, {0: ids(0, 50), 5: ids(80, 100), 6: ids(50, 80)}, graph="g",
                        snapshot_date=D2, current_names={0: "A"}, max_novel_index=4)
    assert res.lineage_of == {0: "known:A", 5: "g:novel:4", 6: "g:novel:3"}
    rows = by_lineage(res)
    assert {r.status for r in res.rows} == {"persisting"}
    assert rows["g:novel:3"].first_seen == dt.date(2026, 2, 1)  # carried over
    assert rows["g:novel:4"].first_seen == D1  # default: the previous run's date
    assert rows["g:novel:4"].previous_size == 20 and rows["g:novel:4"].last_seen == D2
    assert res.max_novel_index == 4


def test_new_class_emerges_with_the_next_id() -> None:
    prev = previous({0: ids(0, 50), 1: ids(50, 80)}, {0: "known:A", 1: "g:novel:7"}, {0: "A"})
    res = track_lineage(prev, {0: ids(0, 50), 1: ids(50, 80), 2: ids(100, 130)}, graph="g",
                        snapshot_date=D2, current_names={0: "A"}, max_novel_index=7)
    assert res.lineage_of[2] == "g:novel:8"
    row = by_lineage(res)["g:novel:8"]
    assert (row.status, row.size, row.previous_size, row.parents, row.first_seen) == \
        ("emerged", 30, None, [], D2)
    assert res.max_novel_index == 8


def test_grown_and_shrunk_by_size_tolerance() -> None:
    prev = previous({1: ids(0, 100), 2: ids(100, 200), 3: ids(200, 300)},
                    {1: "g:novel:1", 2: "g:novel:2", 3: "g:novel:3"})
    cur = {1: ids(0, 100) + ids(1000, 1050),   # 150 vs 100: grown
           2: ids(100, 170),                   # 70 vs 100: shrunk
           3: ids(200, 300) + ids(2000, 2015)}  # 115 vs 100: within 20 %: persisting
    res = by_lineage(track_lineage(prev, cur, graph="g", snapshot_date=D2, max_novel_index=3))
    assert res["g:novel:1"].status == "grown" and res["g:novel:1"].previous_size == 100
    assert res["g:novel:2"].status == "shrunk"
    assert res["g:novel:3"].status == "persisting"
    loose = by_lineage(track_lineage(prev, cur, graph="g", snapshot_date=D2, max_novel_index=3,
                                     config=LineageConfig(size_tolerance=0.6, confirm_novel=False)))
    assert {r.status for r in loose.values()} == {"persisting"}


def test_two_classes_merge_into_one() -> None:
    prev = previous({1: ids(0, 60), 2: ids(60, 100)}, {1: "g:novel:1", 2: "g:novel:2"})
    res = track_lineage(prev, {4: ids(0, 100)}, graph="g", snapshot_date=D2, max_novel_index=2)
    rows = by_lineage(res)
    # the larger overlap is the Hungarian match: the merged class keeps its id
    assert res.lineage_of == {4: "g:novel:1"}
    merged = rows["g:novel:1"]
    assert (merged.status, merged.class_key, merged.size, merged.parents) == \
        ("merged", 4, 100, ["g:novel:2"])
    gone = rows["g:novel:2"]
    assert (gone.status, gone.class_key, gone.size, gone.merged_into, gone.last_seen) == \
        ("merged", None, 0, "g:novel:1", D1)
    assert res.max_novel_index == 2


def test_merge_without_a_qualifying_match_gets_a_new_id() -> None:
    # three classes of 40 merge with 80 new nodes: every Jaccard is 40/200 < 0.3
    prev = previous({1: ids(0, 40), 2: ids(40, 80), 3: ids(80, 120)},
                    {1: "g:novel:1", 2: "g:novel:2", 3: "g:novel:3"})
    res = track_lineage(prev, {9: ids(0, 120) + ids(500, 580)}, graph="g", snapshot_date=D2,
                        max_novel_index=3)
    rows = by_lineage(res)
    assert res.lineage_of == {9: "g:novel:4"}
    assert rows["g:novel:4"].status == "merged"
    assert rows["g:novel:4"].parents == ["g:novel:1", "g:novel:2", "g:novel:3"]
    assert all(rows[f"g:novel:{i}"].merged_into == "g:novel:4" for i in (1, 2, 3))


def test_one_class_splits_in_two() -> None:
    prev = previous({1: ids(0, 100)}, {1: "g:novel:5"})
    res = track_lineage(prev, {3: ids(0, 60), 4: ids(60, 100)}, graph="g", snapshot_date=D2,
                        max_novel_index=5)
    rows = by_lineage(res)
    assert res.lineage_of == {3: "g:novel:5", 4: "g:novel:6"}
    assert rows["g:novel:5"].status == "shrunk"  # the Hungarian match keeps the id
    part = rows["g:novel:6"]
    assert (part.status, part.parents, part.size, part.first_seen) == ("split", ["g:novel:5"], 40, D2)


def test_split_into_many_small_parts_ends_the_parent() -> None:
    # four parts of 25: Jaccard 0.25 < 0.3, so no part continues the class
    prev = previous({1: ids(0, 100)}, {1: "g:novel:1"})
    cur = {k: ids(25 * k, 25 * k + 25) for k in range(4)}
    res = track_lineage(prev, cur, graph="g", snapshot_date=D2, max_novel_index=1)
    rows = by_lineage(res)
    assert [res.lineage_of[k] for k in range(4)] == [f"g:novel:{n}" for n in (2, 3, 4, 5)]
    assert all(rows[f"g:novel:{n}"].status == "split" and rows[f"g:novel:{n}"].parents == ["g:novel:1"]
               for n in (2, 3, 4, 5))
    assert (rows["g:novel:1"].status, rows["g:novel:1"].class_key) == ("split", None)


def test_a_class_that_disappears_vanishes() -> None:
    prev = previous({0: ids(0, 50), 1: ids(50, 80)}, {0: "known:A", 1: "g:novel:2"}, {0: "A"},
                    first_seen={1: dt.date(2026, 1, 15)})
    res = track_lineage(prev, {0: ids(0, 50)}, graph="g", snapshot_date=D2,
                        current_names={0: "A"}, max_novel_index=2)
    row = by_lineage(res)["g:novel:2"]
    assert (row.status, row.class_key, row.size, row.previous_size) == ("vanished", None, 0, 30)
    assert (row.first_seen, row.last_seen) == (dt.date(2026, 1, 15), D1)


def test_below_threshold_overlap_does_not_match() -> None:
    # 20 of 100 members shared with a class of 100 otherwise new nodes: Jaccard 20/180 < 0.3
    prev = previous({1: ids(0, 100)}, {1: "g:novel:1"})
    res = track_lineage(prev, {1: ids(80, 180)}, graph="g", snapshot_date=D2, max_novel_index=1)
    rows = by_lineage(res)
    assert res.lineage_of == {1: "g:novel:2"}
    assert rows["g:novel:2"].status == "emerged"
    assert rows["g:novel:1"].status == "vanished"
    # with a lower threshold the same pair matches (and shrinks/grows by size only)
    low = track_lineage(prev, {1: ids(80, 180)}, graph="g", snapshot_date=D2, max_novel_index=1,
                        config=LineageConfig(threshold=0.1, confirm_novel=False))
    assert low.lineage_of == {1: "g:novel:1"}
    assert by_lineage(low)["g:novel:1"].status == "persisting"


def test_known_classes_keep_their_id_regardless_of_overlap() -> None:
    prev = previous({0: ids(0, 50), 1: ids(50, 100)}, {0: "known:A", 1: "known:B"},
                    {0: "A", 1: "B"})
    # tonight A and B swap every member, and B doubles: names decide, not members
    res = track_lineage(prev, {0: ids(50, 100), 1: ids(0, 50) + ids(200, 250)}, graph="g",
                        snapshot_date=D2, current_names={0: "A", 1: "B"}, max_novel_index=9)
    rows = by_lineage(res)
    assert res.lineage_of == {0: "known:A", 1: "known:B"}
    assert rows["known:A"].status == "persisting" and rows["known:B"].status == "grown"
    assert res.max_novel_index == 9 and len(res.rows) == 2


def test_novel_class_absorbed_into_a_known_class_is_recorded() -> None:
    prev = previous({0: ids(0, 50), 1: ids(50, 70)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"})
    res = track_lineage(prev, {0: ids(0, 70)}, graph="g", snapshot_date=D2,
                        current_names={0: "A"}, max_novel_index=1)
    rows = by_lineage(res)
    assert rows["known:A"].status == "grown" and rows["known:A"].parents == ["g:novel:1"]
    assert (rows["g:novel:1"].status, rows["g:novel:1"].merged_into) == ("merged", "known:A")


def test_deterministic_whatever_the_input_order() -> None:
    prev_members = {1: ids(0, 60), 2: ids(60, 100), 3: ids(100, 150)}
    lin = {1: "g:novel:1", 2: "g:novel:2", 3: "g:novel:3"}
    cur = {7: ids(0, 100), 8: ids(300, 340), 9: ids(100, 120), 10: ids(120, 150)}
    rng = np.random.default_rng(0)
    shuffled_prev = {k: list(rng.permutation(prev_members[k])) for k in reversed(list(prev_members))}
    shuffled_cur = {k: list(rng.permutation(cur[k])) for k in reversed(list(cur))}
    a = track_lineage(previous(prev_members, lin), cur, graph="g", snapshot_date=D2, max_novel_index=3)
    b = track_lineage(previous(shuffled_prev, lin), shuffled_cur, graph="g", snapshot_date=D2,
                      max_novel_index=3)
    assert a.rows == b.rows and a.lineage_of == b.lineage_of
    statuses = {r.lineage_id: r.status for r in a.rows}
    assert statuses["g:novel:1"] == "merged" and statuses["g:novel:2"] == "merged"
    assert a.lineage_of[8] == "g:novel:4"  # emerged, new ids in class-key order
    assert statuses["g:novel:4"] == "emerged"
    # class 3 splits: key 10 (30 of its 50) keeps its id, key 9 (the other 20) is a new part
    assert a.lineage_of[10] == "g:novel:3" and statuses["g:novel:3"] == "shrunk"
    assert a.lineage_of[9] == "g:novel:5" and statuses["g:novel:5"] == "split"


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        track_lineage(None, {}, graph="g", snapshot_date=D1, config=LineageConfig(threshold=0))
    with pytest.raises(ValueError, match="lineage id"):
        track_lineage(PreviousClasses(members={1: ["a"]}, lineage={}), {}, graph="g",
                      snapshot_date=D1)


# ------------------------------------------------------------ confirmation (the default)
def test_a_novel_class_is_a_candidate_first_and_emerges_when_its_id_goes_on() -> None:
    first = tracked(None, {0: ids(0, 10), 1: ids(10, 20)}, graph="g", snapshot_date=D1,
                    current_names={0: "A"})
    rows = by_lineage(first)
    assert rows["known:A"].status == "emerged"  # known classes are never candidates
    assert rows["g:novel:1"].status == "candidate"
    prev = previous({0: ids(0, 10), 1: ids(10, 20)}, first.lineage_of, {0: "A"},
                    statuses={0: "emerged", 1: "candidate"})
    second = by_lineage(tracked(prev, {0: ids(0, 10), 1: ids(10, 22)}, graph="g",
                                snapshot_date=D2, current_names={0: "A"}, max_novel_index=1))
    assert second["g:novel:1"].status == "emerged"  # confirmed: its second night
    assert second["known:A"].status == "persisting"
    prev = previous({0: ids(0, 10), 1: ids(10, 22)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"},
                    statuses={0: "persisting", 1: "emerged"})
    third = by_lineage(tracked(prev, {0: ids(0, 10), 1: ids(10, 23)}, graph="g",
                               snapshot_date=D2, current_names={0: "A"}, max_novel_index=1))
    assert third["g:novel:1"].status == "persisting"  # confirmed once, then the size statuses


def test_confirm_size_publishes_a_large_new_class_the_night_it_appears() -> None:
    """``confirm_size``: a new novel class of at least that share of the median known class's
    size is published on its first night; smaller ones are candidates; off by default."""
    tonight = {0: ids(0, 10), 1: ids(10, 30), 2: ids(30, 40), 3: ids(40, 44)}
    names = {0: "A", 1: "B"}  # known sizes 10 and 20: median 15
    got = by_lineage(track_lineage(None, tonight, graph="g", snapshot_date=D1,
                                   current_names=names,
                                   config=LineageConfig(confirm_size=0.5)))
    assert got["g:novel:1"].status == "emerged"  # 10 nodes >= 7.5
    assert got["g:novel:2"].status == "candidate"  # 4 nodes
    plain = by_lineage(tracked(None, tonight, graph="g", snapshot_date=D1, current_names=names))
    assert plain["g:novel:1"].status == plain["g:novel:2"].status == "candidate"
    assert LineageConfig().confirm_size is None
    with pytest.raises(ValueError, match="confirm_size"):
        LineageConfig(confirm_size=0).validate()


def test_a_candidate_that_ends_is_dismissed_not_an_event() -> None:
    """A candidate that vanishes, or is absorbed, is ``dismissed``; a confirmed class that ends
    keeps its event (``vanished``, ``merged``); a split part or a merge under a new id is a
    candidate on its first night."""
    prev = previous({0: ids(0, 10), 1: ids(10, 20), 2: ids(20, 30), 3: ids(30, 40),
                     4: ids(40, 50)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2", 3: "g:novel:3",
                     4: "g:novel:4"}, {0: "A"},
                    statuses={0: "persisting", 1: "candidate", 2: "emerged", 3: "candidate",
                              4: "grown"})
    # novel:1's nodes go to A (absorbed); novel:2 and novel:3 vanish; novel:4 goes on in one
    # part and a new class takes the other part
    tonight = {0: ids(0, 20), 5: ids(40, 45), 6: ids(45, 50)}
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=4))
    assert got["g:novel:1"].status == "dismissed" and got["g:novel:1"].merged_into == "known:A"
    assert got["g:novel:2"].status == "vanished"  # it had been published: its end is an event
    assert got["g:novel:3"].status == "dismissed"
    assert got["g:novel:4"].status == "shrunk"
    assert got["g:novel:5"].status == "candidate"  # the new part: its first night
    assert got["g:novel:5"].parents == ["g:novel:4"]  # the split's parent is still recorded
    # without confirmation the same nights read as before
    plain = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                     current_names={0: "A"}, max_novel_index=4))
    assert [plain[k].status for k in ("g:novel:1", "g:novel:3", "g:novel:5")] == [
        "merged", "vanished", "split"]


def test_shared_matching_keeps_a_fast_growing_class_on_its_past() -> None:
    """``match_on="shared"`` counts only the nodes both nights hold: a novel class that
    doubles with new nodes overnight keeps its id, where counting every member (the default)
    puts its Jaccard index under the threshold and gives it a new one."""
    prev = previous({0: ids(0, 50), 1: ids(50, 60)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"})
    tonight = {0: ids(0, 50), 1: ids(50, 60) + ids(100, 140)}  # 10 old nodes, 30 new ones
    plain = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                     current_names={0: "A"}, max_novel_index=1))
    assert plain["g:novel:2"].status == "emerged" and plain["g:novel:1"].status == "vanished"
    shared = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                      current_names={0: "A"}, max_novel_index=1,
                                      config=LineageConfig(match_on="shared",
                                                           confirm_novel=False)))
    assert shared["g:novel:1"].status == "grown" and "g:novel:2" not in shared
    with pytest.raises(ValueError, match="match_on"):
        LineageConfig(match_on="some").validate()


MUTUAL = LineageConfig(confirm_novel=False, continue_mutual=True)


def test_mutual_continuation_keeps_a_class_that_grows_and_splits() -> None:
    """A novel class of 100 nodes splits overnight into parts of 40 (+60 new nodes) and 30
    (+20 new) old nodes, the rest going to a known class: every Jaccard index is 0.25, so by
    default both parts get new ids and the class ends; with ``continue_mutual`` the part that
    took most of it, and whose old nodes all came from it, keeps its id."""
    prev = previous({0: ids(0, 50), 1: ids(100, 200)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"})
    tonight = {0: ids(0, 50) + ids(170, 200), 1: ids(100, 140) + ids(300, 360),
               2: ids(140, 170) + ids(400, 420)}
    plain = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                     current_names={0: "A"}, max_novel_index=1))
    assert "g:novel:1" in plain and plain["g:novel:1"].class_key is None  # ended
    mutual = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                      current_names={0: "A"}, max_novel_index=1, config=MUTUAL))
    assert mutual["g:novel:1"].class_key == 1 and mutual["g:novel:1"].status == "persisting"
    assert mutual["g:novel:1"].previous_size == 100  # 40 old and 60 new nodes: the same size
    assert mutual["g:novel:2"].class_key == 2  # the other part: a new id
    assert plain["g:novel:2"].class_key == 1 and plain["g:novel:3"].class_key == 2


def test_mutual_continuation_needs_each_to_be_the_others_largest_overlap() -> None:
    """No continuation when the previous class went mostly to a known class (it dissolved),
    nor when the current class's old nodes came mostly from elsewhere (under ``share``)."""
    # 1. novel:1 (40 nodes) gives 30 to known A and 10 to a new group of 12 old + 30 new nodes
    prev = previous({0: ids(0, 50), 1: ids(100, 140), 2: ids(200, 202)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"})
    tonight = {0: ids(0, 50) + ids(100, 130), 1: ids(130, 140) + ids(200, 202) + ids(300, 330)}
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, max_novel_index=2, config=MUTUAL))
    assert got["g:novel:1"].class_key is None  # dissolved into A: not continued
    # 2. the current class's old nodes: 10 from novel:1 and 10 from known A (a tie: A is first,
    # so novel:1 is not its largest source) ...
    prev = previous({0: ids(0, 50), 1: ids(100, 110)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"})
    tonight = {0: ids(10, 50), 1: ids(0, 10) + ids(100, 110) + ids(300, 360)}
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, max_novel_index=1, config=MUTUAL))
    assert got["g:novel:1"].class_key is None
    # ... and with share=0.6 a class whose old nodes are 10 of novel:1's and 8 of A's is not
    # continued either (10 < 0.6 * 18), where the default share of 0.5 continues it
    tonight = {0: ids(8, 50), 1: ids(0, 8) + ids(100, 110) + ids(300, 360)}
    for share, continued in ((0.5, True), (0.6, False)):
        cfg = LineageConfig(confirm_novel=False, continue_mutual=True, share=share)
        got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                       current_names={0: "A"}, max_novel_index=1, config=cfg))
        assert (got["g:novel:1"].class_key == 1) is continued


CONTAINED = LineageConfig(continue_contained=True)


def test_contained_continuation_confirms_a_candidate_that_grew_out_of_it_alone() -> None:
    """Last night's candidate novel:1 (20 nodes) is nearly all in tonight's class of 20 + 100
    new nodes (Jaccard 0.17, under 0.3): by default tonight's class is a new candidate and
    novel:1 is dismissed; with ``continue_contained`` it continues novel:1, which is then
    confirmed (``emerged``, its second night)."""
    prev = previous({0: ids(0, 50), 1: ids(100, 120)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"},
                    statuses={0: "persisting", 1: "candidate"})
    tonight = {0: ids(0, 50), 1: ids(100, 120) + ids(300, 400)}
    plain = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                               current_names={0: "A"}, max_novel_index=1))
    assert plain["g:novel:1"].status == "dismissed" and plain["g:novel:2"].status == "candidate"
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=1, config=CONTAINED))
    assert got["g:novel:1"].class_key == 1 and got["g:novel:1"].status == "emerged"
    assert "g:novel:2" not in got


def test_contained_continuation_leaves_merges_and_dissolved_classes_alone() -> None:
    """Two previous novel classes that both went mostly to tonight's class are a merge (step 2),
    not a continuation; a previous class that went mostly to a known class is not continued;
    and a class with a Hungarian predecessor keeps it."""
    # 1. novel:1 and novel:2 (10 nodes each) both inside tonight's class of 120
    prev = previous({0: ids(0, 50), 1: ids(100, 110), 2: ids(200, 210)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"})
    tonight = {0: ids(0, 50), 1: ids(100, 110) + ids(200, 210) + ids(300, 400)}
    cfg = LineageConfig(confirm_novel=False, continue_contained=True)
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, max_novel_index=2, config=cfg))
    assert got["g:novel:3"].status == "merged" and got["g:novel:3"].class_key == 1
    assert got["g:novel:1"].merged_into == got["g:novel:2"].merged_into == "g:novel:3"
    # 2. novel:1 went mostly (30 of 40) to known A: it dissolved, tonight's class is new
    prev = previous({0: ids(0, 50), 1: ids(100, 140)}, {0: "known:A", 1: "g:novel:1"}, {0: "A"})
    tonight = {0: ids(0, 50) + ids(100, 130), 1: ids(130, 140) + ids(300, 330)}
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, max_novel_index=1, config=cfg))
    assert got["g:novel:1"].class_key is None and got["g:novel:2"].class_key == 1
    # 3. a Hungarian match stands: novel:1 persists into the class that holds it, a small new
    # class holding part of novel:2 (its largest share) continues novel:2
    prev = previous({0: ids(0, 50), 1: ids(100, 150), 2: ids(200, 210)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"})
    tonight = {0: ids(0, 50), 1: ids(100, 150), 2: ids(200, 208) + ids(300, 360)}
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, max_novel_index=2, config=cfg))
    assert got["g:novel:1"].class_key == 1 and got["g:novel:1"].status == "persisting"
    assert got["g:novel:2"].class_key == 2 and got["g:novel:2"].status == "grown"


PUBLISHED = LineageConfig(continue_published=True)


def test_published_continuation_keeps_the_published_id_when_a_candidate_merges_with_it() -> None:
    """Published novel:1 (30 nodes) and last night's candidate novel:2 (60 nodes, grown beside
    it) come together tonight (90 nodes): the Hungarian match is the candidate (Jaccard 0.67
    against 0.33), so by default novel:2 goes on (``merged``, and confirmed) and the published
    novel:1 ends ``merged`` into it. With ``continue_published`` tonight's class continues
    novel:1 (still ``merged``, the candidate its parent) and the candidate is dismissed: no
    published id ends."""
    prev = previous({0: ids(0, 50), 1: ids(100, 130), 2: ids(200, 260)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"},
                    statuses={0: "persisting", 1: "grown", 2: "candidate"})
    tonight = {0: ids(0, 50), 1: ids(100, 130) + ids(200, 260)}
    plain = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                               current_names={0: "A"}, max_novel_index=2))
    assert plain["g:novel:2"].class_key == 1 and plain["g:novel:1"].status == "merged"
    assert plain["g:novel:1"].merged_into == "g:novel:2"
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=2, config=PUBLISHED))
    assert got["g:novel:1"].class_key == 1 and got["g:novel:1"].status == "merged"
    assert got["g:novel:1"].parents == ["g:novel:2"] and got["g:novel:1"].previous_size == 30
    assert got["g:novel:2"].class_key is None and got["g:novel:2"].status == "dismissed"
    assert got["g:novel:2"].merged_into == "g:novel:1"


def test_published_continuation_leaves_published_matches_and_lone_candidates_alone() -> None:
    """The step changes nothing when the match was published itself (two published classes
    merging keep the Hungarian match's id), when the candidate absorbs only another candidate,
    or when the previous run carries no statuses (nothing is known to be a candidate)."""
    members = {0: ids(0, 50), 1: ids(100, 130), 2: ids(200, 260)}
    lineage = {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}
    tonight = {0: ids(0, 50), 1: ids(100, 130) + ids(200, 260)}
    for statuses in ({0: "persisting", 1: "grown", 2: "emerged"},
                     {0: "persisting", 1: "candidate", 2: "candidate"}, {}):
        prev = previous(members, lineage, {0: "A"}, statuses=statuses)
        plain, got = (by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                                         current_names={0: "A"}, max_novel_index=2, config=cfg))
                      for cfg in (LineageConfig(), PUBLISHED))
        assert got == plain and got["g:novel:2"].class_key == 1


def test_published_continuation_prefers_the_published_class_first_seen_earliest() -> None:
    """A candidate (60 nodes) absorbs two published classes (20 nodes each): tonight's class
    continues the one first seen earlier, novel:2 (first seen on D0), though novel:1 is
    the lower key; both others are its parents."""
    d0 = dt.date(2026, 1, 1)
    prev = previous({0: ids(0, 50), 1: ids(100, 120), 2: ids(150, 170), 3: ids(200, 260)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2", 3: "g:novel:3"}, {0: "A"},
                    statuses={0: "persisting", 1: "grown", 2: "grown", 3: "candidate"})
    prev.first_seen = {1: D1, 2: d0}
    tonight = {0: ids(0, 50), 1: ids(100, 120) + ids(150, 170) + ids(200, 260)}
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=3, config=PUBLISHED))
    assert got["g:novel:2"].class_key == 1 and got["g:novel:2"].first_seen == d0
    assert sorted(got["g:novel:2"].parents) == ["g:novel:1", "g:novel:3"]
    assert got["g:novel:1"].status == "merged" and got["g:novel:3"].status == "dismissed"


def test_publish_now_publishes_a_new_novel_class_the_night_it_appears() -> None:
    """Under confirmation a new novel class is a candidate, unless its key is in
    ``publish_now`` (a caller's own evidence); a known class is untouched by it."""
    prev = previous({0: ids(0, 50)}, {0: "known:A"}, {0: "A"})
    tonight = {0: ids(0, 50), 1: ids(100, 110), 2: ids(200, 210)}
    cfg = LineageConfig()
    got = by_lineage(track_lineage(prev, tonight, graph="g", snapshot_date=D2,
                                   current_names={0: "A"}, config=cfg, publish_now={1, 0}))
    assert got["g:novel:1"].status == "emerged" and got["g:novel:2"].status == "candidate"
    assert got["known:A"].status == "persisting"


def test_confirm_seen_publishes_a_new_class_whose_nodes_were_novel_last_night() -> None:
    """Last night's candidate novel:1 (60 nodes) is purified: tonight's class 1 keeps 20 of them
    and adds 60 new nodes (Jaccard 0.2, novel:1 gave it a third of its nodes, most went to known
    A): a new id, a candidate by default; with ``confirm_seen`` every node of it the previous
    run held was novel there, so it is published the night it appears. A new class of nodes the
    previous run held in a known class (class 2), or of new nodes only (class 3), still waits."""
    prev = previous({0: ids(0, 100), 1: ids(100, 160)}, {0: "known:A", 1: "g:novel:1"},
                    {0: "A"}, statuses={0: "persisting", 1: "candidate"})
    tonight = {0: ids(0, 80) + ids(120, 160), 1: ids(100, 120) + ids(300, 360),
               2: ids(80, 100) + ids(400, 410), 3: ids(500, 520)}
    names = {0: "A"}
    plain = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                               current_names=names, max_novel_index=1))
    assert {plain[f"g:novel:{n}"].status for n in (2, 3, 4)} == {"candidate"}
    cfg = LineageConfig(confirm_seen=True)
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2, current_names=names,
                             max_novel_index=1, config=cfg))
    keyed = {row.class_key: row for row in got.values() if row.class_key is not None}
    assert keyed[1].status == "emerged" and keyed[1].lineage_id == "g:novel:2"
    assert keyed[2].status == "candidate" and keyed[3].status == "candidate"
    assert got["g:novel:1"].status == "dismissed"


def test_the_lineage_task_forwards_the_contained_continuation(monkeypatch) -> None:
    """``tasks.prefect_tasks.lineage`` builds tonight's ``LineageConfig`` with
    ``continue_contained`` as the flow passes it (``ORAL_LINEAGE_CONTAINED``)."""
    import logging

    from tasks import prefect_tasks as pt
    from tasks import publishing

    seen = []

    def fake_lineage(warehouse, run, path, classes, graph, date, config):
        seen.append(config)
        return {"result": type("R", (), {"rows": []})()}

    monkeypatch.setattr(publishing, "lineage", fake_lineage)
    monkeypatch.setattr(pt, "get_run_logger", lambda: logging.getLogger("test"))
    for contained in (True, False):
        pt.lineage.fn("w.duckdb", {}, "p.parquet", [], "g", D2, True, None, contained)
        assert seen[-1].continue_contained is contained and seen[-1].confirm_novel is True
        assert seen[-1].continue_published is False
    pt.lineage.fn("w.duckdb", {}, "p.parquet", [], "g", D2, True, None, True, True)
    assert seen[-1].continue_published is True  # ORAL_LINEAGE_PUBLISHED


MERGED = LineageConfig(continue_merged=True)


def test_merged_continuation_lets_two_candidates_that_come_together_go_on() -> None:
    """Two candidates, novel:1 (20 nodes) and novel:2 (10 nodes), both go whole into tonight's
    class of 100 nodes (Jaccard 0.2 and 0.1, under the match threshold): by default it is a merge
    under a new id, a candidate again, and both candidates are dismissed. With
    ``continue_merged`` it continues novel:1, the one that gave it the most nodes, and is
    confirmed (``emerged``); novel:2 is dismissed into it, its parent."""
    prev = previous({0: ids(0, 50), 1: ids(100, 120), 2: ids(150, 160)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"},
                    statuses={0: "persisting", 1: "candidate", 2: "candidate"})
    tonight = {0: ids(0, 50), 1: ids(100, 120) + ids(150, 160) + ids(300, 370)}
    plain = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                               current_names={0: "A"}, max_novel_index=2))
    assert plain["g:novel:3"].class_key == 1 and plain["g:novel:3"].status == "candidate"
    assert plain["g:novel:1"].status == plain["g:novel:2"].status == "dismissed"
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=2, config=MERGED))
    assert "g:novel:3" not in got
    assert got["g:novel:1"].class_key == 1 and got["g:novel:1"].status == "emerged"
    assert got["g:novel:1"].parents == ["g:novel:2"] and got["g:novel:1"].previous_size == 20
    assert got["g:novel:2"].status == "dismissed" and got["g:novel:2"].merged_into == "g:novel:1"


def test_merged_continuation_keeps_the_published_id_and_leaves_matches_alone() -> None:
    """A published class (10 nodes, first seen earlier) and a larger candidate (20 nodes) come
    together in a new class: it continues the published one (``merged``, the candidate
    dismissed into it), not the larger candidate. A class the Hungarian match already
    continues, and a class that absorbs no novel class (last night's novel classes vanish), are
    left as they were."""
    prev = previous({0: ids(0, 50), 1: ids(100, 120), 2: ids(150, 160)},
                    {0: "known:A", 1: "g:novel:1", 2: "g:novel:2"}, {0: "A"},
                    statuses={0: "persisting", 1: "candidate", 2: "grown"})
    tonight = {0: ids(0, 50), 1: ids(100, 120) + ids(150, 160) + ids(300, 370)}
    got = by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                             current_names={0: "A"}, max_novel_index=2, config=MERGED))
    assert got["g:novel:2"].class_key == 1 and got["g:novel:2"].status == "merged"
    assert got["g:novel:2"].parents == ["g:novel:1"]
    assert got["g:novel:1"].status == "dismissed" and got["g:novel:1"].merged_into == "g:novel:2"
    matched = {0: ids(0, 50), 1: ids(100, 120) + ids(150, 160)}  # Jaccard 0.67 with novel:1
    for tonight in (matched, {0: ids(0, 25), 1: ids(25, 50) + ids(300, 310)}):
        plain, got = (by_lineage(tracked(prev, tonight, graph="g", snapshot_date=D2,
                                         current_names={0: "A"}, max_novel_index=2, config=cfg))
                      for cfg in (LineageConfig(), MERGED))
        assert got == plain
