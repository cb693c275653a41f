"""The rule catalogue and its Great Expectations suites.

Every rule of the snapshot contract has a stable snake_case name, the file it applies to, a
severity, and a bound on one observed number (a count of offending rows, a row count, a class
count...). :mod:`data_contracts.contracts` measures those numbers with pyarrow (linear, vectorised,
never a Python object per row) and writes them as a one-row *observations* frame per file; this
module turns the catalogue into one Great Expectations suite per file (``oral.snapshot``,
``oral.nodes``, ``oral.edges``, ``oral.truth``), one expectation per rule on that rule's
observation column (``ExpectColumnMaxToBeBetween`` for an upper bound,
``ExpectColumnMinToBeBetween`` for a lower one), and lets GX decide which rules fail. The heavy
per-row work never goes through GX row-wise expectations, so a million-node snapshot validates in
seconds.

Great Expectations is imported only inside the functions that run it (it costs seconds to import),
and one ephemeral context is kept per process.
"""
from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass

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
_STATE: dict = {}


def import_gx():
    """Import Great Expectations, hiding the DeprecationWarnings its imports raise on Python 3.11+
    (``sre_constants``, ``sre_parse``) and the INFO line it logs for every ephemeral context (its
    config module pins its own logger to INFO, whatever the application configured)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import great_expectations as gx
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    return gx


def _batch_definition(file: str):
    """The per-process ephemeral context and one whole-dataframe batch definition per file."""
    if "context" not in _STATE:
        gx = import_gx()
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        _STATE["context"] = context
        _STATE["source"] = context.data_sources.add_pandas("oral_contract_observations")
        _STATE["batches"] = {}
    batches = _STATE["batches"]
    if file not in batches:
        asset = _STATE["source"].add_dataframe_asset(SUITE_NAMES[file])
        batches[file] = asset.add_batch_definition_whole_dataframe("observations")
    return batches[file]


def expectation_suite(file: str, config: ContractConfig = ContractConfig(),
                      rule_names: list[str] | None = None):
    """The GX suite of ``file`` (all its rules, or only ``rule_names``): one
    ``ExpectColumnMaxToBeBetween`` / ``ExpectColumnMinToBeBetween`` per rule on the rule's
    observation column, with the rule's severity (``critical`` for errors) and the rule in
    ``meta``."""
    gx = import_gx()
    from great_expectations.expectations.metadata_types import FailureSeverity

    wanted = None if rule_names is None else set(rule_names)
    expectations = []
    for rule in RULES:
        if rule.file != file or (wanted is not None and rule.name not in wanted):
            continue
        lo, hi = config.bound(rule.min_value), config.bound(rule.max_value)
        # aggregate expectations (one metric each) cost a third of a row-map expectation; on
        # the one-row observations frame the column's max and min are the observed value
        kind = (gx.expectations.ExpectColumnMaxToBeBetween if lo is None
                else gx.expectations.ExpectColumnMinToBeBetween)
        expectations.append(kind(
            column=rule.name, min_value=lo, max_value=hi,
            severity=(FailureSeverity.CRITICAL if rule.severity == ERROR
                      else FailureSeverity.WARNING),
            description=rule.description,
            meta={"rule": rule.name, "file": file, "severity": rule.severity}))
    return gx.ExpectationSuite(name=SUITE_NAMES[file], expectations=expectations)


def run_suites(observations: dict[str, dict[str, float]],
               config: ContractConfig) -> tuple[dict[str, bool], dict]:
    """Validate each file's observations (``{file: {rule: value}}``) with its GX suite.

    Returns ``({rule key: success}, statistics per suite)``.
    """
    import pandas as pd

    outcome: dict[str, bool] = {}
    stats: dict = {}
    with _LOCK:
        for file, values in observations.items():
            if not values:
                continue
            unknown = [name for name in values if f"{file}:{name}" not in RULES_BY_KEY]
            if unknown:
                raise KeyError(f"observations for unknown rules of {file}: {unknown}")
            frame = pd.DataFrame({name: [float(v)] for name, v in values.items()})
            suite = expectation_suite(file, config, list(values))
            batch = _batch_definition(file).get_batch(batch_parameters={"dataframe": frame})
            result = batch.validate(suite, result_format="BOOLEAN_ONLY")
            for res in result.results:
                exc = _raised(res.exception_info)
                if exc:  # a programming error in the observations, not bad data
                    raise RuntimeError(f"Great Expectations could not evaluate "
                                       f"{res.expectation_config.meta}: {exc}")
                meta = res.expectation_config.meta
                outcome[f"{meta['file']}:{meta['rule']}"] = bool(res.success)
            st = result.statistics
            stats[SUITE_NAMES[file]] = {
                "evaluated": int(st["evaluated_expectations"]),
                "successful": int(st["successful_expectations"]),
                "unsuccessful": int(st["unsuccessful_expectations"])}
    return outcome, stats


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
