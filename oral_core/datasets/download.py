"""Where the benchmark files come from: their public URLs and SHA-256 digests, the data and cache
directories, downloading into the cache (never into the data directory), digest checks, and the
message that says what to do when a dataset can be neither found nor downloaded.

:func:`download_file` is looked up here by :func:`fetch_files`: tests that must stay offline
patch ``oral_core.datasets.download.download_file``.
"""
from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .common import DatasetNotFound, PathLike


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
DATASET_ALIASES = {"cora": "cora", "amazonphoto": "amazonphoto", "amazon_photo": "amazonphoto",
                   "amazon-photo": "amazonphoto", "photo": "amazonphoto",
                   "blogcatalog": "blogcatalog", "blog_catalog": "blogcatalog",
                   "blog-catalog": "blogcatalog"}
"""The dataset names :func:`~oral_core.datasets.load_dataset` accepts, mapped to their keys in
:data:`DATASET_FILES`."""


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


def find_files(files: tuple[RemoteFile, ...], roots: list[Path]) -> list[Path] | None:
    """The files under the first root that holds all of them, or ``None``."""
    for root in roots:
        paths = [root / f.relpath for f in files]
        if all(p.is_file() for p in paths):
            return paths
    return None


def fetch_files(name: str, files: tuple[RemoteFile, ...], roots: list[Path], cache_dir: Path,
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
            raise DatasetNotFound(not_found_message(name, files, roots, remote, err)) from err
        paths.append(dest)
    return paths


def not_found_message(name: str, files: tuple[RemoteFile, ...], roots: list[Path],
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
