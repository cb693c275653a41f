"""benchmarks/index.py: benchmarks/results is one folder per study, each with a README of four
fields, and INDEX.md is generated from them (issue 48, item 2)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import index

ROOT = Path(__file__).resolve().parents[2]

README = """# A study

Question: does it work?

Command: `python -m benchmarks.something`

Answer: yes, +1.0 (s.e. 0.5).

Current: yes
"""


def _results(tmp_path: Path) -> Path:
    """A tidy results folder: goal.md, two studies, and oral reproduce's default output."""
    results = tmp_path / "results"
    for name in ("alpha", "beta"):
        (results / name).mkdir(parents=True)
        (results / name / "README.md").write_text(README.replace("A study", f"Study {name}"))
    (results / "goal.md").write_text("# The goals\n\nCommand: `python -m benchmarks.goal`.\n")
    (results / "reproduction.md").write_text("# tables\n")
    (results / "runs" / "oral").mkdir(parents=True)
    assert index.main(["--results", str(results)]) == 0
    return results


def _check(results: Path, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = index.main(["--results", str(results), "--check"])
    return code, capsys.readouterr().err.splitlines()


def test_the_committed_results_pass_the_check():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.index", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_a_generated_index_has_a_row_per_study_and_a_line_for_the_goal(tmp_path, capsys):
    results = _results(tmp_path)
    text = (results / "INDEX.md").read_text()
    assert "| [alpha/](alpha/README.md) | Study alpha | does it work? | yes, +1.0 (s.e. 0.5). | yes |" in text
    assert "| [beta/](beta/README.md) | Study beta |" in text
    assert "[goal.md](goal.md): The goals (`python -m benchmarks.goal`)." in text
    assert _check(results, capsys) == (0, [])


def test_a_skipped_folder_is_left_out_of_the_index(tmp_path, capsys):
    """``--skip``: a sweep still writing into its folder (not committed yet) stays out."""
    results = _results(tmp_path)
    (results / "gamma").mkdir()  # no README yet: would fail the survey
    assert index.main(["--results", str(results), "--skip", "gamma"]) == 0
    assert "gamma" not in (results / "INDEX.md").read_text()
    assert index.main(["--results", str(results), "--check", "--skip", "gamma"]) == 0
    assert _check(results, capsys)[0] == 1  # without --skip the folder is a problem


def test_a_loose_file_fails_naming_it(tmp_path, capsys):
    results = _results(tmp_path)
    (results / "speed.csv").write_text("graph,ratio\n")
    code, err = _check(results, capsys)
    assert code == 1 and len(err) == 1
    assert "speed.csv is a loose file at the top" in err[0]


def test_a_readme_without_a_field_fails_naming_the_field(tmp_path, capsys):
    results = _results(tmp_path)
    (results / "beta" / "README.md").write_text(README.replace("Current: yes\n", ""))
    code, err = _check(results, capsys)
    assert code == 1 and len(err) == 1
    assert "beta/README.md lacks Current:" in err[0]
    # the rewrite refuses too, and leaves INDEX.md as it was
    before = (results / "INDEX.md").read_text()
    assert index.main(["--results", str(results)]) == 1
    assert (results / "INDEX.md").read_text() == before


def test_a_folder_without_a_readme_fails(tmp_path, capsys):
    results = _results(tmp_path)
    (results / "gamma").mkdir()
    code, err = _check(results, capsys)
    assert code == 1 and err == [f"index: {index.shown(results / 'gamma')}/ has no README.md "
                                 "(a study folder needs one with a # title and Question:, "
                                 "Command:, Answer:, Current:)"]


def test_a_stale_index_fails_naming_it_and_the_rewrite_fixes_it(tmp_path, capsys):
    results = _results(tmp_path)
    (results / "alpha" / "README.md").write_text(README.replace("yes, +1.0", "no, -2.0"))
    code, err = _check(results, capsys)
    assert code == 1 and len(err) == 1
    assert "INDEX.md is stale: run python -m benchmarks.index" in err[0]
    assert index.main(["--results", str(results)]) == 0
    assert "no, -2.0" in (results / "INDEX.md").read_text()
    assert _check(results, capsys) == (0, [])


def test_a_script_written_readme_may_lack_answer_and_current(tmp_path, capsys, monkeypatch):
    results = _results(tmp_path)
    monkeypatch.setattr(index, "SCRIPT_READMES", ("alpha",))
    (results / "alpha" / "README.md").write_text(README.split("\nAnswer:")[0])
    assert index.main(["--results", str(results)]) == 0
    assert "| does it work? | see README | see README |" in (results / "INDEX.md").read_text()
    # any other study still needs all four fields
    (results / "beta" / "README.md").write_text(README.split("\nAnswer:")[0])
    code, err = _check(results, capsys)
    assert code == 1 and "beta/README.md lacks Answer:, Current:" in err[0]


def test_fields_span_lines_and_pipes_are_escaped(tmp_path):
    results = _results(tmp_path)
    (results / "alpha" / "README.md").write_text(
        README.replace("Answer: yes, +1.0 (s.e. 0.5).", "Answer: with `a|b`,\nover two lines."))
    assert index.main(["--results", str(results)]) == 0
    assert "| with `a\\|b`, over two lines. | yes |" in (results / "INDEX.md").read_text()


@pytest.mark.parametrize("argv", [["--chec"], ["--result", "x"]])
def test_abbreviated_options_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        index.main(argv)
    assert exc.value.code == 2
