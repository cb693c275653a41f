"""Fitting ORAL on one snapshot: the labelled nodes split into training and validation
(:func:`split_labelled`, the paper's 70% + 15% of known-class nodes), the fit's inputs
(:func:`fit_inputs`), the fit and the files it leaves in its run folder (:func:`train`: model,
predictions, history), and :class:`TrainResult`, what the rest of the night reads of it."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from data_contracts import snapshots as snap
from tasks.predictions import as_arrow, write_predictions


#: Of the labelled nodes, the share held out for model selection: the paper labels 70% + 15% of
#: known-class nodes for training and validation, i.e. 15/85 of the labelled ones.
VALIDATION_SHARE = 15 / 85


def run_config_hash(config, feature_mode: str) -> str:
    """The configuration's identity for a pipeline run: everything that can change a result,
    the seed included (``oral_core.identity.config_hash`` leaves the seed out because the
    reproduction keeps one file per seed)."""
    from oral_core.identity import config_hash

    return f"{config_hash(config, feature_mode)}-s{int(config.seed)}"


def split_labelled(labels: np.ndarray, seed: int, share: float = VALIDATION_SHARE):
    """Per known class, hold out ``share`` of the labelled nodes for validation (model selection).

    Returns ``(train, val)`` label arrays (-1 where not in the part). A class with a single
    labelled node keeps it for training."""
    rng = np.random.default_rng(seed)
    train = labels.copy()
    val = np.full_like(labels, -1)
    for c in np.unique(labels[labels >= 0]):
        idx = np.flatnonzero(labels == c)
        k = int(round(share * idx.size)) if idx.size > 1 else 0
        if k:
            held = rng.choice(idx, size=k, replace=False)
            train[held] = -1
            val[held] = c
    return train, val


@dataclass
class TrainResult:
    """What a training run leaves in its run folder (all small, JSON-able for Prefect's cache)."""

    run_dir: str
    model_path: str
    predictions_path: str
    history_path: str
    config: dict
    config_hash: str
    feature_mode: str
    val_accuracy: float
    epoch: int
    epochs: int
    num_classes: int
    num_known: int
    num_novel: int
    train_seconds: float
    device: str
    #: ``cold`` or ``warm`` (continued from ``warm_from``, see :func:`plan_start`)
    start: str = "cold"
    #: the warehouse run id of the night whose model a warm start continued ("" when cold)
    warm_from: str = ""
    #: epochs of training behind the saved parameters, a warm start's included
    trained_epochs: int = 0
    #: the batch size the fit trained with (None: full batch; ``config`` keeps the one asked
    #: for) and why, e.g. mini-batch chosen automatically above ``minibatch_above_edges``
    batch_size: int | None = None
    batch_reason: str = ""
    #: the novel_wholeness the fit clustered with: the configuration's, or None where
    #: ``novel_wholeness_if="separable"`` found the known classes not separable
    #: (:mod:`oral_core.separability`)
    novel_wholeness_used: float | None = None
    #: whether the fit found its known classes separable (``novel_wholeness_if="separable"``;
    #: None when it did not judge); ``ORAL_CONFIRM_SIZE=separable:<share>`` reads it
    known_separable: bool | None = None
    #: known-class validation accuracy of the plain reference classifier (a logistic regression
    #: on the features, :func:`oral_core.reference.reference_accuracy`) on the same labelled
    #: training and validation nodes, standardised as the known head is (``known_head_scale``);
    #: the champion gate's floor. None without validation nodes.
    reference_val_accuracy: float | None = None
    #: the validation nodes the model and the reference classifier disagree on, as the champion
    #: gate's McNemar test reads them: nodes only the reference names right (``gate_worse``) and
    #: only the model names right (``gate_better``); None without validation nodes
    gate_worse: int | None = None
    gate_better: int | None = None
    #: the same counted on the validation nodes the model names a known class only (the known
    #: part of the answer, ``ORAL_GATE_SCOPE=known``), and how many such nodes there are
    gate_known_worse: int | None = None
    gate_known_better: int | None = None
    gate_known_nodes: int | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainResult":
        """The result again from :meth:`to_dict`'s dict (what the train task persists for
        Prefect's cache and a training deployment hands back); keys it does not know are left
        out (a result written by an older revision), missing ones take their defaults."""
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def load_payload(path: str | Path) -> dict:
    """A saved ORAL model's payload (weights only); raises on a file that is not one."""
    import torch

    from oral_core.inference import FORMAT

    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not an ORAL model file")
    return payload


def previous_class_ids(node_ids, predictions_path: str | Path | None):
    """For each of tonight's nodes (``node_ids``, an Arrow array), the class key the previous
    model's predictions gave the same node id, -1 for a node they did not have (new) or left
    unassigned: node-indexed state is mapped by node id, never by position. None without a
    predictions file."""
    import torch

    if predictions_path is None or not Path(predictions_path).is_file():
        return None
    prev = pq.read_table(predictions_path, columns=["node_id", "class_key"])
    ids, prev_ids = as_arrow(node_ids), prev.column("node_id")
    if prev_ids.type != ids.type:
        ids, prev_ids = pc.cast(ids, pa.string()), pc.cast(prev_ids, pa.string())
    where = pc.index_in(ids, value_set=prev_ids.combine_chunks()
                        if isinstance(prev_ids, pa.ChunkedArray) else prev_ids)
    where = np.asarray(pc.fill_null(where, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    keys = np.asarray(pc.fill_null(prev.column("class_key"), -1).to_numpy(), dtype=np.int64)
    out = np.where(where >= 0, keys[np.maximum(where, 0)] if keys.size else -1, -1)
    return torch.from_numpy(out.astype(np.int64))


class ProgressLog:
    """Training progress as a log line at most every ``every`` seconds (``ORAL.fit``'s
    ``on_progress``): ``training: epoch 37/200, 12 s so far, 3.1 epochs/s``. The nightly flow
    passes its run logger, so ``oral run`` shows it on the terminal (the tqdm bar is off there).
    The first line comes after ``every`` seconds; a fit shorter than that logs none."""

    def __init__(self, logger, every: float = 5.0, clock=time.monotonic):
        self.logger, self.every, self.clock = logger, float(every), clock
        self.start = self.last = clock()

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        seconds = now - self.start
        self.logger.info("training: epoch %d/%d, %.0f s so far, %.2f epochs/s", done, total,
                         seconds, done / seconds if seconds > 0 else 0.0)


def fit_inputs(snapshot: snap.Snapshot, feature_mode: str, seed: int):
    """What a fit reads from a snapshot: ``(x, edge_index, train_labels, val_labels, mode)``,
    the features preprocessed by ``feature_mode`` (``"auto"``: chosen from them, the chosen mode
    returned), the edges canonical, the labelled nodes split as :func:`split_labelled` splits
    them with ``seed`` (numpy arrays). Training and the per-class answer read the same ones."""
    import torch

    from oral_core.columns import writable
    from oral_core.datasets import auto_feature_mode, preprocess_features
    from oral_core.graph import canonical_edges

    x_raw = torch.from_numpy(writable(snapshot.x))
    mode = auto_feature_mode(x_raw) if feature_mode == "auto" else feature_mode
    edges = canonical_edges(torch.from_numpy(snapshot.edge_index), snapshot.num_nodes)
    train_labels, val_labels = split_labelled(snapshot.labels, seed)
    return preprocess_features(x_raw, mode), edges, train_labels, val_labels, mode


def train(snapshot: snap.Snapshot, config, run_dir: Path, feature_mode: str = "auto",
          init: dict | None = None, progress=None) -> TrainResult:
    """Fit ORAL on one snapshot (labelled nodes split into training and validation), save the model
    (weights only), the per-node predictions (Parquet) and the per-epoch history (JSON).

    ``init`` (a warm start, see :func:`plan_start`): ``model_path`` (the previous model),
    ``predictions_path`` (its published predictions, optional: class ids are kept where the
    classes continue) and ``warm_from`` (that night's run id). ORAL then continues from the
    model for ``config.warm_epochs`` epochs (``ORAL.fit(init=...)``). ``progress``: called after
    each epoch with ``(done, total)`` (e.g. a :class:`ProgressLog`)."""
    import torch

    from oral_core.inference import ORALModel
    from oral_core.trainer import ORAL

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    x, edges, train_labels, val_labels, mode = fit_inputs(snapshot, feature_mode, config.seed)
    payload = previous = None
    if init is not None:
        payload = load_payload(init["model_path"])
        previous = previous_class_ids(snapshot.node_ids, init.get("predictions_path"))
    start = time.perf_counter()
    labelled = (torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    if config.shards > 1:  # one graph, several worker processes (oral_core.data_parallel)
        from oral_core.workers import LocalWorkers, fit_data_parallel
        from tasks.workers import dask_workers, train_cluster

        cluster = train_cluster()  # ORAL_TRAIN_CLUSTER: the other workers on a Dask cluster
        oral = fit_data_parallel(config, config.shards, x, edges, *labelled,
                                 threads=max(1, torch.get_num_threads() // config.shards),
                                 start_workers=dask_workers(cluster) if cluster else LocalWorkers,
                                 rendezvous_dir=run_dir if cluster else None,
                                 init=payload, init_class_id=previous, on_progress=progress)
    elif config.consensus_restarts > 1:  # one answer from several fits (oral_core.consensus)
        from oral_core.consensus import fit_consensus

        oral, consensus = fit_consensus(config, x, edges, *labelled, init=payload,
                                        init_class_id=previous, on_progress=progress)
    else:
        oral = ORAL(config).fit(x, edges, *labelled, init=payload, init_class_id=previous,
                                on_progress=progress)
    seconds = time.perf_counter() - start
    from oral_core.reference import discordant, reference_val_predictions

    val = torch.from_numpy(val_labels)
    ref_pred = reference_val_predictions(x, torch.from_numpy(train_labels), val,
                                         scale=config.known_head_scale)
    found = oral.predict() if config.consensus_restarts == 1 else consensus
    reference = worse = better = known_worse = known_better = known_nodes = None
    if ref_pred is not None:
        seen = val >= 0
        reference = float((ref_pred[seen] == val[seen]).float().mean())
        worse, better = discordant(found.class_id, ref_pred, val)
        known_val = torch.where(found.class_id < oral.num_known_, val, torch.full_like(val, -1))
        known_worse, known_better = discordant(found.class_id, ref_pred, known_val)
        known_nodes = int((known_val >= 0).sum())
    model = ORALModel.from_fit(oral, snapshot.class_names, mode)
    # every file of the run folder is written under a unique hidden name and renamed into place:
    # a crash or a full disk leaves the previous file or none, never part of one, and two
    # processes training the same run (a rerun racing the first) cannot mix their bytes
    model_path = snap.write_file_atomically(run_dir / "model.pt",
                                            lambda tmp: torch.save(model.payload, tmp))
    write_predictions(run_dir / "predictions.parquet", snapshot.node_ids, found.class_id,
                      found.confidence, oral.num_known_, snapshot.class_names)
    history_path = run_dir / "history.json"
    history_text = json.dumps(oral.history_, default=float)
    snap.write_file_atomically(history_path, lambda tmp: tmp.write_text(history_text))
    device = str(next(oral.network_.parameters()).device)
    class_id = found.class_id.numpy()
    return TrainResult(
        run_dir=str(run_dir), model_path=str(model_path),
        predictions_path=str(run_dir / "predictions.parquet"), history_path=str(history_path),
        config=config.to_dict(), config_hash=run_config_hash(config, mode), feature_mode=mode,
        val_accuracy=float(found.val_accuracy), epoch=int(found.epoch), epochs=int(oral.epochs_run_),
        num_classes=int(found.num_classes), num_known=int(oral.num_known_),
        num_novel=int(np.unique(class_id[class_id >= oral.num_known_]).size),
        train_seconds=seconds, device=device, start="cold" if init is None else "warm",
        warm_from="" if init is None else str(init.get("warm_from") or ""),
        trained_epochs=int(model.payload["trained_epochs"]),
        batch_size=oral.train_config_.batch_size, batch_reason=oral.batch_reason_,
        novel_wholeness_used=oral.novel_wholeness_used_,
        known_separable=None if oral.separability_ is None else oral.separability_["separable"],
        reference_val_accuracy=reference,
        gate_worse=worse, gate_better=better, gate_known_worse=known_worse,
        gate_known_better=known_better, gate_known_nodes=known_nodes)
