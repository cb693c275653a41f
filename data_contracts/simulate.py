"""Turn a static attributed graph into an evolving one: one snapshot per period.

* **Arrivals.** Every node arrives at one period and stays. By default, ``initial_fraction`` of
  the nodes of each known class arrive at period 0 (at least one, so every known class is present
  from the first snapshot) and the rest evenly over periods ``1..P-1``. A novel class ``c``
  starting at period ``s_c`` has its nodes arrive evenly over ``s_c..P-1`` (at least one at
  ``s_c``), so it is absent before ``s_c``, present from it on, and grows. An explicit per-node
  ``arrival`` array replaces this schedule.
* **Novel starts.** By default the novel classes start spread over the second half of the
  periods (``P // 2`` onwards, in class order); ``novel_start`` may be one period for all of them
  or a dict ``{class: period}`` (class id or class name; classes it leaves out keep the default).
* **Edges.** A snapshot holds the static graph's edges among the nodes that have arrived (each
  undirected pair once).
* **Labels.** ``floor(label_fraction * n_c)`` random nodes of each known class ``c`` are labelled,
  decided once per node, so a node's label status never changes between snapshots; novel-class
  nodes are never labelled.
* **Truth.** Each snapshot has its own ``truth.parquet`` for the nodes it holds.

Node ids and features come from the static graph, so they are the same in every snapshot. The
same ``seed`` gives byte-identical files. Snapshot ``k`` is dated ``start_date + k *
interval_days``; ``start_date`` defaults to the date that makes the last snapshot today's.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from . import snapshots as snap
from .importers import static_snapshot_tables
from .synthetic import StaticGraph

_EPS = 1e-9


@dataclass
class SimulationPlan:
    """When every node arrives and whether it is labelled (the whole simulation, before writing).

    Attributes:
        arrival: int64 ``[N]`` period at which each node arrives (``0..periods-1``).
        labelled: bool ``[N]``, fixed for the whole simulation.
        known_classes: sorted known class ids.
        novel_start: ``{novel class id: first period}``.
        dates: one snapshot date per period.
    """

    arrival: np.ndarray
    labelled: np.ndarray
    known_classes: list[int]
    novel_start: dict[int, int]
    dates: list[dt.date]


def as_static(static) -> StaticGraph:
    """A :class:`StaticGraph` as is, or one converted from an :class:`oral_core.graph.Graph`."""
    if isinstance(static, StaticGraph):
        return static
    if hasattr(static, "edge_index") and hasattr(static, "x") and hasattr(static, "y"):
        return StaticGraph.from_graph(static)
    raise TypeError(f"static must be a StaticGraph or an oral_core Graph, got {type(static).__name__}")


def _class_id(key, names: list[str], num_classes: int) -> int:
    """A class given by id, by name, or by an id written as text."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        cid = int(key)
    elif isinstance(key, str) and key in names:
        cid = names.index(key)
    elif isinstance(key, str) and key.strip().lstrip("-").isdigit():
        cid = int(key)
    else:
        raise ValueError(f"unknown class {key!r}: use a class id 0..{num_classes - 1} or one of "
                         f"{names[:10]}{' ...' if len(names) > 10 else ''}")
    if not 0 <= cid < num_classes:
        raise ValueError(f"class id {cid} is out of range 0..{num_classes - 1}")
    return cid


def _spread(nodes: np.ndarray, first: int, last: int) -> np.ndarray:
    """Periods for ``nodes`` (already shuffled) spread evenly over ``first..last``; the first
    period gets at least one node when there is one."""
    span = last - first + 1
    ranks = np.arange(nodes.size)
    return first + (ranks * span) // max(nodes.size, 1)


def default_novel_start(novel: Sequence[int], periods: int) -> dict[int, int]:
    """Novel classes spread over the second half of the periods, in class order."""
    half = periods // 2
    span = periods - half
    return {int(c): half + (j * span) // len(novel) for j, c in enumerate(sorted(novel))}


def plan_simulation(static, periods: int, start_date: str | dt.date | None = None,
                    interval_days: int = 1, known_classes: Sequence | None = None,
                    novel_start: int | Mapping | None = None, label_fraction: float = 0.5,
                    initial_fraction: float = 0.5, seed: int = 0,
                    arrival: Sequence[int] | np.ndarray | None = None) -> SimulationPlan:
    """Validate the arguments of :func:`simulate` and decide arrivals and labels."""
    g = as_static(static)
    if not isinstance(periods, (int, np.integer)) or isinstance(periods, bool) or periods < 1:
        raise ValueError(f"periods must be an integer >= 1, got {periods!r}")
    if not isinstance(interval_days, (int, np.integer)) or interval_days < 1:
        raise ValueError(f"interval_days must be an integer >= 1, got {interval_days!r}")
    if not 0.0 <= label_fraction <= 1.0:
        raise ValueError(f"label_fraction must be in [0, 1], got {label_fraction!r}")
    if not 0.0 < initial_fraction <= 1.0:
        raise ValueError(f"initial_fraction must be in (0, 1], got {initial_fraction!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n = g.num_nodes
    if n == 0:
        raise ValueError("the static graph has no nodes")
    y = np.asarray(g.y, dtype=np.int64)
    present = np.unique(y)
    if present.size < 2:
        raise ValueError(f"the static graph needs at least 2 classes (known and novel), "
                         f"found {present.size}")
    if y.min() < 0 or y.max() >= len(g.class_names):
        raise ValueError(f"class ids must be in 0..{len(g.class_names) - 1} (one per class name)")

    if known_classes is None:
        k = math.floor(0.8 * present.size + _EPS)
        known = [int(c) for c in present[:max(k, 1)]]
    else:
        known = sorted({_class_id(c, g.class_names, len(g.class_names)) for c in known_classes})
        if len(known) != len(list(known_classes)):
            raise ValueError(f"known_classes has duplicates: {list(known_classes)}")
        if not known:
            raise ValueError("known_classes is empty: at least one class must be known")
        missing = [c for c in known if c not in set(present.tolist())]
        if missing:
            raise ValueError(f"known classes {missing} have no nodes in the static graph")
    novel = [int(c) for c in present if int(c) not in known]
    if not novel:
        raise ValueError("every class is known: at least one class must be novel")

    start = default_novel_start(novel, periods)
    if arrival is not None and novel_start is not None:
        raise ValueError("pass either arrival (a period per node) or novel_start, not both")
    if isinstance(novel_start, (int, np.integer)) and not isinstance(novel_start, bool):
        novel_start = {c: int(novel_start) for c in novel}
    if novel_start is not None:
        if not isinstance(novel_start, Mapping):
            raise ValueError(f"novel_start must be a period, a dict class -> period or None, "
                             f"got {novel_start!r}")
        for key, period in novel_start.items():
            cid = _class_id(key, g.class_names, len(g.class_names))
            if cid in known:
                raise ValueError(f"novel_start names class {key!r}, which is known (known "
                                 f"classes: {known})")
            if cid not in start:
                raise ValueError(f"novel_start names class {key!r}, which has no nodes")
            if not isinstance(period, (int, np.integer)) or not 0 <= period < periods:
                raise ValueError(f"novel_start for class {key!r} must be a period in "
                                 f"0..{periods - 1}, got {period!r}")
            start[cid] = int(period)

    rng = np.random.default_rng(seed)
    labelled = np.zeros(n, dtype=bool)
    for c in known:
        members = rng.permutation(np.flatnonzero(y == c))
        labelled[members[:math.floor(label_fraction * members.size + _EPS)]] = True

    if arrival is not None:
        when = np.asarray(arrival)
        if when.shape != (n,) or not np.issubdtype(when.dtype, np.integer):
            raise ValueError(f"arrival must be {n} integer periods, got shape {when.shape} "
                             f"dtype {when.dtype}")
        when = when.astype(np.int64)
        if when.min() < 0 or when.max() >= periods:
            raise ValueError(f"arrival periods must be in 0..{periods - 1}")
        late = [c for c in known if not (when[y == c] == 0).any()]
        if late:
            raise ValueError(f"known classes {late} have no node arriving at period 0")
        start = {c: int(when[y == c].min()) for c in novel}
    else:
        when = np.zeros(n, dtype=np.int64)
        for c in known:
            members = rng.permutation(np.flatnonzero(y == c))
            if periods > 1:
                first = max(1, math.floor(initial_fraction * members.size + _EPS))
                when[members[first:]] = _spread(members[first:], 1, periods - 1)
        for c in novel:
            members = rng.permutation(np.flatnonzero(y == c))
            when[members] = _spread(members, start[c], periods - 1)

    if start_date is None:
        first_day = dt.date.today() - dt.timedelta(days=(periods - 1) * int(interval_days))
    else:
        first_day = snap.parse_date(start_date)
    dates = [first_day + dt.timedelta(days=k * int(interval_days)) for k in range(periods)]
    return SimulationPlan(when, labelled, known, dict(sorted(start.items())), dates)


def simulate(static, periods: int, out_root: str | Path, graph: str,
             start_date: str | dt.date | None = None, interval_days: int = 1,
             known_classes: Sequence | None = None, novel_start: int | Mapping | None = None,
             label_fraction: float = 0.5, initial_fraction: float = 0.5, seed: int = 0,
             arrival: Sequence[int] | np.ndarray | None = None,
             overwrite: bool = False) -> list[Path]:
    """Write ``periods`` snapshots of ``static`` evolving (see the module docstring).

    ``static``: a :class:`~data_contracts.synthetic.StaticGraph` (e.g. from
    :func:`~data_contracts.synthetic.make_static_graph`) or an :class:`oral_core.graph.Graph`
    (e.g. from :func:`oral_core.datasets.load_dataset`). ``known_classes`` defaults to the
    ``floor(0.8 * C)`` lowest class ids. Returns the snapshot folders, oldest first. Raises
    ``ValueError`` for bad arguments and :class:`~data_contracts.snapshots.SnapshotError` for an
    invalid graph name or, unless ``overwrite``, a snapshot that already exists (checked before
    anything is written).
    """
    g = as_static(static)
    snap.check_graph_name(graph)
    plan = plan_simulation(g, periods, start_date, interval_days, known_classes, novel_start,
                           label_fraction, initial_fraction, seed, arrival)
    targets = [snap.snapshot_dir(out_root, graph, d) for d in plan.dates]
    if not overwrite:
        existing = [str(t) for t in targets if t.exists()]
        if existing:
            raise snap.already_exists(f"{len(existing)} of the snapshots ({', '.join(existing[:3])}"
                                      f"{' ...' if len(existing) > 3 else ''})")
    out = []
    for k, day in enumerate(plan.dates):
        rows = np.flatnonzero(plan.arrival <= k)
        nodes, edges, truth = static_snapshot_tables(g, plan.labelled, rows)
        out.append(snap.write_snapshot(out_root, graph, day, nodes, edges, truth,
                                       overwrite=overwrite))
    return out
