"""The novel classes carved (oral_core.answer, ``ORAL_NIGHT_ANSWER=...+carve``): each novel class
cut in parts on the fixed view, the parts the known-split check calls known named known."""
from __future__ import annotations

import torch


def _blobs(sizes, seed=0):
    """Points in tight, far-apart blobs of the given sizes (one blob per axis), unit length."""
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for axis, size in enumerate(sizes):
        centre = torch.zeros(len(sizes))
        centre[axis] = 10.0
        rows.append(centre + 0.1 * torch.randn(size, len(sizes), generator=gen))
    return torch.nn.functional.normalize(torch.cat(rows), dim=1)


def test_novel_parts_cuts_only_the_novel_classes_large_enough():
    from oral_core.answer import novel_parts

    view = _blobs([20, 20, 20, 6])
    # known class 0 (20 nodes), novel class 1 made of two blobs (40 nodes), novel class 2 (6 nodes)
    answer = torch.tensor([0] * 20 + [1] * 40 + [2] * 6)
    cut = novel_parts(answer, view, num_known=1, parts=2, min_size=10)
    assert cut[:20].tolist() == [0] * 20  # a known class is never cut
    assert cut[60:].tolist() == [2] * 6  # smaller than parts * min_size: left whole
    halves = cut[20:40], cut[40:60]
    assert all(h.unique().numel() == 1 for h in halves) and halves[0][0] != halves[1][0]
    assert {int(halves[0][0]), int(halves[1][0])} == {1, 3}  # the class's id, then a new one


def test_carving_names_the_known_slice_and_keeps_the_rest_as_one_class():
    """Novel class 2 holds a slice of known class 0 (a blob of 20 unlabelled and 10 validation
    nodes: known classes hold 2 unlabelled nodes per validation node) and a new class (a blob of
    10 unlabelled nodes): the split check would drop it whole (an estimated 40 known nodes of its
    30 unlabelled). Carved in two, the slice is named by the classifier and the new class keeps
    id 2. Novel class 3 (no validation node) and novel class 4 (one validation node among 24
    unlabelled: the split check keeps it) are left as they were."""
    from oral_core.answer import carved_answer, split_answer

    view = _blobs([30, 30, 10, 24, 25])
    answer = torch.tensor([0] * 30 + [2] * 40 + [3] * 24 + [4] * 25)
    val = torch.full((119,), -1)
    val[0:10] = 0  # known class 0: 10 validation, 20 unlabelled
    val[30:40] = 0  # the known slice inside novel class 2: 10 validation, 20 unlabelled
    val[94] = 0  # one validation node in novel class 4
    unlabelled = val < 0
    lr = torch.zeros(119, dtype=torch.long)
    decided = {"answer": answer, "namer": "lr", "candidates": {"oral": answer, "lr": lr}}
    assert split_answer(decided, val, unlabelled, 2, 0.5)[0][60:70].tolist() == [0] * 10
    carved, moved = carved_answer(decided, view, val, unlabelled, num_known=2, share=0.5,
                                  parts=2, min_size=10)
    assert moved == 30
    assert carved[30:60].tolist() == [0] * 30  # the slice: named known
    assert carved[60:70].tolist() == [2] * 10  # the new class keeps its id
    assert torch.equal(carved[70:], answer[70:])  # classes the split check keeps: as they were
    assert carved[:30].tolist() == [0] * 30
    # only ORAL's own naming: nothing to name the slice with, the answer as it was
    alone = {"answer": answer, "namer": "oral", "candidates": {"oral": answer}}
    assert carved_answer(alone, view, val, unlabelled, 2, 0.5, parts=2, min_size=10) == (answer, 0)


def test_a_class_whose_parts_all_look_known_is_named_known_whole():
    from oral_core.answer import carved_answer

    view = _blobs([30, 20, 20])
    answer = torch.tensor([0] * 30 + [1] * 40)
    val = torch.full((70,), -1)
    val[0:10] = 0
    val[30:37] = 0
    val[50:57] = 0
    lr = torch.zeros(70, dtype=torch.long)
    decided = {"answer": answer, "namer": "lr", "candidates": {"oral": answer, "lr": lr}}
    carved, moved = carved_answer(decided, view, val, val < 0, num_known=1, share=0.5, parts=2,
                                  min_size=10)
    assert moved == 40 and carved.tolist() == [0] * 70


def test_decide_answer_carves_before_the_split_check():
    """Through decide_answer on a small graph: the carved count is reported and the answer keeps
    every node classed."""
    from oral_core.answer import decide_answer

    gen = torch.Generator().manual_seed(0)
    n = 90
    y = torch.tensor([0] * 30 + [1] * 30 + [2] * 30)
    x = torch.nn.functional.one_hot(y, 3).float() * 3 + torch.randn(n, 3, generator=gen)
    src = torch.arange(n - 1)
    edges = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
    train = torch.full((n,), -1)
    val = torch.full((n,), -1)
    train[0:10], train[30:40] = 0, 1
    val[10:15], val[40:45] = 0, 1
    class_id = torch.where(y == 2, torch.tensor(2), y)
    got = decide_answer(class_id, x, edges, train, val, 2, carve_share=0.5, split_share=0.5)
    assert got["carved"] >= 0 and got["answer"].shape == (n,) and (got["answer"] >= 0).all()
