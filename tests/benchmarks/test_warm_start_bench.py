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
    md = (results / "warm_start" / "warm_start.md").read_text()
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


@pytest.mark.slow
def test_guarded_chain_trains_cold_when_the_check_fires(tmp_path, one_thread, monkeypatch):
    """The guarded chain (warm starts + emergence check): quiet checks keep the warm night, a
    firing check puts the cold chain's run in its place at the cost of both fits, and a cold run
    whose files are gone (a fresh state folder) is trained again."""
    import shutil

    import tasks.emergence as emergence
    from benchmarks import warm_start

    results, state = tmp_path / "results", tmp_path / "state"
    args = ["--graphs", "synthetic", "--nights", "3", "--probe-nights", "0", "--epochs", "4",
            "--warm-epochs", "2", "--cold-every", "0", "--state", str(state),
            "--results", str(results)]

    def run(extra):
        try:
            assert warm_start.main(args + extra) == 0
        finally:
            warm_start.RESULTS = warm_start.ROOT / "benchmarks" / "results"
            warm_start.NIGHTS_DIR = warm_start.RESULTS / "warm_start"
        return [json.loads((results / "warm_start" / "synthetic" / f"night_{k:02d}.json")
                           .read_text()) for k in range(3)]

    quiet = lambda *a, **k: emergence.EmergenceCheck(False, "no sign of an emerging class")
    monkeypatch.setattr(emergence, "check_night", quiet)
    nights = run(["--alpha", "0.01"])
    chain = [n["guard_2_cold0_alpha0.01"] for n in nights]
    assert [c["why"] for c in chain] == ["night 0", "warm", "warm"]
    assert chain[2]["warm_from"] == "night_01" and chain[1]["epochs"] == 2
    # a firing check, and the cold runs' files gone: they are trained again for the guarded chain
    shutil.rmtree(state / "runs" / "synthetic" / "night_02" / "cold")
    fired = lambda *a, **k: emergence.EmergenceCheck(True, "a class may have emerged: test")
    monkeypatch.setattr(emergence, "check_night", fired)
    nights = run(["--alpha", "0.5"])
    chain = [n["guard_2_cold0_alpha0.5"] for n in nights]
    assert [c["why"] for c in chain] == ["night 0", "check", "check"]
    for night, c in zip(nights[1:], chain[1:]):
        assert c["all"] == night["cold"]["all"] and c["since_cold"] == 0
        assert c["seconds"] > night["cold"]["seconds"]  # the warm fit was paid for too
    assert "rerun_seconds" in nights[2]["cold"]  # trained again, same scores (else a warning)
    md = (results / "warm_start" / "warm_start.md").read_text()
    assert "**guarded (emergence check at alpha 0.5, no periodic cold night)**" in md
    assert "- night 2: cold (check): a class may have emerged: test" in md
