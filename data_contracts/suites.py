"""The rule catalogue and its Great Expectations suites, validation definitions and checkpoints.

Every rule of the snapshot contract has a stable snake_case name, the file it applies to, a
severity and a description (the names are what errors, reports and tests use). Each rule is one
or more GX expectations (``meta["rule"]`` names it), evaluated by GX on the data itself: a pandas
batch per table whose columns are ``pd.ArrowDtype`` views of the Arrow tables the reader parsed
(no copy). Native expectations wherever GX has one (columns present, non-null, unique ids, unique
``(src, dst)`` pairs, row counts, distinct label count, weight bounds); the custom
expectations of :mod:`data_contracts.gx_expectations` for what GX lacks (column types in Arrow's
terms, ragged or non-finite feature lists, float32 overflow, hidden characters in labels, edges
and truth rows naming unknown nodes) and for blank labels, where GX's native regex expectation
would first copy the whole node frame to drop the unlabelled rows. Bounds that callers tune are
suite parameters (``{"$PARAMETER": "min_labels_per_class"}``).

Suites: ``oral.snapshot`` (a one-row manifest of the folder: its name and date, which files are
present and readable), ``oral.nodes``, ``oral.edges``, ``oral.truth``. With a state folder,
:func:`gx_context` is a file-backed context under ``<state>/gx`` holding the suites, one
validation definition and one checkpoint per table (the edge
table also has ``oral.edges.without_weight`` for batches without the optional weight column, see
:data:`OPTIONAL_COLUMNS`), the validation results and the Data Docs site; without one, an
ephemeral context with the same objects and no Data Docs.

Great Expectations is imported only inside the functions that run it (it costs seconds to import).
"""
from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

from data_contracts.docs_index import write_offline_index
from data_contracts.report import ERROR, WARNING
from data_contracts.snapshots import EDGES, NODES, TRUTH

FOLDER = "(folder)"
"""The ``file`` of rules about the snapshot folder itself (its existence, its name and date)."""

FILES = (FOLDER, NODES, EDGES, TRUTH)
SUITE_NAMES = {FOLDER: "oral.snapshot", NODES: "oral.nodes", EDGES: "oral.edges",
               TRUTH: "oral.truth"}


@dataclass(frozen=True)
class Rule:
    """One rule: the observed number must lie in ``[min_value, max_value]`` (None: unbounded).

    A bound given as a string names a :class:`ContractConfig` field (``"min_labels_per_class"``).
    """

    file: str
    name: str
    severity: str
    description: str
    min_value: float | str | None = None
    max_value: float | str | None = None

    @property
    def key(self) -> str:
        return f"{self.file}:{self.name}"


@dataclass(frozen=True)
class ContractConfig:
    """Tunable bounds of the contract."""

    min_labels_per_class: int = 3
    min_known_classes: int = 2
    max_feature_width: int = 65_536
    max_examples: int = 5

    def bound(self, value: float | str | None) -> float | None:
        return getattr(self, value) if isinstance(value, str) else value


def _rules() -> list[Rule]:
    none = dict(max_value=0)
    present = dict(min_value=1)
    r = Rule
    return [
        # the folder
        r(FOLDER, "snapshot_folder_exists", ERROR, "the snapshot folder exists", **present),
        r(FOLDER, "snapshot_date_valid", ERROR,
          "the folder is named snapshot=YYYY-MM-DD with a real date", **present),
        r(FOLDER, "snapshot_date_order", WARNING,
          "the snapshot is not older than the last processed snapshot of the graph "
          "(observed: days after the last processed date)", min_value=0),
        # nodes.parquet
        r(NODES, "file_present", ERROR, "nodes.parquet exists", **present),
        r(NODES, "readable_parquet", ERROR, "nodes.parquet is a readable Parquet file", **present),
        r(NODES, "column_names_unique", ERROR, "no column name occurs twice", **none),
        r(NODES, "required_columns", ERROR, "columns node_id, features, label are present", **none),
        r(NODES, "column_types", ERROR, "node_id string or integer; features a list of numbers; "
          "label string (null: unlabelled)", **none),
        r(NODES, "nodes_not_empty", ERROR, "the node table has at least one row", **present),
        r(NODES, "node_id_not_null", ERROR, "no node id is null", **none),
        r(NODES, "node_id_unique", ERROR, "no node id repeats (observed: rows with a repeated id)",
          **none),
        r(NODES, "features_not_null", ERROR, "no feature list is null", **none),
        r(NODES, "features_nonzero_length", ERROR, "no feature list is empty", **none),
        r(NODES, "features_fixed_length", ERROR,
          "every feature list has the same length (observed: rows of another length than the "
          "most common one)", **none),
        r(NODES, "features_finite", ERROR,
          "every feature value is a finite number: no NaN, no infinity, no null element "
          "(observed: rows with such a value)", **none),
        r(NODES, "features_float32_range", ERROR,
          "every feature value stays finite as float32, the type training uses: a wider value "
          "beyond float32's range (a float64 1e300) would become infinite (observed: rows with "
          "such a value)", **none),
        r(NODES, "feature_width_limit", ERROR,
          "the feature width is at most max_feature_width (a guard against absurd inputs)",
          max_value="max_feature_width"),
        r(NODES, "feature_names_match", WARNING,
          "the oral.feature_names schema metadata, when present, is a JSON list with one name "
          "per feature", **none),
        r(NODES, "label_not_blank", ERROR,
          "no label is an empty or all-blank string (null marks an unlabelled node)", **none),
        r(NODES, "label_hidden_characters", WARNING,
          "no label has leading or trailing whitespace or an invisible character (zero-width, "
          "control, format or unusual space characters)", **none),
        r(NODES, "labels_distinct_after_stripping", WARNING,
          "no two labels are equal once surrounding whitespace and invisible characters are "
          "removed (observed: labelled rows carrying such labels)", **none),
        r(NODES, "min_known_classes", ERROR,
          "at least min_known_classes distinct labels (observed: labelled classes)",
          min_value="min_known_classes"),
        r(NODES, "min_labels_per_class", ERROR,
          "every labelled class has at least min_labels_per_class labelled nodes (observed: the "
          "smallest class)", min_value="min_labels_per_class"),
        r(NODES, "unlabelled_nodes_present", WARNING,
          "at least one node is unlabelled (else there is nothing to discover)", **present),
        # edges.parquet
        r(EDGES, "file_present", ERROR, "edges.parquet exists", **present),
        r(EDGES, "readable_parquet", ERROR, "edges.parquet is a readable Parquet file", **present),
        r(EDGES, "column_names_unique", ERROR, "no column name occurs twice", **none),
        r(EDGES, "required_columns", ERROR, "columns src and dst are present", **none),
        r(EDGES, "column_types", ERROR,
          "src and dst string or integer; weight (optional) numeric", **none),
        r(EDGES, "edges_not_empty", WARNING, "the edge table has at least one row", **present),
        r(EDGES, "endpoint_type_matches_node_id", ERROR,
          "src and dst are the same kind (string or integer) as nodes.parquet node_id", **none),
        r(EDGES, "edge_endpoints_not_null", ERROR, "no src or dst is null", **none),
        r(EDGES, "edge_endpoints_known", ERROR, "every src and dst is a node id of nodes.parquet",
          **none),
        r(EDGES, "no_self_loops", WARNING, "no edge joins a node to itself", **none),
        r(EDGES, "no_duplicate_edges", WARNING,
          "no (src, dst) pair repeats (observed: rows repeating an earlier pair)", **none),
        r(EDGES, "weight_positive_finite", ERROR,
          "every weight, when the column exists, is finite, not null, and > 0, also as the "
          "float32 training uses", **none),
        # truth.parquet (optional; scoring only)
        r(TRUTH, "readable_parquet", ERROR, "truth.parquet is a readable Parquet file", **present),
        r(TRUTH, "column_names_unique", ERROR, "no column name occurs twice", **none),
        r(TRUTH, "required_columns", ERROR, "columns node_id and true_label are present", **none),
        r(TRUTH, "column_types", ERROR, "node_id the same kind as nodes.parquet node_id; "
          "true_label string", **none),
        r(TRUTH, "node_id_not_null", ERROR, "no truth node id is null", **none),
        r(TRUTH, "node_id_unique", ERROR, "no truth node id repeats", **none),
        r(TRUTH, "truth_node_ids_known", ERROR, "every truth node id is a node of nodes.parquet",
          **none),
        r(TRUTH, "true_label_not_null", WARNING, "every truth row has a true label", **none),
        r(TRUTH, "truth_covers_nodes", WARNING,
          "every node has a truth row (observed: nodes without one)", **none),
        r(TRUTH, "labels_match_truth", WARNING,
          "every labelled node's label equals its true label", **none),
    ]


RULES: tuple[Rule, ...] = tuple(_rules())
RULES_BY_KEY: dict[str, Rule] = {rule.key: rule for rule in RULES}
assert len(RULES_BY_KEY) == len(RULES), "rule names repeat within a file"


# ---------------------------------------------------------------------------------- GX
_LOCK = threading.Lock()
_CONTEXTS: dict = {}
#: per context root: the suites whose Data Docs pages this process has built (the suites are
#: written once per process, so their pages once too)
_SUITE_PAGES: dict = {}

#: The Data Docs index lists the latest this many validation results (four a snapshot: a month
#: of nights); older result pages stay on disk, unlisted. GX reads every result it lists to
#: render the index, once a night: unbounded, the nightly build grew with the history (0.5 s
#: after one validation, 1.4 s after forty on a small graph).
DATA_DOCS_INDEX_RESULTS = 120
#: the file-backed context's Data Docs site (GX's default name)
DATA_DOCS_SITE = "local_site"

#: Expectation parameters of the suites and their defaults (ContractConfig fields, plus the kinds
#: of id that edges and truth must share with nodes.parquet node_id).
PARAMETERS = ("min_labels_per_class", "min_known_classes", "max_feature_width", "node_id_kinds")
ID_KINDS = ["string", "integer"]
TEXT_KINDS = ["string", "null"]
#: Snapshot manifest columns (the oral.snapshot batch, one row).
MANIFEST = ("folder", "date", "folder_exists", "days_after_last_processed", "nodes_present",
            "nodes_readable", "edges_present", "edges_readable", "truth_readable")
NODES_REF, LABELS_REF = "nodes.parquet:node_id", "nodes.parquet:label"
#: Result formats of the checkpoints. GX evaluates a row-wise (map) expectation once per part of
#: a SUMMARY result (the count, the partial list, its index list, its value counts): on the
#: million-row tables that is 4 passes of pandas ``duplicated`` over 5M edges, so the big tables
#: ask for BOOLEAN_ONLY (one pass); the example rows of a failed rule come from the report.
RESULT_FORMATS = {None: {"result_format": "SUMMARY", "partial_unexpected_count": 5},
                  NODES: "BOOLEAN_ONLY", EDGES: "BOOLEAN_ONLY"}


def import_gx():
    """Import Great Expectations, hiding the DeprecationWarnings its imports raise on Python 3.11+
    (``sre_constants``, ``sre_parse``) and the INFO line it logs for every ephemeral context (its
    config module pins its own logger to INFO, whatever the application configured)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import great_expectations as gx
        import data_contracts.gx_expectations  # noqa: F401  (registers the custom expectations)
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    return gx


def _specs(file: str) -> list[tuple[str, object, dict]]:
    """``(rule, expectation, gating)`` of one suite. Gating says when a result counts (else the
    rule was not checked: what it needs is missing): ``present`` columns that must occur once,
    ``needs`` columns that must also have passed their type check, ``rows`` a non-empty table,
    ``after`` rules that must have passed, ``nonnull`` manifest columns that must hold a value,
    ``refs`` the node id reference."""
    gx = import_gx()
    import data_contracts.gx_expectations as ox

    E = gx.expectations
    P = lambda name: {"$PARAMETER": name}  # noqa: E731
    out: list = []

    def add(rule, expectation, **gate):
        out.append((rule, expectation, gate))

    if file == FOLDER:
        add("snapshot_folder_exists", E.ExpectColumnValuesToBeInSet(
            column="folder_exists", value_set=[True]))
        add("snapshot_date_valid", E.ExpectColumnValuesToMatchRegex(
            column="folder", regex=r"^snapshot=\d{4}-\d{2}-\d{2}$"))
        add("snapshot_date_valid", E.ExpectColumnValuesToMatchStrftimeFormat(
            column="date", strftime_format="%Y-%m-%d"), nonnull=["date"])
        add("snapshot_date_order", E.ExpectColumnValuesToBeBetween(
            column="days_after_last_processed", min_value=0),
            nonnull=["days_after_last_processed"])
        for name, key in ((NODES, "nodes"), (EDGES, "edges")):
            add(f"{name}:file_present", E.ExpectColumnValuesToBeInSet(
                column=f"{key}_present", value_set=[True]), nonnull=[f"{key}_present"])
            add(f"{name}:readable_parquet", E.ExpectColumnValuesToBeInSet(
                column=f"{key}_readable", value_set=[True]), nonnull=[f"{key}_readable"])
        add(f"{TRUTH}:readable_parquet", E.ExpectColumnValuesToBeInSet(
            column="truth_readable", value_set=[True]), nonnull=["truth_readable"])
        return out

    columns = {NODES: ("node_id", "features", "label"), EDGES: ("src", "dst"),
               TRUTH: ("node_id", "true_label")}[file]
    add("column_names_unique", ox.ExpectTableColumnNamesToBeUnique())
    for c in columns:
        add("required_columns", E.ExpectColumnToExist(column=c))
    if file == NODES:
        for c, kinds in (("node_id", ID_KINDS), ("features", ["number_list"]),
                         ("label", TEXT_KINDS)):
            add("column_types", ox.ExpectColumnArrowTypeToBe(column=c, kinds=kinds),
                present=[c])
        add("nodes_not_empty", E.ExpectTableRowCountToBeBetween(min_value=1))
        rows = dict(rows=True)
        add("node_id_not_null", E.ExpectColumnValuesToNotBeNull(column="node_id"),
            needs=["node_id"], **rows)
        add("node_id_unique", E.ExpectColumnValuesToBeUnique(column="node_id"),
            needs=["node_id"], **rows)
        f = dict(needs=["features"], **rows)
        add("features_not_null", E.ExpectColumnValuesToNotBeNull(column="features"), **f)
        add("features_nonzero_length", ox.ExpectColumnListsToBeNonEmpty(column="features"), **f)
        add("features_fixed_length", ox.ExpectColumnListLengthsToBeUniform(column="features"),
            **f)
        add("features_finite", ox.ExpectColumnListValuesToBeFinite(column="features"), **f)
        add("features_float32_range", ox.ExpectColumnListValuesToFitFloat32(column="features"),
            **f)
        add("feature_width_limit", ox.ExpectColumnListLengthToBeAtMost(
            column="features", max_value=P("max_feature_width")), **f)
        lab = dict(needs=["label"], **rows)
        # custom, not GX's ExpectColumnValuesToNotMatchRegex(regex=r"^\s*$"): before a row-wise
        # expectation GX drops the null rows of the whole frame, and with half the nodes
        # unlabelled that copies a million feature lists (0.5 to 1.3 s at 1M nodes)
        add("label_not_blank", ox.ExpectColumnValuesToNotBeBlank(column="label"), **lab)
        add("label_hidden_characters",
            ox.ExpectColumnValuesToHaveNoHiddenCharacters(column="label"), **lab)
        add("labels_distinct_after_stripping",
            ox.ExpectColumnValuesToBeDistinctAfterStripping(column="label"), **lab)
        add("min_known_classes", E.ExpectColumnUniqueValueCountToBeBetween(
            column="label", min_value=P("min_known_classes")), **lab)
        add("min_labels_per_class", ox.ExpectColumnValueCountsToBeAtLeast(
            column="label", min_value=P("min_labels_per_class")), nonempty_labels=True, **lab)
        add("unlabelled_nodes_present", E.ExpectColumnProportionOfNonNullValuesToBeBetween(
            column="label", max_value=1, strict_max=True), **lab)
    elif file == EDGES:
        for c in ("src", "dst"):
            add("column_types", ox.ExpectColumnArrowTypeToBe(column=c, kinds=ID_KINDS),
                present=[c])
        add("column_types", ox.ExpectColumnArrowTypeToBe(column="weight", kinds=[
            "integer", "number"]), present=["weight"])
        add("edges_not_empty", E.ExpectTableRowCountToBeBetween(min_value=1))
        ends = dict(needs=["src", "dst"], rows=True)
        for c in ("src", "dst"):
            add("endpoint_type_matches_node_id", ox.ExpectColumnArrowTypeToBe(
                column=c, kinds=P("node_id_kinds")), refs=True, **ends)
        for c in ("src", "dst"):
            add("edge_endpoints_not_null", E.ExpectColumnValuesToNotBeNull(column=c), **ends)
        for c in ("src", "dst"):
            add("edge_endpoints_known", ox.ExpectColumnValuesToBeInReference(
                column=c, reference=NODES_REF), refs=True,
                after=["endpoint_type_matches_node_id"], **ends)
        add("no_self_loops", ox.ExpectColumnPairValuesToDiffer(column_A="src", column_B="dst"),
            same_kind=True, **ends)
        add("no_duplicate_edges", E.ExpectCompoundColumnsToBeUnique(column_list=["src", "dst"]),
            **ends)
        w = dict(needs=["weight"], rows=True)
        add("weight_positive_finite", E.ExpectColumnValuesToNotBeNull(column="weight"), **w)
        # as the float32 training holds: above its largest value becomes inf, below half its
        # smallest subnormal becomes 0; NaN fails every comparison
        add("weight_positive_finite", E.ExpectColumnValuesToBeBetween(
            column="weight", min_value=F32_TINY / 2, max_value=F32_MAX, strict_min=True), **w)
    else:
        add("column_types", ox.ExpectColumnArrowTypeToBe(
            column="node_id", kinds=P("node_id_kinds")), present=["node_id"])
        add("column_types", ox.ExpectColumnArrowTypeToBe(column="true_label", kinds=TEXT_KINDS),
            present=["true_label"])
        add("node_id_not_null", E.ExpectColumnValuesToNotBeNull(column="node_id"),
            needs=["node_id"])
        add("node_id_unique", E.ExpectColumnValuesToBeUnique(column="node_id"),
            needs=["node_id"])
        add("true_label_not_null", E.ExpectColumnValuesToNotBeNull(column="true_label"),
            needs=["true_label"])
        add("truth_node_ids_known", ox.ExpectColumnValuesToBeInReference(
            column="node_id", reference=NODES_REF), needs=["node_id"], refs=True)
        add("truth_covers_nodes", ox.ExpectReferenceToBeInColumn(
            column="node_id", reference=NODES_REF), needs=["node_id"], refs=True)
        add("labels_match_truth", ox.ExpectColumnValuesToMatchReferenceLabels(
            id_column="node_id", label_column="true_label", reference_ids=NODES_REF,
            reference_labels=LABELS_REF), needs=["node_id", "true_label"], refs=True,
            labels=True)
    return out


#: The largest finite float32 and its smallest subnormal.
F32_MAX = 3.4028234663852886e38
F32_TINY = 1.401298464324817e-45

#: Rules that stay outside GX: what they check is not in any batch (Parquet schema metadata).
OUTSIDE_GX = {(NODES, "feature_names_match")}

#: Optional columns. A batch without one is validated by a variant of its suite that leaves out
#: the expectations on that column (``oral.edges.without_weight``: the same expectations less
#: the weight ones, whose rule is not checked then anyway). With the full suite GX would compute
#: metrics of a column the batch lacks; each such failure discards the whole round of metrics
#: being resolved with it and GX retries the round three times, so on an unweighted 5M-edge
#: table the ``(src, dst)`` uniqueness pass ran 4 to 7 times (about 1 s each).
OPTIONAL_COLUMNS = {EDGES: "weight"}


def suite_name(file: str, without: str | None = None) -> str:
    """The suite (and checkpoint) name of ``file``, or of its variant without optional column
    ``without`` (:data:`OPTIONAL_COLUMNS`)."""
    return SUITE_NAMES[file] + (f".without_{without}" if without else "")


def _variants(file: str) -> tuple[str | None, ...]:
    return (None, OPTIONAL_COLUMNS[file]) if file in OPTIONAL_COLUMNS else (None,)


def expectation_suite(file: str, config: ContractConfig | None = None,
                      rule_names: list[str] | None = None, without: str | None = None):
    """The GX suite of ``file`` (``FOLDER``, ``NODES``, ``EDGES``, ``TRUTH``): every expectation
    with ``meta`` naming its rule, its file, its severity and when its result counts (see
    :func:`_specs`); ``rule_names`` keeps only those rules. Bounds are suite parameters, so the
    saved suite does not depend on ``config``. ``without``: an optional column of ``file``
    whose expectations are left out (the suite :func:`suite_name` ``(file, without)``)."""
    gx = import_gx()
    from great_expectations.expectations.metadata_types import FailureSeverity

    wanted = None if rule_names is None else set(rule_names)
    expectations = []
    for name, expectation, gate in _specs(file):
        target, rule_name = (name.split(":", 1) if ":" in name else (file, name))
        if wanted is not None and rule_name not in wanted:
            continue
        if without is not None and without in (gate.get("present", []) + gate.get("needs", [])):
            continue
        rule = RULES_BY_KEY[f"{target}:{rule_name}"]
        expectation.severity = (FailureSeverity.CRITICAL if rule.severity == ERROR
                                else FailureSeverity.WARNING)
        expectation.description = f"{rule_name}: {rule.description}"
        expectation.meta = {"rule": rule_name, "file": target, "severity": rule.severity,
                            "gate": gate}
        expectations.append(expectation)
    return gx.ExpectationSuite(name=suite_name(file, without), expectations=expectations)


def gx_context(root: str | Path | None = None):
    """The GX context (file-backed under ``<root>/gx`` when ``root`` is given, else ephemeral;
    one per process and root) with the suites, one pandas data source ``oral`` with one asset
    per table, and per table a validation definition and a checkpoint of the same name
    (``oral.nodes``...), with no action: :func:`run_checkpoints` builds the Data Docs once for all
    of a snapshot's tables (file-backed only; an ``UpdateDataDocsAction`` per checkpoint rebuilt
    the site's index once per table).
    Suites, definitions and checkpoints are written from the code when the context is first
    opened in a process, so the saved ones follow the code's version."""
    key = str(Path(root).resolve()) if root is not None else None
    # a cached file-backed context whose folder was removed meanwhile is opened afresh
    if key in _CONTEXTS and (key is None or (Path(key) / "gx" / "great_expectations.yml")
                             .is_file()):
        return _CONTEXTS[key]
    gx = import_gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX fingerprints every pandas batch under 1 GB with an md5 of the whole frame (pickled when
    # it holds lists: 2.3 s at a million nodes); the snapshot's content hash names it already
    from great_expectations.execution_engine import pandas_execution_engine

    pandas_execution_engine.HASH_THRESHOLD = 0
    if key is None:
        context = gx.get_context(mode="ephemeral")
    else:
        Path(key).mkdir(parents=True, exist_ok=True)
        context = gx.get_context(mode="file", project_root_dir=key)
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    try:
        source = context.data_sources.get("oral")
    except (KeyError, ValueError, LookupError):
        source = context.data_sources.add_pandas("oral")
    for file in FILES:
        name = SUITE_NAMES[file]
        try:
            asset = source.get_asset(name)
        except LookupError:
            asset = source.add_dataframe_asset(name)
        try:
            batch = asset.get_batch_definition("whole table")
        except (KeyError, LookupError, ValueError):
            batch = asset.add_batch_definition_whole_dataframe("whole table")
        for without in _variants(file):  # one asset, a suite per variant
            suite = context.suites.add_or_update(expectation_suite(file, without=without))
            definition = context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=suite.name, data=batch, suite=suite))
            context.checkpoints.add_or_update(gx.Checkpoint(
                name=suite.name, validation_definitions=[definition], actions=[],
                result_format=RESULT_FORMATS.get(file, RESULT_FORMATS[None])))
    if key is not None:
        bound_data_docs_index(context)
    _CONTEXTS[key] = context
    _SUITE_PAGES[key] = set()
    return context


def bound_data_docs_index(context, limit: int | None = None) -> None:
    """Make the Data Docs index list the latest ``limit`` validation results
    (:data:`DATA_DOCS_INDEX_RESULTS`), so that a night's build does not grow with the history;
    the site's configuration is saved only when it changes."""
    limit = DATA_DOCS_INDEX_RESULTS if limit is None else limit
    sites = dict(context.variables.data_docs_sites or {})
    site = sites.get(DATA_DOCS_SITE)
    if site is None:
        return
    index = dict(site.get("site_index_builder") or {"class_name": "DefaultSiteIndexBuilder"})
    if index.get("validation_results_limit") == limit:
        return
    index["validation_results_limit"] = limit
    context.update_data_docs_site(DATA_DOCS_SITE, dict(site) | {"site_index_builder": index})


@contextlib.contextmanager
def _context_lock(root: str | Path | None):
    """One writer at a time on a file-backed context (GX's stores write files in place)."""
    if root is None:
        yield
        return
    import fcntl

    path = Path(root) / "gx"
    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".oral.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class ExpectationOutcome:
    """One evaluated expectation: its rule, success, GX's result dict, and whether it counts."""

    file: str
    rule: str
    success: bool
    result: dict
    counts: bool
    expectation_type: str


def run_checkpoints(frames: dict, parameters: dict, references: dict, gates: dict,
                    root: str | Path | None = None, run_name: str = "snapshot"):
    """Run the checkpoint of each table in ``frames`` (``{file: pandas frame}``) with the suite
    parameters, the reference columns (:func:`data_contracts.gx_expectations.references`) and
    the gating facts of each table (``gates[file]``: ``present``, ``usable`` column sets,
    ``rows``, ``nonnull``, ``same_kind``, ``nonempty_labels``; ``usable`` grows by each column
    whose type check passes, and the node table's run sets ``refs`` and ``labels`` of the others).

    Returns ``(outcomes, statistics per suite, Data Docs page per suite or {})``; with ``root``
    the Data Docs are built once, for all the tables run (:func:`build_data_docs`). An
    expectation that raised although everything it needs is there is a programming error:
    RuntimeError."""
    import data_contracts.gx_expectations as ox
    from great_expectations.core.run_identifier import RunIdentifier

    run_id = RunIdentifier(run_name=run_name)
    outcomes: list[ExpectationOutcome] = []
    stats: dict = {}
    docs: dict = {}
    validated: dict = {}  # suite name -> its validation result's identifier
    with _LOCK, _context_lock(root):
        context = gx_context(root)
        with ox.references(references):
            for file in FILES:
                if file not in frames:
                    continue
                # a batch without an optional column: the suite variant without its expectations
                optional = OPTIONAL_COLUMNS.get(file)
                without = (optional if optional and optional not in frames[file].columns
                           else None)
                checkpoint = context.checkpoints.get(suite_name(file, without))
                result = checkpoint.run(batch_parameters={"dataframe": frames[file]},
                                        expectation_parameters=parameters, run_id=run_id)
                (identifier, validation), = result.run_results.items()
                status: dict = {}  # rule -> all counted expectations so far passed
                facts = gates.get(file, {})
                evaluated = []
                # GX returns results in its own order; types first (they make columns usable),
                # then the rules others wait for ("after"), then the rest
                firsts = {r for res in validation.results
                          for r in (res.expectation_config.meta.get("gate") or {}).get("after", [])}
                ranked = sorted(validation.results, key=lambda res: (
                    0 if res.expectation_config.meta["rule"] == "column_types" else
                    1 if res.expectation_config.meta["rule"] in firsts else 2))
                for res in ranked:
                    cfg = res.expectation_config
                    meta = cfg.meta
                    counts = _counts(meta.get("gate") or {}, facts, status)
                    exc = _raised(res.exception_info)
                    if exc and counts:
                        raise RuntimeError(f"Great Expectations could not evaluate "
                                           f"{cfg.type} for rule {meta.get('rule')}: {exc}")
                    outcome = ExpectationOutcome(meta["file"], meta["rule"], bool(res.success),
                                                 dict(res.result or {}), counts and not exc,
                                                 cfg.type)
                    evaluated.append(outcome)
                    if outcome.counts:
                        status[outcome.rule] = status.get(outcome.rule, True) and outcome.success
                        if outcome.rule == "column_types" and outcome.success:
                            facts.setdefault("usable", set()).add(cfg.kwargs["column"])
                if file == NODES:  # what the edge and truth rules need from the node table
                    usable = facts.get("usable", set())
                    refs = "node_id" in usable and bool(facts.get("rows"))
                    for other in (EDGES, TRUTH):
                        gates.setdefault(other, {}).update(
                            refs=refs, labels=refs and "label" in usable)
                outcomes.extend(evaluated)
                st = validation.statistics
                stats[SUITE_NAMES[file]] = {
                    "evaluated": int(st["evaluated_expectations"]),
                    "successful": int(st["successful_expectations"]),
                    "unsuccessful": int(st["unsuccessful_expectations"])}
                validated[SUITE_NAMES[file]] = identifier
        if root is not None and validated:
            docs = build_data_docs(context, validated,
                                   _SUITE_PAGES.setdefault(str(Path(root).resolve()), set()))
    return outcomes, stats, docs


def build_data_docs(context, validated: dict, suites_built: set) -> dict:
    """The Data Docs pages of one snapshot's validation results (``validated``: suite name ->
    result identifier), of their suites not yet in ``suites_built`` (added to it), and the site's
    index, in one incremental build, and the site's offline index
    (:func:`data_contracts.docs_index.write_offline_index`); returns ``{suite name: local path
    of its result's page}``."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier)

    suites = {identifier.expectation_suite_identifier.name for identifier in validated.values()}
    ids = list(validated.values()) + [ExpectationSuiteIdentifier(name=name)
                                      for name in sorted(suites - suites_built)]
    context.build_data_docs(resource_identifiers=ids)
    suites_built |= suites
    # GX's index lists the results with scripts from public CDNs: one that needs no network too
    write_offline_index(Path(context.root_directory), DATA_DOCS_INDEX_RESULTS)
    docs = {}
    for name, identifier in validated.items():
        urls = context.get_docs_sites_urls(resource_identifier=identifier)
        if urls and urls[0].get("site_url"):
            docs[name] = _local_path(urls[0]["site_url"])
    return docs


def _local_path(url: str) -> str:
    """A Data Docs ``file://`` URL as a plain path (what the CLI prints and the flow logs)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(url)
    return unquote(parsed.path) if parsed.scheme == "file" else url


def _counts(gate: dict, facts: dict, status: dict) -> bool:
    """Whether an expectation's result counts, given its gate and the table's facts."""
    present, usable = facts.get("present", set()), facts.get("usable", set())
    if any(c not in present for c in gate.get("present", [])):
        return False
    if any(c not in usable for c in gate.get("needs", [])):
        return False
    if gate.get("rows") and not facts.get("rows"):
        return False
    if any(not facts.get("nonnull", {}).get(c) for c in gate.get("nonnull", [])):
        return False
    if gate.get("refs") and not facts.get("refs"):
        return False
    if gate.get("labels") and not facts.get("labels"):
        return False
    if gate.get("same_kind") and not facts.get("same_kind"):
        return False
    if gate.get("nonempty_labels") and not facts.get("nonempty_labels"):
        return False
    return all(status.get(rule) for rule in gate.get("after", []))


def _raised(info) -> str | None:
    """The message of an exception GX caught while evaluating an expectation (its
    ``exception_info`` is either flat or keyed by metric), else None."""
    if not isinstance(info, dict):
        return None
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    for value in info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message"))
    return None
