"""What the terminal commands print (issue 62): a closed pipe ends a command quietly, and a
table cell cut to fit says so."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from cli.pipeline import CELL_WIDTH, CUT, clip, print_table
from tasks.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]


def test_a_cut_cell_ends_in_a_marker_and_a_short_one_is_whole(capsys):
    assert clip("abc", 5) == "abc" and clip("abcdefg", 5) == "abcd" + CUT
    long = "x" * (CELL_WIDTH + 20)
    print_table(pa.table({"gate_reason": [long, "short"]}))
    out = capsys.readouterr().out.splitlines()
    assert out[1].rstrip() == "x" * (CELL_WIDTH - 1) + CUT
    assert out[2].rstrip() == "short"


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """``oral sql --format csv ... | head -2``: no ``error: BrokenPipeError``, status 0."""
    state = tmp_path / "state"
    Warehouse(state / "oral.duckdb", lock_timeout=2.0, threads=1).ensure_schema()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "sql", "--state-dir", str(state), "--format", "csv",
         "SELECT range AS n, repeat('x', 50) AS pad FROM range(200000)"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b'"n","pad"'
    proc.stdout.close()  # the reader goes away, as head does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "error" not in err and "BrokenPipe" not in err
