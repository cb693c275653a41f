"""Synthetic attributed graphs with planted classes, from a thousand to millions of nodes.

The model is a degree-corrected stochastic block model (DC-SBM):

* **Classes.** ``num_classes`` classes with sizes proportional to ``class_sizes`` (balanced by
  default); a seeded permutation decides which node belongs to which class.
* **Degrees.** Every node has a degree weight ``theta`` drawn from a Pareto law with tail
  exponent ``power_law_exponent`` (``P(theta > t) = t^-(exponent - 1)``, so the degree
  distribution has a power-law tail ``P(d) ~ d^-exponent``); ``None`` gives every node the same
  weight (a plain SBM). The weights are scaled so that the expected degree of node ``i`` is
  ``lambda_i = avg_degree * theta_i / mean(theta)`` (capped at ``num_nodes - 1``).
* **Edges.** Node ``i`` draws ``Poisson(lambda_i)`` edge ends. Each one's other endpoint is,
  with probability ``homophily``, a node of ``i``'s own class, else a node of another class;
  within the chosen classes, endpoints are picked proportionally to ``theta`` (one
  ``np.searchsorted`` into the cumulative weights of the nodes sorted by class). A draw
  ``i -> j`` is kept only when ``j > i``: the pair ``{i, j}`` is then drawn from its smaller end
  only, at the same (symmetric) rate as drawing it from either end with half the draws, so the
  expected degree stays ``lambda_i`` while every pair belongs to exactly one chunk. The edge
  homophily (fraction of edges inside a class) is about ``homophily``.
* **Features.** Each class has a centroid ``separation * N(0, I / F)`` in ``F = num_features``
  dimensions (two centroids lie about ``separation * sqrt(2)`` apart, whatever ``F``); a node's
  features are its centroid plus ``noise * N(0, I)`` (float32). Raise ``separation`` (or lower
  ``noise``) for easier classes: with 10 classes and the default 2.5, the true centroids
  classify about 80% of the nodes.

Everything is generated chunk by chunk of ``chunk_size`` nodes (vectorised numpy, no Python loop
over nodes or edges). Memory is ``O(N)`` only in small per-node arrays (class id, degree weight,
one cumulative weight and one position per node: about 30 bytes a node) plus one chunk; never
``O(N * F)`` or ``O(E)`` at once. The same ``seed`` and ``chunk_size`` always give the same graph
(classes, degree weights and centroids do not depend on ``chunk_size``; the per-chunk random
streams do).

Edges are undirected and written **once per pair**, as ``src < dst`` (sorted by ``src``): no
self loops and no duplicates (a pair is only ever drawn from its smaller end, so removing the
duplicates within a chunk removes them all).

Class names are ``class_00``, ``class_01``, ... (zero-padded so that sorting the names sorts the
ids). In a generated snapshot the first ``num_known`` classes are known (default
``floor(0.8 * num_classes)``); each known-class node carries its label with probability
``label_fraction``; novel-class nodes never do. ``truth.parquet`` gives every node's class.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import snapshots as snap

DEFAULT_CHUNK = 50_000
GENERATOR_KEY = b"oral.generator"
_EPS = 1e-9


def class_name(index: int, num_classes: int) -> str:
    """``class_07``: zero-padded to at least two digits, so names sort like their ids."""
    width = max(2, len(str(max(num_classes - 1, 0))))
    return f"class_{index:0{width}d}"


def class_names_for(num_classes: int) -> list[str]:
    return [class_name(i, num_classes) for i in range(num_classes)]


# ------------------------------------------------------------------------- in-memory graph
@dataclass
class StaticGraph:
    """A static attributed graph as numpy arrays (the simulator's input).

    Attributes:
        node_ids: ``[N]`` ids (int64 array, or an object array of strings), unique.
        x: float32 ``[N, F]`` features.
        edges: int64 ``[2, E]`` node *positions* (not ids), each undirected pair once with
            ``edges[0] < edges[1]``, no self loops, no duplicates.
        y: int64 ``[N]`` class ids ``0..C-1`` into ``class_names``.
        class_names: one name per class id.
        name: a short name (a default graph name for snapshots).
    """

    node_ids: np.ndarray
    x: np.ndarray
    edges: np.ndarray
    y: np.ndarray
    class_names: list[str]
    name: str = "graph"
    feature_names: list[str] | None = field(default=None)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        """Undirected edges (each pair counted once)."""
        return int(self.edges.shape[1])

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @classmethod
    def from_graph(cls, graph) -> "StaticGraph":
        """From an :class:`oral_core.graph.Graph` (its ``node_ids`` when the loader kept them,
        else ``0..N-1``; numeric string ids become int64; class names ``class_<i>`` when the
        graph has none)."""
        x = graph.x.detach().cpu().numpy().astype(np.float32, copy=False)
        y = graph.y.detach().cpu().numpy().astype(np.int64, copy=False)
        edge_index = graph.edge_index.detach().cpu().numpy()
        n = x.shape[0]
        num_classes = int(y.max()) + 1 if y.size else 0
        names = list(graph.class_names) if getattr(graph, "class_names", None) else None
        if names is None or len(names) < num_classes:
            names = class_names_for(num_classes)
        ids = getattr(graph, "node_ids", None)
        return cls(node_ids=node_id_array(ids, n), x=x, edges=unique_pairs(edge_index, n), y=y,
                   class_names=[str(c) for c in names], name=str(getattr(graph, "name", "graph")))


_INT_ID = re.compile(r"^-?(0|[1-9][0-9]{0,17})$")


def node_id_array(ids, num_nodes: int) -> np.ndarray:
    """Original ids as an int64 array when they are all integers (or integer strings without
    leading zeros), else an object array of strings; ``None`` gives ``0..N-1``."""
    if ids is None:
        return np.arange(num_nodes, dtype=np.int64)
    ids = list(ids)
    if len(ids) != num_nodes:
        raise ValueError(f"{len(ids)} node ids for {num_nodes} nodes")
    if all(isinstance(i, (int, np.integer)) for i in ids):
        return np.asarray(ids, dtype=np.int64)
    text = [str(i) for i in ids]
    if all(_INT_ID.match(t) for t in text):
        return np.asarray([int(t) for t in text], dtype=np.int64)
    return np.asarray(text, dtype=object)


def unique_pairs(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Each undirected pair once as ``[2, E]`` with ``src < dst``, self loops dropped, sorted."""
    edge_index = np.asarray(edge_index, dtype=np.int64).reshape(2, -1)
    a = np.minimum(edge_index[0], edge_index[1])
    b = np.maximum(edge_index[0], edge_index[1])
    keep = a != b
    key = np.unique(a[keep] * np.int64(max(num_nodes, 1)) + b[keep])
    return np.stack([key // max(num_nodes, 1), key % max(num_nodes, 1)]).astype(np.int64)


# ------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of the DC-SBM (see the module docstring)."""

    num_nodes: int
    num_classes: int = 10
    num_features: int = 64
    avg_degree: float = 10.0
    homophily: float = 0.8
    power_law_exponent: float | None = 2.5
    separation: float = 2.5
    noise: float = 1.0
    class_sizes: tuple[float, ...] | None = None
    seed: int = 0
    chunk_size: int = DEFAULT_CHUNK

    def validate(self) -> "SyntheticSpec":
        def bad(msg: str) -> None:
            raise ValueError(msg)
        if not isinstance(self.num_classes, (int, np.integer)) or self.num_classes < 1:
            bad(f"num_classes must be a positive integer, got {self.num_classes!r}")
        if not isinstance(self.num_nodes, (int, np.integer)) or self.num_nodes < self.num_classes:
            bad(f"num_nodes must be an integer of at least num_classes={self.num_classes}, "
                f"got {self.num_nodes!r}")
        if self.num_nodes >= 2**31:
            bad(f"num_nodes must be below 2^31, got {self.num_nodes}")
        if not isinstance(self.num_features, (int, np.integer)) or self.num_features < 1:
            bad(f"num_features must be a positive integer, got {self.num_features!r}")
        if not (math.isfinite(self.avg_degree) and self.avg_degree >= 0):
            bad(f"avg_degree must be a finite number >= 0, got {self.avg_degree!r}")
        if not 0.0 <= self.homophily <= 1.0:
            bad(f"homophily must be in [0, 1], got {self.homophily!r}")
        if self.power_law_exponent is not None and not self.power_law_exponent > 2.0:
            bad(f"power_law_exponent must be > 2 (finite mean degree) or None, got "
                f"{self.power_law_exponent!r}")
        if not (self.separation >= 0 and self.noise >= 0):
            bad(f"separation and noise must be >= 0, got {self.separation!r}, {self.noise!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            bad(f"seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.chunk_size, (int, np.integer)) or self.chunk_size < 1:
            bad(f"chunk_size must be a positive integer, got {self.chunk_size!r}")
        if self.class_sizes is not None:
            if len(self.class_sizes) != self.num_classes:
                bad(f"class_sizes has {len(self.class_sizes)} entries for "
                    f"{self.num_classes} classes")
            if not all(math.isfinite(s) and s > 0 for s in self.class_sizes):
                bad(f"class_sizes must be positive, got {list(self.class_sizes)}")
        return self

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def class_counts(num_nodes: int, num_classes: int,
                 class_sizes: Sequence[float] | None = None) -> np.ndarray:
    """Nodes per class: proportional to ``class_sizes`` (balanced when ``None``), summing to
    ``num_nodes``, every class at least one node (largest remainders get the rounding; counts
    that already sum to ``num_nodes`` are kept as they are)."""
    weights = np.ones(num_classes) if class_sizes is None else np.asarray(class_sizes, float)
    share = weights / weights.sum() * num_nodes
    counts = np.floor(share + _EPS).astype(np.int64)
    rest = num_nodes - int(counts.sum())
    if rest > 0:
        counts[np.argsort(-(share - counts), kind="stable")[:rest]] += 1
    for c in np.flatnonzero(counts == 0):       # a tiny class still gets one node
        counts[c] = 1
        counts[np.argmax(counts)] -= 1
    return counts


class _Plan:
    """The per-node arrays every chunk needs (``O(N)``, about 30 bytes a node)."""

    def __init__(self, spec: SyntheticSpec):
        n, k = spec.num_nodes, spec.num_classes
        rng = np.random.default_rng([spec.seed, 0])
        counts = class_counts(n, k, spec.class_sizes)
        dtype = np.int16 if k < 2**15 else np.int32
        y = np.repeat(np.arange(k, dtype=dtype), counts)
        rng.shuffle(y)
        self.y = y
        if spec.power_law_exponent is None:
            theta = np.ones(n)
        else:
            theta = (1.0 - rng.random(n)) ** (-1.0 / (spec.power_law_exponent - 1.0))
        self.lam = theta * (spec.avg_degree / theta.mean())   # expected degree
        np.minimum(self.lam, n - 1.0, out=self.lam)
        self.order = np.argsort(y, kind="stable").astype(np.int32 if n < 2**31 else np.int64)
        self.cum = np.cumsum(theta[self.order])
        del theta
        class_weight = np.zeros(k)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        ends = self.cum[bounds[1:] - 1]
        starts = np.concatenate([[0.0], ends[:-1]])
        class_weight[:] = ends - starts
        self.class_start, self.class_weight, self.total = starts, class_weight, float(self.cum[-1])
        scale = spec.separation / math.sqrt(spec.num_features)
        self.centroids = (scale * np.random.default_rng([spec.seed, 1]).standard_normal(
            (k, spec.num_features))).astype(np.float32)


@dataclass
class SyntheticChunk:
    """Nodes ``start..stop-1`` (features, classes) and the edges they draw (positions)."""

    start: int
    stop: int
    x: np.ndarray      # float32 [n, F]
    y: np.ndarray      # int64 [n]
    src: np.ndarray    # int64 [e] node positions, src < dst
    dst: np.ndarray


def _chunk_edges(spec: SyntheticSpec, plan: _Plan, start: int, stop: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The edges drawn by nodes ``start..stop-1`` to larger nodes: vectorised, duplicates
    removed, sorted, ``src < dst``."""
    n = spec.num_nodes
    draws = rng.poisson(plan.lam[start:stop])
    src = np.repeat(np.arange(start, stop, dtype=np.int64), draws)
    m = src.size
    if m == 0:
        return src, src.copy()
    own = plan.y[src].astype(np.int64)
    u = rng.random(m)
    same = rng.random(m) < spec.homophily
    w_own, s_own = plan.class_weight[own], plan.class_start[own]
    same |= w_own >= plan.total * (1 - 1e-12)               # a single class: nowhere else to go
    inside = s_own + u * w_own
    outside = u * (plan.total - w_own)
    outside += w_own * (outside >= s_own)                   # skip the own class's block
    point = np.where(same, inside, outside)
    del inside, outside, u, same, w_own, s_own, own
    by_point = np.argsort(point)          # sorted queries: a cache-friendly searchsorted
    pos = np.searchsorted(plan.cum, point[by_point], side="right")
    np.minimum(pos, n - 1, out=pos)
    dst = plan.order[pos].astype(np.int64)
    src = src[by_point]
    keep = dst > src                                        # the pair's smaller end draws it
    key = src[keep] * np.int64(n) + dst[keep]
    key.sort()
    if key.size:                                            # unique (sorting beats hashing)
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
    return key // n, key % n


def iter_chunks(spec: SyntheticSpec) -> Iterator[SyntheticChunk]:
    """The graph of ``spec`` chunk by chunk of ``spec.chunk_size`` source nodes."""
    spec.validate()
    plan = _Plan(spec)
    for k, start in enumerate(range(0, spec.num_nodes, spec.chunk_size)):
        stop = min(start + spec.chunk_size, spec.num_nodes)
        y = plan.y[start:stop].astype(np.int64)
        node_rng = np.random.default_rng([spec.seed, 2, k])
        x = node_rng.standard_normal((stop - start, spec.num_features), dtype=np.float32)
        if spec.noise != 1.0:
            x *= np.float32(spec.noise)
        x += plan.centroids[y]
        src, dst = _chunk_edges(spec, plan, start, stop, np.random.default_rng([spec.seed, 3, k]))
        yield SyntheticChunk(start, stop, x, y, src, dst)


def make_static_graph(num_nodes: int = 1000, num_classes: int = 5, num_features: int = 32,
                      avg_degree: float = 10.0, homophily: float = 0.8,
                      power_law_exponent: float | None = 2.5, separation: float = 2.5,
                      noise: float = 1.0, class_sizes: Sequence[float] | None = None,
                      seed: int = 0, chunk_size: int = DEFAULT_CHUNK,
                      name: str = "synthetic") -> StaticGraph:
    """A small DC-SBM graph in memory (node ids ``0..N-1``).

    Same model and random streams as :func:`generate_snapshot`: with the same parameters (and
    ``chunk_size``) its nodes, features, classes and edges are the snapshot's."""
    spec = SyntheticSpec(num_nodes, num_classes, num_features, avg_degree, homophily,
                         power_law_exponent, separation, noise,
                         None if class_sizes is None else tuple(class_sizes), seed, chunk_size)
    xs, ys, srcs, dsts = [], [], [], []
    for chunk in iter_chunks(spec):
        xs.append(chunk.x), ys.append(chunk.y), srcs.append(chunk.src), dsts.append(chunk.dst)
    edges = unique_pairs(np.stack([np.concatenate(srcs), np.concatenate(dsts)]), num_nodes)
    return StaticGraph(node_ids=np.arange(num_nodes, dtype=np.int64), x=np.concatenate(xs),
                       edges=edges, y=np.concatenate(ys), class_names=class_names_for(num_classes),
                       name=name)


# ------------------------------------------------------------------------- snapshots
def default_num_known(num_classes: int) -> int:
    """``floor(0.8 * C)`` known classes (the paper's protocol)."""
    return math.floor(0.8 * num_classes + _EPS)


def generate_snapshot(root: str | Path, graph: str = "synthetic",
                      date: str | dt.date | None = None, num_nodes: int = 1_000_000,
                      num_classes: int = 10, num_features: int = 64, avg_degree: float = 10.0,
                      homophily: float = 0.8, power_law_exponent: float | None = 2.5,
                      separation: float = 2.5, noise: float = 1.0,
                      class_sizes: Sequence[float] | None = None, label_fraction: float = 0.5,
                      num_known: int | None = None, seed: int = 0,
                      chunk_size: int = DEFAULT_CHUNK, overwrite: bool = False) -> Path:
    """Write one DC-SBM snapshot ``<root>/<graph>/snapshot=<date>`` chunk by chunk.

    ``nodes.parquet`` (``node_id`` int64 ``0..N-1``, ``features``, ``label``), ``edges.parquet``
    (``src < dst``, each pair once) and ``truth.parquet`` are streamed
    with one ``ParquetWriter`` each into a hidden temporary folder, which is then renamed into
    place (:func:`data_contracts.snapshots.publish_folder`). The parameters are recorded as JSON
    in the schema metadata of ``nodes.parquet`` under ``oral.generator``. ``date`` defaults to
    today. Returns the snapshot folder.
    """
    spec = SyntheticSpec(num_nodes, num_classes, num_features, avg_degree, homophily,
                         power_law_exponent, separation, noise,
                         None if class_sizes is None else tuple(class_sizes), seed,
                         chunk_size).validate()
    if not 0.0 <= label_fraction <= 1.0:
        raise ValueError(f"label_fraction must be in [0, 1], got {label_fraction!r}")
    known = default_num_known(num_classes) if num_known is None else num_known
    if not (isinstance(known, (int, np.integer)) and 0 <= known <= num_classes):
        raise ValueError(f"num_known must be an integer in [0, {num_classes}], got {num_known!r}")
    final = snap.snapshot_dir(root, graph, date if date is not None else dt.date.today())
    if final.exists() and not overwrite:
        raise snap.already_exists(f"snapshot {final}")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    names = pa.array(class_names_for(num_classes), type=pa.string())
    meta = {GENERATOR_KEY: json.dumps({"model": "dc-sbm", **spec.to_dict(),
                                       "label_fraction": label_fraction, "num_known": known})}
    writers: dict[str, pq.ParquetWriter] = {}

    def write(name: str, table: pa.Table, metadata: dict | None = None, **options) -> None:
        if name not in writers:
            schema = table.schema.with_metadata(metadata) if metadata else table.schema
            writers[name] = pq.ParquetWriter(tmp / name, schema, **options)
        writers[name].write_table(table)

    try:
        for k, chunk in enumerate(iter_chunks(spec)):
            ids = np.arange(chunk.start, chunk.stop, dtype=np.int64)
            label_rng = np.random.default_rng([seed, 4, k])
            labelled = (chunk.y < known) & (label_rng.random(ids.size) < label_fraction)
            label = pc.take(names, pa.array(chunk.y, mask=~labelled))
            true_label = pc.take(names, pa.array(chunk.y))
            write(snap.NODES, snap.nodes_table(ids, chunk.x, label), meta,
                  use_dictionary=["label"])       # random floats do not dictionary-encode
            write(snap.EDGES, snap.edges_table(chunk.src, chunk.dst))
            write(snap.TRUTH, snap.truth_table(ids, true_label))
        for w in writers.values():
            w.close()
        writers.clear()
        snap.publish_folder(tmp, final)
    except BaseException:
        for w in writers.values():
            try:
                w.close()
            except Exception:  # noqa: BLE001 - cleaning up after the real error
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
