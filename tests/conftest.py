"""Shared fixtures, and the layer markers.

The tests are organised by layer, one folder each: ``core/`` (oral_core, the method),
``contracts/`` (data_contracts), ``pipeline/`` (tasks/ and flows/ in-process), ``e2e/``
(whole-product runs: servers, fresh venvs, child processes) and ``benchmarks/`` (the benchmark
scripts and the reproduction harness). Every test gets the marker of its folder, so
``pytest -m "core and not slow"`` (``make test-fast``: core and contracts) selects by layer.
"""
from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LAYERS = ("core", "contracts", "pipeline", "e2e", "benchmarks")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its layer: the first folder of its path under tests/."""
    for item in items:
        try:
            parts = Path(item.path).resolve().relative_to(TESTS).parts
        except ValueError:
            continue
        if len(parts) > 1 and parts[0] in LAYERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread for the module: on a shared 2-core machine torch's thread pool
    made small-graph training ~10x slower (a 60-epoch run took 63 s instead of 7 s)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
