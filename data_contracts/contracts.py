"""Validate a snapshot against the data contract: :func:`validate_snapshot`.

Each rule of :mod:`data_contracts.suites` is measured here with pyarrow compute kernels and numpy
on whole columns (hash sets for uniqueness and membership, list lengths, one pass over the
flattened feature values), so the cost is linear in the data and no Python object is built per
row; only the few example rows of a broken rule become Python values. The measured numbers go to
Great Expectations, whose suites decide which rules fail; the report pairs each failure with the
count, message and example rows measured here.

Bad data never raises: a missing folder or file, a truncated or non-Parquet file, a wrong column
type all become findings, and the checks that need what is missing are skipped (the report lists
the rules that were checked). Programming errors still raise.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from data_contracts.measures import (as_float32, bad_feature_rows, comparable_ids, hidden_labels,
                                     id_kind, plain_column, visible_label)
from data_contracts.report import Finding, ValidationReport
from data_contracts.snapshots import (EDGES, FEATURE_NAMES_KEY, NODES, PARTITION, TRUTH,
                                      SnapshotError, SnapshotFiles, parse_date, parse_parquet,
                                      read_bytes, read_snapshot_files)
from data_contracts.suites import (FOLDER, LABELS_REF, NODES_REF, OUTSIDE_GX, RULES_BY_KEY,
                                   ContractConfig, run_checkpoints)

NODE_COLUMNS = ("node_id", "features", "label")
EDGE_COLUMNS = ("src", "dst")
TRUTH_COLUMNS = ("node_id", "true_label")


class ContractViolation(SnapshotError):
    """A snapshot that breaks the contract; ``report`` holds the findings."""

    def __init__(self, report: ValidationReport):
        self.report = report
        super().__init__(report.summary())


# ---------------------------------------------------------------------------------- types
def _is_text(t: pa.DataType) -> bool:
    """A label type: strings (or dictionaries of strings), or all-null."""
    return pa.types.is_null(t) or id_kind(t) == "string"


def _is_numeric_type(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _is_feature_list(t: pa.DataType) -> bool:
    return ((pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))
            and _is_numeric_type(t.value_type))


# ---------------------------------------------------------------------------------- helpers
def _sum(values) -> int:
    """Sum of an integer or boolean (chunked) array; nulls and empty arrays count as 0."""
    value = pc.sum(values).as_py()
    return int(value or 0)


def _first_rows(mask, k: int) -> list[int]:
    """Row numbers of the first ``k`` true values of a boolean (chunked) array (null: false)."""
    chunks = mask.chunks if isinstance(mask, pa.ChunkedArray) else [mask]
    rows, offset = [], 0
    for chunk in chunks:
        if len(rows) >= k:
            break
        hits = np.flatnonzero(chunk.fill_null(False).to_numpy(zero_copy_only=False))
        rows.extend((hits[: k - len(rows)] + offset).tolist())
        offset += len(chunk)
    return rows


def _rows(table: pa.Table, rows: list[int], columns: list[str]) -> list[dict]:
    """Example rows (only the named light columns), each with its row number first."""
    if not rows:
        return []
    cols = [c for c in columns if table.column_names.count(c) == 1]
    picked = table.select(cols).take(pa.array(rows, pa.int64())).to_pylist()
    return [{"row": r, **values} for r, values in zip(rows, picked)]


def _type_problem(column: str, actual: pa.DataType, expected: str) -> dict:
    return {"column": column, "type": str(actual), "expected": expected}


@dataclass
class _Observation:
    value: float
    message: str
    count: int = 0
    examples: list = field(default_factory=list)


# ---------------------------------------------------------------------------------- checker
class _Checker:
    """Measures every applicable rule; one observed number per rule, plus what to report."""

    def __init__(self, config: ContractConfig):
        self.config = config
        self.k = config.max_examples
        self.obs: dict[str, dict[str, _Observation]] = {}
        self.counts: dict = {}

    def observe(self, file: str, rule: str, value: float, message: str, count: int = 0,
                examples: list | None = None) -> None:
        if f"{file}:{rule}" not in RULES_BY_KEY:
            raise KeyError(f"unknown rule {rule!r} for {file}")
        self.obs.setdefault(file, {})[rule] = _Observation(
            float(value), message, int(count), list(examples or [])[: self.k])

    # ------------------------------------------------------------------------------ folder
    def folder(self, path: Path, last_processed: dt.date | None,
               already_read: bool = False) -> dt.date | None:
        exists = already_read or path.is_dir()
        self.observe(FOLDER, "snapshot_folder_exists", int(exists),
                     f"{path} does not exist" if not path.exists() else f"{path} is not a folder",
                     1, [{"path": str(path)}])
        name = path.name
        date = None
        if name.startswith(PARTITION):
            try:
                date = parse_date(name[len(PARTITION):])  # YYYY-MM-DD exactly
            except SnapshotError:
                date = None
        self.observe(FOLDER, "snapshot_date_valid", int(date is not None),
                     f"folder name {name!r} is not snapshot=YYYY-MM-DD with a valid date",
                     1, [{"folder": name}])
        if date is not None and last_processed is not None:
            days = (date - last_processed).days
            self.observe(FOLDER, "snapshot_date_order", days,
                         f"snapshot date {date} is {-days} day(s) older than the last processed "
                         f"snapshot of this graph ({last_processed})", 1,
                         [{"snapshot_date": date, "last_processed_date": last_processed}])
        return date

    def read_failures(self, path: Path) -> dict[str, pa.Table | None]:
        """Read each file on its own (after the one-pass reader failed), to report every
        missing or unreadable file."""
        tables: dict[str, pa.Table | None] = {}
        for name in (NODES, EDGES, TRUTH):
            file = path / name
            tables[name] = None
            if name != TRUTH:
                present = file.is_file()
                self.observe(name, "file_present", int(present),
                             f"{file} is a folder, not a Parquet file" if file.is_dir() else
                             f"{file} is not a file" if file.exists() else f"{file} is missing",
                             1, [{"path": str(file)}])
                if not present:
                    continue
            elif not file.exists():
                continue
            try:
                tables[name] = parse_parquet(file, read_bytes(file))
                self.observe(name, "readable_parquet", 1, "")
            except SnapshotError as err:
                self.observe(name, "readable_parquet", 0, str(err), 1, [{"path": str(file)}])
        return tables

    def tables_read(self, tables: dict[str, pa.Table | None]) -> None:
        for name in (NODES, EDGES):
            self.observe(name, "file_present", 1, "")
        for name in (NODES, EDGES, TRUTH):
            if tables.get(name) is not None:
                self.observe(name, "readable_parquet", 1, "")

    # ------------------------------------------------------------------------------ shared
    def required(self, file: str, table: pa.Table, columns: tuple[str, ...]) -> list[str]:
        """Column-name checks; returns the names that occur once (the only ones checked
        further: a repeated name is ambiguous)."""
        names = table.column_names
        repeated = sorted({c for c in names if names.count(c) > 1})
        self.observe(file, "column_names_unique", len(repeated),
                     f"column name(s) {', '.join(repeated)} occur more than once",
                     len(repeated), [{"column": c, "occurrences": names.count(c)}
                                     for c in repeated])
        missing = [c for c in columns if c not in names]
        self.observe(file, "required_columns", len(missing),
                     f"missing column(s) {', '.join(missing)} (has: "
                     f"{', '.join(names) or 'no columns'})",
                     len(missing), [{"column": c} for c in missing])
        return [c for c in names if c not in repeated]

    def types(self, file: str, problems: list[dict]) -> None:
        self.observe(file, "column_types", len(problems),
                     "; ".join(f"column {p['column']} is {p['type']}, expected {p['expected']}"
                               for p in problems), len(problems), problems)

    def ids(self, file: str, table: pa.Table, column: str = "node_id") -> pa.ChunkedArray:
        """Null and uniqueness checks of an id column; returns the decoded column."""
        ids = plain_column(table.column(column))
        nulls = ids.null_count
        self.observe(file, "node_id_not_null", nulls, f"{nulls} row(s) have a null {column}",
                     nulls, [{"row": r} for r in _first_rows(pc.is_null(ids), self.k)]
                     if nulls else [])
        valid = len(ids) - nulls
        distinct = pc.count_distinct(ids, mode="only_valid").as_py() if valid else 0
        dup_rows, examples = 0, []
        if distinct < valid:
            counts = pc.value_counts(ids.drop_null())
            repeated = counts.filter(pc.greater(counts.field("counts"), 1))
            dup_rows = _sum(repeated.field("counts"))
            for item in repeated.slice(0, self.k).to_pylist():
                rows = _first_rows(pc.equal(ids, pa.scalar(item["values"], ids.type)), 3)
                examples.append({column: item["values"], "occurrences": item["counts"],
                                 "first_rows": rows})
        self.observe(file, "node_id_unique", dup_rows,
                     f"{dup_rows} row(s) carry a {column} that appears more than once "
                     f"({len(repeated) if dup_rows else 0} repeated id(s))", dup_rows, examples)
        return ids

    # ------------------------------------------------------------------------------ nodes
    def nodes(self, nodes: pa.Table) -> dict:
        """Checks of nodes.parquet; returns what the other files' checks need."""
        cols = self.required(NODES, nodes, NODE_COLUMNS)
        problems = []
        if "node_id" in cols and id_kind(nodes.schema.field("node_id").type) is None:
            problems.append(_type_problem("node_id", nodes.schema.field("node_id").type,
                                          "string or integer"))
        if "features" in cols and not _is_feature_list(nodes.schema.field("features").type):
            problems.append(_type_problem("features", nodes.schema.field("features").type,
                                          "list<float32> (a list of numbers)"))
        if "label" in cols and not _is_text(nodes.schema.field("label").type):
            problems.append(_type_problem("label", nodes.schema.field("label").type,
                                          "string (null: unlabelled)"))
        self.types(NODES, problems)
        bad = {p["column"] for p in problems}
        n = nodes.num_rows
        self.counts["nodes"] = n
        self.observe(NODES, "nodes_not_empty", n, "the node table has no rows", 1,
                     [{"rows": 0}])
        ok = lambda c: c in cols and c not in bad  # noqa: E731
        out: dict = {"ids": None}
        if n == 0:
            return out
        if ok("node_id"):
            out["ids"] = self.ids(NODES, nodes)
        if ok("features"):
            self.features(nodes)
        if ok("label"):
            out["labels"] = self.labels(nodes)
        return out

    def features(self, nodes: pa.Table) -> None:
        col = nodes.column("features")
        k = self.k
        ident = ["node_id"] if nodes.column_names.count("node_id") == 1 else []
        # pass 1: list lengths (one int per row) and the most common non-zero length
        lengths = pc.list_value_length(col)
        nulls = col.null_count
        self.observe(NODES, "features_not_null", nulls, f"{nulls} row(s) have null features",
                     nulls, _rows(nodes, _first_rows(pc.is_null(col), k), ident) if nulls else [])
        zero = pc.equal(lengths, 0)
        n_zero = _sum(zero)
        self.observe(NODES, "features_nonzero_length", n_zero,
                     f"{n_zero} row(s) have an empty feature list", n_zero,
                     _rows(nodes, _first_rows(zero, k), ident) if n_zero else [])
        counts = pc.value_counts(lengths.filter(pc.greater(lengths, 0)))
        width = 0
        if len(counts):
            freq = counts.field("counts").to_numpy()
            width = int(counts.field("values").to_numpy()[int(np.argmax(freq))])
        self.counts["feature_width"] = width
        ragged = pc.and_(pc.greater(lengths, 0), pc.not_equal(lengths, width))
        n_ragged = _sum(ragged)
        examples = []
        if n_ragged:
            rows = _first_rows(ragged, k)
            lens = lengths.take(pa.array(rows, pa.int64())).to_pylist()
            examples = [{**r, "length": length, "expected": width}
                        for r, length in zip(_rows(nodes, rows, ident), lens)]
        self.observe(NODES, "features_fixed_length", n_ragged,
                     f"{n_ragged} row(s) have a feature length other than {width} (lengths seen: "
                     f"{sorted(counts.field('values').to_pylist())[:10]})", n_ragged, examples)
        self.observe(NODES, "feature_width_limit", width,
                     f"feature width {width} exceeds max_feature_width "
                     f"{self.config.max_feature_width}", 1, [{"width": width}])
        # pass 2: every flattened value finite, as the float32 that training holds (a float64
        # 1e300 is finite but becomes inf), chunk by chunk, rows mapped back by offsets
        found = {"nonfinite": [0, []], "float32_overflow": [0, []]}
        offset = 0
        for chunk in col.chunks:
            for problem, (n_bad, rows) in bad_feature_rows(chunk, k).items():
                found[problem][0] += n_bad
                room = k - len(found[problem][1])
                found[problem][1].extend({"row": row + offset, "position": position,
                                          "value": value} for row, position, value in rows[:room])
            offset += len(chunk)
        if ident:
            for _, examples in found.values():
                if examples:
                    ids = nodes.column("node_id").take(pa.array([e["row"] for e in examples],
                                                                pa.int64()))
                    for e, node in zip(examples, ids.to_pylist()):
                        e["node_id"] = node
        bad_rows, examples = found["nonfinite"]
        self.observe(NODES, "features_finite", bad_rows,
                     f"{bad_rows} row(s) have a NaN, infinite or null feature value", bad_rows,
                     examples)
        big_rows, examples = found["float32_overflow"]
        self.observe(NODES, "features_float32_range", big_rows,
                     f"{big_rows} row(s) have a feature value beyond float32's range "
                     f"(|value| > {F32_MAX:.7g}): finite in {col.type.value_type}, infinite once "
                     "cast to the float32 that training uses", big_rows, examples)
        self.feature_names(nodes, width)

    def feature_names(self, nodes: pa.Table, width: int) -> None:
        """The ``oral.feature_names`` schema metadata against the feature width (outside GX:
        no batch holds Parquet schema metadata)."""
        meta = nodes.schema.metadata or {}
        if FEATURE_NAMES_KEY in meta:
            problem = ""
            try:
                names = json.loads(meta[FEATURE_NAMES_KEY])
                if not isinstance(names, list):
                    problem = "is not a JSON list"
                elif len(names) != width:
                    problem = f"lists {len(names)} names for {width} features"
            except (ValueError, UnicodeDecodeError):
                problem = "is not valid JSON"
            self.observe(NODES, "feature_names_match", int(bool(problem)),
                         f"schema metadata {FEATURE_NAMES_KEY.decode()} {problem}", 1,
                         [{"metadata": FEATURE_NAMES_KEY.decode(), "problem": problem}])

    def labels(self, nodes: pa.Table) -> pa.ChunkedArray:
        labels = plain_column(nodes.column("label"))
        k = self.k
        ident = ["node_id", "label"]
        n = len(labels)
        unlabelled = labels.null_count
        self.counts.update(labelled=n - unlabelled, unlabelled=unlabelled)
        blank = pc.equal(pc.utf8_trim_whitespace(labels), "")
        n_blank = _sum(blank)
        self.observe(NODES, "label_not_blank", n_blank,
                     f"{n_blank} row(s) have an empty or blank label (use null for unlabelled)",
                     n_blank, _rows(nodes, _first_rows(blank, k), ident) if n_blank else [])
        self.hidden_label_characters(nodes, labels)
        counts = pc.value_counts(labels.drop_null())
        classes = len(counts)
        self.counts["classes"] = classes
        per_class = sorted(zip(counts.field("values").to_pylist(),
                               counts.field("counts").to_pylist()), key=lambda x: (x[1], x[0]))
        need = self.config.min_known_classes
        self.observe(NODES, "min_known_classes", classes,
                     f"{classes} labelled class(es), at least {need} needed", classes,
                     [{"label": lab, "labelled_nodes": c} for lab, c in per_class[:k]])
        if classes:
            floor = self.config.min_labels_per_class
            short = [(lab, c) for lab, c in per_class if c < floor]
            self.observe(NODES, "min_labels_per_class", per_class[0][1],
                         f"{len(short)} class(es) have fewer than {floor} labelled nodes",
                         len(short), [{"label": lab, "labelled_nodes": c} for lab, c in short[:k]])
        self.observe(NODES, "unlabelled_nodes_present", unlabelled,
                     "every node is labelled: there is nothing to discover", 0, [])
        return labels

    def hidden_label_characters(self, nodes: pa.Table, labels: pa.ChunkedArray) -> None:
        """Labels with surrounding whitespace or invisible characters, and labels that are one
        label once those are removed (``"a"`` and ``"a "``: two known classes). Warnings: the
        data may mean them, but a reader cannot see the difference."""
        k = self.k
        found = hidden_labels(labels, k)
        n_hidden = found.rows
        examples = []
        if n_hidden:
            examples = [{**r, "visible": visible_label(r["label"])}
                        for r in _rows(nodes, _first_rows(found.mask, k), ["node_id", "label"])]
        self.observe(NODES, "label_hidden_characters", n_hidden,
                     f"{n_hidden} row(s) have a label with leading or trailing whitespace or an "
                     "invisible character (zero-width, control, format or unusual space "
                     "characters; spelled out under 'visible')", n_hidden, examples)
        groups, n_rows = found.groups, found.colliding_rows
        n_labels = sum(len(m) for m in groups.values())
        self.observe(NODES, "labels_distinct_after_stripping", n_rows,
                     f"{n_labels} labels are {len(groups)} class(es) once surrounding whitespace "
                     f"and invisible characters are removed, yet count as {n_labels} known "
                     f"classes ({n_rows} labelled row(s))", n_rows, found.collisions)

    # ------------------------------------------------------------------------------ edges
    def edges(self, edges: pa.Table, node_ids: pa.ChunkedArray | None) -> None:
        cols = self.required(EDGES, edges, EDGE_COLUMNS)
        problems = [_type_problem(c, edges.schema.field(c).type, "string or integer")
                    for c in EDGE_COLUMNS
                    if c in cols and id_kind(edges.schema.field(c).type) is None]
        has_weight = "weight" in cols
        if has_weight and not _is_numeric_type(edges.schema.field("weight").type):
            problems.append(_type_problem("weight", edges.schema.field("weight").type,
                                          "a number (float32)"))
        self.types(EDGES, problems)
        bad = {p["column"] for p in problems}
        m = edges.num_rows
        self.counts["edges"] = m
        self.observe(EDGES, "edges_not_empty", m, "the edge table has no rows", 0, [])
        k = self.k
        show = ["src", "dst"] + (["weight"] if has_weight else [])
        if has_weight and "weight" not in bad and m:
            w = edges.column("weight")
            wrong = pc.is_null(w)
            if pa.types.is_floating(w.type):
                wrong = pc.or_(wrong, pc.invert(pc.is_finite(w)))
            wrong = pc.or_(wrong, pc.less_equal(w, 0))
            if pa.types.is_floating(w.type) and w.type.bit_width > 32:
                # as the float32 training holds: 1e300 becomes inf, 1e-50 becomes 0
                as32 = pa.chunked_array(
                    [pa.array(as_float32(c.to_numpy(zero_copy_only=False))) for c in w.chunks],
                    pa.float32())
                wrong = pc.or_(wrong, pc.or_(pc.invert(pc.is_finite(as32)),
                                             pc.less_equal(as32, 0)))
            n_wrong = _sum(wrong)
            self.observe(EDGES, "weight_positive_finite", n_wrong,
                         f"{n_wrong} edge(s) have a null, NaN, infinite, zero or negative weight "
                         "(as float32, which training uses)",
                         n_wrong, _rows(edges, _first_rows(wrong, k), show) if n_wrong else [])
        if not all(c in cols and c not in bad for c in EDGE_COLUMNS) or m == 0:
            return
        src, dst = plain_column(edges.column("src")), plain_column(edges.column("dst"))
        nulls = pc.or_(pc.is_null(src), pc.is_null(dst))
        n_null = _sum(nulls) if (src.null_count or dst.null_count) else 0
        self.observe(EDGES, "edge_endpoints_not_null", n_null,
                     f"{n_null} edge(s) have a null src or dst", n_null,
                     _rows(edges, _first_rows(nulls, k), show) if n_null else [])
        same_kind = id_kind(src.type) == id_kind(dst.type)
        if same_kind:
            a, b = comparable_ids(src, dst)
            loops = pc.equal(a, b)
            n_loops = _sum(loops)
            self.observe(EDGES, "no_self_loops", n_loops,
                         f"{n_loops} edge(s) join a node to itself", n_loops,
                         _rows(edges, _first_rows(loops, k), show) if n_loops else [])
            pairs = pa.table({"src": a, "dst": b})
            groups = pairs.group_by(["src", "dst"]).aggregate([([], "count_all")])
            n_dup = m - groups.num_rows
            examples = []
            if n_dup:
                rep = groups.filter(pc.greater(groups.column("count_all"), 1))
                examples = [{"src": r["src"], "dst": r["dst"], "occurrences": r["count_all"]}
                            for r in rep.slice(0, k).to_pylist()]
            self.observe(EDGES, "no_duplicate_edges", n_dup,
                         f"{n_dup} edge row(s) repeat an earlier (src, dst) pair", n_dup, examples)
        if node_ids is None:
            return
        node_kind = id_kind(node_ids.type)
        mismatch = [_type_problem(c, col.type, f"{node_kind} ids like nodes.parquet node_id "
                                  f"({node_ids.type})")
                    for c, col in (("src", src), ("dst", dst)) if id_kind(col.type) != node_kind]
        self.observe(EDGES, "endpoint_type_matches_node_id", len(mismatch),
                     "; ".join(f"column {p['column']} is {p['type']}, expected {p['expected']}"
                               for p in mismatch), len(mismatch), mismatch)
        if mismatch:
            return
        known = node_ids.drop_null()
        unknown, value_sets = None, {}
        for col in (src, dst):
            c, ref = comparable_ids(col, known)
            if ref.type not in value_sets:
                value_sets[ref.type] = ref.combine_chunks()
            miss = pc.and_(pc.invert(pc.is_in(c, value_set=value_sets[ref.type])), pc.is_valid(c))
            unknown = miss if unknown is None else pc.or_(unknown, miss)
        n_unknown = _sum(unknown)
        self.observe(EDGES, "edge_endpoints_known", n_unknown,
                     f"{n_unknown} edge(s) name a node id that is not in nodes.parquet",
                     n_unknown, _rows(edges, _first_rows(unknown, k), show) if n_unknown else [])

    # ------------------------------------------------------------------------------ truth
    def truth(self, truth: pa.Table, node_ids: pa.ChunkedArray | None,
              labels: pa.ChunkedArray | None) -> None:
        cols = self.required(TRUTH, truth, TRUTH_COLUMNS)
        problems = []
        if "node_id" in cols:
            t = truth.schema.field("node_id").type
            want = id_kind(node_ids.type) if node_ids is not None else None
            if id_kind(t) is None or (want is not None and id_kind(t) != want):
                problems.append(_type_problem("node_id", t, f"{want or 'string or integer'} ids "
                                              "like nodes.parquet node_id"))
        if "true_label" in cols and not _is_text(truth.schema.field("true_label").type):
            problems.append(_type_problem("true_label", truth.schema.field("true_label").type,
                                          "string"))
        self.types(TRUTH, problems)
        bad = {p["column"] for p in problems}
        self.counts["truth_rows"] = truth.num_rows
        k = self.k
        ok = lambda c: c in cols and c not in bad  # noqa: E731
        ids = self.ids(TRUTH, truth) if ok("node_id") else None
        if ok("true_label"):
            true = plain_column(truth.column("true_label"))
            n_null = true.null_count
            self.observe(TRUTH, "true_label_not_null", n_null,
                         f"{n_null} truth row(s) have no true label", n_null,
                         _rows(truth, _first_rows(pc.is_null(true), k), ["node_id"])
                         if n_null else [])
        if ids is None or node_ids is None:
            return
        t_ids, n_ids = comparable_ids(ids, node_ids)
        unknown = pc.and_(pc.invert(pc.is_in(t_ids, value_set=n_ids.drop_null().combine_chunks())),
                          pc.is_valid(t_ids))
        n_unknown = _sum(unknown)
        self.observe(TRUTH, "truth_node_ids_known", n_unknown,
                     f"{n_unknown} truth row(s) name a node id that is not in nodes.parquet",
                     n_unknown, _rows(truth, _first_rows(unknown, k), list(TRUTH_COLUMNS))
                     if n_unknown else [])
        truth_set = t_ids.drop_null().combine_chunks()
        uncovered = pc.and_(pc.invert(pc.is_in(n_ids, value_set=truth_set)), pc.is_valid(n_ids))
        n_uncovered = _sum(uncovered)
        examples = []
        if n_uncovered:
            rows = _first_rows(uncovered, k)
            examples = [{"row": r, "node_id": v}
                        for r, v in zip(rows, n_ids.take(pa.array(rows, pa.int64())).to_pylist())]
        self.observe(TRUTH, "truth_covers_nodes", n_uncovered,
                     f"{n_uncovered} node(s) of nodes.parquet have no truth row", n_uncovered,
                     examples)
        if labels is None or not ok("true_label"):
            return
        labelled = pa.table({"node_id": n_ids, "label": labels}).filter(pc.is_valid(labels))
        scored = pa.table({"node_id": t_ids,
                           "true_label": plain_column(truth.column("true_label"))})
        joined = labelled.join(scored, "node_id", join_type="inner")
        differ = pc.not_equal(joined.column("label"), joined.column("true_label"))
        n_differ = _sum(differ)
        examples = []
        if n_differ:
            examples = joined.filter(differ.fill_null(False)).slice(0, k).to_pylist()
        self.observe(TRUTH, "labels_match_truth", n_differ,
                     f"{n_differ} labelled node(s) carry a label other than their true label",
                     n_differ, examples)


#: The largest finite float32: features (and edge weights) are trained as float32, and a wider
#: value beyond it (a float64 1e300) becomes infinite in the cast.
F32_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------------------------- entry
def validate_snapshot(path: str | Path | SnapshotFiles, last_processed_date: str | dt.date | None
                      = None, min_labels_per_class: int = 3, *, min_known_classes: int = 2,
                      max_feature_width: int = 65_536, max_examples: int = 5,
                      state_dir: str | Path | None = None) -> ValidationReport:
    """Check one snapshot folder (or the :class:`SnapshotFiles` an ingest step already read)
    against the data contract and return a :class:`ValidationReport`; never raises on bad data.

    ``last_processed_date``: the date of the last snapshot of this graph that a run processed; an
    older snapshot is a warning (``snapshot_date_order``). ``min_labels_per_class``,
    ``min_known_classes``, ``max_feature_width``: bounds of the label and feature rules.
    ``max_examples`` (at most 5): example rows kept per finding. ``state_dir``: the state folder
    whose ``gx/`` holds the file-backed GX context (suites, validation definitions, checkpoints,
    results) and the Data Docs the checkpoints build (``report.data_docs``); None: an ephemeral
    context, no Data Docs.
    """
    start = time.perf_counter()
    if isinstance(last_processed_date, str):
        last_processed_date = dt.date.fromisoformat(last_processed_date)
    elif isinstance(last_processed_date, dt.datetime):
        last_processed_date = last_processed_date.date()
    if min_labels_per_class < 1 or min_known_classes < 1 or max_feature_width < 1:
        raise ValueError("min_labels_per_class, min_known_classes and max_feature_width "
                         "must be >= 1")
    config = ContractConfig(min_labels_per_class=int(min_labels_per_class),
                            min_known_classes=int(min_known_classes),
                            max_feature_width=int(max_feature_width),
                            max_examples=max(0, min(int(max_examples), 5)))
    check = _Checker(config)
    files = path if isinstance(path, SnapshotFiles) else None
    folder = Path(files.path if files is not None else path)
    date = check.folder(folder, last_processed_date, already_read=files is not None)
    content_hash = None
    tables: dict[str, pa.Table | None] = {NODES: None, EDGES: None, TRUTH: None}
    if files is None and folder.is_dir():
        try:
            files = read_snapshot_files(folder)
        except SnapshotError:
            tables = check.read_failures(folder)
    if files is not None:
        tables = {NODES: files.nodes, EDGES: files.edges, TRUTH: files.truth}
        content_hash = files.content_hash
        check.tables_read(tables)
    report_args = dict(path=str(folder), content_hash=content_hash,
                       snapshot_date=date.isoformat() if date else None,
                       parameters={"last_processed_date": last_processed_date,
                                   "min_labels_per_class": config.min_labels_per_class,
                                   "min_known_classes": config.min_known_classes,
                                   "max_feature_width": config.max_feature_width})
    findings, counts, checked, stats, docs = _evaluate(check, folder, date, last_processed_date,
                                                       tables, config, state_dir)
    return ValidationReport(findings=findings, counts=counts, rules_checked=checked,
                            expectations=stats, data_docs=docs,
                            elapsed_s=time.perf_counter() - start, **report_args)


def _manifest(check: _Checker, folder: Path, date, last_processed) -> pd.DataFrame:
    """The oral.snapshot batch: one row naming the folder, its date, and which files are present
    and readable (None: not looked at)."""
    import pandas as pd

    obs = check.obs
    name = folder.name
    def flag(file, rule):
        o = obs.get(file, {}).get(rule)
        return None if o is None else bool(o.value)
    row = {"folder": name,
           "date": name[len(PARTITION):] if name.startswith(PARTITION) else None,
           "folder_exists": bool(obs[FOLDER]["snapshot_folder_exists"].value),
           "days_after_last_processed": ((date - last_processed).days
                                         if date is not None and last_processed else None),
           "nodes_present": flag(NODES, "file_present"),
           "nodes_readable": flag(NODES, "readable_parquet"),
           "edges_present": flag(EDGES, "file_present"),
           "edges_readable": flag(EDGES, "readable_parquet"),
           "truth_readable": flag(TRUTH, "readable_parquet")}
    return pd.DataFrame({k: pd.Series([v], dtype=object) for k, v in row.items()})


def _evaluate(check: _Checker, folder: Path, date, last_processed, tables: dict,
              config: ContractConfig, state_dir):
    """Build the batches, run the GX checkpoints, and turn failed rules into findings (count,
    message and example rows measured by ``check`` for the tables that failed a rule)."""
    from data_contracts.gx_expectations import frame_from_arrow

    manifest = _manifest(check, folder, date, last_processed)
    frames = {FOLDER: manifest}
    gates: dict = {FOLDER: {"nonnull": {c: manifest[c].iloc[0] is not None
                                        for c in manifest.columns}}}
    refs: dict = {}
    node_kinds = ["string", "integer"]
    counts: dict = {}
    for name in (NODES, EDGES, TRUTH):
        table = tables[name]
        if table is None:
            continue
        names = table.column_names
        facts = {"present": {c for c in names if names.count(c) == 1}, "usable": set(),
                 "rows": table.num_rows > 0}
        frames[name], gates[name] = frame_from_arrow(table), facts
        counts[{NODES: "nodes", EDGES: "edges", TRUTH: "truth_rows"}[name]] = table.num_rows
        if name == NODES:
            if "node_id" in facts["present"]:
                refs[NODES_REF] = plain_column(table.column("node_id"))
                kind = id_kind(table.schema.field("node_id").type)
                node_kinds = [kind] if kind else node_kinds
            if "label" in facts["present"]:
                refs[LABELS_REF] = table.column("label")
                facts["nonempty_labels"] = table.column("label").null_count < table.num_rows
        if name == EDGES and {"src", "dst"} <= facts["present"]:
            facts["same_kind"] = (id_kind(table.schema.field("src").type)
                                  == id_kind(table.schema.field("dst").type))
    parameters = {"min_labels_per_class": config.min_labels_per_class,
                  "min_known_classes": config.min_known_classes,
                  "max_feature_width": config.max_feature_width,
                  "node_id_kinds": node_kinds}
    # GX keys results by run name (a folder of the Data Docs site): no slashes or spaces
    run_name = re.sub(r"[^A-Za-z0-9_.=-]", "_", f"{folder.parent.name}.{folder.name}")
    outcomes, stats, docs = run_checkpoints(frames, parameters, refs, gates, state_dir, run_name)

    failed: dict[tuple[str, str], list] = {}
    checked: dict[str, list[str]] = {}
    for o in outcomes:
        if not o.counts:
            continue
        checked.setdefault(o.file, [])
        if o.rule not in checked[o.file]:
            checked[o.file].append(o.rule)
        if not o.success:
            failed.setdefault((o.file, o.rule), []).append(o)
    nodes = tables[NODES]
    usable = gates.get(NODES, {}).get("usable", set())
    # summary counts (cheap column statistics; the big tables' checkpoints return no observed
    # values, see suites.RESULT_FORMATS)
    if nodes is not None and nodes.num_rows:
        if "features" in usable:
            lengths = pc.value_counts(pc.list_value_length(nodes.column("features")).drop_null())
            lengths = lengths.filter(pc.greater(lengths.field("values"), 0))
            counts["feature_width"] = (int(lengths.field("values")[int(np.argmax(
                lengths.field("counts").to_numpy()))].as_py()) if len(lengths) else 0)
            check.feature_names(nodes, counts["feature_width"])
            names = check.obs.get(NODES, {}).get("feature_names_match")
            if names is not None:  # only when the file carries the metadata
                checked[NODES].append("feature_names_match")
                if names.value > 0:
                    failed[(NODES, "feature_names_match")] = []
        if "label" in usable:
            labels = plain_column(nodes.column("label"))
            unlabelled = labels.null_count
            counts.update(labelled=nodes.num_rows - unlabelled, unlabelled=unlabelled,
                          classes=int(pc.count_distinct(labels, mode="only_valid").as_py()))
    # explain: measure every rule of a table that failed one (messages, counts, example rows)
    explained: set = set()
    node_ids = labels = None
    if nodes is not None and gates[NODES].get("rows") and "node_id" in usable:
        node_ids = plain_column(nodes.column("node_id"))
        labels = plain_column(nodes.column("label")) if "label" in usable else None
    for file, rule in list(failed):
        if file in explained or file == FOLDER or tables.get(file) is None:
            continue
        if (file, rule) in {(NODES, "file_present"), (EDGES, "file_present"),
                            (NODES, "readable_parquet"), (EDGES, "readable_parquet"),
                            (TRUTH, "readable_parquet")} or (file, rule) in OUTSIDE_GX:
            continue
        explained.add(file)
        saved = dict(check.counts)
        if file == NODES:
            check.nodes(nodes)
        elif file == EDGES:
            check.edges(tables[EDGES], node_ids)
        else:
            check.truth(tables[TRUTH], node_ids, labels)
        check.counts = saved
    findings = []
    for (file, rule), results in failed.items():
        spec = RULES_BY_KEY[f"{file}:{rule}"]
        o = check.obs.get(file, {}).get(rule)
        if o is not None and o.message:
            findings.append(Finding(file, rule, spec.severity, o.message, o.count, o.examples))
            continue
        count = sum(int(r.result.get("unexpected_count", 0) or 0) for r in results) or 1
        observed = [r.result.get("observed_value") for r in results
                    if "observed_value" in r.result]
        findings.append(Finding(file, rule, spec.severity,
                                f"{spec.description} (observed: "
                                f"{observed[0] if observed else count})", count, []))
    order = {FOLDER: 0, NODES: 1, EDGES: 2, TRUTH: 3}
    findings.sort(key=lambda f: (f.severity != "error", order.get(f.file, 9)))
    catalogue = [r for r in RULES_BY_KEY.values()]
    checked = {file: [r.name for r in catalogue if r.file == file and r.name in rules]
               for file, rules in checked.items()}
    return findings, counts, checked, stats, docs


def require_valid(path: str | Path | SnapshotFiles, **kwargs) -> ValidationReport:
    """:func:`validate_snapshot`, raising :class:`ContractViolation` when any error is found."""
    report = validate_snapshot(path, **kwargs)
    if not report.passed:
        raise ContractViolation(report)
    return report
