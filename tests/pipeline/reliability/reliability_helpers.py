"""Child processes for the reliability tests of tests/pipeline/reliability/ (fault injection that
needs a real process: a SIGKILL, a second writer, a lock held by someone else), and the synthetic
publish data they share. ``H`` is tests/pipeline/reliability/reliability_helpers.py:

    python H publish DB TAG PAUSE_AT   publish run TAG; when PAUSE_AT (a statement prefix such
        as "INSERT INTO node_assignments", or "COMMIT") has run, print PAUSED and wait to be
        killed ("none": publish and exit)
    python H hold DB                   open DB read-write, print LOCKED, hold it until stdin
        closes
    python H night JSON                one nightly flow run in this process (Prefect API from
        the environment); prints READY before (then, with "wait_for_go", waits for a line on
        stdin), RESULT <json> after; with "rendezvous" (a folder), MLflow logging waits for a
        second process to reach it too
    python H forkserver JSON           import the pipeline once (``configure_environment`` of
        the spec's ``state_dir``), print READY, then fork one nightly run per line of JSON read
        from stdin (``{"tag", "graph", "root", "date", "config", "state_dir", "pause_at",
        "log"}``): each prints ``STARTED <tag> <pid>``, then ``PAUSED <tag> <pid>`` when it
        reaches ``pause_at`` (one of :data:`PAUSE_POINTS`; it then waits to be killed) or
        ``RESULT <tag> <json>`` / ``FAILED <tag> <error>``; its log goes to ``log``. A fork
        starts a night in about a second, where a fresh process spends ~8 s importing
    python H writer-lock DB GRAPH      hold the DuckDB writer lock of DB
        (:func:`tasks.warehouse.writer_lock.writer_lock`), print LOCKED, wait to be killed
    python H cli POINT ARGS...         ``oral ARGS...`` (:func:`cli.main.main`) with the pause
        ``POINT`` installed (``none``: no pause)
    python H track JSON                :func:`tasks.registry.champion.track` of one trained run
        (``trained``, ``run``, ``tags`` in JSON) after a rendezvous with a second process:
        both register the same run at once (the flow no longer can: it registers under the
        writer limit); prints RESULT <json>

Only the standard library, numpy, pyarrow and duckdb are imported for ``publish`` and ``hold``;
``night`` imports the whole pipeline.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUN_DATES = {"first": dt.date(2026, 5, 1), "second": dt.date(2026, 5, 2)}
GRAPH = "killed"
NODES = 12_000


def publish_data(tag: str) -> dict:
    """The arguments of ``Warehouse.publish_run`` for synthetic run ``tag`` (deterministic):
    ``NODES`` nodes in six classes (two novel), lineage computed without a previous run."""
    import numpy as np
    import pyarrow as pa

    from tasks.warehouse.lineage import LineageConfig, track_lineage

    date = RUN_DATES[tag]
    rng = np.random.default_rng(len(tag))
    keys = rng.integers(0, 6, NODES)
    node_ids = [f"{tag[0]}{i:06d}" for i in range(NODES)]
    names = {0: "A", 1: "B", 2: "C", 3: "D"}
    members = {int(k): [node_ids[i] for i in np.flatnonzero(keys == k)] for k in range(6)}
    lineage = track_lineage(None, members, graph=GRAPH, snapshot_date=date, current_names=names,
                            max_novel_index=0, config=LineageConfig())
    assignments = pa.table({"node_id": node_ids, "class_key": keys.astype(np.int64),
                            "is_novel": keys >= 4, "confidence": rng.random(NODES)})
    classes = [{"class_key": k, "lineage_id": lineage.lineage_of[k], "class_name": names.get(k),
                "is_novel": k >= 4, "size": len(v), "mean_confidence": 0.5,
                "top_features": [], "exemplars": v[:3], "purity": None,
                "majority_true_label": None} for k, v in members.items()]
    run = {"graph": GRAPH, "snapshot_date": date, "content_hash": f"content-{tag}",
           "config_hash": "cfg", "num_nodes": NODES, "num_classes": 6,
           "published_at": dt.datetime(2026, 5, 3)}
    snapshot = {"path": f"/snapshots/{GRAPH}/snapshot={date}", "nodes": NODES}
    return {"run": run, "snapshot": snapshot, "assignments": assignments, "classes": classes,
            "lineage_rows": lineage.rows}


class _PausingConnection:
    """A DuckDB connection that stops (prints PAUSED, sleeps) right after one statement of the
    publishing transaction ran (statements before its first DELETE, such as the schema's own
    transaction, do not count)."""

    def __init__(self, con, pause_at: str, pause=None):
        self._con = con
        self._pause_at = pause_at
        self._in_publish = False
        self._pause = pause

    def execute(self, sql, *args, **kwargs):
        out = self._con.execute(sql, *args, **kwargs)
        self._in_publish = self._in_publish or sql.lstrip().startswith("DELETE FROM")
        if self._pause_at != "none" and self._in_publish and sql.lstrip().startswith(self._pause_at):
            if self._pause is not None:
                self._pause()
            print("PAUSED", flush=True)
            time.sleep(600)  # the test kills us here
        return out

    def __getattr__(self, name):
        return getattr(self._con, name)


def cmd_publish(db: str, tag: str, pause_at: str) -> int:
    from tasks.warehouse import Warehouse

    original = Warehouse.connect

    def connect(self, *args, **kwargs):
        return _PausingConnection(original(self, *args, **kwargs), pause_at)

    Warehouse.connect = connect
    run_id = Warehouse(db, threads=1).publish_run(**publish_data(tag))
    print(f"PUBLISHED {run_id}", flush=True)
    return 0


def cmd_hold(db: str) -> int:
    import duckdb

    con = duckdb.connect(db)
    print("LOCKED", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    con.close()
    print("RELEASED", flush=True)
    return 0


def install_rendezvous(folder: str, name: str, parties: int = 2, timeout: float = 150.0):
    """Make ``log_training_run`` (as :func:`tasks.registry.champion.track` calls it) wait until
    ``parties`` processes reached it (or ``timeout`` passed): two runs of one snapshot then both find no registered version and both
    register, the race that used to leave two versions. Returns the original function."""
    from tasks.registry import champion as tracking

    real = tracking.log_training_run

    def wait_for_the_others(*args, **kwargs):
        Path(folder, name).touch()
        deadline = time.monotonic() + timeout
        while len(list(Path(folder).iterdir())) < parties and time.monotonic() < deadline:
            time.sleep(0.05)
        return real(*args, **kwargs)
    tracking.log_training_run = wait_for_the_others
    return real


#: where a night can be stopped (SIGKILL) by the tests, in the order a night reaches them: before,
#: inside and after lineage, MLflow registration, the DuckDB publish and the champion alias move
#: (lineage, register and publish run under the DuckDB writer lock; the gate runs after it)
PAUSE_POINTS = ("lineage-start", "lineage-end", "register-start", "register-mid", "register-end",
                "publish-mid", "publish-end", "champion-start", "champion-mid", "champion-end")


def _pause(point: str) -> None:
    print(f"PAUSED {point} {os.getpid()}", flush=True)
    time.sleep(600)  # the test kills us here
    os._exit(3)


def install_pause(point: str) -> None:
    """Make this process stop at ``point`` of a nightly run (:data:`PAUSE_POINTS`): print
    ``PAUSED <point> <pid>`` and sleep until killed. Test code only, patched in this process:
    the pipeline has no pause hook of its own."""
    import mlflow

    from tasks import publishing
    from tasks.registry import champion
    from tasks.warehouse import Warehouse

    def before(owner, name):
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            _pause(point)
            return real(*args, **kwargs)
        setattr(owner, name, wrapped)

    def after(owner, name):
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            out = real(*args, **kwargs)
            _pause(point)
            return out
        setattr(owner, name, wrapped)

    if point == "none":
        return
    if point == "publish-mid":  # inside DuckDB's transaction: every row but the lineage written
        original = Warehouse.connect

        def connect(self, *args, **kwargs):
            return _PausingConnection(original(self, *args, **kwargs), "INSERT INTO class_lineage",
                                      lambda: _pause(point))
        Warehouse.connect = connect
        return
    where = {"lineage-start": (before, publishing, "lineage"), "lineage-end": (after, publishing, "lineage"),
             "register-start": (before, champion, "track"),
             # the MLflow run and its model are logged, no version registered yet
             "register-mid": (after, champion, "log_training_run"),
             "register-end": (after, champion, "track"),
             "publish-end": (after, publishing, "write_run"),
             "champion-start": (before, champion, "champion_gate"),
             # the alias moved, the gate's decision not yet written
             "champion-mid": (after, mlflow.MlflowClient, "set_registered_model_alias"),
             "champion-end": (after, champion, "champion_gate")}
    how, owner, name = where[point]
    how(owner, name)


def cmd_forkserver(spec: dict) -> int:
    """Nightly runs forked from one process that imported the pipeline (see the module doc)."""
    import signal

    from flows.settings import configure_environment

    configure_environment(spec["state_dir"])
    import torch

    torch.set_num_threads(1)
    import flows.nightly  # noqa: F401 - imported once, before any fork
    install_pause("none")  # imports what the pauses patch
    # and what a night imports on its way (Great Expectations alone takes seconds), so that each
    # fork starts warm; nothing here starts a thread or a connection
    import importlib

    for name in ("data_contracts.gx_expectations", "great_expectations", "mlflow.pyfunc",
                 "tasks.registry.pyfunc", "tasks.registry.plots", "matplotlib.figure",
                 "matplotlib.backends.backend_agg", "sklearn.linear_model", "tasks.events",
                 "tasks.report", "oral_core.inference", "prefect.artifacts", "prefect.events"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import threading

    assert threading.active_count() == 1, threading.enumerate()  # forking is safe
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children reap themselves
    print("READY", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        night = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            continue
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        code = 1
        try:
            log = os.open(night["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(log, 2)
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s "
                                                   "%(message)s"))
            for name in ("tasks", "data_contracts", "flows"):
                logging.getLogger(name).addHandler(handler)
                logging.getLogger(name).setLevel(logging.INFO)
            print(f"STARTED {night['tag']} {os.getpid()}", flush=True)
            install_pause(night.get("pause_at") or "none")
            from flows.nightly import nightly_discovery
            from flows.settings import flow_runs_started_here

            with flow_runs_started_here():  # as the CLI runs a night
                out = nightly_discovery(night["graph"], night["root"], night["date"],
                                        night["config"], night["state_dir"])
            print(f"RESULT {night['tag']} " + json.dumps(out, default=str), flush=True)
            code = 0
        except BaseException as err:  # noqa: BLE001 - reported to the test
            import traceback

            traceback.print_exc()
            print(f"FAILED {night['tag']} {type(err).__name__}: {' '.join(str(err).split())}",
                  flush=True)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return 0


def cmd_writer_lock(db: str, graph: str) -> int:
    from tasks.warehouse.writer_lock import writer_lock

    with writer_lock(db, graph):
        print("LOCKED", flush=True)
        time.sleep(600)  # the test kills us, or stops waiting
    return 0


def cmd_cli(point: str, args: list[str]) -> int:
    from cli.main import main as oral

    install_pause(point)
    return oral(args)


def cmd_night(spec: dict) -> int:
    """One nightly run, the way a scheduled process would do it (own process, shared stores)."""
    from flows.settings import configure_environment, flow_runs_started_here

    configure_environment(spec["state_dir"])
    import torch

    torch.set_num_threads(1)
    from flows.nightly import nightly_discovery

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("tasks", "data_contracts"):
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.INFO)
    if spec.get("rendezvous"):
        install_rendezvous(spec["rendezvous"], f"pid-{os.getpid()}")
    print("READY", flush=True)
    if spec.get("wait_for_go"):
        sys.stdin.readline()  # the test starts every worker at once
    with flow_runs_started_here():  # as the CLI runs a night
        out = nightly_discovery(spec["graph"], spec["root"], spec["date"], spec["config"],
                                spec["state_dir"])
    print("RESULT " + json.dumps(out, default=str), flush=True)
    return 0


def cmd_track(spec: dict) -> int:
    """Two processes registering one run at once, without the flow's writer limit."""
    from flows.settings import configure_environment

    configure_environment(spec["state_dir"])
    logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
    install_rendezvous(spec["rendezvous"], f"pid-{os.getpid()}")
    from tasks.fitting import TrainResult
    from tasks.registry import TrackingConfig
    from tasks.registry import champion

    out = champion.track(TrackingConfig(None, Path(spec["state_dir"])), spec["graph"], spec["run"],
                         TrainResult.from_dict(spec["trained"]), tuple(spec["reports"]), [], None,
                         spec["tags"], promote=False)
    print("RESULT " + json.dumps(out, default=str), flush=True)
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[0]
    if cmd == "publish":
        return cmd_publish(argv[1], argv[2], argv[3])
    if cmd == "hold":
        return cmd_hold(argv[1])
    if cmd == "night":
        return cmd_night(json.loads(argv[1]))
    if cmd == "track":
        return cmd_track(json.loads(argv[1]))
    if cmd == "forkserver":
        return cmd_forkserver(json.loads(argv[1]))
    if cmd == "writer-lock":
        return cmd_writer_lock(argv[1], argv[2])
    if cmd == "cli":
        return cmd_cli(argv[1], argv[2:])
    raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main(sys.argv[1:]))
