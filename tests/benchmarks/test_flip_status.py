"""``benchmarks.flip_status``: which flip rows exist where, and a copy only when none is missing."""
import json

import pytest

from benchmarks import flip_status
from benchmarks.flip_status import FLIP, flip_hash, main
from harness.reproduction import run_dir


@pytest.fixture(autouse=True)
def one_cell(monkeypatch):
    # two cells (Cora, strict, both priors) keep the test small; the rule is the same for all
    monkeypatch.setattr(flip_status, "CELLS", [("oral", "ours")])
    monkeypatch.setattr(flip_status, "DATASETS", ["cora"])


def _seeds(folder, method, prior, device, seeds=range(10), config_hash=None, all_=50.0):
    path = run_dir(folder, method, "cora", prior)
    path.mkdir(parents=True, exist_ok=True)
    h = config_hash or flip_hash(method, "cora", prior, FLIP)
    for seed in seeds:
        (path / f"seed_{seed}.json").write_text(json.dumps(
            {"seed": seed, "all": all_, "device": device, "config_hash": h}))


def test_each_cell_takes_the_source_trained_where_opennc_was(tmp_path, capsys):
    results, gpu, cpu = tmp_path / "results", tmp_path / "gpu", tmp_path / "cpu"
    for prior in (False, True):
        _seeds(results, "opennc", prior, "cpu")
        _seeds(gpu, "oral", prior, "cuda:0")
    _seeds(cpu, "oral", False, "cpu")
    _seeds(cpu, "oral", True, "cpu", seeds=range(9))  # one seed short: not complete
    assert main(["--source", str(gpu), "--source", str(cpu), "--results", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    noprior = next(x for x in lines if x.startswith("| oral cora noprior ours"))
    prior = next(x for x in lines if x.startswith("| oral cora prior ours"))
    assert noprior.endswith(f"| 10/10 cuda | 10/10 cpu | `{cpu}` |")  # the device matches
    assert prior.endswith(f"| 10/10 cuda | 9/10 cpu | `{gpu}` (device differs) |")


def test_rows_at_another_hash_do_not_count(tmp_path, capsys):
    results, src = tmp_path / "results", tmp_path / "src"
    for prior in (False, True):
        _seeds(results, "opennc", prior, "cpu")
        _seeds(src, "oral", prior, "cpu", config_hash="0123456789ab")  # today's defaults, say
    assert main(["--source", str(src), "--results", str(results)]) == 0
    assert capsys.readouterr().out.count("| – | missing |") == 2


def _committed(tmp_path):
    """A results folder with OpenNCD's and today's ORAL rows (All 40) on CPUs, and an empty
    source folder."""
    results, src = tmp_path / "results", tmp_path / "src"
    for prior in (False, True):
        _seeds(results, "opennc", prior, "cpu")
        _seeds(results, "oral", prior, "cpu", config_hash="0123456789ab", all_=40.0)
    return results, src


def test_apply_copies_nothing_while_a_cell_is_missing(tmp_path, capsys):
    results, src = _committed(tmp_path)
    _seeds(src, "oral", False, "cpu", all_=60.0)
    before = sorted(p.read_text() for p in (results / "runs").rglob("*.json"))
    assert main(["--source", str(src), "--results", str(results), "--apply"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("flip_status: 1 cells have no complete source, nothing copied: "
                          "oral cora prior ours") and len(err.strip().splitlines()) == 1
    assert sorted(p.read_text() for p in (results / "runs").rglob("*.json")) == before


def test_apply_copies_every_cell_once_complete(tmp_path, capsys):
    results, src = _committed(tmp_path)
    for prior in (False, True):
        _seeds(src, "oral", prior, "cpu", all_=60.0)
    assert main(["--source", str(src), "--results", str(results), "--apply"]) == 0
    assert "copied 2 cells" in capsys.readouterr().out
    for prior in (False, True):
        rows = [json.loads(p.read_text()) for p in run_dir(results, "oral", "cora", prior).glob("*.json")]
        assert len(rows) == 10 and {r["all"] for r in rows} == {60.0}
        assert {r["config_hash"] for r in rows} == {flip_hash("oral", "cora", prior, FLIP)}


def test_a_folder_without_runs_is_a_one_line_error(tmp_path, capsys):
    assert main(["--source", str(tmp_path / "nowhere"), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nowhere has no runs/ folder" in err and len(err.strip().splitlines()) == 1


def test_the_flip_hash_is_the_one_oral_reproduce_wrote_for_the_committed_flip_rows():
    from pathlib import Path
    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "flip_guard"
    for method, dataset, prior, protocol in [("oral", "amazonphoto", False, "ours"),
                                             ("oral_no_pan", "cora", True, "paper")]:
        row = json.loads((run_dir(folder, method, dataset, prior, protocol) / "seed_0.json").read_text())
        assert row["config_hash"] == flip_hash(method, dataset, prior, FLIP)
