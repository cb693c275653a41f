"""Loaders for the benchmark graphs of the ORAL paper (Cora, AmazonPhoto, BlogCatalog).

Every loader returns a :class:`~oral_core.graph.Graph`: dense float32 features ``[N, F]``, an
undirected ``edge_index`` in canonical form (both directions, no self loops, no duplicates; see
:func:`~oral_core.graph.canonical_edges`), 0-based long class ids and, when the file names them,
the class names.

Formats, one module each:

* LINQS text (``cora.content`` + ``cora.cites``)            -> :func:`load_linqs` (``linqs.py``)
* Planetoid pickles (``ind.<name>.{tx,ty,allx,ally,graph,test.index}``) -> :func:`load_planetoid`
  (``planetoid.py``, with the restricted unpickler of ``unpickle.py``)
* gnn-benchmark ``.npz`` (CSR ``adj_*``, ``attr_*``, ``labels``) -> :func:`load_npz` (``npz.py``)
* MATLAB v5 ``.mat`` (``Network``, ``Attributes``, ``Label``)  -> :func:`load_mat` (``mat.py``)

:func:`load_dataset` (here) resolves a dataset name (or a path) against a data directory, falls
back to a cache directory, and downloads the original public files into that cache when they are
missing (``download.py``: URLs, digests, directories, not-found messages). It never writes into
the data directory. Feature preprocessing is in ``features.py``; what the formats share (the
:class:`DatasetNotFound` error, building a checked :class:`Graph`) in ``common.py``.
"""
from __future__ import annotations

from pathlib import Path

from ..graph import Graph
from .common import DatasetNotFound, PathLike, canonical_name
from .download import (DATASET_ALIASES, DATASET_FILES, RemoteFile, default_cache_dir,
                       default_data_dir, fetch_files, find_files, not_found_message, sha256_of,
                       verify_sha256)
from .features import auto_feature_mode, preprocess_features
from .linqs import load_linqs
from .mat import load_mat
from .npz import load_npz
from .planetoid import find_planetoid_dir, load_planetoid
from .unpickle import RestrictedUnpickler, restricted_load

__all__ = ["DATASET_FILES", "DatasetNotFound", "PathLike", "canonical_name", "RemoteFile", "RestrictedUnpickler",
           "auto_feature_mode", "default_cache_dir", "default_data_dir", "load_dataset",
           "load_linqs", "load_mat", "load_npz", "load_planetoid", "preprocess_features",
           "restricted_load", "sha256_of", "verify_sha256"]


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
    key = DATASET_ALIASES.get(str(name_or_path).strip().lower())
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
    paths = find_files(files, roots)
    if paths is None and key == "cora":
        planetoid = find_planetoid_dir(roots, "cora")
        if planetoid is not None:
            return load_planetoid(planetoid, "cora")
    if paths is None:
        if not download:
            raise DatasetNotFound(not_found_message(key, files, roots, None, None))
        paths = fetch_files(key, files, roots, cache_root, timeout)
    graph = _load_path(paths[0])
    graph.name = key
    return graph
