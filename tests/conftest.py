"""Shared fixtures."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread for the module: on a shared 2-core machine torch's thread pool
    made small-graph training ~10x slower (a 60-epoch run took 63 s instead of 7 s)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
