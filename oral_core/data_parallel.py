"""Data-parallel training of one graph (not in the paper; ``ORALConfig.shards``, issue 61 item 4).

Mini-batch training (``batch_size``) takes one optimiser step of Eq. 13 per batch of seed nodes.
With ``shards = W > 1`` each batch is cut into ``W`` equal parts (:func:`shard_of`); part ``s``
samples its subgraph, drops its edges and its inputs with a random stream of its own
(:func:`shard_generators`), and the step's gradient is the mean of the parts' gradients. Under
``torch.distributed`` with world size ``W`` each worker (rank ``s``) computes part ``s`` and the
gradients are summed across workers (:func:`mean_gradients`, an all-reduce) before every worker
takes the same step; in one process the parts run one after another and are summed in the same
order. With two parts the two computations are the same arithmetic (float addition of two terms
commutes), which is what the test of the launcher checks.

Everything that is decided for the whole graph (the evaluation pass, the prototype clustering of
Eq. 3-4, the ensemble and pseudo-labels of Eq. 8-9, the refined structure of Eq. 10-11, model
selection) is computed by every worker from the same parameters and the same shared random
stream, so the workers hold one answer; :func:`same_answer` checks it at the end of a fit.

What it does not do (yet): the evaluation pass is not split across workers, so each worker holds
the whole graph's features and edges; a graph that does not fit one machine's memory would also
need its features partitioned across hosts and a sampled (not whole-graph) evaluation and
clustering pass (docs/large_graphs.md, "One graph across workers"). The workers of one machine
are started by :func:`oral_core.workers.fit_data_parallel`.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch

#: offset between the fit's seed and the shards' random streams (any fixed odd number)
SHARD_SEED_STRIDE = 7919


def world() -> tuple[int, int]:
    """``(rank, world size)`` of this process under ``torch.distributed``; ``(0, 1)`` when no
    process group is set up."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def shards_here(shards: int) -> list[int]:
    """The parts of every batch this process computes: all of them in one process, its own rank
    under ``torch.distributed`` (whose world size must then be ``shards``)."""
    rank, size = world()
    if size == 1:
        return list(range(shards))
    if size != shards:
        raise ValueError(f"shards={shards} but torch.distributed has {size} workers: each worker "
                         "computes one part of every batch, so the two must be equal")
    return [rank]


def shard_of(seeds: torch.Tensor, shards: int, index: int) -> torch.Tensor:
    """Part ``index`` of a batch of seed nodes cut into ``shards`` near-equal parts."""
    return seeds.tensor_split(shards)[index]


def shard_generators(seed: int, shards: int, device: torch.device) -> list[torch.Generator]:
    """One random stream per part (sampling, edge drop and dropout), the same on every worker."""
    gen_device = device if device.type == "cuda" else torch.device("cpu")
    return [torch.Generator(device=gen_device).manual_seed(seed * SHARD_SEED_STRIDE + 1 + s)
            for s in range(shards)]


@contextlib.contextmanager
def shard_random_state(generator: torch.Generator) -> Iterator[None]:
    """Torch's global random state seeded from the part's stream for the part's forward and
    backward (the layers' dropout draws from it), then restored: a part draws the same numbers
    whether it runs alone on a worker or after another part in one process."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator,
                             device=generator.device).item())
    devices = [torch.cuda.current_device()] if generator.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def part_gradients(loss: torch.Tensor, params: list[torch.nn.Parameter]) -> list[torch.Tensor]:
    """The gradient of one part's loss for every parameter (zeros where it does not reach)."""
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]


def mean_gradients(parts: list[list[torch.Tensor]], params: list[torch.nn.Parameter],
                   shards: int) -> float:
    """Set every parameter's ``.grad`` to the mean over all ``shards`` parts of its gradient:
    this process's parts summed in order, then summed across workers (one all-reduce of the
    flattened gradients). Returns the seconds spent communicating (0 in one process)."""
    summed = [sum(gs[1:], gs[0].clone()) if len(gs) > 1 else gs[0]
              for gs in zip(*parts)]
    spent = 0.0
    rank, size = world()
    if size > 1:
        flat = torch.cat([g.reshape(-1) for g in summed])
        started = time.perf_counter()
        torch.distributed.all_reduce(flat)
        spent = time.perf_counter() - started
        summed = list(flat.split([g.numel() for g in summed]))
    for p, g in zip(params, summed):
        p.grad = (g / shards).reshape(p.shape)
    return spent


def summed_over_workers(values: dict[str, float]) -> dict[str, float]:
    """A step's figures (each part's already divided by the number of parts) summed over the
    workers: the mean over all parts (unchanged in one process)."""
    rank, size = world()
    if size == 1 or not values:
        return values
    keys = sorted(values)
    t = torch.tensor([float(values[k]) for k in keys], dtype=torch.float64)
    torch.distributed.all_reduce(t)
    return {k: float(v) for k, v in zip(keys, t.tolist())}


def broadcast_parameters(module: torch.nn.Module) -> None:
    """Every worker starts from rank 0's parameters (they are seeded alike; this makes sure)."""
    if world()[1] > 1:
        for tensor in module.state_dict().values():
            torch.distributed.broadcast(tensor, src=0)


def same_answer(class_id: torch.Tensor) -> None:
    """Raise unless every worker selected the same class for every node (one answer for the
    whole graph). Free in one process."""
    rank, size = world()
    if size == 1:
        return
    ids = class_id.long().cpu()
    weights = torch.arange(1, ids.numel() + 1, dtype=torch.float64)
    mine = torch.tensor([float(ids.numel()), float((ids.double() * weights).sum())],
                        dtype=torch.float64)
    every = [torch.zeros_like(mine) for _ in range(size)]
    torch.distributed.all_gather(every, mine)
    if any(not torch.equal(other, every[0]) for other in every):
        raise RuntimeError(f"data-parallel workers disagree on the answer (worker {rank}): "
                           "the whole-graph passes must see the same parameters and streams")

