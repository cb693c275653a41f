"""benchmarks/parallel_seeds.sh: one `oral reproduce` process per seed line, checked jobs file."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "parallel_seeds.sh"


def _run(jobs: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"ORAL": "echo", "LOGS": str(tmp_path / "logs")}
    return subprocess.run(["bash", str(SCRIPT), str(jobs), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_each_line_is_one_reproduce_call_for_one_seed(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("# comment\n\noral cora prior 3 paper\ngcn blogcatalog noprior 0 ours\n")
    out = _run(jobs, tmp_path, "2", "--", "--data-dir", "/data")
    assert out.returncode == 0, out.stderr
    assert "oral cora prior 3 paper: done" in out.stdout
    assert "gcn blogcatalog noprior 0 ours: done" in out.stdout
    called = (tmp_path / "logs" / "oral-cora-prior-paper-3.log").read_text().split()
    assert called[:7] == ["reproduce", "--quiet", "--seeds", "1", "--first-seed", "3", "--dataset"]
    assert "--prior" in called and called[-2:] == ["--data-dir", "/data"]
    assert "--prior" not in (tmp_path / "logs" / "gcn-blogcatalog-noprior-ours-0.log").read_text()


def test_a_bad_jobs_file_is_refused_with_the_rule_and_the_line(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("oral cora maybe 0 paper\n")
    out = _run(jobs, tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert "rule METHOD DATASET prior|noprior SEED ours|paper" in out.stderr
    assert "1: oral cora maybe 0 paper" in out.stderr
    missing = _run(tmp_path / "none.txt", tmp_path)
    assert missing.returncode == 2 and "cannot read the jobs file" in missing.stderr


def test_no_job_starts_after_the_time_limit(tmp_path):
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("oral cora prior 3 paper\n")
    out = _run(jobs, tmp_path, "1", "5")  # fewer than 20 s left from the start
    assert "not started (time limit)" in out.stdout
    assert not (tmp_path / "logs" / "oral-cora-prior-paper-3.log").exists()


def test_gpu_flip_refuses_an_unknown_row_set_in_one_line(tmp_path):
    """``gpu_flip.sh SECONDS FIRST WHAT``: a WHAT other than strict, paper or ablations stops
    before anything is installed or fitted, with the rule in one line."""
    env = dict(os.environ, OUT=str(tmp_path / "out"))
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_flip.sh"), "10", "0", "tables"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: WHAT must be strict, paper or ablations, got 'tables'"
    assert not (tmp_path / "out").exists()
