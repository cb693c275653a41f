"""The pipeline's side of the pyfunc: how the model is logged (:func:`log_pyfunc`: the code
file :mod:`tasks.registry.oral_pyfunc` as ``python_model``, ``oral_core`` as ``code_paths``, pinned
:func:`pip_requirements`) and used in-process (:func:`assign_snapshot`, :func:`load_champion`).

The code file itself stands alone (it imports ``oral_core``, never ``tasks``) so that a
registered model travels with ``oral_core`` only; :mod:`tasks.registry` re-exports its names.
"""
from __future__ import annotations

import logging
import warnings
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any, Mapping

import mlflow
import pyarrow as pa

from tasks.registry import oral_pyfunc as _pyfunc_module
from tasks.registry.config import TrackingConfig, champion_uri
from tasks.registry.oral_pyfunc import (
    MODEL_ARTIFACT, assign_graph, input_example, lineage_map, model_signature)
from tasks.registry.retries import call_with_retries
from tasks.registry.store import using

log = logging.getLogger(__name__)

MODEL_NAME_IN_RUN = "model"            # the logged model's name within its run
# packages whose installed versions are pinned in the logged model's requirements
# (everything the code file and oral_core import: oral_core's Leiden clustering needs igraph)
PINNED_PACKAGES = ("torch", "torch-geometric", "numpy", "scipy", "igraph", "pandas", "pyarrow",
                   "mlflow")

# The pyfunc lives in tasks/registry/oral_pyfunc.py, the self-contained code file logged with every
# model (it imports oral_core, never this package).
PYFUNC_CODE_FILE = Path(_pyfunc_module.__file__)


def log_pyfunc(cfg: TrackingConfig, run_id: str, model_id: str, model_path: Path,
               model_config: Mapping[str, Any] | None = None) -> None:
    """Write ``model_path`` as an :class:`ORALPyfunc` into the logged model ``model_id`` with
    ``mlflow.pyfunc.log_model``: the code file :data:`PYFUNC_CODE_FILE` as ``python_model``
    ("models from code": nothing is pickled), the ``oral_core`` package as ``code_paths``, the
    ORAL model file as the only artifact, complete pinned ``pip_requirements``
    (:func:`pip_requirements`), an explicit signature and an input example (a three-node graph
    of the model's feature width; MLflow checks it against the model when logging and writes
    ``serving_input_example.json``). The model thus loads and serves where only its
    ``requirements.txt`` is installed. ``model_config`` (``graph``, ``oral_run_id``: the
    warehouse run id of the night that trained it, and ``oral_lineage``: that night's
    ``{str(class_key): lineage_id}``) goes into the ``MLmodel`` file, where the pyfunc reads it
    when loaded.

    The logged model is created beforehand in the run's experiment (left to itself, MLflow
    3.17 puts a model logged for a run that is not the fluent active run into the *default*
    experiment) and linked to the run as its output here. The version is registered by
    :func:`register_model` (tags, idempotent under retries), not by ``registered_model_name``."""
    import oral_core
    from mlflow.entities import LoggedModelOutput
    from oral_core.inference import ORALModel

    width = int(ORALModel.load(model_path).payload["in_dim"])
    code_paths = [str(Path(oral_core.__file__).parent)]
    with using(cfg), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Any type hint.*")
        mlflow.pyfunc.log_model(
            name=MODEL_NAME_IN_RUN, python_model=str(PYFUNC_CODE_FILE), code_paths=code_paths,
            artifacts={MODEL_ARTIFACT: str(model_path)}, pip_requirements=pip_requirements(),
            signature=model_signature(), input_example=input_example(width),
            model_config=dict(model_config or {}), model_id=model_id)
        c = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
        c.log_outputs(run_id, [LoggedModelOutput(model_id, step=0)])


def pip_requirements() -> list[str]:
    """The pins of this environment for the logged model (no inference runs): every package the
    model's code file and ``oral_core`` import (:data:`PINNED_PACKAGES`), so that
    ``pip install -r requirements.txt`` in a new environment is enough to load and serve it."""
    reqs = []
    for name in PINNED_PACKAGES:
        try:
            version = _metadata.version(name)
        except _metadata.PackageNotFoundError:
            log.warning("package %s is not installed: the logged model's requirements.txt lacks "
                        "it and the model will not load elsewhere", name)
            continue
        reqs.append(f"{name}=={version.split('+')[0]}")  # drop local tags like +cpu
    return reqs



def assign_snapshot(model, snapshot_path: str | Path, run_id: str | None = None,
                    lineage: Mapping[Any, str] | None = None) -> pa.Table:
    """Load a snapshot (``data_contracts.snapshots.load_snapshot``: one consistent version of
    its files), symmetrise its edges and assign every node with ``model.assign_raw``; the
    columns of :class:`ORALPyfunc`'s output (``run_id``: the model's warehouse run id;
    ``lineage``: its ``{class_key: lineage_id}``, else null lineage ids)."""
    from data_contracts.snapshots import load_snapshot
    snap = load_snapshot(snapshot_path)
    return assign_graph(model, str(snapshot_path), snap.node_ids, snap.x, snap.edge_index,
                        run_id=run_id, lineage=lineage_map(lineage))


def load_champion(cfg: TrackingConfig, graph: str):
    """The champion of ``graph`` as a pyfunc (``mlflow.pyfunc.load_model``)."""
    with using(cfg):
        return call_with_retries(cfg, lambda: mlflow.pyfunc.load_model(champion_uri(graph)),
                                 f"loading {champion_uri(graph)}")
