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


def _is_number(value) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # 0-d tensor or array
        return isinstance(value.item(), (int, float))
    return False


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings (and dataclasses) to ``a/b`` keys; 0-d arrays/tensors to Python scalars."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        if isinstance(value, Mapping):
            out.update(_flatten(value, full + "/"))
        elif hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            out[full] = value.item()
        else:
            out[full] = value
    return out


def _key(key: str) -> str:
    """An MLflow key: letters, digits, ``_ - . : / space``; anything else becomes ``_``."""
    ok = "".join(ch if ch.isalnum() or ch in "_-.:/ " else "_" for ch in str(key))
    return ok[:250] or "_"


def _param_value(key: str, value) -> str:
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, (bool, int, float)):
        text = str(value)
    else:
        text = _json(value, indent=None)
    if len(text) > _MAX_PARAM_LENGTH:
        log.warning("param %s is %d characters long; truncated to %d", key, len(text), _MAX_PARAM_LENGTH)
        text = text[: _MAX_PARAM_LENGTH - 3] + "..."
    return text


def _tag_value(key: str, value) -> str:
    text = value if isinstance(value, str) else str(value)
    if len(text) > _MAX_TAG_LENGTH:
        log.warning("tag %s is %d characters long; truncated", key, len(text))
        text = text[: _MAX_TAG_LENGTH - 3] + "..."
    return text


def _json(value, indent: int | None = 2) -> str:
    def default(obj):
        if hasattr(obj, "tolist"):
            return obj.tolist()
        if isinstance(obj, Path):
            return str(obj)
        if hasattr(obj, "isoformat"):
            return obj.isoformat()
        return str(obj)
    return json.dumps(value, indent=indent, default=default, allow_nan=True)



def _chunks(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _now_ms() -> int:
    return int(time.time() * 1000)
