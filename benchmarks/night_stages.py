"""Where one nightly run's wall time goes, stage by stage, read from its Prefect task runs.

    python -m benchmarks.night_stages STATE_DIR [--label NAME] [--wall SECONDS] [--out FILE.md]

``oral run`` keeps its in-process Prefect server's database under ``STATE_DIR/prefect``; each
step of the nightly flow (find the snapshot, ingest, validate, load, plan the start, train, answer
per class, score, describe, gate, lineage, register in MLflow, publish to DuckDB, champion) is one
Prefect task run with its start and end. This reads them (sqlite3 only: no Prefect import, so it
works on a machine without the stack), one row per step of the latest flow run, its seconds and
its share of the flow run. ``--wall`` is the whole command's wall time measured outside (process
start, imports and the temporary Prefect server included); the difference is reported as
"outside the flow". Appends the table to ``--out`` (Markdown) when given, else prints it.
"""
from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from datetime import datetime
from pathlib import Path


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    fmt = "%Y-%m-%d %H:%M:%S.%f"
    norm = lambda s: s if "." in s else s + ".0"  # noqa: E731
    return (datetime.strptime(norm(end)[:26], fmt) - datetime.strptime(norm(start)[:26], fmt)
            ).total_seconds()


def stage_rows(state_dir: Path) -> tuple[str, float | None, list[dict]]:
    """The latest flow run's name, seconds and its task runs in start order (``step``,
    ``seconds``, ``state``), from ``STATE_DIR/prefect/prefect.db``."""
    db = Path(state_dir) / "prefect" / "prefect.db"
    if not db.exists():
        raise SystemExit(f"error: {db}: no Prefect database (did `oral run` use this state dir?)")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    flow = con.execute("SELECT id, name, start_time, end_time FROM flow_run "
                       "WHERE start_time IS NOT NULL ORDER BY start_time DESC LIMIT 1").fetchone()
    if flow is None:
        raise SystemExit(f"error: {db}: no flow run has started")
    fid, name, fstart, fend = flow
    rows = []
    for tname, start, end, state in con.execute(
            "SELECT name, start_time, end_time, state_type FROM task_run WHERE flow_run_id = ? "
            "ORDER BY start_time", (fid,)):
        rows.append({"step": re.sub(r"-[0-9a-f]{3}$", "", tname),
                     "seconds": _seconds(start, end), "state": state})
    return name, _seconds(fstart, fend), rows


def render(label: str, flow_name: str, flow_seconds: float | None, rows: list[dict],
           wall: float | None) -> str:
    total = flow_seconds or sum(r["seconds"] or 0 for r in rows)
    lines = [f"### {label}", "", f"Flow run `{flow_name}`: "
             + (f"{flow_seconds:.1f} s" if flow_seconds is not None else "not finished")
             + (f"; the command's wall time {wall:.1f} s" if wall else ""), "",
             "| step | seconds | share of the flow run | state |", "| --- | ---: | ---: | --- |"]
    for r in rows:
        s = r["seconds"]
        lines.append(f"| {r['step']} | {'' if s is None else f'{s:.1f}'} | "
                     f"{'' if s is None or not total else f'{100 * s / total:.1f}%'} | {r['state']} |")
    if flow_seconds is not None:
        inside = sum(r["seconds"] or 0 for r in rows)
        lines.append(f"| between steps (orchestration) | {flow_seconds - inside:.1f} | "
                     f"{100 * (flow_seconds - inside) / flow_seconds:.1f}% | |")
        if wall:
            lines.append(f"| outside the flow (start, imports, Prefect's server) | "
                         f"{wall - flow_seconds:.1f} | | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("state_dir", type=Path)
    ap.add_argument("--label", default=None, help="the table's heading (default: the state dir)")
    ap.add_argument("--wall", type=float, default=None, help="the command's wall time, seconds")
    ap.add_argument("--out", type=Path, default=None, help="append the Markdown table here")
    args = ap.parse_args(argv)
    name, seconds, rows = stage_rows(args.state_dir)
    text = render(args.label or str(args.state_dir), name, seconds, rows, args.wall)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
