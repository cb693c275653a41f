"""Did a class emerge since the model a warm night continued? A check on labelled nodes only.

A warm night (``tasks.start_plan.plan_start``) continues the previous night's model for a few epochs
and keeps the classes it started with: nodes of a class that emerged meanwhile join the known
classes they resemble (measured: ``benchmarks/results/warm_start/warm_start.md``). Their labels give that
away: nodes of a novel class are never labelled, so the known classes that absorbed them hold a
smaller share of labelled nodes among tonight's *new* nodes (absent from the continued model's
predictions) than they should. Members of a known class: nodes labelled with it plus unlabelled
nodes predicted in it. Two one-sided tests, each a z test on a log odds ratio of being labelled
(Woolf's variance, every cell + 0.5), each at half of ``alpha`` (all of it when only one runs):

* **pooled, against earlier nights** (``history``): the labelled share of tonight's new
  known-class members against the same share of the new nodes of up to ``HISTORY_NIGHTS``
  earlier nights, counted each night with that night's final model. Sees absorption spread over
  many classes; a graph whose new nodes are labelled later than old ones does not fire it as
  long as that lag is steady from night to night. Skipped without history (the first warm
  night after warm starts were turned on).
* **per class, against the other classes** (no history needed): the change of a class's
  labelled share from old to new nodes against the same change over the other known classes
  (so neither a lag common to all classes nor classes labelled at different rates fire it),
  Bonferroni over the classes tested. Sees absorption concentrated in few classes.

A test fires when its p-value is below its level *and* the labelled share fell by at least
``min_drop`` of the expected one (on a large graph a tiny drift is significant without meaning
anything). Classes with fewer than ``min_old`` old or no new members are not tested. What the
check cannot see: a class that emerged inside an already discovered novel class (no labels
there), and new nodes that carry no labels at all (then nothing is tested, and it says so).

Not part of the paper: product logic that decides whether a warm night's result stands or the
night is trained again from scratch (``flows.nightly``, ``ORAL_EMERGENCE_ALPHA``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: a priori level of the one-sided test, before the Bonferroni division (``ORAL_EMERGENCE_ALPHA``)
ALPHA = 0.01
#: the least relative drop of the labelled share that counts (20%: a fifth of the class's new
#: members are not explained by its labels)
MIN_DROP = 0.2
#: the fewest old members a class needs for its labelled share to be estimated
MIN_OLD = 10
#: earlier nights whose new nodes form the pooled test's reference
HISTORY_NIGHTS = 7


@dataclass
class EmergenceCheck:
    """The check's outcome: ``fired``, a one-line ``reason`` and one row per known class
    (``class``, ``old_members``, ``old_labelled``, ``new_members``, ``new_labelled``,
    ``expected_share``, ``p_value``, ``drop``, ``unexplained`` new members)."""

    fired: bool
    reason: str
    rows: list[dict] = field(default_factory=list)
    #: tonight's new known-class members and how many of them are labelled (for the history;
    #: filled in by :func:`check_night`)
    new_labelled: int = 0
    new_members: int = 0


def new_member_counts(labels, class_key, is_new, num_known: int) -> tuple[int, int]:
    """``(labelled, members)`` of the known classes among the new nodes: what one night adds to
    the pooled test's history."""
    labels, class_key, is_new = (np.asarray(labels), np.asarray(class_key),
                                 np.asarray(is_new, dtype=bool))
    member = np.where(labels >= 0, labels, class_key)
    inside = is_new & (member >= 0) & (member < num_known)
    return int((inside & (labels >= 0)).sum()), int(inside.sum())


def parse_history(text: str | None) -> list[tuple[int, int]]:
    """``"l/n,l/n"`` (an MLflow tag) as ``[(l, n), ...]``; anything unreadable as no history."""
    out = []
    for part in (text or "").split(","):
        try:
            l, n = (int(v) for v in part.split("/"))
        except ValueError:
            return []
        if not 0 <= l <= n:
            return []
        out.append((l, n))
    return out


def format_history(history: list[tuple[int, int]]) -> str:
    """The last ``HISTORY_NIGHTS`` entries as ``"l/n,l/n"``."""
    return ",".join(f"{l}/{n}" for l, n in history[-HISTORY_NIGHTS:])


def labelled_share_check(labels, class_key, is_new, num_known: int, class_names=None,
                         alpha: float = ALPHA, min_drop: float = MIN_DROP,
                         min_old: int = MIN_OLD, history=None) -> EmergenceCheck:
    """The labelled-share test described in the module docstring.

    Args:
        labels: int ``[N]`` tonight's labels (``-1`` unlabelled, else a known class ``0..K-1``).
        class_key: int ``[N]`` tonight's predicted class per node (known ``0..K-1``, novel ``K..``).
        is_new: bool ``[N]`` whether the node was absent from the continued model's predictions.
        num_known: ``K``.
        class_names: names for the reason (default ``class <c>``).
        history: ``[(labelled, members), ...]`` of earlier nights' new nodes
            (:func:`new_member_counts`; the last ``HISTORY_NIGHTS`` count).
    """
    labels = np.asarray(labels, dtype=np.int64)
    class_key = np.asarray(class_key, dtype=np.int64)
    is_new = np.asarray(is_new, dtype=bool)
    if not (labels.shape == class_key.shape == is_new.shape):
        raise ValueError(f"labels, class_key and is_new differ in length ({labels.shape[0]}, "
                         f"{class_key.shape[0]}, {is_new.shape[0]})")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
    if alpha == 0.0:
        return EmergenceCheck(False, "the emergence check is off (alpha 0)")
    if not is_new.any():
        return EmergenceCheck(False, "no new nodes since the continued model")
    labelled = labels >= 0
    member = np.where(labelled, labels, class_key)  # a labelled node counts in its label's class
    k = int(num_known)
    counts = np.zeros((2, 2, k), dtype=np.int64)  # [old/new, members/labelled, class]
    for age, mask in ((0, ~is_new), (1, is_new)):
        inside = mask & (member >= 0) & (member < k)
        counts[age, 0] = np.bincount(member[inside], minlength=k)[:k]
        counts[age, 1] = np.bincount(member[inside & labelled], minlength=k)[:k]
    new_l, new_n = int(counts[1, 1].sum()), int(counts[1, 0].sum())
    if new_l == 0:
        return EmergenceCheck(False, "no new node is labelled: the check cannot see an emerging "
                                     "class tonight")
    names = list(class_names) if class_names is not None else [f"class {c}" for c in range(k)]
    rows, tested = [], []
    for c in range(k):
        n_old, l_old, n_new, l_new = (int(counts[0, 0, c]), int(counts[0, 1, c]),
                                      int(counts[1, 0, c]), int(counts[1, 1, c]))
        row = {"class": names[c], "old_members": n_old, "old_labelled": l_old,
               "new_members": n_new, "new_labelled": l_new, "expected_share": None,
               "p_value": None, "drop": None, "unexplained": None}
        rows.append(row)
        if n_old < min_old or l_old == 0 or n_new == 0:
            continue
        # the change of the labelled share's log odds from old to new nodes, this class against
        # the other known classes (their change is what tonight's labelling does to every class)
        others = np.arange(k) != c
        rest = (_log_odds_change(*(int(counts[a, b, others].sum())
                                   for a, b in ((0, 1), (0, 0), (1, 1), (1, 0))))
                if others.any() else (0.0, 0.0))
        _test(row, (l_old, n_old), (l_new, n_new), rest)
        tested.append(row)
    ref_l, ref_n = (sum(v) for v in zip(*history[-HISTORY_NIGHTS:])) if history else (0, 0)
    pooled = None
    if ref_n >= min_old and ref_l > 0:
        pooled = {"class": f"all known classes (against the new nodes of {min(len(history), HISTORY_NIGHTS)} "
                           "earlier nights)", "old_members": ref_n, "old_labelled": ref_l,
                  "new_members": new_n, "new_labelled": new_l}
        _test(pooled, (ref_l, ref_n), (new_l, new_n), (0.0, 0.0))
        rows.append(pooled)
    if not tested and pooled is None:
        return EmergenceCheck(False, "no known class has enough old and new members to test",
                              rows)
    share = alpha / 2 if tested and pooled is not None else alpha
    levels = [(pooled, share)] if pooled is not None else []
    levels += [(r, share / len(tested)) for r in tested]
    hits = sorted(((r, lv) for r, lv in levels if r["p_value"] < lv and r["drop"] >= min_drop),
                  key=lambda h: h[0]["p_value"] / h[1])
    if not hits:
        worst, level = min(levels, key=lambda h: h[0]["p_value"] / h[1])
        return EmergenceCheck(False, f"no sign of an emerging class (lowest p {worst['p_value']:.2g}"
                                     f" for {worst['class']}, level {level:.2g})", rows)
    top, level = hits[0]
    more = f" (and {len(hits) - 1} more test(s))" if len(hits) > 1 else ""
    return EmergenceCheck(True, (
        f"a class may have emerged: {top['class']}: {top['new_labelled']} of "
        f"{top['new_members']} new members labelled, {top['expected_share']:.0%} expected "
        f"(p {top['p_value']:.2g} < {level:.2g}; ~{top['unexplained']:.0f} nodes the labels do "
        f"not explain){more}"), rows)


def _test(row: dict, before: tuple[int, int], tonight: tuple[int, int],
          rest: tuple[float, float]) -> None:
    """One one-sided z test into ``row``: did the log odds of being labelled fall from
    ``before`` to ``tonight`` (each ``(labelled, members)``) by more than ``rest`` (the change
    seen elsewhere and its variance)? Adds ``expected_share``, ``p_value``, ``drop`` and
    ``unexplained`` (members tonight that the expected share leaves without labels)."""
    from scipy.stats import norm

    change, var = _log_odds_change(*before, *tonight)
    z = (change - rest[0]) / np.sqrt(var + rest[1])
    odds = (before[0] + 0.5) / (before[1] - before[0] + 0.5) * np.exp(rest[0])
    expected = float(odds / (1.0 + odds))
    l_new, n_new = tonight
    row["expected_share"] = round(expected, 4)
    row["p_value"] = float(norm.cdf(z))
    row["drop"] = round(float(1.0 - (l_new / n_new) / expected), 4)
    row["unexplained"] = round(float(max(0.0, n_new - l_new / expected)), 1)


def _log_odds_change(l_old: int, n_old: int, l_new: int, n_new: int) -> tuple[float, float]:
    """The log odds ratio of being labelled, new nodes against old (each cell + 0.5, Haldane),
    and its variance (Woolf): the sum of the four cells' reciprocals."""
    cells = np.array([l_new, n_new - l_new, l_old, n_old - l_old], dtype=float) + 0.5
    return float(np.log(cells[0] / cells[1]) - np.log(cells[2] / cells[3])), float((1 / cells).sum())


def new_node_mask(node_ids, predictions_path: str | Path) -> np.ndarray:
    """Bool ``[N]``: which of tonight's nodes (``node_ids``, Arrow or array-like) the previous
    predictions file does not hold (matched by node id, never by position)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ids = node_ids if isinstance(node_ids, (pa.Array, pa.ChunkedArray)) else pa.array(node_ids)
    prev = pq.read_table(predictions_path, columns=["node_id"]).column("node_id")
    if prev.type != ids.type:
        ids, prev = pc.cast(ids, pa.string()), pc.cast(prev, pa.string())
    return ~np.asarray(pc.is_in(ids, value_set=prev.combine_chunks()).to_numpy(
        zero_copy_only=False), dtype=bool)


def check_night(snapshot, predictions_path: str | Path, previous_predictions_path,
                num_known: int, alpha: float = ALPHA, history=None) -> EmergenceCheck:
    """:func:`labelled_share_check` of a trained night: tonight's ``predictions.parquet``
    against the predictions of the previous model (``previous_predictions_path``, the one a
    warm night continued). ``alpha`` 0 runs no test but still counts tonight's new known-class
    members (``new_labelled``, ``new_members``: tonight's entry for the history)."""
    import pyarrow.parquet as pq

    if previous_predictions_path is None or not Path(previous_predictions_path).is_file():
        return EmergenceCheck(False, "the previous model's predictions are not available: no "
                                     "emergence check")
    class_key = pq.read_table(predictions_path, columns=["class_key"]).column("class_key")
    class_key = np.asarray(class_key.fill_null(-1).to_numpy(), dtype=np.int64)
    is_new = new_node_mask(snapshot.node_ids, previous_predictions_path)
    out = labelled_share_check(snapshot.labels, class_key, is_new, num_known,
                               snapshot.class_names, alpha=alpha, history=history)
    out.new_labelled, out.new_members = new_member_counts(snapshot.labels, class_key, is_new,
                                                          num_known)
    return out
