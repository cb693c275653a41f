"""The choice of settings for one graph as a Prefect flow, for a manual deployment
(``choose/graph``).

A thin wrapper around :func:`flows.choice.choose_settings` (the service behind ``oral choose``
too): the same seed files, table and choice under ``<state>/choose``, where the graph's nightly
runs read it, plus the table as a Prefect Markdown artifact. Run it by hand:

    prefect deployment run 'choose/graph' -p graph=papers -p snapshot_root=/data/snapshots
"""
from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact


@flow(name="choose")
def choose(graph: str, snapshot_root: str, date: str | None = None,
           candidates: list[dict] | None = None, config: dict | None = None, seeds: int = 5,
           hide: str = "extremes", window: int = 10, score: str = "mean", guard_seeds: int = 3,
           state_dir: str | None = None, out: str | None = None) -> dict:
    """Settings for one graph's snapshot chosen by the held-out-class proxy (labelled nodes only).

    Args:
        graph: the graph's name under ``snapshot_root``.
        snapshot_root: Hive-style snapshots ``<graph>/snapshot=YYYY-MM-DD/``.
        date: the snapshot's date (default: the latest).
        candidates: settings to try against the defaults, each a dict of ORALConfig overrides
            (default: :func:`flows.choice.default_candidates` of ``score``).
        config: the ORALConfig overrides every setting starts from.
        seeds: proxy seeds per setting (at least 2: the gain is paired by seed).
        hide: which known classes play novel ones (``extremes``, ``last`` or ``rotate``).
        window: the score is the mean proxy All over the last ``window`` epochs.
        score: ``mean`` (those epochs) or ``final`` (the answer as the fit ends, after the
            steps that finish it; candidates that set only those need it).
        guard_seeds: the known-class guard's seeds (0: no guard).
        state_dir: the state folder (default: the worker's ``ORAL_STATE_DIR``); the choice goes
            to ``<state>/choose`` unless ``out`` says otherwise.

    Returns the choice (``chosen``, the ``set`` list a night applies, and the files' paths).
    """
    from flows.choice import ChoiceRequest, candidate_name, choose_settings, default_candidates
    from flows.configuration import build_config
    from flows.settings import Settings
    from oral_core.config import ORALConfig

    logger = get_run_logger()
    if seeds < 2:
        raise ValueError(f"seeds={seeds}: the gain is paired by seed, so at least 2")
    base = dict(config or {})
    tried = [dict(c) for c in (candidates or default_candidates(score))]
    defaults = ORALConfig().to_dict() | base
    configs = {"defaults": build_config(defaults)}
    configs |= {candidate_name(c): build_config(defaults | c) for c in tried}
    folder = Path(out) if out else Settings.from_env(state_dir).state_dir / "choose"
    req = ChoiceRequest(configs=configs, candidates={candidate_name(c): c for c in tried},
                        base=base, out=folder, graph=graph, snapshots=Path(snapshot_root),
                        date=date, hide=hide, seeds=seeds, window=window, score=score,
                        guard_seeds=guard_seeds, command=f"choose/graph flow ({graph})")
    outcome = choose_settings(req, say=logger.info)
    create_markdown_artifact("\n".join(outcome.lines), key="oral-choice",
                             description=f"settings for {graph} ({outcome.table})")
    return {"graph": outcome.name, "chosen": outcome.choice.name,
            "set": [f"{k}={v}" for k, v in (base | outcome.choice.overrides).items()],
            "table": str(outcome.table), "choice": str(outcome.path)}
