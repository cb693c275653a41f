"""Fan-out past one machine: reproduction sweeps and multi-graph backfills as Prefect tasks on a
Dask task runner (``prefect-dask``).

- :func:`reproduction_fanout`: one Prefect task per (method, dataset, prior, seed), each running
  the resumable harness :func:`harness.reproduction.sweep` for its one seed; once every task has
  finished, the flow upserts one ``reproduction.csv`` row per (method, dataset, prior) and writes
  the Markdown tables once, as ``oral reproduce`` does. A seed that fails is reported as failed,
  never as a number.
- :func:`backfill_fanout`: one Prefect task per graph, which runs that graph's nights in date
  order (:func:`flows.nightly.backfill`, a subflow of the task); graphs run in parallel. The
  DuckDB writer is shared: every night publishes under the DuckDB writer lock
  (:func:`tasks.warehouse.writer_lock.writer_lock`, a file lock the operating system drops with a
  dead holder; a second graph waits for it), and the warehouse itself waits for DuckDB's own lock
  held by another process; MLflow calls retry
  (:func:`tasks.registry.with_retries`) and the SQLite store is created once, before the fan-out.

:func:`task_runner` picks the cluster: a scheduler address (``--scheduler`` or
``ORAL_DASK_ADDRESS``) connects to a running Dask cluster, else a temporary local cluster of
``workers`` worker processes, one thread each. Worker processes report to the same Prefect API as
the caller: :func:`shared_api` starts Prefect's temporary server when no ``PREFECT_API_URL`` is
set and hands its address to the workers (through the environment and the settings context).

This module is the only one that imports ``prefect_dask`` / ``dask`` (inside functions), and
:mod:`cli.main` imports it only when a fan-out option is given, so ``oral --help`` stays fast.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

#: the environment variable naming a Dask scheduler (``tcp://host:8786``)
ADDRESS_ENV = "ORAL_DASK_ADDRESS"

_ADDRESS = re.compile(r"^(?:(tcp|tls|ws|wss|ucx)://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")


def check_address(address: str, option: str = "--scheduler") -> str:
    """A Dask scheduler address as ``[tcp://]host:port`` (``tls://``, ``ws://``, ``wss://``,
    ``ucx://`` too); raises :class:`flows.settings.OptionError` naming ``option`` otherwise."""
    from flows.settings import OptionError

    m = _ADDRESS.match(address.strip())
    if not m or not 0 < int(m.group(3)) < 65536:
        label = f"{option}{address}" if option.endswith("=") else f"{option} {address}"
        raise OptionError(f"{label}: not a Dask scheduler address; expected "
                          "tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786")
    return address.strip() if m.group(1) else "tcp://" + address.strip()


def check_workers(workers: int | None, option: str = "--workers") -> int | None:
    from flows.settings import OptionError

    if workers is not None and workers < 1:
        raise OptionError(f"{option} {workers}: need at least one worker process")
    return workers


def resolve_address(address: str | None) -> str | None:
    """The checked scheduler address: the option, else ``ORAL_DASK_ADDRESS``, else None (a local
    cluster)."""
    if address:
        return check_address(address)
    env = os.environ.get(ADDRESS_ENV, "").strip()
    return check_address(env, ADDRESS_ENV + "=") if env else None


def task_runner(address: str | None = None, workers: int = 2):
    """A ``DaskTaskRunner``: connected to the scheduler at ``address``, or running a temporary
    local cluster of ``workers`` worker processes with one thread each (no dashboard)."""
    import logging

    from prefect_dask import DaskTaskRunner

    if address:
        return DaskTaskRunner(address=address)
    # the temporary cluster's start-up and shutdown chatter (INFO, and a WARNING for each worker
    # process killed at shutdown) says nothing an operator needs; errors still show
    logging.getLogger("distributed").setLevel(logging.ERROR)
    return DaskTaskRunner(cluster_kwargs={"n_workers": int(workers), "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None})


@contextmanager
def shared_api(remote: bool = False):
    """Make the Prefect API this process uses reachable to Dask worker processes: with no
    ``PREFECT_API_URL``, Prefect would start one temporary server per worker process (each with
    its own database); this starts the caller's temporary server (the one
    ``get_client`` uses) and sets ``PREFECT_API_URL`` to it, in the environment that local
    workers inherit and in the settings context that each task carries to its worker."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = PREFECT_API_URL.value()
    started = None
    if not url and remote:
        import logging

        logging.getLogger(__name__).warning(
            "no PREFECT_API_URL: the temporary Prefect server listens on 127.0.0.1, which the "
            "workers of a cluster on other hosts cannot reach; set PREFECT_API_URL to a Prefect "
            "server they share (docs/operators.md, \"Scaling out\")")
    if not url:
        from prefect.server.api.server import SubprocessASGIServer

        started = SubprocessASGIServer()
        started.start()
        url = started.api_url
    before = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    try:
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield url
    finally:
        if before is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = before


def _run_name(kind: str, key: str) -> str:
    """``reproduce-oral+gcd`` / ``backfill-shop+social``: the fan-out flow run's name."""
    from prefect.runtime import flow_run

    names = "+".join((flow_run.get_parameters() or {}).get(key) or [])
    return f"{kind}-{names}"[:100]


def _where() -> dict:
    import socket

    return {"pid": os.getpid(), "host": socket.gethostname()}


# ------------------------------------------------------------------ reproduction sweep


def _reproduce_task():
    from prefect import get_run_logger, task
    from prefect.cache_policies import NO_CACHE

    @task(name="reproduce-seed", cache_policy=NO_CACHE,
          task_run_name="{method}-{dataset_name}-{prior_tag}-seed{seed}")
    def reproduce_seed(dataset: str, dataset_name: str, method: str, seed: int, prior: bool,
                       prior_tag: str, config: dict, data_dir: str | None, results: str,
                       protocol: str, known: str, refresh: bool) -> dict:
        """One seed of one table row through the resumable harness (a finished seed file is
        reused). Returns the row (None when the seed failed, with the reason) and where it ran."""
        from oral_core.config import ORALConfig
        from harness.reproduction import sweep

        logger = get_run_logger()
        lines: list[str] = []

        def echo(line: str) -> None:
            lines.append(line)
            logger.info("%s %s prior=%s: %s", method, dataset_name, prior_tag, line)

        rows = sweep(dataset, method, [seed], prior, ORALConfig.from_dict(config), data_dir,
                     results=Path(results), echo=echo, refresh=refresh, protocol=protocol,
                     known=known)
        failed = None if rows else (lines[-1] if lines else "no result")
        return {"method": method, "dataset": dataset, "prior": prior, "seed": seed,
                "row": rows[0] if rows else None, "failed": failed, "lines": lines} | _where()

    return reproduce_seed


def _reproduction_flow():
    from prefect import flow, get_run_logger

    reproduce_seed = _reproduce_task()

    @flow(name="reproduce-fanout", flow_run_name=lambda: _run_name("reproduce", "methods"))
    def reproduction_fanout(datasets: list[str], methods: list[str], seeds: list[int],
                            priors: list[bool], config: dict, data_dir: str | None, results: str,
                            protocol: str = "ours", known: str = "default",
                            refresh: bool = False) -> dict:
        """Every (method, dataset, prior, seed) as one task; then the tables, once."""
        from harness.baselines import not_applicable_reason
        from harness.experiment import prepare
        from oral_core.datasets import canonical_name
        from harness.reproduction import update_csv, write_markdown

        logger = get_run_logger()
        out = Path(results)
        # each dataset loaded (downloaded when missing) once, here, before any worker needs it
        names = {d: canonical_name(prepare(d, data_dir).graph.name or d) for d in datasets}
        futures, skipped = [], []  # futures: ((dataset, method, prior, seed), future)
        for dataset in datasets:
            for method in methods:
                for prior in priors:
                    reason = not_applicable_reason(method, prior)
                    if reason:
                        skipped.append({"method": method, "dataset": dataset, "prior": prior,
                                        "reason": reason})
                        continue
                    for seed in seeds:
                        futures.append(((dataset, method, prior, seed), reproduce_seed.submit(
                            dataset, names[dataset], method, seed, prior,
                            "yes" if prior else "no", config, data_dir, str(out), protocol,
                            known, refresh)))
        tasks = []
        for (d, m, p, s), future in futures:
            future.wait()
            state = future.state
            if state.is_completed():
                tasks.append(state.result())
            else:  # the task itself broke (not a seed that failed to train): failed, no number
                err = state.result(raise_on_failure=False)
                tasks.append({"method": m, "dataset": d, "prior": p, "seed": s, "row": None,
                              "failed": f"{type(err).__name__}: {err}", "lines": [],
                              "broken": True, "pid": None, "host": None})
        summaries = []
        for dataset in datasets:
            for method in methods:
                for prior in priors:
                    rows = sorted((t["row"] for t in tasks if t["row"] is not None
                                   and (t["dataset"], t["method"], t["prior"]) == (dataset, method, prior)),
                                  key=lambda r: r["seed"])
                    if not rows:
                        continue
                    s = update_csv(rows, out)
                    summaries.append({"method": method, "dataset": dataset, "prior": prior,
                                      "classes_true": rows[0]["classes_true"]} | s)
        write_markdown(out)
        failed = [t for t in tasks if t["failed"]]
        for t in failed:
            logger.error("%s %s prior=%s seed %s FAILED: %s", t["method"], t["dataset"],
                         t["prior"], t["seed"], t["failed"])
        return {"tasks": tasks, "summaries": summaries, "skipped": skipped, "failed": failed}

    return reproduction_fanout


def reproduce(datasets: list[str], methods: list[str], seeds: list[int], priors: list[bool],
              config: dict, data_dir: str | None, results: Path, *, protocol: str = "ours",
              known: str = "default", refresh: bool = False, address: str | None = None,
              workers: int = 2) -> dict:
    """Run :func:`reproduction_fanout` on a Dask task runner (``address``, else a local cluster of
    ``workers`` processes). Returns ``{"tasks", "summaries", "skipped", "failed"}``: one record
    per seed (its row or why it failed, and the process id and host it ran in), one summary per
    table row written, and the (method, dataset, prior) that do not apply."""
    runner = task_runner(address, workers)
    with shared_api(remote=bool(address)):
        fl = _reproduction_flow().with_options(task_runner=runner)
        return fl(list(datasets), list(methods), list(seeds), list(priors), dict(config),
                  data_dir, str(results), protocol, known, refresh)


# ------------------------------------------------------------------ multi-graph backfill


def _backfill_task():
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    @task(name="backfill-graph", cache_policy=NO_CACHE, task_run_name="backfill-{graph}")
    def backfill_graph(graph: str, snapshot_root: str, start: str | None, end: str | None,
                       config: dict | None, state_dir: str | None, device: str | None,
                       remote_training: bool | None, cold: bool | None) -> dict:
        """The nights of one graph, oldest first (:func:`flows.nightly.backfill` as a subflow)."""
        from flows.settings import configure_environment, flow_runs_started_here

        configure_environment(state_dir)  # a worker on another machine: the same defaults
        from flows.nightly import backfill

        with flow_runs_started_here():  # subflows of the fan-out's run: no heartbeats of their own
            nights = backfill(graph, snapshot_root, start, end, config, state_dir, device,
                              remote_training=remote_training, cold=cold)
        return {"graph": graph, "nights": nights} | _where()

    return backfill_graph


def _backfill_flow():
    from prefect import flow, get_run_logger

    backfill_graph = _backfill_task()

    @flow(name="backfill-fanout", flow_run_name=lambda: _run_name("backfill", "graphs"))
    def backfill_fanout(graphs: list[str], snapshot_root: str, start: str | None = None,
                        end: str | None = None, config: dict | None = None,
                        state_dir: str | None = None, device: str | None = None,
                        remote_training: bool | None = None, cold: bool | None = None) -> list[dict]:
        """One task per graph, graphs in parallel; returns one record per graph, in the order
        given: its nights, or the error that stopped it (``error``)."""
        from flows.settings import Settings
        from tasks.registry import TrackingConfig, prepare_store
        from tasks.warehouse import Warehouse

        logger = get_run_logger()
        settings = Settings.from_env(state_dir)
        # shared state set up once, before graphs race for it: the warehouse schema, the
        # embedded MLflow store (the writer lock needs no set-up: tasks.warehouse.writer_lock)
        Warehouse(settings.warehouse_path).ensure_schema()
        prepare_store(TrackingConfig(settings.tracking_uri, settings.state_dir))
        futures = [backfill_graph.submit(g, snapshot_root, start, end, config, state_dir, device,
                                         remote_training, cold) for g in graphs]
        out = []
        for graph, future in zip(graphs, futures):
            future.wait()
            state = future.state
            if state.is_completed():
                out.append(state.result())
            else:
                err = state.result(raise_on_failure=False)
                logger.error("backfill of %s failed: %s: %s", graph, type(err).__name__, err)
                out.append({"graph": graph, "nights": [], "error": err, "pid": None,
                            "host": None})
        return out

    return backfill_fanout


def backfill(graphs: list[str], snapshot_root: str, start: str | None = None,
             end: str | None = None, config: dict | None = None, state_dir: str | None = None,
             device: str | None = None, *, remote_training: bool | None = None,
             cold: bool | None = None, address: str | None = None, workers: int = 2) -> list[dict]:
    """Run :func:`backfill_fanout` on a Dask task runner (``address``, else a local cluster of
    ``workers`` processes)."""
    runner = task_runner(address, workers)
    with shared_api(remote=bool(address)):
        fl = _backfill_flow().with_options(task_runner=runner)
        return fl(list(graphs), snapshot_root, start, end, config, state_dir, device,
                  remote_training, cold)
