"""The steps of a nightly discovery run as plain functions (no Prefect): the Prefect tasks in
:mod:`tasks.prefect_tasks` wrap them with retries, caching and logging, and tests call them alone.

snapshot -> :func:`read_snapshot` -> :func:`validate` -> :func:`train` -> :func:`score` ->
:func:`describe_classes` -> (MLflow in :mod:`tasks.tracking`) -> :func:`publish` (lineage + DuckDB).
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from data_contracts import snapshots as snap

log = logging.getLogger(__name__)

#: Of the labelled nodes, the share held out for model selection: the paper labels 70% + 15% of
#: known-class nodes for training and validation, i.e. 15/85 of the labelled ones.
VALIDATION_SHARE = 15 / 85


def run_config_hash(config, feature_mode: str) -> str:
    """The configuration's identity for a pipeline run: everything that can change a result,
    the seed included (``oral_core.experiment.config_hash`` leaves the seed out because the
    reproduction keeps one file per seed)."""
    from oral_core.experiment import config_hash

    return f"{config_hash(config, feature_mode)}-s{int(config.seed)}"


class ContractFailed(RuntimeError):
    """The snapshot broke its data contract: nothing is trained or published."""

    def __init__(self, message: str, report_path: Path | None = None):
        super().__init__(message)
        self.report_path = report_path


def pick_snapshot(root: str | Path, graph: str, date: str | dt.date | None = None,
                  last_processed: dt.date | None = None) -> Path:
    """The snapshot of ``date``; without a date the oldest snapshot newer than ``last_processed``
    (the next unprocessed night), else the latest one."""
    if date is not None:
        return snap.select_snapshots(root, graph, date=date)[0]
    snaps = snap.list_snapshots(root, graph)
    if not snaps:
        raise snap.SnapshotError(f"no snapshots for graph {graph!r} under {Path(root) / graph}")
    if last_processed is not None:
        newer = [p for day, p in snaps if day > last_processed]
        if newer:
            return newer[0]
    return snaps[-1][1]


def read_snapshot(path: str | Path) -> snap.SnapshotFiles:
    """Every file's bytes read once and hashed (see :func:`data_contracts.snapshots.read_snapshot_files`)."""
    return snap.read_snapshot_files(path)


def validate(files: snap.SnapshotFiles | Path, report_dir: Path, last_processed: dt.date | None = None,
             min_labels_per_class: int = 3):
    """Run the data contracts; keep the report (JSON and HTML) under ``report_dir``.

    Returns ``(report, json_path, html_path)``. Does not raise on a failed contract: the caller
    decides (the flow stops before training).
    """
    from data_contracts import validate_snapshot

    report = validate_snapshot(files, last_processed_date=last_processed,
                               min_labels_per_class=min_labels_per_class)
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

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def train(snapshot: snap.Snapshot, config, run_dir: Path, feature_mode: str = "auto") -> TrainResult:
    """Fit ORAL on one snapshot (labelled nodes split into training and validation), save the model
    (weights only), the per-node predictions (Parquet) and the per-epoch history (JSON)."""
    import torch

    from oral_core.datasets import auto_feature_mode, preprocess_features
    from oral_core.graph import canonical_edges
    from oral_core.inference import ORALModel
    from oral_core.trainer import ORAL

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    x_raw = torch.from_numpy(np.require(snapshot.x, requirements="W"))
    mode = auto_feature_mode(x_raw) if feature_mode == "auto" else feature_mode
    x = preprocess_features(x_raw, mode)
    edges = canonical_edges(torch.from_numpy(snapshot.edge_index), snapshot.num_nodes)
    train_labels, val_labels = split_labelled(snapshot.labels, config.seed)
    start = time.perf_counter()
    oral = ORAL(config).fit(x, edges, torch.from_numpy(train_labels), torch.from_numpy(val_labels))
    seconds = time.perf_counter() - start
    found = oral.predict()
    model = ORALModel.from_fit(oral, snapshot.class_names, mode)
    # every file of the run folder is written under a unique hidden name and renamed into place:
    # a crash or a full disk leaves the previous file or none, never part of one, and two
    # processes training the same run (a rerun racing the first) cannot mix their bytes
    model_path = snap.write_file_atomically(run_dir / "model.pt",
                                            lambda tmp: torch.save(model.payload, tmp))
    predictions = predictions_table(snapshot, found.class_id.numpy(), found.confidence.numpy(),
                                    oral.num_known)
    snap.write_file_atomically(run_dir / "predictions.parquet",
                               lambda tmp: pq.write_table(predictions, tmp))
    history_path = run_dir / "history.json"
    history_text = json.dumps(oral.history, default=float)
    snap.write_file_atomically(history_path, lambda tmp: tmp.write_text(history_text))
    device = str(next(oral.network.parameters()).device)
    class_id = found.class_id.numpy()
    return TrainResult(
        run_dir=str(run_dir), model_path=str(model_path),
        predictions_path=str(run_dir / "predictions.parquet"), history_path=str(history_path),
        config=config.to_dict(), config_hash=run_config_hash(config, mode), feature_mode=mode,
        val_accuracy=float(found.val_accuracy), epoch=int(found.epoch), epochs=int(config.epochs),
        num_classes=int(found.num_classes), num_known=int(oral.num_known),
        num_novel=int(np.unique(class_id[class_id >= oral.num_known]).size),
        train_seconds=seconds, device=device)


def class_name_of(class_id: int, class_names: list[str], num_known: int) -> str | None:
    """A known class keeps its name; a novel class has none (its lineage id names it)."""
    return class_names[class_id] if 0 <= class_id < num_known and class_id < len(class_names) else None


def predictions_table(snapshot: snap.Snapshot, class_id: np.ndarray, confidence: np.ndarray,
                      num_known: int) -> pa.Table:
    names = np.asarray(list(snapshot.class_names) + [None], dtype=object)
    name_idx = np.where((class_id >= 0) & (class_id < num_known), class_id, len(names) - 1)
    return pa.table({
        "node_id": snapshot.node_ids,
        "class_key": pa.array(class_id.astype(np.int64)),
        "class_name": pa.array(names[name_idx], type=pa.string()),
        "is_novel": pa.array(class_id >= num_known),
        "confidence": pa.array(confidence.astype(np.float64)),
    })


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


def describe_classes(snapshot: snap.Snapshot, predictions: pa.Table, num_known: int,
                     top: int = 5) -> list[dict]:
    """Per predicted class: size, mean confidence, characteristic features (lift), exemplar node
    ids (most confident members), and purity against the truth when the snapshot has it."""
    from oral_core.interpret import characteristic_features, exemplars, purity

    class_id = predictions.column("class_key").to_numpy()
    conf = predictions.column("confidence").to_numpy()
    keys = np.unique(class_id[class_id >= 0])
    if keys.size == 0:
        return []
    dense = np.full(int(keys.max()) + 1, -1, dtype=np.int64)
    dense[keys] = np.arange(keys.size)
    cid = np.where(class_id >= 0, dense[np.maximum(class_id, 0)], -1)
    feats = characteristic_features(snapshot.x, cid, keys.size, top=top,
                                    feature_names=snapshot.feature_names)
    ex = exemplars(cid, conf, keys.size, top=top)
    pur = maj = None
    if snapshot.truth is not None:
        pur, maj = purity(cid, snapshot.truth, keys.size, len(snapshot.truth_names or []))
    out = []
    for j, key in enumerate(keys.tolist()):
        members = cid == j
        out.append({
            "class_key": int(key),
            "class_name": class_name_of(int(key), snapshot.class_names, num_known),
            "is_novel": bool(key >= num_known),
            "size": int(members.sum()),
            "mean_confidence": float(conf[members].mean()),
            "top_features": [{"feature": f.name, "lift": round(float(f.lift), 3),
                              "class_mean": round(float(f.class_mean), 5)} for f in feats[j]],
            "exemplars": [str(v) for v in
                          snapshot.node_ids.take(pa.array(ex[j], type=pa.int64())).to_pylist()],
            "purity": None if pur is None or np.isnan(pur[j]) else float(pur[j]),
            "majority_true_label": (None if maj is None or maj[j] < 0
                                    else snapshot.truth_names[int(maj[j])]),
        })
    return out


def class_members(predictions: pa.Table) -> dict[int, np.ndarray]:
    """Class key -> member node ids (as strings), vectorised by one sort."""
    class_id = predictions.column("class_key").to_numpy()
    ids = np.asarray(predictions.column("node_id").cast(pa.string()).to_numpy(zero_copy_only=False),
                     dtype=object)
    order = np.argsort(class_id, kind="stable")
    keys, starts = np.unique(class_id[order], return_index=True)
    parts = np.split(ids[order], starts[1:])
    return {int(k): p for k, p in zip(keys, parts) if k >= 0}


def publish(warehouse, run: dict, snapshot_row: dict, predictions: pa.Table, classes: list[dict],
            graph: str, snapshot_date: dt.date, lineage_config=None) -> dict:
    """Lineage against the graph's previous run, then everything in one DuckDB transaction.

    Returns ``{"run_id", "lineage": {class_key: lineage_id}, "statuses": {lineage_id: status}}``.
    """
    from tasks.lineage import track_lineage
    from tasks.warehouse import make_run_id

    run_id = make_run_id(graph, run["content_hash"], run["config_hash"])
    previous = warehouse.previous_run(graph, snapshot_date)
    max_index = warehouse.max_novel_index(graph, before_date=snapshot_date, exclude_run_id=run_id)
    names = {c["class_key"]: c["class_name"] for c in classes}
    result = track_lineage(previous, class_members(predictions), graph=graph,
                           snapshot_date=snapshot_date, current_names=names,
                           max_novel_index=max_index, config=lineage_config)
    for c in classes:
        c["lineage_id"] = result.lineage_of[c["class_key"]]
    assignments = predictions.select(["node_id", "class_key", "is_novel", "confidence"])
    warehouse.publish_run(run | {"run_id": run_id}, snapshot_row, assignments, classes, result.rows)
    statuses = {r.lineage_id: r.status for r in result.rows}
    return {"run_id": run_id, "lineage": {int(k): v for k, v in result.lineage_of.items()},
            "statuses": statuses}


def track(tracking_cfg, graph: str, run: dict, trained: dict, report_paths: tuple[str, str],
          classes: list[dict], scores: dict | None, tags: dict) -> dict:
    """MLflow for one run: params, per-epoch metrics, artifacts, the model, a registered version
    and the champion gate (:mod:`tasks.tracking`).

    Idempotent per pipeline run id (tag ``oral_run_id`` on the version):

    - a rerun, or a retry after a crash between MLflow and DuckDB, finds the registered version
      that carries this ``run_id`` and reuses it (no second version); when the crash came before
      the champion gate had decided (no ``champion_decision`` tag), the gate runs now;
    - two processes tracking the same run at once both register, then both look again: the
      lowest version carrying the ``run_id`` is kept, the other process deletes its own version
      (and its MLflow run), and both return the kept one, so a run never keeps two versions.

    A failing search is retried and then raised (:class:`tasks.tracking.TrackingError`): taking
    it for "no version yet" would register a duplicate.
    """
    from tasks import tracking

    name = tracking.model_name(graph)
    oral_run_id = run["run_id"]
    client = tracking.client(tracking_cfg)
    existing = _versions_of_run(tracking_cfg, client, name, oral_run_id)
    if existing:
        return _reuse_version(tracking_cfg, client, graph, existing, trained)
    history = json.loads(Path(trained["history_path"]).read_text())
    params = dict(trained["config"]) | {"feature_mode": trained["feature_mode"],
                                        "config_hash": trained["config_hash"], "graph": graph,
                                        "oral_run_id": oral_run_id}
    metrics = {"val_accuracy": trained["val_accuracy"], "selected_epoch": trained["epoch"],
               "num_classes": trained["num_classes"], "num_novel": trained["num_novel"],
               "train_seconds": trained["train_seconds"]}
    if scores:
        metrics["scores"] = {k: v for k, v in scores.items() if isinstance(v, (int, float))}
    artifacts = {"predictions": pq.read_table(trained["predictions_path"]),
                 "class_summary": classes, "validation_report": [Path(p) for p in report_paths]}
    mlflow_run_id, model_uri = tracking.log_training_run(
        tracking_cfg, graph, params, history, artifacts, dict(tags) | {"contracts_passed": "true"},
        Path(trained["model_path"]), metrics, run_name=f"{graph}-{tags.get('snapshot_date', '')}")
    version = tracking.register_model(
        tracking_cfg, graph, model_uri, mlflow_run_id, val_accuracy=trained["val_accuracy"],
        contracts_passed=True, snapshot_date=tags.get("snapshot_date"),
        tags={"oral_run_id": oral_run_id})
    # another process may have tracked the same run meanwhile: settle on the lowest version
    found = _versions_of_run(tracking_cfg, client, name, oral_run_id)
    if found and min(int(v.version) for v in found) != int(version):
        log.warning("%s: run %s was registered concurrently by another process; dropping version "
                    "%d in favour of version %d", name, oral_run_id, int(version),
                    min(int(v.version) for v in found))
        return _reuse_version(tracking_cfg, client, graph, found, trained)
    promoted, reason = tracking.promote_champion(tracking_cfg, graph, version, True,
                                                 trained["val_accuracy"])
    log.info("MLflow run %s, %s version %d: %s", mlflow_run_id, name, version, reason)
    return {"mlflow_run_id": mlflow_run_id, "model_name": name, "model_version": int(version),
            "promoted": bool(promoted), "reason": reason, "tracking_uri": tracking_cfg.safe_uri()}


def _versions_of_run(tracking_cfg, client, name: str, oral_run_id: str) -> list:
    """The registered versions of ``name`` tagged with this pipeline run id (retried, bounded)."""
    import re

    from mlflow.exceptions import MlflowException

    from tasks import tracking

    if not re.fullmatch(r"[0-9a-f]{16,64}", str(oral_run_id)):  # it goes into a filter string
        raise ValueError(f"not a pipeline run id: {oral_run_id!r}")

    def search():
        try:
            return client.search_model_versions(
                f"name = '{name}' and tags.oral_run_id = '{oral_run_id}'")
        except MlflowException as err:
            if str(err.error_code) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
                return []
            raise
    return list(tracking._retry(tracking_cfg, search,
                                f"searching versions of {name!r} for run {oral_run_id}"))


def _reuse_version(tracking_cfg, client, graph: str, versions: list, trained: dict) -> dict:
    """Keep the lowest of ``versions`` (all tagged with one pipeline run id), delete the others
    (a crashed or concurrent duplicate; never one an alias points at), finish the champion gate
    if it never decided for the kept one, and describe it like :func:`track` does."""
    from mlflow.exceptions import MlflowException

    from tasks import tracking

    name = tracking.model_name(graph)
    keeper = min(versions, key=lambda v: int(v.version))
    champion = tracking.champion_version(tracking_cfg, graph)
    for extra in versions:
        if int(extra.version) == int(keeper.version):
            continue
        if champion == int(extra.version) or getattr(extra, "aliases", None):
            log.warning("%s: version %s duplicates version %s (same run) but carries an alias; "
                        "left in place", name, extra.version, keeper.version)
            continue

        def drop(extra=extra):
            try:
                client.delete_model_version(name, str(extra.version))
            except MlflowException as err:  # the other process dropped it already
                if str(err.error_code) not in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
                    raise
        tracking._retry(tracking_cfg, drop, f"deleting duplicate version {extra.version} of {name!r}")
        if extra.run_id and extra.run_id != keeper.run_id:
            try:  # best effort: the duplicate's MLflow run goes to the bin (mlflow gc purges it)
                client.set_tag(extra.run_id, "oral_duplicate_of", keeper.run_id)
                client.delete_run(extra.run_id)
            except Exception as err:  # noqa: BLE001
                log.warning("could not delete duplicate MLflow run %s: %s", extra.run_id, err)
    reason = "reused the registered version"
    if "champion_decision" not in (keeper.tags or {}):  # a crash came before the gate decided
        accuracy = (keeper.tags or {}).get("val_accuracy", trained.get("val_accuracy"))
        _, reason = tracking.promote_champion(tracking_cfg, graph, keeper.version, True,
                                              float(accuracy))
        champion = tracking.champion_version(tracking_cfg, graph)
    return {"mlflow_run_id": keeper.run_id, "model_name": name, "model_version": int(keeper.version),
            "promoted": champion == int(keeper.version), "reason": reason,
            "tracking_uri": tracking_cfg.safe_uri()}
