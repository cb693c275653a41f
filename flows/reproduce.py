"""The paper's reproduction sweep as a Prefect flow, for a manual deployment (``reproduce/sweep``).

A thin wrapper around :func:`harness.reproduction.reproduce_tables` (the service behind
``oral reproduce`` too): the
same resumable per-seed files under ``<out>/runs/``, the same ``reproduction.csv`` and
``reproduction.md``, plus the summary as a Prefect Markdown artifact. Run it by hand:

    prefect deployment run 'reproduce/sweep' -p dataset=cora -p seeds=10 -p both_priors=true
"""
from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact


@flow(name="reproduce")
def reproduce(dataset: str = "cora", seeds: int = 10, first_seed: int = 0, prior: bool = False,
              both_priors: bool = False, method: str = "oral", config: dict | None = None,
              device: str | None = None, data_dir: str | None = None,
              out: str | None = None, protocol: str = "ours", known: str = "default") -> list[dict]:
    """Train and score ORAL (or an ablation) on a benchmark dataset over several seeds.

    Args:
        dataset: ``cora``, ``amazonphoto``, ``blogcatalog`` or a path to a file of those formats.
        seeds: number of seeds, from ``first_seed`` on. Finished seeds are reused.
        prior: give ORAL the true number of classes; ``both_priors``: run without and with it.
        method: ``oral`` or any other method ``oral reproduce --method`` accepts (ablations,
            baselines).
        config: ORALConfig overrides (e.g. ``{"gamma": 0.4}``).
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        data_dir: dataset folder (else ``ORAL_DATA_DIR``, see docs/reproducing.md).
        out: results folder (default ``benchmarks/results`` relative to the worker's current
            directory, as for ``oral reproduce --out``).
        protocol: ``ours`` (strict) or ``paper`` (see ``oral reproduce --protocol``).
        known: ``default`` (the protocol's known classes) or ``random`` (seeded, per seed).

    Returns one summary per prior setting (means and standard deviations over seeds).
    """
    from oral_core.config import ORALConfig
    from harness.experiment import protocol_tag
    from harness.reproduction import markdown_path, reproduce_tables

    logger = get_run_logger()
    from flows.configuration import build_config

    values = ORALConfig().to_dict() | dict(config or {}) | {"progress": False}
    if device:
        values["device"] = device
    base = build_config(values)
    results = Path(out) if out else Path("benchmarks") / "results"  # relative to the cwd

    def summary(s: dict) -> None:
        logger.info("%s %s prior=%s over %d seeds: All %.2f ± %.2f | Known %.2f ± %.2f | Novel "
                    "%.2f ± %.2f | classes %.2f (true %s)", s["method"], s["dataset"], s["prior"],
                    s["seeds"], s["all_mean"], s["all_std"], s["known_mean"], s["known_std"],
                    s["novel_mean"], s["novel_std"], s["classes_est_mean"], s["classes_true"])

    summaries = reproduce_tables([dataset], [method], list(range(first_seed, first_seed + seeds)),
                                 [False, True] if both_priors else [prior], base, data_dir,
                                 results=results, echo=logger.info, on_summary=summary,
                                 protocol=protocol, known=known)
    md = markdown_path(results, protocol_tag(protocol, known))
    create_markdown_artifact(md.read_text(), key="oral-reproduction",
                             description=f"reproduction tables ({md})")
    return summaries
