"""What the wheel ships: the product's packages only, never the benchmark scripts or the tests."""
from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_only_the_product_packages():
    # the same discovery ``pip install .`` runs: [tool.setuptools.packages.find] of pyproject.toml
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(where=str(ROOT), include=find.get("include", ("*",)),
                             exclude=find.get("exclude", ()))
    assert {p.split(".")[0] for p in packages} == {"oral_core", "harness", "cli", "flows", "tasks",
                                                   "data_contracts"}
    # oral reproduce needs no benchmarks package: the harness is part of the product, in its own
    # package beside the method
    assert "harness" in packages and (ROOT / "harness" / "reproduction.py").exists()
