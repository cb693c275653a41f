"""``oral snapshots ...``: make snapshots (import a raw dataset, simulate an evolving graph,
generate a synthetic one). Heavy imports happen inside the commands."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``snapshots`` command group to the ``oral`` parser."""
