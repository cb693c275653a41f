"""Class labels: the human names people give classes (``oral label``), kept as history in
``class_labels``; the latest of a (graph, lineage id) counts.

:class:`Labels` is mixed into :class:`tasks.warehouse.store.Warehouse`.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from .errors import LabelRefused, UnknownLineage, WarehouseError, rollback_after_error
from .values import as_timestamp


class Labels:
    """:meth:`label_class` (a mixin of :class:`tasks.warehouse.store.Warehouse`)."""

    def label_class(self, lineage_id: str, name: str, *, by: str, graph: str | None = None,
                    at: dt.datetime | None = None) -> dict:
        """Give the class ``lineage_id`` of ``graph`` the human name ``name``; return the
        stored row (``graph, lineage_id, name, labelled_by, labelled_at``) and ``previous``,
        the label it replaces (None when it had none).

        The label is a new ``class_labels`` row (earlier ones are kept as history; the latest
        counts) keyed by the lineage id, so the views show it on every night the class lives,
        later nights included. ``graph`` may be left out when the lineage id belongs to one
        graph only. Raises :class:`UnknownLineage` when no published run of the graph has that
        lineage id, :class:`LabelRefused` for an empty name or ``by`` or a lineage id of several
        graphs without ``graph`` (nothing is written), :class:`WarehouseError` when there is no
        warehouse yet."""
        name = " ".join(str(name).split())
        by = str(by).strip()
        if not name:
            raise LabelRefused("a label needs a name: got an empty one")
        if not by:
            raise LabelRefused("a label needs who gave it (labelled_by): got an empty one")
        if self._held is None and not Path(self.path).exists():
            raise WarehouseError(f"no warehouse at {self.path}: nothing has been published yet")
        at = as_timestamp(at) or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        with self._connection() as con:
            self._ensure_schema(con)
            con.execute("BEGIN TRANSACTION")
            try:
                graphs = [g for (g,) in con.execute(
                    "SELECT DISTINCT graph FROM class_lineage WHERE lineage_id = ? "
                    "AND (CAST(? AS VARCHAR) IS NULL OR graph = ?) ORDER BY graph",
                    [lineage_id, graph, graph]).fetchall()]
                if not graphs:
                    where = f" in graph {graph!r}" if graph is not None else ""
                    raise UnknownLineage(f"unknown lineage id {lineage_id!r}{where}: no published "
                                         f"run has it (see `oral classes` or the class_timeline view)")
                if len(graphs) > 1:
                    raise LabelRefused(f"lineage id {lineage_id!r} is in several graphs "
                                         f"({', '.join(graphs)}): name one with --graph")
                previous = con.execute(
                    "SELECT label FROM latest_labels WHERE graph = ? AND lineage_id = ?",
                    [graphs[0], lineage_id]).fetchall()
                row = {"graph": graphs[0], "lineage_id": lineage_id, "name": name,
                       "labelled_by": by, "labelled_at": at}
                self._insert_row(con, "class_labels", row)
                con.execute("COMMIT")
            except BaseException as err:
                rollback_after_error(con, err, f"labelling {lineage_id!r}")
                raise
        return row | {"previous": previous[0][0] if previous else None}
