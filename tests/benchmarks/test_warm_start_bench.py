"""The warm-start benchmark (benchmarks/warm_start.py) end to end on a few tiny nights: the cold,
warm and refresh chains, and the refresh chain's periodic cold night."""
from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_refresh_chain_goes_cold_every_cold_every_nights(tmp_path, one_thread):
    from benchmarks import warm_start

    results, state = tmp_path / "results", tmp_path / "state"
    try:
        assert warm_start.main(["--graphs", "synthetic", "--nights", "4", "--probe-nights", "0",
                                "--epochs", "4", "--warm-epochs", "2", "--cold-every", "2",
                                "--state", str(state), "--results", str(results)]) == 0
    finally:  # the module keeps its output folders in globals
        warm_start.RESULTS = warm_start.ROOT / "benchmarks" / "results"
        warm_start.NIGHTS_DIR = warm_start.RESULTS / "warm_start"
    nights = [json.loads((results / "warm_start" / "synthetic" / f"night_{k:02d}.json").read_text())
              for k in range(4)]
    chain = [n["warm_2_cold2"] for n in nights]
    assert [c["since_cold"] for c in chain] == [0, 1, 0, 1]
    assert [c["start"] for c in chain] == ["cold", "warm", "cold", "warm"]
    assert chain[2]["all"] == nights[2]["cold"]["all"]  # the cold chain's run of that night
    assert chain[1]["epochs"] == chain[3]["epochs"] == 2  # warm nights train warm_epochs
    # night 3 continues the refresh chain's own night 2, which is the cold chain's model
    assert chain[3]["warm_from"] == "night_02" and chain[2]["model_path"] == nights[2]["cold"]["model_path"]
    md = (results / "warm_start.md").read_text()
    assert "**refresh (a cold night every 2)**, nights 1-3" in md
    assert "refresh (cold every 2): start, s, All, Novel, classes" in md
    # --cold-every 0: never cold again after night 0 (the cold chain's runs are reused)
    try:
        assert warm_start.main(["--graphs", "synthetic", "--nights", "4", "--probe-nights", "0",
                                "--epochs", "4", "--warm-epochs", "2", "--cold-every", "0",
                                "--state", str(state), "--results", str(results)]) == 0
    finally:
        warm_start.RESULTS = warm_start.ROOT / "benchmarks" / "results"
        warm_start.NIGHTS_DIR = warm_start.RESULTS / "warm_start"
    never = [json.loads((results / "warm_start" / "synthetic" / f"night_{k:02d}.json").read_text())
             ["warm_2_cold0"] for k in range(4)]
    assert [c["start"] for c in never] == ["cold", "warm", "warm", "warm"]
