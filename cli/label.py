"""``oral label``: give a discovered class a human name; and what ``oral classes`` prints.

A label is keyed by the class's lineage id, which stays the same across nights, so the name
shows in ``latest_classes``, ``class_timeline`` and ``emerged_classes`` (column ``label``) on
every later night too. Each label is a new ``class_labels`` row (who, when); the latest counts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _by_default() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container without USER): say so
        return "unknown"


def _warehouse_or_error(state_dir):
    """The warehouse of ``state_dir``, or None after printing the ``error:`` line."""
    from flows.settings import Settings
    from tasks.warehouse import Warehouse

    settings = Settings.from_env(state_dir)
    if not settings.warehouse_path.is_file():
        print(f"error: no warehouse at {settings.warehouse_path}: run `oral run` or `oral demo` "
              f"first", file=sys.stderr)
        return None
    return Warehouse(settings.warehouse_path)


def unknown_graph(graph: str | None, wh) -> str | None:
    """The one-line refusal of ``--graph`` for the analysts' commands (``oral classes``, ``oral
    label``; ``oral report`` says the same, :class:`tasks.report.UnknownGraph`): not a valid graph
    name, or no published run of it (naming the graphs there are); None when it is fine or not
    given."""
    from data_contracts.snapshots import SnapshotError, check_graph_name

    if graph is None:
        return None
    try:
        check_graph_name(graph)
    except SnapshotError as err:
        return f"--graph {graph}: {err}"
    graphs = wh.published_graphs()
    if graph in graphs:
        return None
    return (f"no published run of graph {graph!r} in {wh.path} "
            f"(graphs with runs: {', '.join(graphs) if graphs else 'none yet'})")


def _graph_refused(args, wh) -> bool:
    """Print the ``error:`` line of an unknown ``--graph``; True when it was refused."""
    message = unknown_graph(args.graph, wh)
    if message is not None:
        print(f"error: {message}", file=sys.stderr)
    return message is not None


def cmd_label(args) -> int:
    from tasks.warehouse import LabelRefused, WarehouseError

    wh = _warehouse_or_error(args.state_dir)
    if wh is None:
        return 2
    try:
        if _graph_refused(args, wh):
            return 2
        by = _by_default() if args.by is None else args.by
        row = wh.label_class(args.lineage_id, args.name, by=by, graph=args.graph)
    except LabelRefused as err:  # unknown lineage id, empty name, ambiguous graph
        print(f"error: {err}", file=sys.stderr)
        return 2
    except WarehouseError as err:  # locked by another process, unreadable file
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    was = f" (was {row['previous']!r})" if row["previous"] is not None else ""
    print(f"{row['graph']} {row['lineage_id']}: labelled {row['name']!r} by {row['labelled_by']} "
          f"at {row['labelled_at']:%Y-%m-%d %H:%M:%S} UTC{was}")
    return 0


def format_classes(table) -> list[str]:
    """``Warehouse.classes_for_display`` as aligned text lines, nothing cut: every cell whole
    (names and top features are short text, not JSON)."""
    cols = table.column_names
    rows = table.to_pylist()

    def cell(value) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float):
            return f"{value:.3f}"
        return " ".join(str(value).split())

    cells = [[cell(r[c]) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    return lines


def show_classes(args) -> int:
    """``oral classes``: the latest classes of each graph (or one), largest first."""
    from tasks.warehouse import WarehouseError

    wh = _warehouse_or_error(args.state_dir)
    if wh is None:
        return 2
    try:
        if _graph_refused(args, wh):  # a typo is an error, not "no classes" with exit 0
            return 2
        table = wh.classes_for_display(args.graph)
    except WarehouseError as err:  # locked by another process, a file that is not DuckDB
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    if not table.num_rows:
        where = f" of graph {args.graph!r}" if args.graph else ""
        print(f"no classes{where} published yet")
        return 0
    print("\n".join(format_classes(table)))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    lb = sub.add_parser(
        "label", help="give a discovered class a human name (kept on later nights)",
        description="Stores NAME for the class LINEAGE_ID (e.g. papers:novel:3, see `oral classes`) "
                    "in the warehouse's class_labels table with who and when; the views "
                    "latest_classes, class_timeline and emerged_classes show it as `label`, on "
                    "later nights too. Labelling again replaces the name (the history is kept).")
    lb.add_argument("lineage_id", help="the class's lineage id, e.g. papers:novel:3 or known:Theory")
    lb.add_argument("name", help='the human name, e.g. "Graph learning"')
    lb.add_argument("--graph", default=None,
                    help="the graph (needed only when the lineage id is in several graphs)")
    lb.add_argument("--by", default=None, help="who gives the label (default: your login name)")
    lb.add_argument("--state-dir", type=Path, default=None,
                    help="the state folder holding oral.duckdb (default $ORAL_STATE_DIR or ./state)")
    lb.set_defaults(func=cmd_label)
