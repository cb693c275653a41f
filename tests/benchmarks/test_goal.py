"""``benchmarks.goal``: issue 17's goals as one scoreboard from planted seed files."""
import json

import pytest

from benchmarks import goal
from benchmarks.goal import main
from harness.reproduction import run_dir


@pytest.fixture(autouse=True)
def cora_only(monkeypatch):
    # one dataset keeps the planted folders small; the moonshot's averages then cover Cora only
    monkeypatch.setattr(goal, "DATASETS", ["cora"])
    monkeypatch.setattr(goal, "PROTOCOLS", ["ours"])


def _seeds(folder, method, prior, scores, protocol="ours", classes_est=7, contingency=None):
    path = run_dir(folder, method, "cora", prior, protocol)
    path.mkdir(parents=True, exist_ok=True)
    for seed, all_ in enumerate(scores):
        row = {"seed": seed, "all": all_, "classes_est": classes_est, "classes_true": 7}
        if contingency:
            row["contingency"] = contingency
        (path / f"seed_{seed}.json").write_text(json.dumps(row))


def _committed(tmp_path, oral_all):
    results = tmp_path / "results"
    for prior in (False, True):
        _seeds(results, "oral", prior, [oral_all] * 10)
        _seeds(results, "gcd", prior, [50.0] * 10)
        _seeds(results, "opennc", prior, [60.0 + s for s in range(10)])  # 60 .. 69
    _seeds(results, "gcn", False, [40.0] * 10)
    return results


def _row(text, prior, rival):
    return next(line for line in text.splitlines()
                if line.startswith(f"| ours | cora | {prior} |") and f"| {rival} |" in line)


def test_cells_say_whether_oral_is_ahead_paired_by_seed(tmp_path, capsys):
    results = _committed(tmp_path, 65.0)  # ahead of OpenNCD on seeds 0-4 only, mean +0.5
    assert main(["--results", str(results)]) == 0
    text = capsys.readouterr().out
    assert "| gcd | +15.00 ± 0.00 (10/10) | ahead |" in _row(text, "no", "gcd")
    assert "| opennc | +0.50 ± 0.96 (5/10) | ahead |" in _row(text, "no", "opennc")
    assert "| gcn |" not in "".join(l for l in text.splitlines() if "| ours | cora | yes |" in l)
    assert "Cells where ORAL is not ahead on All: 0." in text


def test_a_gap_beyond_two_standard_errors_is_marked_and_counted(tmp_path, capsys):
    results = _committed(tmp_path, 55.0)  # 5 to 14 behind OpenNCD on every seed
    main(["--results", str(results)])
    text = capsys.readouterr().out
    assert "| -9.50 ± 0.96 (0/10) | behind, beyond 2 s.e. |" in _row(text, "yes", "opennc")
    assert ("Cells where ORAL is not ahead on All: 2: ours cora prior=no vs opennc; "
            "ours cora prior=yes vs opennc.") in text


def test_oral_rows_come_from_the_first_folder_with_all_ten_seeds(tmp_path, capsys):
    results = _committed(tmp_path, 55.0)
    short, flip = tmp_path / "short", tmp_path / "flip"
    _seeds(short, "oral", False, [99.0] * 9)  # nine seeds: not taken
    _seeds(flip, "oral", False, [70.0] * 10)
    main(["--results", str(results), "--oral", str(short), "--oral", str(flip)])
    text = capsys.readouterr().out
    assert f"| `{flip}` | opennc | +5.50 ± 0.96 (10/10) | ahead |" in _row(text, "no", "opennc")
    assert f"| `{results}` | opennc |" in _row(text, "yes", "opennc")  # the flip lacks this cell


def test_class_balanced_gap_reads_the_contingency_and_skips_files_without(tmp_path, capsys):
    results = _committed(tmp_path, 65.0)
    found = [[0, 0, 6], [0, 1, 2], [1, 1, 2]]  # balanced 87.5
    merged = [[0, 0, 8], [1, 0, 2]]  # balanced 50
    _seeds(results, "oral", False, [65.0] * 10, contingency=found)
    _seeds(results, "opennc", False, [60.0] * 10, contingency=merged)
    main(["--results", str(results)])
    text = capsys.readouterr().out
    assert _row(text, "no", "opennc").endswith("| +37.50 ± 0.00 (10/10) | ahead |")
    assert _row(text, "no", "gcd").endswith("| – | not run |")  # GCD's files have no table


def test_moonshot_compares_the_paper_protocol_with_the_paper(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(goal, "PROTOCOLS", [])
    results = tmp_path / "results"
    _seeds(results, "oral", False, [72.0] * 10, protocol="paper", classes_est=7.5)
    main(["--results", str(results)])
    text = capsys.readouterr().out
    assert "| cora | no | " in text and "| 10 | 72.00 | 69.91 | +2.09 |" in text
    assert "| cora | yes | " in text and "| 0 | not run | 71.39 | – |" in text
    assert "- Average All, prior=no: ORAL 72.00, paper 74.7." in text
    assert "- Average All, prior=yes: ORAL incomplete, paper 77.7." in text
    assert "the paper's MAE column equals): ORAL 0.50, goal 0.3." in text
    assert "each seed's error instead: 0.50." in text


def test_a_folder_without_runs_is_one_line_and_exit_2(tmp_path, capsys):
    results = _committed(tmp_path, 65.0)
    assert main(["--results", str(results), "--oral", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err and "runs/" in err


def test_out_writes_the_file_and_says_how_many_cells_fall_short(tmp_path, capsys):
    results = _committed(tmp_path, 55.0)
    out = tmp_path / "goal.md"
    assert main(["--results", str(results), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith("2 cells where ORAL is not ahead on All")
    assert out.read_text().startswith("# Issue 17's goals")
