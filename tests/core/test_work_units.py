"""The test suite's pytest-xdist work units (tests/conftest.py, ``make test -n 3``)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def conftest():
    spec = importlib.util.spec_from_file_location("tests_root_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_package_with_package_fixtures_is_one_unit_and_other_modules_their_own():
    unit = conftest().worker_group_of
    reliability = sorted(p.relative_to(TESTS.parent).as_posix()
                         for p in (TESTS / "pipeline" / "reliability").glob("test_*.py"))
    own = conftest().OWN_UNITS
    assert len(reliability) > 2 and set(own) < set(reliability)
    assert {unit(p) for p in reliability if p not in own} == {"tests/pipeline/reliability"}
    assert [unit(p) for p in own] == list(own)
    others = ["tests/core/test_answer.py", "tests/pipeline/test_warm_start.py",
              "tests/e2e/test_e2e_servers.py"]
    assert [unit(p) for p in others] == others
