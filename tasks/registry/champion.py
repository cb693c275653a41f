"""The registered model ``oral-<graph>`` and its champion: every rule in one place.

- :func:`track`: a pipeline run's MLflow side, once per pipeline run id: the run logged
  (:func:`tasks.registry.runs.log_training_run`), a version registered (:func:`register_model`),
  duplicates of a crashed or concurrent run settled (:func:`_versions_of_run`,
  :func:`_reuse_version`) and, with ``promote``, the champion gate.
- The gate: :func:`promote_champion` moves the ``champion`` alias only when the quality gates
  pass; :func:`champion_gate` runs it once per version (after the DuckDB publish) and tags the
  decision (:data:`PROMOTED_TAG`); :func:`undo_champion` undoes it when the night rolls back.
- Warm starts read it back: :func:`previous_champion` (the champion as of the night before) and
  :func:`download_model` (its model file and predictions).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow.parquet as pq
from mlflow.exceptions import MlflowException

from tasks.registry.config import CHAMPION, TrackingConfig, model_name
from tasks.registry.store import Registry
from tasks.registry.runs import log_training_run

if TYPE_CHECKING:
    from tasks.fitting import TrainResult

log = logging.getLogger(__name__)


def register_model(registry: Registry | TrackingConfig, graph: str, model_uri: str, run_id: str, *,
                   val_accuracy: float | None = None, contracts_passed: bool | None = None,
                   snapshot_date: str | None = None, tags: Mapping[str, Any] | None = None) -> int:
    """Register ``model_uri`` (from :func:`log_training_run`) as a new version of
    ``oral-<graph>``; returns the version number.

    The version is tagged with ``val_accuracy``, ``contracts_passed`` and ``snapshot_date``
    (taken from the run's metrics and tags when not given) and ``tags``. Idempotent per run and
    model: when a version of this run with this source already exists (a retried task), that
    version is returned instead of a second one.
    """
    name = model_name(graph)
    reg = Registry.of(registry)
    c = reg.client
    run = reg.call(f"reading run {run_id}", c.get_run, run_id)
    if val_accuracy is None:
        val_accuracy = run.data.metrics.get("val_accuracy")
    if contracts_passed is None and "contracts_passed" in run.data.tags:
        contracts_passed = run.data.tags["contracts_passed"].lower() == "true"
    if snapshot_date is None:
        snapshot_date = run.data.tags.get("snapshot_date")
    version_tags = {"graph": graph, "run_id": run_id}
    if val_accuracy is not None:
        version_tags["val_accuracy"] = repr(float(val_accuracy))
    if contracts_passed is not None:
        version_tags["contracts_passed"] = str(bool(contracts_passed)).lower()
    if snapshot_date is not None:
        version_tags["snapshot_date"] = str(snapshot_date)
    version_tags.update({str(k): str(v) for k, v in (tags or {}).items() if v is not None})

    def ensure_model():
        try:
            c.create_registered_model(name, tags={"graph": graph},
                                      description=f"ORAL novel-class discovery on graph {graph}")
        except MlflowException as err:
            if str(err.error_code) not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
                raise
    reg.call(f"creating registered model {name!r}", ensure_model)

    def existing():
        found = c.search_model_versions(f"name = '{name}' and run_id = '{run_id}'")
        return [v for v in found if v.source == model_uri]
    prior = reg.call(f"searching versions of {name!r}", existing)
    if prior:
        version = max(prior, key=lambda v: int(v.version))
        for key, value in version_tags.items():
            if version.tags.get(key) != value:
                reg.call("tagging the model version", c.set_model_version_tag, name,
                         version.version, key, value)
        return int(version.version)
    model_id = _model_id(model_uri)

    def create():
        # the SQL registry resolves ``models:/<id>`` with a default MlflowClient(): point the
        # process-wide URIs at this store for the call
        with reg.using():
            return c.create_model_version(name, source=model_uri, run_id=run_id,
                                          tags=version_tags, model_id=model_id)
    version = reg.call(f"registering a version of {name!r}", create)
    return int(version.version)


def _model_id(model_uri: str) -> str | None:
    """``m-...`` of ``models:/m-...`` (a logged model), else None."""
    if not model_uri.startswith("models:/"):
        return None
    rest = model_uri[len("models:/"):]
    return rest if rest and "/" not in rest and "@" not in rest else None


def champion_version(registry: Registry | TrackingConfig, graph: str) -> int | None:
    """The version the ``champion`` alias of ``oral-<graph>`` points at (None: no champion)."""
    mv = _champion(Registry.of(registry), graph)
    return None if mv is None else int(mv.version)


def _champion(reg: Registry, graph: str):
    name = model_name(graph)
    c = reg.client

    def get():
        try:
            return c.get_model_version_by_alias(name, CHAMPION)
        except MlflowException as err:
            if str(err.error_code) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND", "INVALID_PARAMETER_VALUE"):
                return None
            raise
    return reg.call(f"reading the {CHAMPION} alias of {name!r}", get)


def _version_accuracy(c, mv) -> float | None:
    value = mv.tags.get("val_accuracy")
    if value is None and mv.run_id:
        with contextlib.suppress(Exception):
            value = c.get_run(mv.run_id).data.metrics.get("val_accuracy")
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _version_epochs(c, mv) -> int | None:
    """The configured ``epochs`` of a version's training run (its MLflow params), None if unknown."""
    if not mv.run_id:
        return None
    with contextlib.suppress(Exception):
        return int(float(c.get_run(mv.run_id).data.params["epochs"]))
    return None


#: the gate's verdict on a model that must not be the answer (:func:`degradation`); such a run
#: is registered and published for the record, but never champion and never the latest answer
DEGRADED = "degraded"


#: the level of the gate's McNemar test (``test="mcnemar"``)
GATE_ALPHA = 0.05


def below_reference(trained: TrainResult, reference_margin: float = 0.0,
                    test: str = "mcnemar", scope: str = "night") -> str | None:
    """The reference check of :func:`degradation`: why the model's known classes are below the
    reference logistic regression's (a one-line reason), or None. ``scope="known"``: compared
    on the validation nodes the model names a known class only (``gate_known_worse`` /
    ``gate_known_better`` of ``gate_known_nodes``); the validation nodes inside novel classes
    are those classes' own evidence (the known-split check), not the night's."""
    if scope == "known":
        worse, better, n = (trained.gate_known_worse, trained.gate_known_better,
                            trained.gate_known_nodes)
        if worse is None or better is None or not n:
            return None
        gap = (int(better) - int(worse)) / int(n)
        if not gap < -reference_margin:
            return None
        reason = (f"on the {int(n)} validation nodes it names a known class, the reference "
                  f"logistic regression names {int(worse)} right that it does not and it "
                  f"{int(better)} the reference does not ({100 * gap:+.1f} points)"
                  + (f" (margin {reference_margin})" if reference_margin else ""))
    else:
        val, ref = trained.val_accuracy, trained.reference_val_accuracy
        if (val is None or ref is None or not math.isfinite(float(val))
                or not float(val) < float(ref) - reference_margin):
            return None
        reason = (f"known-class validation accuracy {float(val):.4f} is below the reference "
                  f"logistic regression's {float(ref):.4f} on the same labelled nodes"
                  + (f" (margin {reference_margin})" if reference_margin else ""))
        worse, better = trained.gate_worse, trained.gate_better
    if test != "mcnemar" or worse is None or better is None:
        return reason
    from oral_core.reference import mcnemar_p

    p = mcnemar_p(int(worse), int(better))
    if p < GATE_ALPHA:
        return (f"{reason}, beyond chance (McNemar p {p:.3g}: {int(worse)} nodes only the "
                f"reference names right, {int(better)} only the model)")
    log.info("below the reference within chance (McNemar p %.3g, %d against %d nodes): not "
             "degraded (%s)", p, int(worse), int(better), reason)
    return None


def degradation(registry: Registry | TrackingConfig, graph: str, trained: TrainResult,
                reference_margin: float = 0.0, test: str = "mcnemar",
                scope: str = "night") -> str | None:
    """Why tonight's model is degraded (a one-line reason), or None when it is not. Read before
    anything is published, on labelled nodes and the training settings only:

    - its known-class validation accuracy is below the plain reference classifier's on the same
      labelled nodes (``reference_val_accuracy``, :mod:`oral_core.reference`) by more than
      ``reference_margin``: the graph and the discovery made the known classes worse than
      ignoring them. With ``test="mcnemar"`` (the default, issue 60) only when, besides, the
      reference names those nodes better beyond chance: an exact McNemar test on the nodes the
      two disagree on (``gate_worse`` only the reference names right, ``gate_better`` only the
      model) at :data:`GATE_ALPHA`, two-sided. A strict inequality held a whole night back for
      one node (a novel class holding a single validation node the reference names right);
      ``test="strict"`` is that rule. ``scope`` (:func:`below_reference`): ``night``, every
      validation node; ``known``, those the model names a known class;
    - a cold fit configured with fewer epochs than the champion's training run (a shortened
      retrain, e.g. ``--epochs 5``): its validation accuracy may pass the tolerance while what
      discovery needs (the novel partitions, the prototypes) is not trained. A warm fit
      continues the champion's training and is not held to this."""
    reason = below_reference(trained, reference_margin, test, scope)
    if reason:
        return reason
    configured = (trained.config or {}).get("epochs")
    if trained.start == "cold" and configured is not None:
        reg = Registry.of(registry)
        current = _champion(reg, graph)
        champ = None if current is None else _version_epochs(reg.client, current)
        if champ is not None and int(configured) < champ:
            return (f"trained with {int(configured)} epochs where champion v{current.version} "
                    f"was trained with {champ}")
    return None


def promote_champion(registry: Registry | TrackingConfig, graph: str, version: int | str,
                     contracts_passed: bool,
                     val_accuracy: float, tolerance: float = 0.02,
                     degraded: str | None = None) -> tuple[bool, str]:
    """Move the ``champion`` alias of ``oral-<graph>`` to ``version`` when the gates pass.

    Gates, in order: the data contracts passed; the model is not degraded (``degraded``: the
    reason :func:`degradation` gave); the validation accuracy (known classes) is a number; it
    is not below the current champion's by more than ``tolerance``
    (``val_accuracy >= champion - tolerance``). With no champion yet, passing contracts and not
    being degraded suffice. Returns ``(promoted, reason)``; the reason is also written to the
    version's ``champion_decision`` tag.
    """
    name = model_name(graph)
    version = str(int(version))
    reg = Registry.of(registry)
    c = reg.client
    current = _champion(reg, graph)
    if not contracts_passed:
        promoted, reason = False, "data contracts failed: the champion stays"
    elif degraded:
        promoted, reason = False, f"{DEGRADED}: {degraded}; the champion stays"
    elif val_accuracy is None or not math.isfinite(float(val_accuracy)):
        promoted, reason = False, f"validation accuracy {val_accuracy!r} is not a number"
    elif current is None:
        promoted, reason = True, f"first champion (val_accuracy {float(val_accuracy):.4f})"
    elif current.version == version:
        promoted, reason = True, f"version {version} already is the champion"
    else:
        best = _version_accuracy(c, current)
        if best is None:
            promoted, reason = True, (f"champion v{current.version} has no recorded val_accuracy; "
                                      f"v{version} ({float(val_accuracy):.4f}) takes over")
        elif float(val_accuracy) >= best - tolerance:
            promoted, reason = True, (f"val_accuracy {float(val_accuracy):.4f} vs champion "
                                      f"v{current.version} {best:.4f} (tolerance {tolerance})")
        else:
            promoted, reason = False, (f"val_accuracy {float(val_accuracy):.4f} is more than "
                                       f"{tolerance} below champion v{current.version} {best:.4f}")
    if promoted and (current is None or current.version != version):
        reg.call(f"moving the {CHAMPION} alias of {name!r}", c.set_registered_model_alias,
                 name, CHAMPION, version)
    reg.call("tagging the model version", c.set_model_version_tag, name, version,
             "champion_decision", reason)
    log.info("%s v%s: %s (%s)", name, version, "promoted" if promoted else "not promoted", reason)
    return promoted, reason



#: MLflow version tag saying whether the champion gate promoted the version (set when it decides)
PROMOTED_TAG = "champion_promoted"


def previous_champion(registry: Registry | TrackingConfig, graph: str, before: dt.date | str):
    """The champion of ``oral-<graph>`` as of the night before ``before``: the latest registered
    version dated earlier (``snapshot_date`` tag) that the champion gate promoted; for versions
    registered before that tag existed, the ``champion`` alias when it is dated earlier. None
    when there is none."""
    from data_contracts import snapshots as snap

    day = snap.parse_date(before) if not isinstance(before, dt.date) else before
    name = model_name(graph)
    reg = Registry.of(registry)

    def search():
        try:
            return reg.client.search_model_versions(
                f"name = '{name}' and tags.{PROMOTED_TAG} = 'true'")
        except MlflowException as err:
            if str(err.error_code) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
                return []
            raise

    def dated(mv) -> dt.date | None:
        try:
            return snap.parse_date((mv.tags or {}).get("snapshot_date", ""))
        except Exception:  # noqa: BLE001 - no or a malformed date: not a candidate
            return None

    found = [mv for mv in reg.call(f"searching champions of {name!r}", search)
             if (d := dated(mv)) is not None and d < day]
    if not found:
        alias = _champion(reg, graph)
        if alias is not None and (d := dated(alias)) is not None and d < day:
            return alias
        return None
    return max(found, key=lambda mv: (dated(mv), int(mv.version)))


def model_version(registry: Registry | TrackingConfig, graph: str, version: int | str):
    """Registered version ``version`` of the graph's model (:func:`model_name`), read with the
    tracking store's retries."""
    name = model_name(graph)
    reg = Registry.of(registry)
    return reg.call(f"reading version {version} of {name!r}", reg.client.get_model_version, name,
                    str(version))


def download_model(registry: Registry | TrackingConfig, graph: str, mv,
                   dest: Path) -> tuple[Path, Path | None]:
    """The ORAL model file and the published predictions of registered version ``mv``, copied
    from the tracking store into ``dest`` (replacing what is there). Returns
    ``(model_path, predictions_path or None)``."""
    import shutil
    import tempfile

    import mlflow

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    name = model_name(graph)
    reg = Registry.of(registry)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=dest) as tmp:
        with reg.using():
            folder = Path(mlflow.artifacts.download_artifacts(
                artifact_uri=f"models:/{name}/{mv.version}", dst_path=str(Path(tmp) / "model")))
        found = sorted(p for p in folder.rglob("*.pt"))
        if not found:
            raise FileNotFoundError(f"version {mv.version} of {name!r} holds no ORAL model file")
        model_path = dest / "model.pt"
        shutil.copyfile(found[0], Path(tmp) / "model.pt")
        os.replace(Path(tmp) / "model.pt", model_path)
        predictions_path = None
        if mv.run_id:
            try:
                got = reg.client.download_artifacts(
                    mv.run_id, "predictions/predictions.parquet", tmp)
                predictions_path = dest / "predictions.parquet"
                os.replace(got, predictions_path)
            except Exception as err:  # noqa: BLE001 - class ids are then numbered afresh
                log.warning("no predictions for version %s of %s (%s): class ids are not "
                            "carried over", mv.version, name, err)
    return model_path, predictions_path


def track(registry: Registry | TrackingConfig, graph: str, run: dict, trained: TrainResult,
          report_paths: tuple[str, str],
          classes: list[dict], scores: dict | None, tags: dict, promote: bool = True,
          lineage: dict | None = None) -> dict:
    """MLflow for one run: params, per-epoch metrics, artifacts, the model, a registered version
    and, with ``promote``, the champion gate (:func:`promote_champion`). The nightly flow passes
    ``promote=False`` and runs the gate (:func:`champion_gate`) only after DuckDB committed the
    run, so a failed publish never leaves the registry's champion ahead of the warehouse.
    ``lineage`` (``{class_key: lineage_id}`` of tonight's classes, computed by the nightly flow
    before it registers) goes into the logged model's ``model_config`` (``oral_lineage``), so
    the pyfunc outputs each node's ``lineage_id`` (:func:`tasks.registry.log_training_run`).

    Idempotent per pipeline run id (tag ``oral_run_id`` on the version):

    - a rerun, or a retry after a crash between MLflow and DuckDB, finds the registered version
      that carries this ``run_id`` and reuses it (no second version); when the crash came before
      the champion gate had decided (no ``champion_decision`` tag), the gate runs now;
    - two processes tracking the same run at once both register, then both look again: the
      lowest version carrying the ``run_id`` is kept, the other process deletes its own version
      (and its MLflow run), and both return the kept one, so a run never keeps two versions.

    A failing search is retried and then raised (:class:`tasks.registry.TrackingError`): taking
    it for "no version yet" would register a duplicate.
    """
    name = model_name(graph)
    oral_run_id = run["run_id"]
    reg = Registry.of(registry)
    existing = _versions_of_run(reg, name, oral_run_id)
    if existing:
        return _reuse_version(reg, graph, existing, trained, promote)
    history = json.loads(Path(trained.history_path).read_text())
    params = dict(trained.config) | {"feature_mode": trained.feature_mode,
                                     "config_hash": trained.config_hash, "graph": graph,
                                     "oral_run_id": oral_run_id, "start": trained.start,
                                     # the batch size trained with (None: full batch, also when
                                     # the configuration asked for none) and why
                                     "batch_size": trained.batch_size,
                                     "batch_reason": trained.batch_reason,
                                     # novel_wholeness_if=separable: whether it applied
                                     "novel_wholeness_used": trained.novel_wholeness_used,
                                     "warm_from_version": tags.get("warm_from_version") or ""}
    metrics = {"val_accuracy": trained.val_accuracy, "selected_epoch": trained.epoch,
               "num_classes": trained.num_classes, "num_novel": trained.num_novel,
               "train_seconds": trained.train_seconds}
    if scores:
        metrics["scores"] = {k: v for k, v in scores.items() if isinstance(v, (int, float))}
    artifacts = {"predictions": pq.read_table(trained.predictions_path),
                 "class_summary": classes, "validation_report": [Path(p) for p in report_paths]}
    mlflow_run_id, model_uri = log_training_run(
        reg, graph, params, history, artifacts, dict(tags) | {"contracts_passed": "true"},
        Path(trained.model_path), metrics, run_name=f"{graph}-{tags.get('snapshot_date', '')}",
        lineage=lineage)
    version = register_model(
        reg, graph, model_uri, mlflow_run_id, val_accuracy=trained.val_accuracy,
        contracts_passed=True, snapshot_date=tags.get("snapshot_date"),
        tags={"oral_run_id": oral_run_id} | {k: tags[k] for k in START_TAGS if tags.get(k)})
    # another process may have tracked the same run meanwhile: settle on the lowest version
    found = _versions_of_run(reg, name, oral_run_id)
    if found and min(int(v.version) for v in found) != int(version):
        log.warning("%s: run %s was registered concurrently by another process; dropping version "
                    "%d in favour of version %d", name, oral_run_id, int(version),
                    min(int(v.version) for v in found))
        return _reuse_version(reg, graph, found, trained, promote)
    if promote:
        promoted, reason = promote_champion(reg, graph, version, True, trained.val_accuracy)
    else:
        promoted, reason = None, "registered; the champion gate runs after the DuckDB publish"
    log.info("MLflow run %s, %s version %d: %s", mlflow_run_id, name, version, reason)
    return {"mlflow_run_id": mlflow_run_id, "model_name": name, "model_version": int(version),
            "promoted": None if promoted is None else bool(promoted), "reason": reason,
            "tracking_uri": reg.safe_uri()}


#: run tags that the nightly flow also puts on the registered version: how its training started
#: (``start``, ``start_reason``, ``start_key``, ``warm_from`` run id, ``warm_from_version``) and
#: the snapshot's ``content_hash``; :func:`tasks.start_plan.plan_start` reads them on the next night,
#: with ``emergence_history`` (earlier nights' new-node label counts, :mod:`tasks.emergence`)
START_TAGS = ("content_hash", "start", "start_reason", "start_key", "warm_from", "warm_from_version",
              "emergence_history")


def champion_gate(registry: Registry | TrackingConfig, graph: str, version: int,
                  val_accuracy: float,
                  degraded: str | None = None) -> dict:
    """The champion gate for a registered ``version``, once: when the version already carries a
    ``champion_decision`` (a rerun, a retry after the gate ran) that decision stands. The
    nightly flow calls it after the DuckDB publish committed. Returns ``promoted`` (the alias
    points at ``version`` now) and ``reason``."""
    name = model_name(graph)
    reg = Registry.of(registry)
    mv = model_version(reg, graph, int(version))
    reason = (mv.tags or {}).get("champion_decision")
    if reason is None:
        promoted, reason = promote_champion(reg, graph, version, True, float(val_accuracy),
                                            degraded=degraded)
        # what the gate decided, for the warm start of a later night (previous_champion)
        reg.call("tagging the model version", reg.client.set_model_version_tag, name,
                 str(int(version)), PROMOTED_TAG, str(bool(promoted)).lower())
    return {"promoted": champion_version(reg, graph) == int(version),
            "reason": reason}


def undo_champion(registry: Registry | TrackingConfig, graph: str, version: int,
                  champion_before: int | None) -> str:
    """Undo what the champion gate did for ``version`` in a transaction that rolled back (the
    nightly flow's ``on_rollback`` hook of the ``register`` task): when the ``champion`` alias
    points at ``version`` but pointed elsewhere (or nowhere) before, it goes back to
    ``champion_before`` (or is removed); the gate's decision tags are dropped so the rerun decides
    again. An alias that another run moved meanwhile is left alone. The registered version stays:
    the rerun reuses it (:func:`track`). Returns what was done, for the log."""
    name = model_name(graph)
    reg = Registry.of(registry)
    client = reg.client
    version = int(version)
    done = []
    now = champion_version(reg, graph)
    if now == version and champion_before != version:
        if champion_before is None:
            reg.call(f"removing the {CHAMPION} alias of {name!r}",
                     client.delete_registered_model_alias, name, CHAMPION)
            done.append(f"removed the {CHAMPION} alias (there was none before)")
        else:
            reg.call(f"moving the {CHAMPION} alias of {name!r} back",
                     client.set_registered_model_alias, name, CHAMPION, str(champion_before))
            done.append(f"moved the {CHAMPION} alias back to version {champion_before}")
    if champion_before != version:
        mv = model_version(reg, graph, version)
        for tag in ("champion_decision", PROMOTED_TAG):
            if tag not in (mv.tags or {}):
                continue

            def drop(tag=tag):
                try:
                    client.delete_model_version_tag(name, str(version), tag)
                except MlflowException as err:  # gone meanwhile: nothing to undo
                    if str(err.error_code) not in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
                        raise
            reg.call(f"dropping tag {tag} of version {version}", drop)
            done.append(f"dropped the gate's {tag} tag of version {version}")
    return "; ".join(done) or "the champion alias had not moved"


def _versions_of_run(reg: Registry, name: str, oral_run_id: str) -> list:
    """The registered versions of ``name`` tagged with this pipeline run id (retried, bounded)."""
    import re

    if not re.fullmatch(r"[0-9a-f]{16,64}", str(oral_run_id)):  # it goes into a filter string
        raise ValueError(f"not a pipeline run id: {oral_run_id!r}")

    def search():
        try:
            return reg.client.search_model_versions(
                f"name = '{name}' and tags.oral_run_id = '{oral_run_id}'")
        except MlflowException as err:
            if str(err.error_code) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
                return []
            raise
    return list(reg.call(f"searching versions of {name!r} for run {oral_run_id}", search))


def _reuse_version(reg: Registry, graph: str, versions: list, trained: TrainResult,
                   promote: bool = True) -> dict:
    """Keep the lowest of ``versions`` (all tagged with one pipeline run id), delete the others
    (a crashed or concurrent duplicate; never one an alias points at), finish the champion gate
    if it never decided for the kept one, and describe it like :func:`track` does."""
    name = model_name(graph)
    keeper = min(versions, key=lambda v: int(v.version))
    client = reg.client
    champion = champion_version(reg, graph)
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
        reg.call(f"deleting duplicate version {extra.version} of {name!r}", drop)
        if extra.run_id and extra.run_id != keeper.run_id:
            try:  # best effort: the duplicate's MLflow run goes to the bin (mlflow gc purges it)
                client.set_tag(extra.run_id, "oral_duplicate_of", keeper.run_id)
                client.delete_run(extra.run_id)
            except Exception as err:  # noqa: BLE001
                log.warning("could not delete duplicate MLflow run %s: %s", extra.run_id, err)
    reason = "reused the registered version"
    if promote and "champion_decision" not in (keeper.tags or {}):  # the gate never decided
        accuracy = (keeper.tags or {}).get("val_accuracy", trained.val_accuracy)
        _, reason = promote_champion(reg, graph, keeper.version, True, float(accuracy))
        champion = champion_version(reg, graph)
    return {"mlflow_run_id": keeper.run_id, "model_name": name, "model_version": int(keeper.version),
            "promoted": champion == int(keeper.version), "reason": reason,
            "tracking_uri": reg.safe_uri()}
