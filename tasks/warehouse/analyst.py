"""What analysts read: the latest classes (``oral classes``), lineage ids and labels joined to the
registered model's predictions, and one read-only query (``oral sql``, checked by
:mod:`tasks.warehouse.guard`).

:class:`Analyst` is mixed into :class:`tasks.warehouse.store.Warehouse`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from .errors import WarehouseError
from .guard import check_read_only


class Analyst:
    """Analysts' reads (a mixin of :class:`tasks.warehouse.store.Warehouse`)."""

    def published_graphs(self) -> list[str]:
        """The graphs with at least one published run, sorted (empty: no warehouse yet)."""
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                return []
            return [g for (g,) in con.execute(
                "SELECT DISTINCT graph FROM runs ORDER BY graph").fetchall()]

    def latest_classes(self, graph: str | None = None) -> pa.Table:
        """The ``latest_classes`` view (of one graph or all), largest classes first."""
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                return pa.table({})
            return con.sql(
                "SELECT * FROM latest_classes WHERE CAST(? AS VARCHAR) IS NULL OR graph = ? "
                "ORDER BY graph, size DESC, class_key", params=[graph, graph]).to_arrow_table()

    def classes_for_display(self, graph: str | None = None, features: int = 3) -> pa.Table:
        """The latest classes as ``oral classes`` prints them, largest first: ``name`` is the
        class's label, else its known class name, else its lineage id (never empty);
        ``top_features`` the first ``features`` feature names with their lift, as text."""
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                return pa.table({})
            return con.sql(
                "SELECT graph, snapshot_date, lineage_id, "
                "coalesce(label, class_name, lineage_id) AS name, is_novel, size, status, "
                "mean_confidence, purity, majority_true_label, "
                "array_to_string(list_transform(top_features[1:?], lambda f: CASE "
                "WHEN f.lift IS NULL THEN f.name ELSE printf('%s (x%.2f)', f.name, f.lift) END), "
                "', ') AS top_features "
                "FROM latest_classes WHERE CAST(? AS VARCHAR) IS NULL OR graph = ? "
                "ORDER BY graph, size DESC, class_key",
                params=[int(features), graph, graph]).to_arrow_table()

    def with_lineage(self, predictions) -> pa.Table:
        """``predictions`` (the registered model's output: a pandas DataFrame or an Arrow table
        with ``run_id`` and ``class_key``) with two columns added: ``lineage_id``, from the
        ``classes`` row of ``(run_id, class_key)``, and that class's current ``label``. Rows
        keep their order; a row whose run is not in the warehouse, or whose class had no member
        on the night the model was trained (or ``-1``, unassigned), gets nulls."""
        table = predictions if isinstance(predictions, pa.Table) else pa.Table.from_pandas(
            predictions, preserve_index=False)
        missing = {"run_id", "class_key"} - set(table.column_names)
        if missing:
            raise WarehouseError(f"predictions lack columns {sorted(missing)}: pass the output "
                                 f"of the registered model (tasks.registry.ORALPyfunc)")
        keys = pa.table({"_row": pa.array(np.arange(table.num_rows, dtype=np.int64)),
                         "run_id": table["run_id"].cast(pa.string()),
                         "class_key": table["class_key"].cast(pa.int64())})
        self._upgrade_for_reading()
        with self._reader() as con:
            if con is None:
                found = pa.table({"lineage_id": pa.nulls(table.num_rows, pa.string()),
                                  "label": pa.nulls(table.num_rows, pa.string())})
            else:
                with self._registered(con, "_oral_predictions", keys):
                    found = con.sql(
                        "SELECT c.lineage_id, lb.label FROM _oral_predictions p "
                        "LEFT JOIN classes c ON c.run_id = p.run_id AND c.class_key = p.class_key "
                        "LEFT JOIN runs r ON r.run_id = c.run_id "
                        "LEFT JOIN latest_labels lb ON lb.graph = r.graph "
                        "AND lb.lineage_id = c.lineage_id ORDER BY p._row").to_arrow_table()
        for name in ("lineage_id", "label"):
            column = found[name].cast(pa.string())
            if name in table.column_names:
                table = table.set_column(table.column_names.index(name), name, column)
            else:
                table = table.append_column(name, column)
        return table

    # ---------------------------------------------------------------- analysts' SQL
    check_read_only = staticmethod(check_read_only)

    def query(self, sql: str, params: Sequence | Mapping | None = None) -> pa.Table:
        """Run one read-only query (for ``oral sql``) and return its rows as an Arrow table.

        The statement is checked (:meth:`check_read_only`), the file is opened read-only with
        access to other files disabled, and the query runs inside a transaction that is rolled
        back; values go in ``params`` (bound ``?`` or ``$name`` parameters). Inside
        ``with Warehouse(path)`` (and for ``:memory:``) the held read-write connection is used
        instead: the statement check and the rollback still apply."""
        if self._held is None and not Path(self.path).exists():
            raise WarehouseError(f"no warehouse at {self.path}: nothing has been published yet")
        self._upgrade_for_reading()
        if self._held is not None:
            con = self._held.cursor()
        else:
            con = self.connect(read_only=True, _config=self._config(read_only_query=True))
        try:
            self.check_read_only(sql, con)
            con.execute("BEGIN TRANSACTION")
            try:
                return con.sql(sql, params=params).to_arrow_table()
            finally:
                con.execute("ROLLBACK")
        finally:
            con.close()
