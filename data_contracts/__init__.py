"""Data contracts for snapshot tables: the snapshot format (:mod:`data_contracts.snapshots`) and
the validation entry point :func:`validate_snapshot` (pyarrow measurements decided by Great
Expectations suites; see :mod:`data_contracts.contracts`).

Names are resolved lazily, so ``import data_contracts`` stays cheap.
"""
from __future__ import annotations

_EXPORTS = {
    "validate_snapshot": "data_contracts.contracts",
    "require_valid": "data_contracts.contracts",
    "ContractViolation": "data_contracts.contracts",
    "ValidationReport": "data_contracts.report",
    "Finding": "data_contracts.report",
    "RULES": "data_contracts.suites",
    "Rule": "data_contracts.suites",
    "ContractConfig": "data_contracts.suites",
    "expectation_suite": "data_contracts.suites",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'data_contracts' has no attribute {name!r}")
