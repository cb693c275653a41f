"""The night's answer per class, judged on labelled nodes only (issue 60, items 2-3).

    OMP_NUM_THREADS=1 python -m benchmarks.answer_proxy --loops STATE [--graphs cora,synthetic15]
        [--sims 0,1] [--nights 4,8] [--seeds 0] [--out DIR] [--report-only]
        [--set KEY=VALUE ...] [--seed-offset N] [--keep DIR]

One ORAL fit per (snapshot, seed, task) at the nightly pipeline's defaults (with ``--set``: an
ORAL setting changed; with ``--seed-offset``: the fit's seed moved, the task kept), and every answer
built from that same fit (:mod:`oral_core.answer`), so the answers are paired:

- ``oral``: ORAL's own answer (the paper's partition, the pipeline's known head included);
- ``per_class``: the known classes named by the best of ORAL, the reference logistic regression
  and the known-class GCN on the validation nodes ORAL names known (``ORAL_NIGHT_ANSWER=per_class``);
- ``per_class+split``: that, and each novel class of the answer judged by the known-split check
  on its own validation nodes (``known_split_share``): one the check calls known is dropped, its
  nodes named by the chosen classifier;
- ``per_class+paired``: the nightly pipeline's answer until 2026-12-04:
  another classifier replaces ORAL's naming only beyond chance;
- ``per_class+paired+energy``: that, and the novelty check (``+energy``,
  :func:`oral_core.answer.novelty_checked`): a node of a novel group whose propagated energy
  is at or below ``ENERGY_QUANTILE`` of the validation nodes' is named a known class;
- ``per_class+paired+rejected``: the pipeline's answer on 2026-12-04, that with the rejected
  nodes grouped
  (``+rejected``, :func:`oral_core.answer.rejected_nodes_grouped`): nodes named known that the
  known classes reject, among rejected neighbours, join a novel class or form one;
- ``per_class+paired+returned+rejected``: that with novel nodes returned first (``+returned``,
  :func:`oral_core.answer.returned_to_known`): a node of a novel group that looks known, among
  neighbours named known, is named a known class;
- ``per_class+paired+split+rejected``: the pipeline's answer since 2026-12-04, the split check first
  (``+split``, :func:`oral_core.answer.split_answer`): a novel class of the paired answer that
  holds validation nodes as known classes do is dropped, its nodes named known;
- ``per_class+paired+carve+split+rejected``: that with the novel classes carved first
  (``+carve``, :func:`oral_core.answer.carved_answer`): each novel class cut in parts on
  ``S^2 X``, the parts holding validation nodes as known classes do named known;
- ``per_class+paired+carvetest+split+rejected``: that carve with what a class keeps tested too
  (``+carvetest``, ``carved_answer(alpha=...)``, :func:`oral_core.answer.fewer_than_known`): it
  stays novel only when it holds significantly fewer validation nodes than a known slice of its
  size would;
- ``per_class+paired+split+rejected+regroup``: the pipeline's answer with each novel class cut
  last on ``S^2 X`` into the most parts (up to 4) whose cut is reproducible between random halves
  of its nodes (``+regroup``, :func:`oral_core.recut.regrouped_answer`: Tibshirani & Walther's
  prediction strength >= 0.8);
- ``per_class+paired+split+rejected+regroupknown``: that regroup with each cut also more
  reproducible than every known class's own cut into as many parts (``+regroupknown``,
  ``regrouped_answer(known_bar=True)``, :func:`oral_core.recut.known_yardstick`);
- ``per_class+paired+split+rejected+regroupcal``: that regroup only where the cut, tried on the
  labelled nodes of the known classes first, tells them apart (``+regroupcal``,
  :func:`oral_core.recut.cut_calibration`, :func:`oral_core.recut.cut_tells_classes_apart`).

Three proxies, read on labelled nodes only (``--tasks``):

- the held-out-class proxy (``harness.proxy.task_from_labels``, ``hide="extremes"``: the known
  classes with the most and the fewest labelled nodes play two novel classes) with disjoint
  validation halves: the fit and every choice read one half of the visible classes' validation
  nodes, the other half is scored with the stand-ins' labelled nodes (All / Known / Novel,
  Eq. 14) and the stand-ins *surface* when a novel class holds >= 50% of one at >= 70% precision;
- the no-novel proxy (``harness.proxy.no_novel_task``): novel classes invented where nothing is
  new, and the accuracy on the stand-in unlabelled nodes;
- the witness proxy (``--tasks witness``, :func:`witness_row`): the night's full graph, no class
  hidden, half of the validation nodes held back; unlabelled to the fit and to every answer
  step, they fall where the night's unlabelled known nodes fall, so the answer's accuracy on
  them is the known-node cost of its steps (with the share of unlabelled nodes it calls novel,
  label-free; and, where the snapshots tell arrivals, the cost on the held-back nodes that
  arrived recently, among which a young class's burst lands).

Loops missing under ``--loops`` are simulated first (the nightly loop's seeded simulation).
One JSON line per fit in ``fits.jsonl`` (resumable); ``README.md`` keeps the question and the
rule, ``table.md`` the table.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from benchmarks.records import append_jsonl, fit_name, kept_fit, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "answer_proxy"
ANSWERS = ("oral", "per_class", "per_class+split", "per_class+paired", "per_class+paired+energy",
           "per_class+paired+rejected", "per_class+paired+returned+rejected",
           "per_class+paired+split+rejected", "per_class+paired+carve+split+rejected",
           "per_class+paired+carvetest+split+rejected", "per_class+paired+split+rejected+regroup",
           "per_class+paired+split+rejected+regroupknown",
           "per_class+paired+split+rejected+regroupcal")
#: the quantiles the dropped classes' rejected nodes are regained at (``+regain``,
#: :func:`oral_core.answer.regained_nodes`; exploration)
REGAIN_QUANTILES = (0.5, 0.7, 0.8, 0.9)
#: looser quantiles of the rejected grouping after the split check (exploration)
LOOSER_REJECTED = (0.85, 0.9)
#: the mixed novel classes purified before the split check (``+purify``,
#: :func:`oral_core.answer.purified_answer`; exploration): (estimated known share, quantile)
PURIFY_SETTINGS = ((0.2, 0.8), (0.3, 0.8), (0.2, 0.9), (0.3, 0.9))
ANSWERS += tuple(f"per_class+paired+split+rejected+regain{q:g}+regroupcal"
                 for q in REGAIN_QUANTILES) + tuple(
    f"per_class+paired+split+rejected{q:g}+regroupcal" for q in LOOSER_REJECTED) + tuple(
    f"per_class+paired+purify{s:g}@{q:g}+split+rejected+regroupcal" for s, q in PURIFY_SETTINGS)
#: the pipeline's answer with the young classes' bursts first (``+burst``,
#: :func:`oral_core.answer.burst_classes`; needs the snapshots before the night: without them it
#: is the pipeline's answer, as the pipeline skips the step)
BURST = "per_class+paired+burst+split+rejected+regroupcal"
#: that with the bursts in one class taken together and those in a novel class joining it
#: (``+burstjoin``)
BURST_JOIN = "per_class+paired+burstjoin+split+rejected+regroupcal"
#: that joining form with a burst joining a novel class only when the class is young
#: (``+burstyoung``, :func:`oral_core.answer.young_class`)
BURST_YOUNG = "per_class+paired+burstyoung+split+rejected+regroupcal"
#: that young-joining form with the classes the bursts went into grown over the recent nodes
#: around them (``+burstgrow``, :func:`oral_core.answer.burst_grown`)
BURST_GROW = "per_class+paired+burstgrow+split+rejected+regroupcal"
#: that growing form with a node joining only where the class's recent members outnumber its
#: neighbours in the class it has (``+burstgrowmost``, :func:`oral_core.answer.burst_grown`)
BURST_GROW_MOST = "per_class+paired+burstgrowmost+split+rejected+regroupcal"
#: that bounded growth never moving a node of a novel class into another class the answer
#: already had, by a joining burst or the growth (``+burstgrowkeep``,
#: :func:`oral_core.answer.claimable`)
BURST_GROW_KEEP = "per_class+paired+burstgrowkeep+split+rejected+regroupcal"
#: the default answer with the split check also run on the model's own classes, before the
#: burst moves any node (``+splitfirst``, ``decide_answer(split_first=True)``)
SPLIT_FIRST = "per_class+paired+burstgrowmost+split+splitfirst+rejected+regroupcal"
#: the default answer with no burst joining a class whose other nodes the split check calls
#: known (``+burstsplit``, ``decide_answer(burst_split=True)``)
BURST_SPLIT = "per_class+paired+burstgrowmost+burstsplit+split+rejected+regroupcal"
#: the default answer with each novel class the split check keeps judged again in two parts by
#: arrival (``+agesplit``, ``decide_answer(age_split=True)``)
AGE_SPLIT = "per_class+paired+burstgrowmost+burstsplit+split+agesplit+rejected+regroupcal"
ANSWERS += (BURST, BURST_JOIN, BURST_YOUNG, BURST_GROW, BURST_GROW_MOST, BURST_GROW_KEEP,
            SPLIT_FIRST, BURST_SPLIT, AGE_SPLIT)
#: the default answer with each novel class the split check keeps judged again on its part the
#: night before's answer named known (``+lastsplit``, ``decide_answer(known_last=...)``; read
#: with ``--only lastsplit`` alone: the night before is fitted on the same task,
#: :func:`benchmarks.last_night.known_last`)
LAST_SPLIT = "per_class+paired+burstgrowmost+burstsplit+split+lastsplit+rejected+regroupcal"
#: the default answer with the regroup's calibration read as odds: on nights where the cut
#: tells pairs of labelled known classes apart more often than it divides one of them
#: (``+regroupodds``, ``decide_answer(regroup_odds=True)``)
REGROUP_ODDS = "per_class+paired+burstgrowmost+burstsplit+split+rejected+regroupodds"
#: the burst forms (and the split-first answer) by the part that names them (``--only``; the
#: young-class rows' names)
BURST_FORMS = {"burst": BURST, "burstjoin": BURST_JOIN, "burstyoung": BURST_YOUNG,
               "burstgrow": BURST_GROW, "burstgrowmost": BURST_GROW_MOST,
               "burstgrowkeep": BURST_GROW_KEEP, "splitfirst": SPLIT_FIRST,
               "burstsplit": BURST_SPLIT, "agesplit": AGE_SPLIT, "lastsplit": LAST_SPLIT,
               "regroupodds": REGROUP_ODDS}
#: what a form's row counts as the nodes it moved (absent: the burst's, ``burst``; for
#: ``regroupodds`` the new classes the regroup made)
FORM_MOVED = {"agesplit": "aged", "lastsplit": "last", "regroupodds": "regrouped"}
#: what ``paired All`` is measured against in the table, per answer (absent: ``per_class``)
BASE = {"per_class+paired+energy": "per_class+paired",
        "per_class+paired+rejected": "per_class+paired",
        "per_class+paired+returned+rejected": "per_class+paired+rejected",
        "per_class+paired+split+rejected": "per_class+paired+rejected",
        "per_class+paired+carve+split+rejected": "per_class+paired+split+rejected",
        "per_class+paired+carvetest+split+rejected": "per_class+paired+split+rejected",
        "per_class+paired+split+rejected+regroup": "per_class+paired+split+rejected",
        "per_class+paired+split+rejected+regroupknown": "per_class+paired+split+rejected",
        "per_class+paired+split+rejected+regroupcal": "per_class+paired+split+rejected",
        BURST: "per_class+paired+split+rejected+regroupcal",
        BURST_JOIN: "per_class+paired+split+rejected+regroupcal",
        BURST_YOUNG: "per_class+paired+split+rejected+regroupcal",
        BURST_GROW: "per_class+paired+split+rejected+regroupcal",
        BURST_GROW_MOST: "per_class+paired+split+rejected+regroupcal",
        BURST_GROW_KEEP: BURST_GROW_MOST, SPLIT_FIRST: BURST_GROW_MOST, AGE_SPLIT: BURST_SPLIT,
        LAST_SPLIT: BURST_SPLIT}


def answers(class_id, x, edges, train, val, unlabelled, num_known: int, config,
            recent=None) -> dict:
    """``{answer name: class id per node}`` (:data:`ANSWERS`) from one fit's ``class_id``
    (:func:`oral_core.answer.decide_answer`: the known-class classifiers fitted on ``train`` and
    chosen on ``val``; the split check, :func:`oral_core.answer.split_answer`), with the chosen ``namer``,
    the novel classes ``dropped``, and the novelty check's ``scorer`` and ``moved`` nodes.
    ``recent`` (bool per node: arrived within the last ``BURST_WINDOW`` snapshots) feeds
    :data:`BURST` (``burst``: the nodes its step moved)."""
    import torch

    from oral_core.answer import (CARVE_ALPHA, CARVE_SHARE, ENERGY_QUANTILE, PAIRED_ALPHA, REJECTED_QUANTILE,
                                  RETURNED_QUANTILE, answer_view, best_known_namer,
                                  carved_answer, decide_answer, known_validation_nodes,
                                  per_class_answer, purified_answer, regained_nodes,
                                  rejected_nodes_grouped,
                                  returned_to_known, split_answer)
    from oral_core.recut import cut_calibration, cut_tells_classes_apart, regrouped_answer

    share = config.known_split_share if config.known_split_share is not None else 0.5
    # the classifiers are fitted once; each answer is their choice under its own rule
    checked = decide_answer(class_id, x, edges, train, val, num_known,
                            scale=config.known_head_scale, seed=config.seed,
                            paired_alpha=PAIRED_ALPHA, novelty_quantile=ENERGY_QUANTILE)
    candidates = checked["candidates"]
    namer = best_known_namer(candidates, val, known_validation_nodes(class_id, val, num_known))
    per_class = per_class_answer(class_id, candidates[namer], num_known)
    split, dropped = split_answer({"answer": per_class, "candidates": candidates, "namer": namer},
                                  val, unlabelled, num_known, share)
    paired = per_class_answer(class_id, candidates[checked["namer"]], num_known)
    # the grouping on the paired answer, from the energy the check read (no second fit)
    # the paired answer split-checked: its novel classes the check calls known dropped
    checked_split, _ = split_answer({"answer": paired, "candidates": candidates,
                                     "namer": checked["namer"]}, val, unlabelled, num_known,
                                    share)
    # the paired answer carved (its rest judged by the share, or tested too), then split-checked
    view, carved_split = answer_view(x, edges), {}
    for name, alpha in (("carve", None), ("carvetest", CARVE_ALPHA)):
        carved, _ = carved_answer({"answer": paired, "candidates": candidates,
                                   "namer": checked["namer"]}, view, val, unlabelled,
                                  num_known, CARVE_SHARE, alpha=alpha)
        carved_split[name], _ = split_answer({"answer": carved, "candidates": candidates,
                                              "namer": checked["namer"]}, val, unlabelled,
                                             num_known, share)
    grouped, rejected, back, returned, both = paired, 0, paired, 0, paired
    split_grouped, carve_grouped = checked_split, dict(carved_split)
    if "energy" in checked:
        energy, scorer = checked["energy"], candidates[checked["scorer"]]
        grouped, rejected = rejected_nodes_grouped(paired, energy, x, edges, train, val,
                                                   num_known, REJECTED_QUANTILE)
        back, returned = returned_to_known(paired, scorer, energy, x, edges, val, num_known,
                                           RETURNED_QUANTILE)
        both, _ = rejected_nodes_grouped(back, energy, x, edges, train, val, num_known,
                                         REJECTED_QUANTILE)
        split_grouped, _ = rejected_nodes_grouped(checked_split, energy, x, edges, train, val,
                                                  num_known, REJECTED_QUANTILE)
        for name, carved in carved_split.items():
            carve_grouped[name], _ = rejected_nodes_grouped(carved, energy, x, edges, train, val,
                                                            num_known, REJECTED_QUANTILE)
    # the pipeline's answer with its novel classes regrouped where the cut is reproducible
    regrouped, made = regrouped_answer(split_grouped, view, num_known, seed=config.seed)
    # and only where the cut is more reproducible than the known classes' own (+regroupknown)
    barred, made_barred = regrouped_answer(split_grouped, view, num_known, seed=config.seed,
                                           known_bar=True)
    # and only where the cut tells the labelled known classes apart (+regroupcal; read only
    # when there is a novel class to cut, as the pipeline reads it)
    read = {}

    def calibrated_cut(answer) -> bool:  # the calibration, read once, when a novel class is there
        if not bool((answer >= num_known).any()):
            return False
        if "calibration" not in read:
            read["calibration"] = cut_calibration(view, torch.where(train >= 0, train, val),
                                                  num_known, seed=config.seed)
        return cut_tells_classes_apart(read["calibration"])

    tells = calibrated_cut(split_grouped)
    calibration = read.get("calibration")
    calibrated = regrouped if tells else split_grouped
    # the dropped classes' rejected nodes regained at looser quantiles (+regain, exploration),
    # then the calibrated regroup as the pipeline's answer has it
    regained = {}
    dropped_from = (paired >= num_known) & (checked_split < num_known)
    for q in REGAIN_QUANTILES:
        got = split_grouped
        if "energy" in checked:
            got, _ = regained_nodes(split_grouped, dropped_from, checked["energy"], x, edges,
                                    train, val, num_known, q, view=lambda: view)
        if calibrated_cut(got):
            got, _ = regrouped_answer(got, view, num_known, seed=config.seed)
        regained[f"per_class+paired+split+rejected+regain{q:g}+regroupcal"] = got
    # the mixed novel classes purified first, then split-checked, grouped and regrouped as
    # the pipeline's answer is (+purify, exploration)
    for share_, q in PURIFY_SETTINGS:
        got = checked_split
        if "energy" in checked:
            scorer = candidates[checked["scorer"]]
            pure, _ = purified_answer(paired, scorer, checked["energy"], val, unlabelled,
                                      num_known, share_, q)
            pure, _ = split_answer({"answer": pure, "candidates": candidates,
                                    "namer": checked["namer"]}, val, unlabelled, num_known,
                                   share)
            got, _ = rejected_nodes_grouped(pure, checked["energy"], x, edges, train, val,
                                            num_known, REJECTED_QUANTILE, view=lambda: view)
        if calibrated_cut(got):
            got, _ = regrouped_answer(got, view, num_known, seed=config.seed)
        regained[f"per_class+paired+purify{share_:g}@{q:g}+split+rejected+regroupcal"] = got
    # the rejected grouping at looser quantiles after the split check (exploration)
    for q in LOOSER_REJECTED:
        got = checked_split
        if "energy" in checked:
            got, _ = rejected_nodes_grouped(checked_split, checked["energy"], x, edges, train,
                                            val, num_known, q, view=lambda: view)
        if calibrated_cut(got):
            got, _ = regrouped_answer(got, view, num_known, seed=config.seed)
        regained[f"per_class+paired+split+rejected{q:g}+regroupcal"] = got
    regained |= burst_answer(class_id, x, edges, train, val, num_known, config, share, recent,
                             calibrated)
    return {"oral": class_id, "per_class": per_class, "per_class+split": split,
            "per_class+paired": paired, "per_class+paired+energy": checked["answer"],
            "per_class+paired+rejected": grouped, "rejected": rejected,
            "per_class+paired+returned+rejected": both, "returned": returned,
            "per_class+paired+split+rejected": split_grouped,
            "per_class+paired+carve+split+rejected": carve_grouped["carve"],
            "per_class+paired+carvetest+split+rejected": carve_grouped["carvetest"],
            "per_class+paired+split+rejected+regroup": regrouped, "regrouped": made,
            "per_class+paired+split+rejected+regroupknown": barred,
            "regrouped_known": made_barred,
            "per_class+paired+split+rejected+regroupcal": calibrated, "calibration": calibration,
            "namer": namer, "dropped": dropped, "scorer": checked.get("scorer"),
            "moved": checked.get("moved", 0)} | regained


def burst_answer(class_id, x, edges, train, val, num_known: int, config, share: float, recent,
                 pipeline) -> dict:
    """``{BURST: answer, BURST_JOIN: answer, BURST_YOUNG: answer, BURST_GROW: answer,
    BURST_GROW_MOST: answer, BURST_GROW_KEEP: answer, "burst": nodes moved, "burstjoin": ...,
    "burstyoung": ..., "burstgrow": ..., "burstgrowmost": ..., "burstgrowkeep": ...}`` and
    the split-first, burst-split and age-split answers (``SPLIT_FIRST``, ``"splitfirst"``,
    ``BURST_SPLIT``, ``"burstsplit"``, ``AGE_SPLIT``, ``"agesplit"``: nodes the age split moved): the
    pipeline's answer decided again with the bursts first, in each form
    (:func:`oral_core.answer.decide_answer`, the pipeline's own call); without ``recent`` the
    pipeline's answer ``pipeline`` itself (the pipeline skips the step)."""
    if recent is None:
        return {BURST: pipeline, "burst": 0, BURST_JOIN: pipeline, "burstjoin": 0,
                BURST_YOUNG: pipeline, "burstyoung": 0, BURST_GROW: pipeline, "burstgrow": 0,
                BURST_GROW_MOST: pipeline, "burstgrowmost": 0, BURST_GROW_KEEP: pipeline,
                "burstgrowkeep": 0} | only_answers(
                    class_id, x, edges, train, val, num_known, config, recent,
                    ["splitfirst", "burstsplit", "agesplit"]) | {"splitfirst": 0, "burstsplit": 0}
    from oral_core.answer import (BURST_ALPHA, PAIRED_ALPHA, REJECTED_QUANTILE, decide_answer)
    from oral_core.recut import REGROUP_STRENGTH

    out = {}
    for name, key, join, young, grow, most, keep in (
            (BURST, "burst", False, False, False, False, False),
            (BURST_JOIN, "burstjoin", True, False, False, False, False),
            (BURST_YOUNG, "burstyoung", True, True, False, False, False),
            (BURST_GROW, "burstgrow", True, True, True, False, False),
            (BURST_GROW_MOST, "burstgrowmost", True, True, True, True, False),
            (BURST_GROW_KEEP, "burstgrowkeep", True, True, True, True, True)):
        got = decide_answer(class_id, x, edges, train, val, num_known,
                            scale=config.known_head_scale, seed=config.seed,
                            paired_alpha=PAIRED_ALPHA, split_share=share,
                            rejected_quantile=REJECTED_QUANTILE,
                            regroup_strength=REGROUP_STRENGTH, regroup_calibrated=True,
                            recent=recent, burst_alpha=BURST_ALPHA, burst_join=join,
                            burst_young=young, burst_grow=grow, burst_grow_most=most,
                            burst_keep=keep)
        out |= {name: got["answer"], key: got.get("burst", 0)}
    return out | only_answers(class_id, x, edges, train, val, num_known, config, recent,
                              ["splitfirst", "burstsplit", "agesplit"])


def only_answers(class_id, x, edges, train, val, num_known: int, config, recent,
                 forms: list[str], known_last=None) -> dict:
    """``{BURST_FORMS[form]: answer, form: nodes its burst moved}`` for the burst ``forms``
    only (``--only``), each decided by the pipeline's own call with the pipeline's own options
    (:func:`tasks.answer.answer_options`): the same answers :func:`answers` builds among all
    the others, at a fraction of the cost. ``lastsplit`` reads ``known_last`` (bool per node:
    named known by the night before's answer, :func:`benchmarks.last_night.known_last`;
    without it the step is skipped, as the pipeline skips it on a first night)."""
    from oral_core.answer import decide_answer
    from tasks.answer import answer_options

    out = {}
    for form in forms:
        name = BURST_FORMS[form]
        got = decide_answer(class_id, x, edges, train, val, num_known,
                            scale=config.known_head_scale, seed=config.seed, recent=recent,
                            known_last=known_last if form == "lastsplit" else None,
                            **answer_options(name.split("+")[1:]))
        out |= {name: got["answer"], form: got.get(FORM_MOVED.get(form, "burst"), 0)}
    return out


def night_recent(path: str, keep=None):
    """bool per node of the snapshot at ``path`` (``keep``'s rows when given): arrived within the
    last ``BURST_WINDOW`` snapshots of its folder; None without them."""
    import torch

    from data_contracts import snapshots as snap
    from oral_core.answer import BURST_WINDOW

    arrived = snap.recent_nodes(path, snap.snapshot_node_ids(path), BURST_WINDOW)
    if arrived is None:
        return None
    recent = torch.from_numpy(arrived)
    return recent if keep is None else recent[keep]


#: what a row keeps of the answers' bookkeeping, when the answers built it
ROW_KEYS = ("namer", "dropped", "scorer", "moved", "rejected", "burst", "burstjoin", "burstyoung",
            "burstgrow", "burstgrowmost", "burstgrowkeep", "splitfirst", "burstsplit", "agesplit",
            "lastsplit", "regroupodds", "known_last", "fit_seconds",
            "returned",
            "regrouped",
            "regrouped_known", "calibration")


def built_answers(class_id, x, edges, train, val, unlabelled, num_known: int, config, recent,
                  only: list[str] | None, known_last=None) -> tuple[dict, tuple[str, ...]]:
    """The answers of one fit and their names: all of :data:`ANSWERS` (:func:`answers`), or
    with ``only`` the burst forms it names (:func:`only_answers`, ``known_last`` for
    ``lastsplit``)."""
    if only is None:
        return answers(class_id, x, edges, train, val, unlabelled, num_known, config,
                       recent=recent), ANSWERS
    return (only_answers(class_id, x, edges, train, val, num_known, config, recent, only,
                         known_last), tuple(BURST_FORMS[form] for form in only))


def timed_fit(keep: Path | None, name: str, fit) -> tuple:
    """``(class id per node, seconds the fit took)``: :func:`benchmarks.records.kept_fit`, the
    seconds None when the fit was read back from ``keep``."""
    start = time.perf_counter()
    class_id, kept = kept_fit(keep, name, fit)
    return class_id, None if kept else round(time.perf_counter() - start, 1)


def keep_answers(keep: Path | None, name: str, built: dict, names, unlabelled) -> None:
    """The answers of a fit (``{answer name: class id per node}``, and the task's unlabelled
    nodes as ``"unlabelled"``) saved beside the kept fit as ``keep/<name>.answers.pt``, so that
    two studies' answers can be compared node by node (``benchmarks.fast_path_rule``)."""
    if keep is None:
        return
    import torch

    keep.mkdir(parents=True, exist_ok=True)
    tmp = keep / f"{name}.answers.tmp"
    torch.save({answer: built[answer].detach().cpu() for answer in names}
               | {"unlabelled": unlabelled.detach().cpu()}, tmp)
    tmp.replace(keep / f"{name}.answers.pt")


def fit_ids(model, before_recut: bool):
    """A fit's class id per node (``discoveries_["last"]``); with ``before_recut`` also its
    answer before the novel re-cut (``last_no_recut``; the same ids when the fit had none),
    stacked ``[2, N]``."""
    import torch

    last = model.discoveries_["last"].class_id
    if not before_recut:
        return last
    return torch.stack([last, model.discoveries_.get("last_no_recut",
                                                     model.discoveries_["last"]).class_id])


def both_arms(ids, before_recut: bool, build) -> tuple[dict, tuple[str, ...]]:
    """``build(class_id) -> (answers, names)`` of a fit's answer; with ``before_recut``
    (``ids`` from :func:`fit_ids`) also of its answer before the re-cut, each such answer named
    ``"fitted " + name`` beside the re-cut's: the two arms of one fit, paired."""
    if not before_recut:
        return build(ids)
    built, names = build(ids[0])
    fitted, fitted_names = build(ids[1])
    built |= {f"{FITTED}{name}": fitted[name] for name in fitted_names}
    return built, tuple(names) + tuple(f"{FITTED}{name}" for name in fitted_names)


#: the prefix of the answers built on a fit's answer before its novel re-cut (``--before-recut``)
FITTED = "fitted "


def night_fit(path: str, seed: int, config, keep: Path | None, name: str, hide: str,
              only: list[str] | None, fit_seed: int | None = None, before_recut: bool = False):
    """``(graph, task, answers, their names)`` of one proxy fit on the night's full graph:
    the task with ``hide``'s classes hidden and the validation nodes halved
    (:func:`harness.proxy.task_from_labels`, drawn with ``seed``), ORAL fitted on it with
    ``fit_seed`` (default ``seed``; kept under ``keep/name``, its answers too) and its answers
    (:func:`built_answers`; ``fit_seconds`` among them; with ``before_recut`` those of its answer
    before the novel re-cut too, :func:`both_arms`)."""
    import torch

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import task_from_labels
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL

    g, x, train, val, k = night_task(path)
    task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, seed, hide,
                            disjoint_val=True)
    cfg = ORALConfig.from_dict(config.to_dict() | {
        "seed": seed if fit_seed is None else fit_seed, "progress": False})
    class_id, seconds = timed_fit(keep, name, lambda: fit_ids(ORAL(cfg).fit(
        x, g.edge_index, task.train, task.val), before_recut))
    unlabelled = (task.train < 0) & (task.val < 0)
    k = int(task.visible.numel())
    from benchmarks.last_night import last_night_of

    last = last_night_of(path, None, task.train, task.val, k, cfg, keep, name, only)
    built, names = both_arms(class_id, before_recut, lambda ids: built_answers(
        ids, x, g.edge_index, task.train, task.val, unlabelled, k, cfg, night_recent(path),
        only, last))
    keep_answers(keep, name, built, names, unlabelled)
    built["fit_seconds"] = seconds
    if last is not None:
        built["known_last"] = int(last.sum())
    return g, task, built, names


def heldout_row(path: str, seed: int, config, keep: Path | None = None, name: str = "",
                only: list[str] | None = None, fit_seed: int | None = None,
                before_recut: bool = False) -> dict:
    import torch

    from benchmarks.granularity_proxy import surfaced
    from harness.proxy import proxy_accuracy

    g, task, built, names = night_fit(path, seed, config, keep, name, "extremes", only,
                                      fit_seed, before_recut)
    v = int(task.visible.numel())
    out = {key: built[key] for key in ROW_KEYS if key in built}
    for name in names:
        ids = built[name]
        acc = proxy_accuracy(g, task, ids)
        found = surfaced(g.y, task.scored, ids, task.hidden, v)
        out[name] = {key: acc[key] for key in ("all", "known", "novel")} | {
            "surfaced": sum(f["surfaced"] for f in found),
            "novel_classes": int(torch.unique(ids[ids >= v]).numel())}
    return out


def witness_row(path: str, seed: int, config, keep: Path | None = None, name: str = "",
                only: list[str] | None = None, fit_seed: int | None = None,
                before_recut: bool = False) -> dict:
    """The witness proxy on the night's full graph: no class hidden, half of the validation
    nodes held back (``task_from_labels(hide="none", disjoint_val=True)``): unlabelled to the fit
    and to every answer step, they fall where the night's unlabelled known nodes fall (into a
    novel class as often), so the answer's accuracy on them (``known``) is the known-node cost of
    its steps, read on labelled nodes only. Beside it, label-free: the novel classes the answer
    has and the share of the unlabelled nodes it calls novel (``novel_share``, %). Where the
    snapshots tell arrivals, also Known on the held-back nodes that arrived within the last
    ``BURST_WINDOW`` snapshots (``known_recent``; ``recent_witnesses`` of them): the known nodes
    a young class's burst arrives among (:func:`witness_scores`)."""
    g, task, built, names = night_fit(path, seed, config, keep, name, "none", only,
                                      fit_seed, before_recut)
    k = int(task.visible.numel())
    free = (task.train < 0) & (task.val < 0) & (g.y < 0)  # the night's own unlabelled nodes (the held half left out)
    recent = night_recent(path)
    out = {key: built[key] for key in ROW_KEYS if key in built} | {
        "witnesses": int(task.scored.sum())} | (
        {} if recent is None else {"recent_witnesses": int((task.scored & recent).sum())})
    for name in names:
        out[name] = witness_scores(built[name], g.y, task.scored, free, k, recent)
    return out


def witness_scores(ids, y, witnesses, free, num_known: int, recent=None) -> dict:
    """One answer's witness scores: ``known``, % of the ``witnesses`` (bool ``[N]``, held-back
    validation nodes) named their class ``y``; ``novel_classes`` (ids ``>= num_known``);
    ``novel_share``, % of the ``free`` (unlabelled) nodes called novel; with ``recent`` (bool
    ``[N]``, arrived within the burst window) ``known_recent``, % of the recent witnesses named
    right (None when there is none)."""
    import torch

    out = {"known": 100 * float((ids[witnesses] == y[witnesses]).float().mean()),
           "novel_classes": int(torch.unique(ids[ids >= num_known]).numel()),
           "novel_share": 100 * float((ids[free] >= num_known).float().mean())}
    if recent is not None:
        held = witnesses & recent
        out["known_recent"] = (100 * float((ids[held] == y[held]).float().mean())
                               if bool(held.any()) else None)
    return out


def nonovel_row(path: str, seed: int, config, keep: Path | None = None, name: str = "",
                only: list[str] | None = None, fit_seed: int | None = None,
                before_recut: bool = False) -> dict:
    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import no_novel_task
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL

    g, x, train, val, k = night_task(path)
    task = no_novel_task(g.y, train >= 0, val >= 0, torch.arange(k), seed)
    nodes, tr, va, scored, y = (task[key] for key in ("keep", "train", "val", "scored", "y"))
    edges, _ = subgraph(nodes, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    cfg = ORALConfig.from_dict(config.to_dict() | {
        "seed": seed if fit_seed is None else fit_seed, "progress": False})
    class_id, seconds = timed_fit(keep, name, lambda: fit_ids(ORAL(cfg).fit(
        x[nodes], edges, tr, va), before_recut))
    from benchmarks.last_night import last_night_of

    last = last_night_of(path, nodes, tr, va, k, cfg, keep, name, only)
    built, names = both_arms(class_id, before_recut, lambda ids: built_answers(
        ids, x[nodes], edges, tr, va, (tr < 0) & (va < 0), k, cfg, night_recent(path, nodes),
        only, last))
    keep_answers(keep, name, built, names, (tr < 0) & (va < 0))
    built["fit_seconds"] = seconds
    if last is not None:
        built["known_last"] = int(last.sum())
    out = {key: built[key] for key in ROW_KEYS if key in built}
    for name in names:
        ids = built[name]
        out[name] = {"accuracy": 100 * float((ids[scored] == y[scored]).float().mean()),
                     "novel_classes": int(torch.unique(ids[ids >= k]).numel())}
    return out


def paired(rows: list[dict], a: str, b: str, key: str) -> tuple[float, float, int]:
    """Mean and standard error of ``b - a`` on ``key`` over ``rows``."""
    diffs = [r[b][key] - r[a][key] for r in rows
             if a in r and b in r and not (math.isnan(r[b][key]) or math.isnan(r[a][key]))]
    if not diffs:
        return float("nan"), float("nan"), 0
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
    return statistics.fmean(diffs), se, len(diffs)


def answers_in(rows: list[dict]) -> list[str]:
    """The answers every row has (rows of an earlier version have fewer)."""
    return [name for name in ANSWERS if all(name in r for r in rows)]


def table(rows: list[dict]) -> str:
    lines = ["| task | graph | fits | answer | All | Known | Novel | stand-ins surfaced | novel "
             "classes | paired All (no-novel: accuracy) vs per_class, or the answer it adds to (s.e.) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    held = [r for r in rows if r["kind"] == "heldout"]
    for graph in sorted({r["graph"] for r in held}):
        rs = [r for r in held if r["graph"] == graph]
        for name in answers_in(rs):
            def mean(key):
                vals = [r[name][key] for r in rs if not math.isnan(r[name][key])]
                return statistics.fmean(vals) if vals else float("nan")
            d, se, _ = paired(rs, BASE.get(name, "per_class"), name, "all")
            lines.append(f"| held-out | {graph} | {len(rs)} | {name} | {mean('all'):.1f} | "
                         f"{mean('known'):.1f} | {mean('novel'):.1f} | "
                         f"{sum(r[name]['surfaced'] for r in rs)} of {2 * len(rs)} | "
                         f"{sum(r[name]['novel_classes'] for r in rs)} | "
                         f"{'' if name == 'per_class' else f'{d:+.1f} ({se:.1f})'} |")
    none = [r for r in rows if r["kind"] == "nonovel"]
    for graph in sorted({r["graph"] for r in none}):
        rs = [r for r in none if r["graph"] == graph]
        for name in answers_in(rs):
            acc = statistics.fmean(r[name]["accuracy"] for r in rs)
            d, se, _ = paired(rs, BASE.get(name, "per_class"), name, "accuracy")
            lines.append(f"| no-novel | {graph} | {len(rs)} | {name} | {acc:.1f} | | | | "
                         f"{sum(r[name]['novel_classes'] for r in rs)} (invented) | "
                         f"{'' if name == 'per_class' else f'{d:+.1f} ({se:.1f})'} |")
    seen = [r for r in rows if r["kind"] == "witness"]
    for graph in sorted({r["graph"] for r in seen}):
        rs = [r for r in seen if r["graph"] == graph]
        for name in answers_in(rs):
            known = statistics.fmean(r[name]["known"] for r in rs)
            recent = [r[name]["known_recent"] for r in rs
                      if r[name].get("known_recent") is not None]
            if recent:  # the held-back nodes that arrived recently, where the rows have them
                known_text = f"{known:.1f} (recent {statistics.fmean(recent):.1f})"
            else:
                known_text = f"{known:.1f}"
            share = statistics.fmean(r[name]["novel_share"] for r in rs)
            d, se, n = paired(rs, BASE.get(name, "per_class"), name, "known")
            lines.append(f"| witness (Known: held validation nodes; Novel: % of unlabelled "
                         f"nodes called novel) | {graph} | {len(rs)} | {name} | | {known_text} | "
                         f"{share:.1f} | | {sum(r[name]['novel_classes'] for r in rs)} | "
                         f"{f'{d:+.1f} ({se:.1f}), Known' if n else ''} |")
    return "\n".join(lines)


def variant_of(sets, seed_offset) -> tuple:
    """What a row's fit was run at beyond the pipeline's defaults (``--set``, ``--seed-offset``):
    rows of one ``--out`` resume only their own variant's."""
    return tuple(sorted(sets or [])), int(seed_offset or 0)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,synthetic15", "0,1", "4,8", "0", loops="")
    ap.add_argument("--tasks", default="heldout,nonovel",
                    help="comma list of heldout, nonovel and witness (the full night, no class "
                         "hidden, half of the validation nodes held back and scored)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--keep", type=Path, default=None,
                    help="a folder for the fits (class id per node): kept there, read back when "
                         "there, so answers can be scored again without training")
    ap.add_argument("--only", default=None, metavar="FORM,FORM",
                    help="build only these burst forms' answers (of "
                         f"{', '.join(BURST_FORMS)}), each by the pipeline's own call: rows "
                         "hold those answers only, at a fraction of the cost")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="fit at the pipeline's defaults with this ORAL setting changed "
                         "(repeatable; the kept fits' names and the rows carry it)")
    ap.add_argument("--seed-offset", type=int, default=0, metavar="N",
                    help="fit with the seed N above the task's (the task itself unchanged): "
                         "another seed's fit of the same task, the yardstick of seed noise")
    ap.add_argument("--before-recut", action="store_true",
                    help="the fit re-cuts its novel nodes (--set novel_recut=true): score its "
                         "answer before the re-cut too, each such answer named 'fitted <answer>' "
                         "in the same row (the two arms of one fit, paired)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    tasks = [t for t in args.tasks.split(",") if t]
    if not tasks or any(t not in ("heldout", "nonovel", "witness") for t in tasks):
        ap.error(f"--tasks takes heldout, nonovel and witness, got {args.tasks!r}")
    only = None if args.only is None else [f for f in args.only.split(",") if f]
    if only is not None and (not only or any(f not in BURST_FORMS for f in only)):
        ap.error(f"--only takes burst forms of {', '.join(BURST_FORMS)}, got {args.only!r}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fits.jsonl"
    rows = read_jsonl(path)
    if not args.report_only:
        from benchmarks.nightly_loop import simulate_missing
        from benchmarks.split_repeat_proxy import loop_nights
        from flows.configuration import build_config, pipeline_defaults

        from cli.options import parse_set

        try:
            config = build_config(pipeline_defaults() | parse_set(args.set)[0])
        except ValueError as err:
            ap.error(str(err))
        variant = variant_of(args.set, args.seed_offset)
        sets = list(args.set) + ([f"fitseed+{args.seed_offset}"] if args.seed_offset else [])
        simulate_missing(Path(args.loops), args.graphs, args.sims)
        rows = [r for r in rows if variant_of(r.get("set"), r.get("seed_offset")) == variant]
        done = {(r["kind"], r["loop"], r["night"], r["seed"]) for r in rows}
        jobs = [(task, loop, night, seed, snapshot)
                for loop, night, seed, snapshot in loop_nights(Path(args.loops), args.graphs,
                                                                args.sims, args.nights, args.seeds)
                for task in tasks if (task, loop, night, seed) not in done]
        for i, (task, loop, night, seed, snapshot) in enumerate(jobs, 1):
            # another command on the same --out (other --tasks or --seeds) may have done it
            if any((r["kind"], r["loop"], r["night"], r["seed"]) == (task, loop, night, seed)
                   and variant_of(r.get("set"), r.get("seed_offset")) == variant
                   for r in read_jsonl(path)):
                print(f"[{i}/{len(jobs)}] {task} {loop} night {night} seed {seed}: done by "
                      "another command", flush=True)
                continue
            print(f"[{i}/{len(jobs)}] {task} {loop} night {night} seed {seed}", flush=True)
            start = time.perf_counter()
            fit = {"heldout": heldout_row, "nonovel": nonovel_row, "witness": witness_row}[task]
            row = {"kind": task, "loop": loop, "graph": loop.rsplit("-sim", 1)[0],
                   "night": night, "seed": seed} | (
                {"set": list(args.set)} if args.set else {}) | (
                {"seed_offset": args.seed_offset} if args.seed_offset else {}) | fit(
                snapshot, seed, config, keep=args.keep,
                name=fit_name(loop, night, seed, kind=task, sets=sets), only=only,
                fit_seed=seed + args.seed_offset,
                **({"before_recut": True} if args.before_recut else {}))
            row["seconds"] = round(time.perf_counter() - start, 1)
            append_jsonl(path, row)
            print(f"    {json.dumps(row)}", flush=True)
        rows = [r for r in read_jsonl(path)  # with the rows other commands wrote meanwhile
                if variant_of(r.get("set"), r.get("seed_offset")) == variant]
    text = table(rows)
    (out / "table.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
