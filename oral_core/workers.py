"""The worker processes of a data-parallel fit (:mod:`oral_core.data_parallel`).

:func:`fit_data_parallel` is what the nightly pipeline calls when ``ORALConfig.shards`` is above 1
(``oral run --set shards=2 --set batch_size=1024``, or the flows' ``config`` parameter): the
calling process becomes worker 0 of a ``torch.distributed`` job over gloo and every worker trains
its part of every batch. The other workers are started by ``start_workers``: on this machine by
``torch.multiprocessing`` (:class:`LocalWorkers`, the default), or by any engine that can run a
function on other hosts and wait for it (the pipeline's Dask one: :mod:`tasks.workers`), with the
rendezvous file in a folder every host sees (``rendezvous_dir``).
"""
from __future__ import annotations

import torch

class LocalWorkers:
    """Workers started on this machine by ``torch.multiprocessing`` (spawned processes)."""

    def __init__(self, fn, args: tuple, count: int):
        self.context = torch.multiprocessing.start_processes(
            fn, args=args, nprocs=count, join=False, start_method="spawn")

    def join(self) -> None:
        """Wait for every worker; raises when one failed."""
        while not self.context.join():
            pass

    def stop(self) -> None:
        for process in self.context.processes:
            if process.is_alive():
                process.terminate()


def fit_data_parallel(config, workers: int, x: torch.Tensor, edge_index: torch.Tensor,
                      train_labels: torch.Tensor, val_labels: torch.Tensor | None = None,
                      threads: int = 1, timeout_minutes: float = 30.0, start_workers=LocalWorkers,
                      rendezvous_dir=None, **fit_kwargs):
    """Fit ORAL on one graph with ``workers`` processes (torch.distributed over gloo): this
    process is worker 0 and returns its fitted :class:`oral_core.trainer.ORAL`; workers 1.. are
    started by ``start_workers(fn, args, count)`` (an object with ``join()`` and ``stop()``;
    :class:`LocalWorkers` by default), which calls ``fn(i, *args)`` for ``i`` in
    ``range(count)``; they train their parts of every batch and exit. ``config.shards`` is set
    to ``workers``; ``threads``: torch threads per worker. The workers meet through a file in
    ``rendezvous_dir`` (every worker's host must see it at the same path; default: a temporary
    folder of this machine). ``fit_kwargs`` go to ``ORAL.fit`` on worker 0 only (``init``,
    ``init_class_id`` and ``on_progress``); ``init`` and ``init_class_id`` are passed to every
    worker.
    """
    import dataclasses
    import datetime as dt
    import shutil
    import tempfile
    import uuid
    from pathlib import Path

    from .trainer import ORAL

    if workers < 2:
        raise ValueError(f"fit_data_parallel needs at least 2 workers, got {workers}")
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        raise RuntimeError("fit_data_parallel starts its own workers: this process is already "
                           "part of a torch.distributed job")
    config = dataclasses.replace(config, shards=workers)
    shared = {k: fit_kwargs[k] for k in ("init", "init_class_id") if k in fit_kwargs}
    folder = Path(rendezvous_dir) if rendezvous_dir else Path(tempfile.mkdtemp(prefix="oral-dp-"))
    store_file = folder / f"rendezvous-{uuid.uuid4().hex}"
    store = "file://" + str(store_file.resolve())
    timeout = dt.timedelta(minutes=timeout_minutes)
    before, started = torch.get_num_threads(), None
    try:
        started = start_workers(_spawned_worker, (workers, store, timeout, threads, config, x,
                                                  edge_index, train_labels, val_labels, shared),
                                workers - 1)
        torch.set_num_threads(threads)
        torch.distributed.init_process_group("gloo", init_method=store, rank=0,
                                             world_size=workers, timeout=timeout)
        try:
            oral = ORAL(config).fit(x, edge_index, train_labels, val_labels, **fit_kwargs)
        finally:
            torch.distributed.destroy_process_group()
        started.join()
    except BaseException:
        if started is not None:
            started.stop()
        raise
    finally:
        torch.set_num_threads(before)
        store_file.unlink(missing_ok=True)
        if not rendezvous_dir:
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
