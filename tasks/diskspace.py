"""Free space before the writes of a night, and a full disk told in one line.

A night writes into several folders: the state folder (run folders, reports, the log file), the
Prefect home (its database, the persisted task results), the MLflow store and the DuckDB file.
When one of them runs out of space the failure used to surface wherever it happened to hit (a
timeout of Prefect's temporary server, an HTTP 500 from it, a traceback from a log handler).
:func:`check_free_space` asks the file system first (``shutil.disk_usage``) and raises
:class:`DiskFull` naming the folder and its free space when it holds less than the minimum
(``ORAL_MIN_FREE_MB``, default 200 MB); :func:`explain` turns an error that a full disk caused
(``ENOSPC``, SQLite's ``database or disk is full``, a Prefect server error or start-up timeout
while a folder is below the minimum) into the same one line.
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Iterable, Mapping

#: the minimum free space of every folder a night writes to, in MB (``ORAL_MIN_FREE_MB``)
DEFAULT_MIN_FREE_MB = 200.0
_MB = 1024 * 1024
_FULL_TEXT = ("no space left on device", "database or disk is full", "disk quota exceeded")


class DiskFull(RuntimeError):
    """A folder the night writes to has less free space than the minimum."""

    def __init__(self, label: str, folder: Path, free_mb: float, need_mb: float, step: str = ""):
        self.label, self.folder, self.free_mb, self.need_mb = label, Path(folder), free_mb, need_mb
        super().__init__(
            f"disk full: {label} {folder} has {free_mb:.0f} MB free; a night needs at least "
            f"{need_mb:.0f} MB there (ORAL_MIN_FREE_MB){f', checked before {step}' if step else ''}"
            f". Free some space and run it again: nothing was published tonight")


def min_free_mb() -> float:
    """``ORAL_MIN_FREE_MB`` (default 200; ``0`` turns the checks off)."""
    raw = os.environ.get("ORAL_MIN_FREE_MB", "").strip()
    if not raw:
        return DEFAULT_MIN_FREE_MB
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"ORAL_MIN_FREE_MB must be a number of megabytes >= 0 (0: no check), "
                         f"got {raw!r}")
    return value


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a folder not made yet lives on its parent's disk)."""
    path = Path(path).expanduser().absolute()
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path


def free_bytes(path: str | os.PathLike) -> int:
    """Free bytes for an unprivileged writer on the file system holding ``path``."""
    return shutil.disk_usage(_existing(Path(path))).free


def folders(state_dir: str | os.PathLike, warehouse_path: str | os.PathLike | None = None,
            tracking_uri: str | None = None,
            prefect_home: str | os.PathLike | None = None) -> dict[str, Path]:
    """What a night writes to, by name: the state folder, the Prefect home, the MLflow store
    (a local one: the SQLite file's or the file store's folder; a tracking server: none) and the
    DuckDB file's folder."""
    state = Path(state_dir).expanduser().absolute()
    home = prefect_home or os.environ.get("PREFECT_HOME") or state / "prefect"
    out = {"state folder": state, "Prefect home": Path(home).expanduser().absolute()}
    uri = tracking_uri or ""
    if not uri:
        out["MLflow store"] = state
    elif uri.startswith("sqlite:///"):
        out["MLflow store"] = Path(uri[len("sqlite:///"):]).absolute().parent
    elif uri.startswith("file:"):
        from urllib.parse import urlparse

        out["MLflow store"] = Path(urlparse(uri).path).absolute()
    elif "://" not in uri:
        out["MLflow store"] = Path(uri).absolute()
    if warehouse_path is not None:
        out["warehouse"] = Path(warehouse_path).expanduser().absolute().parent
    return out


def lowest(where: Mapping[str, Path]) -> tuple[str, Path, float] | None:
    """The folder of ``where`` with the least free space: ``(label, folder, free MB)``."""
    found = []
    for label, folder in where.items():
        try:
            found.append((free_bytes(folder) / _MB, label, folder))
        except OSError:
            continue
    if not found:
        return None
    free, label, folder = min(found, key=lambda f: f[0])
    return label, folder, free


def check_free_space(where: Mapping[str, Path], step: str = "",
                     minimum_mb: float | None = None) -> None:
    """Raise :class:`DiskFull` when a folder of ``where`` (``{label: folder}``) has less than
    ``minimum_mb`` (default ``ORAL_MIN_FREE_MB``) free."""
    need = min_free_mb() if minimum_mb is None else float(minimum_mb)
    if need <= 0:
        return
    for label, folder in where.items():
        try:
            free = free_bytes(folder) / _MB
        except OSError:
            continue  # a folder that cannot be asked fails at its first write, with its path
        if free < need:
            raise DiskFull(label, _existing(folder) if not Path(folder).exists() else folder,
                           free, need, step)


def _chain(err: BaseException) -> Iterable[BaseException]:
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _says_full(err: BaseException) -> bool:
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = " ".join([str(err)] + list(getattr(err, "__notes__", []) or [])).lower()
    return any(t in text for t in _FULL_TEXT)


def _server_trouble(err: BaseException) -> bool:
    """A Prefect server error (HTTP 5xx) or its temporary server that never came up: what a
    full disk under the Prefect home looks like from the client."""
    response = getattr(err, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return True
    text = str(err)
    return "ephemeral Prefect API server" in text or "Server error '5" in text


def explain(err: BaseException, where: Mapping[str, Path]) -> str | None:
    """The one-line message for ``err`` when a full disk caused it, else None: an ``ENOSPC``
    (or SQLite's ``database or disk is full``) anywhere in its chain names the folder of
    ``where`` with the least free space (the file's own folder when the error names one); a
    Prefect server error counts only while a folder of ``where`` is below the minimum."""
    for e in _chain(err):
        if isinstance(e, DiskFull):
            return str(e)
    need = min_free_mb() or DEFAULT_MIN_FREE_MB
    full = any(_says_full(e) for e in _chain(err))
    if not full and not any(_server_trouble(e) for e in _chain(err)):
        return None
    named = {}
    for e in _chain(err):
        name = getattr(e, "filename", None)
        if full and isinstance(name, (str, os.PathLike)) and str(name):
            named = {"folder": _existing(Path(name).parent)}
            break
    found = lowest(named or where)
    if found is None:
        return None
    label, folder, free = found
    if not full and free >= need:
        return None  # a server error with space to spare: not the disk
    cause = " ".join(f"{type(err).__name__}: {err}".split())
    return (f"disk full: {label} {folder} has {free:.0f} MB free; a night needs at least "
            f"{need:.0f} MB there (ORAL_MIN_FREE_MB). Free some space and run it again: the "
            f"rerun finishes the night (stopped on {cause[:160]})")
