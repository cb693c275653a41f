"""What the night says about its answer: open-world accuracy against a snapshot's truth table
when it has one (:func:`score`, Eq. 14), the scores in words (:func:`scores_text`) and one
description per class found (:func:`describe_classes`: size, features, exemplars, purity)."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from data_contracts import snapshots as snap


def score(snapshot: snap.Snapshot, class_id: np.ndarray, num_known: int) -> dict | None:
    """Open-world accuracy (%) on the unlabelled nodes that have a truth row, or None without truth:
    one Hungarian matching over all of them, split into known and novel (Eq. 14, GCD convention)."""
    if snapshot.truth is None:
        return None
    import torch

    from oral_core.metrics import open_world_accuracy

    names = list(snapshot.class_names)
    extra = [t for t in (snapshot.truth_names or []) if t not in names]
    index = {n: i for i, n in enumerate(names + extra)}
    truth_idx = np.array([index[t] for t in snapshot.truth_names], dtype=np.int64)
    y_true = np.where(snapshot.truth >= 0, truth_idx[np.maximum(snapshot.truth, 0)], -1)
    test = (snapshot.labels < 0) & (y_true >= 0)
    if not test.any():
        return None
    big = len(index)
    pred = np.where(class_id < num_known, class_id, big + class_id)
    pred = np.where(class_id < 0, 2 * big + 10_000, pred)
    acc = open_world_accuracy(torch.from_numpy(y_true[test]), torch.from_numpy(pred[test]),
                              torch.arange(num_known))
    return {k: 100 * float(v) for k, v in acc.items()} | {"test_nodes": int(test.sum())}


def scores_text(scores: Mapping[str, float], sep: str = " ") -> str:
    """A night's scores as the terminal, the log and the Prefect artifact say them:
    ``All 91.2%<sep>Known 93.0%<sep>Novel 80.1%``. A part without a node to score (no novel
    test node before a novel class starts: NaN) says so instead of ``nan%``."""
    import math

    def part(name: str, key: str) -> str:
        value = scores.get(key)
        if value is None or not math.isfinite(float(value)):
            return f"{name} – (no {key} test node)"
        return f"{name} {float(value):.1f}%"

    return sep.join(part(n, k) for n, k in (("All", "all"), ("Known", "known"),
                                            ("Novel", "novel")))


def describe_classes(snapshot: snap.Snapshot, predictions: pa.Table, num_known: int,
                     top: int = 5) -> list[dict]:
    """Per predicted class: size, mean confidence, characteristic features (lift), exemplar node
    ids (most confident members), and purity against the truth when the snapshot has it."""
    from oral_core.inference import class_names_of
    from oral_core.interpret import characteristic_features, exemplars, purity

    class_id = predictions.column("class_key").to_numpy()
    conf = predictions.column("confidence").to_numpy()
    keys = np.unique(class_id[class_id >= 0])
    if keys.size == 0:
        return []
    dense = np.full(int(keys.max()) + 1, -1, dtype=np.int64)
    dense[keys] = np.arange(keys.size)
    cid = np.where(class_id >= 0, dense[np.maximum(class_id, 0)], -1)
    # members of class j: one stable sort, then a slice per class (the same values in the same
    # order as a mask, so the means are the same to the bit)
    order = np.argsort(cid, kind="stable")
    conf_sorted = conf[order]
    bounds = np.searchsorted(cid[order], np.arange(keys.size + 1), side="left")
    feats = characteristic_features(snapshot.x, cid, keys.size, top=top,
                                    feature_names=snapshot.feature_names)
    ex = exemplars(cid, conf, keys.size, top=top)
    pur = maj = None
    if snapshot.truth is not None:
        pur, maj = purity(cid, snapshot.truth, keys.size, len(snapshot.truth_names or []))
    names = class_names_of(keys.tolist(), snapshot.class_names, num_known)
    out = []
    for j, key in enumerate(keys.tolist()):
        members = conf_sorted[bounds[j]:bounds[j + 1]]
        out.append({
            "class_key": int(key),
            "class_name": names[j],
            "is_novel": bool(key >= num_known),
            "size": int(members.size),
            "mean_confidence": float(members.mean()),
            "top_features": [{"feature": f.name, "lift": round(float(f.lift), 3),
                              "class_mean": round(float(f.class_mean), 5)} for f in feats[j]],
            "exemplars": [str(v) for v in
                          snapshot.node_ids.take(pa.array(ex[j], type=pa.int64())).to_pylist()],
            "purity": None if pur is None or np.isnan(pur[j]) else float(pur[j]),
            "majority_true_label": (None if maj is None or maj[j] < 0
                                    else snapshot.truth_names[int(maj[j])]),
        })
    return out
