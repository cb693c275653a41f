"""An index of the Data Docs site that needs no network (issue 62).

Great Expectations' Data Docs index lists its validation results with scripts loaded from public
CDNs (jQuery, Bootstrap Table): offline the page is unstyled and its list of results is empty,
although each result page holds its expectations' table as HTML. After each build
(:func:`data_contracts.suites.build_data_docs`) this module writes ``offline.html`` beside GX's
``index.html``: the latest validation results read from the context's result store (graph and
snapshot, suite, status, expectations met), each linked to its Data Docs page, in one
self-contained page (no script, its style inline). Standard library only.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

#: the offline index's file name, beside GX's ``index.html`` in the local site
OFFLINE_INDEX = "offline.html"
#: where GX keeps the validation results and the local site, under the context's root
RESULTS_DIR = Path("uncommitted") / "validations"
SITE_DIR = Path("uncommitted") / "data_docs" / "local_site"

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}
th{background:#f4f4f4}.ok{color:#1a7f37}.bad{color:#b00020;font-weight:600}
.muted{color:#666}"""


def result_rows(gx_root: Path, limit: int) -> list[dict]:
    """The latest ``limit`` validation results under ``gx_root`` (the context's root, holding
    ``uncommitted/validations``), newest first: ``run_name`` (``<graph>.snapshot=<date>``),
    ``run_time``, ``suite``, ``success``, ``met``, ``evaluated`` and ``page`` (the result's
    Data Docs page, relative to the local site). A result file that cannot be read is listed
    as unreadable rather than dropped."""
    store = Path(gx_root) / RESULTS_DIR
    if not store.is_dir():
        return []
    found = []
    for path in store.rglob("*.json"):
        rel = path.relative_to(store)
        if len(rel.parts) < 3:  # <suite parts...>/<run name>/<run time>/<batch>.json
            continue
        found.append((rel.parts[-2], rel))
    rows = []
    for run_time, rel in sorted(found, key=lambda item: item[0], reverse=True)[:limit]:
        row = {"run_name": rel.parts[-3], "run_time": run_time,
               "suite": ".".join(rel.parts[:-3]), "page": str(Path("validations")
                                                              / rel.with_suffix(".html"))}
        try:
            result = json.loads((store / rel).read_text())
            stats = result.get("statistics") or {}
            row |= {"suite": result.get("suite_name") or row["suite"],
                    "success": bool(result.get("success")),
                    "met": stats.get("successful_expectations"),
                    "evaluated": stats.get("evaluated_expectations")}
        except (OSError, ValueError) as err:
            row |= {"success": None, "met": None, "evaluated": None,
                    "error": f"unreadable: {err}"}
        rows.append(row)
    return rows


def readable_time(run_time: str) -> str:
    """GX's run time folder name (``20261206T052918.594587Z``) as ``2026-12-06 05:29:18 UTC``;
    anything else as it is."""
    t = run_time
    if len(t) < 15 or t[8] != "T":
        return t
    return f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[9:11]}:{t[11:13]}:{t[13:15]} UTC"


def offline_index_path(gx_root: Path) -> Path:
    """Where :func:`write_offline_index` writes the page for the context under ``gx_root``."""
    return Path(gx_root) / SITE_DIR / OFFLINE_INDEX


def offline_index(rows: list[dict]) -> str:
    """The page listing ``rows`` (:func:`result_rows`)."""
    def cell(text) -> str:
        return f"<td>{html.escape(str(text))}</td>"

    lines = []
    for r in rows:
        status = ("<td class='bad'>unreadable</td>" if r["success"] is None else
                  "<td class='ok'>passed</td>" if r["success"] else "<td class='bad'>failed</td>")
        met = "" if r["evaluated"] is None else f"{r['met']} of {r['evaluated']}"
        when = readable_time(r["run_time"])
        link = f"<a href='{html.escape(r['page'], quote=True)}'>{html.escape(r['suite'])}</a>"
        lines.append(f"<tr>{cell(r['run_name'])}{cell(when)}<td>{link}</td>{status}"
                     f"{cell(met or r.get('error', ''))}</tr>")
    body = ("\n".join(lines)
            or "<tr><td colspan='5' class='muted'>no validation result yet</td></tr>")
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<title>Data Docs: validation results</title><style>{STYLE}</style></head><body>\n"
            f"<h1>Validation results</h1>\n<p class='muted'>The latest {len(rows)} results of "
            "this state's data contracts, newest first; each links to its Great Expectations "
            "page (which loads its styles from the internet). GX's own "
            "<a href='index.html'>index</a> needs the internet to list them.</p>\n"
            "<table><thead><tr><th>graph and snapshot</th><th>run time</th><th>suite</th>"
            f"<th>status</th><th>expectations met</th></tr></thead><tbody>\n{body}\n"
            "</tbody></table>\n</body></html>\n")


def write_offline_index(gx_root: Path, limit: int) -> Path:
    """Write :data:`OFFLINE_INDEX` into the local site under ``gx_root``; returns its path."""
    path = offline_index_path(gx_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(offline_index(result_rows(gx_root, limit)))
    tmp.replace(path)
    return path
