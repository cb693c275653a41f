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


def write_csv(path: Path, rows: list[dict]) -> None:
    """``rows`` (dicts with the first row's keys) as a CSV file with a header; nothing written
    when there is no row."""
    import csv

    if not rows:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def kept_fit(keep: Path | None, name: str, fit):
    """One fit's class id per node (a tensor): ``fit()``'s, saved as ``keep/<name>.pt`` when
    ``keep`` is given, or read back from there when an earlier run saved it, so that a study's
    answers can be scored again, or new answers added, without training again. Returns
    ``(class_id, kept)``: ``kept`` is True when the fit was read back. The file is the fit of the
    code that made it; a study that changes the fit starts a fresh ``keep`` folder."""
    import torch

    path = keep / f"{name}.pt" if keep is not None else None
    if path is not None and path.exists():
        return torch.load(path), True
    class_id = fit().detach().cpu()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(class_id, tmp)
        tmp.replace(path)
    return class_id, False


def fit_name(loop: str, night: int, seed: int, size: float | None = None,
             sets: list[str] | None = None, kind: str = "young") -> str:
    """The name a kept fit goes by (:func:`benchmarks.records.kept_fit`)."""
    parts = [kind, loop, f"night{night}"] + ([f"size{size:g}"] if size is not None else []) \
        + [f"seed{seed}"] + [s.replace("=", "-") for s in sets or []]
    return "_".join(parts)
