"""The night before for the +lastsplit proxies (benchmarks.last_night): tonight's task carried
over by node id, and the lastsplit form reading it."""
from __future__ import annotations

import pyarrow as pa
import torch


def test_tonight_index_maps_by_node_id_not_position():
    from benchmarks.last_night import tonight_index

    before = pa.array(["b", "a", "z"])
    tonight = pa.array(["a", "b", "c"])
    assert tonight_index(before, tonight).tolist() == [1, 0, -1]
    assert tonight_index(pa.array([3, 1]), pa.array([1, 2, 3])).tolist() == [2, 0]


def test_the_night_before_labels_only_what_tonights_task_labels():
    """A node hidden by tonight's task (a held-out class, a held-back validation node) is
    unlabelled the night before too; a node labelled tonight keeps its visible class where it
    was labelled then; a node tonight's task leaves out is out of the graph."""
    from benchmarks.last_night import yesterday_task

    # the night before: 8 nodes; tonight's task keeps 7 of them (node 7 left out) at 0..6
    index = torch.tensor([0, 1, 2, 3, 4, 5, 6, -1])
    labelled_before = torch.tensor([True, True, True, True, False, True, True, True])
    # tonight: 0-1 train class 0, 2 val class 1, 3 hidden (scored), 4 labelled only tonight,
    # 5 train class 1, 6 unlabelled
    train = torch.tensor([0, 0, -1, -1, 1, 1, -1])
    val = torch.tensor([-1, -1, 1, -1, -1, -1, -1])
    nodes, tr, va = yesterday_task(labelled_before, index, train, val)
    assert nodes.tolist() == [True] * 7 + [False]
    label = torch.where(tr >= 0, tr, va)
    assert label.tolist() == [0, 0, 1, -1, -1, 1, -1]
    assert not bool(((tr >= 0) & (va >= 0)).any())


def test_the_lastsplit_form_reads_the_night_before_and_without_it_is_the_default():
    """``only_answers(..., ["burstsplit", "lastsplit"], known_last)``: without the night before
    the lastsplit answer is the default's (the step skipped, as on a first night); with it the
    step is the pipeline's own (``decide_answer(known_last=...)``)."""
    from types import SimpleNamespace

    from benchmarks.answer_proxy import BURST_SPLIT, LAST_SPLIT, only_answers
    from oral_core.answer import decide_answer
    from tasks.answer import answer_options

    from tests.core.test_answer_age_split import decide_inputs

    n = 120
    class_id, x, edges, train, val = decide_inputs()
    class_id[30:60] = 2  # a novel class holding a slice of validation nodes
    cfg = SimpleNamespace(known_head_scale="all", seed=0)
    got = only_answers(class_id, x, edges, train, val, 2, cfg, None, ["burstsplit", "lastsplit"])
    assert torch.equal(got[LAST_SPLIT], got[BURST_SPLIT]) and got["lastsplit"] == 0
    last = torch.arange(n) < 60
    got = only_answers(class_id, x, edges, train, val, 2, cfg, None, ["lastsplit"], last)
    want = decide_answer(class_id, x, edges, train, val, 2, scale="all", seed=0,
                         known_last=last, **answer_options(LAST_SPLIT.split("+")[1:]))
    assert torch.equal(got[LAST_SPLIT], want["answer"]) and got["lastsplit"] == want["last"]
