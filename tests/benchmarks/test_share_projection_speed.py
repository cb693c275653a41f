"""benchmarks/share_projection_speed.py: a training step with and without the shared first
projection, interleaved, one row per graph and kernel."""
from __future__ import annotations

import csv

import pytest

from benchmarks.share_projection_speed import COLUMNS, main

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_a_row_per_kernel_with_both_timings(tmp_path, capsys):
    out = tmp_path / "steps.csv"
    assert main(["--dataset", "synthetic:300", "--rounds", "2", "--warmup", "0",
                 "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["kernel"] for r in rows] == ["gather", "spmm"] and list(rows[0]) == COLUMNS
    for r in rows:
        assert float(r["ms_without"]) > 0 and float(r["ms_with"]) > 0
        assert float(r["ratio_low"]) <= float(r["ratio_median"]) <= float(r["ratio_high"])
        assert r["graph"] == "synthetic300" and int(r["features"]) == 128
