"""Values as MLflow takes them: params and tags flattened, keyed and cut to MLflow's limits,
JSON text, batches, timestamps (shared by :mod:`tasks.registry.runs` and
:mod:`tasks.registry.plots`)."""
from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

log = logging.getLogger(__name__)

# MLflow's per-value limits (mlflow.utils.validation)
_MAX_PARAM_LENGTH = 6000
_MAX_TAG_LENGTH = 8000


def is_number(value) -> bool:
    """Whether ``value`` is a number MLflow can log as a metric (bools, numpy scalars and 0-d
    arrays or tensors included)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # 0-d tensor or array
        return isinstance(value.item(), (int, float))
    return False


def flatten_mapping(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings (and dataclasses) to ``a/b`` keys; 0-d arrays/tensors to Python scalars."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        if isinstance(value, Mapping):
            out.update(flatten_mapping(value, full + "/"))
        elif hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            out[full] = value.item()
        else:
            out[full] = value
    return out


def mlflow_key(key: str) -> str:
    """An MLflow key: letters, digits, ``_ - . : / space``; anything else becomes ``_``."""
    ok = "".join(ch if ch.isalnum() or ch in "_-.:/ " else "_" for ch in str(key))
    return ok[:250] or "_"


def param_value(key: str, value) -> str:
    """A param value as MLflow's text (JSON for lists and mappings), cut to its length limit."""
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, (bool, int, float)):
        text = str(value)
    else:
        text = to_json(value, indent=None)
    if len(text) > _MAX_PARAM_LENGTH:
        log.warning("param %s is %d characters long; truncated to %d", key, len(text), _MAX_PARAM_LENGTH)
        text = text[: _MAX_PARAM_LENGTH - 3] + "..."
    return text


def tag_value(key: str, value) -> str:
    """A tag value as text, cut to MLflow's length limit."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > _MAX_TAG_LENGTH:
        log.warning("tag %s is %d characters long; truncated", key, len(text))
        text = text[: _MAX_TAG_LENGTH - 3] + "..."
    return text


def to_json(value, indent: int | None = 2) -> str:
    """JSON text of ``value``; arrays and tensors as lists, paths and dates as strings."""
    def default(obj):
        if hasattr(obj, "tolist"):
            return obj.tolist()
        if isinstance(obj, Path):
            return str(obj)
        if hasattr(obj, "isoformat"):
            return obj.isoformat()
        return str(obj)
    return json.dumps(value, indent=indent, default=default, allow_nan=True)



def chunked(items: list, size: int) -> Iterable[list]:
    """``items`` in consecutive slices of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def now_ms() -> int:
    """The current time in milliseconds since the epoch (MLflow's timestamps)."""
    return int(time.time() * 1000)
