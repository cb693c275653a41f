"""What a new user sees on the terminal (issue 48.7 and 48.8): ``oral -v`` prints the
pipeline's own records, not ~250 lines of library chatter; training says how far it is, a line
every few seconds, through the run's logger."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"


# --------------------------------------------------------------------- 48.7 library chatter
def test_verbose_keeps_library_chatter_off_the_terminal(tmp_path):
    """``oral -v validate`` with a state folder printed ~260 lines, 250 of them Great
    Expectations' "Skipping registering function" and set-up records; now only ours."""
    from test_refusals import _write

    folder = _write(tmp_path / "snapshots", "g")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ORAL_",
                                                                     "MLFLOW_"))}
    env |= {"DO_NOT_TRACK": "true", "MLFLOW_DISABLE_TELEMETRY": "true", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CLI, "-v", "validate", str(folder),
                          "--state-dir", str(tmp_path / "state")], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = (out.stdout + out.stderr).splitlines()
    assert not [line for line in lines if "great_expectations" in line or "httpx" in line], \
        "\n".join(lines[:20])
    assert len(lines) < 30, "\n".join(lines)
    assert "PASSED" in out.stdout


def test_the_filter_spares_warnings_and_our_loggers():
    from cli.logs import QuietLibraries

    quiet = QuietLibraries()

    def passes(name, level=logging.INFO):
        return quiet.filter(logging.LogRecord(name, level, __file__, 1, "m", None, None))

    for name in ("great_expectations._docs_decorators", "httpx", "httpcore.http11", "urllib3",
                 "alembic.runtime.migration", "mlflow.store.db.utils"):
        assert not passes(name) and not passes(name, logging.DEBUG)
        assert passes(name, logging.WARNING) and passes(name, logging.ERROR)
    for name in ("tasks.fitting", "flows.nightly", "oral_core.trainer", "prefect.task_runs",
                 "data_contracts", "httpx_like_but_ours", "mlflowish"):
        assert passes(name)
    # the loggers' own levels are untouched: a log file on the root logger still gets them
    assert logging.getLogger("great_expectations").level == logging.NOTSET


def test_prefect_routine_completions_stay_off_the_terminal():
    """Issue 62: 14 of a night's 41 terminal lines were Prefect's unnamed ``Finished in state
    Completed()``; the terminal drops exactly those, every other state and record passes."""
    from cli.logs import RoutineStates

    routine = RoutineStates()

    def passes(name, msg, level=logging.INFO):
        return routine.filter(logging.LogRecord(name, level, __file__, 1, msg, None, None))

    assert not passes("prefect.task_runs", "Finished in state Completed()")
    assert not passes("prefect.flow_runs", "Finished in state Completed()")
    assert passes("prefect.task_runs", "Finished in state Failed('Task run encountered an "
                  "exception')")
    assert passes("prefect.flow_runs", "Finished in state Crashed()")
    assert passes("prefect.task_runs", "Finished in state Completed()", logging.WARNING)
    assert passes("prefect.task_runs", "published run 08927d5c6618 to oral.duckdb")
    assert passes("tasks.fitting", "Finished in state Completed()")
    assert not passes("prefect", "Stopping temporary server on http://127.0.0.1:8202")
    from cli.logs import said_by_the_command

    record = logging.LogRecord("prefect.flow_runs", logging.ERROR, __file__, 1, "boom", None, None)
    assert routine.filter(record)
    said_by_the_command(record)  # the command prints it as its error: line
    assert not routine.filter(record)


# ------------------------------------------------------------------ 48.8 training progress
class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _Logger:
    def __init__(self):
        self.lines = []

    def info(self, msg, *args):
        self.lines.append(msg % args)


def test_progress_log_is_a_line_every_few_seconds():
    from tasks.fitting import ProgressLog

    clock, logger = _Clock(), _Logger()
    progress = ProgressLog(logger, every=5.0, clock=clock)
    for epoch in range(1, 201):  # 0.125 s an epoch: 25 s in all
        clock.now += 0.125
        progress(epoch, 200)
    assert logger.lines == [f"training: epoch {e}/200, {e // 8} s so far, 8.00 epochs/s"
                            for e in (40, 80, 120, 160, 200)]


def test_fit_reports_every_epoch_and_the_pipeline_passes_a_progress_log(monkeypatch):
    """``ORAL.fit(on_progress=...)`` is told after each epoch (with the bar off, as in the
    pipeline); ``tasks.fitting.train`` hands it on, and the Prefect task gives it a ProgressLog on
    the run's logger, so ``oral run`` shows it."""
    from oral_core.config import ORALConfig
    from oral_core.synthetic import make_attributed_sbm
    from oral_core.trainer import ORAL

    graph = make_attributed_sbm(num_nodes=120, num_classes=3, feature_dim=8, seed=2)
    train = graph.y.clone()
    train[train == 2] = -1
    train[torch.arange(120) % 2 == 1] = -1
    seen = []
    cfg = ORALConfig(epochs=6, hidden_dim=8, cluster_warmup_epochs=2, pol_start_epoch=3,
                     progress=False, device="cpu")
    ORAL(cfg).fit(graph.x, graph.edge_index, train, on_progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert {t for _, t in seen} == {6} and len(seen) == 7  # 6 epochs and the final evaluation

    from tasks import prefect_tasks as pt
    from tasks import fitting

    handed = {}

    def fake_train(*args, progress=None, **kwargs):
        handed["progress"] = progress
        raise RuntimeError("stop here")

    logger = _Logger()
    monkeypatch.setattr(fitting, "train", fake_train)
    monkeypatch.setattr(pt, "get_run_logger", lambda: logger)
    monkeypatch.setattr("tasks.diskspace.check_free_space", lambda *a, **k: None)
    try:
        pt.train.fn(SimpleNamespace(num_nodes=120), cfg.to_dict(), "/nonexistent", "auto", "g",
                    "c", "h")
    except RuntimeError:
        pass
    assert isinstance(handed.get("progress"), fitting.ProgressLog)
    assert handed["progress"].logger is logger


def test_a_degraded_model_answered_per_class_is_not_said_to_be_withheld():
    """The night's warning said 'will not be the latest answer' although the per-class answer
    (the default) publishes the night all the same; it says what happens now."""
    from tasks.prefect_tasks import degraded_line

    per_class = degraded_line("g", "below the reference", per_class=True)
    assert "not be the champion" in per_class and "latest answer" not in per_class
    assert "answer is decided per class and published" in per_class
    whole = degraded_line("g", "below the reference", per_class=False)
    assert "will not be the latest answer or the champion: below the reference" in whole
