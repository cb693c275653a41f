"""Class lineage across nights: which of tonight's classes continue which of last night's.

Every class carries a *lineage id* that stays the same from night to night while the class goes
on: ``known:<name>`` for a known (labelled) class, ``<graph>:novel:<n>`` for a discovered one,
``n`` counting up per graph and never reused. Tonight's classes are matched to the previous run's
classes by their members (node ids are stable across snapshots).

Overlap measures, for a previous class ``P`` and a current class ``C``:

- ``overlap = |P ∩ C|`` (nodes in both), ``J = overlap / |P ∪ C|`` (Jaccard index);
- ``share_of_P = overlap / |P|`` (how much of ``P`` went to ``C``);
- ``share_of_C = overlap / |C|`` (how much of ``C`` came from ``P``).

With ``LineageConfig.match_on="shared"`` (an option; ``all`` is the default) the sizes in these
measures count only the nodes both runs hold, so tonight's new nodes do not cut a fast-growing
class off from its past; measured on the kept loops it changed little
(``benchmarks/results/lineage_replay``).

Matching
--------
1. *Continuation.* A current known class continues the previous known class of the same name,
   whatever the overlap. Novel classes are matched one-to-one by the Hungarian algorithm
   maximising the summed Jaccard index over the pairs with ``J >= threshold`` (pairs under the
   threshold cannot be matched). A matched current class keeps its predecessor's lineage id.
   With ``LineageConfig.continue_mutual`` (an option) a novel class the Hungarian match left
   alone still continues the unmatched previous novel class it is the mutual largest overlap
   of, when that class holds at least ``share`` of its nodes the previous run held
   (:func:`mutual_continuations`). With ``LineageConfig.continue_contained`` (an option) a
   novel class the match left alone continues the unmatched previous novel class whose nodes
   went mostly to it, when no other previous class went mostly to it
   (:func:`contained_continuations`): a class that grew fast out of a single source (the
   nightly pipeline's default, ``ORAL_LINEAGE_CONTAINED``). With
   ``LineageConfig.continue_published`` (the nightly pipeline's default,
   ``ORAL_LINEAGE_PUBLISHED``) a class whose match was last night's candidate and that absorbs a
   published novel class continues the published one (:func:`published_continuations`, step 2b).
   With ``LineageConfig.continue_merged`` (an option) a novel class with no continuation that
   absorbs last night's novel classes continues one of them instead of taking a new id
   (:func:`merged_continuations`, step 2c).
2. *Absorption.* A previous class with no continuation is *absorbed* by the current class ``C``
   that took the largest share of it, provided ``share_of_P >= share`` and ``C`` then has at least
   two sources (its own predecessor and/or other absorbed classes).
3. *Split.* A previous class ``P`` *splits* when two or more current classes each draw at least
   ``share`` of their own members from it (``share_of_C >= share``).

Statuses (one row per lineage id and run)
-----------------------------------------
Rows of a current class (``class_key`` set, ``size`` its member count):

- ``emerged``: no qualifying predecessor, not a merge, not a split part. Gets a new id (a known
  class that appears for the first time keeps ``known:<name>``). Every class of a graph's first
  run has emerged.
- ``persisting``: continues its predecessor and its size is within ``±size_tolerance`` (relative)
  of the predecessor's size.
- ``grown`` / ``shrunk``: continues its predecessor and its size rose above ``(1 + size_tolerance)``
  times / fell below ``(1 - size_tolerance)`` times the predecessor's size.
- ``merged``: a novel class with two or more sources, i.e. previous classes from which it took at
  least ``share`` of their members (its Hungarian predecessor always counts as a source). It keeps
  its predecessor's lineage id if it has one, else gets a new id; ``parents`` lists the other
  sources' lineage ids. A known class never takes the ``merged`` status (it keeps
  persisting/grown/shrunk/emerged) but records what it absorbed in ``parents`` the same way.
- ``split``: a novel class with no predecessor that is one of the parts of a split previous class.
  It gets a new id and ``parents = [the split class's lineage id]``. (The part that is the
  Hungarian match of the split class keeps its id and a size status, usually ``shrunk``.)

Confirmation (``LineageConfig.confirm_novel``, on by default; not in the paper, a product rule
of issue 47: evidence before a novel class is published). A novel class is a ``candidate`` on
the first night its lineage id exists, whatever the status above would be (``emerged``,
``merged`` into a new id, ``split``), and ``emerged`` on the next night its id goes on: the
night it is confirmed, and the night ``emerged_classes`` shows it. A candidate that does not go
on (the status above would be ``merged``, ``split`` or ``vanished``) is ``dismissed``: it was
never published as a class, so its end is not an event. On the simulated nightly loops most
novel ids of a first night are gone the next (``benchmarks/results/lineage_replay``). Without
confirmation a novel class emerges the night it appears, as before. With
``LineageConfig.confirm_seen`` (an option) a new novel class most of whose nodes the previous run
held were novel there (in any novel class, a candidate's included) is published at once: the
evidence of two nights is its nodes', not its id's (:func:`seen_novel_keys`). With
``LineageConfig.confirm_size`` set (off by default), a new novel class holding at least that
share of the median known class's size is published the night it appears (its status is not
turned into ``candidate``); smaller ones still wait a night.

Rows of a previous class that does not go on (``class_key`` None, ``size`` 0, ``last_seen`` the
previous run's date):

- ``merged``: absorbed into another class (step 2); ``merged_into`` names that class's lineage id.
- ``split``: not continued, but split into two or more parts that carry it as their parent.
- ``vanished``: no continuation, not absorbed, not split: the class disappeared.

``parents`` never contains the row's own lineage id. ``first_seen`` is the date the lineage first
appeared (carried over from the previous run) and ``last_seen`` the date it was last seen alive.

New lineage ids are deterministic: ``<graph>:novel:<n>`` with ``n`` counting up from one more than
the largest ``n`` the graph has used (``max_novel_index``), handed out in the order of the current
class keys. The same inputs always give the same rows.

Pure numpy/scipy: the overlap matrix comes from one ``numpy.unique`` over all member node ids and
one ``bincount`` over (previous class, current class) pairs; loops run over classes only.
"""
from __future__ import annotations

import datetime as dt
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Collection, Hashable, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

STATUSES = ("emerged", "persisting", "grown", "shrunk", "merged", "split", "vanished",
            "candidate", "dismissed")
KNOWN_PREFIX = "known:"


@dataclass(frozen=True)
class LineageConfig:
    """``threshold``: least Jaccard index of a Hungarian match; ``size_tolerance``: relative size
    change still counted as persisting; ``share``: least share for absorption and split parts."""

    threshold: float = 0.3
    size_tolerance: float = 0.2
    share: float = 0.5
    #: a novel class is a ``candidate`` on its first night and ``emerged`` when its id goes on
    confirm_novel: bool = True
    #: with ``confirm_novel``: a new novel class of at least this share of the median known
    #: class's size (tonight's classes) is published the night it appears; None: every new novel
    #: class waits a night (on the kept loops, new novel classes of half the median known size
    #: or more went on to the next night 15 times in 20, smaller ones once in 31,
    #: ``benchmarks/results/lineage_replay``)
    confirm_size: float | None = None
    #: the nodes the overlap measures count: ``all`` members, or only the ``shared`` nodes both
    #: runs hold (tonight's new nodes and the nodes gone since are left out of ``J``,
    #: ``share_of_P`` and ``share_of_C``; sizes and the size statuses still count every member)
    match_on: str = "all"
    #: step 1b: an unmatched novel class continues the unmatched previous novel class when each
    #: is the other's largest overlap and it holds at least ``share`` of the current class's
    #: nodes the previous run held (:func:`mutual_continuations`; off by default,
    #: ``benchmarks/results/lineage_mutual``)
    continue_mutual: bool = False
    #: step 1c: an unmatched novel class continues the one unmatched previous novel class that
    #: gave it the largest share of its nodes, at least ``share``, when no other previous class
    #: did the same (:func:`contained_continuations`; off here, the nightly pipeline's default
    #: since 2026-12-04, ``ORAL_LINEAGE_CONTAINED``, ``benchmarks/results/lineage_contained``)
    continue_contained: bool = False
    #: with ``confirm_novel``: a new novel class at least ``share`` of whose nodes the previous
    #: run held were in the previous run's novel classes (any, candidates included) is published
    #: the night it appears: its nodes were called novel two nights running, under another id
    #: (:func:`seen_novel_keys`; an option, ``benchmarks/results/confirm_seen``)
    confirm_seen: bool = False
    #: step 2b: a novel class whose predecessor was last night's candidate and that absorbs a
    #: published novel class continues the published one instead; the candidate is dismissed
    #: (:func:`published_continuations`; off here, the nightly pipeline's default since
    #: 2026-12-05, ``ORAL_LINEAGE_PUBLISHED``, ``benchmarks/results/lineage_published``)
    continue_published: bool = False
    #: step 2c: a novel class with no continuation that absorbs last night's novel classes
    #: continues one of them (the published one first seen earliest, else the one that gave it
    #: the most nodes) instead of taking a new id, so two candidates that come together go on
    #: (:func:`merged_continuations`; an option: its rule failed on fresh loops twice, no class
    #: published sooner on six, one on twelve, ``benchmarks/results/lineage_merged_fresh``,
    #: ``benchmarks/results/lineage_merged_pieces``)
    continue_merged: bool = False

    def validate(self) -> "LineageConfig":
        for name in ("threshold", "share"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"lineage {name} must be in (0, 1], got {value}")
        if self.size_tolerance < 0:
            raise ValueError(f"lineage size_tolerance must be >= 0, got {self.size_tolerance}")
        if self.confirm_size is not None and not self.confirm_size > 0:
            raise ValueError(f"lineage confirm_size must be > 0 or None, got {self.confirm_size}")
        if self.match_on not in ("all", "shared"):
            raise ValueError(f"lineage match_on must be 'all' or 'shared', got {self.match_on!r}")
        return self


@dataclass
class PreviousClasses:
    """The classes of the previous run of a graph, as lineage needs them.

    ``members``: class key -> node ids (strings); ``lineage``: class key -> lineage id;
    ``names``: class key -> known class name (None or absent: novel); ``first_seen``: lineage
    first-seen date per class key (absent: the previous run's date); ``statuses``: each
    class's lineage status on that run (absent: unknown, never a candidate)."""

    members: Mapping[Hashable, Sequence]
    lineage: Mapping[Hashable, str]
    names: Mapping[Hashable, str | None] = field(default_factory=dict)
    first_seen: Mapping[Hashable, dt.date] = field(default_factory=dict)
    statuses: Mapping[Hashable, str] = field(default_factory=dict)
    snapshot_date: dt.date | None = None
    run_id: str | None = None


@dataclass
class LineageRow:
    """One class-lineage event of a run (see the module docstring for the statuses)."""

    lineage_id: str
    class_key: Hashable | None
    status: str
    size: int
    previous_size: int | None
    parents: list[str]
    first_seen: dt.date | None
    last_seen: dt.date | None
    merged_into: str | None = None


@dataclass
class LineageResult:
    rows: list[LineageRow]
    lineage_of: dict  # current class key -> lineage id
    max_novel_index: int  # the largest n used for the graph after this run


def new_tonight(is_novel, status: str | None, first_seen, snapshot_date) -> bool:
    """What is new on ``snapshot_date``: a novel class ``emerged`` that night (with confirmation,
    its second night); without confirmation also a novel id first seen that night under the
    status ``merged`` or ``split`` (it grew out of earlier classes). A ``candidate`` is not new
    yet. The rule of the ``emerged_classes`` view (:mod:`tasks.warehouse.schema`), shared by
    the report, the night's summary line and its Prefect artifact."""
    if is_novel is not True:
        return False
    if status == "emerged":
        return True
    return status in ("merged", "split") and first_seen is not None and first_seen == snapshot_date


def new_tonight_ids(rows, classes: list[dict], snapshot_date) -> list[str]:
    """The lineage ids of tonight's ``rows`` (:class:`LineageResult`'s) that are new on
    ``snapshot_date`` by :func:`new_tonight`, ``classes`` saying which class keys are novel."""
    novel = {c["class_key"]: bool(c["is_novel"]) for c in classes}
    return [r.lineage_id for r in rows
            if new_tonight(novel.get(r.class_key), r.status, r.first_seen, snapshot_date)]


def novel_lineage_id(graph: str, n: int) -> str:
    return f"{graph}:novel:{n}"


def known_lineage_id(name: str) -> str:
    return f"{KNOWN_PREFIX}{name}"


def _sort_key(key):
    return (0, key, "") if isinstance(key, (int, np.integer)) else (1, 0, str(key))


def _node_class_pairs(classes: Mapping, keys: list) -> tuple[np.ndarray, np.ndarray]:
    """All member ids as one string array, and the class index of each."""
    arrays = [np.asarray(classes[k]).astype(str).reshape(-1) for k in keys]
    sizes = np.array([a.size for a in arrays], dtype=np.int64)
    ids = np.concatenate(arrays) if arrays else np.array([], dtype=str)
    return ids, np.repeat(np.arange(len(keys), dtype=np.int64), sizes)


def overlap_matrix(previous: Mapping, current: Mapping, prev_keys: list, cur_keys: list
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(overlap [P, C], sizes of P, sizes of C)``, vectorised: node ids become integers through
    one ``numpy.unique`` and the pair counts come from one ``bincount``."""
    p_ids, p_cls = _node_class_pairs(previous, prev_keys)
    c_ids, c_cls = _node_class_pairs(current, cur_keys)
    n_p, n_c = len(prev_keys), len(cur_keys)
    uniq, inverse = np.unique(np.concatenate([p_ids, c_ids]), return_inverse=True)
    p_node, c_node = inverse[:p_ids.size], inverse[p_ids.size:]
    for name, nodes in (("previous", p_node), ("current", c_node)):
        if np.unique(nodes).size != nodes.size:
            raise ValueError(f"a node belongs to more than one {name} class: classes must partition the nodes")
    prev_of = np.full(uniq.size, -1, dtype=np.int64)
    cur_of = np.full(uniq.size, -1, dtype=np.int64)
    prev_of[p_node] = p_cls
    cur_of[c_node] = c_cls
    both = (prev_of >= 0) & (cur_of >= 0)
    flat = np.bincount(prev_of[both] * n_c + cur_of[both], minlength=n_p * n_c)
    return (flat.reshape(n_p, n_c), np.bincount(p_cls, minlength=n_p),
            np.bincount(c_cls, minlength=n_c))


def mutual_continuations(ov: np.ndarray, p_novel: np.ndarray, c_novel: np.ndarray,
                         cont: np.ndarray, cont_of_prev: np.ndarray, share: float) -> None:
    """Step 1b (``LineageConfig.continue_mutual``), in place on ``cont`` / ``cont_of_prev``: a
    novel class ``C`` the Hungarian match left alone continues the unmatched previous novel class
    ``P`` when

    - ``P`` gave ``C`` more of its nodes than it gave any other current class, known ones
      included (``C`` is where most of ``P`` went),
    - ``C`` took more nodes from ``P`` than from any other previous class, and
    - those nodes are at least ``share`` of ``C``'s nodes the previous run held (tonight's new
      nodes left out: a class growing fast is not cut off from its past by them).

    A fast-growing novel class that also splits can fall under the Jaccard threshold with every
    part though one part is plainly its continuation (its old nodes nearly all came from it)."""
    is_novel = np.zeros(ov.shape[1], dtype=bool)
    is_novel[c_novel] = True
    held = ov.sum(axis=0)  # the current classes' nodes the previous run held (in any class)
    for i in p_novel:
        if cont_of_prev[i] >= 0 or ov[i].max() == 0:
            continue
        j = int(np.argmax(ov[i]))
        if not is_novel[j] or cont[j] >= 0 or int(np.argmax(ov[:, j])) != i:
            continue
        if ov[i, j] >= share * held[j]:
            cont[j], cont_of_prev[i] = i, j


def contained_continuations(share_p: np.ndarray, p_novel: np.ndarray, c_novel: np.ndarray,
                            cont: np.ndarray, cont_of_prev: np.ndarray, share: float) -> None:
    """Step 1c (``LineageConfig.continue_contained``), in place on ``cont`` / ``cont_of_prev``:
    a novel class ``C`` with no continuation continues the previous novel class ``P`` with
    none when

    - ``C`` took the largest share of ``P`` (``share_p``, previous x current: the share of each
      previous class that went to each current class, known ones included), at least
      ``share``, and
    - ``P`` is the only previous class, known or novel, whose largest share went to ``C`` at
      ``share`` or more (two such sources are a merge, step 2's).

    A young class grows several times over in a night: last night's candidate is then a small
    part of tonight's class, under the Jaccard threshold, though nearly all of it is there; the
    absorption step would need a second source, so without this tonight's class gets a new id
    and last night's candidate is dismissed."""
    if not (p_novel.size and c_novel.size):
        return
    is_novel = np.zeros(share_p.shape[1], dtype=bool)
    is_novel[c_novel] = True
    went_to: dict[int, list[int]] = {}
    for i in range(share_p.shape[0]):
        if cont_of_prev[i] < 0 and share_p[i].max() >= share:
            went_to.setdefault(int(np.argmax(share_p[i])), []).append(i)
    novel_before = set(p_novel.tolist())
    for j, sources in went_to.items():
        if len(sources) == 1 and is_novel[j] and cont[j] < 0 and sources[0] in novel_before:
            cont[j], cont_of_prev[sources[0]] = sources[0], j


def earliest_published(published: list[int], first: list, ov: np.ndarray, j: int) -> int:
    """Of last night's ``published`` classes (indices), the one current class ``j`` continues
    (steps 2b and 2c): first seen earliest (``first``; None: unknown, last), ties the larger
    overlap with ``j``, then the lower key."""
    return min(published, key=lambda p: (first[p] or dt.date.max, -int(ov[p, j]), p))


def published_continuations(was_candidate: np.ndarray, p_novel: np.ndarray, first: list,
                            ov: np.ndarray, cont: np.ndarray, cont_of_prev: np.ndarray,
                            absorbed_into: np.ndarray) -> None:
    """Step 2b (``LineageConfig.continue_published``), in place on ``cont`` / ``cont_of_prev`` /
    ``absorbed_into``: a current class ``C`` whose predecessor (step 1) was a ``candidate`` last
    night and which absorbs (step 2) one or more published novel classes (novel, not
    candidates) continues the published one first seen earliest (ties: the larger overlap with
    ``C``, then the lower key); its candidate predecessor is absorbed in its place. ``C`` still
    has the same sources, so it is ``merged`` as before, under the older id.

    A published class and a candidate grown beside it out of tonight's new nodes come together
    again: step 1 matches the larger, often the candidate, and the published id would end
    (``merged``) while a one-night candidate carries the class on. A candidate was never
    published, so its end is no event. ``was_candidate``: per previous class, its status was
    ``candidate``; ``first``: per previous class, its first-seen date (None: unknown, last)."""
    novel_before = set(p_novel.tolist())
    for j in range(cont.size):
        i = int(cont[j])
        if i < 0 or not was_candidate[i]:
            continue
        published = [int(p) for p in np.flatnonzero(absorbed_into == j)
                     if int(p) in novel_before and not was_candidate[p]]
        if not published:
            continue
        best = earliest_published(published, first, ov, j)
        cont[j], cont_of_prev[best], absorbed_into[best] = best, j, -1
        cont_of_prev[i], absorbed_into[i] = -1, j


def merged_continuations(was_candidate: np.ndarray, p_novel: np.ndarray, c_novel: np.ndarray,
                         first: list, ov: np.ndarray, cont: np.ndarray,
                         cont_of_prev: np.ndarray, absorbed_into: np.ndarray) -> None:
    """Step 2c (``LineageConfig.continue_merged``), in place on ``cont`` / ``cont_of_prev`` /
    ``absorbed_into``: a current novel class ``C`` with no continuation (step 1) that absorbs
    (step 2) one or more of last night's novel classes continues one of them: the published one
    (not a candidate) first seen earliest (ties: the larger overlap with ``C``, then the lower
    key), else the candidate that gave ``C`` the most nodes (ties: the lower key). The others
    stay absorbed into it; ``C`` still has the same sources, so it is ``merged``, under the kept
    id, and a candidate whose id goes on is confirmed (``emerged``).

    A young class often shows first in pieces: two candidates, each going mostly to tonight's
    class (step 2's share), come together as one. Without this, tonight's class takes a new id,
    a candidate again, and confirmation waits another night although the nodes of both went on
    together. ``was_candidate``: per previous class, its status was ``candidate``; ``first``:
    per previous class, its first-seen date (None: unknown, last)."""
    novel_before = set(p_novel.tolist())
    for j in c_novel.tolist():
        if cont[j] >= 0:
            continue
        absorbed = [int(p) for p in np.flatnonzero(absorbed_into == j) if int(p) in novel_before]
        if not absorbed:
            continue
        published = [p for p in absorbed if not was_candidate[p]]
        if published:
            best = earliest_published(published, first, ov, j)
        else:
            best = min(absorbed, key=lambda p: (-int(ov[p, j]), p))
        cont[j], cont_of_prev[best], absorbed_into[best] = best, j, -1


def seen_novel_keys(ov: np.ndarray, p_novel: np.ndarray, c_novel: np.ndarray,
                    cont: np.ndarray, cur_keys: list, share: float) -> set:
    """``LineageConfig.confirm_seen``: the keys of tonight's novel classes with no continuation
    (``cont`` -1: a new id tonight) at least ``share`` of whose nodes the previous run held were
    in the previous run's novel classes (``ov``, previous x current overlaps; a class of new
    nodes only is not seen)."""
    held = ov.sum(axis=0)
    novel_held = ov[p_novel].sum(axis=0) if p_novel.size else np.zeros_like(held)
    return {cur_keys[j] for j in c_novel.tolist()
            if cont[j] < 0 and held[j] > 0 and novel_held[j] >= share * held[j]}


def _size_status(size: int, before: int, tol: float) -> str:
    if size > before * (1.0 + tol):
        return "grown"
    if size < before * (1.0 - tol):
        return "shrunk"
    return "persisting"


def track_lineage(previous: PreviousClasses | None, current: Mapping[Hashable, Sequence], *,
                  graph: str, snapshot_date: dt.date | str,
                  current_names: Mapping[Hashable, str | None] | None = None,
                  max_novel_index: int = 0, config: LineageConfig | None = None,
                  publish_now: Collection = ()) -> LineageResult:
    """Lineage rows of tonight's classes given the previous run's (``None`` on a graph's first run).

    ``current``: class key -> member node ids; ``current_names``: class key -> known class name
    (None or absent: a novel class); ``publish_now``: keys of novel classes published the night
    they appear under confirmation whatever their size (a caller's own evidence, e.g. the
    replay's ``clean`` rule, ``benchmarks/results/publish_clean``). Returns the rows, the lineage
    id of every current class and the graph's new largest novel index. See the module docstring
    for the rules.
    """
    cfg = (config or LineageConfig()).validate()
    date = snapshot_date if isinstance(snapshot_date, dt.date) else dt.date.fromisoformat(str(snapshot_date))
    current_names = dict(current_names or {})
    cur_keys = sorted(current, key=_sort_key)
    prev = previous or PreviousClasses(members={}, lineage={})
    prev_keys = sorted(prev.members, key=_sort_key)
    missing = [k for k in prev_keys if k not in prev.lineage]
    if missing:
        raise ValueError(f"previous classes without a lineage id: {missing[:5]}")
    prev_date = prev.snapshot_date
    ov, p_size, c_size = overlap_matrix(prev.members, current, prev_keys, cur_keys)
    n_p, n_c = len(prev_keys), len(cur_keys)
    p_name = [prev.names.get(k) for k in prev_keys]
    c_name = [current_names.get(k) for k in cur_keys]
    p_lin = [prev.lineage[k] for k in prev_keys]
    p_first = [prev.first_seen.get(k, prev_date) for k in prev_keys]

    # 1. continuation: known classes by name, novel classes by Hungarian on Jaccard >= threshold
    cont = np.full(n_c, -1, dtype=np.int64)  # current -> previous index
    cont_of_prev = np.full(n_p, -1, dtype=np.int64)
    prev_known = {name: i for i, name in enumerate(p_name) if name is not None}
    for j, name in enumerate(c_name):
        if name is not None and name in prev_known:
            cont[j] = prev_known[name]
            cont_of_prev[prev_known[name]] = j
    p_novel = np.array([i for i in range(n_p) if p_name[i] is None], dtype=np.int64)
    c_novel = np.array([j for j in range(n_c) if c_name[j] is None], dtype=np.int64)
    # the sizes the overlap measures divide by: every member, or (match_on="shared") the
    # members the other run holds too (classes partition the nodes, so a row / column sum of
    # the overlap counts a class's nodes present in the other run)
    p_base, c_base = ((ov.sum(axis=1), ov.sum(axis=0)) if cfg.match_on == "shared"
                      else (p_size, c_size))
    union = p_base[:, None] + c_base[None, :] - ov
    jac = np.where(union > 0, ov / np.maximum(union, 1), 0.0)
    if p_novel.size and c_novel.size:
        sub = jac[np.ix_(p_novel, c_novel)]
        sub = np.where(sub >= cfg.threshold, sub, 0.0)
        rows, cols = linear_sum_assignment(sub, maximize=True)
        for r, c in zip(rows, cols):
            if sub[r, c] >= cfg.threshold:
                cont[c_novel[c]] = p_novel[r]
                cont_of_prev[p_novel[r]] = c_novel[c]
    if cfg.continue_mutual:
        mutual_continuations(ov, p_novel, c_novel, cont, cont_of_prev, cfg.share)
    share_p = ov / np.maximum(p_base, 1)[:, None]
    share_c = ov / np.maximum(c_base, 1)[None, :]
    if cfg.continue_contained:
        contained_continuations(share_p, p_novel, c_novel, cont, cont_of_prev, cfg.share)

    # 2. absorption of previous classes without continuation
    candidate = np.full(n_p, -1, dtype=np.int64)
    for i in range(n_p):
        if cont_of_prev[i] < 0 and n_c and share_p[i].max() >= cfg.share:
            candidate[i] = int(np.argmax(share_p[i]))  # first (lowest key) on ties
    sources = {j: ([int(cont[j])] if cont[j] >= 0 else []) + [i for i in range(n_p) if candidate[i] == j]
               for j in range(n_c)}
    absorbed_into = np.full(n_p, -1, dtype=np.int64)
    for i in range(n_p):
        j = candidate[i]
        if j >= 0 and len(sources[int(j)]) >= 2:
            absorbed_into[i] = j
    was_candidate = np.array([prev.statuses.get(k) == "candidate" for k in prev_keys],
                             dtype=bool)
    if cfg.continue_published:
        published_continuations(was_candidate, p_novel, p_first, ov, cont, cont_of_prev,
                                absorbed_into)
    if cfg.continue_merged:
        merged_continuations(was_candidate, p_novel, c_novel, p_first, ov, cont, cont_of_prev,
                             absorbed_into)

    # 3. splits: previous classes that two or more current classes each draw >= share from
    split_parent = np.full(n_c, -1, dtype=np.int64)
    is_split = np.zeros(n_p, dtype=bool)
    for i in range(n_p):
        parts = np.flatnonzero(share_c[i] >= cfg.share)
        if parts.size >= 2:
            is_split[i] = True
    for j in range(n_c):
        parents = np.flatnonzero(is_split & (share_c[:, j] >= cfg.share))
        if parents.size:
            split_parent[j] = parents[np.argmax(ov[parents, j])]

    # current classes
    next_n = int(max_novel_index)
    lineage_of: dict = {}
    rows: list[LineageRow] = []
    for j, key in enumerate(cur_keys):
        size, name, i = int(c_size[j]), c_name[j], int(cont[j])
        merged_from = [p for p in sources[j] if p == i or absorbed_into[p] == j]
        if name is not None:
            lin = known_lineage_id(name)
            status = _size_status(size, int(p_size[i]), cfg.size_tolerance) if i >= 0 else "emerged"
        elif len(merged_from) >= 2:
            status = "merged"
            lin = p_lin[i] if i >= 0 else None
        elif i >= 0:
            status, lin = _size_status(size, int(p_size[i]), cfg.size_tolerance), p_lin[i]
        elif split_parent[j] >= 0:
            status, lin = "split", None
        else:
            status, lin = "emerged", None
        if lin is None:
            next_n += 1
            lin = novel_lineage_id(graph, next_n)
        if status == "split":
            parents = [p_lin[split_parent[j]]]
        else:
            parents = [p_lin[p] for p in merged_from if p_lin[p] != lin]
        lineage_of[key] = lin
        rows.append(LineageRow(
            lineage_id=lin, class_key=key, status=status, size=size,
            previous_size=int(p_size[i]) if i >= 0 else None, parents=parents,
            first_seen=(p_first[i] or date) if i >= 0 else date, last_seen=date))

    # previous classes that do not go on
    for i, key in enumerate(prev_keys):
        if cont_of_prev[i] >= 0:
            continue
        merged_into = None
        if absorbed_into[i] >= 0:
            status, merged_into = "merged", lineage_of[cur_keys[absorbed_into[i]]]
        elif is_split[i]:
            status = "split"
        else:
            status = "vanished"
        rows.append(LineageRow(
            lineage_id=p_lin[i], class_key=None, status=status, size=0,
            previous_size=int(p_size[i]), parents=[], first_seen=p_first[i],
            last_seen=prev_date, merged_into=merged_into))
    if cfg.confirm_novel:
        candidate_ids = {p_lin[i] for i in np.flatnonzero(was_candidate)}
        publish_at = publish_size(c_size[[j for j in range(n_c) if c_name[j] is not None]],
                                  cfg.confirm_size)
        now = set(publish_now)
        if cfg.confirm_seen:
            now |= seen_novel_keys(ov, p_novel, c_novel, cont, cur_keys, cfg.share)
        rows = [confirmed(row, candidate_ids,
                          -math.inf if row.class_key is not None and row.class_key in now
                          else publish_at) for row in rows]
    return LineageResult(rows=rows, lineage_of=lineage_of, max_novel_index=next_n)


def publish_size(known_sizes: np.ndarray, share: float | None) -> float:
    """The size from which a new novel class is published the night it appears
    (``confirm_size`` times the median of ``known_sizes``, tonight's known classes' sizes); inf
    when ``share`` is None or there is no known class."""
    if share is None or len(known_sizes) == 0:
        return float("inf")
    return share * float(np.median(known_sizes))


def confirmed(row: LineageRow, was_candidate: set[str],
              publish_at: float = float("inf")) -> LineageRow:
    """``row`` under the confirmation rule (module docstring): a novel id's first night is
    ``candidate`` unless it holds ``publish_at`` nodes or more; a candidate that goes on is
    ``emerged``, one that ends ``dismissed``. Known classes and confirmed novel ones keep their
    status."""
    if row.lineage_id.startswith(KNOWN_PREFIX):
        return row
    if row.lineage_id in was_candidate:
        status = "emerged" if row.class_key is not None else "dismissed"
    elif row.class_key is not None and row.previous_size is None and row.size >= publish_at:
        return row  # large enough to be published the night it appears
    elif row.class_key is not None and row.previous_size is None:
        status = "candidate"  # a new id: emerged, a split part or a merge under a new id
    else:
        return row
    return dataclasses.replace(row, status=status)
