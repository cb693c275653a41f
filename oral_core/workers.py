"""The worker processes of a data-parallel fit on one machine (:mod:`oral_core.data_parallel`).

:func:`fit_data_parallel` is what the nightly pipeline calls when ``ORALConfig.shards`` is above 1
(``oral run --set shards=2 --set batch_size=1024``, or the flows' ``config`` parameter): the
calling process becomes worker 0 of a ``torch.distributed`` job over gloo, ``torch.multiprocessing``
spawns the others, and every worker trains its part of every batch.
"""
from __future__ import annotations

import torch

def fit_data_parallel(config, workers: int, x: torch.Tensor, edge_index: torch.Tensor,
                      train_labels: torch.Tensor, val_labels: torch.Tensor | None = None,
                      threads: int = 1, timeout_minutes: float = 30.0, **fit_kwargs):
    """Fit ORAL on one graph with ``workers`` processes on this machine (torch.distributed over
    gloo, started by ``torch.multiprocessing``): this process is worker 0 and returns its fitted
    :class:`oral_core.trainer.ORAL`; workers 1.. are spawned, train their parts of every batch
    and exit. ``config.shards`` is set to ``workers``; ``threads``: torch threads per worker.
    ``fit_kwargs`` go to ``ORAL.fit`` on worker 0 only (``init``, ``init_class_id`` and
    ``on_progress``); ``init`` and ``init_class_id`` are passed to every worker.

    A cluster does the same with one worker per process of a ``torch.distributed`` job (each
    calling ``ORAL(config).fit`` after ``init_process_group``); docs/operators.md says how.
    """
    import dataclasses
    import datetime as dt
    import os
    import tempfile

    from .trainer import ORAL

    if workers < 2:
        raise ValueError(f"fit_data_parallel needs at least 2 workers, got {workers}")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        raise RuntimeError("fit_data_parallel starts its own workers: this process is already "
                           "part of a torch.distributed job")
    config = dataclasses.replace(config, shards=workers)
    shared = {k: fit_kwargs[k] for k in ("init", "init_class_id") if k in fit_kwargs}
    folder = tempfile.mkdtemp(prefix="oral-dp-")
    store = "file://" + os.path.join(folder, "rendezvous")
    timeout = dt.timedelta(minutes=timeout_minutes)
    started = torch.multiprocessing.start_processes(
        _spawned_worker, args=(workers, store, timeout, threads, config, x, edge_index,
                               train_labels, val_labels, shared),
        nprocs=workers - 1, join=False, start_method="spawn")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        torch.distributed.init_process_group("gloo", init_method=store, rank=0,
                                             world_size=workers, timeout=timeout)
        try:
            oral = ORAL(config).fit(x, edge_index, train_labels, val_labels, **fit_kwargs)
        finally:
            torch.distributed.destroy_process_group()
        while not started.join():
            pass
    except BaseException:
        for process in started.processes:
            if process.is_alive():
                process.terminate()
        raise
    finally:
        torch.set_num_threads(before)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return oral


def _spawned_worker(index: int, workers: int, store: str, timeout, threads: int, config,
                    x, edge_index, train_labels, val_labels, shared: dict) -> None:
    """Worker ``index + 1`` of :func:`fit_data_parallel` (a spawned process)."""
    import dataclasses

    from .trainer import ORAL

    torch.set_num_threads(threads)
    torch.distributed.init_process_group("gloo", init_method=store, rank=index + 1,
                                         world_size=workers, timeout=timeout)
    try:
        ORAL(dataclasses.replace(config, progress=False)).fit(x, edge_index, train_labels,
                                                               val_labels, **shared)
    finally:
        torch.distributed.destroy_process_group()
