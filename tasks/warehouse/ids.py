"""The ids of published runs and of trainings: hashes of what they depend on."""
from __future__ import annotations

import datetime as dt
import hashlib
import json

from .errors import WarehouseError
from .values import as_date


def make_run_id(graph: str, snapshot_date: dt.date | str, content_hash: str,
                config_hash: str) -> str:
    """The run id: a hash of what makes a published run (graph, snapshot date, snapshot content,
    configuration), so publishing the same run twice replaces it, while the same bytes published
    under another date (a graph that did not change overnight) are another night's run."""
    day = as_date(snapshot_date)
    if day is None:
        raise WarehouseError("a run id needs the snapshot date")
    payload = json.dumps(["run", graph, day.isoformat(), content_hash, config_hash],
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def make_training_id(graph: str, content_hash: str, config_hash: str) -> str:
    """What training depends on (graph, snapshot content, configuration), as a hash: it names the
    run folder, so nights whose snapshots have equal bytes share one training. It is also the
    run id that runs published before the snapshot date joined :func:`make_run_id` carry;
    :meth:`Warehouse.publish_run` replaces such a row of the same date like its own."""
    payload = json.dumps([graph, content_hash, config_hash], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]
