"""The identity of a fit: the configuration hash that names finished seeds and nightly runs,
and the code version recorded beside them. Used by the method's harness and by the pipeline
alike, so it lives with the method and imports nothing but its configuration."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from . import ALGORITHM_REVISION, __version__
from .config import ORALConfig


def code_version() -> str:
    """``git describe`` of the working tree (``-dirty`` when modified), else the package version."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).resolve().parent)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return __version__


#: configuration fields added after revision 4 whose default reproduces the earlier behaviour
#: exactly: left out of the hash while at their default, so finished seeds stay valid.
#: ``minibatch_above_edges`` / ``auto_batch_size`` (automatic mini-batch training) change
#: nothing below the budget, and every benchmark dataset is far below it (BlogCatalog, the
#: largest, has about 350k edges against 2M), so their results are unchanged by construction;
#: ``gpu_memory_share`` acts only above that budget, on a GPU
LATER_FIELDS = {"batch_size": None, "num_neighbors": 10, "batches_per_epoch": None,
                "eval_chunk_edges": 1 << 21, "select_from_epoch": None, "selection": "best_val",
                "ensemble_from_layer": 1, "warm_epochs": 10,
                "minibatch_above_edges": 2_000_000, "auto_batch_size": 2048,
                "attention_kernel": "gather", "lr_schedule": "constant",
                "stop_when_stable": None, "stop_patience": 10, "remove_inter_edges": True,
                "sparse_input_below": 0.0, "pseudo_label_groups": "all",
                "eval_every": 1, "gpu_memory_share": 0.8, "opennc_losses": False,
                "opennc_pair_pool": 512, "opennc_terms": "proto+group+balance",
                "known_split_share": None, "known_absorb_share": None,
                "known_absorb_guard": False, "known_head": "none", "known_head_pull": None,
                "known_split_repeat": False, "known_head_hops": 2, "known_head_scale": "labelled",
                "granularity_position": 0.5,
                "novel_wholeness": None, "novel_wholeness_if": "always",
                "shards": 1, "consensus_restarts": 1,
                "consensus_linkage": "average", "novel_recut": False,
                "novel_recut_dims": 64, "novel_recut_view": "features",
                "novel_recut_parts": "same", "share_first_projection": False}


def config_hash(config: ORALConfig, features: str) -> str:
    """A 12-hex-digit hash of everything in ``config`` (and the feature preprocessing) that can
    change a result; fields of :data:`LATER_FIELDS` at their default are left out."""
    # everything that can change a result; not the seed (one file per seed) or the progress bar
    values = {k: v for k, v in config.to_dict().items()
              if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}
    payload = json.dumps({**values, "features": features, "seed": None, "progress": None,
                          "algorithm_revision": ALGORITHM_REVISION}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


