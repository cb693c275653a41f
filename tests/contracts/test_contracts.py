"""Data contracts: a corpus of bad snapshots, each caught by its named rule in the right file,
through the Python entry point and through ``oral validate``; the good snapshot passes; the
reports (text, JSON, HTML) are complete and safe."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_contracts.contracts import ContractViolation, require_valid, validate_snapshot
from data_contracts.report import ERROR, WARNING
from data_contracts.snapshots import (EDGES, FEATURE_NAMES_KEY, NODES, TRUTH, edges_table,
                                      nodes_table, read_snapshot_files, truth_table)
from data_contracts.suites import FOLDER, RULES, expectation_suite
from cli.main import main

N = 12
IDS = [f"n{i}" for i in range(N)]
LABELS = ["a", "a", "a", "b", "b", "b"] + [None] * (N - 6)
TRUE = ["a", "a", "a", "b", "b", "b", "a", "b", "c", "c", "c", "c"]
DATE = "2026-01-31"


def good_tables() -> dict[str, pa.Table]:
    x = np.random.default_rng(0).normal(size=(N, 4)).astype(np.float32)
    src = IDS
    dst = IDS[1:] + IDS[:1]
    return {NODES: nodes_table(IDS, x, LABELS, extra={"age": list(range(N))},
                               feature_names=[f"f{i}" for i in range(4)]),
            EDGES: edges_table(src, dst, weight=np.ones(N)), TRUTH: truth_table(IDS, TRUE)}


def write(root: Path, tables: dict, folder: str = f"snapshot={DATE}") -> Path:
    """Write raw tables (no checks) into ``root/g/<folder>``; a value of None leaves the file out,
    bytes are written as they are (corrupt files)."""
    path = root / "g" / folder
    path.mkdir(parents=True)
    for name, table in tables.items():
        if table is None:
            continue
        if isinstance(table, bytes):
            (path / name).write_bytes(table)
        else:
            pq.write_table(table, path / name)
    return path


def with_column(table: pa.Table, name: str, values) -> pa.Table:
    return table.set_column(table.column_names.index(name), name, values)


def features(rows: list) -> pa.Array:
    return pa.array(rows, pa.list_(pa.float32()))


def feature_rows() -> list[list[float]]:
    return np.random.default_rng(1).normal(size=(N, 4)).tolist()


# ---------------------------------------------------------------------------------- corpus
def missing_nodes(t):
    t[NODES] = None


def missing_edges(t):
    t[EDGES] = None


def missing_column(t):
    t[NODES] = t[NODES].drop_columns(["label"])


def duplicate_column_names(t):
    t[NODES] = t[NODES].append_column("label", pa.array(["x"] * N))


def features_as_string(t):
    t[NODES] = with_column(t[NODES], "features", pa.array(["1,2,3,4"] * N))


def node_id_float(t):
    t[NODES] = with_column(t[NODES], "node_id", pa.array(np.arange(N, dtype=np.float64)))
    t[EDGES] = edges_table(np.arange(N), np.roll(np.arange(N), 1))
    t[TRUTH] = None


def null_ids(t):
    t[NODES] = with_column(t[NODES], "node_id", pa.array(IDS[:-2] + [None, None]))


def duplicate_ids(t):
    t[NODES] = with_column(t[NODES], "node_id", pa.array(IDS[:-1] + ["n0"]))


def ragged(t):
    rows = feature_rows()
    rows[5] = rows[5] + [0.5]
    rows[7] = rows[7][:2]
    t[NODES] = with_column(t[NODES], "features", features(rows))


def nan_features(t):
    rows = feature_rows()
    rows[2][1] = float("nan")
    t[NODES] = with_column(t[NODES], "features", features(rows))


def inf_features(t):
    rows = feature_rows()
    rows[4][0] = float("inf")
    rows[9][3] = float("-inf")
    t[NODES] = with_column(t[NODES], "features", features(rows))


def float32_overflow_features(t):
    """float64 features hold 1e300 and -1e39: finite in float64, infinite once cast to the float32
    that training uses (issue 21.5)."""
    rows = feature_rows()
    rows[3][1] = 1e300
    rows[8][0] = -1e39
    t[NODES] = with_column(t[NODES], "features", pa.array(rows, pa.list_(pa.float64())))


def null_feature_value(t):
    rows = feature_rows()
    rows[6][2] = None
    t[NODES] = with_column(t[NODES], "features", features(rows))


def null_features(t):
    rows = feature_rows()
    rows[3] = None
    t[NODES] = with_column(t[NODES], "features", features(rows))


def zero_length_features(t):
    rows = feature_rows()
    rows[1] = []
    t[NODES] = with_column(t[NODES], "features", features(rows))


def unknown_endpoints(t):
    t[EDGES] = edges_table(IDS + ["ghost"], IDS[1:] + IDS[:1] + ["n0"])


def self_loops(t):
    t[EDGES] = edges_table(IDS + ["n3"], IDS[1:] + IDS[:1] + ["n3"])


def duplicate_edges(t):
    t[EDGES] = edges_table(IDS + ["n0"], IDS[1:] + IDS[:1] + ["n1"])


def empty_nodes(t):
    t[NODES] = t[NODES].slice(0, 0)


def empty_edges(t):
    t[EDGES] = t[EDGES].slice(0, 0)


def single_class(t):
    t[NODES] = with_column(t[NODES], "label", pa.array(["a"] * 6 + [None] * (N - 6)))


def too_few_labels(t):
    t[NODES] = with_column(t[NODES], "label",
                           pa.array(["a", "a", "a", "b", "b", "c"] + [None] * (N - 6)))


def all_labelled(t):
    t[NODES] = with_column(t[NODES], "label", pa.array(TRUE))


def blank_label(t):
    t[NODES] = with_column(t[NODES], "label", pa.array(LABELS[:6] + [""] + [None] * (N - 7)))


def hidden_label_characters(t):
    """A zero-width space inside every "b" label (issue 21.12): a class that looks like "b"."""
    t[NODES] = with_column(t[NODES], "label", pa.array(["a"] * 3 + ["b\u200b"] * 3
                                                       + [None] * (N - 6)))


def label_surrounding_whitespace(t):
    t[NODES] = with_column(t[NODES], "label", pa.array(["a"] * 3 + [" b"] * 3 + [None] * (N - 6)))


def labels_collide_after_stripping(t):
    """ "a" and "a " are two known classes unless someone notices."""
    t[NODES] = with_column(t[NODES], "label", pa.array(LABELS[:6] + ["a "] * 3
                                                       + [None] * (N - 9)))


def truncated_parquet(t):
    data = pa.BufferOutputStream()
    pq.write_table(t[NODES], data)
    t[NODES] = data.getvalue().to_pybytes()[:-40]


def text_file(t):
    t[EDGES] = b"src,dst\nn0,n1\n"


def truncated_truth(t):
    data = pa.BufferOutputStream()
    pq.write_table(t[TRUTH], data)
    t[TRUTH] = data.getvalue().to_pybytes()[:100]


def truth_unknown_ids(t):
    t[TRUTH] = truth_table(IDS + ["ghost"], TRUE + ["c"])


def truth_duplicate_ids(t):
    t[TRUTH] = truth_table(IDS + ["n2"], TRUE + ["a"])


def truth_mismatch(t):
    t[TRUTH] = truth_table(IDS, ["b"] + TRUE[1:])


def truth_missing_column(t):
    t[TRUTH] = t[TRUTH].drop_columns(["true_label"])


def negative_weight(t):
    t[EDGES] = edges_table(IDS, IDS[1:] + IDS[:1], weight=[1.0] * (N - 1) + [-2.0])


def nan_weight(t):
    t[EDGES] = edges_table(IDS, IDS[1:] + IDS[:1], weight=[float("nan")] + [1.0] * (N - 1))


def float32_overflow_weight(t):
    t[EDGES] = pa.table({"src": pa.array(IDS), "dst": pa.array(IDS[1:] + IDS[:1]),
                         "weight": pa.array([1.0] * (N - 1) + [1e300], pa.float64())})


def endpoint_type_mismatch(t):
    t[EDGES] = edges_table(np.arange(N), np.roll(np.arange(N), 1))


def src_float(t):
    t[EDGES] = pa.table({"src": pa.array(np.arange(N, dtype=np.float64)),
                         "dst": pa.array(IDS)})


def feature_names_mismatch(t):
    t[NODES] = t[NODES].replace_schema_metadata({FEATURE_NAMES_KEY: json.dumps(["f0", "f1"])})


def wide_features(t):
    pass  # the snapshot is fine; the bound is lowered below


BAD = {
    # name: (mutate, file, rule, severity, validate_snapshot kwargs, cli args, folder)
    "missing_nodes_file": (missing_nodes, NODES, "file_present", ERROR),
    "missing_edges_file": (missing_edges, EDGES, "file_present", ERROR),
    "missing_column": (missing_column, NODES, "required_columns", ERROR),
    "features_as_string": (features_as_string, NODES, "column_types", ERROR),
    "node_id_float": (node_id_float, NODES, "column_types", ERROR),
    "null_ids": (null_ids, NODES, "node_id_not_null", ERROR),
    "duplicate_ids": (duplicate_ids, NODES, "node_id_unique", ERROR),
    "ragged_features": (ragged, NODES, "features_fixed_length", ERROR),
    "nan_features": (nan_features, NODES, "features_finite", ERROR),
    "inf_features": (inf_features, NODES, "features_finite", ERROR),
    "null_feature_value": (null_feature_value, NODES, "features_finite", ERROR),
    "float32_overflow_features": (float32_overflow_features, NODES, "features_float32_range",
                                  ERROR),
    "null_features": (null_features, NODES, "features_not_null", ERROR),
    "zero_length_features": (zero_length_features, NODES, "features_nonzero_length", ERROR),
    "feature_width_limit": (wide_features, NODES, "feature_width_limit", ERROR,
                            {"max_feature_width": 3}, ["--max-feature-width", "3"]),
    "unknown_edge_endpoints": (unknown_endpoints, EDGES, "edge_endpoints_known", ERROR),
    "self_loops": (self_loops, EDGES, "no_self_loops", WARNING),
    "duplicate_edges": (duplicate_edges, EDGES, "no_duplicate_edges", WARNING),
    "empty_node_table": (empty_nodes, NODES, "nodes_not_empty", ERROR),
    "empty_edge_table": (empty_edges, EDGES, "edges_not_empty", WARNING),
    "single_class": (single_class, NODES, "min_known_classes", ERROR),
    "too_few_labels": (too_few_labels, NODES, "min_labels_per_class", ERROR),
    "too_few_labels_configured": (lambda t: None, NODES, "min_labels_per_class", ERROR,
                                  {"min_labels_per_class": 4}, ["--min-labels-per-class", "4"]),
    "nothing_unlabelled": (all_labelled, NODES, "unlabelled_nodes_present", WARNING),
    "blank_label": (blank_label, NODES, "label_not_blank", ERROR),
    "hidden_label_characters": (hidden_label_characters, NODES, "label_hidden_characters",
                                WARNING),
    "label_surrounding_whitespace": (label_surrounding_whitespace, NODES,
                                     "label_hidden_characters", WARNING),
    "labels_collide_after_stripping": (labels_collide_after_stripping, NODES,
                                       "labels_distinct_after_stripping", WARNING),
    "truncated_parquet": (truncated_parquet, NODES, "readable_parquet", ERROR),
    "text_not_parquet": (text_file, EDGES, "readable_parquet", ERROR),
    "truncated_truth": (truncated_truth, TRUTH, "readable_parquet", ERROR),
    "date_out_of_order": (lambda t: None, FOLDER, "snapshot_date_order", WARNING,
                          {"last_processed_date": "2026-02-03"},
                          ["--last-processed", "2026-02-03"]),
    "invalid_snapshot_date": (lambda t: None, FOLDER, "snapshot_date_valid", ERROR, {}, [],
                              "snapshot=2026-02-30"),
    "invalid_folder_name": (lambda t: None, FOLDER, "snapshot_date_valid", ERROR, {}, [],
                            "latest"),
    "basic_format_date": (lambda t: None, FOLDER, "snapshot_date_valid", ERROR, {}, [],
                          "snapshot=20260131"),
    "truth_unknown_ids": (truth_unknown_ids, TRUTH, "truth_node_ids_known", ERROR),
    "truth_duplicate_ids": (truth_duplicate_ids, TRUTH, "node_id_unique", ERROR),
    "truth_missing_column": (truth_missing_column, TRUTH, "required_columns", ERROR),
    "labels_differ_from_truth": (truth_mismatch, TRUTH, "labels_match_truth", WARNING),
    "negative_weight": (negative_weight, EDGES, "weight_positive_finite", ERROR),
    "nan_weight": (nan_weight, EDGES, "weight_positive_finite", ERROR),
    "float32_overflow_weight": (float32_overflow_weight, EDGES, "weight_positive_finite", ERROR),
    "endpoint_type_mismatch": (endpoint_type_mismatch, EDGES, "endpoint_type_matches_node_id",
                               ERROR),
    "src_float": (src_float, EDGES, "column_types", ERROR),
    "feature_names_mismatch": (feature_names_mismatch, NODES, "feature_names_match", WARNING),
}


def build_case(tmp_path: Path, name: str):
    mutate, file, rule, severity, *rest = BAD[name]
    kwargs, cli_args, folder = (rest + [{}, [], f"snapshot={DATE}"][len(rest):])[:3]
    tables = good_tables()
    mutate(tables)
    return write(tmp_path, tables, folder), file, rule, severity, kwargs, cli_args


# slow: the corpus is ~36 cases of ~1 s each (every case is validated twice with Great
# Expectations, through the API and through `oral validate`): 30 s, ~40% of `make test-fast`,
# which stays under a minute without it; `make test` runs it. The rules stay covered in the fast
# set by the tests below (good snapshot, examples, overflow, labels, every rule in a suite).
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_snapshot_is_caught(tmp_path, capsys, name):
    path, file, rule, severity, kwargs, cli_args = build_case(tmp_path, name)
    report = validate_snapshot(path, **kwargs)
    assert (file, rule) in report.rules(severity), report.summary()
    finding = next(f for f in report.findings if (f.file, f.rule) == (file, rule))
    assert finding.message and finding.severity == severity
    assert len(finding.examples) <= 5
    if severity == ERROR:
        assert not report.passed
    else:
        assert report.passed, report.summary()  # a warning never fails the snapshot
    code = main(["validate", str(path), *cli_args])
    out = capsys.readouterr().out
    assert code == (1 if severity == ERROR else 0)
    assert rule in out and file in out and ("FAILED" if severity == ERROR else "PASSED") in out


def test_corpus_is_broad():
    assert len(BAD) >= 22
    assert len({(v[1], v[2]) for v in BAD.values()}) >= 22


@pytest.mark.slow
def test_missing_folder_is_a_finding(tmp_path, capsys):
    path = tmp_path / "g" / f"snapshot={DATE}"
    report = validate_snapshot(path)
    assert (FOLDER, "snapshot_folder_exists") in report.rules(ERROR)
    assert report.content_hash is None
    assert main(["validate", str(path)]) == 1
    assert "snapshot_folder_exists" in capsys.readouterr().out


@pytest.mark.slow
def test_good_snapshot_passes(tmp_path, capsys):
    path = write(tmp_path, good_tables())
    report = validate_snapshot(path, last_processed_date="2026-01-31")
    assert report.passed and not report.findings, report.summary()
    assert report.content_hash == read_snapshot_files(path).content_hash
    assert report.snapshot_date == DATE
    assert report.counts == {"nodes": N, "feature_width": 4, "labelled": 6, "unlabelled": N - 6,
                             "classes": 2, "edges": N, "truth_rows": N}
    checked = {(file, rule) for file, rules in report.rules_checked.items() for rule in rules}
    assert checked == {(r.file, r.name) for r in RULES}  # every rule was evaluated
    assert report.expectations["oral.nodes"]["unsuccessful"] == 0
    before = sorted(p.name for p in path.iterdir())
    assert main(["validate", str(path)]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert sorted(p.name for p in path.iterdir()) == before  # nothing written into the snapshot


def test_validates_files_already_read(tmp_path):
    files = read_snapshot_files(write(tmp_path, good_tables()))
    report = validate_snapshot(files)
    assert report.passed and report.content_hash == files.content_hash


def test_duplicate_column_names_in_tables_already_read(tmp_path):
    """pyarrow refuses to read such a Parquet file (readable_parquet); tables handed over in
    memory are checked too."""
    files = read_snapshot_files(write(tmp_path, good_tables()))
    t = {NODES: files.nodes}
    duplicate_column_names(t)
    files.nodes = t[NODES]
    report = validate_snapshot(files)
    assert report.rules(ERROR) == {(NODES, "column_names_unique")}
    assert report.findings[0].examples == [{"column": "label", "occurrences": 2}]


def test_integer_ids_and_dictionary_labels_pass(tmp_path):
    t = good_tables()
    t[NODES] = with_column(with_column(t[NODES], "node_id", pa.array(np.arange(N) * 10)),
                           "label", pa.array(LABELS).dictionary_encode())
    t[EDGES] = edges_table(np.arange(N, dtype=np.int32) * 10, np.roll(np.arange(N) * 10, 1))
    t[TRUTH] = truth_table(np.arange(N) * 10, TRUE)
    report = validate_snapshot(write(tmp_path, t))
    assert report.passed and not report.findings, report.summary()


def test_everything_broken_is_reported_not_raised(tmp_path):
    path = write(tmp_path, {NODES: b"not parquet", EDGES: None, TRUTH: b"PAR1garbage"},
                 folder="snapshot=yesterday")
    report = validate_snapshot(path)
    assert report.rules(ERROR) >= {(NODES, "readable_parquet"), (EDGES, "file_present"),
                                   (TRUTH, "readable_parquet"), (FOLDER, "snapshot_date_valid")}
    assert report.counts == {}


def test_examples_limited_and_counted(tmp_path):
    t = good_tables()
    rows = feature_rows()
    for r in range(N):
        rows[r][r % 4] = float("nan")
    t[NODES] = with_column(t[NODES], "features", features(rows))
    report = validate_snapshot(write(tmp_path, t))
    finding = next(f for f in report.findings if f.rule == "features_finite")
    assert finding.count == N and len(finding.examples) == 5
    assert finding.examples[0] == {"row": 0, "position": 0, "value": "nan", "node_id": "n0"}
    assert [e["row"] for e in finding.examples] == [0, 1, 2, 3, 4]


@pytest.mark.slow
def test_float32_overflow_names_rows_and_values(tmp_path):
    """Issue 21.5: values beyond float32's range are refused as float32 will hold them, with the
    rows, positions and values; NaN stays a features_finite error and float64 values inside the
    range pass."""
    t = good_tables()
    float32_overflow_features(t)
    report = validate_snapshot(write(tmp_path, t))
    assert report.rules(ERROR) == {(NODES, "features_float32_range")}, report.summary()
    finding = report.findings[0]
    assert finding.count == 2 and "float32" in finding.message
    assert finding.examples == [{"row": 3, "position": 1, "value": 1e300, "node_id": "n3"},
                                {"row": 8, "position": 0, "value": -1e39, "node_id": "n8"}]
    rows = feature_rows()
    rows[2][0] = float(np.finfo(np.float32).max)  # the largest float32: still finite
    rows[5][3] = float("nan")
    t[NODES] = with_column(t[NODES], "features", pa.array(rows, pa.list_(pa.float64())))
    report = validate_snapshot(write(tmp_path / "two", t))
    assert report.rules(ERROR) == {(NODES, "features_finite")}, report.summary()
    assert [e["row"] for e in report.findings[0].examples] == [5]


def test_hidden_and_colliding_labels_name_rows(tmp_path):
    """Issue 21.12: labels with surrounding whitespace or invisible characters (a zero-width
    space, a no-break space, an invisible-only label) are warnings naming rows, with the label
    spelled visibly; labels equal once stripped are a warning naming the variants. Neither fails
    the snapshot."""
    t = good_tables()
    t[TRUTH] = None
    labels = (["a", "a", "a", "b", "b", "b", "a ", "a ", "a ", "\u200b", "\u200b", "\u200b"])
    t[NODES] = with_column(t[NODES], "label", pa.array(labels))
    report = validate_snapshot(write(tmp_path, t))
    assert report.passed, report.summary()
    hidden = next(f for f in report.findings if f.rule == "label_hidden_characters")
    assert hidden.severity == WARNING and hidden.count == 6
    assert [(e["row"], e["node_id"], e["label"], e["visible"]) for e in hidden.examples] == [
        (6, "n6", "a ", "'a '"), (7, "n7", "a ", "'a '"), (8, "n8", "a ", "'a '"),
        (9, "n9", "\u200b", "'\\u200b'"), (10, "n10", "\u200b", "'\\u200b'")]
    collide = next(f for f in report.findings if f.rule == "labels_distinct_after_stripping")
    assert collide.severity == WARNING and collide.count == 6  # rows of the 2 colliding labels
    assert collide.examples == [{"stripped": "a", "labels": ["'a'", "'a '"],
                                 "labelled_nodes": [3, 3], "first_rows": [0, 6]}]
    assert "2 labels" in collide.message and "1 class" in collide.message
    # other hidden characters: a no-break space inside, a byte-order mark, a tab at the end
    t[NODES] = with_column(t[NODES], "label", pa.array(
        ["x\u00a0y"] * 3 + ["\ufeffz"] * 3 + ["w\t"] * 3 + [None] * 3))
    report = validate_snapshot(write(tmp_path / "two", t))
    assert report.rules() == {(NODES, "label_hidden_characters")}, report.summary()
    visible = [e["visible"] for e in report.findings[0].examples]
    assert visible[0] == "'x\\u00a0y'" and "'\\ufeffz'" in visible


def test_duplicate_and_ragged_examples_name_rows(tmp_path):
    t = good_tables()
    duplicate_ids(t)
    ragged(t)
    report = validate_snapshot(write(tmp_path, t))
    dup = next(f for f in report.findings if f.rule == "node_id_unique")
    assert dup.count == 2 and dup.examples == [{"node_id": "n0", "occurrences": 2,
                                                "first_rows": [0, N - 1]}]
    rag = next(f for f in report.findings if f.rule == "features_fixed_length")
    assert rag.count == 2
    assert [(e["row"], e["length"], e["expected"]) for e in rag.examples] == [(5, 5, 4), (7, 2, 4)]


def test_json_and_html_reports(tmp_path, capsys):
    t = good_tables()
    hostile = "<script>alert('x')</script>"
    t[NODES] = with_column(t[NODES], "label",
                           pa.array(["a", "a", "a", "b", "b", "b", hostile] + [None] * (N - 7)))
    path = write(tmp_path, t)
    html_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    code = main(["validate", str(path), "--html", str(html_path), "--json", str(json_path)])
    assert code == 1
    capsys.readouterr()
    doc = json.loads(json_path.read_text())
    assert doc["passed"] is False and doc["errors"] == 1
    finding = next(f for f in doc["findings"] if f["rule"] == "min_labels_per_class")
    assert finding["file"] == NODES and finding["examples"] == [{"label": hostile,
                                                                 "labelled_nodes": 1}]
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "min_labels_per_class" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert not list(path.glob("*.html"))


def test_require_valid_raises_with_the_report(tmp_path):
    t = good_tables()
    duplicate_ids(t)
    with pytest.raises(ContractViolation, match="node_id_unique") as err:
        require_valid(write(tmp_path, t))
    assert not err.value.report.passed


def test_cli_usage_errors(tmp_path, capsys):
    path = write(tmp_path, good_tables())
    for bad in (["--last-processed", "31/01/2026"], ["--min-labels-per-class", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["validate", str(path), *bad])
        assert exc.value.code == 2
    capsys.readouterr()


def test_suites_cover_every_rule():
    """Every rule is decided by at least one GX expectation (those outside GX are listed and
    documented); each expectation names its rule, file and severity."""
    from data_contracts.suites import OUTSIDE_GX

    covered = set()
    for file in (FOLDER, NODES, EDGES, TRUTH):
        suite = expectation_suite(file)
        for e in suite.expectations:
            rule = next(r for r in RULES if (r.file, r.name) == (e.meta["file"], e.meta["rule"]))
            assert e.meta["severity"] == rule.severity
            assert e.severity.value == ("critical" if rule.severity == ERROR else "warning")
            covered.add((rule.file, rule.name))
    assert covered | OUTSIDE_GX == {(r.file, r.name) for r in RULES}
    assert OUTSIDE_GX == {(NODES, "feature_names_match")}
    assert all(r.severity in (ERROR, WARNING) for r in RULES)


def test_native_and_custom_expectations():
    """Native GX expectations where GX has one; the custom classes for the rest."""
    kinds = {(e.meta["rule"], type(e).__name__) for f in (NODES, EDGES)
             for e in expectation_suite(f).expectations}
    for pair in [("node_id_unique", "ExpectColumnValuesToBeUnique"),
                 ("node_id_not_null", "ExpectColumnValuesToNotBeNull"),
                 ("no_duplicate_edges", "ExpectCompoundColumnsToBeUnique"),
                 ("nodes_not_empty", "ExpectTableRowCountToBeBetween"),
                 ("required_columns", "ExpectColumnToExist"),
                 ("min_known_classes", "ExpectColumnUniqueValueCountToBeBetween"),
                 ("features_finite", "ExpectColumnListValuesToBeFinite"),
                 ("features_float32_range", "ExpectColumnListValuesToFitFloat32"),
                 ("features_fixed_length", "ExpectColumnListLengthsToBeUniform"),
                 ("edge_endpoints_known", "ExpectColumnValuesToBeInReference")]:
        assert pair in kinds, pair


def test_unweighted_edges_run_the_suite_without_weight_expectations(tmp_path):
    """Edges without the optional weight column are validated by oral.edges.without_weight: GX
    never tries a metric of the missing column (each such failure made it recompute the whole
    round of metrics, the (src, dst) uniqueness pass included, up to three more times), and every
    other edge rule is still checked."""
    t = good_tables()
    t[EDGES] = edges_table(IDS, IDS[1:] + IDS[:1])
    assert "weight" not in t[EDGES].column_names
    report = validate_snapshot(write(tmp_path, t))
    assert report.passed and not report.findings, report.summary()
    variant = expectation_suite(EDGES, without="weight")
    assert variant.name == "oral.edges.without_weight"
    assert not any("weight" in str(e.configuration.kwargs.get("column"))
                   for e in variant.expectations)
    full = expectation_suite(EDGES)
    assert len(full.expectations) - len(variant.expectations) == 3
    assert report.expectations["oral.edges"] == {"evaluated": len(variant.expectations),
                                                 "successful": len(variant.expectations),
                                                 "unsuccessful": 0}
    assert set(report.rules_checked[EDGES]) == {r.name for r in RULES if r.file == EDGES} - {
        "weight_positive_finite"}


def test_gx_errors_are_not_swallowed(monkeypatch):
    """An expectation GX cannot evaluate although all it needs is there is a programming error:
    it raises, never passes."""
    import pandas as pd
    from data_contracts import suites

    frame = pd.DataFrame({"node_id": ["a"]})  # no features or label column, yet said usable
    gates = {NODES: {"present": {"node_id", "features", "label"},
                     "usable": {"node_id", "features", "label"}, "rows": True}}
    with pytest.raises(RuntimeError, match="could not evaluate"):
        suites.run_checkpoints({NODES: frame}, {"min_labels_per_class": 3, "min_known_classes": 2,
                                                "max_feature_width": 10,
                                                "node_id_kinds": ["string"]}, {}, gates)


@pytest.mark.slow
def test_file_backed_context_and_data_docs(tmp_path, capsys):
    """With a state folder: suites, validation definitions and checkpoints saved under
    <state>/gx, a Data Docs page per table and per suite, built once per validation, and its path
    in the report's JSON, but not in the printed summary (the pages need the internet to render;
    ``oral validate --state-dir`` prints the offline index instead); a second validation adds its
    own pages and keeps the first's."""
    import great_expectations as gx

    state = tmp_path / "state"
    t = good_tables()
    duplicate_ids(t)
    path = write(tmp_path, t)
    report = validate_snapshot(path, state_dir=state)
    assert (NODES, "node_id_unique") in report.rules(ERROR)
    assert set(report.data_docs) == {"oral.snapshot", "oral.nodes", "oral.edges", "oral.truth"}
    page = report.data_docs_page
    assert page == report.data_docs["oral.nodes"] and Path(page).is_file()
    assert Path(page).is_relative_to(state / "gx" / "uncommitted" / "data_docs")
    html = Path(page).read_text()
    assert "expect_column_values_to_be_unique" in html or "unique" in html
    site = state / "gx" / "uncommitted" / "data_docs" / "local_site"
    assert (site / "index.html").is_file()
    suite_pages = {p.relative_to(site / "expectations").as_posix()
                   for p in (site / "expectations").rglob("*.html")}
    assert suite_pages == {"oral/snapshot.html", "oral/nodes.html", "oral/edges.html",
                           "oral/truth.html"}
    for name in ("snapshot", "nodes", "edges", "truth"):  # suite oral.<name>
        assert (state / "gx" / "expectations" / "oral" / f"{name}.json").is_file()
        assert (state / "gx" / "checkpoints" / f"oral.{name}.json").is_file()
    context = gx.get_context(mode="file", project_root_dir=state)
    assert {c.name for c in context.checkpoints.all()} >= {"oral.nodes", "oral.edges"}
    assert context.validation_definitions.get("oral.nodes").suite.name == "oral.nodes"
    doc = json.loads(report.to_json())
    assert doc["data_docs"]["oral.nodes"] == page
    # not linked where people read (they need the internet to render): the JSON keeps the path
    assert "Data Docs" not in report.summary()
    assert main(["validate", str(path), "--state-dir", str(state)]) == 1
    # printed: the offline index only (GX's pages load their styles from the internet)
    [line] = [l for l in capsys.readouterr().out.splitlines() if "Data Docs" in l]
    assert line == f"Data Docs: {site / 'offline.html'} (the latest results, readable offline)"
    again = validate_snapshot(path, state_dir=state)
    assert again.data_docs["oral.nodes"] != page and Path(again.data_docs["oral.nodes"]).is_file()
    assert Path(page).is_file() and len(list((site / "validations").rglob("*.html"))) == 12
    assert sorted(p.name for p in path.iterdir()) == [EDGES, NODES, TRUTH]


@pytest.mark.slow
def test_the_data_docs_index_lists_the_latest_results_only(tmp_path, monkeypatch):
    """The Data Docs index lists the latest ``DATA_DOCS_INDEX_RESULTS`` validation results: GX
    reads every result it lists to render it, so unbounded a night's build grew with the
    history. The older result pages stay on disk, and the bound is saved in the site's
    configuration."""
    import re
    from urllib.parse import unquote

    from data_contracts import suites

    monkeypatch.setattr(suites, "DATA_DOCS_INDEX_RESULTS", 4)
    state = tmp_path / "state"
    path = write(tmp_path, good_tables())
    first = validate_snapshot(path, state_dir=state)
    second = validate_snapshot(path, state_dir=state)
    site = state / "gx" / "uncommitted" / "data_docs" / "local_site"
    listed = {unquote(link) for link in
              re.findall(r"validations/[^\"'<>]+?\.html", (site / "index.html").read_text())}
    latest = {Path(page).relative_to(site).as_posix() for page in second.data_docs.values()}
    assert listed == latest and len(latest) == 4
    assert all(Path(page).is_file() for page in first.data_docs.values())
    assert "validation_results_limit: 4" in (state / "gx" / "great_expectations.yml").read_text()
    # the offline index lists the same latest results, with no script and nothing from the web
    offline = (site / "offline.html").read_text()
    assert {unquote(link) for link in re.findall(r"href='(validations/[^']+)'", offline)} == latest
    assert "<script" not in offline and "http" not in offline
    assert offline.count("<td class='ok'>passed</td>") == 4


def test_the_offline_index_says_failed_and_unreadable_results(tmp_path):
    """``data_contracts.docs_index``: newest first, a failed result said failed with the
    expectations met, a result file that cannot be read listed as unreadable, not dropped; no
    result yet is said too."""
    from data_contracts.docs_index import RESULTS_DIR, offline_index, result_rows

    assert "no validation result yet" in offline_index(result_rows(tmp_path, 10))
    store = tmp_path / RESULTS_DIR / "oral" / "nodes" / "g.snapshot=2026-01-01"
    for when, body in (("20260101T010000.000000Z", {"success": False, "suite_name": "oral.nodes",
                                                     "statistics": {"successful_expectations": 7,
                                                                    "evaluated_expectations": 9}}),
                       ("20260102T010000.000000Z", None)):
        (store / when).mkdir(parents=True)
        (store / when / "oral-oral.nodes.json").write_text(
            "{not json" if body is None else json.dumps(body))
    rows = result_rows(tmp_path, 10)
    assert [r["run_time"][:8] for r in rows] == ["20260102", "20260101"]
    assert rows[0]["success"] is None and rows[0]["error"].startswith("unreadable")
    page = offline_index(rows)
    assert "<td class='bad'>failed</td><td>7 of 9</td>" in page
    assert "unreadable" in page and "2026-01-01 01:00:00 UTC" in page
    assert len(result_rows(tmp_path, 1)) == 1


def test_empty_truth_warns_that_nodes_are_uncovered(tmp_path):
    t = good_tables()
    t[TRUTH] = t[TRUTH].slice(0, 0)
    report = validate_snapshot(write(tmp_path, t))
    assert report.passed and report.rules() == {(TRUTH, "truth_covers_nodes")}
    assert report.findings[0].count == N


@pytest.mark.slow
def test_state_folder_removed_while_the_process_lives(tmp_path):
    """The per-process context cache notices a removed <state>/gx and builds it again."""
    import shutil

    state = tmp_path / "state"
    path = write(tmp_path, good_tables())
    assert validate_snapshot(path, state_dir=state).passed
    shutil.rmtree(state)
    report = validate_snapshot(path, state_dir=state)
    assert report.passed and Path(report.data_docs_page).is_file()
