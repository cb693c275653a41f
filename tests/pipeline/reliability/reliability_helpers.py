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

    def __init__(self, con, pause_at: str):
        self._con = con
        self._pause_at = pause_at
        self._in_publish = False

    def execute(self, sql, *args, **kwargs):
        out = self._con.execute(sql, *args, **kwargs)
        self._in_publish = self._in_publish or sql.lstrip().startswith("DELETE FROM")
        if self._pause_at != "none" and self._in_publish and sql.lstrip().startswith(self._pause_at):
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


def cmd_night(spec: dict) -> int:
    """One nightly run, the way a scheduled process would do it (own process, shared stores)."""
    from flows.settings import configure_environment

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
    from tasks.registry import TrackingConfig
    from tasks.registry import champion

    out = champion.track(TrackingConfig(None, Path(spec["state_dir"])), spec["graph"], spec["run"],
                         spec["trained"], tuple(spec["reports"]), [], None, spec["tags"],
                         promote=False)
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
    raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main(sys.argv[1:]))
