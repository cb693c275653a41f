"""benchmarks/lineage_replay.py: the lineage run again over a loop's answered runs."""
from __future__ import annotations

import datetime as dt

from benchmarks.lineage_replay import label_free, published_sooner, replay


def _run(k, members, degraded=False):
    return {"date": dt.date(2026, 1, 1 + k), "run_id": f"r{k}", "degraded": degraded,
            "members": members, "names": {0: "A"}, "stored": {}}


def test_replay_follows_the_answered_runs_and_counts_what_goes_on():
    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1"], 1: ["a2", "n1", "n2"]}, degraded=True),  # skipped
            _run(2, {0: ["a1", "a2"], 1: ["n1", "n2", "n3"], 2: ["m1"]})]
    got = replay(runs, "g", "all", True)
    assert set(got) == {"r0", "r2"}
    assert got["r0"]["statuses"] == {"known:A": "emerged", "g:novel:1": "candidate"}
    assert got["r2"]["statuses"] == {"known:A": "persisting", "g:novel:1": "emerged",
                                     "g:novel:2": "candidate"}
    free = label_free(runs, got)
    assert free == {"answered": 2, "events": 1, "appeared": 2, "goes_on": 1,
                    "appeared_before_last": 1, "appeared_large": 1, "goes_on_large": 1,
                    "appeared_large_separable": 0, "goes_on_large_separable": 0,
                    "published_ended": 0}
    plain = replay(runs, "g", "all", False)
    assert plain["r2"]["statuses"]["g:novel:1"] == "grown"  # 2 -> 3 nodes
    assert label_free(runs, plain)["events"] == 2  # novel:1 and novel:2 emerged


def test_the_published_continuation_replayed_ends_no_published_id():
    """A published class (novel:1) and a candidate grown beside it (novel:2) come together: by
    default the merged class goes on as the candidate's id and the published novel:1 ends (one
    published id ending); with ``published`` it goes on as novel:1 and none ends."""
    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(2, {0: ["a1", "a2"], 1: ["n1", "n2"], 2: ["m1", "m2", "m3", "m4"]}),
            _run(3, {0: ["a1", "a2"], 1: ["n1", "n2", "m1", "m2", "m3", "m4"]})]
    plain = replay(runs, "g", "all", True)
    assert plain["r3"]["lineage_of"][1] == "g:novel:2"
    assert label_free(runs, plain)["published_ended"] == 1
    kept = replay(runs, "g", "all", True, published=True)
    assert kept["r3"]["lineage_of"][1] == "g:novel:1"
    assert kept["r3"]["statuses"] == {"known:A": "persisting", "g:novel:1": "merged",
                                      "g:novel:2": "dismissed"}
    assert label_free(runs, kept)["published_ended"] == 0


def test_the_merged_continuation_replayed_publishes_a_night_sooner_and_counts_it():
    """Two candidates (novel:1, novel:2) come together the next night: by default a new id, a
    candidate again; with ``merged`` the class goes on as novel:1, confirmed that night. That id
    is counted as published a night sooner (from the same previous night, without the step it
    is dismissed), and as going on when the night after holds it."""
    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"], 2: ["m1"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2", "m1", "x1", "x2", "x3", "x4"]}),
            _run(2, {0: ["a1", "a2"], 1: ["n1", "n2", "m1", "x1", "x2", "x3", "x4"]})]
    plain = replay(runs, "g", "all", True)
    assert plain["r1"]["statuses"]["g:novel:3"] == "candidate"
    kept = replay(runs, "g", "all", True, merged=True)
    assert kept["r1"]["statuses"] == {"known:A": "persisting", "g:novel:1": "emerged",
                                      "g:novel:2": "dismissed"}
    assert kept["r1"]["sooner"] == {"g:novel:1"} and kept["r0"]["sooner"] == set()
    assert published_sooner(runs, kept, plain) == {"appeared_clean": 1, "goes_on_clean": 1}
    gone = runs[:2] + [_run(2, {0: ["a1", "a2", "n1", "n2", "m1", "x1", "x2", "x3", "x4"]})]
    assert published_sooner(gone, replay(gone, "g", "all", True, merged=True), plain) == {
        "appeared_clean": 1, "goes_on_clean": 0}


def test_replay_under_the_size_rule_publishes_large_new_classes_the_first_night():
    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2", "n3"], 2: ["m1"]})]
    # confirm_size=1.0: a new novel class of the median known size (2) or more is published
    got = replay(runs, "g", "all", True, 1.0)
    assert got["r0"]["statuses"]["g:novel:1"] == "emerged"
    assert got["r1"]["statuses"] == {"known:A": "persisting", "g:novel:1": "grown",
                                     "g:novel:2": "candidate"}  # 1 node < 2
    free = label_free(runs, got, large=1.0)
    assert (free["appeared_large"], free["goes_on_large"]) == (1, 1)
    assert free["events"] == 1  # novel:1 emerged on its first night; novel:2 is a candidate



def test_the_size_rule_on_separable_nights_only():
    """``all+confirm+size@separable``: ``confirm_size`` on the dates given, confirmation as before
    on the others; the large new ids and those that go on are counted on those dates apart."""
    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2", "n3"], 2: ["m1", "m2"]}),
            _run(2, {0: ["a1", "a2"], 1: ["n1", "n2", "n3"], 2: ["m1", "m2"]})]
    second = {dt.date(2026, 1, 2)}
    got = replay(runs, "g", "all", True, 1.0, size_on=second)
    assert got["r0"]["statuses"]["g:novel:1"] == "candidate"  # not a separable night
    assert got["r1"]["statuses"]["g:novel:1"] == "emerged"  # confirmed, as before
    assert got["r1"]["statuses"]["g:novel:2"] == "emerged"  # large, on a separable night
    everywhere = replay(runs, "g", "all", True, 1.0)
    assert everywhere["r0"]["statuses"]["g:novel:1"] == "emerged"
    free = label_free(runs, got, large=1.0, separable=second)
    assert (free["appeared_large_separable"], free["goes_on_large_separable"]) == (1, 1)
    assert (free["appeared_large"], free["goes_on_large"]) == (2, 2)


def test_what_a_separable_night_rule_changes_on_the_other_nights_is_counted():
    """``changed_elsewhere``: the nights outside the separable dates whose statuses differ from
    ``all+confirm``'s; publishing a class at once on a separable night changes the next night
    (``emerged`` the first night, ``persisting`` the next instead of ``emerged``)."""
    from benchmarks.lineage_replay import changed_elsewhere

    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(2, {0: ["a1", "a2"], 1: ["n1", "n2"]})]
    base = replay(runs, "g", "all", True)
    first = {dt.date(2026, 1, 1)}
    at_once = replay(runs, "g", "all", True, 1.0, size_on=first)
    assert at_once["r0"]["statuses"]["g:novel:1"] == "emerged"
    assert base["r1"]["statuses"]["g:novel:1"] == "emerged"
    assert at_once["r1"]["statuses"]["g:novel:1"] != "emerged"
    assert changed_elsewhere(runs, at_once, base, first) == 1  # night 2; night 3 the same
    assert changed_elsewhere(runs, base, base, first) == 0
    never = replay(runs, "g", "all", True, 1.0, size_on=set())
    assert changed_elsewhere(runs, never, base, set()) == 0


def test_the_rules_that_give_the_stored_statuses_are_found():
    """A kept loop's stored statuses are given by the replay of the rule it ran under (a loop
    at ``ORAL_CONFIRM_SIZE=separable:...`` as well as one with confirmation only); a stored
    row no rule gives is found too (an empty list)."""
    from benchmarks.lineage_replay import stored_rules

    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2"]})]
    first = {dt.date(2026, 1, 1)}
    lineages = {"all+confirm": replay(runs, "g", "all", True),
                "all+confirm+size@separable": replay(runs, "g", "all", True, 1.0, size_on=first)}
    for name, lineage in lineages.items():
        stored = [dict(r, stored=lineage[r["run_id"]]["key_status"]) for r in runs]
        assert stored_rules(stored, lineages) == [name]
    odd = [dict(r, stored={0: "grown", 1: "split"}) for r in runs]
    assert stored_rules(odd, lineages) == []


def test_published_novel_classes_and_their_labelled_members_are_counted():
    """``published_labelled``: the published novel (id, night) pairs (candidates left out), their
    members and how many carry a label in the snapshot; ``mutual`` reaches the lineage."""
    from benchmarks.lineage_replay import published_labelled

    runs = [_run(0, {0: ["a1", "a2"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1", "a2"], 1: ["n1", "n2", "n3", "a3"]})]
    labelled = {dt.date(2026, 1, 1): {"a1", "a2"}, dt.date(2026, 1, 2): {"a1", "a2", "a3"}}
    got = replay(runs, "g", "all", True)  # novel:1 a candidate, then emerged
    assert published_labelled(runs, got, labelled) == {"pairs": 1, "members": 4,
                                                      "members_labelled": 1}
    plain = replay(runs, "g", "all", False)  # published both nights
    assert published_labelled(runs, plain, labelled) == {"pairs": 2, "members": 6,
                                                        "members_labelled": 1}
    # a class of 2 nodes whose 2 old nodes are half of tonight's 6 (J 0.33, matched either
    # way) against one of 2 of 8 (J 0.25: only the mutual rule continues it)
    runs = [_run(0, {0: ["a1"], 1: ["n1", "n2"]}),
            _run(1, {0: ["a1"], 1: ["n1", "n2", "m1", "m2", "m3", "m4", "m5", "m6"]})]
    assert replay(runs, "g", "all", False)["r1"]["statuses"]["g:novel:1"] == "vanished"
    assert replay(runs, "g", "all", False, mutual=True)["r1"]["statuses"]["g:novel:1"] == "grown"
    # ``contained`` reaches the lineage too: the candidate confirmed on the second night
    assert replay(runs, "g", "all", True)["r1"]["statuses"]["g:novel:1"] == "dismissed"
    assert replay(runs, "g", "all", True,
                  contained=True)["r1"]["statuses"]["g:novel:1"] == "emerged"


def test_the_clean_rule_reads_each_novel_class_on_its_validation_nodes():
    """``estimated_known_share``: the known classes hold 8 unlabelled nodes per validation node
    here (16 and 2), so a novel class of 8 unlabelled nodes and 1 validation node is estimated
    all known, one without a validation node 0; ``clean_keys`` keeps the large clean one;
    ``published_sooner`` counts what it publishes a night before the base rule, and whether
    it goes on."""
    from benchmarks.lineage_replay import clean_keys, estimated_known_share, published_sooner

    known = [f"k{i}" for i in range(20)]  # k0, k1 labelled (validation), k2, k3 labelled (train)
    run = {"date": dt.date(2026, 1, 1), "run_id": "r0", "degraded": False,
           "members": {0: known, 1: [f"a{i}" for i in range(8)] + ["v1"],
                       2: [f"b{i}" for i in range(12)], 3: ["c1"]},
           "names": {0: "A"}, "stored": {}}
    labelled, val = {"k0", "k1", "k2", "k3", "v1"}, {"k0", "k1", "v1"}
    share = estimated_known_share(run, labelled, val)
    assert share == {1: 8 * 1 / 8, 2: 0.0, 3: 0.0}
    assert clean_keys(run, labelled, val) == {2}  # 3 is clean but under half of 20 nodes
    assert estimated_known_share(run, labelled, {"v1"}) == {}  # no validation node in A
    nxt = dict(run, date=dt.date(2026, 1, 2), run_id="r1")
    runs = [run, nxt]
    base = replay(runs, "g", "all", True)
    sooner = replay(runs, "g", "all", True, now={"r0": {2}})
    assert sooner["r0"]["statuses"]["g:novel:2"] == "emerged"
    assert base["r0"]["statuses"]["g:novel:2"] == "candidate"
    assert published_sooner(runs, sooner, base) == {"appeared_clean": 1, "goes_on_clean": 1}
    assert published_sooner(runs, base, base) == {"appeared_clean": 0, "goes_on_clean": 0}
