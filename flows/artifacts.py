"""What a night leaves in Prefect's UI: a table of its classes, links to its MLflow run, its
contract report and the graph's HTML report, or, for a rejected snapshot, the broken rules."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_link_artifact, create_table_artifact

from flows.settings import Settings
from tasks.scoring import scores_text


def as_link(path_or_uri) -> str:
    """A clickable link: URIs as they are, local paths as ``file://`` URIs."""
    text = str(path_or_uri)
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def contract_failed(graph, path, report, report_json, report_html) -> None:
    """A rejected snapshot: a table artifact of the broken rules and a link artifact to the
    contract report (self-contained HTML; GX's Data Docs need the internet to render and are
    not linked)."""
    key = artifact_key(graph)
    rows = [{"file": f.file, "rule": f.rule, "severity": f.severity, "count": f.count,
             "message": f.message} for f in report.findings]
    create_table_artifact(rows, key=key, description=f"{graph}: snapshot `{path}` rejected by its "
                          "data contract; nothing was trained or published")
    create_link_artifact(as_link(report_html), link_text=f"{graph}: contract report",
                         key=key + "-contract", description=f"JSON: {as_link(report_json)}")


def mlflow_link(tracking_cfg, mlflow_run_id: str) -> str | None:
    """The MLflow run in the MLflow UI (an ``http(s)`` tracking server), else its artifact
    folder (a local store); None when it cannot be read."""
    from tasks.registry import client

    try:
        info = client(tracking_cfg).get_run(mlflow_run_id).info
    except Exception:  # noqa: BLE001 - a missing link is no failed night
        return None
    uri = str(tracking_cfg.uri or "")
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/#/experiments/{info.experiment_id}/runs/{mlflow_run_id}"
    return as_link(info.artifact_uri)


def night_summary(graph, day, classes, published, tracked, scores, settings, report_html,
                      summary=None, tracking_cfg=None) -> None:
    """A published night: a table artifact of its classes (key ``oral-<graph>``) and link
    artifacts to the MLflow run and the contract report."""
    lineage, statuses = published["lineage"], published["statuses"]
    if summary and summary.get("new_tonight") is not None:  # the emerged_classes rule
        emerged = list(summary["new_tonight"])
    else:
        emerged = [c for c in classes
                   if statuses.get(lineage[c["class_key"]]) == "emerged" and c["is_novel"]]
    rows = []
    for c in sorted(classes, key=lambda c: -c["size"]):
        lid = lineage[c["class_key"]]
        rows.append({"lineage_id": lid, "name": c["class_name"] or "", "novel": bool(c["is_novel"]),
                     "size": int(c["size"]), "status": statuses.get(lid, ""),
                     "purity": None if c["purity"] is None else round(float(c["purity"]), 3),
                     "top_features": ", ".join(str(f["feature"]) for f in c["top_features"][:3])})
    parts = [f"{graph} on {day}: {len(classes)} classes, {sum(c['is_novel'] for c in classes)} "
             f"novel, {len(emerged)} novel new tonight."]
    if summary:
        parts.append(f"Training: {summary['start']} start ({summary['start_reason']}), "
                     f"{summary['epochs']} epochs, {summary['train_seconds']:.1f} s"
                     + ("." if summary.get("chosen_settings", "none") == "none" else
                        f", settings chosen by oral choose: {summary['chosen_settings']}."))
    if scores:
        parts.append(f"Scored against truth: {scores_text(scores, ', ')}.")
    parts.append(f"Model {tracked['model_name']} version {tracked['model_version']} (champion: "
                 f"{tracked.get('promoted')}); DuckDB run {published['run_id']}.")
    key = artifact_key(graph)
    create_table_artifact(rows, key=key, description=" ".join(parts))
    link = mlflow_link(tracking_cfg, tracked["mlflow_run_id"]) if tracking_cfg else None
    if link:
        create_link_artifact(link, link_text=f"{graph}: MLflow run {tracked['mlflow_run_id'][:12]}",
                             key=key + "-mlflow", description=f"model {tracked['model_name']} "
                             f"version {tracked['model_version']}, tracking store "
                             f"{tracked.get('tracking_uri', settings.tracking_uri)}")
    create_link_artifact(as_link(report_html), link_text=f"{graph}: contract report",
                         key=key + "-contract", description="the snapshot's validation report")


def graph_report(graph: str, settings: Settings, tracking_uri: str | None) -> None:
    """Rewrite the graph's HTML report (:mod:`tasks.report`, as ``oral report`` does) and link
    it as an artifact; a report that cannot be written is a warning, never a failed night."""
    import os

    from tasks.report import NoWarehouse, report

    try:
        path = report(settings.warehouse_path, graph, settings.reports_dir / graph / "report.html",
                      contract_dir=settings.reports_dir / graph, tracking_uri=tracking_uri,
                      prefect_api_url=os.environ.get("PREFECT_API_URL"),
                      state_dir=settings.state_dir)
    except NoWarehouse:  # a first night rejected by its contract: nothing to show yet
        return
    except Exception as err:  # noqa: BLE001 - the night is published; the page can be redone
        get_run_logger().warning("the HTML report of %s was not written (%s: %s); `oral report "
                                 "--graph %s` writes it", graph, type(err).__name__, err, graph)
        return
    create_link_artifact(path.resolve().as_uri(), link_text=f"{graph}: classes over nights",
                         key=artifact_key(graph) + "-report", description="HTML report (oral report)")


def artifact_key(graph: str) -> str:
    """Prefect artifact keys allow lower-case letters, digits and dashes only."""
    import re
    return "oral-" + (re.sub(r"[^a-z0-9-]", "-", graph.lower()) or "graph")
