"""Custom Great Expectations expectations for what GX 1.x has no expectation for.

Each is a GX expectation class (a ``BatchExpectation`` subclass with its own table metric,
evaluated by GX's pandas execution engine on the batch itself), so it is saved in the suites,
shown in Data Docs and can be reused by anyone with this module imported:

| expectation | rule(s) |
|---|---|
| :class:`ExpectTableColumnNamesToBeUnique` | ``column_names_unique`` |
| :class:`ExpectColumnArrowTypeToBe` | ``column_types``, ``endpoint_type_matches_node_id`` |
| :class:`ExpectColumnListsToBeNonEmpty` | ``features_nonzero_length`` |
| :class:`ExpectColumnListLengthsToBeUniform` | ``features_fixed_length`` (ragged lists) |
| :class:`ExpectColumnListLengthToBeAtMost` | ``feature_width_limit`` |
| :class:`ExpectColumnListValuesToBeFinite` | ``features_finite`` (NaN, infinity, null elements) |
| :class:`ExpectColumnListValuesToFitFloat32` | ``features_float32_range`` |
| :class:`ExpectColumnValuesToNotBeBlank` | ``label_not_blank`` |
| :class:`ExpectColumnValuesToHaveNoHiddenCharacters` | ``label_hidden_characters`` |
| :class:`ExpectColumnValuesToBeDistinctAfterStripping` | ``labels_distinct_after_stripping`` |
| :class:`ExpectColumnValueCountsToBeAtLeast` | ``min_labels_per_class`` |
| :class:`ExpectColumnPairValuesToDiffer` | ``no_self_loops`` |
| :class:`ExpectColumnValuesToBeInReference` | ``edge_endpoints_known``, ``truth_node_ids_known`` |
| :class:`ExpectReferenceToBeInColumn` | ``truth_covers_nodes`` |
| :class:`ExpectColumnValuesToMatchReferenceLabels` | ``labels_match_truth`` |

Why custom: GX's row-wise list expectations (``ExpectColumnValueLengthsToEqual``) call Python per
row (456 s on a million feature lists here), it has no expectation over list elements, and a
pandas batch cannot see another table. The metrics below run Arrow compute kernels over the
whole column (the batch frames hold ``pd.ArrowDtype`` columns, so no copy and no Python object
per row) and share one pass per column: the five feature rules read one metric that GX
computes once.

Cross-table rules (edges to unknown nodes, truth ids) compare a column with a *reference*: the
node ids (and labels) of the same snapshot's ``nodes.parquet``, which
:func:`data_contracts.suites.run_checkpoints` provides for the duration of a run
(:func:`references`). GX's SQL-only ``UnexpectedRowsExpectation`` would do this as a join, but
no SQLAlchemy dialect for DuckDB is installed and loading millions of edges into sqlite costs
more than the whole validation.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, ClassVar, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.core.metric_domain_types import MetricDomainTypes

from data_contracts.measures import bad_feature_rows, comparable_ids, hidden_labels, plain_column

_REFERENCES: contextvars.ContextVar[dict] = contextvars.ContextVar("oral_gx_references",
                                                                   default={})


@contextlib.contextmanager
def references(values: dict[str, pa.ChunkedArray]):
    """Make reference columns (``{"nodes.parquet:node_id": ids, ...}``) visible to the
    reference expectations while a validation runs."""
    token = _REFERENCES.set(dict(values))
    try:
        yield
    finally:
        _REFERENCES.reset(token)


def _reference(name: str) -> pa.ChunkedArray:
    refs = _REFERENCES.get()
    if name not in refs:
        raise KeyError(f"reference {name!r} is not available: run the suite through "
                       "data_contracts.validate_snapshot, which provides the snapshot's "
                       "nodes.parquet columns")
    return refs[name]


# ---------------------------------------------------------------------------------- arrow
def arrow_column(series: pd.Series) -> pa.ChunkedArray:
    """The Arrow data behind a batch column (zero-copy for ``pd.ArrowDtype`` columns)."""
    array = series.array
    if hasattr(array, "__arrow_array__"):
        data = array.__arrow_array__()
    else:
        data = pa.array(series.to_numpy(), from_pandas=True)
    return data if isinstance(data, pa.ChunkedArray) else pa.chunked_array([data])


def frame_from_arrow(table: pa.Table) -> pd.DataFrame:
    """A pandas batch frame over an Arrow table without copying: every column a
    ``pd.ArrowDtype`` column (dictionaries decoded), duplicate column names kept."""
    cols = []
    for col in table.columns:
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols.append(pd.Series(pd.arrays.ArrowExtensionArray(col), copy=False))
    frame = pd.concat(cols, axis=1, ignore_index=True) if cols else \
        pd.DataFrame(index=pd.RangeIndex(table.num_rows))
    frame.columns = list(table.column_names)
    return frame


def arrow_kind(t: pa.DataType) -> str:
    """``string``, ``integer``, ``number``, ``number_list``, ``null`` or the type's name."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return "null"
    if (pa.types.is_string(t) or pa.types.is_large_string(t)
            or getattr(pa.types, "is_string_view", lambda _: False)(t)):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "number"
    if ((pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))
            and (pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type))):
        return "number_list"
    return str(t)


def _table(execution_engine, metric_domain_kwargs) -> pd.DataFrame:
    df, _, _ = execution_engine.get_compute_domain(metric_domain_kwargs,
                                                   domain_type=MetricDomainTypes.TABLE)
    return df


def _column(df: pd.DataFrame, name: str) -> pa.ChunkedArray:
    return arrow_column(df[name])


def _common(a: pa.ChunkedArray, b: pa.ChunkedArray):
    return comparable_ids(plain_column(a), plain_column(b))


# ---------------------------------------------------------------------------------- metrics
class _Metric(TableMetricProvider):
    """A table metric computed from the batch frame by :meth:`compute`."""

    @classmethod
    def compute(cls, df: pd.DataFrame, **kwargs) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics,
                runtime_configuration):
        return cls.compute(_table(execution_engine, metric_domain_kwargs),
                           **metric_value_kwargs)


class ColumnArrowKind(_Metric):
    metric_name = "table.oral.column_kind"
    value_keys = ("column",)

    @classmethod
    def compute(cls, df, column):
        return arrow_kind(_column(df, column).type)


class FeatureListStats(_Metric):
    """One pass over a list column: null, empty and ragged rows, the most common length, rows
    with a NaN / infinite / null element, rows with a value beyond float32's range."""
    metric_name = "table.oral.list_stats"
    value_keys = ("column",)

    @classmethod
    def compute(cls, df, column):
        col = _column(df, column)
        lengths = pc.list_value_length(col)
        empty = int(pc.sum(pc.equal(lengths, 0)).as_py() or 0)
        counts = pc.value_counts(lengths.filter(pc.greater(lengths, 0)))
        width = 0
        if len(counts):
            freq = counts.field("counts").to_numpy()
            width = int(counts.field("values").to_numpy()[int(np.argmax(freq))])
        ragged = int(pc.sum(pc.and_(pc.greater(lengths, 0),
                                    pc.not_equal(lengths, width))).as_py() or 0)
        bad = {"nonfinite": 0, "float32_overflow": 0}
        for chunk in col.chunks:
            for problem, (n, _) in bad_feature_rows(chunk, 0).items():
                bad[problem] += n
        return {"rows": len(col), "null": col.null_count, "empty": empty, "width": width,
                "ragged": ragged, **bad}


class LabelHygiene(_Metric):
    """Rows whose label is empty or blank, rows whose label has hidden characters, and labelled
    rows whose label equals another once stripped (the same measures as the contract checker's:
    :func:`data_contracts.measures.hidden_labels`)."""
    metric_name = "table.oral.label_hygiene"
    value_keys = ("column",)

    @classmethod
    def compute(cls, df, column):
        labels = plain_column(_column(df, column))
        found = hidden_labels(labels, 0)
        blank = pc.sum(pc.equal(pc.utf8_trim_whitespace(labels), "")).as_py()
        return {"blank": int(blank or 0), "hidden": found.rows,
                "colliding": found.colliding_rows}


class SmallestValueCount(_Metric):
    metric_name = "table.oral.smallest_value_count"
    value_keys = ("column",)

    @classmethod
    def compute(cls, df, column):
        counts = pc.value_counts(plain_column(_column(df, column)).drop_null())
        if not len(counts):
            return None
        return int(pc.min(counts.field("counts")).as_py())


class EqualPairs(_Metric):
    metric_name = "table.oral.equal_pairs"
    value_keys = ("column_A", "column_B")

    @classmethod
    def compute(cls, df, column_A, column_B):
        a, b = _common(_column(df, column_A), _column(df, column_B))
        return int(pc.sum(pc.equal(a, b)).as_py() or 0)


class NotInReference(_Metric):
    metric_name = "table.oral.not_in_reference"
    value_keys = ("column", "reference")

    @classmethod
    def compute(cls, df, column, reference):
        col, ref = _common(_column(df, column), _reference(reference).drop_null())
        miss = pc.and_(pc.invert(pc.is_in(col, value_set=ref.combine_chunks())),
                       pc.is_valid(col))
        return int(pc.sum(miss).as_py() or 0)


class ReferenceNotInColumn(_Metric):
    metric_name = "table.oral.reference_not_in_column"
    value_keys = ("column", "reference")

    @classmethod
    def compute(cls, df, column, reference):
        col, ref = _common(_column(df, column), _reference(reference))
        miss = pc.and_(pc.invert(pc.is_in(ref, value_set=col.drop_null().combine_chunks())),
                       pc.is_valid(ref))
        return int(pc.sum(miss).as_py() or 0)


class ReferenceLabelMismatches(_Metric):
    metric_name = "table.oral.reference_label_mismatches"
    value_keys = ("id_column", "label_column", "reference_ids", "reference_labels")

    @classmethod
    def compute(cls, df, id_column, label_column, reference_ids, reference_labels):
        ids, ref_ids = _common(_column(df, id_column), _reference(reference_ids))
        labels = plain_column(_reference(reference_labels))
        labelled = pa.table({"node_id": ref_ids, "label": labels}).filter(pc.is_valid(labels))
        scored = pa.table({"node_id": ids,
                           "true_label": plain_column(_column(df, label_column))})
        joined = labelled.join(scored, "node_id", join_type="inner")
        return int(pc.sum(pc.not_equal(joined.column("label"),
                                       joined.column("true_label"))).as_py() or 0)


# ---------------------------------------------------------------------------------- expectations
class _OralExpectation(BatchExpectation):
    """Success when the metric's number is within bounds; the number is the observed value."""

    metric: ClassVar[str] = ""
    metric_dependencies: ClassVar[Tuple[str, ...]] = ()

    def _observed(self, metrics: Dict) -> Any:
        return metrics[self.metric]

    def _ok(self, observed: Any) -> bool:
        return observed == 0

    def _validate(self, metrics: Dict, runtime_configuration: Optional[dict] = None,
                  execution_engine=None):
        observed = self._observed(metrics)
        return {"success": bool(self._ok(observed)), "result": {"observed_value": observed}}


def _expectation(name: str, metric: str, keys: Tuple[str, ...], doc: str,
                 observe=None, ok=None, fields: Optional[dict] = None):
    """Build one expectation class (a pydantic model: ``fields`` name -> (type, default))."""
    annotations = {k: v[0] for k, v in (fields or {}).items()}
    namespace: dict = {"__doc__": doc, "__annotations__": annotations,
                       "metric": metric, "metric_dependencies": (metric,),
                       "success_keys": keys, "__module__": __name__}
    for k, (_, default) in (fields or {}).items():
        if default is not ...:
            namespace[k] = default
    if observe is not None:
        namespace["_observed"] = lambda self, metrics: observe(self, metrics[metric])
    if ok is not None:
        namespace["_ok"] = lambda self, observed: ok(self, observed)
    return type(name, (_OralExpectation,), namespace)


_Param = Union[int, float, dict, None]


def _kw(expectation, name: str):
    """A success (or domain) kwarg with suite parameters (``{"$PARAMETER": ...}``) already
    substituted, through the public ``expectation.configuration.kwargs``. The configuration
    leaves out values equal to their default, so a missing kwarg is the field's default (None
    for a required field, or a name that is no success or domain key), as GX's own
    (private) success-kwargs reader fills them in."""
    if name not in (*expectation.success_keys, *expectation.domain_keys):
        return None
    kwargs = expectation.configuration.kwargs
    if name in kwargs:
        return kwargs[name]
    field = type(expectation).__fields__.get(name)
    return None if field is None or field.required else field.default

ExpectColumnArrowTypeToBe = _expectation(
    "ExpectColumnArrowTypeToBe", "table.oral.column_kind", ("column", "kinds"),
    "The column's Arrow type is one of ``kinds`` (string, integer, number, number_list, null).",
    ok=lambda self, kind: kind in (_kw(self, "kinds") or []),
    fields={"column": (str, ...), "kinds": (Union[List[str], dict], ...)})

ExpectColumnListsToBeNonEmpty = _expectation(
    "ExpectColumnListsToBeNonEmpty", "table.oral.list_stats", ("column",),
    "No list in the column is empty (observed: empty lists).",
    observe=lambda self, s: s["empty"], fields={"column": (str, ...)})

ExpectColumnListLengthsToBeUniform = _expectation(
    "ExpectColumnListLengthsToBeUniform", "table.oral.list_stats", ("column",),
    "Every non-empty list has the most common length (observed: rows of another length).",
    observe=lambda self, s: s["ragged"], fields={"column": (str, ...)})

ExpectColumnListLengthToBeAtMost = _expectation(
    "ExpectColumnListLengthToBeAtMost", "table.oral.list_stats", ("column", "max_value"),
    "The most common list length is at most max_value (observed: that length).",
    observe=lambda self, s: s["width"], ok=lambda self, width: width <= _kw(self, "max_value"),
    fields={"column": (str, ...), "max_value": (_Param, ...)})

ExpectColumnListValuesToBeFinite = _expectation(
    "ExpectColumnListValuesToBeFinite", "table.oral.list_stats", ("column",),
    "Every list element is a finite number: no NaN, infinity or null (observed: rows with one).",
    observe=lambda self, s: s["nonfinite"], fields={"column": (str, ...)})

ExpectColumnListValuesToFitFloat32 = _expectation(
    "ExpectColumnListValuesToFitFloat32", "table.oral.list_stats", ("column",),
    "Every finite list element stays finite as float32 (observed: rows with one beyond "
    "float32's range).",
    observe=lambda self, s: s["float32_overflow"], fields={"column": (str, ...)})

ExpectColumnValuesToNotBeBlank = _expectation(
    "ExpectColumnValuesToNotBeBlank", "table.oral.label_hygiene", ("column",),
    "No non-null value is empty or only whitespace (observed: rows). GX's native "
    "ExpectColumnValuesToNotMatchRegex(regex=r'^\\s*$') says the same, but GX first drops the "
    "null rows of the whole batch (every column: a million feature lists), which costs more "
    "than the check.",
    observe=lambda self, s: s["blank"], fields={"column": (str, ...)})

ExpectColumnValuesToHaveNoHiddenCharacters = _expectation(
    "ExpectColumnValuesToHaveNoHiddenCharacters", "table.oral.label_hygiene", ("column",),
    "No value has leading or trailing whitespace or an invisible character (observed: rows).",
    observe=lambda self, s: s["hidden"], fields={"column": (str, ...)})

ExpectColumnValuesToBeDistinctAfterStripping = _expectation(
    "ExpectColumnValuesToBeDistinctAfterStripping", "table.oral.label_hygiene", ("column",),
    "No two values are equal once whitespace and invisible characters are removed (observed: "
    "rows carrying such values).",
    observe=lambda self, s: s["colliding"], fields={"column": (str, ...)})

ExpectColumnValueCountsToBeAtLeast = _expectation(
    "ExpectColumnValueCountsToBeAtLeast", "table.oral.smallest_value_count",
    ("column", "min_value"),
    "Every distinct non-null value occurs at least min_value times (observed: the rarest "
    "value's count).",
    ok=lambda self, smallest: smallest is None or smallest >= _kw(self, "min_value"),
    fields={"column": (str, ...), "min_value": (_Param, ...)})

ExpectColumnPairValuesToDiffer = _expectation(
    "ExpectColumnPairValuesToDiffer", "table.oral.equal_pairs", ("column_A", "column_B"),
    "column_A differs from column_B in every row (observed: rows where they are equal).",
    fields={"column_A": (str, ...), "column_B": (str, ...)})

ExpectColumnValuesToBeInReference = _expectation(
    "ExpectColumnValuesToBeInReference", "table.oral.not_in_reference", ("column", "reference"),
    "Every non-null value is in the reference column (another table of the snapshot; observed: "
    "rows with a value that is not).",
    fields={"column": (str, ...), "reference": (str, ...)})

ExpectReferenceToBeInColumn = _expectation(
    "ExpectReferenceToBeInColumn", "table.oral.reference_not_in_column", ("column", "reference"),
    "Every value of the reference column occurs in this column (observed: reference values "
    "that do not).",
    fields={"column": (str, ...), "reference": (str, ...)})

ExpectColumnValuesToMatchReferenceLabels = _expectation(
    "ExpectColumnValuesToMatchReferenceLabels", "table.oral.reference_label_mismatches",
    ("id_column", "label_column", "reference_ids", "reference_labels"),
    "Where the reference labels a row's id, label_column equals that label (observed: rows "
    "that differ).",
    fields={"id_column": (str, ...), "label_column": (str, ...),
            "reference_ids": (str, ...), "reference_labels": (str, ...)})


class ExpectTableColumnNamesToBeUnique(BatchExpectation):
    """No column name occurs twice (observed: the repeated names)."""

    metric_dependencies: ClassVar[Tuple[str, ...]] = ("table.columns",)
    success_keys: ClassVar[Tuple[str, ...]] = ()

    def _validate(self, metrics: Dict, runtime_configuration: Optional[dict] = None,
                  execution_engine=None):
        names = list(metrics["table.columns"])
        repeated = sorted({c for c in names if names.count(c) > 1})
        return {"success": not repeated, "result": {"observed_value": repeated}}
