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
    tested = decide_answer(class_id, x, edges, train, val, 2, carve_share=0.5, split_share=0.5,
                           carve_alpha=0.01)  # the tested carve names at least what carve does
    assert tested["carved"] >= got["carved"] and (tested["answer"] >= 0).all()


def test_fewer_than_known_is_a_one_sided_poisson_test_against_the_known_rate():
    """Known class 0 holds 4 unlabelled nodes per validation node. Novel class 1 (40 unlabelled,
    no validation node: 10 expected, P(0) = e^-10) holds significantly fewer; novel class 2 (8
    unlabelled, none: 2 expected, P(0) = 0.14) could be a known slice by chance; novel class 3
    (40 unlabelled, 9 validation) holds them as a known class does."""
    from oral_core.answer import fewer_than_known

    answer = torch.tensor([0] * 50 + [1] * 40 + [2] * 8 + [3] * 49 + [-1] * 3)
    val = torch.full((150,), -1)
    val[0:10] = 0
    val[98:107] = 0
    unlabelled = val < 0
    got = fewer_than_known(answer, val, unlabelled, num_known=1, alpha=0.01)
    assert got.tolist() == [False, True, False, False]
    assert fewer_than_known(answer, val, unlabelled, 1, alpha=0.2).tolist()[2]  # 0.14 < 0.2
    # no validation node in a known class: nothing to compare with, nothing is fewer
    none = torch.full((150,), -1)
    assert not fewer_than_known(answer, none, none < 0, 1, 0.01).any()


def test_the_tested_carve_names_a_small_rest_known_that_the_share_keeps():
    """Two novel classes the split check would drop, each a known slice and a new class. Class
    2's new class is 6 nodes: judged on the second half of the validation nodes the share check
    keeps it (none there), but a known slice of 6 nodes would hold 1.5 of them (about 4 unlabelled
    per second-half validation node), so the Poisson test cannot tell it from one and names it
    known. Class 3's new class is 30 nodes (about 9 expected, none held): novel under both."""
    from oral_core.answer import carved_answer

    view = _blobs([30, 30, 6, 30, 30])
    answer = torch.tensor([0] * 30 + [2] * 36 + [3] * 60)
    val = torch.full((126,), -1)
    val[0:10] = 0  # known class 0: 10 validation, 20 unlabelled
    val[30:40] = 0  # the known slice inside novel class 2: 10 validation, 20 unlabelled
    val[66:81] = 0  # the known slice inside novel class 3: 15 validation, 15 unlabelled
    unlabelled = val < 0
    lr = torch.zeros(126, dtype=torch.long)
    decided = {"answer": answer, "namer": "lr", "candidates": {"oral": answer, "lr": lr}}
    shared, _ = carved_answer(decided, view, val, unlabelled, 2, 0.5, parts=2, min_size=3)
    tested, _ = carved_answer(decided, view, val, unlabelled, 2, 0.5, parts=2, min_size=3,
                              alpha=0.01)
    for got in (shared, tested):  # the slices are named known either way
        assert got[30:60].tolist() == [0] * 30 and got[66:96].tolist() == [0] * 30
    assert shared[60:66].tolist() == [2] * 6  # the share check keeps the small rest
    assert tested[60:66].tolist() == [0] * 6  # the test names it known
    assert shared[96:].tolist() == [3] * 30 and tested[96:].tolist() == [3] * 30
