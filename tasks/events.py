"""Prefect events of the nightly flow (``prefect.events.emit_event``), for automations.

| event | when | resource id | labels / payload |
|---|---|---|---|
| ``oral.class.emerged`` | a class is published: a novel class the night it is confirmed (its second night, ``ORAL_CONFIRM_NOVEL``), every known class on a graph's first night | ``oral.class.<lineage id>`` | ``oral.graph``, ``oral.novel``; payload: run id, date, size, name |
| ``oral.class.merged`` | a class was absorbed by another (``merged_into``) | same | same |
| ``oral.class.vanished`` | a class of the previous night has no successor | same | same |
| ``oral.contract.failed`` | a snapshot broke its data contract (nothing was trained) | ``oral.snapshot.<graph>.<date>`` | ``oral.graph``; payload: errors, rules, report path |

Each event is related to the graph (``oral.graph.<graph>``); Prefect adds the flow run and
its flow as related resources. Emitting never fails a night: an events client that cannot send
logs a warning. docs/operators.md ("Automations on the pipeline's events") shows one on these events.
"""
from __future__ import annotations

import datetime as dt
import logging

log = logging.getLogger(__name__)

#: the lineage statuses that are events (the size statuses, ``grown``, ``shrunk``,
#: ``persisting``, ``split``, and a novel class's ``candidate`` night and ``dismissed`` end
#: are not)
CLASS_EVENTS = ("emerged", "merged", "vanished")


def _emit(event: str, resource: dict, related: list[dict], payload: dict):
    from prefect.events import emit_event

    try:
        return emit_event(event=event, resource=resource, related=related, payload=payload)
    except Exception as err:  # noqa: BLE001 - an event is a notification, never a failed night
        log.warning("event %s for %s not sent: %s: %s", event, resource.get("prefect.resource.id"),
                    type(err).__name__, err)
        return None


def _graph(graph: str) -> dict:
    return {"prefect.resource.id": f"oral.graph.{graph}", "prefect.resource.role": "graph",
            "prefect.resource.name": graph}


def class_events(graph: str, snapshot_date: dt.date | str, run_id: str, rows,
                 classes: list[dict]) -> list[str]:
    """One event per lineage row (:class:`tasks.warehouse.lineage.LineageRow`) whose status is in
    :data:`CLASS_EVENTS`. Returns the event names sent, in order."""
    by_lineage = {c.get("lineage_id"): c for c in classes}
    sent = []
    for row in rows:
        if row.status not in CLASS_EVENTS:
            continue
        cls = by_lineage.get(row.lineage_id, {})
        novel = ":novel:" in str(row.lineage_id)
        resource = {"prefect.resource.id": f"oral.class.{row.lineage_id}",
                    "prefect.resource.name": str(cls.get("class_name") or row.lineage_id),
                    "oral.graph": graph, "oral.novel": str(novel).lower()}
        payload = {"graph": graph, "snapshot_date": str(snapshot_date), "run_id": run_id,
                   "lineage_id": row.lineage_id, "status": row.status, "size": int(row.size),
                   "class_name": cls.get("class_name"), "is_novel": novel}
        if getattr(row, "merged_into", None):
            payload["merged_into"] = row.merged_into
        name = f"oral.class.{row.status}"
        _emit(name, resource, [_graph(graph)], payload)
        sent.append(name)
    return sent


def contract_failed(graph: str, snapshot_path: str, report, report_html: str) -> str:
    """The ``oral.contract.failed`` event of a rejected snapshot."""
    from pathlib import Path

    day = Path(str(snapshot_path)).name.replace("snapshot=", "")
    resource = {"prefect.resource.id": f"oral.snapshot.{graph}.{day}",
                "prefect.resource.name": f"{graph} {day}", "oral.graph": graph}
    errors = list(report.errors)
    payload = {"graph": graph, "snapshot": str(snapshot_path), "errors": len(errors),
               "rules": sorted({f.rule for f in errors}), "report": str(report_html)}
    _emit("oral.contract.failed", resource, [_graph(graph)], payload)
    return "oral.contract.failed"
