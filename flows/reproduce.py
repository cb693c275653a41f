"""The paper's reproduction sweep as a Prefect flow, for a manual deployment (``reproduce/sweep``).

A thin wrapper around :mod:`harness.reproduction` (the code behind ``oral reproduce``): the
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
    from harness.reproduction import markdown_path, sweep, update_csv, write_markdown

    logger = get_run_logger()
    from flows.configuration import build_config

    values = ORALConfig().to_dict() | dict(config or {}) | {"progress": False}
    if device:
        values["device"] = device
    base = build_config(values)
    results = Path(out) if out else Path("benchmarks") / "results"  # relative to the cwd
    seed_list = list(range(first_seed, first_seed + seeds))
    summaries = []
    for with_prior in ([False, True] if both_priors else [prior]):
        logger.info("reproduction: %s on %s, prior=%s, seeds %d..%d, results in %s", method, dataset,
                    with_prior, seed_list[0], seed_list[-1], results)
        rows = sweep(dataset, method, seed_list, with_prior, base, data_dir, results=results,
                     echo=logger.info, protocol=protocol, known=known)
        if not rows:  # the method does not apply in this prior setting (sweep logged why)
            continue
        s = update_csv(rows, results)
        logger.info("%s %s prior=%s over %d seeds: All %.2f ± %.2f | Known %.2f ± %.2f | Novel "
                    "%.2f ± %.2f | classes %.2f (true %s)", method, dataset, with_prior, s["seeds"],
                    s["all_mean"], s["all_std"], s["known_mean"], s["known_std"], s["novel_mean"],
                    s["novel_std"], s["classes_est_mean"], rows[0]["classes_true"])
        summaries.append({"method": method, "dataset": dataset, "prior": with_prior,
                          "protocol": protocol, "known": known} | s)
    from harness.experiment import protocol_tag
    write_markdown(results)
    md = markdown_path(results, protocol_tag(protocol, known))
    create_markdown_artifact(md.read_text(), key="oral-reproduction",
                             description=f"reproduction tables ({md})")
    return summaries
