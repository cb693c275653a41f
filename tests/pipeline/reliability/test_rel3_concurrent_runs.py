"""Reliability points 3-4: the same snapshot twice and at once, an unchanged graph on the next
date, two graphs at once behind the DuckDB write lock.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import re
import shutil

import pyarrow.parquet as pq

from .harness import D1, D2, LOCK_LINE, Env, check_consistent


# ------------------------------------------------- 3-4. twice, at once, and two graphs at once


def _snapshot_node_ids(env: Env, graph: str, date: str = D1) -> list[str]:
    ids = pq.read_table(env.root / graph / f"snapshot={date}" / "nodes.parquet", columns=["node_id"])
    return sorted(map(str, ids.column("node_id").to_pylist()))


def _without(rows: dict, column: str) -> dict:
    return {t: [{k: v for k, v in r.items() if k != column} for r in rs] for t, rs in rows.items()}


def test_same_snapshot_at_once_in_two_processes_one_version_one_row(env, concurrent):
    """Case 3. The same snapshot run by two processes at the same time: both succeed and agree
    on one run id and one model version; the registry keeps one version of the run (lineage,
    registration and the publish run under the writer limit, so the process that comes second
    finds the first one's version and reuses it), the champion alias points
    at it, DuckDB holds one run with every node once. A rerun afterwards changes no row but
    ``train_seconds`` (each process trained; the last publisher's timing stays)."""
    alpha = [concurrent["workers"][k] for k in ("alpha-child", "alpha-here")]
    for w in alpha:
        assert w["rc"] == 0 and w["result"], "\n".join(map(str, w["lines"][-40:]))
    a, b = (w["result"] for w in alpha)
    raced = [w for w in alpha if any("registered concurrently" in line for line in w["lines"])]
    assert raced == [], "the flow registers under the writer limit: the second run reuses"
    assert a["run_id"] == b["run_id"] and a["model_version"] == b["model_version"]
    assert a["mlflow_run_id"] == b["mlflow_run_id"]
    versions = env.versions("alpha")
    assert [int(v.version) for v in versions] == [a["model_version"]]
    assert env.champion("alpha") == a["model_version"]
    rows = env.rows("alpha")
    assert len(rows["runs"]) == 1 and len(rows["snapshots"]) == 1
    assert sorted(r["node_id"] for r in rows["node_assignments"]) == _snapshot_node_ids(env, "alpha")
    experiment = env.client.get_run(versions[0].run_id).info.experiment_id
    active = env.client.search_runs([experiment], f"tags.oral_run_id = '{a['run_id']}'")
    assert [r.info.run_id for r in active] == [versions[0].run_id]  # a duplicate run was deleted
    check_consistent(env)

    env.night("alpha")  # and once more, sequentially
    assert _without(env.rows("alpha"), "train_seconds") == _without(rows, "train_seconds")
    assert [int(v.version) for v in env.versions("alpha")] == [a["model_version"]]


def test_two_processes_registering_one_run_keep_one_version(env, tmp_path):
    """Case 3 outside the flow (a caller of ``champion.track`` without the writer limit): two
    processes register the same run at the same moment (both wait at a rendezvous before MLflow
    logging, so both find no version): one drops its copy, both return the kept version."""
    import json
    import subprocess
    import sys

    from data_contracts.snapshots import load_snapshot
    from oral_core.config import ORALConfig
    from tasks import fitting

    from .harness import CONFIG, HELPER, ROOT

    graph = env.graph("raced")
    snapshot = load_snapshot(env.root / graph / f"snapshot={D1}")
    trained = fitting.train(snapshot, ORALConfig.from_dict(CONFIG), tmp_path / "run").to_dict()
    report = tmp_path / "report.json"
    report.write_text("{}")
    from tasks.warehouse import make_run_id

    run = {"run_id": make_run_id(graph, D1, "c0ffee", trained["config_hash"]),
           "content_hash": "c0ffee", "config_hash": trained["config_hash"]}
    spec = {"state_dir": str(env.state), "rendezvous": str(tmp_path / "meet"), "graph": graph,
            "run": run, "trained": trained, "reports": [str(report), str(report)],
            "tags": {"snapshot_date": D1, "oral_run_id": run["run_id"]}}
    (tmp_path / "meet").mkdir()
    procs = [subprocess.Popen([sys.executable, str(HELPER), "track", json.dumps(spec)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=ROOT, env=env.child_env()) for _ in range(2)]
    outs = [p.communicate(timeout=400)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(line[len("RESULT "):]) for out in outs for line in out.splitlines()
               if line.startswith("RESULT ")]
    assert len(results) == 2 and results[0]["model_version"] == results[1]["model_version"]
    assert sum("registered concurrently" in out for out in outs) == 1, outs
    assert [int(v.version) for v in env.versions(graph)] == [results[0]["model_version"]]


def test_same_snapshot_twice_leaves_the_same_rows(env):
    """Case 3. Running the same snapshot again (sequentially) changes nothing: the same rows
    exactly, the same single version, training from the cache."""
    graph = env.graph("twice")
    first = env.night(graph)
    before = env.rows(graph)
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    again = env.night(graph)
    assert env.rows(graph) == before
    assert [int(v.version) for v in env.versions(graph)] == [first["model_version"]]
    assert again["model_version"] == first["model_version"] and again["run_id"] == first["run_id"]
    assert model.stat().st_mtime_ns == stamp


def test_unchanged_graph_on_the_next_date_keeps_the_previous_night(env, monkeypatch):
    """Case 3 (issue 21.1). A snapshot copied byte for byte to the next date (a graph that did
    not change over a weekend) is a night of its own: both nights stay in ``runs``,
    ``node_assignments``, ``classes``, ``class_lineage`` and ``class_timeline`` (the second
    night's classes ``persisting`` with the first night's lineage ids), each night has its own
    MLflow run and version, training is reused by content (not run again), and rerunning the
    second night leaves the same rows and versions."""
    from tasks import fitting

    graph = "unchanged"
    folder = env.root / graph
    shutil.copytree(env.root / "base" / f"snapshot={D1}", folder / f"snapshot={D1}")
    shutil.copytree(env.root / "base" / f"snapshot={D1}", folder / f"snapshot={D2}")
    first = env.night(graph, D1)
    model = next((env.state / "runs" / graph).glob("*/model.pt"))
    stamp = model.stat().st_mtime_ns
    real, trained = fitting.train, []
    monkeypatch.setattr(fitting, "train", lambda *a, **k: trained.append(1) or real(*a, **k))
    second = env.night(graph, D2)
    assert trained == [] and model.stat().st_mtime_ns == stamp  # training reused by content
    assert [p.name for p in (env.state / "runs" / graph).iterdir()] == [model.parent.name]
    assert first["run_id"] != second["run_id"]

    rows = env.rows(graph)
    assert sorted((str(r["snapshot_date"]), r["run_id"]) for r in rows["runs"]) == [
        (D1, first["run_id"]), (D2, second["run_id"])]
    assert len({r["content_hash"] for r in rows["runs"]}) == 1
    assert sorted(str(r["snapshot_date"]) for r in rows["snapshots"]) == [D1, D2]
    nodes = _snapshot_node_ids(env, graph)
    for out in (first, second):
        assert sorted(r["node_id"] for r in rows["node_assignments"]
                      if r["run_id"] == out["run_id"]) == nodes
        assert any(r["run_id"] == out["run_id"] for r in rows["classes"])
    lineage = {out["run_id"]: {r["lineage_id"]: r["status"] for r in rows["class_lineage"]
                               if r["run_id"] == out["run_id"]} for out in (first, second)}
    # the first night: every known class emerged, every novel one a candidate (confirmation);
    # the second: the same classes go on, the candidates confirmed
    first_rows = lineage[first["run_id"]]
    assert first_rows and all(status == ("candidate" if ":novel:" in lid else "emerged")
                              for lid, status in first_rows.items())
    assert lineage[second["run_id"]] == {
        lid: "emerged" if status == "candidate" else "persisting"
        for lid, status in first_rows.items()}
    assert second["statuses"] == lineage[second["run_id"]]
    with env.con() as con:
        timeline = con.execute("SELECT DISTINCT CAST(snapshot_date AS VARCHAR), run_id FROM "
                               "class_timeline WHERE graph = ? ORDER BY 1", [graph]).fetchall()
    assert timeline == [(D1, first["run_id"]), (D2, second["run_id"])]
    versions = env.versions(graph)
    assert [v.tags.get("oral_run_id") for v in versions] == [first["run_id"], second["run_id"]]
    assert [int(v.version) for v in versions] == [first["model_version"], second["model_version"]]
    check_consistent(env)

    again = env.night(graph, D2)  # idempotent per graph, date and configuration
    assert again["run_id"] == second["run_id"] and again["model_version"] == second["model_version"]
    assert env.rows(graph) == rows
    assert [int(v.version) for v in env.versions(graph)] == [int(v.version) for v in versions]
    assert trained == []


def test_two_graphs_at_once_wait_for_the_lock_and_keep_their_rows(env, concurrent):
    """Case 4. Two graphs run at once against one DuckDB file and one MLflow store while another
    process holds the write lock: every run waits with a bounded, logged retry, all complete, and
    each graph's rows hold exactly its own nodes, classes and model."""
    workers = concurrent["workers"]
    for key, w in workers.items():
        assert w["rc"] == 0 and w["result"], f"{key}:\n" + "\n".join(map(str, w["lines"][-40:]))
        waits = [line for line in w["lines"] if LOCK_LINE in line]
        assert waits, f"{key} never logged waiting for the lock"
        assert re.search(r"\(attempt \d+\); retrying in [\d.]+ s \([\d.]+ of 60\.0 s waited\)",
                         waits[0]), waits[0]
    for graph in ("alpha", "beta"):
        rows = env.rows(graph)
        assert len(rows["runs"]) == 1
        assert sorted(r["node_id"] for r in rows["node_assignments"]) == _snapshot_node_ids(env, graph)
        lineage = {r["lineage_id"] for r in rows["class_lineage"]}
        assert all(lid.startswith((f"{graph}:novel:", "known:")) for lid in lineage)
        [version] = env.versions(graph)
        [run] = rows["runs"]
        assert run["model_name"] == f"oral-{graph}" and run["model_version"] == str(version.version)
        assert env.client.get_run(run["mlflow_run_id"]).data.tags["graph"] == graph
    assert workers["beta-child"]["result"]["run_id"] != workers["alpha-child"]["result"]["run_id"]
    check_consistent(env)
