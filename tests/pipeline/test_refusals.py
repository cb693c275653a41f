"""Every refusal of the ``oral`` command that the test suite exercises is one ``error:`` line and
no traceback (issue 21.10). Before: 32 of 38 refusals printed a traceback (Prefect's log record
of the failed run, or Python's for an exception the command did not catch) before or instead of
the clean line.

Two kinds of cases, one parametrised test over both:

* refused before any work (options, the state folder, snapshot folder names, ``oral sql``,
  ``oral classes``, ``oral validate``, ``oral reproduce``, ``oral snapshots``): ``main`` is called
  in this process, its output captured;
* refused by a run (``oral run``, ``backfill``, ``demo``: broken contracts, unreadable and
  encrypted files, a missing snapshot date, a warehouse that is not DuckDB, a crash in
  training): those start Prefect, whose log records reach the terminal through handlers set up
  per process, so they run in one child process (``python tests/pipeline/test_refusals.py CASES``) with
  its real stderr, one case after the other (one Prefect server for all), each output
  delimited by markers.

Each case checks the exit status the table of docs/operators.md gives ("Errors and exit codes"), the one ``error:`` line (or, for
``oral validate``, the finding on stdout) naming the problem, and that neither stdout nor stderr
holds a traceback. Tracebacks go to ``<state>/logs/oral.log``: the unexpected crash's line
names that file, which holds it.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
D1 = "2026-03-01"
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s+File \".*\", line \d+", re.M)
MARK = "@@@ oral-refusal-case"


# ------------------------------------------------------------------------------ the snapshots
def _nodes(n: int = 40, width: int = 4, bad=None):
    import numpy as np

    from data_contracts import snapshots as snap

    rng = np.random.default_rng(0)
    x = rng.random((n, width)).astype(np.float32)
    if bad is not None:
        x[:3, 0] = bad
    labels = [["a", "b"][i % 2] if i < 20 else None for i in range(n)]
    return snap.nodes_table([f"n{i}" for i in range(n)], x, labels)


def _edges(n: int = 40):
    from data_contracts import snapshots as snap

    ids = [f"n{i}" for i in range(n)]
    return snap.edges_table(ids[:-1], ids[1:])


def _write(root: Path, graph: str, nodes=None, edges=None) -> Path:
    import pyarrow.parquet as pq

    folder = root / graph / f"snapshot={D1}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in (("nodes.parquet", nodes if nodes is not None else _nodes()),
                        ("edges.parquet", edges if edges is not None else _edges())):
        if isinstance(table, bytes):
            (folder / name).write_bytes(table)
        else:
            pq.write_table(table, folder / name)
    return folder


def _float32_overflow():
    import pyarrow as pa

    good = _nodes()
    rows = good.column("features").to_pylist()
    rows[7][2], rows[30][0] = 1e300, -1e39
    return good.set_column(good.column_names.index("features"), "features",
                           pa.array(rows, pa.list_(pa.float64())))


def build_snapshots(base: Path) -> dict[str, Path]:
    """The snapshot root and state folders every case refers to (``{root}``, ``{state}``,
    ``{bad_warehouse}``, ``{file}``, ``{base}``)."""
    import math

    from reliability.harness import _good_edges, _good_nodes
    from reliability.test_rel8b_hostile_files import _unsupported_codec, encrypted_nodes

    root = base / "snapshots"
    _write(root, "good")
    _write(root, "nan", _nodes(bad=math.nan))
    _write(root, "float32", _float32_overflow())
    for kind in ("text", "empty", "folder", "symlink", "codec"):
        folder = _write(root, f"unreadable-{kind}", _good_nodes(), _good_edges())
        nodes = folder / "nodes.parquet"
        nodes.unlink()
        if kind == "text":
            nodes.write_text("node_id,features,label\n0,\"[1, 2]\",a\n")
        elif kind == "empty":
            nodes.write_bytes(b"")
        elif kind == "folder":
            nodes.mkdir()
        elif kind == "symlink":
            target = base / "not-parquet.txt"
            target.write_text("not a parquet file\n" * 20)
            nodes.symlink_to(target)
        else:
            nodes.write_bytes(_unsupported_codec(_good_nodes()))
    try:
        for footer in ("plaintext", "encrypted"):
            _write(root, f"encrypted-{footer}", encrypted_nodes(footer == "plaintext"),
                   _good_edges())
    except ImportError:  # pyarrow built without encryption: those cases are skipped
        pass
    (root / "misnamed" / "snapshot=20260301").mkdir(parents=True)
    (root / "empty-graph").mkdir()
    bad_wh = base / "bad-warehouse"
    bad_wh.mkdir()
    (bad_wh / "oral.duckdb").write_text("not a DuckDB file\n")
    no_wh = base / "no-warehouse"
    no_wh.mkdir()
    wh = base / "warehouse"
    from tasks.warehouse import Warehouse

    Warehouse(wh / "oral.duckdb", threads=1).ensure_schema()
    (base / "a-file").write_text("x")
    return {"root": root, "state": base / "state", "bad_warehouse": bad_wh,
            "no_warehouse": no_wh, "warehouse": wh, "file": base / "a-file", "base": base}


# -------------------------------------------------------------------------------- the cases
RUN = ["--snapshots", "{root}", "--state-dir", "{state}", "--epochs", "2", "--device", "cpu"]

# name: (argv, exit status, what the output names, where: "inproc" | "child", options)
# options: "validate" (the finding is on stdout, no error: line), "crash" (training raises: one line naming the log, which holds the
# traceback), "cuda" (CUDA reported absent), "cluster" (ORAL_TRAIN_CLUSTER names a scheduler nobody runs)
CASES = {
    # refused before any work, in this process
    "run --epochs 0": (["run", "--graph", "good", *RUN[:4], "--epochs", "0"], 2,
                       "--epochs 0: epochs must be >= 1", "inproc", ""),
    "run --set gamma=abc": (["run", "--graph", "good", *RUN, "--set", "gamma=abc"], 2,
                            "--set gamma=abc: gamma must be a number", "inproc", ""),
    "run --set gama=0.3": (["run", "--graph", "good", *RUN, "--set", "gama=0.3"], 2,
                           "unknown configuration key 'gama'", "inproc", ""),
    "run --device cuda": (["run", "--graph", "good", *RUN[:4], "--device", "cuda"], 2,
                          "--device cuda: CUDA is not available", "inproc", "cuda"),
    "run --state-dir file": (["run", "--graph", "good", "--snapshots", "{root}", "--state-dir",
                              "{file}"], 2, "is not a folder", "inproc", ""),
    "run --date 2026-13-45": (["run", "--graph", "good", *RUN, "--date", "2026-13-45"], 2,
                              "--date 2026-13-45: not a date", "inproc", ""),
    "run --graph ../evil": (["run", "--graph", "../evil", *RUN], 2, "invalid graph name",
                            "inproc", ""),
    "run unknown graph": (["run", "--graph", "nosuch", *RUN], 2, "does not exist", "inproc", ""),
    "run misnamed snapshot folder": (["run", "--graph", "misnamed", *RUN], 2,
                                     "'snapshot=20260301' (not snapshot=YYYY-MM-DD", "inproc", ""),
    "run no snapshot of the date": (["run", "--graph", "good", *RUN, "--date", "2026-04-01"], 2,
                                    "no snapshot of 'good' dated 2026-04-01 (latest: 2026-03-01)",
                                    "inproc", ""),
    "backfill start after end": (["backfill", "--graph", "good", *RUN, "--start", "2026-03-05",
                                  "--end", "2026-03-01"], 2, "the start is after the end",
                                 "inproc", ""),
    "backfill range after the last snapshot": (["backfill", "--graph", "good", *RUN, "--start",
                                                "2027-01-01"], 2,
                                               "no snapshot of 'good' between 2027-01-01 and "
                                               "the last", "inproc", ""),
    "demo --epochs 0": (["demo", "--epochs", "0", "--state-dir", "{state}"], 2,
                        "--epochs 0: epochs must be >= 1", "inproc", ""),
    "sql write refused": (["sql", "--state-dir", "{warehouse}", "DROP TABLE runs"], 2,
                          "error: ", "inproc", ""),
    "sql unknown table": (["sql", "--state-dir", "{warehouse}", "SELECT * FROM no_such_table"],
                          1, "no_such_table", "inproc", ""),
    "sql no warehouse": (["sql", "--state-dir", "{no_warehouse}", "SELECT 1"], 2,
                         "no warehouse at", "inproc", ""),
    "classes no warehouse": (["classes", "--state-dir", "{no_warehouse}"], 2, "no warehouse at",
                             "inproc", ""),
    "classes warehouse not DuckDB": (["classes", "--state-dir", "{bad_warehouse}"], 1,
                                     "not a valid DuckDB database file", "inproc", ""),
    "validate broken contract": (["validate", "{root}/nan/snapshot=" + D1], 1,
                                 "ERROR nodes.parquet rule features_finite", "inproc", "validate"),
    "validate missing folder": (["validate", "{root}/nosuch/snapshot=" + D1], 1,
                                "snapshot_folder_exists", "inproc", "validate"),
    "validate not Parquet": (["validate", "{root}/unreadable-text/snapshot=" + D1], 1,
                             "ERROR nodes.parquet rule readable_parquet", "inproc", "validate"),
    "validate bad option": (["validate", "{root}/good/snapshot=" + D1, "--last-processed",
                             "31/01/2026"], 2, "--last-processed", "inproc", ""),
    "reproduce missing dataset": (["reproduce", "--dataset", "{base}/nothing.npz", "--seeds", "1",
                                   "--out", "{base}/reproduce", "--quiet"], 2, "nothing.npz",
                                  "inproc", ""),
    "reproduce --set gamma=5": (["reproduce", "--dataset", "cora", "--out", "{base}/reproduce",
                                 "--set", "gamma=5"], 2, "--set gamma=5: gamma must be in (0, 1]",
                                "inproc", ""),
    "snapshots import missing dataset": (["snapshots", "import", "--dataset", "{base}/missing.npz",
                                          "--out", "{base}/imported"], 2, "missing.npz", "inproc",
                                         ""),
    "choose --seeds 1": (["choose", "--dataset", "cora", "--seeds", "1", "--out", "{base}/choose"],
                         2, "--seeds 1: the gain is paired by seed", "inproc", ""),
    "choose --candidate gama=0.1": (["choose", "--dataset", "cora", "--candidate", "gama=0.1",
                                     "--out", "{base}/choose"], 2,
                                    "unknown configuration key 'gama'", "inproc", ""),
    "choose --graph without --snapshots": (["choose", "--graph", "good", "--out", "{base}/choose"],
                                           2, "--graph good: needs --snapshots", "inproc", ""),
    "choose --protocol paper on snapshots": (["choose", "--graph", "good", "--snapshots", "{root}",
                                              "--protocol", "paper", "--out", "{base}/choose"], 2,
                                             "--protocol paper: only with --dataset", "inproc", ""),
    "choose missing dataset": (["choose", "--dataset", "{base}/nothing.npz", "--out",
                                "{base}/choose"], 2, "nothing.npz", "inproc", ""),
    "choose broken contract": (["choose", "--graph", "nan", "--snapshots", "{root}", "--out",
                                "{base}/choose"], 2, "features_finite", "inproc", ""),
    "choose two known classes": (["choose", "--graph", "good", "--snapshots", "{root}", "--out",
                                  "{base}/choose"], 2,
                                 "--hide extremes: hide='extremes' needs at least 3 known classes",
                                 "inproc", ""),
    "choose no snapshot at all": (["choose", "--graph", "empty-graph", "--snapshots", "{root}",
                                   "--out", "{base}/choose"], 2,
                                  "no snapshots for graph 'empty-graph'", "inproc", ""),
    # refused by a run: Prefect starts, in one child process
    "run broken contract": (["run", "--graph", "nan", *RUN], 1,
                            "nodes.parquet features_finite", "child", ""),
    "run float32 overflow": (["run", "--graph", "float32", *RUN], 1,
                             "nodes.parquet features_float32_range", "child", ""),
    "run not Parquet": (["run", "--graph", "unreadable-text", *RUN], 1,
                        "nodes.parquet readable_parquet", "child", ""),
    "run empty file": (["run", "--graph", "unreadable-empty", *RUN], 1,
                       "nodes.parquet readable_parquet", "child", ""),
    "run folder for a file": (["run", "--graph", "unreadable-folder", *RUN], 1,
                              "nodes.parquet file_present", "child", ""),
    "run symlink to text": (["run", "--graph", "unreadable-symlink", *RUN], 1,
                            "nodes.parquet readable_parquet", "child", ""),
    "run unsupported codec": (["run", "--graph", "unreadable-codec", *RUN], 1,
                              "nodes.parquet readable_parquet", "child", ""),
    "run encrypted, plain-text footer": (["run", "--graph", "encrypted-plaintext", *RUN], 1,
                                         "nodes.parquet readable_parquet", "child", ""),
    "run encrypted footer": (["run", "--graph", "encrypted-encrypted", *RUN], 1,
                             "nodes.parquet readable_parquet", "child", ""),
    "validate encrypted": (["validate", "{root}/encrypted-plaintext/snapshot=" + D1], 1,
                           "ERROR nodes.parquet rule readable_parquet", "child", "validate"),
    "backfill broken contract": (["backfill", "--graph", "nan", *RUN], 1,
                                 "nodes.parquet features_finite", "child", ""),
    "run no snapshot at all": (["run", "--graph", "empty-graph", *RUN], 2,
                               "no snapshots for graph 'empty-graph'", "child", ""),
    "run warehouse not DuckDB": (["run", "--graph", "good", *RUN[:2], "--state-dir",
                                  "{bad_warehouse}", *RUN[4:]], 1,
                                 "not a valid DuckDB database file", "child", ""),
    "demo missing dataset": (["demo", "--dataset", "{base}/nothing.npz", "--state-dir",
                              "{base}/demo-state"], 2, "nothing.npz", "child", ""),
    "run crash in training": (["run", "--graph", "good", *RUN], 1,
                              "RuntimeError: injected crash in training", "child", "crash"),
    "run training cluster unreachable": (["run", "--graph", "good", *RUN, "--set", "shards=2",
                                          "--set", "batch_size=16"], 1,
                                         "ORAL_TRAIN_CLUSTER=tcp://127.0.0.1:9: no Dask scheduler "
                                         "answers", "child", "cluster"),
}


def _argv(argv: list[str], paths: dict[str, Path]) -> list[str]:
    return [re.sub(r"\{(\w+)\}", lambda m: str(paths[m.group(1)]), a) for a in argv]


def _inject(option: str):
    """Patches a case needs in the child; returns an undo."""
    if option == "crash":
        from tasks import fitting

        real = fitting.train

        def crash(*args, **kwargs):
            raise RuntimeError("injected crash in training")

        fitting.train = crash
        return lambda: setattr(fitting, "train", real)
    if option == "cluster":  # the data-parallel workers' Dask scheduler, where none listens
        from tasks import workers

        timeout = workers.CONNECT_TIMEOUT
        workers.CONNECT_TIMEOUT = 1.0
        os.environ[workers.CLUSTER_ENV] = "127.0.0.1:9"

        def undo():
            workers.CONNECT_TIMEOUT = timeout
            os.environ.pop(workers.CLUSTER_ENV, None)
        return undo
    return lambda: None


def run_child_cases(cases: list[tuple[str, list[str], str]]) -> None:
    """In the child: each case's ``main(argv)``, framed by markers on the shared output."""
    from cli.main import main

    for name, argv, option in cases:
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(2, f"{MARK} start {name}\n".encode())
        undo = _inject(option)
        try:
            code = main(argv)
        except SystemExit as err:
            code = err.code
        except Exception:  # what the user would see: Python prints the traceback, exit 1
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            undo()
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(2, f"{MARK} exit {code} {name}\n".encode())


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return build_snapshots(tmp_path_factory.mktemp("refusals"))


@pytest.fixture(scope="module")
def child_results(paths):
    """``{case: (exit status, output)}`` of every child case, run in one process."""
    import psutil

    names = [n for n, c in CASES.items() if c[3] == "child"
             if "encrypted" not in n or (paths["root"] / "encrypted-plaintext").exists()]
    spec = [(n, _argv(CASES[n][0], paths), CASES[n][4]) for n in names]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ORAL_",
                                                                     "MLFLOW_"))}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, __file__, json.dumps(spec)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=540)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    results, current, lines = {}, None, []
    for line in out.splitlines():
        if line.startswith(f"{MARK} start "):
            current, lines = line[len(f"{MARK} start "):], []
        elif line.startswith(f"{MARK} exit "):
            code, name = line[len(f"{MARK} exit "):].split(" ", 1)
            results[name] = (int(code) if code.lstrip("-").isdigit() else code, "\n".join(lines))
            current = None
        elif current is not None:
            lines.append(line)
    results["(child process as a whole)"] = (proc.returncode, out)
    # a normal exit leaves neither Prefect's temporary server nor its watchdog behind
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        left = [p.pid for p in psutil.process_iter(["cmdline"])
                if str(proc.pid) in (p.info["cmdline"] or [])
                and "server_watchdog" in " ".join(p.info["cmdline"] or [])]
        if not left:
            break
        time.sleep(0.25)
    results["(processes left)"] = left
    return results


def _check_output(name: str, code, output: str) -> None:
    argv, expected_code, names, _, option = CASES[name]
    assert code == expected_code, f"{name}: exit {code}, expected {expected_code}\n{output}"
    assert not TRACEBACK.search(output), f"{name}: a traceback reached the terminal\n{output}"
    assert names in output, f"{name}: {names!r} not in the output\n{output}"
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    if option == "validate":
        assert errors == [], output
    else:
        assert len(errors) == 1 and names in errors[0], f"{name}: {errors}\n{output}"
    if expected_code == 1 and "contract" in output and option == "":
        assert "Report: " in errors[0], errors[0]
    if option in ("", "cluster") and CASES[name][3] == "child":
        # issue 62: said once, last (Prefect's exception record and its "Finished in state
        # Failed(...)" repeated it, and "Stopping temporary server" came after it)
        lines = [line for line in output.splitlines() if line.strip()]
        assert lines[-1] == errors[0], f"{name}: the error: line is not the last\n{output}"
        said = errors[0].removeprefix("error: ")
        assert output.count(said) == 1, f"{name}: the refusal is said more than once\n{output}"


@pytest.mark.parametrize("variable, value, names", [
    ("ORAL_REMOTE_TRAINING_TIMEOUT", "six hours", "ORAL_REMOTE_TRAINING_TIMEOUT must be a number"),
    ("ORAL_COLD_EVERY", "weekly", "ORAL_COLD_EVERY must be a whole number"),
    ("ORAL_EMERGENCE_ALPHA", "often", "ORAL_EMERGENCE_ALPHA must be a number in [0, 1)"),
    ("ORAL_GATE_REFERENCE_MARGIN", "lax", "ORAL_GATE_REFERENCE_MARGIN must be a number in [0, 1]"),
    ("ORAL_CONFIRM_NOVEL", "sometimes", "ORAL_CONFIRM_NOVEL must be 1 or 0"),
    ("ORAL_CONFIRM_SIZE", "big", "ORAL_CONFIRM_SIZE must be off, a share > 0"),
    ("ORAL_LINEAGE_CONTAINED", "maybe", "ORAL_LINEAGE_CONTAINED must be 1 or 0"),
    ("ORAL_LINEAGE_PUBLISHED", "maybe", "ORAL_LINEAGE_PUBLISHED must be 1 or 0"),
    ("ORAL_CANDIDATES_NAMED", "maybe", "ORAL_CANDIDATES_NAMED must be 1 or 0"),
])
def test_a_malformed_setting_is_named_in_one_line(variable, value, names, paths, capsys,
                                                  monkeypatch):
    """A bad environment variable is refused before any work, naming itself and its value
    (before: every one was reported as a bad ORAL_REMOTE_TRAINING_TIMEOUT)."""
    monkeypatch.setenv(variable, value)
    capsys.readouterr()
    try:
        code = __import__("cli.main", fromlist=["main"]).main(
            _argv(["run", "--graph", "good", *RUN], paths))
    except SystemExit as err:
        code = err.code
    out = capsys.readouterr()
    errors = [line for line in (out.out + out.err).splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1, out
    assert names in errors[0] and repr(value) in errors[0], errors[0]
    others = {"ORAL_REMOTE_TRAINING_TIMEOUT", "ORAL_COLD_EVERY", "ORAL_EMERGENCE_ALPHA",
              "ORAL_GATE_REFERENCE_MARGIN", "ORAL_CONFIRM_NOVEL", "ORAL_CONFIRM_SIZE",
              "ORAL_LINEAGE_CONTAINED", "ORAL_LINEAGE_PUBLISHED"} - {variable}
    assert not any(other in errors[0] for other in others), errors[0]  # only the culprit named
    assert not TRACEBACK.search(out.out + out.err)


@pytest.mark.parametrize("name", list(CASES))
def test_no_refusal_prints_a_traceback(name, paths, request, capsys, monkeypatch):
    """Issue 21.10: the exit status, one ``error:`` line naming the problem (``oral validate``:
    the finding), and no traceback on stdout or stderr."""
    argv, _, _, where, option = CASES[name]
    if where == "child":
        results = request.getfixturevalue("child_results")
        if name not in results:
            if "encrypted" in name and not (paths["root"] / "encrypted-plaintext").exists():
                pytest.skip("pyarrow built without Parquet encryption")
            whole = results["(child process as a whole)"]
            pytest.fail(f"{name}: no result, the child exited {whole[0]}\n{whole[1][-4000:]}")
        code, output = results[name]
        _check_output(name, code, output)
        if option == "crash":  # the one line names the log file, which holds the traceback
            log = Path(re.search(r"\(traceback in (.+)\)", output).group(1))
            assert log == paths["state"].resolve() / "logs" / "oral.log", log
            text = log.read_text()
            assert "Traceback (most recent call last)" in text and "injected crash" in text
        return
    import torch

    if option == "cuda":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("ORAL_CACHE_DIR", str(paths["base"] / "cache"))
    capsys.readouterr()
    try:
        code = __import__("cli.main", fromlist=["main"]).main(_argv(argv, paths))
    except SystemExit as err:
        code = err.code
    out = capsys.readouterr()
    _check_output(name, code, out.out + out.err)


@pytest.mark.parametrize("argv", [["run", "--graph", "good", "--date", "2026-04-01"],
                                  ["run", "--graph", "empty-graph", "--date", "2026-03-01"],
                                  ["backfill", "--graph", "good", "--start", "2027-01-01"],
                                  ["backfill", "--graph", "good", "--end", "2025-01-01"]])
def test_a_missing_snapshot_is_refused_before_prefect_starts(argv, paths, capsys, monkeypatch):
    """Issue 48.3: ``--date`` naming a snapshot that does not exist (of a graph with others, or
    with none), or (issue 62) a backfill range holding none, took 26 s of Prefect's server start, task retries and ERROR lines before the one-line error.
    Now the CLI checks it with the other options: nothing starts, one ``error:`` line, exit 2."""
    import flows.settings

    def started(*args, **kwargs):
        raise AssertionError("Prefect's environment was set up before the snapshot was checked")

    monkeypatch.setattr(flows.settings, "configure_environment", started)
    capsys.readouterr()
    code = __import__("cli.main", fromlist=["main"]).main(
        _argv(argv + ["--snapshots", "{root}", "--state-dir", "{base}/never", "--epochs", "2"],
              paths))
    out = capsys.readouterr()
    errors = [line for line in (out.out + out.err).splitlines() if line]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("error: no snapshot"), errors
    assert not (paths["base"] / "never").exists()


def test_the_child_left_no_server_and_its_output_holds_no_traceback(child_results):
    """The child's whole output (between cases too: Prefect's server start and stop) holds no
    traceback, and its normal exit left no temporary Prefect server watchdog behind."""
    code, output = child_results["(child process as a whole)"]
    assert code == 0, output[-4000:]
    assert not TRACEBACK.search(output), output
    assert child_results["(processes left)"] == []


def test_verbose_prints_the_traceback(paths, capsys, monkeypatch):
    """``oral -v`` prints the traceback of an unexpected error on the terminal as well (a file
    that is not DuckDB is an expected refusal now, one plain line: an error is injected)."""
    from cli import label
    from cli.main import main

    def crash(args):
        raise RuntimeError("injected unexpected failure")
    monkeypatch.setattr(label, "show_classes", crash)
    capsys.readouterr()
    assert main(["-v", "classes", "--state-dir", str(paths["bad_warehouse"])]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("error: RuntimeError: injected unexpected")


if __name__ == "__main__":  # the child of child_results
    sys.path.insert(0, str(ROOT))
    run_child_cases(json.loads(sys.argv[1]))
