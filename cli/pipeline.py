"""``oral run | backfill | demo | classes | sql``: the nightly pipeline from the command line.

Prefect, MLflow and DuckDB are imported inside the commands (after the environment defaults of
:mod:`flows.settings` are set), so ``oral --help`` stays fast.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from cli import logs
from cli.common import fanout_options, listed, start_pipeline


def _common(p: argparse.ArgumentParser, snapshots: bool = True, several: bool = False) -> None:
    if snapshots:
        if several:  # oral backfill: several graphs (a comma list or the option repeated)
            p.add_argument("--graph", required=True, action="append",
                           help="graph name (folder under --snapshots); several: a comma list or "
                                "the option repeated, run in parallel with --workers/--scheduler")
        else:
            p.add_argument("--graph", required=True, help="graph name (folder under --snapshots)")
        p.add_argument("--snapshots", required=True, type=Path,
                       help="snapshot root: <root>/<graph>/snapshot=YYYY-MM-DD/{nodes,edges}.parquet")
        p.add_argument("--epochs", type=int, default=None, help="ORAL epochs (default 200)")
        p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                       help="override any ORALConfig field, e.g. --set gamma=0.4")
        p.add_argument("--device", default=None, help="auto (default: CUDA when present), cpu or cuda")
        start = p.add_mutually_exclusive_group()
        start.add_argument("--warm", dest="cold", action="store_const", const=False,
                           help="continue the previous night's champion for warm_epochs epochs "
                                "when the features and configuration are unchanged (a warm "
                                "start; default: the ORAL_WARM_START setting, off)")
        start.add_argument("--cold", dest="cold", action="store_const", const=True,
                           help="train from scratch even when ORAL_WARM_START is on")
        where = p.add_mutually_exclusive_group()
        where.add_argument("--remote-training", dest="remote_training", action="store_const",
                           const=True, help="hand training to the GPU work pool's deployment "
                           "(ORAL_TRAINING_DEPLOYMENT; default: the ORAL_REMOTE_TRAINING setting)")
        where.add_argument("--local-training", dest="remote_training", action="store_const",
                           const=False, help="train in this process even when "
                           "ORAL_REMOTE_TRAINING is on")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="DuckDB file, MLflow store, reports, models (default $ORAL_STATE_DIR or ./state)")


def _checked(check, *args):
    """Run an option check of :mod:`cli.options`; ``(result, None)``, or ``(None, 2)`` after
    printing the one-line ``error:`` message."""
    from cli.options import OptionError

    try:
        return check(*args), None
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return None, 2


def _overrides(args) -> dict | None:
    """The checked ORALConfig overrides of ``oral run`` / ``oral backfill`` (``--set``, then
    ``--epochs``), or None after printing the error: every option is checked here, before the
    Prefect server starts or a snapshot is read."""
    from cli.options import check_pipeline

    values, code = _checked(check_pipeline, args)
    if code is not None:
        return None
    values.setdefault("progress", sys.stderr.isatty())  # a per-epoch bar when someone watches
    return values


#: the widest column of ``oral sql``'s table output; longer cells end in :data:`CUT`
CELL_WIDTH = 60
CUT = "…"


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, ending in :data:`CUT` where it was cut."""
    return text if len(text) <= width else text[:width - len(CUT)] + CUT


def print_table(table, limit: int = 200) -> None:
    """An Arrow table as aligned text columns; a cell wider than :data:`CELL_WIDTH` is cut and
    ends in :data:`CUT` (``--format csv`` or ``json`` give every cell whole)."""
    rows = table.slice(0, limit).to_pylist()
    cols = table.column_names
    cells = [[("" if r[c] is None else f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]))
              for c in cols] for r in rows]
    widths = [min(CELL_WIDTH, max([len(c)] + [len(row[i]) for row in cells]))
              for i, c in enumerate(cols)]
    print("  ".join(clip(c, w).ljust(w) for c, w in zip(cols, widths)))
    for row in cells:
        print("  ".join(clip(v, w).ljust(w) for v, w in zip(row, widths)))
    if table.num_rows > limit:
        print(f"... {table.num_rows - limit} more rows")


class _NoTraceback(logging.Filter):
    """Prefect's log records of an expected failure (a broken contract, an unusable snapshot, a
    full disk): the exception's record loses its traceback, and it and the run's ``Finished in
    state Failed(...)`` and retry lines about it are marked :func:`cli.logs.said_by_the_command`: the command
    prints what they say once, as its one ``error:`` line, and the terminal leaves them out (the
    log file keeps them). Other exceptions keep their traceback and their lines."""

    #: how Prefect's run loggers repeat an exception: the run's end and each retry of a task
    REPEATS = ("Finished in state Failed(", "Task run failed with exception: ")

    def __init__(self, expected: tuple[type[BaseException], ...],
                 said: tuple[type[BaseException], ...] = ()):
        super().__init__()
        self.expected, self.said = expected, said  # said: marked, their traceback kept

    def filter(self, record: logging.LogRecord) -> bool:
        kinds = self.expected + self.said
        if record.exc_info and isinstance(record.exc_info[1], kinds):
            if isinstance(record.exc_info[1], self.expected):
                record.exc_info, record.exc_text = None, None
            logs.said_by_the_command(record)
        else:
            message = record.getMessage()
            if message.startswith(self.REPEATS) and any(
                    f"{kind.__name__}{sep}" in message for kind in kinds for sep in ":("):
                logs.said_by_the_command(record)
        return True


#: the loggers of Prefect's flow and task engines, which log a failed run with its traceback
_RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


def _run_flow(fn) -> int:
    """Run a flow-calling function (returning its exit status, None for 0), turning the
    pipeline's expected failures into one ``error:`` line: a broken contract exits 1 (the
    message names the report), so does a training cluster that cannot take the data-parallel
    workers (``ORAL_TRAIN_CLUSTER``), an unusable snapshot 2, a warehouse or tracking store that fails
    or a full disk 1. Anything else reaches :func:`cli.main.main`, which prints one line too
    (traceback in the log file; a full disk named as such, :func:`cli.logs.disk_full_line`)."""
    from data_contracts.snapshots import SnapshotError
    from flows.settings import flow_runs_started_here
    from tasks.intake import ContractFailed
    from tasks.registry import TrackingError
    from tasks.diskspace import DiskFull
    from tasks.warehouse import WarehouseError
    from tasks.workers import ClusterError

    quiet = _NoTraceback((ContractFailed, SnapshotError, DiskFull, ClusterError),
                         said=(WarehouseError, TrackingError))
    for name in _RUN_LOGGERS:
        logging.getLogger(name).addFilter(quiet)
    try:
        with flow_runs_started_here():  # no heartbeats: nothing but this process runs them
            return fn() or 0
    except (ContractFailed, ClusterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except SnapshotError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (WarehouseError, TrackingError, DiskFull) as err:
        path = logs.log_path()
        if path is not None:
            logging.getLogger(logs.TRACE_LOGGER).error(
                "%s", type(err).__name__, exc_info=(type(err), err, err.__traceback__))
        full = logs.disk_full_line(err)  # a full disk: which folder, how much is free
        where = f" (traceback in {path})" if path is not None and not full else ""
        print(f"error: {full or logs.one_line(err)}{where}", file=sys.stderr)
        return 1
    finally:
        for name in _RUN_LOGGERS:
            logging.getLogger(name).removeFilter(quiet)


def cmd_run(args) -> int:
    overrides = _overrides(args)
    if overrides is None:
        return 2
    start_pipeline(args.state_dir)
    from flows.nightly import nightly_discovery, summary_line

    def go():
        out = nightly_discovery(args.graph, str(args.snapshots), args.date, overrides,
                                str(args.state_dir) if args.state_dir else None, args.device,
                                remote_training=args.remote_training, cold=args.cold)
        print(summary_line(out))
    return _run_flow(go)


def cmd_backfill(args) -> int:
    from flows import fanout
    graphs = listed(args.graph if isinstance(args.graph, list) else [args.graph])
    address, code = _checked(lambda: (fanout.check_workers(getattr(args, "workers", None)),
                                      fanout.resolve_address(getattr(args, "scheduler", None)))[1])
    if code is not None:
        return code
    overrides = None
    for graph in graphs or [""]:  # every graph's options checked before anything starts
        args.graph = graph
        overrides = _overrides(args)
        if overrides is None:
            return 2
    # one graph with nothing to run is refused here; several graphs run, and each one that
    # fails is named (the fan-out's report)
    if len(graphs) == 1 and _no_snapshots(args.snapshots, graphs[0], args.start, args.end):
        return 2
    start_pipeline(args.state_dir)
    state_dir = str(args.state_dir) if args.state_dir else None
    if getattr(args, "workers", None) is not None or address:
        return _run_flow(lambda: _backfill_fanout(args, graphs, overrides, state_dir, address))
    from flows.nightly import backfill, summary_line

    def go():
        for graph in graphs:  # one after the other, in this process, as for one graph
            for out in backfill(graph, str(args.snapshots), args.start, args.end, overrides,
                                state_dir, args.device, remote_training=args.remote_training,
                                cold=args.cold):
                print(summary_line(out))
    return _run_flow(go)


def _no_snapshots(root, graph: str, start, end) -> bool:
    """Whether ``oral backfill`` has nothing to run for ``graph`` (printed as its ``error:``
    line): checked before the Prefect server starts or the state folder is written."""
    from data_contracts import snapshots as snap

    try:
        snap.backfill_snapshots(root, graph, start, end)
    except snap.SnapshotError as err:
        print(f"error: {err}", file=sys.stderr)
        return True
    return False


def _backfill_fanout(args, graphs: list[str], overrides: dict, state_dir: str | None,
                     address: str | None) -> int | None:
    """``oral backfill`` with ``--workers`` / ``--scheduler`` (or ``ORAL_DASK_ADDRESS``): one
    Prefect task per graph on a Dask cluster, each graph's nights in date order
    (:func:`flows.fanout.backfill`). A graph that failed is named on an ``error:`` line; the last
    one's error is raised again, so the exit status is the one-graph backfill's."""
    from flows import fanout
    from flows.nightly import summary_line

    workers = args.workers or 2
    print(f"backfill of {', '.join(graphs)} in parallel on "
          f"{address or f'a local Dask cluster of {workers} worker processes'}")
    results = fanout.backfill(graphs, str(args.snapshots), args.start, args.end, overrides,
                              state_dir, args.device, remote_training=args.remote_training,
                              cold=args.cold, address=address, workers=workers)
    failed = [r for r in results if r.get("error") is not None]
    for r in results:
        for out in r["nights"]:
            print(summary_line(out) + f" [pid {r['pid']} on {r['host']}]")
    for r in failed[:-1]:
        print(f"error: backfill of {r['graph']}: {r['error']}", file=sys.stderr)
    if failed:
        raise failed[-1]["error"]


def cmd_classes(args) -> int:
    from cli.label import show_classes  # names from labels, features as text (issue 19)

    return show_classes(args)


def cmd_sql(args) -> int:
    from flows.settings import Settings
    from tasks.warehouse import QueryRefused, Warehouse, WarehouseError

    settings = Settings.from_env(args.state_dir)
    if not settings.warehouse_path.exists():
        print(f"error: no warehouse at {settings.warehouse_path}", file=sys.stderr)
        return 2
    try:
        table = Warehouse(settings.warehouse_path).query(args.query)
    except QueryRefused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except WarehouseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a DuckDB error in the analyst's SQL: say it, no traceback
        print(f"error: {type(err).__name__}: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    if args.format == "csv":
        import pyarrow.csv as pacsv
        pacsv.write_csv(csv_ready(table), sys.stdout.buffer)
    elif args.format == "json":
        import json
        print(json.dumps(table.to_pylist(), default=str, indent=1))
    else:
        print_table(table, args.limit)
    return 0


def _jsonable(value):
    """A value of a nested Arrow cell as plain JSON data: maps (read as dicts) keep their keys
    as text, dates and times as ISO text, decimals as numbers, NaN and infinities as null."""
    import datetime as dt
    import decimal
    import math

    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(_jsonable(k)): _jsonable(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def csv_ready(table):
    """``table`` with every column Arrow's CSV writer refuses turned into text: lists, structs,
    maps and unions as one JSON document per cell (a map as a JSON object), intervals and any
    other unsupported type as their text; a null stays an empty cell."""
    import json

    import pyarrow as pa

    def text(column, convert):
        return pa.array([None if v is None else convert(v)
                         for v in column.to_pylist(maps_as_pydicts="lossy")], pa.string())

    for i, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            convert = lambda v: json.dumps(_jsonable(v), ensure_ascii=False)  # noqa: E731
        elif pa.types.is_interval(field.type) or pa.types.is_duration(field.type):
            convert = str
        else:
            continue
        table = table.set_column(i, pa.field(field.name, pa.string()),
                                 text(table.column(i), convert))
    return table


def cmd_demo(args) -> int:
    from cli.options import check_demo

    _, code = _checked(check_demo, args)
    if code is not None:
        return code
    from flows.demo import run_demo
    from oral_core.datasets import DatasetNotFound

    start_pipeline(args.state_dir or Path("state/demo"))
    try:
        return _run_flow(lambda: run_demo(args))
    except DatasetNotFound as err:
        print(f"error: --dataset {args.dataset}: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run", help="one nightly discovery run on a snapshot (the next unprocessed one by default)",
        description="Ingest, validate, train ORAL, score (when truth exists), register in MLflow, "
                    "publish classes and lineage to DuckDB. A snapshot that breaks its contract "
                    "stops the run before training; nothing is published (exit 1).")
    _common(run)
    run.add_argument("--date", default=None, help="snapshot date YYYY-MM-DD (default: the next unprocessed "
                     "night: the oldest snapshot on a fresh state, else the oldest newer than the "
                     "last published one; the latest when all are processed)")
    run.set_defaults(func=cmd_run)

    bf = sub.add_parser("backfill", help="every snapshot of a graph in date order, each as one nightly run",
                        description="Runs the nightly flow on every snapshot between --start and --end.")
    _common(bf, several=True)
    bf.add_argument("--start", default=None, help="first date (default: the first snapshot)")
    bf.add_argument("--end", default=None, help="last date (default: the last snapshot)")
    fanout_options(bf, "graph (its nights in date order)")
    bf.set_defaults(func=cmd_backfill)

    demo = sub.add_parser(
        "demo", help="simulate an evolving graph with a novel class emerging, backfill it, print the timeline",
        description="With no arguments: a synthetic graph (DC-SBM) whose novel class starts mid-way, "
                    "simulated over --periods nights, run night by night; prints when each novel class "
                    "emerged, its size and purity against the simulated truth. --dataset cora does "
                    "the same on a simulated evolving Cora.")
    demo.add_argument("--dataset", default="synthetic", help="synthetic (default), cora, or a dataset path")
    demo.add_argument("--data-dir", default=None, help="dataset folder (else $ORAL_DATA_DIR)")
    demo.add_argument("--periods", type=int, default=5, help="nights to simulate (default 5)")
    demo.add_argument("--nodes", type=int, default=1500, help="synthetic graph size (default 1500)")
    demo.add_argument("--epochs", type=int, default=None, help="ORAL epochs per night (default 60)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", default=None)
    demo.add_argument("--state-dir", type=Path, default=None, help="default: state/demo")
    demo.add_argument("--out", type=Path, default=None,
                      help="also write the timeline as Markdown to this file")
    demo.set_defaults(func=cmd_demo)

    cl = sub.add_parser("classes", help="the latest classes of each graph (or one) as a table")
    cl.add_argument("--graph", default=None)
    _common(cl, snapshots=False)
    cl.set_defaults(func=cmd_classes)

    sql = sub.add_parser("sql", help="a read-only SQL query against the DuckDB warehouse",
                         description="Tables: snapshots, runs, node_assignments, classes, class_lineage, "
                                     "class_labels; views: latest_classes, emerged_classes, "
                                     "candidate_classes, class_timeline, latest_labels, "
                                     "latest_runs.")
    sql.add_argument("query", help='e.g. "SELECT * FROM emerged_classes"')
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")
    sql.add_argument("--limit", type=int, default=200, help="rows shown in table format")
    _common(sql, snapshots=False)
    sql.set_defaults(func=cmd_sql)
