"""The night's answer decided per class (``ORAL_NIGHT_ANSWER=per_class``, issue 60 item 2;
the rules in :mod:`oral_core.answer`).

After training, the known classes of tonight's answer are named by the best known-class
classifier the validation nodes support (ORAL's own naming, the reference logistic regression or
a known-class GCN) and each novel class stays as ORAL made it. The answer is written beside the
model's own predictions (``answer.parquet``, the same columns) with what the choice read
(``answer.json``), and it is what the night publishes, whatever the champion gate thinks of the
whole model: the gate then decides the champion alias alone.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from data_contracts import snapshots as snap
from tasks.fitting import TrainResult


def decide_per_class(snapshot: snap.Snapshot, trained: TrainResult, config, feature_mode: str,
                     parts: tuple[str, ...] = (), warehouse_path: str | None = None,
                     graph: str | None = None) -> dict:
    """Tonight's answer per class from the model's predictions (``trained`` is the train step's
    result). Returns ``predictions_path`` (the answer's file), ``num_classes`` and ``num_novel``
    (the classes it publishes, novel among them: the rejected grouping may add one the model
    does not have), ``namer`` (which classifier names
    the known classes), ``right`` (validation nodes each candidate names right, among the
    ``nodes`` ORAL names a known class) and the choice's cross-fitted count
    (``cross_fitted_right`` of ``nodes``, :func:`oral_core.answer.cross_fitted_right`).
    ``parts`` are what ``ORAL_NIGHT_ANSWER`` adds to ``per_class``
    (:data:`flows.settings.NIGHT_ANSWER_PARTS`, :func:`oral_core.answer.decide_answer`): with
    ``paired`` another classifier names the known classes only when it beats ORAL's own naming
    beyond chance; with ``burst`` the nodes absent from the snapshot ``BURST_WINDOW`` snapshots
    back that arrived in a burst form young classes (``burst``: nodes moved; skipped while the
    graph folder holds fewer earlier snapshots; ``burstjoin``: the bursts in one class taken
    together, those in a novel class joining it; ``burstyoung``: those joining a novel class
    only when it is young); with ``carve`` the known slices of the novel
    classes are named known
    (``carved``; ``carvetest``: what a carved class keeps is tested too); with ``split`` the answer's novel classes the known-split check calls known
    are dropped (``dropped`` in the result); with ``agesplit`` too the old part of each class it
    keeps is named known where it alone holds validation nodes as known classes do (``aged``,
    :func:`oral_core.answer.aged_split`); with ``lastsplit`` too the part of each class it keeps
    that the previous published answer of ``graph`` in ``warehouse_path`` named known
    (:func:`known_last_night`) is named known where it alone holds validation nodes as known
    classes do (``last``, :func:`oral_core.answer.last_night_split`; skipped on a graph's first
    night); with ``energy`` the novelty check names a known
    class for the nodes of novel groups that look known (``scorer`` and ``moved``); with
    ``returned`` those among neighbours named known (``returned``); with ``rejected`` the
    known-named nodes the known classes reject, among rejected neighbours, are grouped as novel
    (``rejected``); with ``regain`` the dropped classes' nodes the known classes reject at a
    looser quantile too (``regained``); with ``regroup`` each novel class is cut where the cut is reproducible
    (``regrouped``: new classes made; ``regroupknown``: and more reproducible than the known
    classes' own cuts; ``regroupcal``: only where the cut tells the labelled known classes apart,
    ``calibration``; ``regroupodds``: where it tells their pairs apart more often than it
    divides one of them)."""
    import pyarrow.parquet as pq
    import torch

    from oral_core.answer import BURST_WINDOW, decide_answer
    from tasks.fitting import fit_inputs
    from tasks.predictions import write_predictions

    run_dir, num_known = Path(trained.run_dir), int(trained.num_known)
    table = pq.read_table(trained.predictions_path, columns=["class_key", "confidence"])
    class_id = torch.from_numpy(np.array(table.column("class_key").fill_null(-1).to_numpy(),
                                         dtype=np.int64))
    confidence = np.asarray(table.column("confidence").fill_null(0.0).to_numpy(), dtype=np.float32)
    x, edges, train_labels, val_labels, _ = fit_inputs(snapshot, feature_mode, config.seed)
    train_labels, val_labels = torch.from_numpy(train_labels), torch.from_numpy(val_labels)
    options, recent = answer_options(parts), None
    if options["burst_alpha"] is not None or options["age_split"]:
        arrived = snap.recent_nodes(snapshot.path, snapshot.node_ids, BURST_WINDOW)
        recent = None if arrived is None else torch.from_numpy(arrived)
    known_last = None
    if "lastsplit" in parts and warehouse_path is not None and graph is not None:
        known_last = known_last_night(warehouse_path, graph, snapshot)
    got = decide_answer(class_id, x, edges, train_labels, val_labels, num_known,
                        device=answer_device(config.device),
                        scale=config.known_head_scale, seed=config.seed, recent=recent,
                        known_last=known_last, **options)
    answer = got["answer"]
    path = write_predictions(run_dir / "answer.parquet", snapshot.node_ids, answer, confidence,
                             num_known, snapshot.class_names,
                             known_key=known_of_every_node(got, val_labels, num_known))
    classes = torch.unique(answer[answer >= 0])
    out = {"predictions_path": str(path), "renamed": int((answer != class_id).sum()),
           "num_classes": int(classes.numel()), "num_novel": int((classes >= num_known).sum()),
           "snapshot_date": snapshot.date.isoformat() if snapshot.date else None} | {
        k: got[k] for k in ("namer", "right", "nodes", "cross_fitted_right", "carved", "burst",
                            "dropped", "aged", "last",
                            "scorer",
                            "moved", "returned", "rejected", "regained", "regrouped",
                            "calibration")
        if k in got}
    text = json.dumps(out)
    snap.write_file_atomically(run_dir / "answer.json", lambda tmp: tmp.write_text(text))
    return out


def known_of_every_node(got: dict, val_labels, num_known: int):
    """The known class the known-class classifier names for every node (the ``known_key``
    column of ``answer.parquet``: where a dropped class's nodes would go,
    :func:`oral_core.answer.namer_of_every_node`), or None where only ORAL's own naming exists
    (a snapshot without both labelled sets)."""
    from oral_core.answer import namer_of_every_node

    if len(got["candidates"]) < 2:
        return None
    return namer_of_every_node(got, val_labels, num_known)


def known_last_night(warehouse_path: str, graph: str, snapshot: snap.Snapshot):
    """bool per node of ``snapshot`` (a tensor): named a known class by the graph's latest
    published answer before the snapshot's date (:meth:`tasks.warehouse.Warehouse.known_last`);
    None without a warehouse or such an answer."""
    import torch

    from tasks.warehouse import Warehouse

    if not Path(warehouse_path).exists() or snapshot.date is None:
        return None
    known = Warehouse(warehouse_path).known_last(graph, snapshot.date, snapshot.node_ids)
    return None if known is None else torch.from_numpy(known)


def answer_options(parts) -> dict:
    """The keyword arguments of :func:`oral_core.answer.decide_answer` that ``parts`` (what
    ``ORAL_NIGHT_ANSWER`` adds to ``per_class``, :data:`flows.settings.NIGHT_ANSWER_PARTS`) ask
    for, each step at its constant; the night's answer and the benchmarks that judge it build
    their answers from this one table (``recent``, ``scale``, ``seed`` and ``device`` are the
    caller's)."""
    from oral_core.answer import (BURST_ALPHA, CARVE_ALPHA, CARVE_SHARE, ENERGY_QUANTILE,
                                  PAIRED_ALPHA, REGAIN_QUANTILE, REJECTED_QUANTILE,
                                  RETURNED_QUANTILE, SPLIT_SHARE)
    from oral_core.recut import REGROUP_STRENGTH

    parts = set(parts)
    burst = bool({"burst", "burstjoin", "burstyoung", "burstgrow", "burstgrowmost",
                  "burstgrowkeep"} & parts)
    return dict(paired_alpha=PAIRED_ALPHA if "paired" in parts else None,
                novelty_quantile=ENERGY_QUANTILE if "energy" in parts else None,
                rejected_quantile=REJECTED_QUANTILE if "rejected" in parts else None,
                returned_quantile=RETURNED_QUANTILE if "returned" in parts else None,
                split_share=SPLIT_SHARE if "split" in parts else None,
                carve_share=CARVE_SHARE if {"carve", "carvetest"} & parts else None,
                carve_alpha=CARVE_ALPHA if "carvetest" in parts else None,
                regroup_strength=(REGROUP_STRENGTH
                                  if {"regroup", "regroupknown", "regroupcal",
                                      "regroupodds"} & parts
                                  else None),
                regroup_known="regroupknown" in parts,
                regroup_calibrated="regroupcal" in parts,
                regroup_odds="regroupodds" in parts,
                regain_quantile=REGAIN_QUANTILE if "regain" in parts else None,
                burst_alpha=BURST_ALPHA if burst else None,
                burst_join="burstjoin" in parts,
                burst_young="burstyoung" in parts,
                burst_grow="burstgrow" in parts,
                burst_grow_most="burstgrowmost" in parts,
                burst_keep="burstgrowkeep" in parts,
                split_first="splitfirst" in parts,
                burst_split="burstsplit" in parts,
                age_split="agesplit" in parts)


def answer_device(requested: str | None) -> str:
    """Where the answer's two steps that grow with the graph run (the known-class GCN's fit and
    the rejected nodes' neighbours, :func:`oral_core.answer.decide_answer`): on CUDA when the
    night's ``device`` setting allows it (``auto`` or a CUDA device) and this process has one,
    else on the CPU (the flow may answer a night trained on another machine's GPU)."""
    import torch

    if (requested or "auto") == "cpu" or not torch.cuda.is_available():
        return "cpu"
    return "cuda" if (requested or "auto") == "auto" else str(requested)


def answer_reason(degraded: str | None, answer: dict) -> str:
    """One line on how a night answered per class is published (the run's ``gate_reason``)."""
    named = {"oral": "ORAL's own groups", "lr": "the reference logistic regression",
             "gcn": "a known-class GCN"}[answer["namer"]]
    held = f"the model is held back as champion ({degraded}); " if degraded else ""
    return (f"{held}answered per class: known classes named by {named} "
            f"({answer['right'][answer['namer']]} of {answer['nodes']} validation nodes right), "
            "novel classes as ORAL found them")
