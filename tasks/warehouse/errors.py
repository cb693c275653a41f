"""The warehouse's errors, and the rollback that keeps the error that broke a transaction the
one raised."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class WarehouseError(RuntimeError):
    """A warehouse operation that cannot be done; the message says what and where."""


class WarehouseLocked(WarehouseError):
    """The DuckDB file stayed locked by another process for the whole allowed wait."""


class QueryRefused(WarehouseError, ValueError):
    """``Warehouse.query`` only runs one read-only statement."""


class LabelRefused(WarehouseError, ValueError):
    """``Warehouse.label_class`` cannot store the label as asked (nothing is written)."""


class UnknownLineage(LabelRefused, LookupError):
    """A lineage id that no published run of the graph has (``Warehouse.label_class``)."""


def rollback_after_error(con, err: BaseException, what: str) -> bool:
    """Roll back after ``err`` broke a transaction; True when the rollback went through.

    A rollback that fails too (DuckDB already aborted the transaction after an I/O error such as
    a full disk: ``cannot rollback - no transaction is active``) is logged and attached to
    ``err`` as a note, never raised: the caller re-raises ``err``, the cause the user must see."""
    try:
        con.execute("ROLLBACK")
        return True
    except Exception as failed:  # noqa: BLE001 - the original error matters, this one is logged
        log.warning("%s failed (%s: %s); the rollback failed too: %s: %s", what,
                    type(err).__name__, err, type(failed).__name__, failed)
        if hasattr(err, "add_note"):
            err.add_note(f"(the rollback after this error failed too: {type(failed).__name__}: {failed})")
        return False
