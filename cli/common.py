"""What several ``oral`` commands share: list options, the fan-out options, and the start of a
pipeline command once its options were checked."""
from __future__ import annotations

import argparse

from cli import logs


def listed(values: list[str] | None) -> list[str]:
    """The items of a repeated, comma-separated option, in order, each once."""
    items = [v.strip() for value in values or [] for v in value.split(",")]
    return list(dict.fromkeys(v for v in items if v))


def fanout_options(p: argparse.ArgumentParser, unit: str) -> None:
    """``--workers`` / ``--scheduler``: one Prefect task per {unit} on a Dask cluster
    (:mod:`flows.fanout`); without them (and without ``ORAL_DASK_ADDRESS``) nothing changes."""
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help=f"run one Prefect task per {unit} on a local Dask cluster of N worker "
                        "processes (one thread each)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help=f"run one Prefect task per {unit} on the Dask cluster whose scheduler is "
                        "at ADDRESS (tcp://host:8786; default $ORAL_DASK_ADDRESS); see "
                        "docs/operators.md, \"Scaling out\"")


def start_pipeline(state_dir):
    """After every option was checked: the environment (Prefect's home in the state folder), the
    log file ``<state>/logs/oral.log`` (tracebacks go there, not to the terminal) and the
    watchdog that stops Prefect's temporary server if this process is killed; first, free space
    (:class:`tasks.diskspace.DiskFull` when a folder the night writes to is below
    ``ORAL_MIN_FREE_MB``). Returns the settings."""
    from flows.server_watchdog import guard_ephemeral_server
    from flows.settings import Settings, configure_environment
    from tasks import diskspace

    # a (nearly) full disk is one line now, not a 130 s wait for Prefect's temporary server
    wanted = Settings.from_env(state_dir)
    diskspace.check_free_space(diskspace.folders(wanted.state_dir, wanted.warehouse_path,
                                                 wanted.tracking_uri),
                               "starting Prefect's temporary server", wanted.min_free_mb)
    settings = configure_environment(state_dir)
    logs.open_log_file(settings.state_dir)
    guard_ephemeral_server()
    return settings
