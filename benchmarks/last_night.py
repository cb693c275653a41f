"""The night before, for the proxies that judge ``+lastsplit`` (issue 60): which of tonight's
nodes the previous night's answer named a known class, on the same proxy task.

``+lastsplit`` (:func:`oral_core.answer.last_night_split`) reads the previous published answer.
A proxy scores labelled nodes that it hides from the fit (a held-out class, held-back validation
nodes, a young class); were the night before fitted on the snapshot as it is, those nodes would
be labelled there, and its answer on them would be read from their labels. So the night before
is fitted on its own snapshot with tonight's task carried over by node id
(:func:`yesterday_task`): a node is labelled the night before only when it was labelled then and
tonight's task labels it (with the same visible class), split into training and validation nodes
as the pipeline splits a night's labels (``tasks.fitting.split_labelled``); the graph is the
nodes of the night before that tonight's task keeps. ORAL is fitted on it at the same settings
and seed, and the night's default answer (:data:`BASE_ANSWER`) decided from it, as the pipeline
publishes it (one night of memory: the night before is answered without ``+lastsplit`` itself).
Labelled nodes only; no test label is read.
"""
from __future__ import annotations

from pathlib import Path

#: the answer the night before publishes (the night's default answer since 2026-12-06)
BASE_ANSWER = "per_class+paired+burstgrowmost+burstsplit+split+rejected+regroupcal"


def previous_snapshot(path: str | Path) -> Path | None:
    """The snapshot folder just before ``path`` in its graph folder, or None on the first."""
    from data_contracts import snapshots as snap

    earlier = snap.earlier_snapshots(path)
    return earlier[-1] if earlier else None


def tonight_index(before_ids, tonight_ids):
    """For each node of the night before, its index among ``tonight_ids`` (-1 when tonight's
    task does not have it), as a long tensor."""
    import numpy as np
    import pyarrow.compute as pc
    import torch

    if before_ids.type != tonight_ids.type:
        before_ids = before_ids.cast(tonight_ids.type)
    where = pc.fill_null(pc.index_in(before_ids, value_set=tonight_ids), -1)
    return torch.from_numpy(np.asarray(where.to_numpy(zero_copy_only=False), dtype=np.int64))


def yesterday_task(labelled_before, index, train, val):
    """``(nodes, train, val)`` of the night before: ``nodes`` (bool over its nodes) are those
    tonight's task keeps (``index >= 0``, :func:`tonight_index`); over them, a node is labelled
    when it was labelled the night before (``labelled_before``, bool) and tonight's ``train`` or
    ``val`` labels it (visible class index), split as the pipeline splits a night's labels
    (``tasks.fitting.split_labelled``, seed 0)."""
    import numpy as np
    import torch

    from tasks.fitting import split_labelled

    nodes = index >= 0
    at = index[nodes]
    label = torch.where(train >= 0, train, val)[at]
    label = torch.where(labelled_before[nodes], label, torch.full_like(label, -1))
    tr, va = split_labelled(label.numpy().astype(np.int64), 0)
    return nodes, torch.from_numpy(tr), torch.from_numpy(va)


def known_last(path: str | Path, kept, train, val, num_known: int, config, keep: Path | None,
               name: str):
    """bool over tonight's task nodes (``kept``: bool over the snapshot's nodes, None for all;
    ``train``/``val`` over the kept nodes): named a known class by the night before's answer
    (:data:`BASE_ANSWER`) on tonight's task carried over (:func:`yesterday_task`); a node absent
    the night before is not. None on a graph's first night. The fit of the night before is kept
    as ``keep/<name>.pt`` (:func:`benchmarks.records.kept_fit`)."""
    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.records import kept_fit
    from benchmarks.split_repeat_proxy import night_task
    from data_contracts import snapshots as snap
    from oral_core.answer import BURST_WINDOW, decide_answer
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL
    from tasks.answer import answer_options

    before = previous_snapshot(path)
    if before is None:
        return None
    tonight = snap.snapshot_node_ids(path)
    if kept is not None:
        tonight = tonight.filter(kept.numpy())
    g, x, tr_before, va_before, _ = night_task(before)
    index = tonight_index(snap.snapshot_node_ids(before), tonight)
    nodes, tr, va = yesterday_task((tr_before >= 0) | (va_before >= 0), index, train, val)
    edges, _ = subgraph(nodes, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    xs = x[nodes]
    cfg = ORALConfig.from_dict(config.to_dict() | {"progress": False})
    class_id, _ = kept_fit(keep, name, lambda: ORAL(cfg).fit(
        xs, edges, tr, va).discoveries_["last"].class_id)
    arrived = snap.recent_nodes(before, snap.snapshot_node_ids(before), BURST_WINDOW)
    recent = None if arrived is None else torch.from_numpy(arrived)[nodes]
    got = decide_answer(class_id, xs, edges, tr, va, num_known, scale=cfg.known_head_scale,
                        seed=cfg.seed, recent=recent,
                        **answer_options(BASE_ANSWER.split("+")[1:]))
    answer = got["answer"]
    out = torch.zeros(len(tonight), dtype=torch.bool)
    out[index[nodes]] = (answer >= 0) & (answer < num_known)
    return out


def last_night_of(path: str, kept, train, val, num_known: int, config, keep: Path | None,
                  name: str, only: list[str] | None):
    """What the ``lastsplit`` form reads when ``only`` (a proxy's ``--only`` forms) asks for it:
    the night before's answer on the same task (:func:`known_last`, its fit kept as
    ``<name>_before``); else None."""
    if not only or "lastsplit" not in only:
        return None
    return known_last(path, kept, train, val, num_known, config, keep, f"{name}_before")
