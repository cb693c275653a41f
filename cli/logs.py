"""Where the ``oral`` command's log records and tracebacks go (issue 21.10).

The terminal gets every record as one line, without a traceback: a refusal is the log's progress
lines and then one ``error:`` line (with the report path for a broken contract). Tracebacks go to
the log file of the state folder, ``<state>/logs/oral.log`` (``oral run``, ``backfill``, ``demo``;
appended, one line per record with time and process id, each traceback in full), and to the
Prefect server's run logs. ``oral -v`` (``--verbose``) prints them on the terminal too, and the
pipeline's INFO records; libraries' INFO chatter (Great Expectations, httpx, MLflow...:
:data:`THIRD_PARTY`) stays in the log file, off the terminal.

An exception the command does not expect is one line as well,
``error: <Type>: <message> (traceback in <log>)``, exit 1; commands without a state folder say
``(rerun with oral -v for the traceback)`` instead. A full disk is one line naming the folder and
its free space (:func:`disk_full_line`); a log file that cannot be written (``ENOSPC``) costs its
records, never a traceback (:class:`LogFile`).
"""
from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path

#: the file handler's logger for the command's own tracebacks (not shown on the terminal)
TRACE_LOGGER = "oral.trace"
FILE_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"
CONSOLE_FORMAT = "%(levelname)s %(name)s: %(message)s"

#: libraries whose INFO and DEBUG records stay off the terminal, ``-v`` or not (they still reach
#: the log file): Great Expectations registers ~200 functions per start ("Skipping registering
#: function"), httpx logs every request to Prefect's API, MLflow and its alembic migrations
#: their set-up. ``-v`` is for the pipeline's own loggers (and Prefect's run logs).
THIRD_PARTY = ("great_expectations", "httpx", "httpcore", "urllib3", "alembic", "mlflow", "git",
               "filelock", "asyncio", "matplotlib", "PIL", "numexpr", "distributed", "tornado")

_state = {"verbose": False, "log_path": None, "file_handler": None, "console": None,
          "state_dir": None, "disk_full_told": False}


class LogFile(logging.FileHandler):
    """The log file's handler. A write that fails (a full disk: ``ENOSPC``) does not print
    ``--- Logging error ---`` and a traceback on the terminal, as :mod:`logging` does: the
    handler stops writing and remembers why (:attr:`failed`); :func:`close_log_file` says it in
    one line unless the command already said the disk is full."""

    failed: OSError | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.failed is None:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, OSError):
            self.failed = self.failed or err
            return
        super().handleError(record)

    def close(self) -> None:
        try:
            super().close()
        except OSError as err:  # the buffered tail could not be written (ENOSPC)
            self.failed = self.failed or err
            try:
                if self.stream is not None:
                    self.stream.close()
            except OSError:
                pass
            self.stream = None


class QuietLibraries(logging.Filter):
    """On the terminal handler: records below WARNING from a :data:`THIRD_PARTY` library are
    dropped (the loggers' own levels are left alone, so the log file keeps them)."""

    def __init__(self, names=THIRD_PARTY, level: int = logging.WARNING):
        super().__init__()
        self.names, self.level = tuple(names), level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.level:
            return True
        name = record.name
        return not any(name == n or name.startswith(n + ".") for n in self.names)


#: a log record's attribute saying the command prints what the record says as its own
#: ``error:`` line (:func:`said_by_the_command`); the terminal then leaves the record out
SAID_BY_THE_COMMAND = "oral_said_by_the_command"


def said_by_the_command(record: logging.LogRecord) -> None:
    """Mark ``record`` as one the command says itself, once, as its ``error:`` line (a broken
    contract's exception and Prefect's ``Finished in state Failed(...)`` about it): the terminal
    drops it (:class:`RoutineStates`); the log file and Prefect's API keep it."""
    setattr(record, SAID_BY_THE_COMMAND, True)


class RoutineStates(logging.Filter):
    """On the terminal handler, records that only repeat what the terminal says anyway:

    - Prefect's ``Finished in state Completed()``, which its run loggers say after every task
      and flow run (a third of a night's lines, none naming what finished); every other state
      (``Failed``, ``Crashed``, ``Cached``...) passes;
    - a record :func:`said_by_the_command` marked (the refusal is said once, as ``error:``);
    - Prefect's ``Stopping temporary server``, which came after that ``error:`` line.

    The log file and Prefect's API still get them all."""

    LOGGERS = ("prefect.task_runs", "prefect.flow_runs")

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, SAID_BY_THE_COMMAND, False):
            return False
        if record.levelno > logging.INFO:
            return True
        message = record.getMessage()
        if record.name in self.LOGGERS and message == "Finished in state Completed()":
            return False
        return not (record.name == "prefect" and message.startswith("Stopping temporary server"))


class ConsoleFormatter(logging.Formatter):
    """One line per record: the message without its traceback or stack (those go to the log
    file). The record itself is left as it is, for the other handlers (the log file, Prefect's
    API handler)."""

    def __init__(self, fmt: str = CONSOLE_FORMAT, tracebacks: bool = False):
        super().__init__(fmt)
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if self.tracebacks or not (record.exc_info or record.exc_text or record.stack_info):
            return super().format(record)
        bare = logging.makeLogRecord(record.__dict__)
        bare.exc_info, bare.exc_text, bare.stack_info = None, None, None
        return super().format(bare)


def setup_console(verbose: bool) -> None:
    """The terminal handler on the root logger (once per process, as ``logging.basicConfig``
    does: nothing is added when the root logger already has handlers, e.g. under pytest)."""
    _state["verbose"] = bool(verbose)
    _state["disk_full_told"] = False
    # MLflow prints through a handler of its own (not propagated, so not in the log file either):
    # its INFO set-up lines ("Creating initial MLflow database tables...") off, unless asked for
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    root = logging.getLogger()
    if _state["console"] is None and not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.addFilter(QuietLibraries())
        handler.addFilter(RoutineStates())
        root.addHandler(handler)
        _state["console"] = handler
    if _state["console"] is not None:  # ours: its format and the level; else left alone
        _state["console"].setFormatter(ConsoleFormatter(tracebacks=bool(verbose)))
        root.setLevel(logging.INFO if verbose else logging.WARNING)


def open_log_file(state_dir: str | Path) -> Path | None:
    """Append every record of this command, tracebacks included, to ``<state>/logs/oral.log``
    (the state folder was checked writable before); None when the file cannot be opened (the
    command then runs without one). Idempotent within a process."""
    path = Path(state_dir).expanduser().absolute() / "logs" / "oral.log"
    if _state["log_path"] == path:
        return path
    close_log_file()
    _state["state_dir"] = Path(state_dir).expanduser().absolute()  # for disk_full_line
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = LogFile(path, encoding="utf-8", delay=False)
    except OSError as err:
        logging.getLogger(__name__).warning("no log file at %s: %s", path, err)
        return None
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    logging.getLogger().addHandler(handler)
    trace = logging.getLogger(TRACE_LOGGER)
    trace.addHandler(handler)
    trace.propagate = False
    trace.setLevel(logging.INFO)
    _state["log_path"], _state["file_handler"] = path, handler
    logging.getLogger(TRACE_LOGGER).info("oral %s (pid %d)", " ".join(sys.argv[1:]), os.getpid())
    return path


def close_log_file() -> None:
    """Detach and close the log file. A log file that could not be written (a full disk) is one
    ``warning:`` line on stderr, never a traceback (none when the command already said that the
    disk is full)."""
    handler = _state["file_handler"]
    if handler is None:
        return
    logging.getLogger().removeHandler(handler)
    logging.getLogger(TRACE_LOGGER).removeHandler(handler)
    try:
        handler.close()
    except OSError as err:  # not a LogFile (a handler swapped in by a caller): same treatment
        handler.failed = getattr(handler, "failed", None) or err
    failed = getattr(handler, "failed", None)
    if failed is not None and not _state["disk_full_told"]:
        print(f"warning: the log file {_state['log_path']} could not be written "
              f"({failed.strerror or failed}); its last records are lost", file=sys.stderr)
    _state["log_path"], _state["file_handler"] = None, None
    _state["disk_full_told"] = False


def log_path() -> Path | None:
    return _state["log_path"]


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def disk_full_line(err: BaseException) -> str | None:
    """The one-line message for ``err`` when a full disk caused it (``ENOSPC``, SQLite's
    ``database or disk is full``, a Prefect server error or start-up timeout while a folder the
    night writes to is below ``ORAL_MIN_FREE_MB``; :func:`tasks.diskspace.explain`): which
    folder, its free space, what a night needs. None otherwise."""
    from tasks import diskspace

    try:
        from flows.settings import Settings

        settings = Settings.from_env(_state["state_dir"])
        where = diskspace.folders(settings.state_dir, settings.warehouse_path,
                                  settings.tracking_uri)
        line = diskspace.explain(err, where)
    except Exception:  # noqa: BLE001 - explaining must never hide the error itself
        return None
    if line:
        _state["disk_full_told"] = True
    return line


def report_unexpected(err: BaseException, command: str) -> int:
    """An exception the command does not handle: its traceback to the log file (and, with
    ``-v``, to the terminal), one ``error:`` line on stderr; exit status 1. A full disk
    (:func:`disk_full_line`) is that line, naming the folder and its free space."""
    path = log_path()
    if path is not None:
        logging.getLogger(TRACE_LOGGER).error("oral %s failed", command,
                                              exc_info=(type(err), err, err.__traceback__))
    if _state["verbose"]:
        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
    full = disk_full_line(err)
    if full:
        print(f"error: {full}", file=sys.stderr)
        return 1
    where = (f"traceback in {path}" if path is not None else
             "rerun with oral -v for the traceback")
    print(f"error: {type(err).__name__}: {one_line(err)} ({where})", file=sys.stderr)
    return 1
