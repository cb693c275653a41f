"""The DuckDB warehouse: what each nightly run publishes, and the views analysts query.

One embedded DuckDB file holds every graph's runs; :class:`Warehouse` is the way in. What lives
where:

- :mod:`~tasks.warehouse.store`: :class:`Warehouse` itself: the file, connections, locking
  (retry with backoff, :class:`WarehouseLocked`) and the schema setup every write runs first;
- :mod:`~tasks.warehouse.schema`: the schema: table and view DDL, :data:`SCHEMA_VERSION`, the
  migrations from older versions, the column lists and Arrow schemas;
- :mod:`~tasks.warehouse.publish`: publishing a run in one transaction
  (:meth:`Warehouse.publish_run`);
- :mod:`~tasks.warehouse.history`: the nightly flow's reads of earlier runs (previous run, node
  pairs and the novel-id counter for lineage, last processed date);
- :mod:`~tasks.warehouse.lineage`: the lineage algorithm across nights (pure numpy/scipy, no SQL);
- :mod:`~tasks.warehouse.labels`: class labels (``oral label``);
- :mod:`~tasks.warehouse.analyst`: the analysts' reads (``oral classes``, lineage ids for the
  registered model's predictions) and queries (``oral sql``);
- :mod:`~tasks.warehouse.guard`: the read-only SQL guard of ``oral sql``;
- :mod:`~tasks.warehouse.values`: coercion of run values to what DuckDB stores;
- :mod:`~tasks.warehouse.ids`: run and training ids;
- :mod:`~tasks.warehouse.errors`: the error classes;
- :mod:`~tasks.warehouse.writer_lock`: the single writer's lock, which the operating system
  drops with a holder that dies (held by the nightly flow from lineage to publish).
"""
from .errors import LabelRefused, QueryRefused, UnknownLineage, WarehouseError, WarehouseLocked
from .history import NO_CLASS
from .ids import make_run_id, make_training_id
from .schema import RUN_COLUMNS, SCHEMA_VERSION, SNAPSHOT_COLUMNS
from .store import MEMORY, Warehouse
from .writer_lock import WriterLockTimeout, writer_lock

__all__ = ["LabelRefused", "MEMORY", "NO_CLASS", "QueryRefused", "RUN_COLUMNS", "SCHEMA_VERSION",
           "SNAPSHOT_COLUMNS", "UnknownLineage", "Warehouse", "WarehouseError", "WarehouseLocked",
           "WriterLockTimeout", "make_run_id", "make_training_id", "writer_lock"]
