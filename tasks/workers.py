"""Data-parallel training workers on a Dask cluster (``ORAL_TRAIN_CLUSTER``; issue 61 item 4).

With ``ORALConfig.shards = W > 1`` a night's training runs as ``W`` worker processes of one
``torch.distributed`` job (:mod:`oral_core.data_parallel`): the training step's own process is
worker 0. By default the other workers are spawned on the same host
(:class:`oral_core.workers.LocalWorkers`). With ``ORAL_TRAIN_CLUSTER`` set to a Dask scheduler
(``tcp://host:8786``) they run on that cluster's worker processes instead, one worker process
each (:class:`DaskWorkers`), so one graph trains across machines. Dask only places and watches
them; they talk to each other over gloo. The job meets through a file in the night's run folder,
which (as for remote training) every host must see at the same path, and each host's gloo must
reach the others (``GLOO_SOCKET_IFNAME`` names the network interface when a host has several).

Dask is imported only here and in :mod:`flows.fanout`, inside functions.
"""
from __future__ import annotations

import os
import uuid

#: the environment variable naming the Dask scheduler of the training workers
CLUSTER_ENV = "ORAL_TRAIN_CLUSTER"
#: seconds to wait for the scheduler to answer
CONNECT_TIMEOUT = 30.0


class ClusterError(RuntimeError):
    """The training cluster cannot take the workers (unreachable, or too few worker processes)."""


def train_cluster() -> str | None:
    """The Dask scheduler of the data-parallel workers (``ORAL_TRAIN_CLUSTER``, ``tcp://`` added
    when no scheme is given); None when unset (workers on this host). An address nothing answers
    at is refused when the workers start (:class:`ClusterError`)."""
    address = os.environ.get(CLUSTER_ENV, "").strip()
    if not address:
        return None
    return address if "://" in address else "tcp://" + address


class DaskWorkers:
    """``count`` calls ``fn(i, *args)``, each on its own worker process of the Dask cluster at
    ``address`` (the interface :func:`oral_core.workers.fit_data_parallel` starts workers
    through)."""

    def __init__(self, address: str, fn, args: tuple, count: int,
                 timeout: float | None = None):
        from distributed import Client

        try:
            self.client = Client(address, timeout=timeout or CONNECT_TIMEOUT,
                                 set_as_default=False)
        except OSError as e:
            raise ClusterError(f"{CLUSTER_ENV}={address}: no Dask scheduler answers ({e})") from e
        hosts = sorted(self.client.scheduler_info()["workers"])
        if len(hosts) < count:
            self.client.close()
            raise ClusterError(f"{CLUSTER_ENV}={address}: the cluster has {len(hosts)} worker "
                               f"process(es); shards={count + 1} needs {count} besides this one")
        job = uuid.uuid4().hex[:8]
        self.futures = [self.client.submit(fn, i, *args, key=f"oral-worker-{job}-{i}",
                                           workers=[hosts[i]], allow_other_workers=False,
                                           pure=False)
                        for i in range(count)]

    def join(self) -> None:
        """Wait for every worker; re-raises a worker's exception."""
        try:
            for future in self.futures:
                future.result()
        finally:
            self.client.close()

    def stop(self) -> None:
        try:
            self.client.cancel(self.futures)
        finally:
            self.client.close()


def dask_workers(address: str):
    """A ``start_workers`` for :func:`oral_core.workers.fit_data_parallel` on the cluster at
    ``address``."""
    def start(fn, args: tuple, count: int) -> DaskWorkers:
        return DaskWorkers(address, fn, args, count)
    return start
