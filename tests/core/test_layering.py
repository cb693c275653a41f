"""The import rule of the layers (docs/architecture.md), checked on the source tree.

Every ``import`` / ``from ... import`` statement is read with :mod:`ast`, including the lazy ones
inside functions, so a forbidden import cannot hide behind a function body.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORCHESTRATION = {"prefect", "prefect_dask", "dask", "distributed", "mlflow", "duckdb",
                 "great_expectations"}
#: every package of the product and its benchmarks, for the cycle and private-name rules
PACKAGES = ("oral_core", "harness", "data_contracts", "tasks", "flows", "cli", "benchmarks")

# package -> the top-level modules it must never import
FORBIDDEN: dict[str, set[str]] = {
    # the method: torch, torch_geometric, scipy, numpy, igraph, pyarrow; usable and testable alone
    # and never its reproduction harness
    "oral_core": ORCHESTRATION | {"harness", "flows", "tasks", "data_contracts", "cli",
                                  "benchmarks"},
    # the reproduction harness (oral reproduce, oral choose, the Table-2 baselines): the method
    # and nothing of the pipeline, so it runs on a laptop without any server
    "harness": ORCHESTRATION | {"flows", "tasks", "cli", "benchmarks"},
    # snapshot contracts: pyarrow and Great Expectations, no orchestration, no registry, no warehouse
    "data_contracts": {"prefect", "prefect_dask", "dask", "distributed", "mlflow", "duckdb",
                       "harness", "flows", "tasks", "cli", "benchmarks"},
    # Prefect tasks, the warehouse and the registry: never the flows or the CLI above them, never
    # the reproduction harness (the nightly pipeline trains and scores without it)
    "tasks": {"harness", "flows", "cli", "benchmarks"},
    # the flows: never the command line above them, never the benchmarks
    "flows": {"cli", "benchmarks"},
    # the command line: the top of the product, which never imports its benchmarks
    "cli": {"benchmarks"},
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
    ("flows", "    from cli.options import OptionError"),
    ("tasks", "import cli.main"),
    ("oral_core", "from harness.experiment import prepare"),
    ("oral_core", "    from harness import proxy"),
    ("data_contracts", "import harness.reproduction"),
    ("tasks", "    from harness.proxy import training_key"),
    ("harness", "import mlflow"),
    ("harness", "    import duckdb"),
    ("harness", "from prefect import task"),
    ("harness", "    from dask.distributed import Client"),
    ("harness", "from flows.fanout import reproduce"),
    ("harness", "from tasks.fitting import train"),
    ("harness", "    from cli.choose import main"),
    ("harness", "from benchmarks.tune import main"),
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


def module_name(root: Path, path: Path) -> str:
    """``flows/nightly.py`` -> ``flows.nightly``; a package's ``__init__.py`` -> the package."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=8)
def module_imports(root: Path, packages=PACKAGES) -> tuple[dict[str, set[str]], list[str]]:
    """The import graph of the modules of ``packages`` below ``root`` (lazy imports inside
    functions included; relative imports resolved; ``from package import module`` names the
    module) and every import of a private (``_name``) name from another module, as
    ``<file>:<line> imports <name> from <module>``."""
    modules = {module_name(root, p): p for package in packages
               for p in sorted((root / package).rglob("*.py"))
               if not any(part.startswith(".") for part in p.relative_to(root).parts)}

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = []
                for alias in node.names:
                    target = known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules \
                        else known(base)
                    targets.append(target)
                    if (target and target != name and alias.name.startswith("_")
                            and not alias.name.startswith("__")):
                        private.append(f"{path.relative_to(root)}:{node.lineno} imports "
                                       f"{alias.name} from {target}")
            else:
                continue
            graph[name] |= {t for t in targets if t and t != name}
    return graph, private


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_anywhere_lazy_imports_included():
    graph, _ = module_imports(ROOT)
    assert len(graph) > 100  # the rule read the tree
    assert import_cycles(graph) == []


#: the entry points of the nightly pipeline; with every ``tasks.*`` module they must never reach
#: the reproduction harness, however many imports (lazy ones included) lie between
NIGHTLY_ROOTS = ("flows.nightly", "flows.training")


def reachable(graph: dict[str, set[str]], roots) -> set[str]:
    """Every module that ``roots`` import, directly or through others (the roots included)."""
    seen, todo = set(), [r for r in roots if r in graph]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph[module] - seen
    return seen


def test_the_nightly_pipeline_never_imports_the_harness():
    """flows.nightly, flows.training and every task module reach no ``harness`` module, even
    through a chain of lazy imports: the pipeline needs the method (oral_core), never the
    reproduction harness. Only the reproduction fan-out (flows/fanout.py, flows/reproduce.py)
    and the command line may import it."""
    graph, _ = module_imports(ROOT)
    roots = [*NIGHTLY_ROOTS, *(m for m in graph if m == "tasks" or m.startswith("tasks."))]
    assert set(NIGHTLY_ROOTS) <= set(graph)
    seen = reachable(graph, roots)
    # the walk read the pipeline: it reaches the tasks and the method they train
    assert {"tasks.intake", "tasks.fitting", "tasks.publishing", "oral_core.trainer", "oral_core.inference"} <= seen, sorted(seen)
    assert any(m.startswith("harness.") for m in graph)  # the harness is in the graph
    harness = sorted(m for m in seen if m == "harness" or m.startswith("harness."))
    assert harness == [], harness


def test_a_harness_import_reached_through_a_lazy_chain_is_caught(tmp_path):
    """The reachability walk follows a lazy import two modules down."""
    for package in ("flows", "tasks", "harness"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "flows" / "nightly.py").write_text("from tasks import steps\n")
    (tmp_path / "tasks" / "steps.py").write_text("def f():\n    from tasks.helper import g\n")
    (tmp_path / "tasks" / "helper.py").write_text("def g():\n    from harness.proxy import x\n")
    (tmp_path / "harness" / "proxy.py").write_text("x = 1\n")
    graph, _ = module_imports(tmp_path, ("flows", "tasks", "harness"))
    assert "harness.proxy" in reachable(graph, ["flows.nightly"])


def test_no_private_name_is_imported_from_another_module():
    assert module_imports(ROOT)[1] == []


def test_a_cycle_and_a_private_import_are_caught(tmp_path):
    """A lazy import that closes a loop, and a private name taken from a sibling, both fail."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "__init__.py").write_text("")
    (tmp_path / "flows" / "a.py").write_text("from flows.b import helper\n")
    (tmp_path / "flows" / "b.py").write_text("def helper():\n    from flows import a\n"
                                             "    from .c import _hidden\n")
    (tmp_path / "flows" / "c.py").write_text("_hidden = 1\n")
    graph, private = module_imports(tmp_path, ("flows",))
    assert import_cycles(graph) == [["flows.a", "flows.b"]]
    assert private == ["flows/b.py:3 imports _hidden from flows.c"]
