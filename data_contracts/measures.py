"""Column measures that the contract checker (:mod:`data_contracts.contracts`) and the custom
Great Expectations metrics (:mod:`data_contracts.gx_expectations`) share: id kinds and decoded
columns, the bad values of feature lists, hidden characters in labels.

Only pyarrow and numpy: this module knows neither the rule catalogue (:mod:`data_contracts.suites`)
nor Great Expectations, so the checker and the expectations both import it and it imports
neither (the imports between the three go one way: contracts -> suites -> gx_expectations ->
measures).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


# ---------------------------------------------------------------------------------- ids
def id_kind(t: pa.DataType) -> str | None:
    """``"string"`` or ``"integer"`` for an id-like type (dictionaries by their values)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    return None


def _is_string_view(t: pa.DataType) -> bool:
    check = getattr(pa.types, "is_string_view", None)
    return bool(check and check(t))


def plain_column(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Dictionary-encoded columns decoded to their value type; null-typed columns as strings."""
    if pa.types.is_dictionary(col.type):
        return col.cast(col.type.value_type)
    if pa.types.is_null(col.type) or _is_string_view(col.type):
        return col.cast(pa.string())
    return col


def comparable_ids(a: pa.ChunkedArray,
                   b: pa.ChunkedArray) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """Two id columns of one kind cast to one type (int64 for integers, else string)."""
    if a.type == b.type:
        return a, b
    if id_kind(a.type) == "integer" and id_kind(b.type) == "integer":
        try:
            return a.cast(pa.int64()), b.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # uint64 beyond int64
            pass
    return a.cast(pa.string()), b.cast(pa.string())


# ---------------------------------------------------------------------------------- features
def as_float32(values: np.ndarray) -> np.ndarray:
    """``values`` as the float32 training will hold (overflow to +-inf, no warning)."""
    if values.dtype == np.float32:
        return values
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.float32)


def bad_feature_rows(chunk: pa.Array, k: int) -> dict[str, tuple[int, list[tuple]]]:
    """Rows of one feature chunk holding a bad value, per problem: ``"nonfinite"`` (a NaN,
    infinite or null value) and ``"float32_overflow"`` (finite as stored, infinite as float32).
    Each gives the number of rows and up to ``k`` of them as ``(row, position in the list,
    value)``. One vectorised pass over the values; row numbers come from cumulative list
    lengths, never from a Python loop over rows."""
    out: dict = {"nonfinite": (0, []), "float32_overflow": (0, [])}
    if chunk.null_count:  # null lists are reported by features_not_null; check the others
        valid = np.flatnonzero(chunk.is_valid().to_numpy(zero_copy_only=False))
        chunk = chunk.filter(chunk.is_valid())
    else:
        valid = None
    values = chunk.flatten()
    if pa.types.is_integer(values.type) and not values.null_count:
        return out  # every integer a list can hold (int64 < 1e19) is finite as float32
    v = values.to_numpy(zero_copy_only=False)  # nulls become NaN
    finite = np.isfinite(v)
    masks = {"nonfinite": ~finite}
    if v.dtype.itemsize > 4 and pa.types.is_floating(values.type):
        masks["float32_overflow"] = finite & ~np.isfinite(as_float32(v))
    lengths = offsets = None
    for problem, bad in masks.items():
        if not bad.any():
            continue
        if lengths is None:
            lengths = pc.list_value_length(chunk).to_numpy(zero_copy_only=False).astype(np.int64)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
        width = int(lengths[0]) if len(lengths) else 0
        if width and (lengths == width).all():
            per_row = bad.reshape(len(lengths), width).any(axis=1)
        else:
            running = np.zeros(len(bad) + 1, dtype=np.int64)
            np.cumsum(bad, out=running[1:])
            per_row = (running[offsets[1:]] - running[offsets[:-1]]) > 0
        rows = np.flatnonzero(per_row)
        examples = []
        for r in rows[:k].tolist():
            start = int(offsets[r])
            pos = int(np.argmax(bad[start:int(offsets[r + 1])]))
            value = values[start + pos].as_py()
            examples.append((int(valid[r]) if valid is not None else r, pos, value))
        out[problem] = (int(len(rows)), examples)
    return out


# ---------------------------------------------------------------------------------- labels
#: Characters a reader cannot see in a label, as an RE2 class: format characters (zero-width
#: space and joiners, byte-order mark, direction marks), control characters (tab, newline...),
#: line and paragraph separators, every space but U+0020 (no-break, ideographic...), and letters
#: that render blank (Hangul fillers, the blank Braille pattern).
_HIDDEN_RE2 = (r"[\p{Cf}\p{Cc}\p{Zl}\p{Zp}\x{115F}\x{1160}\x{3164}\x{FFA0}\x{2800}]"
               r"|[^\PZ ]")
_BLANK_LETTERS = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}


def _hidden(c: str) -> bool:
    """Whether one character is one of :data:`_HIDDEN_RE2`'s (unusual spaces included)."""
    cat = unicodedata.category(c)
    return (cat in ("Cf", "Cc", "Zl", "Zp") or (cat == "Zs" and c != " ")
            or c in _BLANK_LETTERS)


def visible_label(label: str | None) -> str | None:
    """A label quoted, its hidden characters spelled ``\\uXXXX``: ``'a\\u200b'``, ``'a '``."""
    if label is None:
        return None
    return "'" + "".join(f"\\u{ord(c):04x}" if _hidden(c) else c for c in label) + "'"


def _clean_label(label: str) -> str:
    """A label without its invisible characters, any white space (tab, no-break space...) as a
    plain space, stripped."""
    return "".join(" " if c.isspace() else c for c in label
                   if c.isspace() or not _hidden(c)).strip()


@dataclass
class HiddenLabels:
    """What :func:`hidden_labels` measures on a label column."""

    #: per row: the label has surrounding whitespace or an invisible character (null: no label)
    mask: pa.ChunkedArray
    #: how many rows the mask marks
    rows: int
    #: stripped label -> the distinct labels (two or more) that are this one once stripped
    groups: dict[str, list[str]] = field(default_factory=dict)
    #: labelled rows carrying a label of one of ``groups``
    colliding_rows: int = 0
    #: up to ``k`` groups: the stripped label, its labels (:func:`visible_label`), their row
    #: counts and first rows
    collisions: list[dict] = field(default_factory=list)


def hidden_labels(labels: pa.ChunkedArray, k: int) -> HiddenLabels:
    """Labels (a decoded string column, :func:`plain_column`) with surrounding whitespace or
    invisible characters, and labels that are one label once those are removed (``"a"`` and
    ``"a "``: two known classes), with up to ``k`` example groups."""
    hidden = pc.or_(pc.not_equal(pc.utf8_trim_whitespace(labels), labels),
                    pc.match_substring_regex(labels, _HIDDEN_RE2))
    n_hidden = int(pc.sum(hidden).as_py() or 0)
    # collisions: only a label that changes when cleaned can collide with another, so the
    # Python work is over the distinct hidden-character labels, not the rows
    groups: dict[str, list[str]] = {}
    if n_hidden:
        odd = pc.unique(labels.filter(hidden.fill_null(False))).to_pylist()
        cleaned = {label: _clean_label(label) for label in odd}
        distinct = pc.unique(labels.drop_null())
        present = pc.is_in(pa.array(list(cleaned.values()), pa.string()),
                           value_set=distinct.cast(pa.string())).to_pylist()
        for (label, key), known in zip(cleaned.items(), present):
            members = groups.setdefault(key, [key] if known else [])
            members.append(label)
        groups = {key: sorted(m) for key, m in groups.items() if len(m) > 1}
    n_rows, examples = 0, []
    if groups:
        members = pa.array([m for key in sorted(groups) for m in groups[key]], pa.string())
        where = pc.index_in(labels, value_set=members.cast(labels.type)).fill_null(-1)
        where = where.to_numpy(zero_copy_only=False) if isinstance(where, pa.Array) else \
            np.concatenate([c.to_numpy(zero_copy_only=False) for c in where.chunks] or
                           [np.zeros(0, np.int64)])
        n_rows = int((where >= 0).sum())
        sizes = np.bincount(where[where >= 0], minlength=len(members))
        seen, first = np.unique(where, return_index=True)
        first_row = dict(zip(seen.tolist(), first.tolist()))
        index = {m: i for i, m in enumerate(members.to_pylist())}
        for key in sorted(groups)[:k]:
            shown = groups[key][:k]
            examples.append({"stripped": key, "labels": [visible_label(m) for m in shown],
                             "labelled_nodes": [int(sizes[index[m]]) for m in shown],
                             "first_rows": [first_row[index[m]] for m in shown]})
    return HiddenLabels(hidden, n_hidden, groups, n_rows, examples)
