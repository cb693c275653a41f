"""Loaders for the benchmark graphs of the ORAL paper (see :mod:`oral_core.datasets.download`).

This package is being split by format; until then every name lives in ``download.py``.
"""
from .download import (DATASET_FILES, DatasetNotFound, PathLike, RemoteFile, RestrictedUnpickler,
                       auto_feature_mode, default_cache_dir, default_data_dir, load_dataset,
                       load_linqs, load_mat, load_npz, load_planetoid, preprocess_features,
                       restricted_load, sha256_of, verify_sha256)

__all__ = ["DATASET_FILES", "DatasetNotFound", "PathLike", "RemoteFile", "RestrictedUnpickler",
           "auto_feature_mode", "default_cache_dir", "default_data_dir", "load_dataset",
           "load_linqs", "load_mat", "load_npz", "load_planetoid", "preprocess_features",
           "restricted_load", "sha256_of", "verify_sha256"]
