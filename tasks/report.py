"""The analysts' report: one self-contained HTML page per graph (``oral report``, and the
nightly flow's link artifact).

What the page shows, all read from the DuckDB warehouse (read-only) and the graph's contract
reports under ``<state>/reports/<graph>/``:

- class sizes over nights: an inline SVG line chart, one line per lineage id, named by its
  ``class_labels`` label, else the known class name, else the lineage id; and the same numbers
  as a table (lineage id by night, with each night's status);
- per night, newest first: the run (nodes, classes, scores, training), links to its MLflow run
  and model version (and Prefect flow run), the contract summary of its snapshot (errors,
  warnings, counts; a link to the contract's own HTML report), the classes that emerged with
  their exemplars and top features, and what merged, split, vanished, grew or shrank (from
  ``class_lineage``); every class of the night in a collapsed table;
- snapshots whose contract failed (or that were validated but never published): they have no
  run, only a contract report.

The page is one file: no script, no stylesheet or font from elsewhere, the chart is SVG written
here, and a Content-Security-Policy forbids scripts and remote loads even if a value slipped
through. Every string from the data (labels, class names, feature names, node ids, messages) is
HTML-escaped (:func:`html.escape`). Links point to the MLflow UI (the tracking server itself when
the tracking URI is ``http(s)``, else ``mlflow_ui``, default ``http://127.0.0.1:5000``, the
address of ``mlflow ui``) and to local files (contract reports: relative to the page when both
are in the state folder, so the folder can be sent on as a whole; else ``file://``); they are
links, not loads.

A night is a snapshot date; when several configurations ran on one date, the latest published
run counts (the rule of the ``class_timeline`` view).

Why here (``tasks/``): the module reads the warehouse (its own queries, over the views and tables
of :mod:`tasks.warehouse`) and is a plain function that both the CLI (:mod:`cli.report`)
and the nightly flow call; ``tasks/`` holds the pipeline's plain functions and the warehouse.
"""
from __future__ import annotations

import datetime as dt
import html
import json
import logging
import math
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.registry.config import safe_uri
from tasks.warehouse.lineage import new_tonight

log = logging.getLogger(__name__)

DEFAULT_MLFLOW_UI = "http://127.0.0.1:5000"
DEFAULT_PREFECT_UI = "http://127.0.0.1:4200"
#: statuses of a lineage row whose class no longer exists on that night (``class_key`` NULL)
ENDINGS = ("merged", "split", "vanished", "dismissed")
#: categorical colours for the chart's lines (cycled, with dash patterns after the first round)
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#d62728"]
DASHES = ["", "6 3", "2 3", "8 3 2 3"]
EXEMPLARS_SHOWN = 5
FEATURES_SHOWN = 5


class ReportError(RuntimeError):
    """The report cannot be written as asked; the message says why (one line)."""


class NoWarehouse(ReportError):
    """There is no warehouse file (or no schema in it) yet."""


class UnknownGraph(ReportError, LookupError):
    """The warehouse has no published run of the graph (and no contract report names it)."""


def e(value: Any) -> str:
    """Any value as escaped HTML text (None as empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


# ------------------------------------------------------------------------------------- data
@dataclass
class Night:
    """One snapshot date of the graph: its run (the latest published of that date), classes,
    lineage rows and contract report."""

    date: dt.date
    run: dict
    classes: list[dict] = field(default_factory=list)
    lineage: list[dict] = field(default_factory=list)
    snapshot: dict | None = None
    contract: dict | None = None
    contract_json: Path | None = None
    other_runs: int = 0

    @property
    def held_back(self) -> bool:
        """Whether the champion gate found this night's model degraded: the night is shown for
        the record, but its answer stays the last night the gate passed (as ``latest_*``,
        ``emerged_classes`` and ``class_timeline`` say), so its classes and lineage rows stay
        out of the timeline, the chart and the counts."""
        return self.run.get("gate_status") == "degraded"


@dataclass
class ReportData:
    graph: str
    nights: list[Night]
    timeline: list[dict]
    unpublished: list[tuple[dict, Path]]  # contract reports with no run (rejected, or not published)
    warehouse_path: str
    tracking_uri: str | None
    contract_dir: Path | None
    graphs: list[str] = field(default_factory=list)
    #: where the page is written and the state folder it belongs to (set by :func:`render`):
    #: a local file under the state folder is linked relative to the page when the page is there
    #: too, so the folder can be moved, copied or sent on as a whole; else by its file:// URI
    page_dir: Path | None = None
    state_dir: Path | None = None


def _rows(con, sql: str, params: list) -> list[dict]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _open(warehouse_path) -> tuple[Any, Any]:
    """A read-only connection to the warehouse (``Warehouse.connect``: waits while another
    process writes), after bringing an older schema up to this code's (what every analyst read
    does, see ``Warehouse.query``)."""
    from tasks.warehouse import SCHEMA_VERSION, Warehouse, WarehouseError

    path = Path(warehouse_path)
    if not path.is_file():
        raise NoWarehouse(f"no warehouse at {path}: run `oral run` or `oral demo` first")
    wh = Warehouse(path)
    version = wh.schema_version()
    if version is None:
        raise NoWarehouse(f"no warehouse schema in {path}: nothing has been published yet")
    if version < SCHEMA_VERSION:
        try:
            wh.ensure_schema()
        except WarehouseError as err:
            raise ReportError(f"{path} has schema version {version} and could not be brought to "
                              f"{SCHEMA_VERSION}: {' '.join(str(err).split())}") from err
    return wh, wh.connect(read_only=True)


def load(warehouse_path, graph: str, contract_dir: Path | None = None,
         tracking_uri: str | None = None) -> ReportData:
    """Everything the page shows for ``graph``, read in one read-only connection."""
    _, con = _open(warehouse_path)
    try:
        con.execute("BEGIN TRANSACTION")  # one consistent view of all tables
        graphs = [g for (g,) in con.execute("SELECT DISTINCT graph FROM runs ORDER BY graph").fetchall()]
        # per date the run that answers it (the latest the gate passed), else its degraded run
        day_runs = ("SELECT * FROM runs WHERE graph = ? QUALIFY row_number() OVER ("
                    "PARTITION BY snapshot_date ORDER BY gate_status IS NOT DISTINCT FROM "
                    "'degraded', published_at DESC, run_id DESC) = 1")
        runs = _rows(con, day_runs + " ORDER BY snapshot_date", [graph])
        per_date = dict(con.execute("SELECT snapshot_date, count(*) FROM runs WHERE graph = ? "
                                    "GROUP BY snapshot_date", [graph]).fetchall())
        classes = _rows(con, f"""
            WITH night AS ({day_runs})
            SELECT c.*, lb.label, l.status, l.previous_size, l.parents, l.first_seen
            FROM classes c JOIN night n ON n.run_id = c.run_id
            LEFT JOIN class_lineage l ON l.run_id = c.run_id AND l.lineage_id = c.lineage_id
            LEFT JOIN latest_labels lb ON lb.graph = ? AND lb.lineage_id = c.lineage_id
            ORDER BY c.size DESC, c.class_key""", [graph, graph])
        lineage = _rows(con, f"""
            WITH night AS ({day_runs})
            SELECT l.*, lb.label, c.class_name, c.is_novel FROM class_lineage l JOIN night n ON n.run_id = l.run_id
            LEFT JOIN classes c ON c.run_id = l.run_id AND c.class_key = l.class_key
            LEFT JOIN latest_labels lb ON lb.graph = l.graph AND lb.lineage_id = l.lineage_id
            ORDER BY l.snapshot_date, l.lineage_id""", [graph])
        labels = dict(con.execute("SELECT lineage_id, label FROM latest_labels WHERE graph = ?",
                                  [graph]).fetchall())
        snapshots = _rows(con, "SELECT * FROM snapshots WHERE graph = ?", [graph])
        con.execute("ROLLBACK")
    finally:
        con.close()
    by_run: dict[str, Night] = {}
    nights = []
    for run in runs:
        night = Night(run["snapshot_date"], run, other_runs=per_date.get(run["snapshot_date"], 1) - 1)
        night.snapshot = next((s for s in snapshots if s["snapshot_date"] == night.date
                               and s["content_hash"] == run["content_hash"]), None)
        by_run[run["run_id"]] = night
        nights.append(night)
    for c in classes:
        by_run[c["run_id"]].classes.append(c)
    for row in lineage:
        by_run[row["run_id"]].lineage.append(row)
    # a name for every lineage id: its label, else the known class name it last had, else the id
    names: dict[str, str] = {}
    for row in lineage:
        if row.get("class_name"):
            names[row["lineage_id"]] = row["class_name"]
    from tasks.warehouse.lineage import KNOWN_PREFIX

    timeline = [dict(row, label=labels.get(row["lineage_id"]),
                     class_name=row.get("class_name") or names.get(row["lineage_id"]),
                     is_novel=not row["lineage_id"].startswith(KNOWN_PREFIX))
                for row in lineage if not by_run[row["run_id"]].held_back]
    unpublished = []
    if contract_dir is not None:
        found = _contract_reports(Path(contract_dir))
        for night in nights:
            key = (night.date.isoformat(), night.run["content_hash"])
            if key in found:
                night.contract, night.contract_json = found.pop(key)
        unpublished = sorted(found.values(), key=lambda r: (str(r[0].get("snapshot_date")), str(r[1])))
    if not nights and not unpublished:
        known = ", ".join(graphs) if graphs else "none yet"
        raise UnknownGraph(f"no published run of graph {graph!r} in {warehouse_path} "
                           f"(graphs with runs: {known})")
    return ReportData(graph, nights, timeline, unpublished, str(warehouse_path), tracking_uri,
                      Path(contract_dir) if contract_dir is not None else None, graphs)


def _contract_reports(folder: Path) -> dict[tuple[str, str], tuple[dict, Path]]:
    """The graph's contract reports (``snapshot-<date>-<hash>.json``, written by
    :func:`tasks.intake.validate`) by ``(snapshot date, content hash)``; unreadable files are
    skipped with a log line."""
    out: dict[tuple[str, str], tuple[dict, Path]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("snapshot-*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.warning("skipping contract report %s: %s", path, err)
            continue
        if not isinstance(doc, dict):
            continue
        key = (str(doc.get("snapshot_date")), str(doc.get("content_hash")))
        if key in out and out[key][1].stat().st_mtime >= path.stat().st_mtime:
            continue
        out[key] = (doc, path)
    return out


# ------------------------------------------------------------------------------------ links
def _strip_credentials(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def default_tracking_uri(state_dir) -> str:
    """The embedded store of a state folder, spelled as :attr:`tasks.registry.TrackingConfig.uri`
    spells it."""
    return f"sqlite:///{urllib.parse.quote((Path(state_dir).absolute() / 'mlflow.db').as_posix())}"


def mlflow_ui_base(tracking_uri: str | None, mlflow_ui: str | None = None) -> str:
    """Where the MLflow UI answers: ``mlflow_ui`` when given, the tracking server for an
    ``http(s)`` tracking URI, else the address ``mlflow ui`` serves on."""
    if mlflow_ui:
        return mlflow_ui.rstrip("/")
    if tracking_uri and urllib.parse.urlsplit(tracking_uri).scheme in ("http", "https"):
        return _strip_credentials(tracking_uri)
    return DEFAULT_MLFLOW_UI


def prefect_ui_base(prefect_api_url: str | None) -> str:
    if prefect_api_url:
        base = _strip_credentials(prefect_api_url)
        return base[:-4] if base.endswith("/api") else base
    return DEFAULT_PREFECT_UI


def prefect_note(prefect_api_url: str | None, prefect_base: str, state_dir: Path | None) -> str:
    """Where the page's Prefect links lead. Without ``PREFECT_API_URL`` each command ran on a
    temporary server that stopped with it; its runs stay in the state folder's Prefect database
    (``PREFECT_HOME``), which ``prefect server start`` serves again at the default address
    (issue 62: the links pointed at a stopped server without a word)."""
    if prefect_api_url:
        return f"Prefect links open the Prefect UI at <code>{e(prefect_base)}</code>."
    home = (Path(state_dir) / "prefect").as_posix() if state_dir is not None else "<state>/prefect"
    return (f"The nights ran on a temporary Prefect server that stopped with each command; their "
            f"runs are kept in the state folder's Prefect database, which "
            f"<code>PREFECT_HOME={e(home)} prefect server start</code> serves again at "
            f"<code>{e(prefect_base)}</code>, where the Prefect links point (or set "
            f"<code>PREFECT_API_URL</code> to a Prefect server).")


def _q(value) -> str:
    return urllib.parse.quote(str(value), safe="")


def file_href(target: Path, page_dir: Path | None, state_dir: Path | None) -> str:
    """The link to a local file from a page in ``page_dir``: a relative URL when both lie under
    ``state_dir`` (the state folder), else the file's absolute ``file://`` URI."""
    target = Path(target).resolve()
    if page_dir is not None and state_dir is not None:
        root, here = Path(state_dir).resolve(), Path(page_dir).resolve()
        if target.is_relative_to(root) and here.is_relative_to(root):
            return urllib.parse.quote(Path(os.path.relpath(target, here)).as_posix())
    return target.as_uri()


def _link(href: str, text: str, title: str | None = None) -> str:
    t = f' title="{e(title)}"' if title else ""
    return f'<a href="{e(href)}"{t}>{e(text)}</a>'


# ------------------------------------------------------------------------------------ chart
def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):  # a fifth of each is a round grid step
        if value <= step * exp:
            return step * exp
    return 10 * exp


def _style(i: int) -> tuple[str, str]:
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def name_of(row: dict) -> str:
    """A class's display name: its label, else its known class name, else its lineage id."""
    return row.get("label") or row.get("class_name") or row["lineage_id"]


def chart_svg(timeline: list[dict], order: list[str]) -> str:
    """Class size over nights: one polyline per lineage id (in ``order``, whose index picks the
    colour), a point per night with a tooltip; an emergence is a larger point, an ending (merged,
    split, vanished: size 0) a hollow one."""
    width, height = 960, 360
    left, right, top, bottom = 64, 48, 16, 48
    dates = sorted({r["snapshot_date"] for r in timeline})
    if not dates:
        return ""
    ymax = _nice_max(max((r["size"] or 0) for r in timeline))
    d0, d1 = dates[0].toordinal(), dates[-1].toordinal()
    span = max(d1 - d0, 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(day: dt.date) -> float:
        if d1 == d0:
            return left + plot_w / 2
        return left + plot_w * (day.toordinal() - d0) / span

    def y(size: float) -> float:
        return top + plot_h * (1 - (size or 0) / ymax)

    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg" aria-label="class sizes over nights">']
    for i in range(6):  # horizontal grid and y labels
        v = ymax * i / 5
        yy = y(v)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" '
                   f'class="grid"/>')
        out.append(f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end" class="tick">'
                   f'{e(f"{v:g}")}</text>')
    step = max(1, math.ceil(len(dates) / 10))
    for k, day in enumerate(dates):  # x ticks: at most ten date labels
        xx = x(day)
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + plot_h}" '
                   f'y2="{top + plot_h + 5}" class="axis"/>')
        if k % step == 0 or k == len(dates) - 1:
            out.append(f'<text x="{xx:.1f}" y="{top + plot_h + 20}" text-anchor="middle" '
                       f'class="tick">{e(day.isoformat())}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" '
               f'class="axis"/>')
    out.append(f'<text x="14" y="{top + plot_h / 2:.0f}" class="tick" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + plot_h / 2:.0f})">nodes in class</text>')
    by_lineage: dict[str, list[dict]] = {}
    for r in timeline:
        by_lineage.setdefault(r["lineage_id"], []).append(r)
    for i, lid in enumerate(order):
        rows = sorted(by_lineage.get(lid, []), key=lambda r: r["snapshot_date"])
        if not rows:
            continue
        colour, dash = _style(i)
        name = name_of(rows[-1])
        points = " ".join(f"{x(r['snapshot_date']):.1f},{y(r['size']):.1f}" for r in rows)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="series" data-lineage="{e(lid)}"><title>{e(name)} ({e(lid)})</title>')
        if len(rows) > 1:
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                       f'stroke-width="2"{dash_attr}/>')
        for r in rows:
            ended = r["status"] in ENDINGS and r.get("class_key") is None
            radius = 5 if r["status"] == "emerged" else 3.5
            fill = "#fff" if ended else colour
            out.append(f'<circle cx="{x(r["snapshot_date"]):.1f}" cy="{y(r["size"]):.1f}" '
                       f'r="{radius}" fill="{fill}" stroke="{colour}" stroke-width="1.5">'
                       f'<title>{e(name)} ({e(lid)}), {e(r["snapshot_date"].isoformat())}: '
                       f'{e(r["size"])} nodes, {e(r["status"])}</title></circle>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------------------------- page
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
 color:#1d2330;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:20px 28px 60px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #d5d9e0;
 padding-bottom:4px}h3{font-size:16px;margin:0 0 6px}h4{font-size:14px;margin:14px 0 4px}
.muted{color:#5d6677}.small{font-size:12px}code{font:12px/1.3 ui-monospace,"DejaVu Sans Mono",monospace;
 background:#eef0f4;border-radius:3px;padding:1px 4px;word-break:break-all}
section.night{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:14px 18px;margin:14px 0}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border-bottom:1px solid #e4e7ec;
 padding:4px 8px;text-align:left;vertical-align:top}th{background:#f0f2f5;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{width:100%;height:auto;background:#fff;border:1px solid #d5d9e0;border-radius:6px}
.chart .grid{stroke:#e8ebf0}.chart .axis{stroke:#8a93a3}.chart .tick{font-size:12px;fill:#5d6677}
ul.legend{list-style:none;padding:0;margin:8px 0;columns:3;font-size:13px}
ul.legend li{break-inside:avoid;margin:2px 0}
.sw{display:inline-block;width:14px;height:4px;margin:0 6px 3px 0;vertical-align:middle}
.held{border-left:4px solid #b54708;padding:4px 8px;background:#fff4e5}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;margin-right:4px}
.ok{background:#dcf3e3;color:#17663a}.bad{background:#fbe0e0;color:#9b1c1c}.warn{background:#fff1cc;color:#7a5300}
.info{background:#e3ecfa;color:#234a8a}
.scroll{overflow-x:auto}.feat{white-space:nowrap}
nav a{margin-right:10px}details{margin-top:10px}summary{cursor:pointer;color:#234a8a}
.events li{margin:2px 0}
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _num(value, fmt: str = "{:,}") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return e(fmt.format(value))


def _features(feats) -> str:
    if not feats:
        return '<span class="muted">none</span>'
    parts = []
    for f in feats[:FEATURES_SHOWN]:
        lift = f.get("lift")
        mean = f.get("class_mean")
        title = f"lift {lift:.2f}" if lift is not None else "lift unknown"
        if mean is not None:
            title += f", class mean {mean:.3g}"
        shown = e(f.get("name")) + (f" <span class='muted'>×{lift:.2f}</span>" if lift is not None else "")
        parts.append(f'<span class="feat" title="{e(title)}">{shown}</span>')
    return ", ".join(parts)


def _exemplars(ex) -> str:
    if not ex:
        return '<span class="muted">none</span>'
    more = f' <span class="muted">+{len(ex) - EXEMPLARS_SHOWN}</span>' if len(ex) > EXEMPLARS_SHOWN else ""
    return " ".join(f"<code>{e(v)}</code>" for v in ex[:EXEMPLARS_SHOWN]) + more


def _class_name_cell(c: dict) -> str:
    name = name_of(c)
    extra = "" if name == c["lineage_id"] else f'<br><code>{e(c["lineage_id"])}</code>'
    return f"<b>{e(name)}</b>{extra}"


def _classes_table(classes: list[dict], with_status: bool = True) -> str:
    head = ("<tr><th>class</th><th>novel</th><th class='num'>size</th>"
            + ("<th>status</th>" if with_status else "")
            + "<th class='num'>confidence</th><th class='num'>purity</th><th>top features (lift)</th>"
              "<th>exemplars (most confident first)</th></tr>")
    rows = []
    for c in classes:
        purity = _num(c.get("purity"), "{:.2f}")
        if purity and c.get("majority_true_label"):
            purity += f'<br><span class="muted small">{e(c["majority_true_label"])}</span>'
        rows.append(
            f"<tr><td>{_class_name_cell(c)}</td><td>{'yes' if c['is_novel'] else 'no'}</td>"
            f"<td class='num'>{_num(c['size'])}</td>"
            + (f"<td>{e(c.get('status'))}</td>" if with_status else "")
            + f"<td class='num'>{_num(c.get('mean_confidence'), '{:.2f}')}</td>"
            f"<td class='num'>{purity}</td><td>{_features(c.get('top_features'))}</td>"
            f"<td>{_exemplars(c.get('exemplars'))}</td></tr>")
    return f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"


def _contract_html(night: Night, data: ReportData) -> str:
    doc = night.contract
    if doc is None:
        passed = (night.snapshot or {}).get("validation_passed")
        why = ("no contract folder given" if data.contract_dir is None else
               f"no report file in {data.contract_dir}")
        if passed is None:
            return f"<p>Contract: <span class='muted'>unknown ({e(why)})</span></p>"
        badge = "<span class='badge ok'>passed</span>" if passed else "<span class='badge bad'>failed</span>"
        return (f"<p>Contract: {badge}<span class='muted'>(the snapshots table's verdict; "
                f"{e(why)})</span></p>")
    return "<p>Contract: " + _contract_summary(doc, night.contract_json, data) + "</p>"


def _contract_summary(doc: dict, json_path: Path | None, data: ReportData) -> str:
    passed = bool(doc.get("passed"))
    errors, warnings = int(doc.get("errors") or 0), int(doc.get("warnings") or 0)
    parts = ["<span class='badge ok'>passed</span>" if passed else "<span class='badge bad'>failed</span>",
             f"{errors} error(s), "
             + (f"<span class='badge warn'>{warnings} warning(s)</span>" if warnings else "0 warnings")]
    counts = doc.get("counts") or {}
    if isinstance(counts, dict) and counts:
        parts.append("<span class='muted'>" + ", ".join(
            f"{e(k)} {e(v)}" for k, v in counts.items()) + "</span>")
    findings = doc.get("findings") or []
    if findings:
        items = "".join(
            f"<li><b>{e(f.get('severity'))}</b> <code>{e(f.get('file'))}</code> "
            f"{e(f.get('rule'))} ({e(f.get('count'))}): {e(f.get('message'))}</li>"
            for f in findings if isinstance(f, dict))
    else:
        items = ""
    if json_path is not None:
        html_path = json_path.with_suffix(".html")
        target = html_path if html_path.exists() else json_path
        parts.append(_link(file_href(target, data.page_dir, data.state_dir), "contract report",
                           str(target)))
    if items:
        parts.append(f"<ul class='events small'>{items}</ul>")
    return " ".join(parts)


def _events_html(night: Night) -> str:
    """What happened to classes this night besides emerging, from its class_lineage rows."""
    items = []
    for r in night.lineage:
        name, lid, status = name_of(r), r["lineage_id"], r["status"]
        who = f"<b>{e(name)}</b>" + ("" if name == lid else f" <code>{e(lid)}</code>")
        parents = ", ".join(f"<code>{e(p)}</code>" for p in (r.get("parents") or []))
        alive = r.get("class_key") is not None
        if status == "merged" and alive:
            items.append(f"<li><span class='badge info'>merged</span>{who} absorbed {parents} "
                         f"({_num(r.get('previous_size'))} → {_num(r['size'])} nodes)</li>")
        elif status == "merged":
            into = f" into <code>{e(r.get('merged_into'))}</code>" if r.get("merged_into") else ""
            items.append(f"<li><span class='badge info'>merged</span>{who} was absorbed{into}</li>")
        elif status == "split" and alive:
            items.append(f"<li><span class='badge info'>split</span>{who} split off from {parents} "
                         f"({_num(r['size'])} nodes)</li>")
        elif status == "split":
            items.append(f"<li><span class='badge info'>split</span>{who} split into parts "
                         f"(last seen {e(r.get('last_seen'))})</li>")
        elif status == "vanished":
            items.append(f"<li><span class='badge bad'>vanished</span>{who} "
                         f"(last seen {e(r.get('last_seen'))})</li>")
        elif status == "candidate":
            items.append(f"<li><span class='badge muted'>candidate</span>{who} appeared "
                         f"({_num(r['size'])} nodes); it is published as a new class if it is "
                         f"there again the next night</li>")
        elif status == "dismissed":
            items.append(f"<li><span class='badge muted'>dismissed</span>{who}, a candidate, "
                         f"did not come back</li>")
        elif status in ("grown", "shrunk"):
            items.append(f"<li><span class='badge warn'>{e(status)}</span>{who} "
                         f"{_num(r.get('previous_size'))} → {_num(r['size'])} nodes</li>")
        elif r.get("parents") and alive and status != "emerged":
            items.append(f"<li>{who} absorbed {parents}</li>")
    persisting = sum(r["status"] == "persisting" for r in night.lineage)
    if not items:
        return (f"<p class='muted'>No candidates, merges, splits, vanished or resized classes"
                f"{f'; {persisting} persisting' if persisting else ''}.</p>")
    tail = f"<li class='muted'>{persisting} class(es) persisting</li>" if persisting else ""
    return f"<ul class='events'>{''.join(items)}{tail}</ul>"


def _night_html(night: Night, data: ReportData, mlflow_base: str, prefect_base: str) -> str:
    run = night.run
    day = night.date.isoformat()
    novel = sum(bool(c["is_novel"]) for c in night.classes)
    facts = [f"{_num(run.get('num_nodes'))} nodes",
             f"{len(night.classes)} classes ({novel} novel)"]
    scores = run.get("scores")
    scores = dict(scores) if scores is not None else {}
    acc = [(k, run.get(f"acc_{k}") if run.get(f"acc_{k}") is not None else scores.get(k))
           for k in ("all", "known", "novel")]
    if any(v is not None for _, v in acc):
        facts.append("accuracy " + ", ".join(f"{k} {_num(v, '{:.1f}')}%" for k, v in acc if v is not None))
    training = [f"{e(run.get('start_mode'))} start" if run.get("start_mode") else "",
                f"{_num(run.get('epochs'))} epochs" if run.get("epochs") is not None else "",
                f"{_num(run.get('train_seconds'), '{:.1f}')} s" if run.get("train_seconds") is not None else "",
                e(run.get("device")) if run.get("device") else ""]
    training = [t for t in training if t]
    if training:
        facts.append("training " + ", ".join(training))
    links = []
    if run.get("mlflow_run_id"):
        links.append(_link(f"{mlflow_base}/#/runs/{_q(run['mlflow_run_id'])}",
                           f"MLflow run {run['mlflow_run_id'][:12]}", run["mlflow_run_id"]))
    if run.get("model_name") and run.get("model_version"):
        links.append(_link(f"{mlflow_base}/#/models/{_q(run['model_name'])}/versions/"
                           f"{_q(run['model_version'])}",
                           f"model {run['model_name']} v{run['model_version']}"))
    if run.get("prefect_flow_run_id"):
        links.append(_link(f"{prefect_base}/runs/flow-run/{_q(run['prefect_flow_run_id'])}",
                           "Prefect flow run", run["prefect_flow_run_id"]))
    other = (f" <span class='muted small'>({night.other_runs} other run(s) of this date, other "
             f"configurations; the latest published is shown)</span>") if night.other_runs else ""
    emerged = [c for c in night.classes
               if new_tonight(c.get("is_novel"), c.get("status"),
                              c.get("first_seen"), night.date)]
    emerged_html = (_classes_table(emerged, with_status=False) if emerged else
                    "<p class='muted'>No novel class is new this night.</p>")
    if night.held_back:
        emerged_html = ("<p class='held'><b>Held back by the champion gate</b>: "
                        f"{e(run.get('gate_reason') or 'degraded')}. This night's model is not "
                        "the answer: the latest answer stays the last night before it that the "
                        "gate passed, and nothing of this night is new. Its classes are kept "
                        "below for the record.</p>")
        emerged = []
    return (f"<section class='night' id='night-{e(day)}'>"
            f"<h3>{e(day)}{other}</h3>"
            f"<p>{' · '.join(facts)}</p>"
            f"<p>{' · '.join(links) or '<span class=muted>no MLflow run recorded</span>'} · run "
            f"<code title='{e(run['run_id'])}'>{e(run['run_id'][:12])}</code>"
            + (f" · code <code>{e(run.get('code_version'))}</code>" if run.get("code_version") else "")
            + "</p>"
            f"{_contract_html(night, data)}"
            f"<h4>New tonight ({len(emerged)})</h4>{emerged_html}"
            f"<h4>Candidates, merges, splits, vanished, resized</h4>{_events_html(night)}"
            f"<details><summary>All {len(night.classes)} classes of this night</summary>"
            f"{_classes_table(night.classes)}</details></section>")


def _sizes_table(data: ReportData, order: list[str]) -> str:
    dates = [n.date for n in data.nights if not n.held_back]
    cell = {(r["lineage_id"], r["snapshot_date"]): r for r in data.timeline}
    last = {r["lineage_id"]: r for r in data.timeline}
    head = "<tr><th>class</th>" + "".join(f"<th class='num'>{e(d.isoformat())}</th>" for d in dates) + "</tr>"
    rows = []
    for i, lid in enumerate(order):
        colour, _ = _style(i)
        r0 = last[lid]
        name = name_of(r0)
        label = f"<span class='sw' style='background:{colour}'></span>{e(name)}" + (
            "" if name == lid else f" <code>{e(lid)}</code>")
        cells = []
        for d in dates:
            r = cell.get((lid, d))
            if r is None:
                cells.append("<td></td>")
            else:
                mark = "" if r["status"] == "persisting" else f"<br><span class='muted small'>{e(r['status'])}</span>"
                cells.append(f"<td class='num' title='{e(r['status'])}'>{_num(r['size'])}{mark}</td>")
        rows.append(f"<tr><td>{label}</td>{''.join(cells)}</tr>")
    return f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"


def _unpublished_html(data: ReportData) -> str:
    if not data.unpublished:
        return ""
    items = []
    for doc, path in data.unpublished:
        what = "rejected by its contract" if not doc.get("passed") else "validated, not published"
        items.append(f"<li><b>{e(doc.get('snapshot_date') or 'unknown date')}</b> "
                     f"<code>{e(doc.get('path'))}</code>: {e(what)}. "
                     f"{_contract_summary(doc, path, data)}</li>")
    return ("<h2 id='unpublished'>Snapshots without a published run</h2>"
            "<p class='muted'>Their contract reports are in the state folder; nothing of them is "
            "in the warehouse.</p>"
            f"<ul class='events'>{''.join(items)}</ul>")


def render(data: ReportData, *, mlflow_ui: str | None = None, prefect_api_url: str | None = None,
           generated_at: dt.datetime | None = None, out_path=None, state_dir=None) -> str:
    """The page as a string; ``out_path``: where it will be written, ``state_dir``: the state
    folder (both given and the page under it: contract reports there are linked relative to the
    page, :func:`file_href`)."""
    import dataclasses

    data = dataclasses.replace(
        data, page_dir=Path(out_path).parent if out_path is not None else data.page_dir,
        state_dir=Path(state_dir) if state_dir is not None else data.state_dir)
    generated_at = generated_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    mlflow_base = mlflow_ui_base(data.tracking_uri, mlflow_ui)
    prefect_base = prefect_ui_base(prefect_api_url)
    first_seen: dict[str, tuple] = {}
    for r in data.timeline:
        first_seen.setdefault(r["lineage_id"], (r["snapshot_date"], r["is_novel"] is True, r["lineage_id"]))
    # known classes first, then novel ones in the order they appeared
    order = sorted(first_seen, key=lambda lid: (first_seen[lid][1], first_seen[lid][0], lid))
    dates = [n.date for n in data.nights]
    title = f"ORAL classes of {data.graph}"
    if dates:
        span = (f"{len(dates)} night(s), {dates[0].isoformat()} to {dates[-1].isoformat()}"
                if len(dates) > 1 else f"1 night, {dates[0].isoformat()}")
    else:
        span = "no published night"
    answered = [n for n in data.nights if not n.held_back]
    latest = answered[-1] if answered else None
    held = [n for n in data.nights if n.held_back]
    held_note = (f" The champion gate held back {len(held)} night(s) "
                 f"({', '.join(n.date.isoformat() for n in held)}): each is shown for the record, "
                 f"its answer stays the last night before it that the gate passed."
                 if held else "")
    summary = (f"<p>No night has passed the champion gate yet.{held_note}</p>" if held else "")
    if latest is not None:
        emerged_total = len({r["lineage_id"] for r in data.timeline
                             if new_tonight(r.get("is_novel"), r["status"], r.get("first_seen"),
                                            r["snapshot_date"])})
        summary = (f"<p>Latest night <a href='#night-{e(latest.date.isoformat())}'>"
                   f"{e(latest.date.isoformat())}</a>: {len(latest.classes)} classes "
                   f"({sum(bool(c['is_novel']) for c in latest.classes)} novel). "
                   f"{emerged_total} novel class(es) new over all nights (the emerged_classes rule); "
                   f"{len(order)} lineage id(s) in all.{held_note}</p>")
    links_note = (f"MLflow tracking store <code>{e(safe_uri(data.tracking_uri))}</code>; links open "
                   f"the MLflow UI at <code>{e(mlflow_base)}</code>"
                   + ("" if data.tracking_uri and data.tracking_uri.startswith(("http:", "https:"))
                      else f" (start it with <code>mlflow ui --backend-store-uri "
                           f"{e(safe_uri(data.tracking_uri))}</code>)")
                   ) if data.tracking_uri else (
        f"MLflow links open the MLflow UI at <code>{e(mlflow_base)}</code>.")
    links_note += " " + prefect_note(prefect_api_url, prefect_base, data.state_dir)
    last = {r["lineage_id"]: r for r in data.timeline}
    legend = "".join(
        f"<li><span class='sw' style='background:{_style(i)[0]}'></span>{e(name_of(last[lid]))}"
        + ("" if name_of(last[lid]) == lid else f" <span class='muted small'>{e(lid)}</span>")
        + "</li>" for i, lid in enumerate(order))
    nav = " ".join(f"<a href='#night-{e(d.isoformat())}'>{e(d.isoformat())}</a>" for d in reversed(dates))
    chart = ""
    if data.timeline:
        chart = (f"<h2 id='sizes'>Class sizes over nights</h2>{chart_svg(data.timeline, order)}"
                 "<p class='muted small'>One line per lineage id; a large point: the class emerged "
                 "that night; a hollow point at 0: it merged, split or vanished. Hover a point "
                 "for its numbers.</p>"
                 f"<ul class='legend'>{legend}</ul>"
                 f"<details><summary>The numbers (nodes per class and night; status when not "
                 f"persisting)</summary>{_sizes_table(data, order)}</details>")
    nights = "".join(_night_html(n, data, mlflow_base, prefect_base) for n in reversed(data.nights))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body><main>"
            f"<h1>{e(title)}</h1>"
            f"<p class='muted'>{e(span)} · warehouse <code>{e(data.warehouse_path)}</code> · "
            f"generated {e(generated_at.strftime('%Y-%m-%d %H:%M UTC'))}</p>"
            f"{summary}<p class='small muted'>{links_note}</p>"
            + (f"<nav class='small'>Nights: {nav}</nav>" if nav else "")
            + chart
            + ("<h2 id='nights'>Nights, newest first</h2>" + nights if nights else "")
            + _unpublished_html(data)
            + "</main></body></html>\n")


def report(warehouse_path, graph: str, out_path, *, contract_dir=None,
           tracking_uri: str | None = None, mlflow_ui: str | None = None,
           prefect_api_url: str | None = None, generated_at: dt.datetime | None = None,
           state_dir=None) -> Path:
    """Write the HTML report of ``graph`` to ``out_path`` (atomically) and return its path.

    ``contract_dir``: the graph's contract reports (``<state>/reports/<graph>``; None: the page
    shows only the ``snapshots`` table's verdict). ``tracking_uri``: the MLflow store the runs
    were logged to (shown, and the UI base when it is a server); ``mlflow_ui``: the MLflow UI's
    address when it is elsewhere. ``state_dir``: the state folder; when the page is written
    under it, the contract reports there are linked relative to the page (the folder keeps
    working once moved or sent on); elsewhere, or without it, by their ``file://`` URIs.
    Raises :class:`NoWarehouse` (no file or schema yet), :class:`UnknownGraph` (no run and no
    contract report of the graph), :class:`ReportError`."""
    from data_contracts.snapshots import write_file_atomically

    data = load(warehouse_path, graph, Path(contract_dir) if contract_dir else None, tracking_uri)
    page = render(data, mlflow_ui=mlflow_ui, prefect_api_url=prefect_api_url,
                  generated_at=generated_at, out_path=out_path, state_dir=state_dir)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomically(out, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    log.info("report of %r: %d night(s) written to %s", graph, len(data.nights), out)
    return out
