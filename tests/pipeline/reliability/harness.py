"""What the reliability tests share (the module-level part of the former tests/test_reliability.py):
constants, the ``Env`` readers of the package's state folder, the consistency check and the
small snapshot writers. The fixtures that build the state are in conftest.py."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import reliability_helpers as helpers  # noqa: F401 - the child processes' code, for the tests

ROOT = Path(__file__).resolve().parents[3]
HELPER = Path(__file__).resolve().with_name("reliability_helpers.py")
D1, D2 = "2026-03-01", "2026-03-02"
#: a small night: these tests are about a night's steps and stores, not the method, so the
#: granularity sweep takes 10 resolutions (not 30) and the known-class head fixed hops (no
#: cross-validated choice); a night then costs about 0.8 of the defaults' (the method's own
#: choices are tested in tests/core)
CONFIG = {"epochs": 10, "hidden_dim": 16, "pol_start_epoch": 5, "cluster_warmup_epochs": 3,
          "device": "cpu", "resolution_steps": 10, "known_head_hops": 2}
TABLES = ("snapshots", "runs", "classes", "node_assignments", "class_lineage")
VOLATILE = {"published_at", "validated_at", "prefect_flow_run_id"}
LOCK_LINE = "is locked by another process"


class Env:
    """The package's state folder, snapshot root and stores, with readers for the tests."""

    def __init__(self, base: Path, state: Path, root: Path):
        self.base, self.state, self.root = base, state, root
        self.db = state / "oral.duckdb"
        self.prefect_env: dict[str, str] = {}
        self._client = None

    def graph(self, name: str, source: str = "base") -> str:
        """A graph of its own for one test: a copy of ``source``'s snapshots."""
        if not (self.root / name).exists():
            shutil.copytree(self.root / source, self.root / name)
        return name

    def night(self, graph: str, date: str = D1, state: Path | None = None):
        from flows.nightly import nightly_discovery

        return nightly_discovery(graph, str(self.root), date, CONFIG, str(state or self.state))

    @property
    def client(self):
        if self._client is None:
            import mlflow

            from tasks.registry import TrackingConfig

            cfg = TrackingConfig(None, self.state)
            self._client = mlflow.MlflowClient(tracking_uri=cfg.uri, registry_uri=cfg.registry)
        return self._client

    def versions(self, graph: str) -> list:
        """Every registered version of ``oral-<graph>`` (none when the model does not exist)."""
        return sorted(self.client.search_model_versions(f"name = 'oral-{graph}'"),
                      key=lambda v: int(v.version))

    def champion(self, graph: str):
        try:
            return int(self.client.get_model_version_by_alias(f"oral-{graph}", "champion").version)
        except Exception:  # noqa: BLE001 - no model or no alias
            return None

    @contextlib.contextmanager
    def con(self):
        import duckdb

        con = duckdb.connect(str(self.db), read_only=True)
        try:
            yield con
        finally:
            con.close()

    def rows(self, graph: str) -> dict[str, list[dict]]:
        """Every row of ``graph`` in every table as dicts (volatile timestamps left out), sorted."""
        if not self.db.exists():
            return {t: [] for t in TABLES}
        out = {}
        with self.con() as con:
            for table in TABLES:
                cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()
                        if r[0] not in VOLATILE]
                where = ("graph = ?" if table in ("snapshots", "runs", "class_lineage") else
                         "run_id IN (SELECT run_id FROM runs WHERE graph = ?)")
                found = con.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE {where}",
                                    [graph]).fetchall()
                out[table] = sorted((dict(zip(cols, row)) for row in found), key=repr)
        return out

    def child_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("ORAL_TRACKING_URI", "MLFLOW_TRACKING_URI", "ORAL_WAREHOUSE")}
        env.update(self.prefect_env, ORAL_STATE_DIR=str(self.state), OMP_NUM_THREADS="1",
                   PYTHONUNBUFFERED="1")
        return env


def check_consistent(env: Env, graph: str | None = None) -> None:
    """Invariants over the whole state folder (or one ``graph``'s runs and model): every ``runs``
    row names an MLflow version that exists and carries its run id; each run's assignments,
    classes and lineage are complete; no registered model holds two versions of one pipeline
    run."""
    with env.con() as con:
        runs = con.execute("SELECT run_id, model_name, model_version, mlflow_run_id, num_nodes, "
                           "num_classes FROM runs" + (" WHERE graph = ?" if graph else ""),
                           [graph] if graph else []).fetchall()
        for run_id, name, version, mlflow_run, nodes, classes in runs:
            mv = env.client.get_model_version(name, str(version))  # raises if it does not exist
            assert mv.tags.get("oral_run_id") == run_id and mv.run_id == mlflow_run
            n, distinct = con.execute("SELECT count(*), count(DISTINCT node_id) FROM "
                                      "node_assignments WHERE run_id = ?", [run_id]).fetchall()[0]
            assert n == distinct == nodes
            assert con.execute("SELECT count(*) FROM classes WHERE run_id = ?",
                               [run_id]).fetchall()[0][0] == classes
            orphans = con.execute(
                "SELECT count(*) FROM node_assignments a LEFT JOIN classes c ON c.run_id = a.run_id "
                "AND c.class_key = a.class_key WHERE a.run_id = ? AND c.run_id IS NULL",
                [run_id]).fetchall()[0][0]
            no_lineage = con.execute(
                "SELECT count(*) FROM classes c LEFT JOIN class_lineage l ON l.run_id = c.run_id "
                "AND l.lineage_id = c.lineage_id WHERE c.run_id = ? AND l.run_id IS NULL",
                [run_id]).fetchall()[0][0]
            assert orphans == 0 and no_lineage == 0
    models = env.client.search_registered_models(
        f"name = 'oral-{graph}'" if graph else None)
    for model in models:
        tags = [v.tags.get("oral_run_id") for v in env.client.search_model_versions(
            f"name = '{model.name}'")]
        assert len(tags) == len(set(tags)), f"{model.name} holds two versions of one run: {tags}"


def _collect(proc: subprocess.Popen, lines: list[str]) -> None:
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))


def _write_snapshot_files(folder: Path, nodes: pa.Table | bytes, edges: pa.Table | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in (("nodes.parquet", nodes), ("edges.parquet", edges)):
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            pq.write_table(content, folder / name)
    return folder


def _good_nodes(n: int = 40, width: int = 4) -> pa.Table:
    from data_contracts import snapshots as snap

    rng = np.random.default_rng(0)
    labels = [["a", "b"][i % 2] if i < 20 else None for i in range(n)]
    return snap.nodes_table(list(range(n)), rng.random((n, width)).astype(np.float32), labels)


def _good_edges(n: int = 40) -> pa.Table:
    return pa.table({"src": pa.array(np.arange(n - 1)), "dst": pa.array(np.arange(1, n))})
