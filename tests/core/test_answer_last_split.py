"""+lastsplit: a novel class the split check keeps is judged again on the part the previous
night's answer named known (oral_core.answer.last_night_split)."""
from __future__ import annotations

import pytest
import torch

import oral_core.answer as answer_module
from oral_core.answer import last_night_split
from tests.core.test_answer_age_split import decide_inputs


def last_fixture(slice_witnesses: int, slice_size: int = 20, own_size: int = 30):
    """Two known classes (0, 1) of 40 unlabelled and 4 validation nodes each (10 unlabelled per
    validation node), and novel class 2: a slice of ``slice_size`` unlabelled nodes holding
    ``slice_witnesses`` validation nodes, named known last night, and ``own_size`` unlabelled
    nodes of its own, found novel last night (old nodes too: the arrival cut cannot tell the two
    apart). The known-class namer calls every node class 1."""
    parts = [(0, 40, 4, True), (1, 40, 4, True), (2, slice_size, slice_witnesses, True),
             (2, own_size, 0, False)]
    answer, val, known_last = [], [], []
    for cls, free, witnesses, known in parts:
        answer += [cls] * (free + witnesses)
        val += [-1] * free + [min(cls, 1)] * witnesses
        known_last += [known] * (free + witnesses)
    answer, val = torch.tensor(answer), torch.tensor(val)
    decided = {"answer": answer, "candidates": {"oral": answer, "lr": torch.ones_like(answer)},
               "namer": "lr"}
    return decided, torch.tensor(known_last), val, val < 0


def test_the_part_named_known_last_night_goes_back_and_the_class_keeps_its_own_nodes():
    """Class 2 whole: 50 unlabelled, 2 validation -> 0.4 known, kept by the split check; the part
    named known last night: 20 unlabelled, 2 validation -> 1.0, named by the namer (class 1); the
    class's own nodes, novel last night, stay class 2."""
    decided, known_last, val, unlabelled = last_fixture(slice_witnesses=2)
    out, moved = last_night_split(decided, known_last, val, unlabelled, 2, 0.5)
    part = (decided["answer"] == 2) & known_last
    assert out[part].tolist() == [1] * int(part.sum())
    assert out[(decided["answer"] == 2) & ~known_last].tolist() == [2] * 30
    assert moved == 20
    assert torch.equal(out[:88], decided["answer"][:88])


def test_a_class_missed_last_night_holding_no_witness_stays_novel():
    """A class missed last night (its old nodes named known then) that holds no validation node
    is not a known slice: nothing moves."""
    decided, known_last, val, unlabelled = last_fixture(slice_witnesses=0)
    out, moved = last_night_split(decided, known_last, val, unlabelled, 2, 0.5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def test_nothing_named_known_last_night_moves_nothing():
    decided, known_last, val, unlabelled = last_fixture(slice_witnesses=2)
    out, moved = last_night_split(decided, torch.zeros_like(known_last), val, unlabelled, 2, 0.5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def test_a_part_under_the_least_size_is_left():
    decided, known_last, val, unlabelled = last_fixture(slice_witnesses=1, slice_size=4)
    out, moved = last_night_split(decided, known_last, val, unlabelled, 2, 0.5, least=5)
    assert torch.equal(out, decided["answer"]) and moved == 0


@pytest.mark.parametrize("given", [False, True])
def test_decide_answer_runs_it_after_the_split_check_when_last_night_is_given(monkeypatch,
                                                                              given):
    """``decide_answer(known_last=...)`` with the split check calls :func:`last_night_split`
    and reports ``last``; without ``known_last``, or without the split check, it does not; the
    settings table takes ``lastsplit`` with ``split`` only."""
    from flows.settings import night_answer_rule

    calls = []
    real = answer_module.last_night_split

    def recorded(decided, known_last, val_labels, unlabelled, num_known, share, **kw):
        calls.append(share)
        return real(decided, known_last, val_labels, unlabelled, num_known, share, **kw)

    monkeypatch.setattr(answer_module, "last_night_split", recorded)
    n, known = 120, 2
    class_id, x, edges, train, val = decide_inputs()
    last = (torch.arange(n) < 60) if given else None
    got = answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled",
                                      seed=0, split_share=0.5, known_last=last)
    assert ("last" in got) == given and calls == ([0.5] if given else [])
    answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled", seed=0,
                                known_last=torch.arange(n) < 60)
    assert len(calls) == int(given)
    assert "lastsplit" in night_answer_rule("per_class+split+lastsplit")
    with pytest.raises(ValueError, match="lastsplit"):
        night_answer_rule("per_class+lastsplit")
