"""``oral report``: one self-contained HTML page per graph (class sizes over nights, what
emerged with exemplars and top features, merges, splits and vanished classes, each night's
contract summary, links to the MLflow runs); see :mod:`tasks.report`."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def cmd_report(args) -> int:
    from data_contracts.snapshots import SnapshotError, check_graph_name
    from flows.settings import Settings
    from tasks.report import NoWarehouse, ReportError, UnknownGraph, default_tracking_uri, report
    from tasks.warehouse import WarehouseError

    try:
        check_graph_name(args.graph)
    except SnapshotError as err:
        print(f"error: --graph {args.graph}: {err}", file=sys.stderr)
        return 2
    settings = Settings.from_env(args.state_dir)
    out = args.out or settings.reports_dir / args.graph / "report.html"
    if out.is_dir():
        print(f"error: --out {out}: is a folder; name the .html file to write", file=sys.stderr)
        return 2
    try:
        path = report(settings.warehouse_path, args.graph, out,
                      contract_dir=settings.reports_dir / args.graph,
                      tracking_uri=settings.tracking_uri or default_tracking_uri(settings.state_dir),
                      mlflow_ui=args.mlflow_ui, prefect_api_url=os.environ.get("PREFECT_API_URL"),
                      state_dir=settings.state_dir)
    except (NoWarehouse, UnknownGraph) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ReportError, WarehouseError, OSError) as err:  # locked, unreadable, not writable
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    print(path)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser(
        "report", help="write a graph's classes over nights as one self-contained HTML page",
        description="Writes one HTML file (no network, no scripts) for GRAPH: class sizes over "
                    "nights (a chart, labels from `oral label`), the classes that emerged each "
                    "night with exemplars and top features, merges, splits and vanished classes, "
                    "each night's contract summary and links to its MLflow run. Prints the path.")
    rp.add_argument("--graph", required=True, help="the graph, as published (see `oral classes`)")
    rp.add_argument("--state-dir", type=Path, default=None,
                    help="the state folder (default $ORAL_STATE_DIR or ./state)")
    rp.add_argument("--out", type=Path, default=None,
                    help="the HTML file to write (default <state>/reports/<graph>/report.html)")
    rp.add_argument("--mlflow-ui", default=None, metavar="URL",
                    help="the MLflow UI's address for the run links (default: the tracking server "
                         "when ORAL_TRACKING_URI is http(s), else http://127.0.0.1:5000, where "
                         "`mlflow ui` serves)")
    rp.set_defaults(func=cmd_report)
