"""Warm or cold: how tonight's training starts (docs/operators.md, "Warm starts").
:func:`plan_start` continues the previous night's champion when its feature space and
configuration still hold (:func:`start_problem`) and no periodic cold night is due
(:func:`refresh_due`); the registry is read through :mod:`tasks.registry.champion`."""
from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from tasks.fitting import load_payload, run_config_hash


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
    from tasks.registry.champion import download_model, model_version, previous_champion

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
            src_mv = model_version(tracking_cfg, graph, src)
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
