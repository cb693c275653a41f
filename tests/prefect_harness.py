"""Prefect for the tests: a migrated database built once per machine, and the test harness
started from it.

A new Prefect database runs every migration when its server starts (5-10 s on these machines);
the suite starts a handful of harnesses and many nights in new state folders. The database is
migrated once (:func:`prefect_home_template`, under the temporary folder, keyed by Prefect's
version) and copied where a server would otherwise create its own: the harness's
(:func:`prefect_harness`) and, through ``ORAL_PREFECT_HOME_TEMPLATE`` (set by tests/conftest.py),
every new Prefect home a night the tests start opens (``flows.settings.seed_prefect_home``).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from contextlib import ExitStack, contextmanager
from importlib.metadata import version
from pathlib import Path
from unittest import mock


def prefect_home_template() -> Path | None:
    """A Prefect home whose database is migrated to the installed Prefect's schema, built once
    per machine and Prefect version under the temporary folder (one xdist worker builds it, the
    others wait on its lock). None, with a warning, when it cannot be built (the tests then run
    without it, only slower)."""
    home = Path(tempfile.gettempdir()) / f"oral-prefect-home-{version('prefect')}"
    if (home / "prefect.db").is_file():
        return home
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (home / "prefect.db").is_file():
            return home
        if home.exists():  # a template left without its database
            shutil.rmtree(home)
        building = Path(tempfile.mkdtemp(prefix=f"{home.name}-", dir=home.parent))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        done = subprocess.run(
            [str(Path(sys.executable).parent / "prefect"), "server", "database", "upgrade", "-y"],
            env=env | {"PREFECT_HOME": str(building)}, capture_output=True, text=True)
        if done.returncode != 0 or not (building / "prefect.db").is_file():
            warnings.warn(f"no Prefect home template: {(done.stderr or done.stdout)[-300:]}")
            return None
        os.replace(building, home)
    return home


#: the file name Prefect's test harness gives its database in the folder it makes
HARNESS_DATABASE = "prefect-test.db"


@contextmanager
def prefect_harness():
    """Prefect's test harness (a temporary server on a database of its own) for the flows this
    process runs, with the settings of flow runs the CLI starts
    (``flows.settings.flow_runs_started_here``). The harness's database starts as a copy of
    :func:`prefect_home_template`'s (the folder the harness makes for it gets the copy as it is
    made), so its server does not migrate a new one; without a template, or should the harness
    name its database otherwise, it migrates its own as before."""
    import prefect.testing.utilities as utilities

    from flows.settings import flow_runs_started_here

    template = prefect_home_template()
    made = utilities.mkdtemp

    def seeded(*args, **kwargs):
        folder = made(*args, **kwargs)
        if template is not None:
            shutil.copyfile(template / "prefect.db", Path(folder) / HARNESS_DATABASE)
        return folder

    with ExitStack() as stack:
        with mock.patch.object(utilities, "mkdtemp", seeded):
            stack.enter_context(utilities.prefect_test_harness(server_startup_timeout=120))
        stack.enter_context(flow_runs_started_here())
        yield
