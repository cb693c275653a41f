"""Where the ``oral`` command's log records and tracebacks go (issue 21.10).

The terminal gets every record as one line, without a traceback: a refusal is the log's progress
lines and then one ``error:`` line (with the report path for a broken contract). Tracebacks go to
the log file of the state folder, ``<state>/logs/oral.log`` (``oral run``, ``backfill``, ``demo``;
appended, one line per record with time and process id, each traceback in full), and to the
Prefect server's run logs. ``oral -v`` (``--verbose``) prints them on the terminal too.

An exception the command does not expect is one line as well,
``error: <Type>: <message> (traceback in <log>)``, exit 1; commands without a state folder say
``(rerun with oral -v for the traceback)`` instead.
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

_state = {"verbose": False, "log_path": None, "file_handler": None, "console": None}


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
    root = logging.getLogger()
    if _state["console"] is None and not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8", delay=False)
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
    handler = _state["file_handler"]
    if handler is None:
        return
    logging.getLogger().removeHandler(handler)
    logging.getLogger(TRACE_LOGGER).removeHandler(handler)
    handler.close()
    _state["log_path"], _state["file_handler"] = None, None


def log_path() -> Path | None:
    return _state["log_path"]


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def report_unexpected(err: BaseException, command: str) -> int:
    """An exception the command does not handle: its traceback to the log file (and, with
    ``-v``, to the terminal), one ``error:`` line on stderr; exit status 1."""
    path = log_path()
    if path is not None:
        logging.getLogger(TRACE_LOGGER).error("oral %s failed", command,
                                              exc_info=(type(err), err, err.__traceback__))
    if _state["verbose"]:
        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
    where = (f"traceback in {path}" if path is not None else
             "rerun with oral -v for the traceback")
    print(f"error: {type(err).__name__}: {one_line(err)} ({where})", file=sys.stderr)
    return 1
