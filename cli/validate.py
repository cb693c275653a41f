"""``oral validate SNAPSHOT_DIR``: check a snapshot against the data contracts. Heavy imports
(Great Expectations) happen inside the command.

Exit status: 0 when the snapshot passes (warnings allowed), 1 when any rule fails with an error
(a missing or misnamed folder included: it is reported as the finding ``snapshot_folder_exists``
or ``snapshot_date_valid``), 2 for usage errors (a malformed option, a report file that cannot be
written). Nothing is written into the snapshot folder; ``--html`` and ``--json`` write reports
where they are told, ``--state-dir`` keeps the GX context and its Data Docs in ``DIR/gx``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {value!r}") from None


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def cmd_validate(args: argparse.Namespace) -> int:
    from data_contracts.contracts import validate_snapshot

    report = validate_snapshot(args.snapshot, last_processed_date=args.last_processed,
                               min_labels_per_class=args.min_labels_per_class,
                               min_known_classes=args.min_known_classes,
                               max_feature_width=args.max_feature_width,
                               state_dir=args.state_dir)
    print(report.summary())
    if args.state_dir is not None:
        from data_contracts.docs_index import offline_index_path

        index = offline_index_path(args.state_dir / "gx")
        if index.exists():
            print(f"Data Docs: {index} (the latest results, readable offline)")
    for target, write in ((args.html, report.write_html), (args.json, report.write_json)):
        if target is None:
            continue
        try:
            write(target)
        except OSError as err:
            print(f"error: cannot write {target}: {err.strerror or err}", file=sys.stderr)
            return 2
        print(f"wrote {target}")
    return 0 if report.passed else 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``validate`` command to the ``oral`` parser."""
    p = sub.add_parser(
        "validate", help="check a snapshot folder against the data contracts",
        description="Validate nodes.parquet, edges.parquet and (if present) truth.parquet of one "
                    "snapshot folder. Prints each broken rule with its file, count and example "
                    "rows. Exit 0: passed (warnings allowed); 1: an error finding (a missing "
                    "folder too); 2: usage error.")
    p.add_argument("snapshot", type=Path, metavar="SNAPSHOT_DIR",
                   help="a folder <root>/<graph>/snapshot=YYYY-MM-DD")
    p.add_argument("--last-processed", type=_date, default=None, metavar="YYYY-MM-DD",
                   help="date of the last processed snapshot of this graph (an older snapshot "
                        "is a warning)")
    p.add_argument("--min-labels-per-class", type=_positive, default=3, metavar="N",
                   help="labelled nodes every known class needs (default 3)")
    p.add_argument("--min-known-classes", type=_positive, default=2, metavar="N",
                   help="distinct labelled classes needed (default 2)")
    p.add_argument("--max-feature-width", type=_positive, default=65_536, metavar="N",
                   help="largest acceptable feature length (default 65536)")
    p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                   help="keep the Great Expectations context in DIR/gx (suites, checkpoints, "
                        "results) and build its Data Docs there (printed: an index of the "
                        "latest results that reads offline; GX's own pages load their styles "
                        "from the internet); default: an in-memory context, no Data Docs")
    p.add_argument("--html", type=Path, default=None, metavar="PATH",
                   help="also write the report as a self-contained HTML page")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="also write the report as JSON")
    p.set_defaults(func=cmd_validate)
