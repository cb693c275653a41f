"""Did a class emerge since the model a warm night continued? A check on labelled nodes only.

A warm night (``tasks.steps.plan_start``) continues the previous night's model for a few epochs
and keeps the classes it started with: nodes of a class that emerged meanwhile join the known
classes they resemble (measured: ``benchmarks/results/warm_start.md``). Their labels give that
away. Nodes of a novel class are never labelled, so a known class ``c`` that absorbed them holds
a smaller share of labelled nodes among tonight's *new* nodes than it holds among the nodes the
continued model already knew. Per known class:

* ``n`` members (nodes labelled ``c`` plus unlabelled nodes predicted ``c``) and ``L`` of them
  labelled, counted separately over old nodes (in the previous predictions) and new ones;
* the change of its labelled share from old to new nodes, as a log odds ratio, against the same
  change over the *other* known classes (so a graph whose new nodes are labelled later, for
  every class alike, does not fire the check, nor do classes labelled at different rates);
* a one-sided z test of the difference (Woolf's variance of each log odds ratio, every cell
  + 0.5): a class that absorbed unlabelled newcomers lost labelled share against the others.

The check fires when a class's p-value is below ``alpha`` divided by the number of classes tested
(Bonferroni) *and* its labelled share fell by at least ``min_drop`` of the expected one (on a
large graph a tiny drift is significant without meaning anything). Classes with fewer than
``min_old`` old or no new members are not tested. What it cannot see: a class that emerged
inside an already discovered novel class (no labels there), and new nodes that carry no labels
at all (then no class is tested, and the result says so).

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


@dataclass
class EmergenceCheck:
    """The check's outcome: ``fired``, a one-line ``reason`` and one row per known class
    (``class``, ``old_members``, ``old_labelled``, ``new_members``, ``new_labelled``,
    ``expected_share``, ``p_value``, ``drop``, ``unexplained`` new members)."""

    fired: bool
    reason: str
    rows: list[dict] = field(default_factory=list)


def labelled_share_check(labels, class_key, is_new, num_known: int, class_names=None,
                         alpha: float = ALPHA, min_drop: float = MIN_DROP,
                         min_old: int = MIN_OLD) -> EmergenceCheck:
    """The labelled-share test described in the module docstring.

    Args:
        labels: int ``[N]`` tonight's labels (``-1`` unlabelled, else a known class ``0..K-1``).
        class_key: int ``[N]`` tonight's predicted class per node (known ``0..K-1``, novel ``K..``).
        is_new: bool ``[N]`` whether the node was absent from the continued model's predictions.
        num_known: ``K``.
        class_names: names for the reason (default ``class <c>``).
    """
    from scipy.stats import norm

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
    if counts[1, 1].sum() == 0:
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
        change, var = _log_odds_change(l_old, n_old, l_new, n_new)
        others = np.arange(k) != c
        if others.any():
            rest, rest_var = _log_odds_change(*(int(counts[a, b, others].sum())
                                                for a, b in ((0, 1), (0, 0), (1, 1), (1, 0))))
        else:
            rest, rest_var = 0.0, 0.0
        z = (change - rest) / np.sqrt(var + rest_var)
        old_odds = (l_old + 0.5) / (n_old - l_old + 0.5)
        expected = float(old_odds * np.exp(rest) / (1.0 + old_odds * np.exp(rest)))
        row["expected_share"] = round(expected, 4)
        row["p_value"] = float(norm.cdf(z))
        row["drop"] = round(float(1.0 - (l_new / n_new) / expected), 4)
        row["unexplained"] = round(float(max(0.0, n_new - l_new / expected)), 1)
        tested.append(row)
    if not tested:
        return EmergenceCheck(False, "no known class has enough old and new members to test",
                              rows)
    level = alpha / len(tested)
    hits = sorted((r for r in tested if r["p_value"] < level and r["drop"] >= min_drop),
                  key=lambda r: r["p_value"])
    if not hits:
        worst = min(tested, key=lambda r: r["p_value"])
        return EmergenceCheck(False, f"no sign of an emerging class (lowest p {worst['p_value']:.2g}"
                                     f" for {worst['class']}, level {level:.2g})", rows)
    top = hits[0]
    more = f" (and {len(hits) - 1} more class(es))" if len(hits) > 1 else ""
    return EmergenceCheck(True, (
        f"a class may have emerged: {top['class']} took {top['new_members']} new nodes of which "
        f"{top['new_labelled']} are labelled, {top['expected_share']:.0%} expected "
        f"(p {top['p_value']:.2g} < {level:.2g}; ~{top['unexplained']:.0f} nodes its labels do "
        f"not explain){more}"), rows)


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
                num_known: int, alpha: float = ALPHA) -> EmergenceCheck:
    """:func:`labelled_share_check` of a trained night: tonight's ``predictions.parquet``
    against the predictions of the model it continued (``previous_predictions_path``)."""
    import pyarrow.parquet as pq

    if previous_predictions_path is None or not Path(previous_predictions_path).is_file():
        return EmergenceCheck(False, "the continued model's predictions are not available: no "
                                     "emergence check")
    class_key = pq.read_table(predictions_path, columns=["class_key"]).column("class_key")
    class_key = np.asarray(class_key.fill_null(-1).to_numpy(), dtype=np.int64)
    is_new = new_node_mask(snapshot.node_ids, previous_predictions_path)
    return labelled_share_check(snapshot.labels, class_key, is_new, num_known,
                                snapshot.class_names, alpha=alpha)
