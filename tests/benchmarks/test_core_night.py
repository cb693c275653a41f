"""benchmarks/core_night.py: the nightly train stage without orchestration (for the GPU machine)."""
from __future__ import annotations

import csv


def test_core_night_trains_cold_then_warm_and_appends_rows(tmp_path, one_thread):
    from benchmarks import core_night

    out = tmp_path / "core_night.csv"
    assert core_night.main(["--nodes", "600", "--warm", "--set", "epochs=6",
                            "--set", "cluster_warmup_epochs=1", "--set", "pol_start_epoch=2",
                            "--state", str(tmp_path / "state"), "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["graph"].split(" (")[1].split(",")[0] for r in rows] == ["cold", "warm"]
    assert rows[0]["graph"].startswith("synthetic-600 (cold, 6 epochs")
    assert rows[1]["graph"].startswith("synthetic-600 (warm, 6 epochs")
    assert all(int(r["nodes"]) == 600 and float(r["stage_s"]) > 0 for r in rows)
    assert all(r["accuracy"].startswith("All ") and "full batch" in r["batch"] for r in rows)
    assert rows[0]["gpu_peak_gb"] == "" and rows[0]["device"].startswith("cpu-")
