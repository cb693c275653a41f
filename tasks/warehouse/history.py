"""What the nightly flow reads back from earlier runs: whether a run was published, the last
processed date, and the inputs of lineage (the novel-id counter, the previous run's classes and
both runs' classes of every node).

:class:`History` is mixed into :class:`tasks.warehouse.store.Warehouse`; the lineage algorithm
itself is :mod:`tasks.warehouse.lineage`.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os

import numpy as np
import pyarrow as pa

from .errors import WarehouseError
from .lineage import PreviousClasses
from .publish import AssignmentSource
from .schema import ANSWER_RUN
from .values import as_date

#: ``Warehouse.node_pairs``: the class key of a node absent from one of the two runs.
NO_CLASS = np.iinfo(np.int64).min


class History:
    """The flow's reads of published runs (a mixin of :class:`tasks.warehouse.store.Warehouse`)."""

    def run_exists(self, run_id: str) -> bool:
        with self._reader() as con:
            if con is None:
                return False
            found = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchall()
            return found[0][0] > 0

    def last_processed_date(self, graph: str, config_hash: str | None = None) -> dt.date | None:
        """The latest snapshot date with a published run of ``graph`` (of that configuration)."""
        with self._reader() as con:
            if con is None:
                return None
            found = con.execute(
                "SELECT max(snapshot_date) FROM runs WHERE graph = ? "
                "AND (CAST(? AS VARCHAR) IS NULL OR config_hash = ?)",
                [graph, config_hash, config_hash]).fetchall()
            return found[0][0]

    def max_novel_index(self, graph: str, before_date: dt.date | str | None = None,
                        exclude_run_id: str | None = None) -> int:
        """The largest ``n`` of the graph's ``<graph>:novel:<n>`` lineage ids (0 when none).

        ``before_date`` counts only runs of earlier snapshots, ``exclude_run_id`` leaves out one
        run. A nightly run passes ``before_date=<its snapshot date>`` (together with the
        :meth:`previous_run` of that date): a rerun or a backfill of a date then hands out the
        same new ids as the first time, so republishing it leaves identical rows."""
        prefix = f"{graph}:novel:"
        with self._reader() as con:
            if con is None:
                return 0
            found = con.execute(
                "SELECT max(TRY_CAST(substr(lineage_id, length(?) + 1) AS BIGINT)) "
                "FROM class_lineage WHERE graph = ? AND starts_with(lineage_id, ?) "
                "AND (CAST(? AS DATE) IS NULL OR snapshot_date < ?) "
                "AND (CAST(? AS VARCHAR) IS NULL OR run_id <> ?)",
                [prefix, graph, prefix, as_date(before_date), as_date(before_date),
                 exclude_run_id, exclude_run_id]).fetchall()
            return int(found[0][0] or 0)

    @staticmethod
    def answer_before(con, graph: str, day: dt.date, config_hash: str | None = None
                      ) -> tuple[str, dt.date] | None:
        """``(run_id, snapshot_date)`` of the latest published answer of ``graph`` before ``day``
        (of that configuration when given) that the champion gate did not find degraded, on the
        open connection ``con``; None when there is none."""
        found = con.execute(
            "SELECT run_id, snapshot_date FROM runs WHERE graph = ? AND snapshot_date < ? "
            f"AND (CAST(? AS VARCHAR) IS NULL OR config_hash = ?) AND {ANSWER_RUN} "
            "ORDER BY snapshot_date DESC, published_at DESC, run_id DESC LIMIT 1",
            [graph, day, config_hash, config_hash]).fetchall()
        return tuple(found[0]) if found else None

    def previous_run(self, graph: str, before_date: dt.date | str,
                     config_hash: str | None = None, *,
                     with_members: bool = True) -> PreviousClasses | None:
        """The latest published run of ``graph`` with a snapshot date before ``before_date`` (of
        that configuration when given) that the champion gate did not find degraded (lineage
        continues from the last answer analysts saw), as
        :class:`tasks.warehouse.lineage.PreviousClasses`:
        member node ids per class key, lineage ids, known class names, first-seen dates. None if
        there is no such run.

        The member lists hold one Python string per node: for small graphs and inspection.
        ``with_members=False`` leaves ``members`` empty (``{}``, to be filled before lineage);
        :func:`tasks.publishing.publish` does so and takes the members from :meth:`node_pairs`."""
        day = as_date(before_date)
        with self._reader() as con:
            if con is None:
                return None
            found = self.answer_before(con, graph, day, config_hash)
            if found is None:
                return None
            run_id, prev_date = found
            classes = con.execute(
                "SELECT c.class_key, c.lineage_id, c.class_name, l.first_seen, l.status "
                "FROM classes c "
                "LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id "
                "WHERE c.run_id = ? ORDER BY c.class_key", [run_id]).fetchall()
            if not with_members:
                return PreviousClasses(
                    members={}, lineage={int(k): lin for k, lin, *_ in classes},
                    names={int(k): name for k, _, name, *_ in classes},
                    first_seen={int(k): first for k, _, _, first, _ in classes
                                if first is not None},
                    statuses={int(k): status for k, *_, status in classes if status is not None},
                    snapshot_date=prev_date, run_id=run_id)
            members = con.sql(
                "SELECT class_key, node_id FROM node_assignments WHERE run_id = ? "
                "ORDER BY class_key, node_id", params=[run_id]).to_arrow_table()
        keys = members["class_key"].to_numpy()
        nodes = members["node_id"].to_numpy(zero_copy_only=False)
        uniq, starts = np.unique(keys, return_index=True)
        bounds = list(starts) + [len(keys)]
        grouped = {int(k): nodes[bounds[i]:bounds[i + 1]].tolist() for i, k in enumerate(uniq)}
        return PreviousClasses(
            members={int(k): grouped.get(int(k), []) for k, *_ in classes},
            lineage={int(k): lin for k, lin, *_ in classes},
            names={int(k): name for k, _, name, *_ in classes},
            first_seen={int(k): first for k, _, _, first, _ in classes if first is not None},
            statuses={int(k): status for k, *_, status in classes if status is not None},
            snapshot_date=prev_date, run_id=run_id)

    def known_last(self, graph: str, before_date: dt.date | str,
                   node_ids) -> np.ndarray | None:
        """For each of ``node_ids`` (tonight's, an Arrow array), whether the latest published
        answer of ``graph`` before ``before_date`` (the run :meth:`previous_run` continues from)
        put it in a known class (its ``class_key``'s class is not novel; a candidate's nodes
        published under their known class, ``ORAL_CANDIDATES_NAMED``, sit in a novel class); a
        node it did not have is not.
        None when there is no such run (the ``+lastsplit`` answer step is then skipped)."""
        day = as_date(before_date)
        with self._reader() as con:
            if con is None:
                return None
            found = self.answer_before(con, graph, day)
            if found is None:
                return None
            tonight = pa.table({"node_id": pa.array(node_ids).cast(pa.string()),
                                "row": pa.array(np.arange(len(node_ids), dtype=np.int64))})
            con.register("_oral_tonight", tonight)
            try:
                rows = con.execute(
                    "SELECT t.row FROM _oral_tonight t JOIN node_assignments a "
                    "ON a.node_id = t.node_id JOIN classes c ON c.run_id = a.run_id "
                    "AND c.class_key = a.class_key WHERE a.run_id = ? AND NOT c.is_novel "
                    "AND a.class_key >= 0", [found[0]]).fetchnumpy()
            finally:
                con.unregister("_oral_tonight")
        known = np.zeros(len(node_ids), dtype=bool)
        known[np.asarray(rows["row"], dtype=np.int64)] = True
        return known

    def node_pairs(self, run_id: str, assignments: pa.Table | str | os.PathLike
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Both runs' classes of every node, for lineage without a Python string per node.

        ``run_id``: a published run (the previous one); ``assignments``: tonight's rows (an
        Arrow table or a Parquet file, as for :meth:`publish_run`; ``node_id`` and ``class_key``
        are read). One full outer join on the node id in DuckDB (streamed from the file, its
        hash table in DuckDB's own memory) gives, per distinct node of either run, the int64
        arrays ``(previous_key, current_key)``: the node's class key in the published run and
        in ``assignments``, :data:`NO_CLASS` where the node is not in that run (or has a null
        class key). Row ``i`` of both arrays is one node, so ``i`` can stand for its id."""
        source = AssignmentSource.of(assignments, columns=("node_id", "class_key"))
        with contextlib.ExitStack() as stack:
            con = stack.enter_context(self._connection(read_only=True))
            if not self._has_schema(con):
                raise WarehouseError(f"no warehouse schema in {self.path}: run {run_id} was "
                                     f"never published")
            stack.enter_context(source.registered(con))
            pairs = con.execute(
                "SELECT coalesce(CAST(p.class_key AS BIGINT), ?) AS previous_key, "
                "coalesce(CAST(c.class_key AS BIGINT), ?) AS current_key "
                "FROM (SELECT node_id, class_key FROM node_assignments WHERE run_id = ?) p "
                "FULL OUTER JOIN (SELECT CAST(a.node_id AS VARCHAR) AS node_id, a.class_key "
                "FROM _oral_assignments a) c ON p.node_id = c.node_id",
                [NO_CLASS, NO_CLASS, run_id]).fetchnumpy()
        return (np.asarray(pairs["previous_key"], dtype=np.int64),
                np.asarray(pairs["current_key"], dtype=np.int64))
