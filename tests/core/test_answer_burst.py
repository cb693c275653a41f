"""+burst: the nodes that arrived recently in a burst form young classes (oral_core.answer)."""
from __future__ import annotations

import torch

import oral_core.answer as answer_module
from oral_core.answer import burst_components, recent_burst


def test_a_burst_is_a_node_among_more_recent_neighbours_than_the_graph_grows():
    """A fifth of the nodes are recent: a row whose 10 neighbours are all recent is a burst,
    one with two recent neighbours (the graph's own rate) is not, at level 1%."""
    recent = torch.zeros(100, dtype=torch.bool)
    recent[:20] = True
    near = torch.stack([torch.arange(10), torch.tensor([0, 1] + list(range(50, 58)))])
    assert recent_burst(recent, near, 0.01).tolist() == [True, False]


def test_no_burst_when_nothing_or_everything_is_recent():
    near = torch.arange(10).unsqueeze(0)
    for recent in (torch.zeros(20, dtype=torch.bool), torch.ones(20, dtype=torch.bool)):
        assert recent_burst(recent, near, 0.5).tolist() == [False]


def test_burst_rows_joined_by_neighbours_either_way_make_components():
    """Rows 0-2 chain through their neighbours (0 -> 1, 2 -> 1), row 3 stands alone, row 4 is no
    burst and joins nothing (though row 3 lists it)."""
    rows = torch.tensor([10, 11, 12, 13, 14])
    near = torch.tensor([[11, 99], [98, 97], [11, 96], [14, 95], [13, 10]])
    burst = torch.tensor([True, True, True, True, False])
    assert burst_components(rows, near, burst).tolist() == [0, 0, 0, 1, -1]


def recording(monkeypatch, name: str, *keys: str) -> list:
    """Replace ``oral_core.answer.<name>`` by itself recording the keyword arguments ``keys`` of
    each call (one value, or a tuple of several, per call); returns the list it fills."""
    calls = []
    real = getattr(answer_module, name)

    def recorded(*args, **kwargs):
        got = tuple(kwargs.get(k) for k in keys)
        calls.append(got[0] if len(got) == 1 else got)
        return real(*args, **kwargs)

    monkeypatch.setattr(answer_module, name, recorded)
    return calls


def grouped_fixture(monkeypatch, answer, recent, near, val=None):
    """burst_classes on 12 nodes with the view's neighbours given by ``near``."""
    def neighbours(x, edge_index, rows, k, **_):
        return torch.tensor([near[int(r)] for r in rows])

    monkeypatch.setattr(answer_module, "view_neighbours", neighbours)
    monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 3)
    train = torch.full((12,), -1)
    val = torch.full((12,), -1) if val is None else val
    return answer_module.burst_classes(answer, recent, None, None, train, val, 2, 0.05)


def test_a_burst_named_known_becomes_a_young_class(monkeypatch):
    """Nodes 8-11 arrived recently, each among the others: they leave known class 1 as new
    class 2; the older nodes stay."""
    answer = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    recent = torch.zeros(12, dtype=torch.bool)
    recent[8:] = True
    near = {i: [j for j in range(8, 12) if j != i] for i in range(8, 12)}
    out, moved = grouped_fixture(monkeypatch, answer, recent, near)
    assert out.tolist() == [0] * 4 + [1] * 4 + [2] * 4 and moved == 4


def test_a_burst_that_is_most_of_a_novel_class_stays_that_class(monkeypatch):
    """The burst 8-11 lies in novel class 2 of five nodes (7-11): it is that class, nothing new;
    were class 2 twice its size, the burst would leave it as a new class."""
    answer = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2])
    recent = torch.zeros(12, dtype=torch.bool)
    recent[8:] = True
    near = {i: [j for j in range(8, 12) if j != i] for i in range(8, 12)}
    out, moved = grouped_fixture(monkeypatch, answer, recent, near)
    assert torch.equal(out, answer) and moved == 0
    wide = torch.tensor([0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
    out, moved = grouped_fixture(monkeypatch, wide, recent, near)
    assert out[8:].tolist() == [3] * 4 and moved == 4


def test_a_burst_holding_validation_nodes_as_a_known_class_does_stays_known(monkeypatch):
    """Known class 1 holds one validation node per unlabelled node; a burst of four unlabelled
    and three validation nodes holds them as class 1 does: a piece of it, left as it was, and
    the validation nodes always keep their class."""
    answer = torch.tensor([0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    val = torch.tensor([0, -1, 1, -1, -1, 1, 1, 1, -1, -1, -1, -1])
    recent = torch.zeros(12, dtype=torch.bool)
    recent[5:] = True
    near = {i: [j for j in range(5, 12) if j != i] for i in range(5, 12)}
    out, moved = grouped_fixture(monkeypatch, answer, recent, near, val=val)
    assert torch.equal(out, answer) and moved == 0


def test_decide_answer_skips_the_burst_without_arrivals_and_reports_it_with_them():
    """Without ``recent`` the answer has no ``burst`` entry; with a planted class that all
    arrived recently (the known classes a fifth of theirs) the step reports the nodes it moved."""
    from oral_core.answer import decide_answer
    from tests.core.test_answer import planted_graph

    g, train, val, _ = planted_graph(600)
    class_id = torch.where(g.y == 3, torch.zeros_like(g.y), g.y)  # the class named known
    plain = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                          burst_alpha=0.01)
    assert "burst" not in plain
    gen = torch.Generator().manual_seed(0)
    recent = (g.y == 3) | (torch.rand(g.y.numel(), generator=gen) < 0.2)
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        burst_alpha=0.01, recent=recent)
    assert got["burst"] > 0
    young = got["answer"][(g.y == 3) & (train < 0) & (val < 0)]
    assert bool((young >= 3).float().mean() > 0.5)


def test_joined_bursts_stay_in_the_novel_class_they_lie_in_and_go_together(monkeypatch):
    """With ``join`` the burst 8-11 inside the wide novel class 2 joins it (the plain step cuts
    it out); two bursts named known class 0 (1-3 and 4-6, not each other's neighbours) become
    one young class together, not two."""
    recent = torch.zeros(12, dtype=torch.bool)
    recent[8:] = True
    near = {i: [j for j in range(8, 12) if j != i] for i in range(8, 12)}
    wide = torch.tensor([0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2])

    def grouped(answer, recent, near, join):
        monkeypatch.setattr(answer_module, "view_neighbours",
                            lambda x, e, rows, k, **_: torch.tensor([near[int(r)] for r in rows]))
        monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 3)
        none = torch.full((answer.numel(),), -1)
        return answer_module.burst_classes(answer, recent, None, None, none, none, 2, 0.05,
                                           join=join)

    out, moved = grouped(wide, recent, near, True)
    assert torch.equal(out, wide) and moved == 0
    # 30 nodes, a fifth of them recent: two bursts of three, each its own neighbours
    known = torch.tensor([1, 0, 0, 0, 0, 0, 0] + [1] * 11 + [0] * 12)
    recent = torch.zeros(30, dtype=torch.bool)
    recent[1:7] = True
    near = {1: [2, 3], 2: [1, 3], 3: [1, 2], 4: [5, 6], 5: [4, 6], 6: [4, 5]}
    apart, _ = grouped(known, recent, near, False)
    assert sorted(set(apart[1:7].tolist())) == [2, 3]  # two young classes
    together, moved = grouped(known, recent, near, True)
    assert together[1:7].tolist() == [2] * 6 and moved == 6


def test_a_young_burst_joins_only_a_young_novel_class(monkeypatch):
    """``+burstyoung`` on 30 nodes: the burst 8-11 (each among the others) lies in novel class 2
    (nodes 2-11). When most of class 2 arrived recently (2-11, though 2-7 sit among old nodes and
    are no burst) it is a young class and the burst joins it, nothing cut; when class 2 is older
    and mixed (only 8-11 recent, 4 of 10) the burst leaves it as a class of its own, as
    ``+burst`` makes it; the joining form ``+burstjoin`` keeps it in class 2 both times."""
    from oral_core.answer import young_class

    wide = torch.tensor([0, 0] + [2] * 10 + [0] * 9 + [1] * 9)
    near = {i: [j for j in range(8, 12) if j != i] for i in range(8, 12)}
    near |= {i: [12, 13, 14] for i in range(2, 8)}

    def grouped(recent, young):
        monkeypatch.setattr(answer_module, "view_neighbours",
                            lambda x, e, rows, k, **_: torch.tensor([near[int(r)]
                                                                     for r in rows]))
        monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 3)
        none = torch.full((30,), -1)
        return answer_module.burst_classes(wide, recent, None, None, none, none, 2, 0.05,
                                           join=True, young=young)

    mixed = torch.zeros(30, dtype=torch.bool)
    mixed[8:12] = True
    assert not young_class(wide == 2, mixed)
    out, moved = grouped(mixed, True)
    assert out[8:12].tolist() == [3] * 4 and torch.equal(out[:8], wide[:8]) and moved == 4
    assert torch.equal(grouped(mixed, False)[0], wide)
    fresh = torch.zeros(30, dtype=torch.bool)
    fresh[2:12] = True
    assert young_class(wide == 2, fresh)
    for young in (True, False):
        out, moved = grouped(fresh, young)
        assert torch.equal(out, wide) and moved == 0
    assert not young_class(torch.zeros(30, dtype=torch.bool), fresh)  # an empty class is not


def test_a_burst_class_grows_over_the_recent_nodes_that_lie_with_it():
    """``+burstgrow`` (:func:`oral_core.answer.burst_grown`): class 5 is a burst (0-2). Node 3
    arrived recently; two of its recent neighbours are in class 5 and the third is old: it joins.
    Node 4 is recent too, but its recent neighbours are the known classes' own growth (8, 9): it
    stays. Node 6 would join by the next round's count (neighbours 3 and 2, both class 5 then)
    but is not free (a validation node): it keeps its class. Old nodes never move."""
    from oral_core.answer import burst_grown

    answer = torch.tensor([5, 5, 5, 0, 0, 1, 1, 0, 0, 1])
    recent = torch.tensor([1, 1, 1, 1, 1, 0, 1, 0, 1, 1]).bool()
    rows = torch.tensor([0, 1, 2, 3, 4, 6, 8, 9])
    near = torch.tensor([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 7], [8, 9, 5], [3, 2, 5],
                         [4, 9, 6], [4, 8, 6]])
    free = torch.ones(10, dtype=torch.bool)
    free[6] = False
    out = burst_grown(answer, rows, near, recent, free, [5])
    assert out.tolist() == [5, 5, 5, 5, 0, 1, 1, 0, 0, 1]


def test_growth_needs_enough_members_and_more_than_half_the_recent_neighbours():
    """Node 2 has one member of class 7 among its neighbours: too few at ``least=2``. Node 3 has
    two, but against two other recent neighbours: not more than half. Nothing moves, and nothing
    moves with no class to grow; with ``least=1`` node 2 would join had its other neighbours been
    old."""
    from oral_core.answer import burst_grown

    answer = torch.tensor([7, 7, 0, 0, 1, 1])
    recent = torch.ones(6, dtype=torch.bool)
    rows = torch.tensor([2, 3])
    near = torch.tensor([[0, 4, 5, 5], [0, 1, 4, 5]])
    free = torch.ones(6, dtype=torch.bool)
    assert burst_grown(answer, rows, near, recent, free, [7]).tolist() == answer.tolist()
    assert burst_grown(answer, rows, near, recent, free, []).tolist() == answer.tolist()
    recent[4:] = False
    assert burst_grown(answer, rows, near, recent, free, [7], least=1).tolist() == [
        7, 7, 7, 7, 1, 1]


def test_with_most_a_node_joins_only_where_the_class_outnumbers_its_own():
    """``+burstgrowmost``: class 5 is a burst (0-2). Node 3 is recent; two of its recent
    neighbours are class 5 and the other two are old members of its own class 0: the plain rule
    counts the recent neighbours only and takes it, ``most`` does not (2 is not more than 2).
    Node 4 has the same two class-5 neighbours and one old node of its class: it joins either
    way."""
    from oral_core.answer import burst_grown

    answer = torch.tensor([5, 5, 5, 0, 0, 0, 0, 1])
    recent = torch.tensor([1, 1, 1, 1, 1, 0, 0, 0]).bool()
    rows = torch.tensor([0, 1, 2, 3, 4])
    near = torch.tensor([[1, 2, 3, 4], [0, 2, 3, 4], [0, 1, 3, 4], [0, 1, 5, 6], [0, 1, 5, 7]])
    free = torch.ones(8, dtype=torch.bool)
    assert burst_grown(answer, rows, near, recent, free, [5]).tolist() == [5, 5, 5, 5, 5, 0, 0, 1]
    assert burst_grown(answer, rows, near, recent, free, [5], most=True).tolist() == [
        5, 5, 5, 0, 5, 0, 0, 1]


def young_graph(n: int, classes: int, known: int):
    """``(y, x, edges, train, val, recent)``: ``n`` nodes of ``classes`` classes (node ``i`` of
    class ``i % classes``) in noisy one-hot features, random edges, a fifth of the known classes'
    nodes labelled for training and a fifth for validation, and most nodes of the classes from
    ``known`` on, with some of every class, arrived recently."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % classes
    x = torch.randn(n, 8, generator=g) * 1.5 + 2 * torch.nn.functional.one_hot(y, 8).float()
    edges = torch.randint(0, n, (2, 2 * n), generator=g)
    train = torch.where((torch.arange(n) % 5 == 0) & (y < known), y, -1)
    val = torch.where((torch.arange(n) % 5 == 1) & (y < known), y, -1)
    recent = ((y >= known) & (torch.rand(n, generator=g) < 0.8)) | (
        torch.rand(n, generator=g) < 0.15)
    return y, x, edges, train, val, recent


def test_decide_answer_takes_the_growing_form_with_most(monkeypatch):
    """``burst_grow_most`` takes the growing form with it (join, young, grow) and asks
    :func:`oral_core.answer.burst_grown` for ``most``; ``burst_grow`` does not."""
    calls = recording(monkeypatch, "burst_grown", "most")
    n, known = 300, 2
    y, x, edges, train, val, recent = young_graph(n, 3, known)
    class_id = torch.where(y < known, y, 0)  # the young class 2 inside known class 0
    common = dict(scale="labelled", seed=0, recent=recent, burst_alpha=0.01)
    plain = answer_module.decide_answer(class_id, x, edges, train, val, known, burst_young=True,
                                        **common)
    assert calls == [] and plain["burst"] > 0  # a burst, no growth asked
    grown = answer_module.decide_answer(class_id, x, edges, train, val, known, burst_grow=True,
                                        **common)
    most = answer_module.decide_answer(class_id, x, edges, train, val, known,
                                       burst_grow_most=True, **common)
    assert calls == [False, True]
    assert most["burst"] <= grown["burst"] and most["answer"].shape == (n,)


def test_with_keep_a_young_class_never_grows_over_another_novel_class():
    """``+burstgrowkeep`` (:func:`oral_core.answer.burst_grown`'s ``keep_from``): class 5 is a
    burst (0-2); nodes 3 and 4 are recent with three class-5 members among their four nearest
    nodes. Node 3 is named known (0) and joins with or without the keep; node 4 sits in the
    other novel class 6, which the plain bounded growth empties into 5 and the keep leaves,
    unless class 5 is one the bursts made tonight."""
    from oral_core.answer import burst_grown

    answer = torch.tensor([5, 5, 5, 0, 6, 6, 0])
    recent = torch.tensor([1, 1, 1, 1, 1, 0, 0]).bool()
    rows = torch.tensor([0, 1, 2, 3, 4])
    near = torch.tensor([[1, 2, 3, 4], [0, 2, 3, 4], [0, 1, 3, 4], [0, 1, 2, 6],
                         [0, 1, 2, 5]])
    free = torch.ones(7, dtype=torch.bool)
    assert burst_grown(answer, rows, near, recent, free, [5], most=True).tolist() == [
        5, 5, 5, 5, 5, 6, 0]
    assert burst_grown(answer, rows, near, recent, free, [5], most=True,
                       keep_from=5).tolist() == [5, 5, 5, 5, 6, 6, 0]
    # a class the bursts made tonight (numbered from ``made_from``) may still take it
    assert burst_grown(answer, rows, near, recent, free, [5], most=True, keep_from=5,
                       made_from=5).tolist() == [5, 5, 5, 5, 5, 6, 0]


def test_with_keep_a_joined_burst_leaves_the_other_novel_class_its_nodes(monkeypatch):
    """With ``keep_novel`` the bursts 1-6 (mostly in novel class 2, nodes 4-6 in novel class 3)
    join class 2 without nodes 4-6: a burst claims nodes named known or already in its class
    (:func:`oral_core.answer.claimable`); without the keep class 3 loses them to class 2."""
    from oral_core.answer import claimable

    answer = torch.tensor([1, 2, 2, 2, 3, 3, 3, 2] + [1] * 10 + [0] * 12)
    recent = torch.zeros(30, dtype=torch.bool)
    recent[1:7] = True
    near = {i: [j for j in range(1, 7) if j != i][:3] for i in range(1, 7)}
    near |= {4: [1, 2, 3], 5: [1, 2, 4], 6: [1, 4, 5]}
    monkeypatch.setattr(answer_module, "view_neighbours",
                        lambda x, e, rows, k, **_: torch.tensor([near[int(r)] for r in rows]))
    monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 3)
    none = torch.full((30,), -1)

    def joined(keep):
        return answer_module.burst_classes(answer, recent, None, None, none, none, 2, 0.05,
                                           join=True, keep_novel=keep)

    taken, moved = joined(False)
    assert taken[1:7].tolist() == [2] * 6 and moved == 3
    kept, moved = joined(True)
    assert torch.equal(kept, answer) and moved == 0
    # node 0 is named known class 1: any young class may claim it
    assert claimable(torch.tensor([0, 1, 4]), answer, 2, 2).tolist() == [0, 1]
    assert claimable(torch.tensor([0, 1, 4]), answer, 3, 2).tolist() == [0, 4]


def test_decide_answer_takes_the_bounded_growing_form_with_keep(monkeypatch):
    """``burst_keep`` takes the bounded growing form with it (join, young, grow, most) and asks
    :func:`oral_core.answer.burst_grown` to keep the novel classes; the answer then never moves a
    node of the model's novel classes into another class the model had."""
    calls = recording(monkeypatch, "burst_grown", "most", "keep_from")
    n, known = 300, 2
    y, x, edges, train, val, recent = young_graph(n, 4, known)
    class_id = torch.where(y == 3, 2, torch.where(y < known, y, 0))  # class 3 in novel class 2
    kept = answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled",
                                       seed=0, recent=recent, burst_alpha=0.01, burst_keep=True)
    assert calls == [(True, known)]
    novel = class_id >= known
    moved = novel & (kept["answer"] != class_id)
    assert bool((kept["answer"][moved] > int(class_id.max())).all())  # only into new classes


def test_split_first_reads_the_models_own_class_before_a_burst_dilutes_it(monkeypatch):
    """``split_first`` (``+splitfirst``): the check (:func:`oral_core.answer.split_answer`) runs
    on the model's own classes before the burst too. The burst step here fills novel class 2
    with unlabelled nodes (as the growth does), so the later check alone reads too few of its
    validation nodes and keeps it; run first, it drops the class while the validation nodes
    still say what it holds, and the drops of both checks are counted."""
    seen = []

    def split(decided, val, unlabelled, num_known, share):
        answer = decided["answer"]
        held = int(((answer == 2) & (val >= 0)).sum())
        size = int((answer == 2).sum())
        seen.append((held, size))
        if size and held / size >= 0.2:  # the validation nodes say: a known class
            return torch.where(answer == 2, 0, answer), 1
        return answer, 0

    def burst(answer, recent, *args, **kwargs):
        out = answer.clone()
        out[10:30] = 2  # unlabelled nodes moved in, no validation node among them
        return out, 20

    monkeypatch.setattr(answer_module, "split_answer", split)
    monkeypatch.setattr(answer_module, "burst_classes", burst)
    n, known = 40, 2
    x = torch.randn(n, 4)
    edges = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
    train = torch.where(torch.arange(n) < 4, torch.arange(n) % 2, -1)
    val = torch.where((torch.arange(n) >= 4) & (torch.arange(n) < 8), 0, -1)
    class_id = torch.zeros(n, dtype=torch.long)
    class_id[4:10] = 2  # four validation nodes in six: the model's class 2 is known
    common = dict(scale="labelled", seed=0, split_share=0.5, recent=torch.ones(n).bool(),
                  burst_alpha=0.01)
    late = answer_module.decide_answer(class_id, x, edges, train, val, known, **common)
    assert seen == [(4, 26)] and late["dropped"] == 0 and int((late["answer"] == 2).sum()) == 26
    seen.clear()
    first = answer_module.decide_answer(class_id, x, edges, train, val, known, split_first=True,
                                        **common)
    assert seen[0] == (4, 6) and first["dropped"] == 1
    assert not bool((first["answer"][:10] == 2).any())


def split_rest_fixture(monkeypatch, rest_witnesses: bool, split_rest: bool):
    """Known classes 0 (nodes 0-9, 36-39) and 1 (10-19), each with two validation nodes; novel
    class 2 holds old nodes 20-29 and a joining burst 30-35 of recent nodes among each other.
    With ``rest_witnesses`` two of class 2's old nodes (28-29) are validation nodes of known
    class 0, so its other nodes hold witnesses at the known classes' rate: a known region."""
    n = 40
    answer = torch.tensor([0] * 10 + [1] * 10 + [2] * 16 + [0] * 4)
    val = torch.full((n,), -1)
    val[[8, 9]], val[[18, 19]] = 0, 1
    if rest_witnesses:
        val[[28, 29]] = 0
    recent = torch.zeros(n, dtype=torch.bool)
    recent[30:36] = True
    near = {i: [j for j in range(30, 36) if j != i] for i in range(30, 36)}
    monkeypatch.setattr(answer_module, "view_neighbours",
                        lambda x, e, rows, k, **_: torch.tensor([near[int(r)] for r in rows]))
    monkeypatch.setattr(answer_module, "REJECTED_MIN_SIZE", 3)
    return answer_module.burst_classes(answer, recent, None, None, torch.full((n,), -1), val, 2,
                                       0.05, join=True, split_rest=split_rest)


def test_with_split_rest_a_burst_leaves_a_class_whose_other_nodes_look_known(monkeypatch):
    """``+burstsplit``: the joining burst 30-35 would join novel class 2; when class 2's other
    nodes hold validation nodes as a known class does (rate 16 unlabelled per validation node,
    here 4 x 2 / 8 = 1.0 >= SPLIT_SHARE), it becomes a class of its own (3) instead, and the
    rest is left to the split check; without ``split_rest`` it joins."""
    joined, moved = split_rest_fixture(monkeypatch, rest_witnesses=True, split_rest=False)
    assert joined[30:36].tolist() == [2] * 6 and moved == 0
    cut, moved = split_rest_fixture(monkeypatch, rest_witnesses=True, split_rest=True)
    assert cut[30:36].tolist() == [3] * 6 and moved == 6
    assert cut[20:30].tolist() == [2] * 10  # the rest stays for the split check to judge


def test_with_split_rest_a_burst_still_joins_a_class_without_witnesses(monkeypatch):
    """A novel class whose other nodes hold no validation node (a class that is new) is joined
    with ``split_rest`` as without it: the option only acts on classes the check calls known."""
    for split_rest in (False, True):
        out, moved = split_rest_fixture(monkeypatch, rest_witnesses=False, split_rest=split_rest)
        assert out[30:36].tolist() == [2] * 6 and moved == 0


def test_decide_answer_passes_burst_split_to_the_burst(monkeypatch):
    """``decide_answer(burst_split=True)`` (``+burstsplit``) asks :func:`burst_classes` for
    ``split_rest``; the settings table (:func:`tasks.answer.answer_options`) maps the part."""
    from tasks.answer import answer_options

    seen = recording(monkeypatch, "burst_classes", "split_rest")
    n, known = 300, 2
    y, x, edges, train, val, recent = young_graph(n, 4, known)
    class_id = torch.where(y == 3, 2, torch.where(y < known, y, 0))
    for flag in (False, True):
        answer_module.decide_answer(class_id, x, edges, train, val, known, scale="labelled",
                                    seed=0, recent=recent, burst_alpha=0.01,
                                    burst_grow_most=True, burst_split=flag)
    assert seen == [False, True]
    options = answer_options(["burstgrowmost", "burstsplit", "split"])
    assert options["burst_split"] and options["burst_grow_most"]
    assert not answer_options(["burstgrowmost", "split"])["burst_split"]
