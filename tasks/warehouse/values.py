"""Coercion of the values a run hands to the warehouse into what DuckDB stores: dates, naive UTC
timestamps, numbers (NaN and infinities as NULL), lists of strings, ``top_features`` structs and
``scores`` maps; JSON text, as schema version 1 stored it, is parsed first. A value that does not
fit raises :class:`~tasks.warehouse.errors.WarehouseError` naming the field.

Values always travel as bound parameters or registered Arrow tables, never inside SQL text.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from typing import Iterable, Mapping

import numpy as np

from .errors import WarehouseError


def as_date(value) -> dt.date | None:
    """A date from a date, a datetime (its date) or ISO text; None stays None."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def as_timestamp(value) -> dt.datetime | None:
    """A naive UTC timestamp (aware values are converted to UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def utc_now() -> dt.datetime:
    """The current time as a naive UTC timestamp, to the second."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def _parsed(value, what: str):
    """``value``, or the value of its JSON text when it is a string (as version 1 stored it)."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError as err:
            raise WarehouseError(f"{what}: not JSON text ({err})") from None
    return value


def _number(value, what: str) -> float | None:
    """A float (NaN and infinities as None); anything but a number is refused."""
    value = as_scalar(value)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WarehouseError(f"{what}: expected a number, got {value!r}")
    return float(value)


def as_string_list(value, what: str) -> list[str] | None:
    """A list of strings (``VARCHAR[]``): node ids, lineage ids; None stays None."""
    value = _parsed(value, what)
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise WarehouseError(f"{what}: expected a list, got {type(value).__name__}")
    out = []
    for item in value:
        item = as_scalar(item)
        if item is None or isinstance(item, (Mapping, list, tuple)):
            raise WarehouseError(f"{what}: expected plain values, got {item!r}")
        out.append(str(item))
    return out


#: the keys a ``top_features`` entry may have: ``name`` (or ``feature``, as
#: :func:`tasks.scoring.describe_classes` writes it), ``lift``, ``class_mean``; ``index`` (of
#: :class:`oral_core.interpret.Feature`) is dropped
_FEATURE_KEYS = {"name", "feature", "lift", "class_mean", "index"}


def as_top_features(value, what: str) -> list[dict] | None:
    """``top_features`` as a list of ``{name, lift, class_mean}`` (``TOP_FEATURE``)."""
    value = _parsed(value, what)
    if value is None:
        return None
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise WarehouseError(f"{what}: expected a list of features, got {type(value).__name__}")
    out = []
    for item in value:
        if hasattr(item, "_asdict"):
            item = item._asdict()
        if not isinstance(item, Mapping):
            raise WarehouseError(f"{what}: a feature must be a mapping, got {item!r}")
        extra = set(item) - _FEATURE_KEYS
        if extra:
            raise WarehouseError(f"{what}: unknown feature fields {sorted(extra)}; a feature "
                                 f"has name (or feature), lift, class_mean")
        name = item.get("name", item.get("feature"))
        out.append({"name": None if name is None else str(name),
                    "lift": _number(item.get("lift"), what),
                    "class_mean": _number(item.get("class_mean"), what)})
    return out


def as_scores(value) -> dict[str, float | None] | None:
    """``scores`` as a ``MAP(VARCHAR, DOUBLE)``: a mapping of names to numbers."""
    value = _parsed(value, "run field 'scores'")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WarehouseError(f"run field 'scores' must be a mapping of names to numbers, got "
                             f"{type(value).__name__}")
    return {str(k): _number(v, f"run field 'scores' entry {k!r}") for k, v in value.items()}


def as_scalar(value):
    """A scalar for a bound parameter: numpy scalars as Python ones, NaN and infinities as NULL."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
