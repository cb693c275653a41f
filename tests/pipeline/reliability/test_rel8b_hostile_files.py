"""Reliability point 8 (part 2): hostile snapshot files (over-wide or overflowing features, lying
Parquet footers, unreadable, encrypted and malicious files), SQL never built from
interpolated values, nothing written outside the state folder.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .harness import ROOT, D1, CONFIG, _write_snapshot_files, _good_nodes, _good_edges


def test_feature_width_over_the_limit_is_rejected_before_training(env):
    """Case 8. Feature vectors wider than the contract's limit (65,536) stop the run at
    validation: no training, no run folder, nothing published."""
    from flows.nightly import nightly_discovery
    from tasks.intake import ContractFailed

    graph = "too-wide"
    _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(n=40, width=70_000),
                          _good_edges(40))
    with pytest.raises(ContractFailed) as err:
        nightly_discovery(graph, str(env.root), D1, CONFIG, str(env.state))
    assert "feature_width_limit" in Path(err.value.report_path).read_text()
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []


def test_float32_overflow_is_refused_before_training(env, capsys, caplog):
    """Issue 21.5. ``list<float64>`` features holding 1e300 (finite in float64, infinite once
    cast to the float32 training uses) break the contract: ``oral run`` exits 1 with one line and
    the report, which names the file, the rule and the example rows; nothing is trained or
    published."""
    from cli.main import main

    graph = "float32-overflow"
    good = _good_nodes()
    rows = good.column("features").to_pylist()
    rows[7][2], rows[30][0] = 1e300, -1e39
    nodes = good.set_column(good.column_names.index("features"), "features",
                            pa.array(rows, pa.list_(pa.float64())))
    _write_snapshot_files(env.root / graph / f"snapshot={D1}", nodes, _good_edges())
    capsys.readouterr()
    code = main(["run", "--graph", graph, "--snapshots", str(env.root), "--date", D1,
                 "--state-dir", str(env.state), "--epochs", "10", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]  # Prefect logs too
    assert len(errors) == 1 and "broke its data contract" in errors[0], err
    # Prefect logs the failed run without a traceback (its console handler may write to an
    # earlier test's stream, so the records are checked, not this test's stderr)
    failed = [r for r in caplog.records if r.name.startswith("prefect") and r.levelname == "ERROR"]
    assert failed and not [r for r in failed if r.exc_info], [r.getMessage() for r in failed]
    report_html = Path(errors[0].split("Report: ")[1].strip())
    doc = json.loads(report_html.with_suffix(".json").read_text())
    finding = next(f for f in doc["findings"] if f["rule"] == "features_float32_range")
    assert finding["file"] == "nodes.parquet" and finding["count"] == 2
    assert [(e["row"], e["value"]) for e in finding["examples"]] == [(7, 1e300), (30, -1e39)]
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lying_edges(claim: int = 100_000_000) -> bytes:
    """An edges file of 1.1 million (0, 0) rows in one row group, whose footer then claims
    ``claim`` rows: the row counts (Thrift compact varints) are patched in place."""
    import io
    import struct

    rows = 1_100_000
    table = pa.table({"src": pa.array(np.zeros(rows, np.int64)),
                      "dst": pa.array(np.zeros(rows, np.int64))})
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=rows)
    data = bytearray(buf.getvalue())
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - footer_len
    old, new = _varint(rows * 2), _varint(claim * 2)  # zigzag encoding of a positive i64
    assert len(old) == len(new)
    data[start:-8] = bytes(data[start:-8]).replace(old, new)
    assert pq.read_metadata(pa.BufferReader(bytes(data))).row_group(0).num_rows == claim
    return bytes(data)


def test_parquet_row_count_lie_is_refused_before_allocation(env, tmp_path, monkeypatch):
    """Case 8. A footer claiming 100 million edges (1.1 million in 9 KB): Arrow would reserve
    gigabytes from that claim (2.6 GB measured before the fix); the reader refuses the file from
    its footer, in a process whose Arrow memory stays small, the contract reports it, and the
    flow stops as for any broken contract (issue 21.8: the report names the file, the rule
    ``readable_parquet`` and the claim) and publishes nothing."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot
    from flows.nightly import nightly_discovery
    from tasks import prefect_tasks as pt
    from tasks.intake import ContractFailed

    monkeypatch.setattr(pt.ingest, "retry_delay_seconds", 0)
    graph = "liar"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(),
                                   lying_edges())
    code = ("import sys, pyarrow as pa\n"
            "from data_contracts.snapshots import read_snapshot_files, SnapshotError\n"
            "try:\n    read_snapshot_files(sys.argv[1])\nexcept SnapshotError as e:\n"
            "    print('REFUSED', e)\n"
            "print('PEAK', pa.default_memory_pool().max_memory())\n")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert "REFUSED" in out.stdout and "claims 100000000 rows" in out.stdout, out.stdout + out.stderr
    peak = int(re.search(r"PEAK (\d+)", out.stdout).group(1))
    assert peak < 64 * 2**20, f"Arrow reserved {peak / 2**20:.0f} MiB"
    report = validate_snapshot(folder)
    assert not report.passed and any("claims 100000000 rows" in f.message for f in report.findings)
    with pytest.raises(ContractFailed, match="edges.parquet readable_parquet") as err:
        nightly_discovery(graph, str(env.root), D1, CONFIG, str(env.state))
    assert "claims 100000000 rows" in Path(err.value.report_path).read_text()
    assert env.rows(graph)["runs"] == []

    # an honest file as extreme (1.1 million rows in 9 KB) still reads
    honest = tmp_path / "honest.parquet"
    pq.write_table(pa.table({"src": pa.array(np.zeros(1_100_000, np.int64))}), honest)
    assert snap.parse_parquet(honest, honest.read_bytes()).num_rows == 1_100_000


def _unsupported_codec(table: pa.Table) -> bytes:
    """``table`` as Parquet whose ``node_id`` column chunk names the LZO codec (3), which the
    format defines and Arrow's C++ reader does not implement: the Thrift compact field ``codec``
    (field 4, i32, zigzag varint) of that column's metadata is patched from SNAPPY (1)."""
    import io
    import struct

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    data = bytearray(buf.getvalue())
    start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    old = b"\x07node_id\x15\x02"  # path_in_schema ["node_id"], then codec = 1 (zigzag 2)
    assert bytes(data[start:-8]).count(old) == 1
    data[start:-8] = bytes(data[start:-8]).replace(old, b"\x07node_id\x15\x06")
    return bytes(data)


UNREADABLE = {
    # kind: (how nodes.parquet is broken, the rule that names it)
    "not-parquet": ("text", "readable_parquet"),
    "empty": ("empty", "readable_parquet"),
    "folder": ("folder", "file_present"),
    "unsupported-codec": ("codec", "readable_parquet"),
    "symlink-to-text": ("symlink", "readable_parquet"),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_unreadable_files_break_the_contract_with_a_report(env, capsys, monkeypatch, kind,
                                                           tmp_path):
    """Issue 21.8. A ``nodes.parquet`` that is not Parquet, empty, a folder, compressed with a
    codec Arrow lacks, or a symlink to a text file breaks the data contract like any other bad
    data: ``oral run`` exits 1 with one ``error:`` line naming the file, the rule and the report,
    which is kept under ``state/reports/<graph>/``; ``oral validate`` prints the finding (file
    and rule) and exits 1; nothing is trained or published. Before: exit 2 with a one-line
    ``SnapshotError``, no rule, no report."""
    from cli.main import main
    from tasks import prefect_tasks as pt

    monkeypatch.setattr(pt.ingest, "retry_delay_seconds", 0)
    how, rule = UNREADABLE[kind]
    graph = f"unreadable-{kind}"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}", _good_nodes(),
                                   _good_edges())
    nodes = folder / "nodes.parquet"
    if how == "codec":
        nodes.write_bytes(_unsupported_codec(_good_nodes()))
    else:
        nodes.unlink()
        if how == "text":
            nodes.write_text("node_id,features,label\n0,\"[1, 2]\",a\n")
        elif how == "empty":
            nodes.write_bytes(b"")
        elif how == "folder":
            nodes.mkdir()
        elif how == "symlink":
            target = tmp_path / f"{graph}.txt"  # outside the module's folder (case 8 checks it)
            target.write_text("not a parquet file\n" * 20)
            nodes.symlink_to(target)
    capsys.readouterr()
    code = main(["run", "--graph", graph, "--snapshots", str(env.root), "--date", D1,
                 "--state-dir", str(env.state), "--epochs", "10", "--device", "cpu"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1, err
    assert len(errors) == 1 and "broke its data contract" in errors[0], err
    assert f"nodes.parquet {rule}" in errors[0], errors[0]
    report_html = Path(errors[0].split("Report: ")[1].strip())
    assert report_html.parent == env.state / "reports" / graph and report_html.exists()
    doc = json.loads(report_html.with_suffix(".json").read_text())
    finding = next(f for f in doc["findings"] if f["rule"] == rule)
    assert finding["file"] == "nodes.parquet" and finding["severity"] == "error"
    assert str(nodes) in finding["message"], finding
    assert not (env.state / "runs" / graph).exists() and env.rows(graph)["runs"] == []

    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"ERROR nodes.parquet rule {rule}" in out and str(nodes) in out, out


def encrypted_nodes(plaintext_footer: bool) -> bytes:
    """``_good_nodes()`` written with Parquet modular encryption (a toy in-memory KMS): the
    ``features`` column encrypted with its own key; the footer in plain text (magic ``PAR1``,
    column chunks carrying crypto metadata) or encrypted (magic ``PARE``)."""
    import base64
    import io

    import pyarrow.parquet.encryption as pe

    class ToyKms(pe.KmsClient):
        def __init__(self, config):
            pe.KmsClient.__init__(self)

        def wrap_key(self, key_bytes, master_key_identifier):
            return base64.b64encode(key_bytes)

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return base64.b64decode(wrapped_key)

    config = pe.EncryptionConfiguration(footer_key="footer", column_keys={"col": ["features"]},
                                        plaintext_footer=plaintext_footer, double_wrapping=False)
    props = pe.CryptoFactory(ToyKms).file_encryption_properties(pe.KmsConnectionConfig(), config)
    buf = io.BytesIO()
    pq.write_table(_good_nodes(), buf, encryption_properties=props)
    data = buf.getvalue()
    assert data[-4:] == (b"PAR1" if plaintext_footer else b"PARE")
    return data


def _has_parquet_encryption() -> bool:
    try:
        import pyarrow.parquet.encryption  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_parquet_encryption(), reason="pyarrow built without encryption")
@pytest.mark.parametrize("footer", ["plaintext-footer", "encrypted-footer"])
def test_encrypted_parquet_is_refused_without_aborting(env, footer):
    """Issue 21.4. A ``nodes.parquet`` with encrypted columns and a plain-text footer made Arrow
    abort the process (SIGABRT: ``Cannot decrypt ColumnMetadata``, thrown where nothing catches
    it) when the footer check read the column sizes: a user's file killed the worker. It is now
    recognised from the footer's own bytes before Arrow reads column metadata, and is a
    ``readable_parquet`` finding like any unreadable file: ``oral validate`` and ``oral run``
    (each in a child process, so the old code's abort cannot take pytest down) exit 1, the run
    with its report kept, and nothing is published. An encrypted footer (``PARE``) is named
    the same way."""
    graph = f"encrypted-{footer}"
    folder = _write_snapshot_files(env.root / graph / f"snapshot={D1}",
                                   encrypted_nodes(footer == "plaintext-footer"), _good_edges())
    cli = "import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"
    child_env = env.child_env()

    out = subprocess.run([sys.executable, "-c", cli, "validate", str(folder)], capture_output=True,
                         text=True, cwd=ROOT, env=child_env, timeout=300)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "ERROR nodes.parquet rule readable_parquet" in out.stdout, out.stdout
    assert "encrypted" in out.stdout, out.stdout

    out = subprocess.run([sys.executable, "-c", cli, "run", "--graph", graph, "--snapshots",
                          str(env.root), "--date", D1, "--state-dir", str(env.state),
                          "--epochs", "10", "--device", "cpu"], capture_output=True, text=True,
                         cwd=ROOT, env=child_env, timeout=300)
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert out.returncode == 1, (out.returncode, out.stderr[-3000:])
    assert len(errors) == 1 and "nodes.parquet readable_parquet" in errors[0], out.stderr
    report = json.loads(Path(errors[0].split("Report: ")[1].strip()).with_suffix(".json")
                        .read_text())
    finding = next(f for f in report["findings"] if f["rule"] == "readable_parquet")
    assert finding["file"] == "nodes.parquet" and "encrypted" in finding["message"]
    assert env.rows(graph)["runs"] == []


def _nested(depth: int) -> pa.Array:
    typ = pa.float32()
    for _ in range(depth):
        typ = pa.list_(typ)
    return pa.array([None] * 40, typ)


def _malicious_nodes(kind: str) -> pa.Table:
    good = _good_nodes()
    if kind == "struct-features":
        feats = pa.array([{"a": 1.0, "b": [1.0]}] * good.num_rows)
        return good.set_column(good.column_names.index("features"), "features", feats)
    if kind == "thousands-of-columns":
        extra = {f"c{i}": pa.array(np.zeros(good.num_rows, np.int8)) for i in range(5000)}
        return pa.table({**{c: good.column(c) for c in good.column_names}, **extra})
    if kind == "node-id-twice":
        return pa.Table.from_arrays([good.column("node_id"), good.column("node_id"),
                                     good.column("features"), good.column("label")],
                                    names=["node_id", "node_id", "features", "label"])
    if kind == "deep-nesting":
        return good.append_column("deep", _nested(12))
    if kind == "metadata-lies":  # key-value claims the pipeline must ignore
        return good.replace_schema_metadata({b"num_rows": b"100000000",
                                             b"oral.num_edges": b"100000000",
                                             b"pandas": b'{"index_columns": ["../../x"]}'})
    raise ValueError(kind)


@pytest.mark.parametrize("kind,finding", [
    ("struct-features", "column_types"),
    ("thousands-of-columns", "5003 columns"),
    ("node-id-twice", "'node_id' occur more than once"),
    ("deep-nesting", "nested"),
])
def test_malicious_schemas_are_rejected_clearly(tmp_path, kind, finding):
    """Case 8. Nested struct features, thousands of columns, ``node_id`` twice, absurd nesting:
    the contract fails with a finding that says what is wrong (nothing is written into the
    snapshot folder, nothing else is read)."""
    from data_contracts import validate_snapshot

    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", _malicious_nodes(kind),
                                   _good_edges())
    before = sorted(p.name for p in folder.iterdir())
    report = validate_snapshot(folder)
    assert not report.passed
    text = " ".join(f"{f.rule} {f.message}" for f in report.errors)
    assert finding in text, text
    assert sorted(p.name for p in folder.iterdir()) == before


def test_labels_hidden_or_colliding_after_stripping_are_warned(tmp_path, capsys):
    """Issue 21.12. Labels ``a`` and ``a `` (two known classes that read as one), a label with a
    zero-width space and one made only of a zero-width space: the contract passes with two
    warnings that name the rows (labels spelled visibly) and the colliding labels; ``oral
    validate`` exits 0 and prints them."""
    from data_contracts import validate_snapshot
    from cli.main import main

    good = _good_nodes()
    labels = good.column("label").to_pylist()
    for row in range(20):
        labels[row] = ["a", "a ", "b\u200b", "\u200b"][row % 4]
    nodes = good.set_column(good.column_names.index("label"), "label", pa.array(labels))
    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", nodes, _good_edges())
    report = validate_snapshot(folder)
    assert report.passed and report.counts["classes"] == 4, report.summary()
    found = {f.rule: f for f in report.warnings}
    hidden = found["label_hidden_characters"]
    assert hidden.count == 15 and [e["row"] for e in hidden.examples] == [1, 2, 3, 5, 6]
    assert [e["visible"] for e in hidden.examples[:3]] == ["'a '", "'b\\u200b'", "'\\u200b'"]
    collide = found["labels_distinct_after_stripping"]
    assert collide.count == 10 and collide.examples[0]["labels"] == ["'a'", "'a '"]
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "WARNING nodes.parquet rule label_hidden_characters" in out
    assert "WARNING nodes.parquet rule labels_distinct_after_stripping" in out


def test_metadata_claims_are_not_trusted(tmp_path):
    """Case 8. Key-value metadata claiming 100 million rows (and pandas metadata pointing
    elsewhere) change nothing: counts come from the data."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot

    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}",
                                   _malicious_nodes("metadata-lies"), _good_edges())
    report = validate_snapshot(folder)
    assert report.passed, report.summary()
    assert report.counts["nodes"] == 40 and report.counts["edges"] == 39
    assert snap.load_snapshot(folder).num_nodes == 40


SQL_START = re.compile(r"^\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|COPY|"
                       r"ATTACH|PRAGMA|INSTALL|LOAD|EXPORT|IMPORT)\b")
FILTER = re.compile(r"\b(name|run_id|tags\.\w+|params\.\w+|attributes\.\w+)\s*(=|LIKE|ILIKE)\s*'")
# interpolations allowed inside SQL or MLflow filter text, and why they are safe
ALLOWED = {
    "table": "a table name from a fixed tuple in tasks/warehouse/publish.py",
    "_STATUS_LIST": "a module constant (lineage statuses)",
    "_LINEAGE_COLUMNS": "a module constant (the class_lineage table's column definitions)",
    "ANSWER_RUN": "a module constant (the champion gate's filter of degraded runs)",
    "', '.join(names)": "column names: the keys of rows built from RUN_COLUMNS/SNAPSHOT_COLUMNS",
    "', '.join(('?' for _ in names))": "placeholders",
    "', '.join(CLASS_SCHEMA.names)": "a schema constant",
    "', '.join(LINEAGE_SCHEMA.names)": "a schema constant",
    "name": "an MLflow model name: oral-<graph>, the graph name checked by check_graph_name",
    "oral_run_id": "a pipeline run id, checked to be hexadecimal before use",
    "run_id": "an MLflow run id returned by MLflow itself",
    "leftover": "an _alembic_tmp_* table name read from the MLflow store's sqlite_master, quoted",
    "day_runs": "constant SQL text (tasks/report.py, the latest run of each night) with a ? parameter",
    "PROMOTED_TAG": "a module constant, the registry tag name",
}


def test_no_sql_is_built_from_interpolated_values():
    """Case 8. Values reach DuckDB and MLflow as bound parameters: SQL text (and MLflow filter
    text) in tasks/, flows/ and data_contracts/ only interpolates fixed identifiers, and is
    never assembled with ``%`` or ``.format``."""
    problems = []
    for folder in ("tasks", "flows", "data_contracts"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(file.read_text(), str(file))
            for node in ast.walk(tree):
                where = f"{file.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
                if isinstance(node, ast.JoinedStr):
                    text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                    if SQL_START.search(text) or FILTER.search(text):
                        for v in node.values:
                            if isinstance(v, ast.FormattedValue) and ast.unparse(v.value) not in ALLOWED:
                                problems.append(f"{where}: f-string SQL interpolates "
                                                f"{ast.unparse(v.value)!r}")
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and \
                        isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
                        and SQL_START.search(node.left.value):
                    problems.append(f"{where}: SQL built with %")
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                        and isinstance(node.func.value.value, str) and \
                        SQL_START.search(node.func.value.value):
                    problems.append(f"{where}: SQL built with .format")
    assert problems == []


def test_nothing_was_written_outside_the_state_folder(env, concurrent):
    """Case 8. Everything the module's runs wrote lies in the state folder (or is a snapshot
    this module wrote into the snapshot root); no hostile name escaped it."""
    outside = [p for p in env.base.rglob("*") if p.is_file()
               and env.state not in p.parents and env.root not in p.parents]
    assert outside == []
    assert not any((env.base / n).exists() for n in ("evil", "etc", "b"))
    for p in env.root.rglob("*"):
        assert p.is_dir() or p.name in ("nodes.parquet", "edges.parquet", "truth.parquet"), p
