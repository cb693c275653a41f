"""The nightly pipeline end to end, in-process (Prefect test harness, MLflow SQLite, DuckDB file):
a backfill over three simulated nights, an idempotent rerun, a snapshot that breaks its contract,
the CLI, and the analyst SQL of the docs (docs/analysts.md)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"epochs": 20, "hidden_dim": 16, "pol_start_epoch": 10, "cluster_warmup_epochs": 5,
          "device": "cpu"}


@pytest.fixture(scope="module")
def env(tmp_path_factory, one_thread):
    """One state folder and one Prefect harness for the module (the harness costs ~15 s)."""
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as mp:  # every variable is restored afterwards
        mp.setenv("ORAL_STATE_DIR", str(state))
        mp.delenv("ORAL_TRACKING_URI", raising=False)
        mp.delenv("ORAL_WAREHOUSE", raising=False)
        from flows.settings import configure_environment

        configure_environment(state)
        from tests.prefect_harness import prefect_harness

        with prefect_harness():
            from data_contracts.simulate import simulate
            from data_contracts.synthetic import make_static_graph

            static = make_static_graph(num_nodes=600, num_classes=4, num_features=16,
                                       separation=4.0, seed=0, name="pipe")
            root = state / "snapshots"
            paths = simulate(static, 3, root, "pipe", start_date="2026-03-01", seed=0,
                             known_classes=[0, 1, 2], novel_start={3: 1})
            yield {"state": state, "root": root, "paths": paths}


def _tables(state: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    try:
        out = {}
        for t in ("snapshots", "runs", "node_assignments", "classes", "class_lineage"):
            cols = [r[0] for r in con.execute(f"DESCRIBE {t}").fetchall()
                    if r[0] not in ("published_at", "validated_at", "prefect_flow_run_id")]
            out[t] = sorted(map(repr, con.execute(f"SELECT {', '.join(cols)} FROM {t}").fetchall()))
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def backfilled(env):
    from flows.nightly import backfill

    results = backfill("pipe", str(env["root"]), config=CONFIG, state_dir=str(env["state"]))
    return results


def test_backfill_publishes_every_night(env, backfilled):
    import duckdb
    import pyarrow.parquet as pq

    assert [r["snapshot_date"] for r in backfilled] == ["2026-03-01", "2026-03-02", "2026-03-03"]
    con = duckdb.connect(str(env["state"] / "oral.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM runs WHERE graph = 'pipe'").fetchall()[0][0] == 3
        nodes = [pq.read_metadata(p / "nodes.parquet").num_rows for p in env["paths"]]
        per_run = con.execute("SELECT r.snapshot_date, count(*) FROM node_assignments a JOIN runs r "
                              "USING (run_id) GROUP BY 1 ORDER BY 1").fetchall()
        assert [n for _, n in per_run] == nodes
        assert con.execute("SELECT count(*) FROM class_lineage").fetchall()[0][0] >= 3 * 3
        runs = con.execute("SELECT mlflow_run_id, model_version FROM runs ORDER BY snapshot_date").fetchall()
        assert all(r[0] for r in runs) and sorted(int(r[1]) for r in runs) == [1, 2, 3]
        first = con.execute("SELECT DISTINCT lineage_id LIKE '%:novel:%', status FROM "
                            "class_lineage l JOIN runs r USING (run_id) "
                            "WHERE r.snapshot_date = DATE '2026-03-01'").fetchall()
        # the first night: known classes emerge, novel ones are candidates (confirmation)
        assert (False, "emerged") in first and all(
            status == ("candidate" if novel else "emerged") for novel, status in first)
    finally:
        con.close()


def test_mlflow_has_a_version_per_night_and_a_loadable_champion(env, backfilled):
    import mlflow
    import pandas as pd

    from tasks.registry import TrackingConfig, load_champion, model_name

    cfg = TrackingConfig(None, env["state"])
    client = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
    versions = client.search_model_versions(f"name = '{model_name('pipe')}'")
    assert len(versions) == 3
    model = load_champion(cfg, "pipe")  # process-wide MLflow URIs are restored afterwards
    out = model.predict(pd.DataFrame({"snapshot_path": [str(env["paths"][-1])]}))
    assert len(out) == 600 and set(out.columns) >= {"node_id", "run_id", "class_key", "is_novel",
                                                    "confidence"}


def test_registered_pyfunc_names_the_warehouse_lineage_id(env, backfilled):
    """Lineage runs before register: a night's registered pyfunc outputs, per node, the
    lineage id the warehouse gave that node's class ((run_id, class_key) of ``classes``)."""
    import duckdb
    import mlflow
    import pandas as pd

    from tasks.registry import TrackingConfig, model_name, using

    cfg = TrackingConfig(None, env["state"])
    con = duckdb.connect(str(env["state"] / "oral.duckdb"), read_only=True)
    try:
        runs = con.execute("SELECT run_id, CAST(snapshot_date AS VARCHAR), model_version FROM runs "
                           "WHERE graph = 'pipe' ORDER BY snapshot_date").fetchall()
        classes = {(r, k): lid for r, k, lid in con.execute(
            "SELECT c.run_id, c.class_key, c.lineage_id FROM classes c JOIN runs r "
            "USING (run_id) WHERE r.graph = 'pipe'").fetchall()}
    finally:
        con.close()
    assert len({lid for lid in classes.values()}) >= 3
    for (run_id, day, version), path in list(zip(runs, env["paths"]))[-2:]:  # a later night too
        assert f"snapshot={day}" in str(path)
        with using(cfg):
            model = mlflow.pyfunc.load_model(f"models:/{model_name('pipe')}/{version}")
        out = model.predict(pd.DataFrame({"snapshot_path": [str(path)]}))
        assert list(out.columns)[3:5] == ["class_key", "lineage_id"]
        assert set(out["run_id"]) == {run_id}
        expected = [classes.get((run_id, int(k))) if k >= 0 else None for k in out["class_key"]]
        assert out["lineage_id"].tolist() == expected
        assert sum(v is not None for v in expected) > len(out) // 2  # most nodes have a class


def test_rerun_is_idempotent_and_reuses_training(env, backfilled):
    from flows.nightly import nightly_discovery

    before = _tables(env["state"])
    model = Path(env["state"] / "runs" / "pipe").glob("*/model.pt")
    mtimes = {p: p.stat().st_mtime_ns for p in model}
    out = nightly_discovery("pipe", str(env["root"]), "2026-03-02", CONFIG, str(env["state"]))
    assert out["snapshot_date"] == "2026-03-02"
    from flows.nightly import summary_line
    assert out["reused"] and "training reused" in summary_line(out)  # said, not silent (#62)
    after = _tables(env["state"])
    assert after == before  # same rows, no duplicates
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # training came from the cache


def test_failed_contract_publishes_nothing(env, backfilled):
    import numpy as np

    from data_contracts import snapshots as snap
    from flows.nightly import nightly_discovery
    from tasks.intake import ContractFailed

    good = snap.load_snapshot(env["paths"][-1])
    x = good.x.copy()
    x[:3, 0] = np.nan
    labels = np.asarray(good.class_names + [None], dtype=object)[np.where(good.labels >= 0, good.labels, -1)]
    nodes = snap.nodes_table(good.node_ids, x, labels.tolist())
    edges = snap.edges_table(good.node_ids.take(good.edge_index[0]), good.node_ids.take(good.edge_index[1]))
    snap.write_snapshot(env["root"], "pipe", "2026-03-04", nodes, edges)
    before = _tables(env["state"])
    with pytest.raises(ContractFailed) as err:
        nightly_discovery("pipe", str(env["root"]), "2026-03-04", CONFIG, str(env["state"]))
    assert "features_finite" in Path(err.value.report_path).read_text()
    assert _tables(env["state"]) == before


def test_cli_classes_and_sql(env, backfilled, capsys):
    from cli.main import main

    assert main(["classes", "--state-dir", str(env["state"]), "--graph", "pipe"]) == 0
    assert "known:" in capsys.readouterr().out
    assert main(["sql", "--state-dir", str(env["state"]), "SELECT count(*) AS n FROM runs"]) == 0
    assert "3" in capsys.readouterr().out
    assert main(["sql", "--state-dir", str(env["state"]), "DROP TABLE runs"]) == 2
    assert main(["sql", "--state-dir", str(env["state"]), "SELECT * FROM no_such_table"]) == 1


def test_readme_sql_runs(env, backfilled):
    """Every ```sql block of the analysts' page (docs/analysts.md, and of the README if it has
    any) runs against a published warehouse."""
    from tasks.warehouse import Warehouse

    blocks = [block for doc in ("README.md", "docs/analysts.md")
              for block in re.findall(r"```sql\n(.*?)```", (ROOT / doc).read_text(), re.S)]
    assert blocks, "docs/analysts.md shows analysts some SQL"
    wh = Warehouse(env["state"] / "oral.duckdb")
    for sql in blocks:
        for statement in [s.strip() for s in sql.split(";") if s.strip()]:
            wh.query(statement)


def test_a_shortened_retrain_is_degraded_and_never_champion(env, backfilled, monkeypatch):
    """Issue 47: `--epochs 5` on a night already answered by a 20-epoch model passed the old gate
    (validation accuracy within 0.02) and replaced the answer. Now it is registered and kept in
    ``runs`` as degraded, but the champion and every latest view stay with the 20-epoch run.
    (Last of the module's tests on the shared state: it adds a run.) The reference check is
    turned off here so the epochs rule is the one that fires (on this toy graph the 5-epoch
    model is also below the reference logistic regression)."""
    import duckdb

    from flows.nightly import nightly_discovery
    from tasks.registry import TrackingConfig, champion_version

    tracking = TrackingConfig(None, env["state"])
    champion = champion_version(tracking, "pipe")
    latest = _latest_run(env["state"])
    monkeypatch.setenv("ORAL_GATE_REFERENCE_MARGIN", "off")
    monkeypatch.setenv("ORAL_NIGHT_ANSWER", "whole")  # the night judged whole, as before
    out = nightly_discovery("pipe", str(env["root"]), "2026-03-03", CONFIG | {"epochs": 5},
                            str(env["state"]))
    assert out["degraded"] and "trained with 5 epochs" in out["degraded"]
    assert out["champion"] is False and champion_version(tracking, "pipe") == champion
    assert _latest_run(env["state"]) == latest
    con = duckdb.connect(str(env["state"] / "oral.duckdb"), read_only=True)
    try:
        status = con.execute("SELECT gate_status FROM runs WHERE run_id = ?",
                             [out["run_id"]]).fetchall()
    finally:
        con.close()
    assert status == [("degraded",)]


def test_a_held_back_model_still_answers_its_night_per_class(env, backfilled, monkeypatch):
    """Issue 60, "decide per class": with ``ORAL_NIGHT_ANSWER=per_class`` the same kind of
    shortened retrain is still held back as champion, but its night is answered: the run is the
    latest answer (``gate_status`` per_class, the reason named), its nodes are those of the answer
    file (every node ORAL puts in a known class named by the chosen classifier), and the champion
    does not move. (Runs after the degraded test: it adds a run of its own.)"""
    import duckdb
    import pyarrow.parquet as pq

    from flows.nightly import nightly_discovery, summary_line
    from tasks.registry import TrackingConfig, champion_version

    tracking = TrackingConfig(None, env["state"])
    champion = champion_version(tracking, "pipe")
    monkeypatch.setenv("ORAL_GATE_REFERENCE_MARGIN", "off")
    monkeypatch.setenv("ORAL_NIGHT_ANSWER", "per_class")
    out = nightly_discovery("pipe", str(env["root"]), "2026-03-03", CONFIG | {"epochs": 6},
                            str(env["state"]))
    assert out["degraded"] is None and "trained with 6 epochs" in out["held_back"]
    assert out["known_namer"] in ("oral", "lr", "gcn")
    assert "answered per class" in summary_line(out) and "DEGRADED" not in summary_line(out)
    assert out["champion"] is False and champion_version(tracking, "pipe") == champion
    assert _latest_run(env["state"]) == out["run_id"]
    con = duckdb.connect(str(env["state"] / "oral.duckdb"), read_only=True)
    try:
        status, reason = con.execute("SELECT gate_status, gate_reason FROM runs WHERE run_id = ?",
                                     [out["run_id"]]).fetchone()
        published = dict(con.execute("SELECT node_id, class_key FROM node_assignments "
                                     "WHERE run_id = ?", [out["run_id"]]).fetchall())
    finally:
        con.close()
    assert status == "per_class" and "held back as champion" in reason
    assert "named by" in reason
    run_dirs = list((env["state"] / "runs" / "pipe").glob("*/answer.parquet"))
    assert run_dirs, "the answer file sits beside the model's predictions"
    answer = pq.read_table(max(run_dirs, key=lambda p: p.stat().st_mtime)).to_pydict()
    got = {str(k): v for k, v in zip(answer["node_id"], answer["class_key"])}
    assert {k: got[k] for k in published} == published
    # every node's known class, where a candidate's nodes go with ORAL_CANDIDATES_NAMED
    assert len(answer["known_key"]) == len(answer["node_id"])
    assert all(0 <= k < 3 for k in answer["known_key"])  # three known classes
    # the same with the classifier changed only beyond chance, the novelty check and the
    # novel nodes returned and the rejected nodes grouped, the novel classes carved, the recent
    # bursts grouped, the part last night's answer named known judged again: answered
    monkeypatch.setenv("ORAL_NIGHT_ANSWER",
                       "per_class+paired+carve+burst+split+lastsplit+energy+returned+rejected")
    split = nightly_discovery("pipe", str(env["root"]), "2026-03-03", CONFIG | {"epochs": 7},
                              str(env["state"]))
    assert split["degraded"] is None and _latest_run(env["state"]) == split["run_id"]
    chosen = [c for c in (json.loads(p.read_text()) for p in
                          (env["state"] / "runs" / "pipe").glob("*/answer.json"))
              if c["snapshot_date"] == "2026-03-03"]  # the backfill's nights answered too
    assert len(chosen) >= 3 and all(c["namer"] in ("oral", "lr", "gcn") for c in chosen)
    checked = [c for c in chosen if "moved" in c]  # the night run with the novelty check
    assert checked and all(c["scorer"] in ("lr", "gcn") and c["moved"] >= 0 for c in checked)
    assert all(c["rejected"] >= 0 and c["returned"] >= 0 and c["dropped"] >= 0
               and c["carved"] >= 0 and c["burst"] >= 0 for c in checked)
    assert all(c["last"] >= 0 for c in checked)  # the warehouse held the nights before
    # the runs row counts the classes the answer publishes (the grouping may add one)
    con = duckdb.connect(str(env["state"] / "oral.duckdb"), read_only=True)
    try:
        counted = con.execute("SELECT r.num_classes, r.num_novel, count(*), "
                              "count(*) FILTER (WHERE c.is_novel) FROM runs r JOIN classes c "
                              "USING (run_id) WHERE r.graph = 'pipe' GROUP BY r.run_id, "
                              "r.num_classes, r.num_novel").fetchall()
    finally:
        con.close()
    assert counted and all(a == c and b == d for a, b, c, d in counted)


def _latest_run(state: Path) -> str:
    import duckdb

    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    try:
        return con.execute("SELECT run_id FROM latest_runs WHERE graph = 'pipe'").fetchall()[0][0]
    finally:
        con.close()


def test_demo_reports_emergence_from_the_timeline():
    """The demo's verdict: the first night a pure-enough novel class of the planted label appears."""
    import datetime as dt
    from types import SimpleNamespace

    from flows.demo import emergence, render

    d = [dt.date(2026, 1, i) for i in (1, 2, 3, 4)]
    plan = SimpleNamespace(novel_start={4: 1}, dates=d)
    names = ["a", "b", "c", "d", "planted"]
    rows = [
        {"snapshot_date": d[1], "lineage_id": "g:novel:1", "class_name": None, "is_novel": True,
         "size": 40, "status": "emerged", "purity": 0.3, "majority_true_label": "planted"},
        {"snapshot_date": d[2], "lineage_id": "g:novel:1", "class_name": None, "is_novel": True,
         "size": 90, "status": "grown", "purity": 0.95, "majority_true_label": "planted"},
        {"snapshot_date": d[3], "lineage_id": "known:a", "class_name": "a", "is_novel": False,
         "size": 90, "status": "persisting", "purity": 1.0, "majority_true_label": "a"},
    ]
    [found] = emergence(rows, plan, names)
    assert found["found"] == d[2] and found["periods_late"] == 1 and found["purity"] == 0.95
    # a candidate (first night, not yet confirmed) is not yet published: not discovered then
    early = [dict(rows[1], snapshot_date=d[1], status="candidate")]
    assert emergence(early, plan, names)[0]["found"] is None
    [confirmed] = emergence(early + rows[1:], plan, names)
    assert confirmed["found"] == d[2] and confirmed["candidate"] == d[1]
    assert "(a candidate since 2026-01-02, published when it was there again)" in render(
        "g", rows, [confirmed], 1.0)
    assert "discovered 2026-01-03 (1 period(s) after its start)" in render("g", rows, [found], 1.0)
    [missing] = emergence(rows[:1], plan, names)
    assert missing["found"] is None
    assert "NOT discovered" in render("g", rows[:1], [missing], 1.0)
    text = render("g", rows, [found], 1.0, [{"snapshot_date": d[1], "gate_reason": "x below y"}])
    assert "found degraded" in text and "- 2026-01-02: x below y" in text


def test_a_new_nested_state_folder_gets_its_prefect_home(tmp_path, monkeypatch):
    """`oral run --state-dir NEW/DEEP` used to wait out Prefect's start-up timeout: Prefect
    creates its home without parents, so its temporary server could not open its database."""
    from flows.settings import configure_environment

    monkeypatch.delenv("PREFECT_HOME", raising=False)
    state = tmp_path / "not" / "there" / "yet"
    settings = configure_environment(state)
    assert settings.state_dir == state.resolve()
    assert (state / "prefect").is_dir()
    assert os.environ["PREFECT_HOME"] == str(state.resolve() / "prefect")
