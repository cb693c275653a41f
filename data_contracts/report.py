"""The validation report: findings (file, rule, severity, message, count, example rows), summary
counts, and three renderings: a dict/JSON document, readable text, and a self-contained HTML page.

Pure Python (no pyarrow, no Great Expectations), so a stored report can be re-rendered anywhere.
"""
from __future__ import annotations

import datetime as dt
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ERROR, WARNING = "error", "warning"
MAX_EXAMPLES = 5


def jsonable(value: Any) -> Any:
    """A value as plain JSON: NaN and infinities as the strings ``"nan"``, ``"inf"``, ``"-inf"``,
    bytes as (replaced) UTF-8 text, dates as ISO strings, anything else unknown via ``str``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        try:
            return jsonable(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


@dataclass
class Finding:
    """One broken rule.

    ``count``: how many rows break the rule; for table- and file-level rules the number of items
    it names instead (missing files or columns, classes short of labels), as the message says.
    ``examples``: at most :data:`MAX_EXAMPLES` offending rows (or items) as JSON-safe dicts.
    """

    file: str
    rule: str
    severity: str
    message: str
    count: int = 0
    examples: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.severity not in (ERROR, WARNING):
            raise ValueError(f"severity must be {ERROR!r} or {WARNING!r}, got {self.severity!r}")
        self.count = int(self.count)
        self.examples = [jsonable(dict(e)) for e in list(self.examples)[:MAX_EXAMPLES]]

    def to_dict(self) -> dict:
        return {"file": self.file, "rule": self.rule, "severity": self.severity,
                "message": self.message, "count": self.count, "examples": self.examples}


@dataclass
class ValidationReport:
    """The outcome of :func:`data_contracts.validate_snapshot`.

    ``passed`` is true when no finding is an error (warnings allowed). ``counts`` holds summary
    numbers (``nodes``, ``edges``, ``labelled``, ``unlabelled``, ``classes``, ``feature_width``,
    ``truth_rows``) for whatever could be read. ``rules_checked`` lists, per file, the rules that
    were evaluated (a rule is skipped when what it needs is missing: no edge checks on an
    unreadable file). ``expectations`` summarises the Great Expectations runs that decided the
    findings.
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    content_hash: str | None = None
    snapshot_date: str | None = None
    counts: dict = field(default_factory=dict)
    rules_checked: dict = field(default_factory=dict)
    expectations: dict = field(default_factory=dict)
    parameters: dict = field(default_factory=dict)
    elapsed_s: float = 0.0
    data_docs: dict = field(default_factory=dict)

    @property
    def data_docs_page(self) -> str | None:
        """The Data Docs page to open first: the suite of the first error (or warning), else the
        node table's; None when no Data Docs were built (no state folder)."""
        suites = {"nodes.parquet": "oral.nodes", "edges.parquet": "oral.edges",
                  "truth.parquet": "oral.truth"}
        for f in sorted(self.findings, key=lambda f: f.severity != ERROR):
            suite = suites.get(f.file, "oral.snapshot")
            # file-level rules (present, readable) are in the snapshot manifest's suite
            if f.rule in ("file_present", "readable_parquet"):
                suite = "oral.snapshot"
            if suite in self.data_docs:
                return self.data_docs[suite]
        return self.data_docs.get("oral.nodes") or next(iter(self.data_docs.values()), None)

    @property
    def passed(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    def rules(self, severity: str | None = None) -> set[tuple[str, str]]:
        """``{(file, rule)}`` of the findings (of one severity when given)."""
        return {(f.file, f.rule) for f in self.findings if severity in (None, f.severity)}

    def to_dict(self) -> dict:
        return {"path": self.path, "passed": self.passed, "content_hash": self.content_hash,
                "snapshot_date": self.snapshot_date, "counts": jsonable(self.counts),
                "errors": len(self.errors), "warnings": len(self.warnings),
                "findings": [f.to_dict() for f in self.findings],
                "rules_checked": jsonable(self.rules_checked),
                "expectations": jsonable(self.expectations),
                "parameters": jsonable(self.parameters), "elapsed_s": round(self.elapsed_s, 3),
                "data_docs": dict(self.data_docs)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def write_json(self, path: str | Path) -> Path:
        from data_contracts.snapshots import write_file_atomically

        text = self.to_json() + "\n"
        return write_file_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    # ------------------------------------------------------------------------------ text
    def summary(self) -> str:
        """Readable text: the verdict, the counts, then each finding with its example rows."""
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [f"snapshot {self.path}: {verdict} "
                 f"({len(self.errors)} error(s), {len(self.warnings)} warning(s))"]
        if self.counts:
            lines.append("  " + ", ".join(f"{k} {v}" for k, v in self.counts.items()))
        if self.content_hash:
            lines.append(f"  content hash {self.content_hash}")
        # GX's Data Docs are not linked: their pages load Bootstrap, jQuery, Vega and fonts from
        # public CDNs and render unusable offline; the JSON keeps their paths (``data_docs``)
        for f in sorted(self.findings, key=lambda f: (f.severity != ERROR,)):
            lines.append(f"{f.severity.upper()} {f.file} rule {f.rule} (count {f.count}): "
                         f"{f.message}")
            for example in f.examples:
                lines.append("    e.g. " + json.dumps(example, ensure_ascii=False))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    # ------------------------------------------------------------------------------ html
    def to_html(self) -> str:
        """A self-contained HTML page (no scripts, no external resources); every value from the
        data passes through :func:`html.escape`."""
        e = html.escape
        verdict = "PASSED" if self.passed else "FAILED"
        rows = []
        for f in sorted(self.findings, key=lambda f: (f.severity != ERROR,)):
            ex = "".join(f"<li><code>{e(json.dumps(x, ensure_ascii=False))}</code></li>"
                         for x in f.examples)
            rows.append(
                f'<tr class="{e(f.severity)}"><td>{e(f.severity)}</td><td>{e(f.file)}</td>'
                f"<td><code>{e(f.rule)}</code></td><td>{f.count}</td><td>{e(f.message)}"
                f"{'<ul>' + ex + '</ul>' if ex else ''}</td></tr>")
        counts = "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>"
                         for k, v in self.counts.items())
        checked = "".join(
            f"<tr><th>{e(str(k))}</th><td>{e(', '.join(map(str, v)))}</td></tr>"
            for k, v in self.rules_checked.items())
        findings = ("<table><tr><th>severity</th><th>file</th><th>rule</th><th>count</th>"
                    "<th>message and example rows</th></tr>" + "".join(rows) + "</table>"
                    if rows else "<p>No findings.</p>")
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Snapshot validation: {e(verdict)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
tr.error td:first-child {{ color: #b00; font-weight: bold; }}
tr.warning td:first-child {{ color: #a60; }}
.verdict-PASSED {{ color: #070; }} .verdict-FAILED {{ color: #b00; }}
code {{ white-space: pre-wrap; }}
</style></head><body>
<h1>Snapshot validation: <span class="verdict-{e(verdict)}">{e(verdict)}</span></h1>
<p>Snapshot <code>{e(self.path)}</code>, date {e(str(self.snapshot_date))},
content hash <code>{e(str(self.content_hash))}</code>.
{len(self.errors)} error(s), {len(self.warnings)} warning(s).</p>
<h2>Findings</h2>
{findings}
<h2>Counts</h2>
<table>{counts}</table>
<h2>Rules checked</h2>
<table>{checked}</table>
<p>Parameters: <code>{e(json.dumps(jsonable(self.parameters)))}</code>;
expectations: <code>{e(json.dumps(jsonable(self.expectations)))}</code>;
{self.elapsed_s:.2f} s.</p>
</body></html>
"""

    def write_html(self, path: str | Path) -> Path:
        from data_contracts.snapshots import write_file_atomically

        text = self.to_html()
        return write_file_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
