"""The fixtures every reliability test shares, package-scoped so that one Prefect harness, one
state folder and one snapshot root serve the whole package (as they served the one module it
was split from): ``env`` and ``concurrent`` are built once, before the first test needing them."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from .harness import ROOT, HELPER, helpers, D1, CONFIG, LOCK_LINE, Env, _collect


@pytest.fixture(scope="package")
def one_thread():
    """tests/conftest.py's ``one_thread`` for the whole package (``env`` is package-scoped)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="package")
def env(tmp_path_factory, one_thread):
    base = tmp_path_factory.mktemp("reliability")
    state = base / "st'ate; DROP TABLE runs; --"
    root = base / 'snap"shots\' OR 1=1; --'
    state.mkdir()  # Prefect creates its home inside it when it is first imported
    with pytest.MonkeyPatch.context() as mp:  # every variable is restored afterwards
        for k in ("ORAL_TRACKING_URI", "ORAL_WAREHOUSE", "MLFLOW_TRACKING_URI"):
            mp.delenv(k, raising=False)
        mp.setenv("ORAL_STATE_DIR", str(state))
        from flows.settings import configure_environment

        configure_environment(state)
        from tests.prefect_harness import prefect_harness

        with prefect_harness():
            import prefect.settings as ps

            from data_contracts.simulate import simulate
            from data_contracts.synthetic import make_static_graph

            static = make_static_graph(num_nodes=360, num_classes=4, num_features=16,
                                       separation=4.0, seed=0, name="base")
            simulate(static, 2, root, "base", start_date=D1, seed=0, known_classes=[0, 1, 2],
                     novel_start={3: 1})
            other = make_static_graph(num_nodes=330, num_classes=4, num_features=16,
                                      separation=4.0, seed=1, name="beta")
            simulate(other, 2, root, "beta", start_date=D1, seed=1, known_classes=[0, 1, 2],
                     novel_start={3: 1})
            e = Env(base, state, root)
            e.prefect_env = {"PREFECT_API_URL": str(ps.PREFECT_API_URL.value()),
                             "PREFECT_HOME": str(ps.PREFECT_HOME.value()),
                             "PREFECT_LOCAL_STORAGE_PATH": str(ps.PREFECT_LOCAL_STORAGE_PATH.value())}
            yield e


@pytest.fixture(scope="package")
def concurrent(env, tmp_path_factory):
    """Three nightly runs started at once in three processes against one state folder: graph
    ``alpha`` twice (same snapshot: a child process and this test process), graph ``beta`` once
    (another child), while a fourth process holds the DuckDB file's write lock until every run
    has logged that it waits for it (at most 45 s, inside the warehouse's 60 s lock timeout).
    The flow registers under the DuckDB writer limit (lineage, MLflow registration and the
    publish hold it together), so the second ``alpha`` run finds the first one's version and
    reuses it; the race of two processes registering one run at once is forced, outside the
    flow, by ``test_two_processes_registering_one_run_keep_one_version``."""
    import logging

    from tasks.warehouse import Warehouse


    env.graph("alpha")
    Warehouse(env.db, threads=1).ensure_schema()
    child_env = env.child_env()
    holder = subprocess.Popen([sys.executable, str(HELPER), "hold", str(env.db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env=child_env)
    assert holder.stdout.readline().strip() == "LOCKED"
    workers: dict = {}
    here: dict = {"lines": [], "result": None, "error": None}

    class Lines(logging.Handler):
        def emit(self, record):
            here["lines"].append(record.getMessage())
    handler = Lines(level=logging.WARNING)
    for name in ("tasks.warehouse", "tasks.fitting", "tasks.registry"):
        logging.getLogger(name).addHandler(handler)

    def in_this_process():
        try:
            here["result"] = env.night("alpha")
        except BaseException as err:  # noqa: BLE001 - reported by the tests
            here["error"] = err

    start = time.monotonic()
    try:
        for key, graph in (("alpha-child", "alpha"), ("beta-child", "beta")):
            spec = {"graph": graph, "root": str(env.root), "date": D1, "config": CONFIG,
                    "state_dir": str(env.state), "wait_for_go": True,
                    "rendezvous": None}
            proc = subprocess.Popen([sys.executable, str(HELPER), "night", json.dumps(spec)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=child_env)
            lines: list[str] = []
            thread = threading.Thread(target=_collect, args=(proc, lines), daemon=True)
            thread.start()
            workers[key] = (proc, lines, thread)
        deadline = time.monotonic() + 180
        while not all("READY" in lines for _, lines, _ in workers.values()):
            assert time.monotonic() < deadline and all(p.poll() is None for p, _, _ in workers.values()), \
                {k: lines[-20:] for k, (_, lines, _) in workers.items()}
            time.sleep(0.1)
        for proc, _, _ in workers.values():  # go, all at once
            proc.stdin.write("go\n")
            proc.stdin.close()
        local = threading.Thread(target=in_this_process)
        local.start()
        everyone = [lines for _, lines, _ in workers.values()] + [here["lines"]]
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if all(any(LOCK_LINE in line for line in lines) for lines in everyone):
                break
            if any(p.poll() is not None for p, _, _ in workers.values()) or not local.is_alive():
                break
            time.sleep(0.1)
        holder.stdin.close()
        assert holder.stdout.readline().strip() == "RELEASED"
        released_at = time.monotonic()
        local.join(timeout=400)
        for proc, _, thread in workers.values():
            proc.wait(timeout=400)
            thread.join(timeout=30)
    finally:
        for name in ("tasks.warehouse", "tasks.fitting", "tasks.registry"):
            logging.getLogger(name).removeHandler(handler)
        for proc in [p for p, _, _ in workers.values()] + [holder]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = {}
    for key, (proc, lines, _) in workers.items():
        found = [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]
        results[key] = {"rc": proc.returncode, "lines": lines, "result": found[0] if found else None}
    results["alpha-here"] = {"rc": 0 if here["error"] is None else repr(here["error"]),
                             "lines": here["lines"], "result": here["result"]}
    return {"workers": results, "held_s": released_at - start, "elapsed_s": time.monotonic() - start}
