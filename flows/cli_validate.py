"""``oral validate SNAPSHOT_DIR``: check a snapshot against the data contracts. Heavy imports
(Great Expectations) happen inside the command."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``validate`` command to the ``oral`` parser."""
