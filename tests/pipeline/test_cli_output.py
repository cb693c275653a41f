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


def test_a_refused_or_broken_query_is_one_line_naming_its_statement(tmp_path, capsys):
    """``oral sql "SELEC 1"`` printed DuckDB's four-line error; ATTACH was 'a ATTACH statement'
    and INSTALL 'a LOAD statement' (issue 62)."""
    from cli.main import main

    state = tmp_path / "state"
    Warehouse(state / "oral.duckdb", lock_timeout=2.0, threads=1).ensure_schema()
    for sql, says in (("SELEC 1", "cannot parse the query: Parser Error"),
                      ("ATTACH 'x.db' AS x", "got an ATTACH statement"),
                      ("INSTALL httpfs", "got an INSTALL statement"),
                      ("CREATE TABLE t (a INT)", "got a CREATE statement")):
        assert main(["sql", "--state-dir", str(state), sql]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and says in err[0], (sql, err)
    assert main(["sql", "--state-dir", str(state), "SELECT * FROM no_such_table"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: CatalogException: ")


def test_classes_on_a_file_that_is_not_duckdb_is_an_expected_refusal(tmp_path, capsys):
    """It said ``error: WarehouseError: ... (rerun with oral -v for the traceback)``, as if the
    failure were unexpected; ``oral sql`` and ``oral label`` print the plain message (issue 62)."""
    from cli.main import main

    state = tmp_path / "state"
    state.mkdir()
    (state / "oral.duckdb").write_text("not a database")
    assert main(["classes", "--state-dir", str(state)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "WarehouseError" not in err[0]
    assert "oral -v" not in err[0] and "oral.duckdb" in err[0]


def test_a_backfill_with_nothing_to_run_is_refused_before_anything_starts(tmp_path, capsys):
    """``oral backfill --start`` after the last snapshot was refused only after a Prefect server
    had started (27 s) and the state folder was written (issue 62)."""
    from cli.main import main

    root, state = tmp_path / "snapshots", tmp_path / "state"
    assert main(["snapshots", "generate", "--nodes", "60", "--out", str(root), "--graph", "g",
                 "--date", "2026-01-01", "--classes", "3", "--features", "4"]) == 0
    capsys.readouterr()
    assert main(["backfill", "--graph", "g", "--snapshots", str(root), "--start", "2027-01-01",
                 "--state-dir", str(state)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: no snapshot of 'g' between 2027-01-01 and the last (there are 1, "
                   "2026-01-01 to 2026-01-01)"]
    assert not state.exists()  # no Prefect home, no log, nothing written
