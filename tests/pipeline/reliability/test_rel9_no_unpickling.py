"""Reliability point 9: model files, snapshots and logged models never unpickle.
Shared state: conftest.py (fixtures), harness.py (readers and helpers)."""
from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from .harness import D1, _write_snapshot_files, _good_nodes, _good_edges


# -------------------------------------------------------------------------- 9. no unpickling
class _Boom:
    """Unpickling this creates a marker file: proof that something unpickled it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
def test_model_files_never_unpickle_objects(tmp_path):
    """Case 9. ``ORALModel.load`` reads tensors and plain values only: a model file carrying a
    pickled object (in a valid-looking payload, or as a bare pickle) is refused and the
    object's code never runs."""
    import torch

    from oral_core.inference import ORALModel

    marker = tmp_path / "UNPICKLED"
    payload = tmp_path / "payload.pt"
    torch.save({"format": "oral-model/1", "config": {}, "trojan": _Boom(marker)}, payload)
    bare = tmp_path / "bare.pt"
    bare.write_bytes(pickle.dumps(_Boom(marker)))
    for path in (payload, bare):
        with pytest.raises(pickle.UnpicklingError):
            ORALModel.load(path)
    assert not marker.exists()


def test_snapshot_reading_never_unpickles(tmp_path):
    """Case 9. A snapshot cannot make the reader unpickle: an Arrow extension type whose
    metadata is a pickle (the pyarrow ``PyExtensionType`` route), a pickle file next to the
    Parquet files, and pandas metadata are all ignored."""
    from data_contracts import snapshots as snap
    from data_contracts import validate_snapshot

    marker = tmp_path / "UNPICKLED"
    nodes = _good_nodes()
    field = pa.field("trojan", pa.binary(), metadata={
        b"ARROW:extension:name": b"arrow.py_extension_type",
        b"ARROW:extension:metadata": pickle.dumps(_Boom(marker))})
    nodes = nodes.append_column(field, pa.array([b"x"] * nodes.num_rows))
    nodes = nodes.replace_schema_metadata({b"pandas": pickle.dumps(_Boom(marker))})
    folder = _write_snapshot_files(tmp_path / "g" / f"snapshot={D1}", nodes, _good_edges())
    plain = snap.read_snapshot_files(folder).content_hash
    for name in ("nodes.pkl", "snapshot.pkl", "model.pt"):
        (folder / name).write_bytes(pickle.dumps(_Boom(marker)))
    files = snap.read_snapshot_files(folder)
    assert files.content_hash == plain  # the pickles were not even read
    assert validate_snapshot(files).passed
    loaded = snap.snapshot_from_files(files)
    assert loaded.extra.column("trojan").type == pa.binary()
    assert not marker.exists()


def test_logged_models_hold_no_pickle(env, concurrent):
    """Case 9. The registered models load through MLflow's pyfunc from code and a weights-only
    file: no pickle anywhere in the artifact store."""
    pickles = [p for p in (env.state / "mlartifacts").rglob("*")
               if p.suffix in (".pkl", ".pickle", ".cloudpickle")]
    assert pickles == []
    mlmodels = list((env.state / "mlartifacts").rglob("MLmodel"))
    assert mlmodels and all("python_model: oral_pyfunc.py" in p.read_text() or
                            "oral_pyfunc.py" in p.read_text() for p in mlmodels)
