"""The scoreboard that silence cannot win (benchmarks.scoreboard) and its reference rows
(benchmarks.open_world_reference), on toy loops whose right answer is known."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks import scoreboard
from benchmarks.nightly_loop import score_loop, scoreboard_section
from benchmarks.open_world_reference import carry_ids, open_world_classes, reference_nights
from test_nightly_loop import KNOWN, PLANTED, right, toy_loop

def silent(k, n, c):  # the planted class folded into known class a, nothing novel ever
    return "known:a" if c == "p" else right(k, n, c)


def switches(k, n, c):  # the planted class under a new id every night
    return f"g:novel:{k}" if c == "p" else right(k, n, c)


def invents_late(k, n, c):  # a novel class carved out of b on the nights with a planted class
    return "g:novel:9" if k >= 2 and c == "b" and n.endswith(("1", "3")) else right(k, n, c)


def board(answer, **kw):
    nights = toy_loop(answer, **kw)
    return scoreboard.score(nights, PLANTED, score_loop(nights, PLANTED)["false_lineage_events"],
                            toy_loop(silent))


def test_the_right_answer_scores_perfectly():
    got = board(right)
    assert got["planted"]["p"] == {"starts": 2, "published": 2, "late": 0,
                                   "lineage_id": "g:novel:1", "kept": True}
    assert got["on_time"] == got["on_time_kept"] == 1
    assert got["precision"] == 1.0 and got["invented"] == 0 and got["false_events"] == 0
    assert [r["all"] for r in got["nights"]] == [100.0] * 4
    assert got["below_reference"] == 0


def test_the_silent_answer_scores_below_a_loop_that_finds_its_planted_class():
    quiet, found = board(silent), board(right)
    assert quiet["on_time"] == 0 and quiet["precision"] is None and quiet["invented"] == 0
    assert quiet["false_events"] == 0  # silence is safe on the safety columns...
    assert quiet["all_novel_nights"] < found["all_novel_nights"]  # ...and loses on discovery
    assert quiet["all_mean"] < found["all_mean"]
    # on nights without a planted class the two are level
    assert [r["all"] for r in quiet["nights"][:2]] == [r["all"] for r in found["nights"][:2]]


def test_a_class_under_a_new_id_every_night_is_published_but_not_kept():
    got = board(switches)
    assert got["planted"]["p"]["late"] == 0 and got["planted"]["p"]["kept"] is False
    assert got["on_time"] == 1 and got["on_time_kept"] == 0
    # one matching per loop: only one of the two ids is the class's, the other night's nodes
    # count as wrong
    alls = [r["all"] for r in got["nights"]]
    assert alls[:2] == [100.0, 100.0] and min(alls[2:]) < 100.0 and max(alls[2:]) == 100.0
    assert got["false_events"] >= 1


def test_a_candidate_is_not_published():
    got = board(right, held=lambda k, lid: k == 2)
    assert got["planted"]["p"]["late"] == 1 and got["on_time"] == 1
    assert got["nights"][2]["all"] < 100.0 and got["nights"][3]["all"] == 100.0
    never = board(right, held=lambda k, lid: True)
    assert never["on_time"] == 0 and never["published_pairs"] == 0


def test_an_invention_counts_on_nights_with_a_planted_class_too():
    got = board(invents_late)
    assert got["invented"] == 1
    assert got["precision"] == 0.5  # two nights, the planted class's id and the invented one
    assert all(r["novel_present"] for r in got["nights"][2:])


def test_known_classes_below_the_reference_only_beyond_noise():
    night = {"truth": {f"a{i}": "a" for i in range(40)}, "known": KNOWN,
             "names": {"known:a": "a", "known:b": "b"}}
    reference = night | {"assign": {f"a{i}": "known:a" for i in range(40)}}
    one_off = night | {"assign": {f"a{i}": "known:b" if i == 0 else "known:a" for i in range(40)}}
    many_off = night | {"assign": {f"a{i}": "known:b" if i < 10 else "known:a"
                                   for i in range(40)}}
    assert scoreboard.against_reference(one_off, reference)["below"] is False
    got = scoreboard.against_reference(many_off, reference)
    assert got["below"] is True and got["answer"] == 75.0 and got["p"] < 0.01
    assert scoreboard.against_reference(reference, many_off)["below"] is False  # better is fine


def test_the_scoreboard_table_shows_every_answer_side_by_side():
    loop = {"graph": "g", "sim": 0, "scoreboard": {"pipeline": board(right),
                                                   "open_world": board(switches),
                                                   "silent_lr": board(silent)}}
    lines = scoreboard_section([loop])
    text = "\n".join(lines)
    for label in ("ORAL pipeline", "open-world GCN", "silent LR"):
        assert sum(ln.startswith(f"| {label} |") for ln in lines) == 1  # the totals
        assert sum(ln.startswith(f"| g | 0 | {label} |") for ln in lines) == 1
        assert sum(ln.startswith(f"| g | {label} | 1 / ") for ln in lines) == 1  # per graph
    assert "1 of 1 (1)" in text and "0 of 1 (0)" in text
    assert "the pipeline publishes 1 of 1 planted classes by the night after they start (1 kept" \
        in text and "100% of its published novel (id, night) pairs carry a planted class" in text
    assert scoreboard_section([{"graph": "g", "sim": 0}]) == []  # loops scored before it


def test_two_studies_whose_loops_folders_share_a_name_stay_apart(tmp_path, capsys):
    """``python -m benchmarks.scoreboard a/loops b/loops``: each column keeps its study's name."""
    import json

    for study, answer in (("a", right), ("b", silent)):
        (tmp_path / study / "loops" / "loops").mkdir(parents=True)
        loop = {"graph": "g", "sim": 0, "scoreboard": {"pipeline": board(answer),
                                                       "open_world": board(switches),
                                                       "silent_lr": board(silent)}}
        (tmp_path / study / "loops" / "loops" / "g-sim0.json").write_text(json.dumps(loop))
    assert scoreboard.main([str(tmp_path / "a" / "loops"), str(tmp_path / "b" / "loops")]) == 0
    text = capsys.readouterr().out
    assert "a/loops" in text and "b/loops" in text


# ------------------------------------------------------------------------ the reference rows
def test_the_reference_lineage_continues_emerges_and_vanishes():
    first, statuses, counter = carry_ids({"x1": 0, "x2": 0, "y1": 1}, {}, 0, "g")
    assert statuses == {"g:novel:1": "emerged", "g:novel:2": "emerged"} and counter == 2
    assert first["x1"] == first["x2"] != first["y1"]
    # tonight: the x cluster goes on (with a new node), y is gone, a z cluster appears
    second, statuses, counter = carry_ids({"x1": 5, "x2": 5, "x3": 5, "z1": 7}, first, counter, "g")
    assert second["x3"] == first["x1"] and statuses[first["x1"]] == "persisting"
    assert statuses[first["y1"]] == "vanished" and statuses[second["z1"]] == "emerged"


def test_the_silent_reference_never_publishes_a_novel_class():
    answers = [{"node_ids": ["a0", "p0"], "class_names": ["a", "b"], "lr": [0, 1],
                "gcn": [0, 0], "cluster": [-1, 0]}]
    truth = [{"a0": "a", "p0": "p"}]
    refs = reference_nights(answers, truth, [KNOWN], "g")
    assert scoreboard.published_novel(refs["silent_lr"][0]) == set()
    assert refs["open_world"][0]["assign"]["p0"] in scoreboard.published_novel(
        refs["open_world"][0])
    assert refs["open_world"][0]["assign"]["a0"] == "known:a"


def test_the_open_world_reference_flags_a_held_out_class(one_thread):
    """On a generated graph with one class kept out of the labels, the flagged nodes are mostly
    that class's (the reference is a working baseline, not a strawman)."""
    import torch

    from data_contracts.synthetic import make_static_graph
    from oral_core.graph import canonical_edges

    g = make_static_graph(num_nodes=600, num_classes=4, num_features=16, separation=3.0, seed=1)
    y = torch.from_numpy(g.y).long()
    rng = np.random.default_rng(0)
    labelled = torch.from_numpy(rng.random(len(y)) < 0.3) & (y < 3)
    is_val = torch.from_numpy(rng.random(len(y)) < 0.3)
    train = torch.where(labelled & ~is_val, y, -1)
    val = torch.where(labelled & is_val, y, -1)
    edges = canonical_edges(torch.from_numpy(g.edges), len(y))
    known, cluster = open_world_classes(torch.from_numpy(g.x).float(), edges, train, val, 3)
    flagged = cluster >= 0
    assert flagged.sum() > 20
    assert (g.y[flagged] == 3).mean() > 0.7
    unlabelled_known = (~labelled.numpy()) & (g.y < 3)
    assert (known[unlabelled_known] == g.y[unlabelled_known]).mean() > 0.8


def test_the_current_line_names_the_commit_whose_defaults_the_loops_ran_at(monkeypatch):
    """The loops are at today's defaults when their recorded defaults are the code's, whatever
    the environment the report is written in (a loop run, and reported, with
    ``ORAL_LINEAGE_PUBLISHED=0`` is not at today's defaults)."""
    from benchmarks.nightly_loop import current_line, night_defaults

    line = current_line([{"graph": "g", "sim": 0, "defaults_of": "04942eb", "settings": []}])
    assert "pipeline defaults of commit `04942eb`" in line
    assert line.startswith("no, their defaults were not recorded")
    today = night_defaults()
    now = {"graph": "g", "sim": 0, "defaults_of": "abc", "settings": [],
           "pipeline_defaults": today}
    assert current_line([now]).startswith("yes: ")
    older = now | {"pipeline_defaults": today | {"known_split_repeat": True}}
    assert current_line([older]).startswith(
        "no, their defaults differ from today's in known_split_repeat")
    assert "defaults of their day" in current_line([{"graph": "g", "sim": 0, "settings": []}])
    monkeypatch.setenv("ORAL_LINEAGE_PUBLISHED", "0")
    off = night_defaults()
    assert off["lineage_published"] is False and today["lineage_published"] is True
    assert night_defaults(code=True) == today
    assert current_line([now | {"pipeline_defaults": off}]).startswith(
        "no, their defaults differ from today's in lineage_published")
    assert current_line([now]).startswith("yes: ")


def test_studies_are_compared_on_the_loops_they_share():
    loop = {"graph": "g", "sim": 0, "scoreboard": {"pipeline": board(right),
                                                   "open_world": board(switches),
                                                   "silent_lr": board(silent)}}
    quiet = loop | {"scoreboard": {k: board(silent) for k in ("pipeline", "open_world",
                                                              "silent_lr")}}
    lines = scoreboard.compare_lines({"before": [quiet, loop | {"sim": 1}], "after": [loop]})
    assert lines[0] == "Loops every study has: 1 (g 0)."
    assert "| before | ORAL pipeline | 0 of 1 (0) |" in "\n".join(lines)
    assert "| after | ORAL pipeline | 1 of 1 (1) |" in "\n".join(lines)


def test_the_mixed_scoreboard_replaces_the_loops_that_changed(tmp_path):
    """benchmarks.scoreboard_mix: the committed loops of a study with some replaced by another
    study's; the table over the whole set counts each loop once, the replaced one as it changed."""
    import json
    from pathlib import Path

    from benchmarks.scoreboard_mix import loops_in, mixed_report

    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    base = loops_in(root / "night_answer_paired" / "loops")
    assert len(base) == 12
    changed = {"synthetic15-sim0": json.loads(json.dumps(base["synthetic15-sim0"]))}
    changed["synthetic15-sim0"]["scoreboard"]["pipeline"]["invented"] += 7
    text = mixed_report(base, changed, "base", "changed")
    before, after = text.split("After (`changed`):")
    row = [line for line in after.splitlines() if line.startswith("| ORAL pipeline | 1 / 8 |")]
    assert "| 10.0 |" in row[0]  # 1 + 7 invented ids in 8 nights
    assert "| 1.2 |" in [line for line in before.splitlines()
                         if line.startswith("| ORAL pipeline | 1 / 8 |")][0]
    assert "over 12 loops" in text
    with pytest.raises(SystemExit, match="not in base"):
        mixed_report({}, changed, "base", "changed")
