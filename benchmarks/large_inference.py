"""Large inference: writing and publishing the predictions of millions of nodes, memory bounded.

    OMP_NUM_THREADS=1 python -m benchmarks.large_inference --nodes 1000000 10000000 \
        --memory-limit none 256MB

For each size N, synthetic predictions (node ids ``n<i>``, a handful of classes of which three
are known, random confidences) go through the pipeline's own code, each stage in a fresh
subprocess so that one stage's or size's memory cannot show in another's peak:

- ``write``: :func:`tasks.predictions.write_predictions` writes night 1's ``predictions.parquet`` in row
  groups of ``--chunk`` rows (night 2's file, 5% of the nodes replaced and 10% moved to another
  class, is written by the same process but not timed);
- ``write (one table)``, for comparison: night 1 built as one Arrow table
  (:func:`tasks.predictions.predictions_table`) and written by one ``pq.write_table``;
- ``publish_run only``: the DuckDB transaction alone, :meth:`tasks.warehouse.Warehouse.publish_run`
  of night 1 from its Parquet file to a fresh DuckDB file (classes given their lineage ids, no
  lineage computed): the streaming insert and its checks;
- ``publish``: :func:`tasks.publishing.publish` of night 1 from its Parquet file to a fresh DuckDB file
  (lineage: every class emerges; DuckDB streams the file into ``node_assignments``);
- ``publish+lineage``: night 2 from its file into that warehouse: lineage pairs the two nights'
  nodes in DuckDB and matches the classes on compact node keys, then the same streaming insert;
- ``publish+lineage (table)``: night 2 again, on a copy of the night-1 warehouse, from the whole
  predictions table read into memory first (``pq.read_table``), as ``tasks.prefect_tasks.publish``
  hands it over today.

Reported per stage: wall seconds of the stage's call (input generation and imports excluded), the
``publish_run`` (DuckDB transaction) and ``node_pairs`` (lineage's join in DuckDB) parts of it,
the subprocess's resident memory when the call starts (its inputs loaded), and its peak RSS
(``resource.getrusage(...).ru_maxrss``) after the call. Just before the call the process's
high-water mark is reset (``/proc/self/clear_refs``, Linux), so the peak is the call's own
(inputs resident during it included), not input generation's; where the reset is refused the
peak is the whole process's (column ``peak_reset``). Results go to
``benchmarks/results/large_inference/large_inference.md`` and ``.csv`` (``--out`` to change). DuckDB runs with
``--threads`` threads (default 1, like the tests); the publishing stages run once per
``--memory-limit`` value (DuckDB's ``memory_limit``, ``Warehouse(memory_limit=...)``; ``none``:
DuckDB's default, 80% of the machine's memory).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = ["nodes", "chunk_rows", "stage", "duckdb_memory_limit", "seconds", "publish_run_seconds",
           "node_pairs_seconds",
           "rss_start_mb", "peak_rss_mb", "peak_reset", "file_mb", "rows_published"]
NAMES = ["alpha", "beta", "gamma"]
CLASSES = 8


def _rss_mb() -> float:
    """Peak RSS of this process (since the last :func:`_start`), MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _start() -> dict:
    """Reset the high-water mark of resident memory; return the resident memory now."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        reset = False
    now = None
    try:
        with open("/proc/self/status") as fh:
            now = next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        pass
    return {"rss_start_mb": now, "peak_reset": reset}


def _synthetic(n: int, night: int):
    """Night 1: ids n0..n{N-1}; night 2: the first 5% replaced by new ids, 10% moved class."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(0)
    class_id = rng.integers(0, CLASSES, n)
    confidence = rng.random(n)
    index = np.arange(n, dtype=np.int64)
    if night == 2:
        index[: n // 20] += n  # new nodes
        moved = rng.random(n) < 0.10
        class_id[moved] = rng.integers(0, CLASSES, int(moved.sum()))
    ids = pc.binary_join_element_wise("n", pc.cast(pa.array(index), pa.string()), "")
    return ids, class_id, confidence


def _classes(class_id, confidence) -> list[dict]:
    import numpy as np

    size = np.bincount(class_id, minlength=CLASSES)
    total = np.bincount(class_id, weights=confidence, minlength=CLASSES)
    return [{"class_key": k, "class_name": NAMES[k] if k < len(NAMES) else None,
             "is_novel": k >= len(NAMES), "size": int(size[k]),
             "mean_confidence": float(total[k] / max(size[k], 1))}
            for k in range(CLASSES) if size[k]]


def stage_write_one_table(n: int, folder: Path) -> dict:
    import types

    import pyarrow.parquet as pq

    from tasks import predictions

    ids, class_id, confidence = _synthetic(n, 1)
    snapshot = types.SimpleNamespace(node_ids=ids, class_names=NAMES)
    out = _start()
    start = time.perf_counter()
    path = folder / "one-table.parquet"
    pq.write_table(predictions.predictions_table(snapshot, class_id, confidence, len(NAMES)), path)
    out |= {"seconds": time.perf_counter() - start, "peak_rss_mb": _rss_mb(),
            "file_mb": path.stat().st_size / 2**20}
    path.unlink()
    return out


def stage_write(n: int, chunk: int, folder: Path) -> dict:
    from tasks import predictions

    out = {}
    for night in (1, 2):
        ids, class_id, confidence = _synthetic(n, night)
        (folder / f"classes{night}.json").write_text(json.dumps(_classes(class_id, confidence)))
        started = _start()
        start = time.perf_counter()
        path = predictions.write_predictions(folder / f"predictions{night}.parquet", ids, class_id,
                                       confidence, len(NAMES), NAMES, chunk_size=chunk)
        seconds = time.perf_counter() - start
        if night == 1:
            out = started | {"seconds": seconds, "peak_rss_mb": _rss_mb(),
                             "file_mb": path.stat().st_size / 2**20}
        del ids, class_id, confidence
    return out


def stage_publish(n: int, folder: Path, night: int, db: Path, threads: int,
                  memory_limit: str | None, as_table: bool = False) -> dict:
    import pyarrow.parquet as pq

    from tasks import publishing
    from tasks.warehouse import Warehouse

    timing = {}

    class Timed(Warehouse):
        def publish_run(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return super().publish_run(*args, **kwargs)
            finally:
                timing["publish_run"] = time.perf_counter() - start

        def node_pairs(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return super().node_pairs(*args, **kwargs)
            finally:
                timing["node_pairs"] = time.perf_counter() - start

    wh = Timed(db, threads=threads, memory_limit=memory_limit)
    wh.ensure_schema()
    classes = json.loads((folder / f"classes{night}.json").read_text())
    date = dt.date(2026, 7, night)
    run = {"graph": "big", "snapshot_date": date, "content_hash": f"night{night}-{n}",
           "config_hash": "bench", "num_nodes": n}
    started = _start()
    start = time.perf_counter()
    predictions = folder / f"predictions{night}.parquet"
    if as_table:
        predictions = pq.read_table(predictions)
    out = publishing.publish(wh, run, {"nodes": n}, predictions, classes, "big", date)
    seconds = time.perf_counter() - start
    peak = _rss_mb()
    rows = wh.query("SELECT count(*) AS n FROM node_assignments WHERE run_id = ?",
                    [out["run_id"]])["n"][0].as_py()
    return started | {"seconds": seconds, "publish_run_seconds": timing.get("publish_run"),
                      "node_pairs_seconds": timing.get("node_pairs"), "peak_rss_mb": peak,
                      "rows_published": rows, "statuses": sorted(set(out["statuses"].values()))}


def stage_publish_run(n: int, folder: Path, db: Path, threads: int,
                      memory_limit: str | None) -> dict:
    from tasks.warehouse import Warehouse

    wh = Warehouse(db, threads=threads, memory_limit=memory_limit)
    wh.ensure_schema()
    classes = [c | {"lineage_id": f"big:class:{c['class_key']}"}
               for c in json.loads((folder / "classes1.json").read_text())]
    run = {"graph": "big", "snapshot_date": dt.date(2026, 7, 1), "content_hash": f"night1-{n}",
           "config_hash": "bench", "num_nodes": n}
    started = _start()
    start = time.perf_counter()
    run_id = wh.publish_run(run, {"nodes": n}, folder / "predictions1.parquet", classes, [])
    seconds = time.perf_counter() - start
    peak = _rss_mb()
    rows = wh.query("SELECT count(*) AS n FROM node_assignments WHERE run_id = ?",
                    [run_id])["n"][0].as_py()
    return started | {"seconds": seconds, "publish_run_seconds": seconds, "peak_rss_mb": peak,
                      "rows_published": rows}


def _child(args: list[str]) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.large_inference", *args],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_size(n: int, chunk: int, threads: int, limits: list[str], work: Path) -> list[dict]:
    folder = work / f"n{n}"
    folder.mkdir(parents=True, exist_ok=True)
    common = ["--n", str(n), "--folder", str(folder), "--chunk", str(chunk),
              "--threads", str(threads)]
    rows = []

    def record(stage: str, result: dict, limit: str = "") -> dict:
        row = {"nodes": n, "chunk_rows": chunk, "stage": stage,
               "duckdb_memory_limit": limit} | result
        rows.append(row)
        print(json.dumps(row), flush=True)
        return row

    record("write (one table)", _child(["--stage", "write-one-table", *common]))
    if "error" in record("write", _child(["--stage", "write", *common])):
        return rows
    for limit in limits:
        opts = [*common, "--memory-limit", limit]
        for db in folder.glob("*.duckdb*"):
            db.unlink()
        record("publish_run only", _child(["--stage", "publish-run", "--db",
                                           str(folder / "alone.duckdb"), *opts]), limit)
        db1 = folder / "night1.duckdb"
        if "error" in record("publish", _child(["--stage", "publish", "--night", "1",
                                                "--db", str(db1), *opts]), limit):
            continue
        db_table = folder / "night1-copy.duckdb"
        shutil.copyfile(db1, db_table)
        record("publish+lineage", _child(["--stage", "publish", "--night", "2", "--db",
                                          str(db1), *opts]), limit)
        record("publish+lineage (table)", _child(["--stage", "publish", "--night", "2", "--db",
                                                  str(db_table), "--table", *opts]), limit)
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def _fmt(value, digits=1):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def write_results(rows: list[dict], out: Path, command: str, threads: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS + ["error"], extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k) for k in COLUMNS + ["error"]})
    lines = [
        "# Large inference: predictions written to Parquet and published to DuckDB in chunks",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}, DuckDB threads {threads}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', '')}. Every stage ran in a fresh subprocess; "
        "peak RSS is that whole process's (interpreter, imports and the stage's inputs "
        "included), \"RSS at start\" its resident memory when the stage's call began (inputs "
        "loaded); the high-water mark was reset then, so the peak is the call's own "
        "(unless peak_reset is false in the CSV). Stages: see the module docstring of "
        "`benchmarks/large_inference.py`.",
        "",
        "| nodes | stage | DuckDB memory_limit | seconds | of which publish_run s | "
        "of which node_pairs s | RSS at start MB | peak RSS MB | Parquet MB | rows published |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['nodes']:,} | {row['stage']} | "
                         f"{row.get('duckdb_memory_limit', '')} | failed: {row['error']} "
                         "| | | | | | |")
            continue
        lines.append(
            f"| {row['nodes']:,} | {row['stage']} | {row.get('duckdb_memory_limit', '')} | "
            f"{_fmt(row.get('seconds'), 2)} | "
            f"{_fmt(row.get('publish_run_seconds'), 2)} | "
            f"{_fmt(row.get('node_pairs_seconds'), 2)} | {_fmt(row.get('rss_start_mb'), 0)} | "
            f"{_fmt(row.get('peak_rss_mb'), 0)} | {_fmt(row.get('file_mb'), 1)} | "
            f"{_fmt(row.get('rows_published'))} |")
    lines += [
        "",
        "Where the memory goes (by construction; the rows above measure it):",
        "",
        "- `write`: one chunk's Arrow columns and the Parquet writer's row group at a time, on "
        "top of the inputs (node ids, class ids, confidences) that the caller holds anyway.",
        "- `publish_run only`: DuckDB streams the file into `node_assignments`; what grows "
        "with N is DuckDB's own memory (the repeated-node-id check's hash table, the "
        "transaction's row groups), which `memory_limit` caps by spilling to disk.",
        "- `publish` / `publish+lineage`: lineage adds O(N) numpy arrays, not Python objects: "
        "the node pairs from DuckDB (16 bytes per node), 8-byte node keys, and the copies "
        "`tasks.warehouse.lineage.track_lineage` makes to count overlaps (`numpy.unique` over "
        "both nights' keys); `memory_limit` does not bound those.",
        "- `(table)`: the whole predictions table read into memory first, as the nightly flow's "
        "Prefect task does today; the file path avoids it.",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--chunk", type=int, default=1_000_000, help="rows per row group")
    parser.add_argument("--threads", type=int, default=1, help="DuckDB threads")
    parser.add_argument("--memory-limit", nargs="+", default=["none"],
                        help="DuckDB memory_limit values for the publishing stages ('none': "
                             "DuckDB's default)")
    parser.add_argument("--out", type=Path, default=RESULTS / "large_inference" / "large_inference")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the Parquet and DuckDB files go (default: a temp folder)")
    # one stage in this process (used by the parent)
    parser.add_argument("--stage", choices=["write", "write-one-table", "publish-run",
                                            "publish"])
    parser.add_argument("--n", type=int)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--night", type=int, default=1)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args(argv)

    if args.stage == "write":
        print(json.dumps(stage_write(args.n, args.chunk, args.folder)))
        return 0
    if args.stage == "write-one-table":
        print(json.dumps(stage_write_one_table(args.n, args.folder)))
        return 0
    limit = None if args.memory_limit[0] == "none" else args.memory_limit[0]
    if args.stage == "publish-run":
        print(json.dumps(stage_publish_run(args.n, args.folder, args.db, args.threads, limit)))
        return 0
    if args.stage == "publish":
        print(json.dumps(stage_publish(args.n, args.folder, args.night, args.db, args.threads,
                                       limit, as_table=args.table)))
        return 0

    command = "OMP_NUM_THREADS=1 python -m benchmarks.large_inference " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    rows: list[dict] = []
    work = args.workdir or Path(tempfile.mkdtemp(prefix="oral-large-"))
    try:
        for n in args.nodes:
            rows += run_size(n, args.chunk, args.threads, args.memory_limit, work)
            write_results(rows, args.out, command, args.threads)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out.with_suffix('.md')} and {args.out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
