"""benchmarks/night_walk.py: how one night walks through the code, on a made-up call sequence
whose stops, re-entries and climbs are known."""
from __future__ import annotations

from types import SimpleNamespace

from benchmarks.night_walk import FLOW, ROOT, Walk, counts_of, layer, unit_of, write


def frame(path: str, name: str, back=None):
    return SimpleNamespace(f_code=SimpleNamespace(co_filename=str(ROOT / path), co_name=name),
                           f_back=back)


def test_units_and_layers_follow_the_architecture():
    assert unit_of(str(ROOT / "oral_core" / "trainer.py")) == "oral_core/"
    assert unit_of(str(ROOT / "tasks" / "fitting.py")) == "tasks/fitting.py"
    assert unit_of(str(ROOT / "benchmarks" / "night_walk.py")) is None
    assert unit_of("/usr/lib/python3.11/json/__init__.py") is None
    assert (layer("cli/main.py") > layer(FLOW) > layer("tasks/prefect_tasks.py")
            > layer("tasks/fitting.py") > layer("tasks/registry/champion.py")
            > layer("data_contracts/snapshots.py") > layer("oral_core/"))


def test_a_walk_counts_stops_reentries_and_climbs(tmp_path):
    walk = Walk()
    flow = frame(FLOW, "nightly_discovery")
    walk(flow, "call", None)  # the night starts
    task = frame("tasks/prefect_tasks.py", "train", flow)
    step = frame("tasks/fitting.py", "train", task)
    for f in (task, step):
        walk(f, "call", None)
    helper = frame("data_contracts/snapshots.py", "write", step)
    walk(helper, "call", None)
    callback = frame("tasks/fitting.py", "<lambda>", helper)  # a writer handed down
    walk(callback, "call", None)
    walk(callback, "return", None)
    walk(helper, "return", None)
    walk(step, "return", None)
    walk(task, "return", None)  # prefect_tasks.py left
    again = frame("tasks/prefect_tasks.py", "score", flow)
    walk(again, "call", None)  # ... and re-entered
    walk(again, "return", None)
    walk(flow, "return", None)
    assert walk.reentered == {"tasks/prefect_tasks.py": 1}
    assert [(c["from"], c["to"]) for c in walk.climbs] == [("data_contracts/snapshots.py",
                                                            "tasks/fitting.py")]
    assert [s["move"] for s in walk.stops] == ["call", "call", "call", "call", "return",
                                               "return", "return", "return", "call", "return"]
    walk(frame("tasks/fitting.py", "train"), "call", None)  # after the night: not followed
    assert len(walk.stops) == 10
    write(tmp_path, {4: walk, None: walk}, "cmd")
    assert counts_of(tmp_path / "walk.csv") == {"files": 4, "stops": 10, "reentries": 1,
                                                "climbs": 1}
    assert "| every call | 4 | 10 | 1 | 1 |" in (tmp_path / "README.md").read_text()


def test_a_depth_limited_walk_leaves_deeper_calls_out():
    walk = Walk(depth=2)
    flow = frame(FLOW, "nightly_discovery")
    walk(flow, "call", None)
    task = frame("tasks/prefect_tasks.py", "train", flow)
    step = frame("tasks/fitting.py", "train", task)
    walk(task, "call", None)
    walk(step, "call", None)  # three project frames deep: left out
    walk(step, "return", None)
    walk(task, "return", None)
    assert [(s["move"], s["to"]) for s in walk.stops] == [("call", "tasks/prefect_tasks.py"),
                                                          ("return", FLOW)]
