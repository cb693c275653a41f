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


class _Item:
    def __init__(self, relpath: str, name: str):
        self.path = TESTS.parent / relpath
        self.nodeid = f"{relpath}::{name}"
        self.markers = []

    def add_marker(self, marker):
        self.markers.append(marker)


def test_units_run_longest_first_by_the_measured_seconds_then_by_layer(tmp_path, monkeypatch):
    module = conftest()
    seconds = tmp_path / "unit_seconds.json"
    seconds.write_text('{"tests/core/test_answer.py": 300.0, "tests/pipeline/reliability": 90,'
                       ' "tests/pipeline/test_warm_start.py": 120}')
    monkeypatch.setattr(module, "UNIT_SECONDS", seconds)
    items = [_Item("tests/contracts/test_contracts.py", "a"),
             _Item("tests/pipeline/reliability/test_rel1_publish_killed.py", "a"),
             _Item("tests/core/test_answer.py", "first"),
             _Item("tests/pipeline/test_warm_start.py", "a"),
             _Item("tests/e2e/test_e2e_servers.py", "a"),
             _Item("tests/pipeline/reliability/test_rel3_concurrent_runs.py", "b"),
             _Item("tests/core/test_answer.py", "second")]
    module.pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [
        "tests/core/test_answer.py::first", "tests/core/test_answer.py::second",  # 300 s
        "tests/pipeline/test_warm_start.py::a",  # 120 s
        "tests/pipeline/reliability/test_rel1_publish_killed.py::a",  # the package: 90 s
        "tests/pipeline/reliability/test_rel3_concurrent_runs.py::b",
        "tests/e2e/test_e2e_servers.py::a",  # not measured: by layer, e2e before contracts
        "tests/contracts/test_contracts.py::a"]
    assert [m.name for m in items[0].markers] == ["core"]
    seconds.write_text("not json")  # unreadable: the layers' order alone
    module.pytest_collection_modifyitems(None, items)
    assert [i.nodeid.split("/")[1] for i in items] == ["e2e", "pipeline", "pipeline", "pipeline",
                                                      "core", "core", "contracts"]


def test_the_scheduler_keeps_the_collection_order_and_splits_by_unit():
    from types import SimpleNamespace

    module = conftest()
    config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True),
                             getvalue=lambda name: ["3*popen"])
    scheduler = module.pytest_xdist_make_scheduler(config, None)
    assert config.option.loadscopereorder is False  # xdist would reorder by number of tests
    assert scheduler._split_scope("tests/pipeline/reliability/test_rel3_concurrent_runs.py::t[a]") \
        == "tests/pipeline/reliability"
    assert scheduler._split_scope("tests/core/test_answer.py::test_x[1-2]") \
        == "tests/core/test_answer.py"


def test_recording_sums_each_units_seconds_and_keeps_units_not_run(tmp_path, monkeypatch):
    from types import SimpleNamespace

    module = conftest()
    seconds = tmp_path / "unit_seconds.json"
    seconds.write_text('{"tests/e2e/test_e2e_servers.py": 200.0, "tests/core/test_answer.py": 9}')
    monkeypatch.setattr(module, "UNIT_SECONDS", seconds)
    for nodeid, duration in [("tests/core/test_answer.py::a", 1.25), ("tests/core/test_answer.py::a", 2.0),
                             ("tests/pipeline/reliability/test_rel1_publish_killed.py::b", 4.0),
                             ("tests/pipeline/reliability/test_rel3_concurrent_runs.py::c", 5.0)]:
        module.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))
    session = SimpleNamespace(config=SimpleNamespace(), testsfailed=0)
    monkeypatch.delenv("ORAL_RECORD_UNIT_SECONDS", raising=False)
    module.pytest_sessionfinish(session)  # not asked: nothing written
    assert module.measured_unit_seconds()["tests/core/test_answer.py"] == 9
    monkeypatch.setenv("ORAL_RECORD_UNIT_SECONDS", "1")
    module.pytest_sessionfinish(SimpleNamespace(config=SimpleNamespace(), testsfailed=1))
    assert module.measured_unit_seconds()["tests/core/test_answer.py"] == 9  # a failed run
    module.pytest_sessionfinish(session)
    assert module.measured_unit_seconds() == {"tests/core/test_answer.py": 3.2,
                                              "tests/e2e/test_e2e_servers.py": 200.0,
                                              "tests/pipeline/reliability": 9.0}



def test_the_measured_units_are_units_of_this_suite():
    module = conftest()
    measured = module.measured_unit_seconds()
    assert measured, f"{module.UNIT_SECONDS} is missing or unreadable"
    for unit in measured:
        path = TESTS.parent / unit
        assert path.exists() and module.worker_group_of(unit) == unit, unit
