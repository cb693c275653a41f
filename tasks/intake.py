"""Ingest: the night's snapshot picked (:func:`pick_snapshot`), read once with every file's
bytes hashed (:func:`read_snapshot`) and checked against its data contracts (:func:`validate`,
:mod:`data_contracts`). A broken contract stops the night before training
(:class:`ContractFailed`)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from data_contracts import snapshots as snap


class ContractFailed(RuntimeError):
    """The snapshot broke its data contract: nothing is trained or published."""

    def __init__(self, message: str, report_path: Path | None = None):
        super().__init__(message)
        self.report_path = report_path


def pick_snapshot(root: str | Path, graph: str, date: str | dt.date | None = None,
                  last_processed: dt.date | None = None) -> Path:
    """The snapshot of ``date``; without a date the next unprocessed night: the oldest snapshot
    when the graph has no published run (``last_processed`` None), else the oldest snapshot newer
    than ``last_processed``, and the latest one when every snapshot has been processed."""
    if date is not None:
        return snap.select_snapshots(root, graph, date=date)[0]
    snaps = snap.list_snapshots(root, graph)
    if not snaps:
        raise snap.SnapshotError(f"no snapshots for graph {graph!r} under {Path(root) / graph}")
    newer = [p for day, p in snaps if last_processed is None or day > last_processed]
    return newer[0] if newer else snaps[-1][1]


def read_snapshot(path: str | Path) -> snap.SnapshotFiles:
    """Every file's bytes read once and hashed (see :func:`data_contracts.snapshots.read_snapshot_files`)."""
    return snap.read_snapshot_files(path)


def validate(files: snap.SnapshotFiles | Path, report_dir: Path, last_processed: dt.date | None = None,
             min_labels_per_class: int = 3, state_dir: Path | None = None):
    """Run the data contracts; keep the report (JSON and HTML) under ``report_dir``.

    Returns ``(report, json_path, html_path)``. Does not raise on a failed contract: the caller
    decides (the flow stops before training). ``state_dir``: where the GX context and its Data
    Docs live (``<state>/gx``; ``report.data_docs`` holds the pages).
    """
    from data_contracts import validate_snapshot

    report = validate_snapshot(files, last_processed_date=last_processed,
                               min_labels_per_class=min_labels_per_class, state_dir=state_dir)
    path = Path(files.path if isinstance(files, snap.SnapshotFiles) else files)
    stem = f"{path.name.replace('=', '-')}-{(report.content_hash or 'unreadable')[:12]}"
    report_dir.mkdir(parents=True, exist_ok=True)
    json_path = report.write_json(report_dir / f"{stem}.json") or report_dir / f"{stem}.json"
    html_path = report.write_html(report_dir / f"{stem}.html") or report_dir / f"{stem}.html"
    return report, Path(json_path), Path(html_path)
