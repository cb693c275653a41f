"""Loaders for the benchmark graphs of the ORAL paper (Cora, AmazonPhoto, BlogCatalog).

Every loader returns a :class:`~oral_core.graph.Graph`: dense float32 features ``[N, F]``, an
undirected ``edge_index`` in canonical form (both directions, no self loops, no duplicates; see
:func:`~oral_core.graph.canonical_edges`), 0-based long class ids and, when the file names them,
the class names.

Formats:

* LINQS text (``cora.content`` + ``cora.cites``)            -> :func:`load_linqs`
* Planetoid pickles (``ind.<name>.{tx,ty,allx,ally,graph,test.index}``) -> :func:`load_planetoid`
* gnn-benchmark ``.npz`` (CSR ``adj_*``, ``attr_*``, ``labels``) -> :func:`load_npz`
* MATLAB v5 ``.mat`` (``Network``, ``Attributes``, ``Label``)  -> :func:`load_mat`

:func:`load_dataset` resolves a dataset name (or a path) against a data directory, falls back to a
cache directory, and downloads the original public files into that cache when they are missing.
It never writes into the data directory.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch

from ..graph import Graph, canonical_edges

PathLike = str | os.PathLike


class DatasetNotFound(FileNotFoundError):
    """The files of a dataset are neither on disk nor downloadable."""


# --------------------------------------------------------------------------------------------
# Building a Graph
# --------------------------------------------------------------------------------------------

def _make_graph(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, y: np.ndarray, name: str,
                class_names: list[str] | None = None) -> Graph:
    """Assemble a :class:`Graph` from numpy parts (edges are symmetrised and deduplicated)."""
    n = int(x.shape[0])
    edges = torch.from_numpy(np.stack([np.asarray(rows, dtype=np.int64),
                                       np.asarray(cols, dtype=np.int64)]))
    return Graph(x=torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)),
                 edge_index=canonical_edges(edges, n),
                 y=torch.from_numpy(np.asarray(y, dtype=np.int64)),
                 name=name, class_names=class_names)


def _dense(matrix: Any) -> np.ndarray:
    """A dense float32 array from a scipy sparse matrix or array-like."""
    if sp.issparse(matrix):
        return np.asarray(matrix.toarray(), dtype=np.float32)
    return np.asarray(matrix, dtype=np.float32)


def _check_edges(rows: np.ndarray, cols: np.ndarray, n: int, source: Path) -> None:
    """Raise ``ValueError`` naming ``source`` if an edge endpoint is outside ``0..n-1``."""
    bad = (rows < 0) | (rows >= n) | (cols < 0) | (cols >= n)
    if bad.any():
        examples = list(zip(rows[bad][:3].tolist(), cols[bad][:3].tolist()))
        raise ValueError(f"{source}: {int(bad.sum())} edges point outside the {n} nodes, "
                         f"e.g. {examples}")


def _check_labels(y: np.ndarray, n: int, source: Path) -> None:
    """Raise ``ValueError`` naming ``source`` unless ``y`` holds ``n`` non-negative ids."""
    if y.shape != (n,):
        raise ValueError(f"{source}: expected {n} labels, found shape {tuple(y.shape)}")
    if n and y.min() < 0:
        raise ValueError(f"{source}: labels must be non-negative, found {int(y.min())}")


# --------------------------------------------------------------------------------------------
# LINQS text
# --------------------------------------------------------------------------------------------

def _read_table(path: Path) -> np.ndarray:
    """Whitespace-separated text file as a 2-D array of strings (``ValueError`` names the file)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "empty input file"
            table = np.loadtxt(path, dtype=str, ndmin=2, encoding="utf-8", comments=None)
    except ValueError as err:
        raise ValueError(f"{path}: malformed table: {err}") from err
    return table


def _index_of(ids: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``queries`` in ``ids`` (vectorised) and a mask of the queries found."""
    sorter = np.argsort(ids, kind="stable")
    pos = np.searchsorted(ids, queries, sorter=sorter)
    pos = np.minimum(pos, max(len(ids) - 1, 0))
    if len(ids) == 0:
        return pos, np.zeros(queries.shape, dtype=bool)
    index = sorter[pos]
    return index, ids[index] == queries


def _read_content(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paper ids, float32 features and class names of a LINQS ``.content`` file."""
    rows = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows or len(rows[0]) < 3:
        raise ValueError(f"{path}: expected lines '<id> <features>... <class>'")
    bad = [i for i, row in enumerate(rows) if len(row) != len(rows[0])]
    if bad:
        raise ValueError(f"{path}: line {bad[0] + 1} has {len(rows[bad[0]])} fields, the first "
                         f"line has {len(rows[0])} ({len(bad)} ragged lines)")
    try:
        x = np.array([row[1:-1] for row in rows], dtype=np.float32)
    except ValueError as err:
        raise ValueError(f"{path}: non-numeric feature value: {err}") from err
    return np.array([row[0] for row in rows]), x, np.array([row[-1] for row in rows])


def load_linqs(content_path: PathLike, cites_path: PathLike, name: str | None = None,
               drop_unknown: bool = False) -> Graph:
    """Load a LINQS citation graph (``<paper_id> <0/1 words>... <class>`` and ``<cited> <citing>``).

    Nodes are numbered in ``content`` file order; class ids follow the sorted class names (Cora:
    Case_Based=0, ..., Theory=6). Edges naming a paper id absent from ``content`` raise
    ``ValueError`` (or are dropped with ``drop_unknown=True``, which Citeseer needs).
    """
    content_path, cites_path = Path(content_path), Path(cites_path)
    ids, x, labels = _read_content(content_path)
    unique_ids, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{content_path}: duplicate paper ids, e.g. "
                         f"{unique_ids[counts > 1][:3].tolist()}")
    class_names, y = np.unique(labels, return_inverse=True)

    cites = _read_table(cites_path)
    if cites.size == 0:
        cites = np.empty((0, 2), dtype=str)
    if cites.shape[1] != 2:
        raise ValueError(f"{cites_path}: expected two paper ids per line, found {cites.shape[1]}")
    index, found = _index_of(ids, cites)
    known = found.all(axis=1)
    if not known.all() and not drop_unknown:
        unknown = np.unique(cites[~found])
        raise ValueError(f"{cites_path}: {int((~known).sum())} citations refer to paper ids not in "
                         f"{content_path.name}, e.g. {unknown[:5].tolist()}")
    index = index[known]
    graph = _make_graph(x, index[:, 1], index[:, 0], y.reshape(-1),
                        name or content_path.stem, [str(c) for c in class_names])
    graph.node_ids = [str(i) for i in ids]
    return graph


# --------------------------------------------------------------------------------------------
# Planetoid pickles
# --------------------------------------------------------------------------------------------

def _allowed_globals() -> dict[tuple[str, str], Any]:
    """The only callables a Planetoid pickle may reference: numpy arrays, scipy CSR/CSC matrices,
    ``defaultdict`` and plain builtin containers (both Python 2 and 3 module spellings)."""
    import _codecs
    import collections

    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy < 2
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    allowed: dict[tuple[str, str], Any] = {("numpy", "dtype"): np.dtype,
                                           ("numpy", "ndarray"): np.ndarray,
                                           ("_codecs", "encode"): _codecs.encode,
                                           ("collections", "defaultdict"): collections.defaultdict,
                                           ("collections", "OrderedDict"): collections.OrderedDict}
    for core in ("numpy.core", "numpy._core"):
        allowed[(f"{core}.multiarray", "_reconstruct")] = multiarray._reconstruct
        allowed[(f"{core}.multiarray", "scalar")] = multiarray.scalar
        allowed[(f"{core}.numeric", "_frombuffer")] = numeric._frombuffer
    for module in ("scipy.sparse", "scipy.sparse.csr", "scipy.sparse._csr",
                   "scipy.sparse.csc", "scipy.sparse._csc"):
        allowed[(module, "csr_matrix")] = sp.csr_matrix
        allowed[(module, "csc_matrix")] = sp.csc_matrix
    for module in ("builtins", "__builtin__"):
        for builtin in (list, dict, set, frozenset, tuple, int, float, complex, bool, str, bytes):
            allowed[(module, builtin.__name__)] = builtin
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that only builds numpy arrays, scipy CSR/CSC matrices and builtin containers.

    Planetoid files are Python 2 pickles; loading them with plain :func:`pickle.load` would run
    whatever a tampered file asks for. Any other global raises ``pickle.UnpicklingError``.
    """

    def __init__(self, file: Any, source: str = "<pickle>") -> None:
        super().__init__(file, encoding="latin1")
        self._source = source
        self._allowed = _allowed_globals()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"{self._source}: refusing to load '{module}.{name}': only numpy arrays, scipy "
                f"sparse matrices and builtin containers are allowed in a Planetoid file") from None


def restricted_load(path: PathLike) -> Any:
    """Unpickle ``path`` with :class:`RestrictedUnpickler`."""
    with open(path, "rb") as handle:
        return RestrictedUnpickler(handle, source=str(path)).load()


def _planetoid_path(directory: Path, name: str, part: str) -> Path:
    path = directory / f"ind.{name}.{part}"
    if not path.is_file():
        raise DatasetNotFound(f"Planetoid file {path} not found")
    return path


def _graph_dict_edges(graph: Any, source: Path) -> tuple[np.ndarray, np.ndarray]:
    """Edge arrays from a Planetoid adjacency dict ``{node: [neighbours]}``."""
    if not isinstance(graph, dict):
        raise ValueError(f"{source}: expected a dict of adjacency lists, "
                         f"found {type(graph).__name__}")
    lengths = np.fromiter((len(v) for v in graph.values()), dtype=np.int64, count=len(graph))
    rows = np.repeat(np.fromiter(graph.keys(), dtype=np.int64, count=len(graph)), lengths)
    cols = np.fromiter((int(c) for v in graph.values() for c in v), dtype=np.int64,
                       count=int(lengths.sum()))
    return rows, cols


def load_planetoid(directory: PathLike, name: str) -> Graph:
    """Load ``ind.<name>.*`` Planetoid files with a restricted unpickler.

    ``allx``/``ally`` hold the first nodes (they include ``x``/``y``, which are not needed);
    ``tx``/``ty`` hold the test nodes, row ``i`` belonging to node ``test.index[i]`` (the
    Planetoid reordering). Missing test ids inside the range (Citeseer) get zero features and,
    as in PyG, class 0. Classes are the argmax of the one-hot labels; Planetoid gives no class
    names, and its class order differs from the LINQS one.
    """
    directory = Path(directory)
    parts = {p: restricted_load(_planetoid_path(directory, name, p))
             for p in ("allx", "ally", "tx", "ty", "graph")}
    index_path = _planetoid_path(directory, name, "test.index")
    test_index = np.loadtxt(index_path, dtype=np.int64, ndmin=1)
    allx, tx = _dense(parts["allx"]), _dense(parts["tx"])
    ally, ty = np.asarray(parts["ally"]), np.asarray(parts["ty"])
    if len(tx) != len(test_index) or len(ty) != len(test_index):
        raise ValueError(f"{index_path}: {len(test_index)} test ids but tx/ty have "
                         f"{len(tx)}/{len(ty)} rows")
    n = max(len(allx), int(test_index.max()) + 1 if len(test_index) else 0)
    x = np.zeros((n, allx.shape[1]), dtype=np.float32)
    onehot = np.zeros((n, ally.shape[1]), dtype=np.float32)
    x[: len(allx)], onehot[: len(ally)] = allx, ally
    x[test_index], onehot[test_index] = tx, ty
    rows, cols = _graph_dict_edges(parts["graph"], directory / f"ind.{name}.graph")
    _check_edges(rows, cols, n, directory / f"ind.{name}.graph")
    return _make_graph(x, rows, cols, onehot.argmax(axis=1), name)


# --------------------------------------------------------------------------------------------
# gnn-benchmark npz and MATLAB
# --------------------------------------------------------------------------------------------

def _npz_csr(data: Any, prefix: str) -> sp.csr_matrix:
    """The CSR matrix stored as ``<prefix>_data/_indices/_indptr/_shape`` in an npz."""
    return sp.csr_matrix((data[f"{prefix}_data"], data[f"{prefix}_indices"],
                          data[f"{prefix}_indptr"]), shape=tuple(data[f"{prefix}_shape"]))


def _npz_class_names(data: Any) -> list[str] | None:
    """``class_names`` from an npz when present and stored without pickling."""
    if "class_names" not in data.files:
        return None
    try:
        return [str(c) for c in data["class_names"]]
    except ValueError:  # an object array would need allow_pickle
        return None


def load_npz(path: PathLike, name: str | None = None) -> Graph:
    """Load a gnn-benchmark ``.npz`` graph (``np.load`` with ``allow_pickle=False``).

    Features come from CSR ``attr_*`` arrays or a dense ``attr_matrix``; ``labels`` are class ids
    (a one-hot matrix is reduced by argmax). The adjacency is symmetrised, self loops dropped.
    """
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable .npz archive: {err}") from err
    with data:
        missing = [k for k in ("adj_data", "adj_indices", "adj_indptr", "adj_shape", "labels")
                   if k not in data.files]
        if missing or ("attr_data" not in data.files and "attr_matrix" not in data.files):
            raise ValueError(f"{path}: missing arrays {missing or ['attr_data or attr_matrix']} "
                             f"(found {sorted(data.files)})")
        adj = _npz_csr(data, "adj").tocoo()
        x = _dense(_npz_csr(data, "attr") if "attr_data" in data.files else data["attr_matrix"])
        labels = np.asarray(data["labels"])
        class_names = _npz_class_names(data)
    y = labels.argmax(axis=1) if labels.ndim == 2 else labels
    _check_labels(y, x.shape[0], path)
    _check_edges(adj.row, adj.col, x.shape[0], path)
    return _make_graph(x, adj.row, adj.col, y, name or path.stem, class_names)


def load_mat(path: PathLike, name: str | None = None) -> Graph:
    """Load a MATLAB v5 graph with ``Network`` (N x N), ``Attributes`` (N x F) and ``Label``.

    Labels that start at 1 (BlogCatalog: 1..6) are shifted to start at 0; labels already starting
    at 0 are kept.
    """
    path = Path(path)
    try:
        data = scipy.io.loadmat(path)
    except (OSError, ValueError, NotImplementedError) as err:
        raise ValueError(f"{path}: not a readable MATLAB v5 file: {err}") from err
    missing = [k for k in ("Network", "Attributes", "Label") if k not in data]
    if missing:
        found = sorted(k for k in data if not k.startswith("__"))
        raise ValueError(f"{path}: missing variables {missing} (found {found})")
    adj = sp.coo_matrix(data["Network"])
    x = _dense(data["Attributes"])
    y = np.asarray(data["Label"]).reshape(-1).astype(np.int64)
    if y.size and y.min() >= 1:
        y = y - 1
    _check_labels(y, x.shape[0], path)
    _check_edges(adj.row, adj.col, x.shape[0], path)
    return _make_graph(x, adj.row, adj.col, y, name or path.stem)


# --------------------------------------------------------------------------------------------
# Feature preprocessing and checksums
# --------------------------------------------------------------------------------------------

def auto_feature_mode(x) -> str:
    """The mode ``"auto"`` stands for: ``"row"`` when no feature is negative, else ``"standard"``
    (``x``: a tensor or a numpy array)."""
    return "row" if bool((x >= 0).all()) else "standard"


def preprocess_features(x: torch.Tensor, mode: str = "row") -> torch.Tensor:
    """Normalise node features: ``"row"`` (rows sum to 1, zero rows stay zero), ``"log_row"``
    (``log1p`` first, for count features such as BlogCatalog's), ``"standard"`` (every feature
    centred and scaled to unit variance, for real-valued features that can be negative),
    ``"auto"`` (``"row"`` when no feature is negative, else ``"standard"``) or ``"none"``."""
    if mode == "auto":
        mode = auto_feature_mode(x)
    if mode == "none":
        return x
    if mode == "standard":
        std = x.std(dim=0, keepdim=True)
        return (x - x.mean(dim=0, keepdim=True)) / torch.where(std > 0, std, torch.ones_like(std))
    if mode not in ("row", "log_row"):
        raise ValueError(f"unknown feature preprocessing {mode!r}: use 'row', 'log_row', "
                         "'standard', 'auto' or 'none'")
    x = torch.log1p(x.clamp_min(0)) if mode == "log_row" else x
    total = x.sum(dim=1, keepdim=True)
    return x / torch.where(total == 0, torch.ones_like(total), total)


def sha256_of(path: PathLike) -> str:
    """Hex SHA-256 digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: PathLike, sums_file: PathLike) -> str:
    """Check ``path`` against its line in a ``SHA256SUMS`` file (paths relative to that file).

    Returns the digest; raises ``ValueError`` if the file is not listed or does not match.
    """
    path, sums_file = Path(path).resolve(), Path(sums_file)
    for line in sums_file.read_text(encoding="utf-8").splitlines():
        expected, _, listed = line.strip().partition(" ")
        listed = listed.strip().lstrip("*")
        if listed and (sums_file.parent / listed).resolve() == path:
            actual = sha256_of(path)
            if actual != expected.lower():
                raise ValueError(f"{path}: SHA-256 {actual} does not match {expected} "
                                 f"listed in {sums_file}")
            return actual
    raise ValueError(f"{path} is not listed in {sums_file}")


# --------------------------------------------------------------------------------------------
# Resolving names and paths
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RemoteFile:
    """One original file: where it lives under a data directory, its public URL and digest."""

    relpath: str
    url: str
    sha256: str


_RAW = "https://raw.githubusercontent.com"
DATASET_FILES: dict[str, tuple[RemoteFile, ...]] = {
    "cora": (
        RemoteFile("cora/linqs/cora.content", f"{_RAW}/tkipf/pygcn/HEAD/data/cora/cora.content",
                   "b8ebed0fd45e53995abafd1b70cf6a9fcc8f86abc5826d69b97fe6ca46e9c8ee"),
        RemoteFile("cora/linqs/cora.cites", f"{_RAW}/tkipf/pygcn/HEAD/data/cora/cora.cites",
                   "ec1a372391b7f0f60a6aff0084e8abd8f19f0faa7e1f2441a41c492042d5945e"),
    ),
    "amazonphoto": (
        RemoteFile("amazon_photo/amazon_electronics_photo.npz",
                   f"{_RAW}/shchur/gnn-benchmark/HEAD/data/npz/amazon_electronics_photo.npz",
                   "bdb1feb8e6ff42ee44024b04479145029c563fd42fc31bff80af20887ba0439a"),
    ),
    "blogcatalog": (
        RemoteFile("blogcatalog/BlogCatalog.mat",
                   f"{_RAW}/GRAND-Lab/CoLA/HEAD/raw_dataset/BlogCatalog/BlogCatalog.mat",
                   "886e1d8dec043588247ef7188fe6459f2ba657b6b9211d73f255d28b42f06b0c"),
    ),
}
_ALIASES = {"cora": "cora", "amazonphoto": "amazonphoto", "amazon_photo": "amazonphoto",
            "amazon-photo": "amazonphoto", "photo": "amazonphoto", "blogcatalog": "blogcatalog",
            "blog_catalog": "blogcatalog", "blog-catalog": "blogcatalog"}


def default_cache_dir() -> Path:
    """``ORAL_CACHE_DIR`` if set, else ``~/.cache/oral/datasets``."""
    env = os.environ.get("ORAL_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "oral" / "datasets"


def default_data_dir() -> Path:
    """``ORAL_DATA_DIR`` if set, else ``../shared/datasets`` next to the repository if present,
    else the cache directory."""
    env = os.environ.get("ORAL_DATA_DIR")
    if env:
        return Path(env).expanduser()
    shared = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return shared if shared.is_dir() else default_cache_dir()


def download_file(url: str, dest: Path, timeout: float = 20.0) -> None:
    """Download ``url`` to ``dest`` (via a ``.part`` file, so a failure leaves nothing behind)."""
    if not url.startswith("https://"):
        raise ValueError(f"refusing to download from a non-https URL: {url}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as out:
            for chunk in iter(lambda: response.read(1 << 20), b""):
                out.write(chunk)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _find_files(files: tuple[RemoteFile, ...], roots: list[Path]) -> list[Path] | None:
    """The files under the first root that holds all of them, or ``None``."""
    for root in roots:
        paths = [root / f.relpath for f in files]
        if all(p.is_file() for p in paths):
            return paths
    return None


def _fetch(name: str, files: tuple[RemoteFile, ...], roots: list[Path], cache_dir: Path,
           timeout: float) -> list[Path]:
    """Download missing ``files`` into ``cache_dir`` and verify their digests, or raise
    :class:`DatasetNotFound` saying what was looked for where and how to provide it."""
    paths = []
    for remote in files:
        dest = cache_dir / remote.relpath
        try:
            if not dest.is_file():
                download_file(remote.url, dest, timeout=timeout)
            actual = sha256_of(dest)
            if actual != remote.sha256:
                dest.unlink(missing_ok=True)
                raise ValueError(f"SHA-256 {actual} of the download does not match {remote.sha256}")
        except (OSError, ValueError) as err:
            raise DatasetNotFound(_not_found_message(name, files, roots, remote, err)) from err
        paths.append(dest)
    return paths


def _not_found_message(name: str, files: tuple[RemoteFile, ...], roots: list[Path],
                       failed: RemoteFile | None, err: Exception | None) -> str:
    """A message naming the files looked for, the directories searched and how to fix it."""
    wanted = ", ".join(f.relpath for f in files)
    where = ", ".join(str(r) for r in roots)
    lines = [f"dataset {name!r} not found: looked for {wanted} under {where}"]
    if name == "cora":
        lines[0] += " (and the Planetoid files cora/planetoid/ind.cora.*)"
    if failed is None:
        lines.append("downloading is disabled")
    else:
        lines.append(f"downloading {failed.url} failed: {err}")
    lines.append(f"download the files yourself (URLs: {', '.join(f.url for f in files)}) into a "
                 f"directory DIR with that layout and pass --data-dir DIR or set ORAL_DATA_DIR=DIR")
    return "; ".join(lines)


def _planetoid_dir(roots: list[Path], name: str) -> Path | None:
    """The first ``<root>/<name>/planetoid`` directory holding the Planetoid files."""
    parts = ("allx", "ally", "tx", "ty", "graph", "test.index")
    for root in roots:
        directory = root / name / "planetoid"
        if all((directory / f"ind.{name}.{p}").is_file() for p in parts):
            return directory
    return None


def _load_directory(directory: Path) -> Graph:
    """Load a directory of LINQS (``*.content``/``*.cites``) or Planetoid (``ind.*``) files."""
    contents = sorted(directory.glob("*.content"))
    if len(contents) == 1:
        return _load_path(contents[0])
    graphs = sorted(directory.glob("ind.*.graph"))
    if len(graphs) == 1:
        return load_planetoid(directory, graphs[0].name[len("ind."):-len(".graph")])
    raise ValueError(f"{directory}: expected exactly one LINQS '*.content' file or one Planetoid "
                     f"'ind.<name>.graph' file, found {len(contents)} and {len(graphs)}")


def _load_path(path: Path) -> Graph:
    """Load a dataset file or directory, dispatching on its format."""
    if path.is_dir():
        return _load_directory(path)
    if not path.is_file():
        raise DatasetNotFound(f"{path}: no such file or directory")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return load_npz(path)
    if suffix == ".mat":
        return load_mat(path)
    if suffix == ".content":
        cites = path.with_suffix(".cites")
        if not cites.is_file():
            raise DatasetNotFound(f"{path}: the matching citation file {cites} is missing")
        return load_linqs(path, cites)
    raise ValueError(f"{path}: unknown dataset format {suffix!r} (expected .npz, .mat, "
                     f".content or a Planetoid/LINQS directory)")


def load_dataset(name_or_path: PathLike, data_dir: PathLike | None = None,
                 cache_dir: PathLike | None = None, download: bool = True,
                 timeout: float = 20.0) -> Graph:
    """Load a benchmark graph by name (``cora``, ``amazonphoto``/``amazon_photo``,
    ``blogcatalog``) or from a path (``.npz``, ``.mat``, ``.content``, a Planetoid directory).

    Names resolve under ``data_dir`` (argument, else ``ORAL_DATA_DIR``, else
    ``../shared/datasets`` next to the repository, else the cache), then under the cache
    directory (``ORAL_CACHE_DIR`` or ``~/.cache/oral/datasets``). Cora uses the LINQS files and
    falls back to the Planetoid pickles. Missing files are downloaded into the cache directory
    (never into ``data_dir``); if that fails :class:`DatasetNotFound` says what to do.
    """
    key = _ALIASES.get(str(name_or_path).strip().lower())
    if key is None:
        path = Path(name_or_path).expanduser()
        if path.exists() or path.suffix or len(path.parts) > 1:
            return _load_path(path)
        raise ValueError(f"unknown dataset {str(name_or_path)!r}: use one of "
                         f"{sorted(DATASET_FILES)} or a path to a dataset file")
    data_root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    cache_root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    roots = list(dict.fromkeys([data_root, cache_root]))
    files = DATASET_FILES[key]
    paths = _find_files(files, roots)
    if paths is None and key == "cora":
        planetoid = _planetoid_dir(roots, "cora")
        if planetoid is not None:
            return load_planetoid(planetoid, "cora")
    if paths is None:
        if not download:
            raise DatasetNotFound(_not_found_message(key, files, roots, None, None))
        paths = _fetch(key, files, roots, cache_root, timeout)
    graph = _load_path(paths[0])
    graph.name = key
    return graph
