"""A restricted unpickler for the Planetoid files (Python 2 pickles): it builds numpy arrays,
scipy CSR/CSC matrices and builtin containers, and refuses every other global."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import scipy.sparse as sp

from .common import PathLike


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
