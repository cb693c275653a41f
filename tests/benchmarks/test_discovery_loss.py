"""benchmarks.discovery_loss: the best group of a stage and where a planted class is lost."""
from __future__ import annotations


def test_the_best_group_is_the_one_closest_to_the_bar_among_the_eligible():
    from benchmarks.discovery_loss import best_group

    # class of nodes 0-9; group a holds 0-5 and 10-11 (P 0.75, R 0.6: found), group b holds
    # 6-9 alone (P 1.0, R 0.4), group c is a big known class holding nothing of it
    assign = {n: "a" for n in list(range(6)) + [10, 11]} | {n: "b" for n in range(6, 10)} | {
        n: "c" for n in range(20, 40)}
    members = set(range(10))
    p, r, g = best_group(assign, members)
    assert g == "a" and (round(p, 2), round(r, 2)) == (0.75, 0.6)
    p, r, g = best_group(assign, members, eligible=lambda grp: grp != "a")
    assert g == "b" and (p, r) == (1.0, 0.4)
    assert best_group(assign, {30_000}) == (0.0, 0.0, None)


def test_a_class_is_lost_at_the_first_stage_that_does_not_find_it():
    from benchmarks.discovery_loss import lost_at

    yes, no = (0.8, 0.6, "g"), (0.3, 0.9, "g")
    assert lost_at(yes, yes, yes) == "published"
    assert lost_at(no, yes, no) == "lineage"  # the answer's group found it, not published
    assert lost_at(yes, no, no) == "answer"
    assert lost_at(no, no, no) == "model"
