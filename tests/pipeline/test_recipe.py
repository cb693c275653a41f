"""The nightly flow reads like its recipe (issue 48): ``nightly_discovery`` is a short list of
named steps, each a Prefect task of tasks/prefect_tasks.py (or a helper of the flow that runs
them), in the order of the recipe. Read from the source, so a step added out of order or a flow
that grows back into a long body fails here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pipeline

NIGHTLY = Path(__file__).resolve().parents[2] / "flows" / "nightly.py"

#: the recipe: prefect_tasks (pt.*) and the flow's own helpers, in the order a night runs them
RECIPE = ["open_night", "pt.find_snapshot", "read_and_validate", "pt.load_snapshot",
          "pt.plan_start", "train_night", "answer_night", "pt.score", "pt.describe", "pt.quality_gate",
          "run_record", "pt.check_disk", "pt.lineage", "pt.register", "pt.publish",
          "pt.champion", "announce"]


def steps_of(source: str, flow: str = "nightly_discovery") -> tuple[list[str], int]:
    """The calls of ``flow``'s body that are steps (``pt.<task>`` or a module-level function of
    the flow's file), in source order, and the number of lines of its body after the docstring."""
    tree = ast.parse(source)
    helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == flow)
    body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body
    calls = []
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "pt":
                calls.append((node.lineno, node.col_offset, f"pt.{f.attr}"))
            elif isinstance(f, ast.Name) and f.id in helpers:
                calls.append((node.lineno, node.col_offset, f.id))
    return [name for *_, name in sorted(calls)], body[-1].end_lineno - body[0].lineno + 1


def test_the_night_is_its_recipe_in_about_fifty_lines():
    steps, lines = steps_of(NIGHTLY.read_text())
    assert steps == RECIPE
    assert lines <= 55, f"nightly_discovery's body is {lines} lines"


def test_a_step_out_of_order_is_caught():
    source = NIGHTLY.read_text()
    swapped = source.replace("scores = pt.score(", "scores = pt.SWAP(", 1).replace(
        "classes = pt.describe(", "classes = pt.score(", 1).replace("pt.SWAP(", "pt.describe(", 1)
    assert steps_of(swapped)[0] != RECIPE
