"""Fan-out on a Dask task runner (:mod:`flows.fanout`): a reproduction sweep with one task per
seed and a backfill of two graphs in parallel, each on a local two-worker cluster, and the CLI's
refusals of bad fan-out options."""
from __future__ import annotations

import pytest

from cli.main import main

TINY = {"epochs": 8, "hidden_dim": 8, "num_prototypes": 8, "cluster_warmup_epochs": 1,
        "pol_start_epoch": 1, "resolution_steps": 5, "progress": False, "selection": "best_val",
        "device": "cpu"}
#: a small night (10 resolutions, the known-class head's hops fixed): the fan-out is tested,
#: not the method
PIPE = {"epochs": 12, "hidden_dim": 16, "pol_start_epoch": 6, "cluster_warmup_epochs": 3,
        "device": "cpu", "resolution_steps": 10, "known_head_hops": 2}


@pytest.fixture(scope="module")
def prefect_env(tmp_path_factory, one_thread):
    """A state folder and one Prefect server for the module; the Dask workers report to it."""
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as mp:  # every variable is restored afterwards
        mp.setenv("ORAL_STATE_DIR", str(state))
        mp.setenv("PREFECT_HOME", str(state / "prefect"))
        for name in ("ORAL_TRACKING_URI", "ORAL_WAREHOUSE", "ORAL_DASK_ADDRESS",
                     "MLFLOW_TRACKING_URI"):
            mp.delenv(name, raising=False)
        from flows.settings import configure_environment

        configure_environment(state)
        from tests.prefect_harness import prefect_harness

        with prefect_harness():
            yield state




def _task_run_names() -> set[str]:
    """Names of the task runs the module's Prefect server holds (the workers reported there)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {r.name for r in client.read_task_runs(limit=200)}


@pytest.mark.slow  # a local two-worker cluster: ~55-75 s on the shared 2-core machine
def test_reproduction_fanout_matches_a_sequential_run(prefect_env, npz_graph, tmp_path):
    from flows import fanout
    from oral_core.config import ORALConfig
    from harness.reproduction import read_csv, reproduce_tables

    methods, seeds = ["oral", "gcd"], [0, 1]
    fanned = tmp_path / "fanned"
    out = fanout.reproduce([str(npz_graph)], methods, seeds, [False], TINY, None, fanned,
                           workers=2)
    assert not out["failed"] and len(out["tasks"]) == 4
    assert len({t["pid"] for t in out["tasks"]}) == 2  # both worker processes ran seeds
    for method in methods:
        for seed in seeds:
            assert (fanned / "runs" / method / "tiny-noprior" / f"seed_{seed}.json").is_file()
    assert (fanned / "reproduction.md").is_file()

    sequential = tmp_path / "sequential"  # what `oral reproduce` does in-process
    summaries = reproduce_tables([str(npz_graph)], methods, seeds, [False],
                                 ORALConfig.from_dict(TINY), results=sequential,
                                 echo=lambda line: None)
    assert [s["method"] for s in summaries] == methods
    assert read_csv(fanned / "reproduction.csv") == read_csv(sequential / "reproduction.csv")
    from flows.reproduce import reproduce as reproduce_flow

    by_flow = tmp_path / "flow"  # the `reproduce` deployment's flow: the same service
    for method in methods:
        reproduce_flow(dataset=str(npz_graph), seeds=len(seeds), method=method, config=TINY,
                       out=str(by_flow))
    assert read_csv(by_flow / "reproduction.csv") == read_csv(sequential / "reproduction.csv")
    assert {(s["method"], s["seeds"]) for s in out["summaries"]} == {("oral", 2), ("gcd", 2)}
    assert {f"{m}-tiny-no-seed{s}" for m in methods for s in seeds} <= _task_run_names()

    again = fanout.reproduce([str(npz_graph)], ["oral"], seeds, [False], TINY, None, fanned,
                             workers=2)  # resumable: finished seeds are reused
    assert all("reused" in t["lines"][-1] for t in again["tasks"])


def test_a_seed_that_breaks_is_reported_failed_not_as_a_number(prefect_env, npz_graph, tmp_path,
                                                              monkeypatch):
    """A seed whose task raises is listed as failed and kept out of the row's numbers."""
    from flows import fanout

    out = fanout.reproduce([str(npz_graph)], ["oral"], [0], [False],
                           TINY | {"hidden_dim": "not a number"}, None, tmp_path / "r", workers=1)
    assert len(out["failed"]) == 1 and out["failed"][0]["row"] is None
    assert out["failed"][0]["broken"] and not out["summaries"]


@pytest.mark.slow  # a local two-worker cluster: ~55-75 s on the shared 2-core machine
def test_two_graphs_backfill_in_parallel_nights_in_order(prefect_env, tmp_path):
    import duckdb
    from prefect.client.orchestration import get_client

    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph
    from flows import fanout

    root = tmp_path / "snapshots"
    for i, name in enumerate(["ga", "gb"]):
        static = make_static_graph(num_nodes=300, num_classes=3, num_features=8, separation=4.0,
                                   seed=i, name=name)
        simulate(static, 2, root, name, start_date="2026-03-01", seed=i, known_classes=[0, 1],
                 novel_start={2: 1})
    state = prefect_env / "backfill"
    out = fanout.backfill(["ga", "gb"], str(root), config=PIPE, state_dir=str(state), workers=2)
    assert [r["graph"] for r in out] == ["ga", "gb"] and not any(r.get("error") for r in out)
    assert len({r["pid"] for r in out}) == 2  # the graphs ran in two worker processes
    for r in out:
        assert [n["snapshot_date"] for n in r["nights"]] == ["2026-03-01", "2026-03-02"]
    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    try:
        runs = con.execute("SELECT graph, snapshot_date, published_at, model_version FROM runs "
                           "ORDER BY graph, published_at").fetchall()
    finally:
        con.close()
    with get_client(sync_client=True) as client:  # the workers reported to this API
        flow_runs = {r.name for r in client.read_flow_runs(limit=200)}
    assert {f"{g}-2026-03-0{d}" for g in ("ga", "gb") for d in (1, 2)} <= flow_runs
    for graph in ("ga", "gb"):
        mine = [r for r in runs if r[0] == graph]
        assert [str(r[1]) for r in mine] == ["2026-03-01", "2026-03-02"]  # published in date order
        assert sorted(int(r[3]) for r in mine) == [1, 2]  # one registered version per night


@pytest.mark.parametrize("argv, message", [
    (["reproduce", "--dataset", "cora", "--workers", "0"], "--workers 0: need at least one"),
    (["reproduce", "--dataset", "cora", "--scheduler", "not an address"],
     "--scheduler not an address: not a Dask scheduler address"),
    (["reproduce", "--dataset", "cora", "--method", "oral,gcd,nonesuch"],
     "--method nonesuch: unknown method"),
    (["reproduce", "--dataset", "cora", "--scheduler", "tcp://host:99999"], "not a Dask scheduler"),
    (["backfill", "--graph", "g", "--snapshots", "{root}", "--workers", "-1"],
     "--workers -1: need at least one"),
    (["backfill", "--graph", "g,h", "--snapshots", "{root}", "--scheduler", "http://x"],
     "--scheduler http://x: not a Dask scheduler address"),
    (["backfill", "--graph", "g", "--graph", "../evil", "--snapshots", "{root}", "--workers", "2"],
     "--graph ../evil"),
])
def test_bad_fanout_options_are_refused_before_anything_starts(argv, message, tmp_path, capsys,
                                                               monkeypatch):
    from flows import fanout

    monkeypatch.delenv("ORAL_DASK_ADDRESS", raising=False)
    started = []
    monkeypatch.setattr(fanout, "reproduce", lambda *a, **k: started.append(a))
    monkeypatch.setattr(fanout, "backfill", lambda *a, **k: started.append(a))
    root = tmp_path / "snaps"
    (root / "g").mkdir(parents=True)
    argv = [a.replace("{root}", str(root)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not started


def test_a_malformed_address_in_the_environment_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ORAL_DASK_ADDRESS", "somewhere")
    assert main(["reproduce", "--dataset", "cora"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: ORAL_DASK_ADDRESS=somewhere: not a Dask scheduler address; expected "
        "tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786")


def test_addresses_accepted():
    from flows.fanout import check_address

    assert check_address("10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert check_address("tcp://scheduler.example:8786") == "tcp://scheduler.example:8786"
    assert check_address("tls://[::1]:8786") == "tls://[::1]:8786"


def test_cli_reproduce_hands_lists_to_the_fanout(tmp_path, capsys, monkeypatch):
    from cli import pipeline as cli_pipeline
    from flows import fanout

    seen = {}

    def fake(datasets, methods, seeds, priors, config, data_dir, results, **kw):
        seen.update(datasets=datasets, methods=methods, seeds=seeds, priors=priors, **kw)
        return {"tasks": [{"method": "gcd", "dataset": "b", "prior": False, "seed": 0, "row": None,
                           "failed": "learnt nothing", "lines": [], "pid": 7, "host": "h"}],
                "summaries": [], "skipped": [], "failed": []}

    monkeypatch.delenv("ORAL_DASK_ADDRESS", raising=False)
    monkeypatch.setattr(fanout, "reproduce", fake)
    monkeypatch.setattr(cli_pipeline, "start_pipeline", lambda state_dir: None)
    assert main(["reproduce", "--dataset", "a,b", "--method", "oral", "--method", "gcd",
                 "--seeds", "2", "--workers", "3", "--out", str(tmp_path)]) == 0
    assert seen["datasets"] == ["a", "b"] and seen["methods"] == ["oral", "gcd"]
    assert seen["seeds"] == [0, 1] and seen["workers"] == 3 and seen["address"] is None
    assert "gcd b prior=no seed 0: FAILED: learnt nothing (pid 7 on h)" in capsys.readouterr().out
    monkeypatch.setenv("ORAL_DASK_ADDRESS", "10.1.2.3:8786")  # the environment asks for it too
    assert main(["reproduce", "--dataset", "a", "--out", str(tmp_path)]) == 0
    assert seen["address"] == "tcp://10.1.2.3:8786" and seen["methods"] == ["oral"]


def test_cli_backfill_of_several_graphs_names_a_failed_graph(tmp_path, capsys, monkeypatch):
    from data_contracts.snapshots import SnapshotError
    from cli import pipeline as cli_pipeline
    from flows import fanout

    night = {"graph": "g", "snapshot_date": "2026-03-01", "classes": 3, "novel": 1,
             "statuses": {}, "model_version": "1"}
    seen = {}

    def fake(graphs, root, start, end, config, state_dir, device, **kw):
        seen.update(graphs=graphs, **kw)
        return [{"graph": "g", "nights": [night], "pid": 7, "host": "h"},
                {"graph": "h", "nights": [], "error": SnapshotError("no snapshot of 'h'"),
                 "pid": None, "host": None}]

    monkeypatch.delenv("ORAL_DASK_ADDRESS", raising=False)
    monkeypatch.setattr(fanout, "backfill", fake)
    monkeypatch.setattr(cli_pipeline, "start_pipeline", lambda state_dir: None)
    root = tmp_path / "snaps"
    for g in ("g", "h"):
        (root / g).mkdir(parents=True)
    code = main(["backfill", "--graph", "g", "--graph", "h", "--snapshots", str(root),
                 "--state-dir", str(tmp_path / "state"), "--scheduler", "tcp://sched:8786"])
    assert code == 2 and seen["graphs"] == ["g", "h"] and seen["address"] == "tcp://sched:8786"
    out = capsys.readouterr()
    assert "g 2026-03-01: 3 classes (1 novel)" in out.out and "[pid 7 on h]" in out.out
    assert out.err.strip() == "error: no snapshot of 'h'"


def test_the_choose_flow_chooses_what_oral_choose_chooses(prefect_env, tmp_path, capsys):
    """The ``choose/graph`` deployment's flow and ``oral choose`` are one service
    (:func:`flows.choice.choose_settings`): the same fits (their keys), the same choice."""
    import json

    from cli.main import main
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph
    from flows.choose import choose

    graph = make_static_graph(num_nodes=300, num_classes=4, num_features=8, separation=4.0,
                              seed=0, name="g")
    simulate(graph, 1, tmp_path / "snaps", "g", start_date="2026-04-01", seed=0,
             known_classes=[0, 1, 2])
    tiny = {"epochs": 6, "hidden_dim": 8, "num_prototypes": 8}
    by_cli, by_flow = tmp_path / "cli", tmp_path / "flow"
    assert main(["choose", "--graph", "g", "--snapshots", str(tmp_path / "snaps"), "--candidate",
                 "gamma=0.1", "--out", str(by_cli), "--seeds", "2", "--window", "2",
                 *[a for k, v in tiny.items() for a in ("--set", f"{k}={v}")]]) == 0
    got = choose(graph="g", snapshot_root=str(tmp_path / "snaps"), candidates=[{"gamma": 0.1}],
                 config=tiny, seeds=2, window=2, out=str(by_flow))
    cli_choice = json.loads((by_cli / "g.json").read_text())
    assert got["chosen"] == cli_choice["chosen"] and got["set"] == cli_choice["set"]
    assert json.loads((by_flow / "g.json").read_text()) == cli_choice

    def keys(root):
        return sorted(json.dumps(json.loads(p.read_text())["key"], sort_keys=True)
                      for p in root.rglob("*seed_*.json"))
    assert keys(by_flow) == keys(by_cli) and len(keys(by_cli)) >= 4
