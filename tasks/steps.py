"""The steps of a nightly discovery run as plain functions (no Prefect): the Prefect tasks in
:mod:`tasks.prefect_tasks` wrap them with retries, caching and logging, and tests call them alone.

snapshot -> :func:`read_snapshot` -> :func:`validate` -> :func:`train` -> :func:`score` ->
:func:`describe_classes` -> (MLflow in :mod:`tasks.registry`) -> :func:`publish` (lineage + DuckDB).

Per-node outputs stay in numpy and Arrow buffers, never one Python object per node, so a graph of
millions of nodes is handled in bounded memory: :func:`write_predictions` writes the predictions
Parquet in row groups of :data:`CHUNK_ROWS` rows, and :func:`publish` hands that file (or the
table) to DuckDB, which streams it into ``node_assignments``; lineage pairs the nights' nodes
by a join in DuckDB and compares 8-byte stand-ins for their ids (:func:`lineage_members`).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from data_contracts import snapshots as snap

log = logging.getLogger(__name__)

#: Of the labelled nodes, the share held out for model selection: the paper labels 70% + 15% of
#: known-class nodes for training and validation, i.e. 15/85 of the labelled ones.
VALIDATION_SHARE = 15 / 85

#: Rows per row group of the predictions Parquet (and per Arrow chunk built to write one).
CHUNK_ROWS = 1_000_000


def run_config_hash(config, feature_mode: str) -> str:
    """The configuration's identity for a pipeline run: everything that can change a result,
    the seed included (``oral_core.identity.config_hash`` leaves the seed out because the
    reproduction keeps one file per seed)."""
    from oral_core.identity import config_hash

    return f"{config_hash(config, feature_mode)}-s{int(config.seed)}"


class ContractFailed(RuntimeError):
    """The snapshot broke its data contract: nothing is trained or published."""

    def __init__(self, message: str, report_path: Path | None = None):
        super().__init__(message)
        self.report_path = report_path


def pick_snapshot(root: str | Path, graph: str, date: str | dt.date | None = None,
                  last_processed: dt.date | None = None) -> Path:
    """The snapshot of ``date``; without a date the next unprocessed night: the oldest snapshot
    when the graph has no published run (``last_processed`` None), else the oldest snapshot newer
    than ``last_processed``, and the latest one when every snapshot has been processed."""
    if date is not None:
        return snap.select_snapshots(root, graph, date=date)[0]
    snaps = snap.list_snapshots(root, graph)
    if not snaps:
        raise snap.SnapshotError(f"no snapshots for graph {graph!r} under {Path(root) / graph}")
    newer = [p for day, p in snaps if last_processed is None or day > last_processed]
    return newer[0] if newer else snaps[-1][1]


def read_snapshot(path: str | Path) -> snap.SnapshotFiles:
    """Every file's bytes read once and hashed (see :func:`data_contracts.snapshots.read_snapshot_files`)."""
    return snap.read_snapshot_files(path)


def validate(files: snap.SnapshotFiles | Path, report_dir: Path, last_processed: dt.date | None = None,
             min_labels_per_class: int = 3, state_dir: Path | None = None):
    """Run the data contracts; keep the report (JSON and HTML) under ``report_dir``.

    Returns ``(report, json_path, html_path)``. Does not raise on a failed contract: the caller
    decides (the flow stops before training). ``state_dir``: where the GX context and its Data
    Docs live (``<state>/gx``; ``report.data_docs`` holds the pages).
    """
    from data_contracts import validate_snapshot

    report = validate_snapshot(files, last_processed_date=last_processed,
                               min_labels_per_class=min_labels_per_class, state_dir=state_dir)
    path = Path(files.path if isinstance(files, snap.SnapshotFiles) else files)
    stem = f"{path.name.replace('=', '-')}-{(report.content_hash or 'unreadable')[:12]}"
    report_dir.mkdir(parents=True, exist_ok=True)
    json_path = report.write_json(report_dir / f"{stem}.json") or report_dir / f"{stem}.json"
    html_path = report.write_html(report_dir / f"{stem}.html") or report_dir / f"{stem}.html"
    return report, Path(json_path), Path(html_path)


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
    #: novel classes the known-class floor joined to known classes (``known_floor``; 0: none,
    #: or the floor is off)
    floor_joined: int = 0
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
    ids, prev_ids = _arrow(node_ids), prev.column("node_id")
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
    else:
        oral = ORAL(config).fit(x, edges, *labelled, init=payload, init_class_id=previous,
                                on_progress=progress)
    seconds = time.perf_counter() - start
    from oral_core.reference import discordant, reference_val_predictions

    val = torch.from_numpy(val_labels)
    ref_pred = reference_val_predictions(x, torch.from_numpy(train_labels), val,
                                         scale=config.known_head_scale)
    found = oral.predict()
    reference = oral.reference_val_accuracy  # measured by the fit when known_floor is on
    worse = better = known_worse = known_better = known_nodes = None
    if ref_pred is not None:
        seen = val >= 0
        if reference is None:
            reference = float((ref_pred[seen] == val[seen]).float().mean())
        worse, better = discordant(found.class_id, ref_pred, val)
        known_val = torch.where(found.class_id < oral.num_known, val, torch.full_like(val, -1))
        known_worse, known_better = discordant(found.class_id, ref_pred, known_val)
        known_nodes = int((known_val >= 0).sum())
    model = ORALModel.from_fit(oral, snapshot.class_names, mode)
    # every file of the run folder is written under a unique hidden name and renamed into place:
    # a crash or a full disk leaves the previous file or none, never part of one, and two
    # processes training the same run (a rerun racing the first) cannot mix their bytes
    model_path = snap.write_file_atomically(run_dir / "model.pt",
                                            lambda tmp: torch.save(model.payload, tmp))
    write_predictions(run_dir / "predictions.parquet", snapshot.node_ids, found.class_id,
                      found.confidence, oral.num_known, snapshot.class_names)
    history_path = run_dir / "history.json"
    history_text = json.dumps(oral.history, default=float)
    snap.write_file_atomically(history_path, lambda tmp: tmp.write_text(history_text))
    device = str(next(oral.network.parameters()).device)
    class_id = found.class_id.numpy()
    return TrainResult(
        run_dir=str(run_dir), model_path=str(model_path),
        predictions_path=str(run_dir / "predictions.parquet"), history_path=str(history_path),
        config=config.to_dict(), config_hash=run_config_hash(config, mode), feature_mode=mode,
        val_accuracy=float(found.val_accuracy), epoch=int(found.epoch), epochs=int(oral.epochs_run),
        num_classes=int(found.num_classes), num_known=int(oral.num_known),
        num_novel=int(np.unique(class_id[class_id >= oral.num_known]).size),
        train_seconds=seconds, device=device, start="cold" if init is None else "warm",
        warm_from="" if init is None else str(init.get("warm_from") or ""),
        trained_epochs=int(model.payload["trained_epochs"]),
        batch_size=oral.train_config.batch_size, batch_reason=oral.batch_reason,
        novel_wholeness_used=oral.novel_wholeness_used,
        known_separable=None if oral.separability is None else oral.separability["separable"],
        reference_val_accuracy=reference, floor_joined=len(oral.floor_joined),
        gate_worse=worse, gate_better=better, gate_known_worse=known_worse,
        gate_known_better=known_better, gate_known_nodes=known_nodes)


# ------------------------------------------------------------------------------- warm starts
@dataclass
class StartPlan:
    """How tonight's training starts: ``warm`` (continuing a previous model) or ``cold``, with
    a one-line ``reason``. ``key`` is what the start adds to the run's identity (the run id, the
    run folder and the training cache): ``""`` for a cold start, ``+warm-<12 hex>`` (the run id
    of the night whose model it continues) for a warm one. ``init`` is what
    :func:`train` continues from (``model_path``, ``predictions_path``, ``warm_from``).
    ``previous_predictions`` (the previous champion's predictions, whatever the start) and
    ``history`` (its ``emergence_history`` tag) feed the emergence check (:mod:`tasks.emergence`)."""

    start: str
    reason: str
    key: str = ""
    init: dict | None = None
    source_version: int | None = None
    source_run_id: str = ""
    previous_predictions: str | None = None
    history: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def start_problem(payload: dict, in_dim: int, feature_mode: str, config,
                  class_names: list[str]) -> str | None:
    """Why ``payload`` (a previous model) cannot start tonight's training, or None when it can:
    the feature space (width, preprocessing), the configuration (its hash, the seed included;
    ``oral_core.identity.config_hash``) or the known classes changed."""
    from oral_core.config import ORALConfig

    if int(payload.get("in_dim", -1)) != int(in_dim):
        return f"the feature dimension changed ({payload.get('in_dim')} -> {in_dim})"
    if str(payload.get("feature_mode")) != str(feature_mode):
        return (f"the feature preprocessing changed ({payload.get('feature_mode')} -> "
                f"{feature_mode})")
    try:
        before = run_config_hash(ORALConfig.from_dict(payload.get("config") or {}), feature_mode)
    except (TypeError, ValueError) as err:
        return f"the previous model's configuration cannot be read ({err})"
    now = run_config_hash(config, feature_mode)
    if before != now:
        return f"the configuration changed (hash {before} -> {now})"
    if list(payload.get("class_names") or []) != list(class_names):
        return "the known classes changed"
    return None


def refresh_due(payload: dict, cold_every: int) -> str | None:
    """Why tonight must start cold although the previous model could continue, or None: a warm
    chain runs at most ``cold_every - 1`` nights after a cold one (``cold_every`` 0: never
    forced). Warm fits keep the classes they start with and miss classes that emerge (measured:
    benchmarks/results/warm_start/warm_start.md), so a periodic cold night lets those be found."""
    if cold_every <= 0:
        return None
    nights = int(payload.get("warm_nights", 0)) + 1  # tonight's, counted since the last cold fit
    if nights >= cold_every:
        return (f"a cold start every {cold_every} nights (ORAL_COLD_EVERY): {nights - 1} warm "
                f"nights since the last cold one")
    return None


def plan_start(tracking_cfg, graph: str, snapshot_date: dt.date, content_hash: str, in_dim: int,
               feature_mode: str, config, class_names: list[str], dest_root: Path,
               cold: bool = False, cold_every: int = 0) -> StartPlan:
    """Warm or cold (docs/operators.md, "Warm starts"). Warm when the champion of the night
    before (:func:`tasks.registry.champion.previous_champion`) loads and was trained on the same feature space and
    configuration (:func:`start_problem`) and no periodic cold night is due
    (:func:`refresh_due`); cold, with the reason, otherwise or when ``cold``.
    A snapshot equal to the champion's (same content) reuses the champion's training instead:
    the same start key, hence the training cache and run folder of that night."""
    if cold:
        return StartPlan("cold", "cold start requested")
    from tasks.registry.champion import download_model, previous_champion
    from tasks.registry.store import client as tracking_client

    mv = previous_champion(tracking_cfg, graph, snapshot_date)
    if mv is None:
        return StartPlan("cold", f"no champion of oral-{graph} before {snapshot_date}")
    tags = mv.tags or {}
    version = int(mv.version)
    source = str(tags.get("oral_run_id") or f"v{version}")
    where = f"champion v{version} ({tags.get('snapshot_date', '?')})"
    try:
        model_path, predictions_path = download_model(tracking_cfg, graph, mv,
                                                      Path(dest_root) / f"v{version}")
        payload = load_payload(model_path)
    except Exception as err:  # noqa: BLE001 - any failure to fetch or read it means cold
        return StartPlan("cold", f"the previous {where} failed to load "
                                 f"({type(err).__name__}: {' '.join(str(err).split())[:200]})",
                         source_version=version, source_run_id=source)
    previous = {"previous_predictions": None if predictions_path is None else str(predictions_path),
                "history": str(tags.get("emergence_history") or "")}
    problem = start_problem(payload, in_dim, feature_mode, config, class_names)
    if problem:
        return StartPlan("cold", f"{problem} since the previous {where}",
                         source_version=version, source_run_id=source, **previous)
    if tags.get("content_hash") == content_hash:  # an unchanged graph: reuse that training
        key = str(tags.get("start_key") or "")
        if not key:
            return StartPlan("cold", f"snapshot unchanged since {where}, which started cold: "
                                     "its training is reused", source_version=version,
                             source_run_id=source, **previous)
        # the same key finds that training in the cache; should the cache have lost it, the
        # training runs again from the model the champion itself continued
        init = None
        try:
            src = int(tags.get("warm_from_version", ""))
            client = tracking_client(tracking_cfg)
            src_mv = client.get_model_version(f"oral-{graph}", str(src))
            src_model, src_predictions = download_model(tracking_cfg, graph, src_mv,
                                                        Path(dest_root) / f"v{src}")
            load_payload(src_model)
            init = {"model_path": str(src_model), "warm_from": str(tags.get("warm_from", "")),
                    "predictions_path": None if src_predictions is None else str(src_predictions)}
        except Exception as err:  # noqa: BLE001
            return StartPlan("cold", f"snapshot unchanged since {where}, but the model it "
                                     f"continued cannot be loaded ({type(err).__name__})",
                             source_version=version, source_run_id=source, **previous)
        return StartPlan("warm", f"snapshot unchanged since {where}: its training is reused",
                         key=key, init=init, source_version=src,
                         source_run_id=str(tags.get("warm_from", "")), **previous)
    due = refresh_due(payload, cold_every)
    if due:
        return StartPlan("cold", f"{due} (the previous {where})", source_version=version,
                         source_run_id=source, **previous)
    init = {"model_path": str(model_path), "warm_from": source,
            "predictions_path": None if predictions_path is None else str(predictions_path)}
    return StartPlan("warm", f"warm start from {where}", key=f"+warm-{source[:12]}", init=init,
                     source_version=version, source_run_id=source, **previous)


def _numpy(values) -> np.ndarray:
    """A torch tensor (any device) or array-like as a numpy array (no copy for CPU data)."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def _arrow(values) -> pa.Array | pa.ChunkedArray:
    return values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(_numpy(values))


def predictions_schema(node_id_type: pa.DataType) -> pa.Schema:
    """The columns of ``predictions.parquet``: ``node_id`` (the snapshot's type), ``class_key``
    (int64; known ``0..K-1``, novel ``K..``), ``class_name`` (the known class's name, null for a
    novel class), ``is_novel``, ``confidence`` (float64)."""
    return pa.schema([("node_id", node_id_type), ("class_key", pa.int64()),
                      ("class_name", pa.string()), ("is_novel", pa.bool_()),
                      ("confidence", pa.float64())])


def _predictions_chunk(node_ids, class_id: np.ndarray, confidence: np.ndarray, num_known: int,
                       names: pa.Array) -> pa.Table:
    """The predictions rows of one chunk. ``names``: the known class names plus a final null;
    each row's name is taken from it by index (Arrow ``take``), never a Python string per row."""
    class_id = np.asarray(class_id).astype(np.int64, copy=False)
    known = (class_id >= 0) & (class_id < min(num_known, len(names) - 1))
    name_idx = np.where(known, class_id, len(names) - 1)
    node_ids = _arrow(node_ids)
    return pa.table({
        "node_id": node_ids,
        "class_key": pa.array(class_id),
        "class_name": names.take(pa.array(name_idx)),
        "is_novel": pa.array(class_id >= num_known),
        "confidence": pa.array(np.asarray(confidence).astype(np.float64, copy=False)),
    }, schema=predictions_schema(node_ids.type))


def _class_name_lookup(class_names) -> pa.Array:
    return pa.array(list(class_names) + [None], type=pa.string())


def predictions_table(snapshot: snap.Snapshot, class_id, confidence, num_known: int) -> pa.Table:
    """Every node's prediction as one Arrow table (columns: :func:`predictions_schema`). For a
    large graph write them with :func:`write_predictions` instead, chunk by chunk."""
    return _predictions_chunk(snapshot.node_ids, _numpy(class_id), _numpy(confidence), num_known,
                              _class_name_lookup(snapshot.class_names))


def write_predictions(path: str | Path, node_ids, class_id, confidence, num_known: int,
                      class_names, chunk_size: int = CHUNK_ROWS) -> Path:
    """Write the per-node predictions to the Parquet file ``path``, atomically, one row group
    of at most ``chunk_size`` rows at a time.

    ``node_ids``: an Arrow array (the snapshot's) or a numpy array; ``class_id`` and
    ``confidence``: numpy arrays or torch tensors, one entry per node; ``class_names``: the
    known classes' names. Only one chunk's Arrow columns exist at a time (slices of the inputs,
    no Python object per node), and the file reads back as :func:`predictions_table` would
    build it (same columns, types and rows). The file is written under a temporary name and
    renamed into place (:func:`data_contracts.snapshots.write_file_atomically`): a failure
    leaves the previous file or none."""
    chunk_size = int(chunk_size)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    class_id, confidence = _numpy(class_id), _numpy(confidence)
    if not isinstance(node_ids, (pa.Array, pa.ChunkedArray)):
        node_ids = _numpy(node_ids)
    n = len(node_ids)
    if class_id.shape != (n,) or confidence.shape != (n,):
        raise ValueError(f"one class id and one confidence per node: {n} nodes, class_id "
                         f"{class_id.shape}, confidence {confidence.shape}")
    names = _class_name_lookup(class_names)
    if isinstance(node_ids, (pa.Array, pa.ChunkedArray)):
        node_type = node_ids.type
    elif node_ids.dtype.kind in "OUS":
        node_type = pa.array(node_ids[:1]).type if n else pa.string()
    else:
        node_type = pa.from_numpy_dtype(node_ids.dtype)
    schema = predictions_schema(node_type)

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, schema) as writer:
            for start in range(0, n, chunk_size):
                stop = min(n, start + chunk_size)
                chunk = _predictions_chunk(node_ids[start:stop], class_id[start:stop],
                                           confidence[start:stop], num_known, names)
                writer.write_table(chunk, row_group_size=chunk_size)
    return snap.write_file_atomically(path, write)


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
    from oral_core.inference import class_name_of
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
    out = []
    for j, key in enumerate(keys.tolist()):
        members = conf_sorted[bounds[j]:bounds[j + 1]]
        out.append({
            "class_key": int(key),
            "class_name": class_name_of(int(key), snapshot.class_names, num_known),
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


def node_keys(index: np.ndarray) -> np.ndarray:
    """Compact stand-ins for node ids: node ``i`` (``0 <= i < 2**32``) as a two-character numpy
    string (``U2``, 8 bytes), bijective and built without a Python object per node.

    Lineage (:func:`tasks.warehouse.lineage.track_lineage`) compares member ids only for
    equality, after turning them into a numpy string array; these keys keep that at 8 bytes per
    node where node id strings would take their longest id's length times 4. Each character is
    a valid code point (``U+10000`` plus 16 bits of ``i``), so a key is an ordinary string if
    ever read."""
    index = np.asarray(index, dtype=np.int64)
    if index.size and (index.min() < 0 or index.max() >= 2**32):
        raise ValueError("node keys cover node indices 0 .. 2**32-1")
    units = np.empty((index.size, 2), dtype=np.uint32)
    units[:, 0] = 0x10000 + (index >> 16)
    units[:, 1] = 0x10000 + (index & 0xFFFF)
    return units.view(np.dtype("U2")).reshape(index.shape)


def _members(keys: np.ndarray, node: np.ndarray, valid: np.ndarray) -> dict[int, np.ndarray]:
    """Class key -> ``node[i]`` of the rows ``i`` of that class (``valid`` rows only), by one
    stable sort; one Python object per class."""
    idx = np.flatnonzero(valid)
    idx = idx[np.argsort(keys[idx], kind="stable")]
    sorted_keys = keys[idx]
    starts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    firsts = np.concatenate([[0], starts]) if idx.size else starts
    return {int(sorted_keys[i]): part for i, part in zip(firsts, np.split(node[idx], starts))}


def lineage_members(warehouse, predictions: pa.Table | str | Path, previous=None):
    """Members per class of the previous run and of tonight's, for
    :func:`tasks.warehouse.lineage.track_lineage`, as :func:`node_keys` (never a Python string
    per node).

    ``predictions``: tonight's table or Parquet file (``node_id``, ``class_key``; keys below 0
    are unassigned and belong to no class); ``previous``: the
    :class:`tasks.warehouse.lineage.PreviousClasses` of the previous run (its ``members`` are
    ignored), or None. The nodes of both runs are paired by one join in DuckDB
    (:meth:`tasks.warehouse.Warehouse.node_pairs`) and node ``i`` of that join gets key ``i``:
    a node keeps one key across the two runs, which is all lineage compares.

    Returns ``(previous with members filled in, or None; current members)``; every class of
    the previous run has an entry, empty when it had no nodes.
    """
    from tasks.warehouse import NO_CLASS

    if previous is None:
        if isinstance(predictions, pa.Table):
            cur = predictions.column("class_key")
        else:
            cur = pq.read_table(predictions, columns=["class_key"]).column("class_key")
        cur = np.asarray(pc.fill_null(cur, -1).to_numpy(), dtype=np.int64)
        return None, _members(cur, node_keys(np.arange(cur.size)), cur >= 0)
    prev, cur = warehouse.node_pairs(previous.run_id, predictions)
    node = node_keys(np.arange(prev.size))
    members = _members(prev, node, prev != NO_CLASS)
    empty = node[:0]
    members = {int(k): members.get(int(k), empty) for k in previous.lineage} | members
    current = _members(cur, node, cur >= 0)  # NO_CLASS is negative too
    return dataclasses.replace(previous, members=members), current


def lineage(warehouse, run: dict, predictions: pa.Table | str | Path, classes: list[dict],
            graph: str, snapshot_date: dt.date, lineage_config=None) -> dict:
    """Lineage of tonight's classes against the graph's previous run (read from DuckDB, nothing
    written). ``predictions`` as in :func:`publish`.

    Returns ``{"run_id", "result": tasks.warehouse.lineage.LineageResult, "classes": classes
    with their lineage_id}``; :func:`write_run` publishes it."""
    from tasks.warehouse.lineage import track_lineage
    from tasks.warehouse import make_run_id

    if not isinstance(predictions, pa.Table):
        predictions = os.fspath(predictions)
    run_id = make_run_id(graph, snapshot_date, run["content_hash"], run["config_hash"])
    previous = warehouse.previous_run(graph, snapshot_date, with_members=False)
    max_index = warehouse.max_novel_index(graph, before_date=snapshot_date, exclude_run_id=run_id)
    names = {c["class_key"]: c["class_name"] for c in classes}
    previous, current = lineage_members(warehouse, predictions, previous)
    result = track_lineage(previous, current, graph=graph,
                           snapshot_date=snapshot_date, current_names=names,
                           max_novel_index=max_index, config=lineage_config)
    classes = [dict(c, lineage_id=result.lineage_of[c["class_key"]]) for c in classes]
    return {"run_id": run_id, "result": result, "classes": classes}


def write_run(warehouse, run: dict, snapshot_row: dict, predictions: pa.Table | str | Path,
              found: dict) -> dict:
    """Everything of one run in one DuckDB transaction, with the lineage ``found`` by
    :func:`lineage`. Returns ``{"run_id", "lineage": {class_key: lineage_id},
    "statuses": {lineage_id: status}}``."""
    if not isinstance(predictions, pa.Table):
        predictions = os.fspath(predictions)
    result = found["result"]
    warehouse.publish_run(run | {"run_id": found["run_id"]}, snapshot_row, predictions,
                          found["classes"], result.rows)
    statuses = {r.lineage_id: r.status for r in result.rows}
    return {"run_id": found["run_id"],
            "lineage": {int(k): v for k, v in result.lineage_of.items()}, "statuses": statuses}


def publish(warehouse, run: dict, snapshot_row: dict, predictions: pa.Table | str | Path,
            classes: list[dict], graph: str, snapshot_date: dt.date, lineage_config=None) -> dict:
    """Lineage against the graph's previous run (:func:`lineage`), then everything in one DuckDB
    transaction (:func:`write_run`); the nightly flow runs the two as tasks of their own.

    ``predictions``: the run's predictions (:func:`predictions_schema`) as an Arrow table or,
    for a large graph, the path of its ``predictions.parquet``, which DuckDB then streams
    (:meth:`tasks.warehouse.Warehouse.publish_run`); lineage pairs the nodes with the previous
    run's in DuckDB (:func:`lineage_members`). Neither builds a Python object per node.
    ``classes`` get their ``lineage_id``.

    Returns ``{"run_id", "lineage": {class_key: lineage_id}, "statuses": {lineage_id: status}}``.
    """
    found = lineage(warehouse, run, predictions, classes, graph, snapshot_date, lineage_config)
    for c, with_id in zip(classes, found["classes"]):
        c["lineage_id"] = with_id["lineage_id"]
    return write_run(warehouse, run, snapshot_row, predictions, found)
