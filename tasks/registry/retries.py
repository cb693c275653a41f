"""Bounded retries around every MLflow call (:func:`with_retries`) and the error they end in
(:class:`TrackingError`, naming the tracking URI and what failed)."""
from __future__ import annotations

import logging
import time
from typing import Callable, TypeVar

import mlflow
from mlflow.exceptions import MlflowException

from tasks.registry.config import TrackingConfig, safe_uri

log = logging.getLogger(__name__)

T = TypeVar("T")

# MLflow errors that say the request itself is wrong: retrying cannot help
_PERMANENT_CODES = {"INVALID_PARAMETER_VALUE", "RESOURCE_ALREADY_EXISTS", "RESOURCE_DOES_NOT_EXIST",
                    "NOT_FOUND", "ALREADY_EXISTS", "INVALID_STATE", "PERMISSION_DENIED",
                    "UNAUTHENTICATED", "BAD_REQUEST"}


# errors of the calling code, not of the store: never retried
_PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, ImportError, AssertionError)


class TrackingError(RuntimeError):
    """An MLflow call that kept failing (server down, store or artifact path not writable...).
    The message names the tracking URI and the operation."""



def _is_permanent(err: BaseException) -> bool:
    return isinstance(err, MlflowException) and str(err.error_code) in _PERMANENT_CODES


def with_retries(fn: Callable[[], T], attempts: int = 3, base_delay: float = 1.0,
                 max_delay: float = 15.0, *, uri: str | None = None, what: str | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Call ``fn()`` up to ``attempts`` times, sleeping ``base_delay * 2**k`` (at most
    ``max_delay``) between tries and logging each retry; then raise :class:`TrackingError`
    naming ``uri`` and ``what``, chained to the last error.

    MLflow errors that say the request itself is wrong (unknown resource, invalid value,
    already exists, permission denied by the server) and errors of the calling code
    (``TypeError``, ``AttributeError``...) are not retried and propagate unchanged so that callers
    can react to them; a :class:`TrackingError` from an inner call propagates unchanged too.
    Operating-system errors (a store or artifact folder that is not writable) are retried.
    This is the one retry layer of MLflow calls: the pipeline turns MLflow's own HTTP retries off
    (``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0`` in ``flows/settings.py`` and the deployments) and the
    register / champion tasks have no Prefect task retries.
    """
    attempts = max(1, int(attempts))
    label = what or getattr(fn, "__name__", "MLflow call")
    where = safe_uri(uri or mlflow.get_tracking_uri())
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except (TrackingError, KeyboardInterrupt):
            raise
        except _PROGRAMMING_ERRORS:  # a bug, not an outage: no point in waiting
            raise
        except Exception as err:  # noqa: BLE001 - any failure of the store is retried
            if _is_permanent(err):
                raise
            if attempt == attempts:
                raise TrackingError(
                    f"{label} failed after {attempts} attempt(s) against tracking URI {where}: "
                    f"{type(err).__name__}: {short_message(err)}") from err
            delay = min(max_delay, base_delay * 2 ** (attempt - 1))
            log.warning("%s failed (attempt %d/%d) against tracking URI %s: %s: %s; retrying in "
                        "%.2f s", label, attempt, attempts, where, type(err).__name__,
                        short_message(err), delay)
            sleep(delay)
    raise AssertionError("unreachable")


def short_message(err: BaseException, limit: int = 500) -> str:
    """The error's message on one line, cut to ``limit`` characters."""
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[:limit] + "..."


def call_with_retries(cfg: TrackingConfig, fn: Callable[[], T], what: str) -> T:
    """:func:`with_retries` with the attempts, delays and tracking URI of ``cfg``; ``what``
    names the operation in the log and in the error."""
    return with_retries(fn, cfg.attempts, cfg.base_delay, cfg.max_delay, uri=cfg.uri, what=what)
