"""Dataset loaders: synthetic files in every format, the restricted unpickler, name resolution,
offline failures, and (when present) the real benchmark files."""
from __future__ import annotations

import collections
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import torch

from oral_core.datasets import download  # the module whose fetch_files calls download_file
from oral_core.datasets import (DatasetNotFound, load_dataset, load_linqs, load_mat, load_npz,
                                load_planetoid, preprocess_features, restricted_load,
                                verify_sha256)


def shared_datasets_dir() -> Path:
    """``ORAL_DATA_DIR`` if set, else ``../shared/datasets`` next to the repository."""
    env = os.environ.get("ORAL_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "datasets"


pytestmark = pytest.mark.usefixtures("offline")  # tests/conftest.py: no network, no ~/.cache


def edge_set(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return set(map(tuple, edge_index.t().tolist()))


def undirected(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    return {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}


# ---------------------------------------------------------------------------------------------
# LINQS
# ---------------------------------------------------------------------------------------------

def write_linqs(directory: Path, cites: str | None = None) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    content = directory / "toy.content"
    content.write_text("p30\t1\t0\t0\tTheory\n"
                       "p10\t0\t1\t0\tCase_Based\n"
                       "p20\t0\t0\t1\tNeural_Networks\n"
                       "p40\t1\t1\t0\tTheory\n")
    cites_path = directory / "toy.cites"
    cites_path.write_text(cites if cites is not None else
                          "p10\tp30\np30\tp10\np20\tp40\np40\tp40\np20\tp40\n")
    return content, cites_path


def test_linqs_round_trip(tmp_path: Path) -> None:
    g = load_linqs(*write_linqs(tmp_path))
    assert g.x.dtype == torch.float32
    assert g.x.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]]
    assert g.class_names == ["Case_Based", "Neural_Networks", "Theory"]  # sorted names
    assert g.y.tolist() == [2, 0, 1, 2]
    # file order: p30=0, p10=1, p20=2, p40=3; duplicates, reverse edges and self loop dropped.
    assert edge_set(g.edge_index) == undirected([(1, 0), (2, 3)])
    assert g.num_edges == 4 and g.name == "toy"


def test_linqs_unknown_ids_raise_or_drop(tmp_path: Path) -> None:
    content, cites = write_linqs(tmp_path, cites="p10\tp30\np99\tp10\n")
    with pytest.raises(ValueError, match=r"toy\.cites.*p99"):
        load_linqs(content, cites)
    g = load_linqs(content, cites, drop_unknown=True)
    assert edge_set(g.edge_index) == undirected([(1, 0)])


def test_linqs_ragged_line_names_file_and_line(tmp_path: Path) -> None:
    content, cites = write_linqs(tmp_path)
    content.write_text("a\t1\t0\tX\nb\t1\tY\n")
    with pytest.raises(ValueError, match=r"toy\.content: line 2"):
        load_linqs(content, cites)


# ---------------------------------------------------------------------------------------------
# gnn-benchmark npz
# ---------------------------------------------------------------------------------------------

def write_npz(path: Path, dense_attr: bool = False) -> Path:
    # one-way entries 0->1, 2->1, 1->0 (reverse of 0->1) and a self loop on 3
    adj = sp.csr_matrix((np.ones(4, np.float32), ([0, 2, 1, 3], [1, 1, 0, 3])), shape=(4, 4))
    attr = sp.csr_matrix(np.array([[1, 0], [0, 2], [3, 0], [0, 0]], dtype=np.float32))
    arrays = dict(adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
                  adj_shape=np.array(adj.shape), labels=np.array([1, 0, 1, 2]),
                  class_names=np.array(["a", "b", "c"]))
    if dense_attr:
        arrays["attr_matrix"] = attr.toarray()
    else:
        arrays.update(attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr,
                      attr_shape=np.array(attr.shape))
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("dense_attr", [False, True])
def test_npz_round_trip(tmp_path: Path, dense_attr: bool) -> None:
    g = load_npz(write_npz(tmp_path / "toy.npz", dense_attr))
    assert g.x.tolist() == [[1, 0], [0, 2], [3, 0], [0, 0]]
    assert g.y.tolist() == [1, 0, 1, 2] and g.class_names == ["a", "b", "c"]
    assert edge_set(g.edge_index) == undirected([(0, 1), (1, 2)])


def test_npz_missing_array_names_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, labels=np.zeros(3))
    with pytest.raises(ValueError, match=r"bad\.npz: missing arrays"):
        load_npz(path)


# ---------------------------------------------------------------------------------------------
# MATLAB
# ---------------------------------------------------------------------------------------------

def write_mat(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    network = sp.csc_matrix(np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=float))
    attributes = sp.csc_matrix(np.array([[0, 5, 0, 1], [2, 0, 0, 0], [0, 0, 703, 0]], dtype=float))
    scipy.io.savemat(path, {"Network": network, "Attributes": attributes,
                            "Label": np.array([[1], [3], [2]], dtype=np.uint8)})
    return path


def test_mat_round_trip(tmp_path: Path) -> None:
    g = load_mat(write_mat(tmp_path / "toy.mat"))
    assert g.x.tolist() == [[0, 5, 0, 1], [2, 0, 0, 0], [0, 0, 703, 0]]
    assert g.y.tolist() == [0, 2, 1]  # 1-based -> 0-based
    assert edge_set(g.edge_index) == undirected([(0, 1), (1, 2)])


def test_mat_missing_variable_names_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.mat"
    scipy.io.savemat(path, {"Network": np.zeros((2, 2))})
    with pytest.raises(ValueError, match=r"bad\.mat: missing variables \['Attributes', 'Label'\]"):
        load_mat(path)


# ---------------------------------------------------------------------------------------------
# Planetoid pickles
# ---------------------------------------------------------------------------------------------

def dump(obj: object, path: Path) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle, protocol=2)  # like the original Python 2 files


def write_planetoid(directory: Path, name: str = "toy") -> Path:
    """Six nodes: 0-2 in allx/ally, test nodes 3-5 stored in the order 5, 3, 4."""
    directory.mkdir(parents=True, exist_ok=True)
    onehot = np.eye(3, dtype=np.int32)
    allx = sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))
    tx = sp.csr_matrix(np.array([[5, 5], [3, 3], [4, 4]], dtype=np.float32))
    parts = {"x": allx[:2], "y": onehot[[0, 1]], "allx": allx, "ally": onehot[[0, 1, 2]],
             "tx": tx, "ty": onehot[[2, 0, 1]],
             "graph": collections.defaultdict(list, {0: [1, 1], 1: [0], 2: [2], 3: [5], 4: [0]})}
    for part, obj in parts.items():
        dump(obj, directory / f"ind.{name}.{part}")
    (directory / f"ind.{name}.test.index").write_text("5\n3\n4\n")
    return directory


def test_planetoid_round_trip_reorders_test_nodes(tmp_path: Path) -> None:
    g = load_planetoid(write_planetoid(tmp_path), "toy")
    assert g.x.tolist() == [[1, 0], [0, 1], [1, 1], [3, 3], [4, 4], [5, 5]]
    assert g.y.tolist() == [0, 1, 2, 0, 1, 2]
    assert edge_set(g.edge_index) == undirected([(0, 1), (3, 5), (0, 4)])
    assert load_dataset(tmp_path).y.tolist() == g.y.tolist()  # directory dispatch


class Exploit:
    """Unpickling this would run a shell command (touching a marker file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return os.system, (f"touch {self.marker}",)


def test_malicious_planetoid_pickle_is_refused(tmp_path: Path) -> None:
    directory = write_planetoid(tmp_path / "evil")
    marker = tmp_path / "pwned"
    dump(Exploit(marker), directory / "ind.toy.allx")
    with pytest.raises(pickle.UnpicklingError, match=r"ind\.toy\.allx.*refusing.*system"):
        load_planetoid(directory, "toy")
    assert not marker.exists()


def test_restricted_unpickler_refuses_builtins_eval(tmp_path: Path) -> None:
    path = tmp_path / "eval.pkl"
    # protocol-0 pickle: builtins.eval("1+1")
    path.write_bytes(b"cbuiltins\neval\n(V1+1\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        restricted_load(path)


# ---------------------------------------------------------------------------------------------
# Name resolution, downloads, helpers
# ---------------------------------------------------------------------------------------------

def test_missing_dataset_offline_gives_helpful_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    with pytest.raises(DatasetNotFound) as info:
        load_dataset("blogcatalog", data_dir=empty, cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    for needle in ("blogcatalog/BlogCatalog.mat", str(empty), str(tmp_path / "cache"),
                   "GRAND-Lab/CoLA", "network disabled", "--data-dir", "ORAL_DATA_DIR"):
        assert needle in message
    assert not empty.exists()  # nothing written into the data directory


def test_missing_cora_mentions_planetoid_and_no_download(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFound, match=r"cora/linqs/cora\.content.*planetoid.*disabled"):
        load_dataset("cora", data_dir=tmp_path, download=False)


def test_download_goes_to_cache_and_is_checked(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_download(url: str, dest: Path, timeout: float = 20.0) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(b"not the real file")

    monkeypatch.setattr(download, "download_file", fake_download)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetNotFound, match="SHA-256"):
        load_dataset("amazon_photo", data_dir=tmp_path / "data", cache_dir=cache)
    assert not (cache / "amazon_photo" / "amazon_electronics_photo.npz").exists()


@pytest.mark.slow
def test_download_success_lands_in_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shared_datasets_dir() / "blogcatalog" / "BlogCatalog.mat"
    if not real.is_file():
        pytest.skip(f"real datasets not found at {shared_datasets_dir()}")
    monkeypatch.setattr(download, "download_file",
                        lambda url, dest, timeout=20.0: (dest.parent.mkdir(parents=True),
                                                         shutil.copyfile(real, dest)))
    cache = tmp_path / "cache"
    g = load_dataset("blogcatalog", data_dir=tmp_path / "data", cache_dir=cache)
    assert g.name == "blogcatalog" and g.num_nodes == 5196
    assert (cache / "blogcatalog" / "BlogCatalog.mat").is_file()
    assert not (tmp_path / "data").exists()


def test_names_resolve_under_env_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_mat(tmp_path / "blogcatalog" / "BlogCatalog.mat")
    write_planetoid(tmp_path / "cora" / "planetoid", name="cora")  # Cora falls back to Planetoid
    monkeypatch.setenv("ORAL_DATA_DIR", str(tmp_path))
    blog = load_dataset("BlogCatalog")
    assert blog.name == "blogcatalog" and blog.num_nodes == 3
    assert load_dataset("cora").num_nodes == 6


def test_paths_dispatch_by_format(tmp_path: Path) -> None:
    assert load_dataset(write_npz(tmp_path / "a.npz")).num_nodes == 4
    assert load_dataset(write_mat(tmp_path / "b.mat")).num_nodes == 3
    content, _ = write_linqs(tmp_path / "linqs")
    assert load_dataset(content).num_nodes == 4
    assert load_dataset(tmp_path / "linqs").num_nodes == 4
    with pytest.raises(DatasetNotFound, match="nope.npz"):
        load_dataset(tmp_path / "nope.npz")
    with pytest.raises(ValueError, match="unknown dataset 'citeseer'"):
        load_dataset("citeseer")


def test_preprocess_features() -> None:
    x = torch.tensor([[1.0, 3.0], [0.0, 0.0], [np.e - 1, 0.0]])
    row = preprocess_features(x, "row")
    assert torch.allclose(row, torch.tensor([[0.25, 0.75], [0.0, 0.0], [1.0, 0.0]]))
    log_row = preprocess_features(x, "log_row")
    assert torch.allclose(log_row.sum(1), torch.tensor([1.0, 0.0, 1.0]))
    assert torch.allclose(log_row[0], torch.log1p(x[0]) / torch.log1p(x[0]).sum())
    assert preprocess_features(x, "none") is x
    with pytest.raises(ValueError, match="unknown feature preprocessing"):
        preprocess_features(x, "l2")


def test_verify_sha256(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    data = tmp_path / "sub" / "f.bin"
    data.write_bytes(b"abc")
    good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    sums = tmp_path / "SHA256SUMS"
    sums.write_text(f"{good}  ./sub/f.bin\n")
    assert verify_sha256(data, sums) == good
    sums.write_text(f"{'0' * 64}  ./sub/f.bin\n")
    with pytest.raises(ValueError, match="does not match"):
        verify_sha256(data, sums)
    sums.write_text(f"{good}  ./other.bin\n")
    with pytest.raises(ValueError, match="not listed"):
        verify_sha256(data, sums)


# ---------------------------------------------------------------------------------------------
# Real data (skipped when ../shared/datasets is absent)
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def real_dir() -> Path:
    root = shared_datasets_dir()
    if not root.is_dir():
        pytest.skip(f"real datasets not found at {root} (set ORAL_DATA_DIR)")
    return root


def test_real_cora_linqs(real_dir: Path, tmp_path: Path) -> None:
    g = load_dataset("cora", data_dir=real_dir, cache_dir=tmp_path, download=False)
    assert (g.num_nodes, g.num_edges, g.x.shape[1], g.num_classes) == (2708, 10556, 1433, 7)
    assert g.class_names == ["Case_Based", "Genetic_Algorithms", "Neural_Networks",
                             "Probabilistic_Methods", "Reinforcement_Learning", "Rule_Learning",
                             "Theory"]
    assert torch.bincount(g.y).tolist() == [298, 418, 818, 426, 217, 180, 351]


def test_real_cora_planetoid(real_dir: Path) -> None:
    g = load_planetoid(real_dir / "cora" / "planetoid", "cora")
    assert (g.num_nodes, g.num_edges, g.x.shape[1], g.num_classes) == (2708, 10556, 1433, 7)
    assert sorted(torch.bincount(g.y).tolist()) == sorted([298, 418, 818, 426, 217, 180, 351])


def test_real_amazon_photo(real_dir: Path, tmp_path: Path) -> None:
    g = load_dataset("amazonphoto", data_dir=real_dir, cache_dir=tmp_path, download=False)
    assert (g.num_nodes, g.num_edges, g.x.shape[1], g.num_classes) == (7650, 238162, 745, 8)
    assert int((torch.bincount(g.edge_index[0], minlength=g.num_nodes) == 0).sum()) == 115


@pytest.mark.slow
def test_real_blogcatalog(real_dir: Path, tmp_path: Path) -> None:
    g = load_dataset("blogcatalog", data_dir=real_dir, cache_dir=tmp_path, download=False)
    assert (g.num_nodes, g.num_edges, g.x.shape[1], g.num_classes) == (5196, 343486, 8189, 6)
    assert int(g.y.min()) == 0 and float(g.x.max()) == 703.0


def test_real_checksum(real_dir: Path) -> None:
    verify_sha256(real_dir / "blogcatalog" / "BlogCatalog.mat", real_dir / "SHA256SUMS")
