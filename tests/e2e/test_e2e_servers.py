"""The nightly pipeline against real servers, as an operator runs it (docs/operators.md, "On servers").

One module-scoped stack, all on loopback with free ports and its own folders under pytest's tmp:
``prefect server start`` (own ``PREFECT_HOME``), ``mlflow server`` (SQLite backend, proxied
artifact store), the ``cpu`` and ``gpu`` process work pools, the deployments of
``deployments/prefect.yaml`` created by ``deployments/deploy.sh``, and one process worker per pool
(``PREFECT_WORKER_QUERY_SECONDS=1``), each in its own process group. The tests trigger
deployments with ``prefect deployment run ... --watch`` and check the flow runs' states on the
Prefect API, the rows in DuckDB and the registered model on the MLflow server:

1. ``nightly-discovery/nightly`` on the cpu worker, training in-process;
2. the same for the next night with ``remote_training=true``: training runs as
   ``train-remote/gpu`` on the gpu pool's worker (CPU here), by path through the shared state folder.

Every process started here is stopped at the end, also when a test fails (its process group,
then any child left in a group of its own). Readiness waits poll with a deadline.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prefect_harness import prefect_home_template

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GRAPH = "e2e"
DAYS = ["2026-03-01", "2026-03-02"]
#: a small night: these tests are about a night's steps and stores, not the method, so the
#: granularity sweep takes 10 resolutions (not 30) and the known-class head fixed hops (no
#: cross-validated choice); a night then costs about 0.8 of the defaults' (the method's own
#: choices are tested in tests/core)
CONFIG = {"epochs": 10, "hidden_dim": 16, "pol_start_epoch": 5, "cluster_warmup_epochs": 3,
          "device": "cpu", "resolution_steps": 10, "known_head_hops": 2}
QUIET = {"DO_NOT_TRACK": "true", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
         "MLFLOW_DISABLE_TELEMETRY": "true", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
         "GIT_PYTHON_REFRESH": "quiet", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
START_TIMEOUT = 180   # seconds for a server to answer its health check (2 busy cores)
RUN_TIMEOUT = 300     # seconds for one flow run through a worker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


class Processes:
    """Long-running processes, each started in its own session (process group = its pid)."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], env: dict, cwd: Path = ROOT) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return tail(self.logs / f"{name}.log")

    def stop_all(self) -> None:
        """SIGTERM every live process group at once and SIGKILL those left after 5 s (one wait
        for all, not one per process), then the children that moved to a session of their own
        (flow-run processes). Alone, each stops within about a second of SIGTERM (the servers
        0.9-1.1 s, an idle worker 0.3 s), but the workers here did not within 15 s: 15 s a
        process, one after the other, took this teardown 36 s (43 s in a fresh-clone run); all
        at once with 15 s, 15 s; the workers first, then the servers, 22 s; this, 5 s."""
        import psutil

        live = [proc for _, proc in self.procs if proc.poll() is None]
        children = []
        for proc in live:
            try:
                children += psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                pass
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            for proc in live:
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            for proc in live:
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            live = [proc for proc in live if proc.poll() is None]
            if not live:
                break
        for child in children:
            try:
                if child.is_running():
                    child.kill()
            except psutil.Error:
                pass


def wait_http(url: str, proc: subprocess.Popen, procs: Processes, name: str,
              ok=lambda r: r.status_code == 200, timeout: float = START_TIMEOUT) -> None:
    """Poll ``url`` until ``ok`` (bounded); fail at once, with the log, if the process exits."""
    import httpx

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with {proc.returncode} before it was ready:\n{procs.log(name)}")
        try:
            r = httpx.get(url, timeout=5)
            if ok(r):
                return
            last = f"HTTP {r.status_code}"
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(0.5)
    pytest.fail(f"{name} not ready at {url} after {timeout} s ({last}):\n{procs.log(name)}")


def run_cli(*cmds: list[str], env: dict, timeout: float = 240) -> None:
    """Run short commands side by side (bounded); fail with their output if one fails."""
    running = [(cmd, subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)) for cmd in cmds]
    deadline = time.monotonic() + timeout
    failed = []
    for cmd, proc in running:
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            failed.append(f"{' '.join(cmd)} timed out:\n{out[-3000:]}")
            continue
        if proc.returncode != 0:
            failed.append(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-3000:]}")
    if failed:
        pytest.fail("\n".join(failed))


@pytest.fixture(scope="module")
def stack(tmp_path_factory, request):
    import httpx

    base = tmp_path_factory.mktemp("e2e")
    logs = base / "logs"
    logs.mkdir()
    procs = Processes(logs)
    request.addfinalizer(procs.stop_all)

    prefect_port, mlflow_port = free_port(), free_port()
    api = f"http://127.0.0.1:{prefect_port}/api"
    tracking = f"http://127.0.0.1:{mlflow_port}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ORAL_", "PREFECT_", "MLFLOW_"))} | QUIET
    env |= {"PREFECT_HOME": str(base / "prefect-home"), "PREFECT_API_URL": api,
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}
    server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    # the server's database already migrated, as a server's that ran before (its migrations on
    # a new database take 5-10 s and test nothing of ours; tests/prefect_harness.py)
    template = prefect_home_template()
    if template is not None:
        (base / "prefect-home").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template / "prefect.db", base / "prefect-home" / "prefect.db")
    started = time.monotonic()
    prefect_server = procs.start("prefect-server", [
        str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(prefect_port)],
        server_env)
    artifacts = base / "mlflow-artifacts"
    mlflow_server = procs.start("mlflow-server", [
        str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{base / 'mlflow.db'}",
        "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(mlflow_port),
        "--workers", "1"], env)

    # the snapshots, while the servers start
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    static = make_static_graph(num_nodes=400, num_classes=4, num_features=16, separation=4.0,
                               seed=0, name=GRAPH)
    root = base / "snapshots"
    paths = simulate(static, len(DAYS), root, GRAPH, start_date=DAYS[0], seed=0,
                     known_classes=[0, 1, 2], novel_start={3: 1})

    wait_http(f"{api}/health", prefect_server, procs, "prefect-server")
    ready = time.monotonic() - started
    prefect = str(BIN / "prefect")
    run_cli(*[[prefect, "work-pool", "create", pool, "--type", "process", "--overwrite"]
              for pool in ("cpu", "gpu")], env=env)
    pools = time.monotonic() - started
    state = base / "state"
    worker_env = env | {"PREFECT_WORKER_QUERY_SECONDS": "1", "ORAL_STATE_DIR": str(state),
                        "ORAL_TRACKING_URI": tracking}
    for pool in ("cpu", "gpu"):  # they start while the deployments are made
        procs.start(f"worker-{pool}", [prefect, "worker", "start", "--pool", pool], worker_env)
    deploy_env = env | {"ORAL_GRAPH": GRAPH, "ORAL_SNAPSHOT_ROOT": str(root),
                        "ORAL_SCHEDULE_ACTIVE": "false", "PREFECT": prefect}
    run_cli(["bash", str(ROOT / "deployments" / "deploy.sh")], env=deploy_env)
    deployed = time.monotonic() - started
    wait_http(f"{tracking}/health", mlflow_server, procs, "mlflow-server")
    print(f"\nstack: prefect server healthy after {ready:.1f} s, pools at {pools:.1f} s, deployed "
          f"at {deployed:.1f} s, mlflow server healthy at {time.monotonic() - started:.1f} s")
    yield {"api": api, "tracking": tracking, "env": env, "state": state, "root": root,
           "paths": paths, "artifacts": artifacts, "procs": procs, "ready_seconds": ready,
           "client": httpx.Client(base_url=api, timeout=30)}


def trigger(stack, deployment: str, params: dict) -> dict:
    """``prefect deployment run DEPLOYMENT -p key=<json> ... --watch`` (as in docs/operators.md);
    returns the flow run, read from the API, and fails with its logs unless it COMPLETED."""
    name = f"e2e-{time.monotonic_ns()}"
    cmd = [str(BIN / "prefect"), "deployment", "run", deployment, "--flow-run-name", name,
           "--watch", "--watch-interval", "2", "--watch-timeout", str(RUN_TIMEOUT)]
    for key, value in params.items():
        cmd += ["-p", f"{key}={json.dumps(value)}"]
    out = subprocess.run(cmd, env=stack["env"], cwd=ROOT, capture_output=True, text=True,
                         timeout=RUN_TIMEOUT + 60)
    runs = stack["client"].post("/flow_runs/filter", json={
        "flow_runs": {"name": {"any_": [name]}}}).json()
    assert len(runs) == 1, f"no flow run {name}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    run = runs[0]
    if run["state"]["type"] != "COMPLETED":
        pytest.fail(f"{deployment} ended {run['state']['type']} ({run['state'].get('message')}); "
                    f"CLI exit {out.returncode}\n{flow_run_logs(stack, run['id'])}\n--- worker "
                    f"cpu ---\n{stack['procs'].log('worker-cpu')}\n--- worker gpu ---\n"
                    f"{stack['procs'].log('worker-gpu')}")
    return run


def flow_run_logs(stack, flow_run_id: str, limit: int = 60) -> str:
    logs = stack["client"].post("/logs/filter", json={
        "logs": {"flow_run_id": {"any_": [flow_run_id]}}, "sort": "TIMESTAMP_ASC",
        "limit": 200}).json()
    return "\n".join(f"{entry['level']:>3} {entry['message']}" for entry in logs[-limit:])


def duckdb_rows(state: Path, sql: str, *args) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(args)).fetchall()
    finally:
        con.close()


def model_version(stack, version: int) -> dict:
    import httpx

    r = httpx.get(f"{stack['tracking']}/api/2.0/mlflow/model-versions/get",
                  params={"name": f"oral-{GRAPH}", "version": str(version)}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["model_version"]


def test_deployments_and_schedule(stack):
    client = stack["client"]
    names = {(d["name"], d["work_pool_name"], d["entrypoint"])
             for d in client.post("/deployments/filter", json={}).json()}
    assert names == {("nightly", "cpu", "flows/nightly.py:nightly_discovery"),
                     ("gpu", "gpu", "flows/training.py:train_remote"),
                     ("backfill", "cpu", "flows/nightly.py:backfill"),
                     ("sweep", "cpu", "flows/reproduce.py:reproduce"),
                     ("graph", "cpu", "flows/choose.py:choose")}
    nightly = client.get("/deployments/name/nightly-discovery/nightly").json()
    assert nightly["parameters"] == {"graph": GRAPH, "snapshot_root": str(stack["root"])}
    assert nightly["pull_steps"] == [{"prefect.deployments.steps.set_working_directory": {
        "directory": str(ROOT)}}]
    [schedule] = nightly["schedules"]
    assert schedule["schedule"]["cron"] == "0 2 * * *"
    assert schedule["schedule"]["timezone"] == "Europe/Paris"
    assert schedule["active"] is False  # the test deploys it paused: nothing fires by itself
    assert nightly["job_variables"]["env"]["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "0"
    assert "tasks" in nightly["job_variables"]["env"]["PREFECT_LOGGING_EXTRA_LOGGERS"]


def test_nightly_run_through_the_cpu_worker(stack):
    import pyarrow.parquet as pq

    started = time.monotonic()
    run = trigger(stack, "nightly-discovery/nightly", {"date": DAYS[0], "config": CONFIG})
    print(f"nightly run {time.monotonic() - started:.1f} s through the worker")
    rows = duckdb_rows(stack["state"], "SELECT run_id, device, model_version, mlflow_run_id FROM "
                       "runs WHERE graph = ? AND prefect_flow_run_id = ?", GRAPH, run["id"])
    assert len(rows) == 1, f"no DuckDB run for flow run {run['id']}"
    run_id, device, version, mlflow_run_id = rows[0]
    assert device == "cpu" and int(version) == 1 and mlflow_run_id
    nodes = pq.read_metadata(stack["paths"][0] / "nodes.parquet").num_rows
    [(assigned,)] = duckdb_rows(stack["state"], "SELECT count(*) FROM node_assignments WHERE "
                                "run_id = ?", run_id)
    assert assigned == nodes
    mv = model_version(stack, 1)
    assert mv["run_id"] == mlflow_run_id and mv["status"] == "READY"
    # artifacts went to the server's artifact store, not to a client-side folder
    assert any(stack["artifacts"].rglob("predictions*")), "no artifact in the server's store"
    assert not (stack["state"] / "mlartifacts").exists()
    assert "training runs in-process" in flow_run_logs(stack, run["id"], limit=200)


def test_nightly_with_remote_training_on_the_gpu_pool(stack):
    started = time.monotonic()
    run = trigger(stack, "nightly-discovery/nightly",
                  {"date": DAYS[1], "config": CONFIG, "remote_training": True})
    print(f"nightly run with remote training {time.monotonic() - started:.1f} s")
    client = stack["client"]
    children = client.post("/flow_runs/filter", json={
        "flow_runs": {"parent_flow_run_id": {"any_": [run["id"]]}}}).json()
    remote = [c for c in children if c["name"].startswith(f"train-{GRAPH}-")]
    assert len(remote) == 1 and remote[0]["state"]["type"] == "COMPLETED"
    deployment = client.get(f"/deployments/{remote[0]['deployment_id']}").json()
    assert (deployment["name"], deployment["work_pool_name"]) == ("gpu", "gpu")
    assert "training runs remotely" in flow_run_logs(stack, run["id"], limit=200)
    rows = duckdb_rows(stack["state"], "SELECT run_id, device, model_version FROM runs WHERE "
                       "graph = ? AND prefect_flow_run_id = ?", GRAPH, run["id"])
    assert len(rows) == 1 and rows[0][1] == "cpu" and int(rows[0][2]) == 2
    results = list((stack["state"] / "runs" / GRAPH).glob("*/train_result.json"))
    assert len(results) == 1 and json.loads(results[0].read_text())["content_hash"]
    assert model_version(stack, 2)["status"] == "READY"


def test_killed_night_with_servers(stack):
    """Issue 49 with the external servers of docs/operators.md: a Prefect server that still holds the old
    ``oral-duckdb-writer`` limit with its one slot taken for ever (what a night killed under it
    left), an MLflow server. ``oral run`` is killed (SIGKILL) inside its DuckDB publish, the
    MLflow version already registered; the rerun of the same snapshot finishes without waiting
    (the dead night's writer lock is reported and taken), the next snapshot's night too; DuckDB
    and the MLflow server agree: one version per night, each DuckDB run naming its version."""
    import threading

    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    graph = "e2e-killed"
    static = make_static_graph(num_nodes=300, num_classes=4, num_features=16, separation=4.0,
                               seed=2, name=graph)
    simulate(static, len(DAYS), stack["root"], graph, start_date=DAYS[0], seed=2,
             known_classes=[0, 1, 2], novel_start={3: 1})
    stuck = stack["client"].post("/v2/concurrency_limits/", json={
        "name": "oral-duckdb-writer", "limit": 1, "active_slots": 1, "slot_decay_per_second": 0})
    assert stuck.status_code in (200, 201), stuck.text
    env = stack["env"] | {"ORAL_STATE_DIR": str(stack["state"]),
                          "ORAL_TRACKING_URI": stack["tracking"]}
    args = ["run", "--graph", graph, "--snapshots", str(stack["root"]), "--epochs", "10",
            "--set", "hidden_dim=16", "--set", "pol_start_epoch=5", "--set",
            "cluster_warmup_epochs=3", "--device", "cpu"]
    helper = ROOT / "tests" / "pipeline" / "reliability" / "reliability_helpers.py"
    killed = subprocess.Popen([sys.executable, str(helper), "cli", "publish-mid", *args,
                               "--date", DAYS[0]], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    timer = threading.Timer(RUN_TIMEOUT, killed.kill)  # a night that never pauses fails below
    timer.start()
    seen = []
    try:
        for line in killed.stdout:
            seen.append(line)
            if line.startswith("PAUSED publish-mid"):
                killed.send_signal(signal.SIGKILL)
                break
        assert killed.wait(timeout=120) == -signal.SIGKILL, "".join(seen[-40:])
    finally:
        timer.cancel()
        if killed.poll() is None:
            killed.kill()
            killed.wait()
        killed.stdout.close()
    assert duckdb_rows(stack["state"], "SELECT count(*) FROM runs WHERE graph = ?", graph) == [(0,)]

    for day in DAYS:  # the same snapshot again, then the next one: neither waits
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "cli.main", "-v", *args, "--date", day],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        took = time.monotonic() - started
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert "waiting for the DuckDB writer lock" not in out.stderr
        if day == DAYS[0]:
            assert f"left by pid {killed.pid} on host" in out.stderr, out.stderr[-3000:]
        print(f"{graph} {day}: {took:.1f} s after the kill")
        assert took < RUN_TIMEOUT
    runs = duckdb_rows(stack["state"], "SELECT snapshot_date, run_id, model_version FROM runs "
                       "WHERE graph = ? ORDER BY snapshot_date", graph)
    assert [str(r[0]) for r in runs] == DAYS
    r = httpx_get(stack, "/api/2.0/mlflow/model-versions/search",
                  {"filter": f"name = 'oral-{graph}'"})
    versions = {int(v["version"]): {t["key"]: t["value"] for t in v.get("tags", [])}
                for v in r["model_versions"]}
    assert sorted(versions) == sorted(int(v) for _, _, v in runs)  # one version per night
    for _, run_id, version in runs:
        assert versions[int(version)]["oral_run_id"] == run_id
    limit = stack["client"].get("/v2/concurrency_limits/oral-duckdb-writer").json()
    assert limit["active_slots"] == 1  # still stuck, and nothing waited on it
    stack["client"].delete("/v2/concurrency_limits/oral-duckdb-writer")


def httpx_get(stack, path: str, params: dict) -> dict:
    import httpx

    r = httpx.get(f"{stack['tracking']}{path}", params=params, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()
