"""The night's configuration, built and validated in one place: ORALConfig's defaults (the
paper's where it gives them), the pipeline's own (:data:`PIPELINE_DEFAULTS`), the graph's choice
of ``oral choose``, then the run's overrides. The CLI checks its options against the same
defaults (:mod:`cli.options`) before anything starts."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from flows.params import PIPELINE_DEFAULTS, ORALOverrides, as_overrides




class ConfigError(ValueError):
    """A configuration ORAL cannot run: ``problems`` lists each broken rule as one phrase
    (``gamma must be in (0, 1]``); ``str(err)`` joins them on one line."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid ORAL configuration: " + "; ".join(self.problems))


def build_config(values: dict):
    """The one place an ``ORALConfig`` is built from settings and validated (its ranges and
    combinations, :meth:`oral_core.config.ORALConfig.validate`); the flows, the backfill and the
    command line's option checks all come here. Raises :class:`ConfigError`."""
    from oral_core.config import ORALConfig

    try:
        config = ORALConfig.from_dict(values)
    except (TypeError, ValueError) as err:  # an unknown key or a value of the wrong type
        raise ConfigError([str(err)]) from None
    try:
        config.validate()
    except (TypeError, ValueError) as err:
        text = str(err)
        text = text.split(": ", 1)[1] if text.startswith("invalid ORAL configuration: ") else text
        raise ConfigError([p.strip() for p in text.split("; ") if p.strip()] or [text]) from None
    return config


def pipeline_defaults() -> dict:
    """ORALConfig's defaults with the pipeline's own (:data:`PIPELINE_DEFAULTS`): the settings
    a night starts from."""
    from oral_core.config import ORALConfig

    return ORALConfig().to_dict() | PIPELINE_DEFAULTS


def resolve_config(overrides: ORALOverrides | dict | None, device: str | None = None):
    """Pipeline defaults for ORAL (ORALConfig's, the paper's where it gives them, then
    :data:`PIPELINE_DEFAULTS`) plus ``overrides`` (an :data:`flows.params.ORALOverrides` or a
    dict of its keys)."""
    values = pipeline_defaults() | as_overrides(overrides)
    if device:
        values["device"] = device
    return build_config(values)


def with_choice(config, device, settings, graph: str, logger):
    """The night's configuration: the defaults, then the graph's choice of ``oral choose``
    (``<state>/choose/<graph>.json``, :func:`read_choice`), then the run's own
    ``config`` overrides, which win key by key. Returns it and what the choice contributed
    (``gamma=0.1``, ``defaults`` when the choice kept the defaults or everything it set was
    overridden, ``none`` without a usable choice). A bad configuration fails here, before any
    snapshot is read."""
    explicit = as_overrides(config)
    choice = read_choice(settings.state_dir, graph)
    if choice is None:
        return resolve_config(explicit, device), "none"
    if choice.problem:
        logger.warning("the graph's choice is not applied: %s", choice.problem)
        return resolve_config(explicit, device), "none"
    applied = {k: v for k, v in choice.overrides.items() if k not in explicit}
    cfg = resolve_config(applied | explicit, device)
    label = ",".join(f"{k}={v}" for k, v in applied.items()) or "defaults"
    overridden = sorted(set(choice.overrides) - set(applied))
    logger.info("settings chosen by oral choose (%s): %s%s", choice.source, label,
                f" ({', '.join(overridden)} overridden by the run's config)" if overridden else "")
    return cfg, label


@dataclass
class GraphChoice:
    """The settings ``oral choose`` chose for a graph (``<state>/choose/<graph>.json``), as the
    nightly run applies them: ``overrides`` (empty: the defaults, or nothing usable), where they
    come from and, when the file could not be used, why."""

    overrides: dict
    source: str = ""
    problem: str = ""

    @property
    def label(self) -> str:
        """``gamma=0.1`` / ``defaults``: what a run records."""
        return ",".join(f"{k}={v}" for k, v in self.overrides.items()) or "defaults"


def read_choice(state_dir: str | Path, graph: str) -> GraphChoice | None:
    """The graph's choice of ``oral choose``, or None when it has none. A file that cannot be
    read, or whose overrides are not valid ORAL settings, gives no overrides and a ``problem``
    (the night runs on its configuration and says why; a broken choice never stops a night)."""
    from oral_core.config import ORALConfig

    path = Path(state_dir) / "choose" / f"{graph}.json"
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
        overrides = dict(saved["overrides"])
        ORALConfig.from_dict(ORALConfig().to_dict() | overrides).validate()
    except (OSError, ValueError, KeyError, TypeError) as err:
        return GraphChoice({}, str(path), f"{path}: not a usable choice ({' '.join(str(err).split())[:200]})")
    return GraphChoice(overrides, str(path))
