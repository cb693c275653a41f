"""Command-line options of the pipeline, checked before any work starts.

``oral run``, ``oral backfill`` and ``oral demo`` check every option that can be checked without
reading a snapshot here, before the Prefect server starts: ``--set KEY=VALUE`` (typed strictly by
the :class:`~oral_core.config.ORALConfig` field), the resulting configuration
(``ORALConfig.validate`` and the ranges below), ``--device`` (CUDA present when asked for),
``--state-dir`` (a writable folder, or creatable as one), the graph name, the dates and the graph's
snapshot folders (a misnamed ``snapshot=...`` entry, no snapshot of ``--date``). A problem is one
:class:`OptionError` whose message names the option as the user wrote it::

    --set gamma=5: gamma must be in (0, 1]
    --set pol=ture: pol must be true or false (true/false, 1/0, yes/no, on/off), got 'ture'
    --device cuda: CUDA is not available on this machine (torch.cuda.is_available() is false)

and the command prints ``error: <message>`` on one line and exits 2.

:func:`parse_set` is the strict ``--set`` parser every command uses (``oral reproduce`` too).
"""
from __future__ import annotations

import difflib
import math
import os
import re
import types
import typing
import uuid
from dataclasses import fields
from pathlib import Path

from flows.settings import OptionError  # noqa: F401 - the error every check here raises

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")
NONE_WORDS = ("none", "null")
_INT = re.compile(r"^[+-]?\d+$")


def _field_types() -> dict[str, tuple[type, bool]]:
    """``{field: (base type, accepts None)}`` of every ORALConfig field, from its annotation."""
    from oral_core.config import ORALConfig

    hints = typing.get_type_hints(ORALConfig)
    out = {}
    for f in fields(ORALConfig):
        hint = hints[f.name]
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) or \
            typing.get_origin(hint) is typing.Union else ()
        if args:
            base = [a for a in args if a is not type(None)]
            out[f.name] = (base[0], type(None) in args)
        else:
            out[f.name] = (hint, False)
    return out


def parse_value(key: str, raw: str, kind: type, nullable: bool):
    """``raw`` as a value of ``kind`` (``None`` when ``nullable`` and raw is none/null), or a
    ``ValueError`` whose message names ``key`` and what it accepts."""
    text = raw.strip()
    if nullable and text.lower() in NONE_WORDS:
        return None
    or_none = " or none" if nullable else ""
    if kind is bool:
        if text.lower() in TRUE_WORDS:
            return True
        if text.lower() in FALSE_WORDS:
            return False
        raise ValueError(f"{key} must be true or false (true/false, 1/0, yes/no, on/off{or_none}),"
                         f" got {raw!r}")
    if kind is int:
        if not _INT.match(text):
            raise ValueError(f"{key} must be an integer{or_none}, got {raw!r}")
        return int(text)
    if kind is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{key} must be a number{or_none}, got {raw!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{key} must be a finite number{or_none}, got {raw!r}")
        return value
    if kind is str:
        if not text:
            raise ValueError(f"{key} must not be empty")
        return text
    raise ValueError(f"{key} cannot be set from the command line (type {kind.__name__})")


def parse_set(values: list[str] | None) -> tuple[dict, dict[str, str]]:
    """``--set KEY=VALUE`` items as ORALConfig overrides, typed strictly by each field.

    Returns ``(overrides, sources)``: ``sources`` maps each key to the option that set it
    (``"--set gamma=0.4"``), for messages. Raises :class:`OptionError` naming the item: no ``=``,
    an unknown key (with the closest known ones), or a value that is not of the field's type
    (booleans: only true/false, 1/0, yes/no, on/off; integers: no fractions; numbers: finite;
    ``none``/``null`` where the field accepts None)."""
    types_ = _field_types()
    out: dict = {}
    sources: dict[str, str] = {}
    for item in values or []:
        option = f"--set {item}"
        if "=" not in item:
            raise OptionError(f"{option}: expected KEY=VALUE, e.g. --set gamma=0.4")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in types_:
            close = difflib.get_close_matches(key, list(types_), n=3)
            hint = (f"; did you mean {', '.join(close)}?" if close else
                    "; see oral_core/config.py (ORALConfig) for the keys")
            raise OptionError(f"{option}: unknown configuration key {key!r}{hint}")
        kind, nullable = types_[key]
        try:
            out[key] = parse_value(key, raw, kind, nullable)
        except ValueError as err:
            raise OptionError(f"{option}: {err}") from None
        sources[key] = option
    return out, sources


# ---------------------------------------------------------------------------------- the config
def _option_for(message: str, sources: dict[str, str]) -> str:
    """The option a configuration problem comes from: the field the message starts with, else
    the first field it names, among those the user set; '' when the user set none of them."""
    words = re.findall(r"[a-z_]+", message)
    for word in words:
        if word in sources:
            return sources[word]
    return ""


def check_config(overrides: dict, sources: dict[str, str], base: dict | None = None):
    """The ORALConfig of ``base`` (default: ORALConfig's defaults) plus ``overrides``, checked:
    ORALConfig.validate, which holds every range (the same checks a run started from a
    deployment or from Python gets, :func:`flows.configuration.build_config`).
    Returns the config, or raises :class:`OptionError` naming the options at fault (every
    problem, on one line)."""
    from flows.configuration import ConfigError, build_config
    from oral_core.config import ORALConfig

    values = (base if base is not None else ORALConfig().to_dict()) | dict(overrides)
    try:
        return build_config(values)
    except ConfigError as err:
        parts = []
        for message in err.problems:
            option = _option_for(message, sources)
            parts.append(f"{option}: {message}" if option else
                         f"invalid configuration: {message}")
        raise OptionError("; ".join(parts)) from None


# ---------------------------------------------------------------------------------- the rest
def check_device(device: str, option: str, remote: bool = False) -> None:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (``mps`` where present). CUDA must be present
    on this machine unless training runs remotely (``ORAL_REMOTE_TRAINING``): then the GPU host
    decides."""
    if device in ("auto", "cpu"):
        return
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise OptionError(f"{option}: unknown device {device!r}; use auto, cpu, cuda or "
                          "cuda:N") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise OptionError(f"{option}: unsupported device type {dev.type!r}; use auto, cpu, cuda "
                          "or cuda:N")
    if remote:
        return
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise OptionError(f"{option}: CUDA is not available on this machine "
                              "(torch.cuda.is_available() is false); use --device cpu or auto")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise OptionError(f"{option}: this machine has {count} CUDA device(s) "
                              f"(cuda:0..cuda:{count - 1})")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None)
                                  and torch.backends.mps.is_available()):
        raise OptionError(f"{option}: MPS is not available on this machine")


#: What the pipeline writes inside the state folder: these subfolders (Prefect's home, the run
#: folders, the validation reports, the command's log file) and files (DuckDB, MLflow's store),
#: probed when they exist.
STATE_SUBFOLDERS = ("prefect", "runs", "reports", "logs")
STATE_FILES = ("oral.duckdb", "mlflow.db")


def write_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None: a folder by creating (and removing) a hidden
    file in it, a file by opening it for writing without changing it. A real write is asked,
    because ``os.access`` says yes to root whatever the permissions and cannot see everything
    that refuses a write (a full quota, some network file systems)."""
    try:
        if path.is_dir():
            probe = path / f".oral-write-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(probe)
        else:
            os.close(os.open(path, os.O_RDWR))
    except OSError as err:
        return err.strerror or str(err)
    return None


def check_state_dir(state_dir: Path | None) -> Path:
    """The state folder (``--state-dir``, else ``ORAL_STATE_DIR``, else ``./state``) must be a
    writable folder, or creatable as one: no part of its path may be a regular file, the
    nearest existing folder must take a new file, and so must the pipeline's subfolders and
    files in it that exist already (:data:`STATE_SUBFOLDERS`, :data:`STATE_FILES`). Checked
    before Prefect starts: a read-only Prefect home made its in-process server wait 126 s for a
    timeout, a read-only state folder gave an ``OSError`` traceback."""
    if state_dir is not None:
        option, raw = f"--state-dir {state_dir}", Path(state_dir)
    elif os.environ.get("ORAL_STATE_DIR"):
        option, raw = f"ORAL_STATE_DIR={os.environ['ORAL_STATE_DIR']}", \
            Path(os.environ["ORAL_STATE_DIR"])
    else:
        option, raw = "state folder ./state", Path("state")
    path = raw.expanduser().absolute()
    probe = path
    while True:
        if probe.exists():
            if not probe.is_dir():
                what = "is" if probe == path else f"lies under {probe}, which is"
                raise OptionError(f"{option}: {path} {what} not a folder")
            break
        if probe.parent == probe:
            return path
        probe = probe.parent
    if probe != path:
        problem = write_problem(probe)
        if problem:
            raise OptionError(f"{option}: state folder {path} cannot be created: {probe} is not "
                              f"writable ({problem})")
        return path
    problem = write_problem(path)
    if problem:
        raise OptionError(f"{option}: state folder {path} is not writable ({problem})")
    for name in STATE_SUBFOLDERS + STATE_FILES:
        inner = path / name
        if not inner.exists():
            continue
        if (name in STATE_SUBFOLDERS) != inner.is_dir():
            raise OptionError(f"{option}: {inner} in the state folder is not a "
                              f"{'folder' if name in STATE_SUBFOLDERS else 'file'}")
        problem = write_problem(inner)
        if problem:
            raise OptionError(f"{option}: {inner} in the state folder is not writable ({problem})")
    return path


def check_settings(state_dir: Path | None):
    """The environment's settings (``flows.settings.Settings.from_env``) after the state folder
    check; a malformed variable is named."""
    from flows.settings import Settings

    check_state_dir(state_dir)
    try:
        return Settings.from_env(state_dir)
    except ValueError as err:  # each variable's parser names itself and the value
        raise OptionError(str(err)) from None


def check_pipeline(args) -> dict:
    """Every option of ``oral run`` / ``oral backfill`` checked; returns the ORALConfig overrides
    the flow gets (``--set`` items, then ``--epochs``)."""
    from data_contracts.snapshots import (SnapshotError, check_graph_name, list_snapshots,
                                          parse_date)

    try:
        check_graph_name(args.graph)
    except SnapshotError as err:
        raise OptionError(f"--graph {args.graph}: {err}") from None
    dates = [("--date", getattr(args, "date", None)), ("--start", getattr(args, "start", None)),
             ("--end", getattr(args, "end", None))]
    parsed = {}
    for option, value in dates:
        if value is None:
            continue
        try:
            parsed[option] = parse_date(value)
        except SnapshotError:
            raise OptionError(f"{option} {value}: not a date; expected YYYY-MM-DD") from None
    if "--start" in parsed and "--end" in parsed and parsed["--start"] > parsed["--end"]:
        raise OptionError(f"--start {args.start} --end {args.end}: the start is after the end")
    root = Path(args.snapshots)
    if not root.is_dir():
        raise OptionError(f"--snapshots {args.snapshots}: "
                          f"{'not a folder' if root.exists() else 'no such folder'}")
    try:  # the graph's folder lists (a misnamed snapshot=... entry is named here, not mid-run)
        snapshots = list_snapshots(root, args.graph)
    except SnapshotError as err:
        raise OptionError(str(err)) from None
    settings = check_settings(args.state_dir)
    overrides, sources = parse_set(args.set)
    if args.epochs is not None:
        overrides["epochs"], sources["epochs"] = args.epochs, f"--epochs {args.epochs}"
    from flows.configuration import pipeline_defaults

    base = pipeline_defaults()
    if args.device:
        overrides["device"], sources["device"] = args.device, f"--device {args.device}"
    config = check_config(overrides, sources, base)
    remote = getattr(args, "remote_training", None)
    check_device(config.device, sources.get("device", f"--set device={config.device}"),
                 remote=settings.remote_training if remote is None else remote)
    if args.device:
        del overrides["device"]  # the flow takes it as its own parameter
    if "--date" in parsed:
        check_snapshot_of(snapshots, root, args.graph, parsed["--date"])
    if "--start" in parsed or "--end" in parsed:
        check_snapshots_between(root, args.graph, parsed.get("--start"), parsed.get("--end"))
    return overrides


def check_snapshot_of(snapshots, root: Path, graph: str, date) -> None:
    """``--date`` names a snapshot that is there (before, a missing one was found by the flow's
    first task: Prefect's server start, task retries and ERROR lines, 26 s, then the same
    message). Last of the checks, so a bad option is named first."""
    from data_contracts.snapshots import SnapshotError, select_snapshots

    if all(day != date for day, _ in snapshots):
        try:  # the flow's own message (which dates there are, or that there is none)
            select_snapshots(root, graph, date=date)
        except SnapshotError as err:
            raise OptionError(str(err)) from None


def check_snapshots_between(root: Path, graph: str, start, end) -> None:
    """``oral backfill --start/--end`` holds at least one snapshot (before, a range after the
    last snapshot was refused by the flow, after a Prefect server had started and written
    ``state/prefect`` and ``state/logs``: 27 s). The backfill's own message."""
    from data_contracts.snapshots import SnapshotError, backfill_snapshots

    try:
        backfill_snapshots(root, graph, start, end)
    except SnapshotError as err:
        raise OptionError(str(err)) from None


def check_demo(args) -> None:
    """Every option of ``oral demo`` checked (the state folder defaults to ``state/demo``)."""
    if args.periods < 1:
        raise OptionError(f"--periods {args.periods}: must be >= 1")
    if args.seed < 0:
        raise OptionError(f"--seed {args.seed}: must be >= 0")
    if args.dataset == "synthetic":
        from data_contracts.synthetic import SyntheticSpec

        from flows.demo import SYNTHETIC

        try:
            SyntheticSpec(num_nodes=args.nodes, seed=args.seed, **SYNTHETIC).validate()
        except ValueError as err:
            raise OptionError(f"--nodes {args.nodes}: {err}") from None
    settings = check_settings(args.state_dir or Path("state/demo"))
    overrides, sources = {}, {}
    if args.epochs is not None:
        overrides["epochs"], sources["epochs"] = args.epochs, f"--epochs {args.epochs}"
    if args.device:
        overrides["device"], sources["device"] = args.device, f"--device {args.device}"
    from flows.configuration import pipeline_defaults

    config = check_config(overrides, sources, pipeline_defaults())
    check_device(config.device, sources.get("device", "--device"),
                 remote=settings.remote_training)
