"""+agesplit: a novel class the split check keeps is judged again in two parts by arrival
(oral_core.answer.aged_split)."""
from __future__ import annotations

import pytest
import torch

import oral_core.answer as answer_module
from oral_core.answer import aged_split


def age_fixture(old_witnesses: int, old_size: int = 20, recent_size: int = 30):
    """Two known classes (0, 1) of 40 unlabelled and 4 validation nodes each (10 unlabelled
    per validation node), and novel class 2: ``old_size`` old unlabelled nodes holding
    ``old_witnesses`` validation nodes, and ``recent_size`` recent unlabelled nodes holding
    none. The known-class namer calls every node class 1."""
    parts = [(0, 40, 4, False), (1, 40, 4, False), (2, old_size, old_witnesses, False),
             (2, recent_size, 0, True)]
    answer, val, recent = [], [], []
    for cls, free, witnesses, new in parts:
        answer += [cls] * (free + witnesses)
        val += [-1] * free + [min(cls, 1)] * witnesses
        recent += [new] * (free + witnesses)
    answer, val = torch.tensor(answer), torch.tensor(val)
    namer = torch.ones_like(answer)
    decided = {"answer": answer, "candidates": {"oral": answer, "lr": namer}, "namer": "lr"}
    unlabelled = val < 0
    return decided, torch.tensor(recent), val, unlabelled


def test_the_old_part_holding_witnesses_as_known_classes_do_is_named_known():
    """Class 2 as a whole: 50 unlabelled nodes, 2 validation nodes -> estimated 2 x 10 / 50 =
    0.4 known, under the split check's 0.5, so the check keeps it; its old part alone: 20
    unlabelled, 2 validation -> 1.0: named by the known namer (class 1); the recent part stays
    class 2."""
    decided, recent, val, unlabelled = age_fixture(old_witnesses=2)
    out, moved = aged_split(decided, recent, val, unlabelled, 2, 0.5)
    old = (decided["answer"] == 2) & ~recent
    assert out[old].tolist() == [1] * int(old.sum())
    assert out[(decided["answer"] == 2) & recent].tolist() == [2] * 30
    assert moved == 20  # the unlabelled nodes moved
    assert torch.equal(out[:88], decided["answer"][:88])  # the known classes untouched


def test_a_class_whose_old_part_holds_no_witness_is_left_whole():
    """A novel class whose first nodes have grown old holds no validation node in either part:
    nothing moves."""
    decided, recent, val, unlabelled = age_fixture(old_witnesses=0)
    out, moved = aged_split(decided, recent, val, unlabelled, 2, 0.5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def test_an_old_part_under_the_least_size_is_left():
    decided, recent, val, unlabelled = age_fixture(old_witnesses=1, old_size=4)
    out, moved = aged_split(decided, recent, val, unlabelled, 2, 0.5, least=5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def test_a_class_the_split_check_drops_whole_is_not_the_age_splits():
    """Class 2 holding witnesses all over (old part 20 + 3, recent part 10 + 3 validation nodes:
    6 x 10 / 30 = 2.0 as a whole) is the split check's to drop; the age split leaves it."""
    decided, recent, val, unlabelled = age_fixture(old_witnesses=3, recent_size=10)
    answer = decided["answer"].clone()
    extra = torch.tensor([2, 2, 2])
    decided["answer"] = torch.cat([answer, extra])
    decided["candidates"] = {"oral": decided["answer"],
                             "lr": torch.ones_like(decided["answer"])}
    val = torch.cat([val, torch.tensor([1, 1, 1])])
    recent = torch.cat([recent, torch.tensor([True, True, True])])
    out, moved = aged_split(decided, recent, val, val < 0, 2, 0.5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def test_without_a_classifier_of_every_node_nothing_moves():
    decided, recent, val, unlabelled = age_fixture(old_witnesses=2)
    decided["candidates"] = {"oral": decided["answer"]}
    out, moved = aged_split(decided, recent, val, unlabelled, 2, 0.5)
    assert torch.equal(out, decided["answer"]) and moved == 0


def decide_inputs():
    """A toy night for ``decide_answer``: 120 nodes of three classes (every third), classes 0-1
    known (30 training nodes among the first, 15 validation nodes after them), class 2 a novel
    class of the fit: ``(class_id, x, edges, train, val)``."""
    torch.manual_seed(0)
    n, known = 120, 2
    y = torch.arange(n) % 3
    x = torch.nn.functional.one_hot(y, 3).float() + 0.1 * torch.randn(n, 3)
    edges = torch.stack([torch.arange(n), (torch.arange(n) + 3) % n])
    train = torch.where((torch.arange(n) < 30) & (y < known), y, torch.full_like(y, -1))
    val = torch.where((torch.arange(n) >= 30) & (torch.arange(n) < 45) & (y < known), y,
                      torch.full_like(y, -1))
    return torch.where(y < known, y, torch.full_like(y, 2)), x, edges, train, val


@pytest.mark.parametrize("flag", [False, True])
def test_decide_answer_runs_the_age_split_after_the_split_check_when_asked(monkeypatch, flag):
    """``decide_answer(age_split=True)`` calls :func:`aged_split` (with the split check's share)
    and reports ``aged``; without it, or without ``recent``, it does not; the settings table
    maps ``agesplit``."""
    from tasks.answer import answer_options

    calls = []
    real = answer_module.aged_split

    def recorded(decided, recent, val_labels, unlabelled, num_known, share, **kw):
        calls.append(share)
        return real(decided, recent, val_labels, unlabelled, num_known, share, **kw)

    monkeypatch.setattr(answer_module, "aged_split", recorded)
    n, known = 120, 2
    class_id, x, edges, train, val = decide_inputs()
    recent = torch.arange(n) >= 90
    got = answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled",
                                      seed=0, split_share=0.5, recent=recent, age_split=flag)
    assert ("aged" in got) == flag and len(calls) == int(flag)
    if flag:
        assert calls == [0.5]
    answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled", seed=0,
                                split_share=0.5, recent=None, age_split=True)
    assert len(calls) == int(flag)
    assert answer_options(["split", "agesplit"])["age_split"]
    assert not answer_options(["split"])["age_split"]
