"""The benchmarks' resumable records: one JSON line per fit, or one CSV row per case, appended as
each finishes so that a stopped study goes on where it stopped."""
from __future__ import annotations

import csv
import json
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file (none when it does not exist)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def append_jsonl(path: Path, row: dict) -> None:
    """Append one row to a JSON-lines file."""
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def append_csv(path: Path, row: dict, fields: list[str]) -> None:
    """Append one row to a CSV file with columns ``fields``, writing the header (and the
    folder) first when the file is new."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerow(row)


def write_table(out: Path, lines: list[str]) -> None:
    """A study's ``out/table.md`` from its lines (the folder made if needed), also printed."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
