"""The novel groups re-cut on fixed features (``novel_recut``; not in the paper).

ORAL's novel classes are groups of the prototype partition (Eq. 3-4), and the prototypes are
trained from a random start: on graphs whose classes overlap (Cora), two fits of the same graph
and split agree on which nodes are novel (95% on a Cora night) and on the known classes (99%),
but cut the novel nodes in unrelated ways (adjusted Rand index about 0 between two seeds on
them), so neither the night's answer nor the next night's lineage can rely on the cut.

The re-cut keeps what the fit decided (which nodes are novel and how many novel classes there
are, Eq. 4's granularity) and draws the boundaries between the novel classes on features no
training has shaped: ``S^2 X`` (the propagated features of the known-class head and the
separability yardstick), standardised over the novel nodes and projected on their first
``dims`` principal axes, cut by k-means with a fixed seed. No label is read. Each new group takes
the fit's novel id it overlaps most (a Hungarian matching), so ids keep their meaning where the
fit's cut and the re-cut agree.
"""
from __future__ import annotations

import torch

from .hungarian import contingency, max_assignment
from .kmeans import kmeans, squared_distances
from .known_head import standardised
from .separability import labelled_view

#: principal axes of the re-cut's view (``novel_recut_dims``' default)
RECUT_DIMS = 64


def novel_ids(class_id: torch.Tensor, num_known: int) -> torch.Tensor:
    """The distinct novel class ids of an answer, ascending."""
    return torch.unique(class_id[class_id >= num_known])


def recut_novel(class_id: torch.Tensor, x: torch.Tensor, edge_index: torch.Tensor,
                num_known: int, dims: int = RECUT_DIMS, seed: int = 0,
                restarts: int = 10, view: torch.Tensor | None = None,
                parts: str = "same") -> torch.Tensor:
    """``class_id`` with its novel nodes regrouped by k-means (module docstring). The view is
    ``S^2 X`` on ``dims`` principal axes, or ``view`` (``[N, D]``, e.g. the fitted model's
    embedding, :meth:`oral_core.trainer.ORAL.selected_embedding`) standardised over the novel
    nodes. ``parts``: ``"same"``, as many groups as the answer has novel classes; or
    ``"silhouette"``, the count among ``max(2, n) .. n + RECUT_EXTRA`` (``n`` the answer's novel
    classes) whose cut has the highest mean silhouette (:func:`parts_by_silhouette`). Known
    nodes keep their ids; each group takes the novel id it overlaps most (a Hungarian
    matching), a group left over a new id above every id of the answer. With ``"same"``, an
    answer with fewer than two novel classes, or no more novel nodes than classes, comes back
    unchanged; with ``"silhouette"``, one with no novel class or too few novel nodes."""
    class_id = class_id.cpu().long()
    ids = novel_ids(class_id, num_known)
    novel = (class_id >= num_known).nonzero().flatten()
    k = int(ids.numel())
    low = k if parts == "same" else max(2, k)
    if k < (2 if parts == "same" else 1) or novel.numel() <= low:
        return class_id
    if view is None:
        z = labelled_view(x, edge_index, novel, dims=dims, seed=seed).double()
    else:
        z = standardised(view.detach().cpu()[novel].double())[0]
    if parts == "same":
        cut, _, _ = kmeans(z, k, restarts=restarts, seed=seed)
        return with_novel_ids(class_id, novel, cut, ids, k)
    cut, count = parts_by_silhouette(z, low, k + RECUT_EXTRA, seed=seed, restarts=restarts)
    return with_novel_ids(class_id, novel, cut, ids, count)


def with_novel_ids(class_id: torch.Tensor, novel: torch.Tensor, cut: torch.Tensor,
                   ids: torch.Tensor, p: int) -> torch.Tensor:
    """``class_id`` with the ``novel`` nodes (long ``[M]``) given the ids of their ``cut`` parts
    (long ``[M]``, ``0..p-1``): each part the answer's novel id it overlaps most (a Hungarian
    matching over the parts and ``ids``), a part left over a new id above every id in
    ``class_id``, in the order of the parts."""
    own = torch.searchsorted(ids, class_id[novel])  # the answer's novel ids as 0..k-1
    rows, cols = max_assignment(contingency(cut, own, p, int(ids.numel())))
    to_id = torch.full((p,), -1, dtype=torch.long)
    to_id[torch.as_tensor(rows, dtype=torch.long)] = ids[torch.as_tensor(cols, dtype=torch.long)]
    fresh = int(class_id.max()) + 1
    for part in range(p):
        if to_id[part] < 0:
            to_id[part], fresh = fresh, fresh + 1
    out = class_id.clone()
    out[novel] = to_id[cut]
    return out


#: the most parts beyond the answer's novel class count that ``parts="silhouette"`` tries
RECUT_EXTRA = 4
#: rows (a fixed sample) on which a cut's mean silhouette is measured
SILHOUETTE_ROWS = 2000


def mean_silhouette(z: torch.Tensor, cut: torch.Tensor, rows: torch.Tensor) -> float:
    """Mean silhouette (Rousseeuw 1987) of ``cut`` (long ``[n]``) over the ``rows`` of ``z``:
    per row ``(b - a) / max(a, b)``, ``a`` its mean distance to the other rows of its part,
    ``b`` the least mean distance to another part's rows (distances among ``rows`` only; a row
    alone in its part counts 0)."""
    zs, cs = z[rows], cut[rows]
    d = torch.cdist(zs, zs)
    parts = torch.unique(cs)
    if parts.numel() < 2:
        return 0.0
    member = (cs[:, None] == parts[None, :]).double()  # [r, p]
    sums = d @ member  # [r, p]: total distance to each part
    sizes = member.sum(0)
    own = (member * sums).sum(1)
    own_size = (member * sizes).sum(1)
    a = own / (own_size - 1).clamp_min(1)
    other = sums / sizes.clamp_min(1)
    other = torch.where(member.bool(), torch.full_like(other, float("inf")), other)
    b = other.min(dim=1).values
    s = torch.where(own_size > 1, (b - a) / torch.maximum(a, b).clamp_min(1e-12),
                    torch.zeros_like(a))
    return float(s.mean())


def parts_by_silhouette(z: torch.Tensor, low: int, high: int, seed: int = 0,
                        restarts: int = 10) -> tuple[torch.Tensor, int]:
    """The k-means cut of ``z``'s rows with the highest mean silhouette among ``low..high``
    parts (:func:`mean_silhouette` on a fixed sample of :data:`SILHOUETTE_ROWS` rows; a tie:
    the fewer parts), and its part count. Label-free."""
    high = min(high, z.shape[0] - 1)
    rows = sampled_rows(torch.arange(z.shape[0]), SILHOUETTE_ROWS, seed)
    best = None
    for k in range(low, max(low, high) + 1):
        cut, _, _ = kmeans(z, k, restarts=restarts, seed=seed)
        score = mean_silhouette(z, cut, rows)
        if best is None or score > best[0] + 1e-12:
            best = (score, cut, k)
    return best[1], best[2]


# ------------------------------------------------------------------ the novel classes regrouped
# ``+regroup`` (an option of the night's answer, ``oral_core.answer.decide_answer``; not in the
# paper): Eq. 4's granularity is one choice for the whole graph, and on young nightly graphs it
# puts two new classes in one novel group (benchmarks/results/granularity_proxy). Each novel
# class of the answer is cut again, on the fixed view ``S^2 X``, into the most parts whose cut is
# reproducible: the prediction strength of Tibshirani & Walther (2005, "Cluster validation by
# prediction strength") at least their recommended 0.8. No label is read. ``+regroupknown`` (an
# option too) asks in addition that the cut be more reproducible than every known class's cut
# into as many parts: the graph's own classes are the yardstick of what divides a class (on
# AmazonPhoto every known class halves reproducibly on ``S^2 X``). ``+regroupcal`` (an option
# too) tries the cut on the night's labelled nodes first and regroups only on nights where it
# tells the graph's known classes apart: it rarely divides one labelled class and cuts most
# pairs of them into their two classes (:func:`cut_calibration`). ``+regroupodds`` (an option)
# reads the same calibration and regroups where the cut tells pairs apart more often than it
# divides single classes (:func:`cut_right_more_often`).

#: the prediction strength a cut must reach (Tibshirani & Walther's recommended threshold)
REGROUP_STRENGTH = 0.8
#: the most parts one novel class is cut into, and the least nodes each part must hold on average
REGROUP_MAX_PARTS, REGROUP_MIN_PART = 4, 10
#: random halvings the prediction strength is averaged over
REGROUP_HALVINGS = 5
#: ``+regroupknown``: the most nodes of one class, novel or known, its prediction strength is read
#: on (a fixed random sample: it bounds the cost on large graphs)
REGROUP_SAMPLE = 2000
#: ``+regroupcal``: the most pairs of labelled known classes the calibration cuts (a fixed random
#: sample of them: it bounds the cost on graphs with many classes)
REGROUP_PAIRS = 20
#: ``+regroupcal`` regroups when the cut divides at most this share of the labelled known classes
#: (one in five: the complement of the prediction strength's 0.8) ...
REGROUP_DIVIDES_ONE = 0.2
#: ... and tells at least this share of the pairs of them apart (most pairs) ...
REGROUP_TELLS_TWO = 0.5
#: ... a pair told apart when its cut holds (:func:`parts_that_hold` >= 2) and its two parts are
#: each this pure on the two classes' labels (the scoreboard's precision bar, 70%)
REGROUP_PAIR_PURITY = 0.7


def pairs_kept(test_cut: torch.Tensor, train_side: torch.Tensor, k: int) -> float:
    """The prediction strength of one halving: over the test half's clusters (``test_cut``) of at
    least two nodes, the least share of their node pairs that the training half's centres
    (``train_side``: each test node's nearest one) also put together."""
    both = contingency(test_cut, train_side, k, k).double()  # [test cluster, training centre]
    size = both.sum(1)
    pairs = size * (size - 1) / 2
    together = (both * (both - 1) / 2).sum(1)
    held = pairs > 0
    return float((together[held] / pairs[held]).min()) if held.any() else 0.0


def prediction_strength(z: torch.Tensor, k: int, halvings: int = REGROUP_HALVINGS,
                        seed: int = 0) -> float:
    """Tibshirani & Walther's prediction strength of ``k`` clusters of ``z``'s rows: the rows
    halved at random; k-means on each half; how well the training half's centres keep the test
    half's clusters together (:func:`pairs_kept`), averaged over ``halvings``."""
    z = z.detach().cpu().double()
    gen = torch.Generator().manual_seed(seed)
    strengths = []
    for h in range(halvings):
        order = torch.randperm(z.shape[0], generator=gen)
        train, test = order[: z.shape[0] // 2], order[z.shape[0] // 2:]
        _, centres, _ = kmeans(z[train], k, restarts=3, seed=seed + h)
        test_cut, _, _ = kmeans(z[test], k, restarts=3, seed=seed + h)
        side = squared_distances(z[test], centres.double()).argmin(1)
        strengths.append(pairs_kept(test_cut, side, k))
    return sum(strengths) / len(strengths)


def parts_that_hold(z: torch.Tensor, max_parts: int = REGROUP_MAX_PARTS,
                    min_part: int = REGROUP_MIN_PART, strength: float = REGROUP_STRENGTH,
                    seed: int = 0, beyond: dict[int, float] | None = None) -> int:
    """Tibshirani & Walther's estimate of the number of clusters of ``z``'s rows: the largest
    ``k`` in ``2..max_parts`` whose prediction strength reaches ``strength`` (and, with
    ``beyond``, is above ``beyond[k]``: the known classes' yardstick), else 1; a ``k`` is tried
    only when each half holds ``min_part`` rows per part."""
    best = 1
    for k in range(2, max_parts + 1):
        if z.shape[0] // 2 < k * min_part:
            break
        ps = prediction_strength(z, k, seed=seed)
        if ps >= strength and (beyond is None or ps > beyond.get(k, 0.0)):
            best = k
    return best


def sampled_rows(rows: torch.Tensor, most: int, seed: int = 0) -> torch.Tensor:
    """``rows``, or a fixed random ``most`` of them when there are more."""
    if rows.numel() <= most:
        return rows
    gen = torch.Generator().manual_seed(seed)
    return rows[torch.randperm(rows.numel(), generator=gen)[:most]]


def known_yardstick(answer: torch.Tensor, view: torch.Tensor, num_known: int,
                    max_parts: int = REGROUP_MAX_PARTS, min_part: int = REGROUP_MIN_PART,
                    most: int = REGROUP_SAMPLE, seed: int = 0) -> dict[int, float]:
    """``{k: the largest prediction strength of a known class of the answer cut into k parts}``
    (each class's nodes, at most ``most`` of them, on ``view``): how reproducibly the graph's own
    classes divide at each ``k``, the bar a novel class's cut must clear (``+regroupknown``)."""
    bar: dict[int, float] = {}
    for cls in range(num_known):
        rows = sampled_rows((answer == cls).nonzero().flatten(), most, seed)
        for k in range(2, max_parts + 1):
            if rows.numel() // 2 < k * min_part:
                break
            bar[k] = max(bar.get(k, 0.0), prediction_strength(view[rows], k, seed=seed))
    return bar


def two_part_purity(z: torch.Tensor, labels: torch.Tensor, seed: int = 0) -> float:
    """The share of ``z``'s rows whose k-means part (two parts) holds their label as its
    majority: how well a cut into two follows two classes."""
    part, _, _ = kmeans(z.double(), 2, restarts=10, seed=seed)
    both = contingency(part, labels, 2, int(labels.max()) + 1)
    return float(both.max(1).values.sum()) / max(int(labels.numel()), 1)


def cut_calibration(view: torch.Tensor, labels: torch.Tensor, num_known: int,
                    max_parts: int = REGROUP_MAX_PARTS, min_part: int = REGROUP_MIN_PART,
                    strength: float = REGROUP_STRENGTH, most: int = REGROUP_SAMPLE,
                    pairs: int = REGROUP_PAIRS, seed: int = 0) -> dict:
    """How the regroup's cut (:func:`parts_that_hold`) fares on the labelled known classes:
    ``classes`` read (those with ``4 * min_part`` labelled nodes, enough for two parts a half;
    each on at most ``most`` of them) and the share it ``divides`` into parts; ``pairs`` of them
    read (at most ``pairs``, a fixed random sample; each class on as many nodes as the other) and
    the share it tells apart (``tells_apart``: the cut holds and its two parts follow the two
    classes, :func:`two_part_purity` >= :data:`REGROUP_PAIR_PURITY`). ``labels`` are the
    labelled nodes' classes (-1 elsewhere); no other label is read."""
    rows = {}
    for cls in range(num_known):
        members = (labels == cls).nonzero().flatten()
        if members.numel() >= 4 * min_part:
            rows[cls] = sampled_rows(members, most, seed)
    divided = [parts_that_hold(view[r], max_parts, min_part, strength, seed) > 1
               for r in rows.values()]
    every = [(a, b) for a in rows for b in rows if a < b]
    if len(every) > pairs:
        gen = torch.Generator().manual_seed(seed)
        every = [every[i] for i in sorted(torch.randperm(len(every), generator=gen)[:pairs].tolist())]
    apart = []
    for a, b in every:
        n = min(rows[a].numel(), rows[b].numel(), most // 2)
        both = torch.cat([rows[a][:n], rows[b][:n]])
        side = torch.cat([torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long)])
        holds = parts_that_hold(view[both], max_parts, min_part, strength, seed) > 1
        apart.append(holds and two_part_purity(view[both], side, seed) >= REGROUP_PAIR_PURITY)
    return {"classes": len(divided), "divides": sum(divided) / len(divided) if divided else None,
            "pairs": len(apart), "tells_apart": sum(apart) / len(apart) if apart else None}


def cut_tells_classes_apart(calibration: dict, divides_one: float = REGROUP_DIVIDES_ONE,
                            tells_two: float = REGROUP_TELLS_TWO) -> bool:
    """``+regroupcal``'s test of a :func:`cut_calibration`: the cut divides at most
    ``divides_one`` of the labelled known classes and tells at least ``tells_two`` of their pairs
    apart (a night without a pair to read regroups nothing)."""
    return (calibration["divides"] is not None and calibration["tells_apart"] is not None
            and calibration["divides"] <= divides_one and calibration["tells_apart"] >= tells_two)


def cut_right_more_often(calibration: dict) -> bool:
    """``+regroupodds``'s test of a :func:`cut_calibration` (not in the paper): the cut tells a
    pair of labelled known classes apart more often than it divides one of them
    (``tells_apart > divides``), so that on a novel class that is two classes it is more likely
    right than it is wrong on a novel class that is one (equal stakes, even odds); a night
    without a class or a pair to read regroups nothing."""
    return (calibration["divides"] is not None and calibration["tells_apart"] is not None
            and calibration["tells_apart"] > calibration["divides"])


def regrouped_answer(answer: torch.Tensor, view: torch.Tensor, num_known: int,
                     strength: float = REGROUP_STRENGTH, max_parts: int = REGROUP_MAX_PARTS,
                     min_part: int = REGROUP_MIN_PART, seed: int = 0,
                     known_bar: bool = False) -> tuple[torch.Tensor, int]:
    """The answer with each novel class (id ``>= num_known``) cut into :func:`parts_that_hold`
    parts by k-means on ``view`` (its rows; the first part keeps the class's id, the others take
    new ids after the largest), and the number of new classes this made. With ``known_bar``
    (``+regroupknown``) a cut into ``k`` parts must also be more reproducible than every known
    class's (:func:`known_yardstick`), each class read on at most :data:`REGROUP_SAMPLE` nodes."""
    out = answer.clone().long()
    fresh = int(out.max()) + 1 if out.numel() else 0
    made = 0
    novel = torch.unique(out[out >= num_known]).tolist()
    # the known classes' bar is read only when there is a novel class to cut
    bar = known_yardstick(answer, view, num_known, max_parts, min_part, seed=seed) \
        if known_bar and novel else None
    for cls in novel:
        members = (out == cls).nonzero().flatten()
        read = sampled_rows(members, REGROUP_SAMPLE, seed) if known_bar else members
        k = parts_that_hold(view[read], max_parts, min_part, strength, seed, beyond=bar)
        if k < 2:
            continue
        part, _, _ = kmeans(view[members], k, restarts=10, seed=seed)
        for p in range(1, k):
            out[members[part == p]] = fresh
            fresh += 1
        made += k - 1
    return out, made
