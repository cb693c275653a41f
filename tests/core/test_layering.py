"""The import rule of the layers (docs/architecture.md), checked on the source tree.

Every ``import`` / ``from ... import`` statement is read with :mod:`ast`, including the lazy ones
inside functions, so a forbidden import cannot hide behind a function body.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORCHESTRATION = {"prefect", "prefect_dask", "dask", "distributed", "mlflow", "duckdb",
                 "great_expectations"}

# package -> the top-level modules it must never import
FORBIDDEN: dict[str, set[str]] = {
    # the method: torch, torch_geometric, scipy, numpy, igraph, pyarrow; usable and testable alone
    "oral_core": ORCHESTRATION | {"flows", "tasks", "data_contracts", "benchmarks"},
    # snapshot contracts: pyarrow and Great Expectations, no orchestration, no registry, no warehouse
    "data_contracts": {"prefect", "prefect_dask", "dask", "distributed", "mlflow", "duckdb",
                       "flows", "tasks", "benchmarks"},
    # Prefect tasks, the warehouse and the registry: never the flows or the CLI above them
    "tasks": {"flows", "benchmarks"},
    # flows and the CLI: the product never imports its benchmarks
    "flows": {"benchmarks"},
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, top-level module)`` for every absolute import in the file ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(root: Path, rules: dict[str, set[str]]) -> list[str]:
    """``<file>:<line> imports <module> (<package> must not)`` for each import that breaks
    ``rules``, over every ``.py`` file of each ruled package below ``root``."""
    out = []
    for package, forbidden in sorted(rules.items()):
        for path in sorted((root / package).rglob("*.py")):
            for line, module in imported_modules(path):
                if module in forbidden:
                    out.append(f"{path.relative_to(root)}:{line} imports {module} "
                               f"({package} must not)")
    return out


def test_the_layers_import_only_downwards():
    assert violations(ROOT, FORBIDDEN) == []


def test_every_ruled_package_is_read():
    """The rule cannot pass by reading nothing: each package has files with imports."""
    for package in FORBIDDEN:
        files = list((ROOT / package).rglob("*.py"))
        assert files, f"{package}: no Python files found"
        assert any(imported_modules(p) for p in files), f"{package}: no imports read"


@pytest.mark.parametrize("package, line", [
    ("oral_core", "import mlflow"),
    ("oral_core", "    from prefect import flow"),          # a lazy import inside a function
    ("oral_core", "from tasks.warehouse import Warehouse"),
    ("data_contracts", "import duckdb"),
    ("tasks", "from flows import cli"),
    ("flows", "from benchmarks.tune import main"),
])
def test_a_forbidden_import_is_caught(tmp_path, package, line):
    """Adding any one forbidden import to a copy of the package makes the rule fail."""
    folder = tmp_path / package / "sub"
    folder.mkdir(parents=True)
    body = f"def f():\n{line}\n" if line.startswith(" ") else f"{line}\n"
    (folder / "added.py").write_text("import os\n" + body)
    found = violations(tmp_path, {package: FORBIDDEN[package]})
    assert len(found) == 1 and found[0].startswith(f"{package}/sub/added.py:"), found


def test_relative_and_standard_imports_are_allowed(tmp_path):
    folder = tmp_path / "oral_core"
    folder.mkdir()
    (folder / "ok.py").write_text("import os\nfrom . import config\nfrom oral_core import graph\n"
                                  "import torch\n")
    assert violations(tmp_path, {"oral_core": FORBIDDEN["oral_core"]}) == []
