"""Arrow columns of a graph as the arrays the model takes: node positions and the feature matrix.

Shared by the snapshot reader (``data_contracts.snapshots``) and the registered model
(``tasks/registry/oral_pyfunc.py``), which travels with ``oral_core`` alone.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def writable(values, dtype=None) -> np.ndarray:
    """``values`` as a writable NumPy array (of ``dtype`` when given): Arrow-backed and memory-mapped
    arrays are read-only and ``torch.from_numpy`` wants writable memory; copies only in that case."""
    return np.require(values, dtype=dtype, requirements="W")


def index_of(ids: pa.Array, node_ids: pa.Array) -> np.ndarray:
    """Position of each id in ``node_ids`` (-1 where absent), vectorised by Arrow's hash lookup."""
    if ids.type != node_ids.type:
        try:
            ids = ids.cast(node_ids.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return np.full(len(ids), -1, dtype=np.int64)
    pos = pc.index_in(ids, value_set=node_ids)
    return pos.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def feature_matrix(column: pa.ChunkedArray | pa.Array, where: str,
                   error: type[Exception] = ValueError) -> np.ndarray:
    """A ``list<number>`` column of one fixed length as an ``[N, F]`` float32 array; anything
    else raises ``error`` naming ``where`` (ragged rows: rule ``features_fixed_length``)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type):
        width = arr.type.list_size
    elif pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        if arr.null_count:
            raise error(f"{where}: column 'features' has {arr.null_count} null rows")
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
        width = int(lengths[0]) if n else 0
        if n and (lengths != width).any():
            bad = np.flatnonzero(lengths != width)[:5].tolist()
            raise error(f"{where}: rule features_fixed_length: rows {bad} have lengths "
                        f"{lengths[bad].tolist()}, expected {width}")
    else:
        raise error(f"{where}: column 'features' must be a list of floats, got {arr.type}")
    values = arr.flatten()
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        raise error(f"{where}: column 'features' must hold numbers, got {values.type}")
    return values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(n, width)
