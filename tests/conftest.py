"""Shared fixtures, and the layer markers.

The tests are organised by layer, one folder each: ``core/`` (oral_core, the method),
``contracts/`` (data_contracts), ``pipeline/`` (tasks/ and flows/ in-process), ``e2e/``
(whole-product runs: servers, fresh venvs, child processes) and ``benchmarks/`` (the benchmark
scripts and the reproduction harness). Every test gets the marker of its folder, so
``pytest -m "core and not slow"`` (``make test-fast``: core and contracts) selects by layer.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LAYERS = ("core", "contracts", "pipeline", "e2e", "benchmarks")
#: the order the layers run in where :data:`UNIT_SECONDS` has no measurement: the slowest first
#: (servers, child processes, fresh venvs)
RUN_ORDER = ("e2e", "pipeline", "benchmarks", "core", "contracts")
#: seconds each work unit (:func:`worker_group_of`) took on a whole run of the suite, its tests'
#: setup, call and teardown summed: ``make test`` hands the units to the xdist workers longest
#: first, so that the workers end together instead of one starting a long unit as the others
#: finish. Measured again with ``ORAL_RECORD_UNIT_SECONDS=1 make test`` (written at the end of
#: the run); a unit it does not name runs after those it names, in :data:`RUN_ORDER`.
UNIT_SECONDS = TESTS / "unit_seconds.json"
#: modules of such a package that are a work unit of their own: the longest, so that the package
#: is not one long unit at the end of the run; the package's fixtures are built once more on its
#: worker (a Prefect harness and two small snapshots: seconds), and its tests use graphs of
#: their own
OWN_UNITS = ("tests/pipeline/reliability/test_rel10_killed_nights.py",)


def worker_group_of(path: str) -> str:
    """The pytest-xdist work unit of a test file (``path`` as in a node id, relative to the
    repository): its module, so a module-scoped fixture (a fitted model, a server) is built once;
    for a package whose ``conftest.py`` holds package-scoped fixtures (``pipeline/reliability``:
    one Prefect harness and state folder for the package) the package, so they too are built
    once, except the modules of :data:`OWN_UNITS`. The units are then spread over the workers
    (``make test``: ``-n 3``)."""
    if path in OWN_UNITS:
        return path
    parts = Path(path).parts
    folder = Path(*parts[:-1]) if len(parts) > 1 else Path(".")
    if folder.parts[:1] == ("tests",) and len(folder.parts) > 2 \
            and (TESTS.parent / folder / "conftest.py").is_file():
        return str(folder)
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist, whole work units (:func:`worker_group_of`) go to one worker, in
    collection order, as ``--dist loadscope`` sends whole modules (its own grouping, by the
    node id's last ``::``, would split parametrised ids and the reliability package)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group_of(nodeid.split("::", 1)[0])

    # keep the collection's order (longest unit first); xdist's own reorder, by the number of
    # tests in a unit, would send the few-test long units (servers, fresh venvs) last
    config.option.loadscopereorder = False
    return ByWorkUnit(config, log)


#: the layers whose tests start Prefect's temporary server in new state folders
PREFECT_LAYERS = ("pipeline", "e2e", "benchmarks")


def measured_unit_seconds() -> dict[str, float]:
    """:data:`UNIT_SECONDS`, or nothing when the file is absent or unreadable (order by layer)."""
    try:
        return {str(k): float(v) for k, v in json.loads(UNIT_SECONDS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


_RECORDED: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    """Sum each work unit's seconds (on the xdist controller: every worker's reports)."""
    _RECORDED[worker_group_of(report.nodeid.split("::", 1)[0])] += report.duration


def pytest_sessionfinish(session):
    """With ``ORAL_RECORD_UNIT_SECONDS=1``, write the run's seconds per unit into
    :data:`UNIT_SECONDS` (the controller only, after a run that passed; units the run did not
    reach keep their seconds)."""
    if not os.environ.get("ORAL_RECORD_UNIT_SECONDS") or hasattr(session.config, "workerinput") \
            or session.testsfailed or not _RECORDED:
        return
    units = measured_unit_seconds() | {unit: round(s, 1) for unit, s in _RECORDED.items()}
    UNIT_SECONDS.write_text(json.dumps(dict(sorted(units.items())), indent=1) + "\n")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its layer: the first folder of its path under tests/; run the work
    units (:func:`worker_group_of`) longest first by :data:`UNIT_SECONDS`, the units it does not
    name after, in :data:`RUN_ORDER` of their layers, a layer's package units before its modules
    (a stable sort: a unit's tests stay together and keep their order)."""
    seconds = measured_unit_seconds()
    rank = {}
    for item in items:
        try:
            parts = Path(item.path).resolve().relative_to(TESTS).parts
        except ValueError:
            continue
        if len(parts) > 1 and parts[0] in LAYERS:
            item.add_marker(getattr(pytest.mark, parts[0]))
            path = "/".join(("tests",) + parts)
            unit = worker_group_of(path)
            rank[item.nodeid] = (-seconds.get(unit, -1.0), RUN_ORDER.index(parts[0]),
                                 unit == path, unit)
    items.sort(key=lambda item: rank.get(item.nodeid, (1.0, len(RUN_ORDER), True, "")))


def pytest_collection_finish(session):
    """Where the run holds tests of :data:`PREFECT_LAYERS`, the migrated Prefect home every new
    Prefect database of the run starts from (``tests/prefect_harness.py``), named in
    ``ORAL_PREFECT_HOME_TEMPLATE`` for this process and the nights it starts (unless set)."""
    from flows.settings import TEMPLATE_VARIABLE

    if TEMPLATE_VARIABLE in os.environ or not any(
            item.get_closest_marker(layer) for item in session.items for layer in PREFECT_LAYERS):
        return
    from tests.prefect_harness import prefect_home_template

    template = prefect_home_template()
    if template is not None:
        os.environ[TEMPLATE_VARIABLE] = str(template)


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread for the module: on a shared 2-core machine torch's thread pool
    made small-graph training ~10x slower (a 60-epoch run took 63 s instead of 7 s)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def npz_graph(tmp_path):
    """A small planted graph (200 nodes, 4 classes) in the gnn-benchmark npz format, loadable by
    path wherever a dataset name is accepted (``oral reproduce --dataset <path>``)."""
    import numpy as np
    import scipy.sparse as sp

    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=200, num_classes=4, feature_dim=8, seed=3)
    n = g.num_nodes
    adj = sp.csr_matrix((np.ones(g.num_edges), g.edge_index.numpy()), shape=(n, n))
    attr = sp.csr_matrix(g.x.numpy())
    path = tmp_path / "tiny.npz"
    np.savez(path, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, attr_data=attr.data, attr_indices=attr.indices,
             attr_indptr=attr.indptr, attr_shape=attr.shape, labels=g.y.numpy())
    return path


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    """No network and no writes to ``~/.cache``: dataset downloads fail as if offline and the
    dataset cache is a temporary folder (``pytestmark = pytest.mark.usefixtures("offline")``)."""
    from oral_core.datasets import download  # the module whose fetch_files calls download_file

    def refuse(url, dest, timeout=20.0):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(download, "download_file", refuse)
    monkeypatch.setenv("ORAL_CACHE_DIR", str(tmp_path / "cache"))
