"""Training as a flow of its own, for a work pool of GPU hosts (deployment ``train-remote/gpu``).

With remote training on (``ORAL_REMOTE_TRAINING=1`` or the nightly flow's ``remote_training``
parameter), :func:`flows.nightly.nightly_discovery` validates the snapshot on its own host and
hands training to this flow through :func:`train_via_deployment`
(``prefect.deployments.run_deployment``), then waits for it. Nothing large travels through Prefect:

- the snapshot goes **by path**: both hosts must see the snapshot root at the same path (a shared
  or network file system); :func:`train_remote` reads the folder again and refuses to train when
  its content hash differs from the one the nightly flow validated;
- the model, the predictions and the per-epoch history come back **through the run folder**
  ``<state dir>/runs/<graph>/<run id>/``, which both hosts must also see at the same path, with
  ``train_result.json``: the small dict the in-process ``train`` task returns, plus the hashes it
  was trained for. The nightly flow reads that file; MLflow logging and registration stay on the
  nightly host (the MLflow server's artifact store when ``ORAL_TRACKING_URI`` is ``http://``).

A finished ``train_result.json`` for the same snapshot and configuration is reused (the remote
equivalent of the in-process task's cache): a nightly run retried after a timeout picks up the
training that finished meanwhile instead of training again.
"""
from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path

from prefect import flow, get_run_logger

RESULT_FILE = "train_result.json"


class RemoteTrainingError(RuntimeError):
    """Remote training did not give a usable result (not deployed, no worker, failed, timed out,
    the snapshot changed, or the run folder is not shared)."""


class SnapshotMismatch(RemoteTrainingError):
    """The snapshot read on the training host is not the one the nightly flow validated."""


# ------------------------------------------------------------------------------ device report
def describe_device(requested: str | None) -> tuple[str, str]:
    """``(device, why)`` that ``oral_core.trainer.select_device`` will pick for ``requested``,
    with the GPU's name when CUDA is used (for a log line before training starts)."""
    import torch

    requested = requested or "auto"
    cuda = torch.cuda.is_available()
    if requested == "auto":
        device = "cuda" if cuda else "cpu"
        why = "device auto: CUDA is available" if cuda else "device auto: no CUDA device found"
    else:
        device = requested
        why = "requested" + ("" if not device.startswith("cuda") or cuda else
                             " but CUDA is not available: training will fail")
    if device.startswith("cuda") and cuda:
        index = torch.device(device).index or 0
        if index < torch.cuda.device_count():
            why += f"; {torch.cuda.get_device_name(index)}"
    return device, why


# ---------------------------------------------------------------------------- the run folder
def check_snapshot(snapshot_path: str | Path, content_hash: str):
    """Read the snapshot folder (every file's bytes once) and check its content hash.

    Returns the :class:`data_contracts.snapshots.SnapshotFiles`. Raises :class:`SnapshotMismatch`
    when the folder is missing on this host or its content differs from ``content_hash``.
    """
    from data_contracts import snapshots as snap
    from tasks import intake

    host = socket.gethostname()
    if not Path(snapshot_path).is_dir():
        raise SnapshotMismatch(
            f"snapshot {snapshot_path} is not visible on training host {host}: the nightly host "
            "and the training host must see the snapshot root at the same path")
    try:
        files = intake.read_snapshot(snapshot_path)
    except snap.SnapshotError as err:
        raise SnapshotMismatch(f"snapshot {snapshot_path} cannot be read on training host {host}: "
                               f"{err}") from err
    if files.content_hash != content_hash:
        raise SnapshotMismatch(
            f"snapshot {snapshot_path} on training host {host} has content hash "
            f"{files.content_hash[:12]}, not the validated {content_hash[:12]}: it changed after "
            "validation or the hosts see different files; nothing was trained")
    return files


def write_result(run_dir: str | Path, result: dict, **extra) -> Path:
    """``train_result.json`` in ``run_dir``, written atomically."""
    path = Path(run_dir) / RESULT_FILE
    tmp = path.with_name(f".{RESULT_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result | extra, indent=1, default=str))
    tmp.replace(path)
    return path


def read_result(run_dir: str | Path, content_hash: str, config_hash: str,
                start_key: str = "") -> dict | None:
    """The training result in ``run_dir`` for this snapshot, configuration and start (``""``
    cold, else the warm start's key), or None when it is missing, was made for something else,
    or its model or predictions file is gone."""
    path = Path(run_dir) / RESULT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("content_hash") != content_hash or data.get("config_hash") != config_hash:
        return None
    if (data.get("start_key") or "") != (start_key or ""):
        return None
    if not all(Path(data.get(k, "")).is_file() for k in ("model_path", "predictions_path")):
        return None
    from tasks.fitting import TrainResult

    keys = TrainResult.__dataclass_fields__
    return {k: data[k] for k in keys if k in data}


# ------------------------------------------------------------------------------------ the flow
@flow(name="train-remote")
def train_remote(snapshot_path: str, content_hash: str, config: dict, run_dir: str,
                 feature_mode: str, graph: str, config_hash: str, refresh: bool = False,
                 init: dict | None = None, start_key: str = "") -> dict:
    """Fit ORAL on one snapshot, read by path, into ``run_dir`` (shared with the nightly host).

    Args:
        snapshot_path: the snapshot folder, as the nightly host sees it (same path here).
        content_hash: the content hash the nightly flow validated; a different one fails the run.
        config: the full ORALConfig as a dict (``device`` ``auto`` picks CUDA when present).
        run_dir: the run folder under the shared state folder.
        feature_mode: ``row`` or ``standard`` feature preprocessing, as chosen by the nightly flow.
        graph: the graph's name (logs and the result file).
        config_hash: the configuration hash the nightly flow computed; checked after training.
        refresh: train again even when ``run_dir`` holds a finished result.
        init: a warm start's previous model and predictions (paths under the shared state
            folder, :func:`tasks.start_plan.plan_start`); None: a cold start.
        start_key: the start's part of the training's identity (``""`` when cold).

    Returns the same small dict as the in-process ``train`` task (``tasks.fitting.TrainResult``).
    """
    from data_contracts import snapshots as snap
    from oral_core.config import ORALConfig
    from oral_core.columns import writable
    from tasks import fitting

    logger = get_run_logger()
    host = socket.gethostname()
    files = check_snapshot(snapshot_path, content_hash)
    logger.info("snapshot %s read on %s: content hash %s matches the validated one",
                snapshot_path, host, content_hash[:12])
    if not refresh:
        done = read_result(run_dir, content_hash, config_hash, start_key)
        if done is not None:
            logger.info("reusing the finished training in %s (%s, %d classes)", run_dir,
                        done.get("device"), done.get("num_classes", -1))
            return done
    snapshot = snap.snapshot_from_files(files)
    snapshot.x = writable(snapshot.x)
    snapshot.edge_index = writable(snapshot.edge_index)
    cfg = ORALConfig.from_dict(config)
    device, why = describe_device(cfg.device)
    logger.info("training runs on host %s, device %s (%s): %s, %d nodes, %d epochs (%s start)",
                host, device, why, graph, snapshot.num_nodes,
                cfg.epochs if init is None else min(cfg.warm_epochs, cfg.epochs),
                "cold" if init is None else "warm")
    result = fitting.train(snapshot, cfg, Path(run_dir), feature_mode, init=init,
                         progress=fitting.ProgressLog(logger))  # a line every few seconds
    if result.config_hash != config_hash:
        raise RemoteTrainingError(f"configuration hash on {host} is {result.config_hash}, the "
                                  f"nightly flow computed {config_hash}: are both hosts on the "
                                  "same code version?")
    out = result.to_dict()
    write_result(run_dir, out, content_hash=content_hash, graph=graph, host=host,
                 snapshot_path=str(snapshot_path), start_key=start_key)
    logger.info("trained on %s (%s) in %.1f s: %d classes (%d novel), validation accuracy %.3f",
                host, result.device, result.train_seconds, result.num_classes, result.num_novel,
                result.val_accuracy)
    return out


# ------------------------------------------------------------------- the nightly flow's side
def train_via_deployment(deployment: str, timeout: float, *, snapshot_path: str, content_hash: str,
                         config: dict, run_dir: str, feature_mode: str, graph: str,
                         config_hash: str, poll_interval: float = 2.0, init: dict | None = None,
                         start_key: str = "") -> dict:
    """Run :func:`train_remote` through ``deployment`` and wait (at most ``timeout`` seconds);
    return its result, read from the shared run folder.

    Raises :class:`RemoteTrainingError` with what to check when there is no Prefect server, the
    deployment does not exist, the run did not finish in time (e.g. no worker on its pool) or
    failed, or the run folder holds no result (not shared between the hosts)."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.exceptions import MissingContextError, ObjectNotFound
    from prefect.settings import get_current_settings

    try:
        logger = get_run_logger()
    except MissingContextError:  # called outside a flow run
        logger = logging.getLogger(__name__)
    if not get_current_settings().api.url:
        raise RemoteTrainingError(
            "remote training needs a Prefect server (PREFECT_API_URL) with a worker on the "
            f"pool of deployment {deployment!r}; this run uses an in-process server")
    try:
        with get_client(sync_client=True) as client:
            pool = client.read_deployment_by_name(deployment).work_pool_name
    except ObjectNotFound:
        raise RemoteTrainingError(
            f"deployment {deployment!r} not found: deploy it (deployments/deploy.sh) or set "
            "ORAL_TRAINING_DEPLOYMENT") from None
    logger.info("training runs remotely: deployment %s on work pool %r (snapshot %s by path, "
                "results back in %s); waiting up to %.0f s", deployment, pool, snapshot_path,
                run_dir, timeout)
    params = {"snapshot_path": str(snapshot_path), "content_hash": content_hash, "config": config,
              "run_dir": str(run_dir), "feature_mode": feature_mode, "graph": graph,
              "config_hash": config_hash, "init": init, "start_key": start_key}
    run = run_deployment(name=deployment, parameters=params, timeout=timeout,
                         poll_interval=poll_interval,
                         flow_run_name=f"train-{graph}-{content_hash[:8]}-{config_hash[:8]}")
    state = run.state
    where = f"remote training run {run.name} ({run.id}) of {deployment}"
    if state is None or not state.is_final():
        hint = (f"; is a worker running on pool {pool!r} (prefect worker start --pool {pool})?"
                if state is not None and (state.is_scheduled() or state.is_pending()) else "")
        raise RemoteTrainingError(
            f"{where} is still {state.name if state else 'unknown'} after {timeout:.0f} s{hint} "
            "It was left running: a rerun of the nightly flow reuses its result once it finishes.")
    if not state.is_completed():
        raise RemoteTrainingError(f"{where} ended {state.name}: {state.message or 'no message'}")
    result = read_result(run_dir, content_hash, config_hash, start_key)
    if result is None:
        raise RemoteTrainingError(
            f"{where} completed but {Path(run_dir) / RESULT_FILE} holds no result for this "
            "snapshot and configuration on this host: the state folder must be shared between "
            "the nightly host and the training host at the same path")
    logger.info("remote training done on %s in %.1f s: %d classes (%d novel)", result["device"],
                result["train_seconds"], result["num_classes"], result["num_novel"])
    return result
