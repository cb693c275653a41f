"""``oral report`` (issue 19, point 4): one self-contained HTML page per graph. A warehouse of
four nights is published with the Warehouse API (no training): a class emerges, two merge, one
splits, one vanishes; a label is hostile HTML; contract reports sit beside it as the flow writes
them, one of a rejected snapshot. The page is checked as text, and rendered by a headless
Chromium when one is installed (Debian: ``apt-get install chromium``)."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_warehouse import ids, night

from cli.main import main
from tasks.report import NoWarehouse, UnknownGraph, report
from tasks.warehouse import Warehouse
from tasks.warehouse.lineage import LineageConfig

D = [dt.date(2026, 4, 1), dt.date(2026, 4, 2), dt.date(2026, 4, 3), dt.date(2026, 4, 4)]
REJECTED = dt.date(2026, 4, 5)
HOSTILE = "<script>alert(1)</script>"
HOSTILE_NODE = '"><img src=x onerror=alert(2)>'
NAMES = {0: "A", 1: "B"}
PLAIN = LineageConfig(confirm_novel=False)  # a novel class emerges the night it appears


def nights() -> list[dict]:
    """Members per class key on each night (node ids stable across nights)."""
    return [
        # every class emerges on the first night
        {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 250), 3: ids(250, 300)},
        # a new novel class of 40 new nodes (its first exemplar is hostile HTML)
        {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 250), 3: ids(250, 300),
         4: [HOSTILE_NODE] + ids(301, 340)},
        # the two first novel classes merge; the new one grows
        {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 300), 3: [HOSTILE_NODE] + ids(301, 400)},
        # the merged class splits in two; the grown one vanishes; another emerges
        {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 240), 3: ids(240, 300), 4: ids(500, 530)},
    ]


def write_contract(folder: Path, day: dt.date, content_hash: str, passed: bool = True,
                   findings: list | None = None) -> Path:
    """A contract report as :func:`tasks.intake.validate` names and writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    findings = findings or []
    doc = {"path": f"/data/g/snapshot={day}", "passed": passed, "content_hash": content_hash,
           "snapshot_date": day.isoformat(), "counts": {"nodes": 300, "edges": 1000},
           "errors": sum(f["severity"] == "error" for f in findings),
           "warnings": sum(f["severity"] == "warning" for f in findings), "findings": findings}
    path = folder / f"snapshot-{day}-{content_hash[:12]}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    path.with_suffix(".html").write_text("<html><body>contract</body></html>", encoding="utf-8")
    return path


@pytest.fixture
def state(tmp_path) -> Path:
    return build_state(tmp_path)


def build_state(tmp_path: Path) -> Path:
    """A state folder: oral.duckdb with four nights of graph g (and one night of graph h), the
    contract reports of g under reports/g, one of them a rejected fifth snapshot. Lineage
    without confirmation, so that every status word shows (``test_candidates_...`` for it)."""
    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", lock_timeout=2.0, threads=1)
    contracts = state / "reports" / "g"
    for i, (day, members) in enumerate(zip(D, nights())):
        parts = night(wh, "g", day, members, NAMES, lineage_config=PLAIN)
        parts["run"]["mlflow_run_id"] = f"mlrun{i}abcdef0123456789"
        parts["run"]["model_name"], parts["run"]["model_version"] = "oral-g", str(i + 1)
        parts["run"]["prefect_flow_run_id"] = f"00000000-0000-0000-0000-00000000000{i}"
        for c in parts["classes"]:
            if c["is_novel"]:
                c["top_features"] = [{"name": f"word{c['class_key']}", "lift": 4.0 + c["class_key"],
                                      "class_mean": 0.3}, {"name": "<b>bold</b>", "lift": 1.5,
                                                           "class_mean": 0.1}]
        wh.publish_run(**parts)
        warn = [{"file": "edges.parquet", "rule": "self_loops", "severity": "warning",
                 "count": 2, "message": "2 self loops <dropped>", "examples": []}] if i == 1 else []
        write_contract(contracts, day, parts["run"]["content_hash"], findings=warn)
    write_contract(contracts, REJECTED, "hash-rejected", passed=False, findings=[
        {"file": "nodes.parquet", "rule": "unique_node_id", "severity": "error", "count": 3,
         "message": "3 repeated node ids", "examples": []}])
    wh.publish_run(**night(wh, "h", D[0], {0: ids(0, 30, "h"), 1: ids(30, 50, "h")}, {0: "A"},
                           lineage_config=PLAIN))
    wh.label_class("g:novel:1", HOSTILE, by="ana")
    wh.label_class("g:novel:3", "Graph learning", by="ana")
    return state


def write(state: Path, tmp_path: Path, graph: str = "g") -> str:
    out = report(state / "oral.duckdb", graph, tmp_path / "out" / "report.html",
                 contract_dir=state / "reports" / graph, tracking_uri="sqlite:///x/mlflow.db")
    return out.read_text(encoding="utf-8")


def test_lineage_scenario_is_what_the_page_is_meant_to_show(state) -> None:
    """The fixture's nights do produce the statuses the page must show."""
    rows = Warehouse(state / "oral.duckdb").query(
        "SELECT snapshot_date, lineage_id, status FROM class_timeline WHERE graph = 'g' "
        "AND status NOT IN ('persisting') ORDER BY ALL").to_pylist()
    got = {(r["snapshot_date"], r["status"]) for r in rows}
    assert {(D[1], "emerged"), (D[2], "merged"), (D[2], "grown"), (D[3], "split"),
            (D[3], "vanished"), (D[3], "emerged")} <= got


def test_candidates_show_and_become_new_the_next_night(tmp_path) -> None:
    """At the default lineage rules a novel class is a candidate on its first night (listed
    with the night's events, not as new) and new tonight the night it is confirmed; a candidate
    that does not come back is dismissed."""
    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", lock_timeout=2.0, threads=1)
    first, second = nights()[:2]
    third = {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 250), 3: ids(250, 300)}
    for day, members in zip(D, (first, second, third)):
        wh.publish_run(**night(wh, "g", day, members, NAMES))
    page = report(state / "oral.duckdb", "g", tmp_path / "out" / "report.html",
                  tracking_uri="sqlite:///x/mlflow.db").read_text(encoding="utf-8")
    night1 = page.split("id='night-2026-04-01'")[1].split("</section>")[0]
    assert "<h4>New tonight (0)</h4>" in night1
    assert night1.count("badge muted'>candidate") == 2
    night2 = page.split("id='night-2026-04-02'")[1].split("</section>")[0]
    assert "<h4>New tonight (2)</h4>" in night2 and "badge muted'>candidate" in night2
    night3 = page.split("id='night-2026-04-03'")[1].split("</section>")[0]
    assert "<h4>New tonight (0)</h4>" in night3 and "badge muted'>dismissed" in night3


def test_page_shows_classes_nights_chart_and_links(state, tmp_path) -> None:
    page = write(state, tmp_path)
    # one section per published night, newest first; the rejected snapshot listed apart
    sections = re.findall(r"<section class='night' id='night-([0-9-]+)'>", page)
    assert sections == [d.isoformat() for d in reversed(D)]
    assert "Snapshots without a published run" in page and "2026-04-05" in page
    assert "rejected by its contract" in page and "3 repeated node ids" in page
    # the chart: inline SVG, one series per lineage id of the graph
    lineage_ids = {r["lineage_id"] for r in Warehouse(state / "oral.duckdb").query(
        "SELECT DISTINCT lineage_id FROM class_lineage WHERE graph = 'g'").to_pylist()}
    assert page.count('<svg class="chart"') == 1
    assert set(re.findall(r'<g class="series" data-lineage="([^"]+)"', page)) == lineage_ids
    assert "h:" not in " ".join(re.findall(r'data-lineage="([^"]+)"', page))  # graph h stays out
    # labels where set, else the known name, else the lineage id
    assert "Graph learning" in page and "known:A" in page
    # emerged classes with top features and exemplars
    night2 = page.split("id='night-2026-04-02'")[1].split("</section>")[0]
    emerged = night2.split("<h4>New tonight (1)</h4>")[1].split("<h4>")[0]
    assert "word4" in emerged and "×8.00" in emerged and "<code>n301</code>" in emerged
    # merges, splits, vanished and growth from class_lineage
    night3 = page.split("id='night-2026-04-03'")[1].split("</section>")[0]
    assert "badge info'>merged" in night3 and "grown" in night3
    night4 = page.split("id='night-2026-04-04'")[1].split("</section>")[0]
    assert "split off from" in night4 and "vanished" in night4
    # the contract summary of each night, with a link to its report
    assert night2.count("badge ok'>passed") == 1 and "1 warning(s)" in night2
    assert "self_loops" in night2 and "contract report" in night2
    # links to the MLflow run, the model version and the Prefect flow run
    assert 'href="http://127.0.0.1:5000/#/runs/mlrun1abcdef0123456789"' in page
    assert 'href="http://127.0.0.1:5000/#/models/oral-g/versions/2"' in page
    assert "runs/flow-run/00000000-0000-0000-0000-000000000001" in page
    assert "mlflow ui --backend-store-uri sqlite:///x/mlflow.db" in page


def test_every_string_from_the_data_is_escaped(state, tmp_path) -> None:
    page = write(state, tmp_path)
    assert "<script" not in page.lower()  # no script at all, hostile or ours
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the label, shown as text
    assert "<img" not in page and "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;dropped&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_self_contained_no_network(state, tmp_path) -> None:
    page = write(state, tmp_path)
    # nothing is loaded: no src= or stylesheet link; http(s) appears only in <a href>s
    assert not re.search(r"\ssrc=", page.replace("src=x onerror", ""))
    assert "<link" not in page and "@import" not in page and "url(" not in page
    loads = [m for m in re.finditer(r"https?://", page)
             if not page[max(0, m.start() - 6):m.start()].endswith('href="')]
    assert all("xmlns" in page[m.start() - 7:m.start()] or "<code>" in page[m.start() - 6:m.start()]
               for m in loads), [page[m.start() - 20:m.start() + 30] for m in loads]


def test_remote_tracking_server_is_the_link_base_without_credentials(state, tmp_path) -> None:
    out = report(state / "oral.duckdb", "g", tmp_path / "r.html",
                 tracking_uri="https://bob:secret@mlflow.example.org:8443/")
    page = out.read_text(encoding="utf-8")
    assert 'href="https://mlflow.example.org:8443/#/runs/mlrun0abcdef0123456789"' in page
    assert "secret" not in page
    # without contract reports the page still says what the snapshots table knows
    assert "the snapshots table's verdict; no contract folder given" in page
    assert "badge ok'>passed" in page


def test_unknown_graph_and_missing_or_empty_warehouse(state, tmp_path) -> None:
    with pytest.raises(UnknownGraph, match=r"graph 'nope'.*graphs with runs: g, h"):
        report(state / "oral.duckdb", "nope", tmp_path / "x.html")
    with pytest.raises(NoWarehouse, match="no warehouse at"):
        report(tmp_path / "none.duckdb", "g", tmp_path / "x.html")
    empty = Warehouse(tmp_path / "empty.duckdb")
    empty.ensure_schema()
    with pytest.raises(UnknownGraph, match="graphs with runs: none yet"):
        report(empty.path, "g", tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_a_graph_with_one_night(state, tmp_path) -> None:
    page = write(state, tmp_path, graph="h")
    assert page.count("<section class='night'") == 1 and '<svg class="chart"' in page
    assert "<polyline" not in page  # one point per class, no line


def test_cli(state, tmp_path, capsys) -> None:
    assert main(["report", "--graph", "g", "--state-dir", str(state)]) == 0
    out = Path(capsys.readouterr().out.strip())
    assert out == state.resolve() / "reports" / "g" / "report.html" and out.is_file()
    target = tmp_path / "elsewhere" / "g.html"
    assert main(["report", "--graph", "g", "--state-dir", str(state), "--out", str(target),
                 "--mlflow-ui", "http://mlflow.internal:5000"]) == 0
    assert "http://mlflow.internal:5000/#/runs/" in target.read_text(encoding="utf-8")
    capsys.readouterr()
    for argv, message in [
        (["--graph", "nope"], "error: no published run of graph 'nope'"),
        (["--graph", "../x"], "error: --graph ../x: invalid graph name"),
        (["--graph", "g", "--out", str(tmp_path)], f"error: --out {tmp_path}: is a folder"),
    ]:
        assert main(["report", "--state-dir", str(state)] + argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(message) and err.count("\n") == 1, err
    assert main(["report", "--graph", "g", "--state-dir", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no warehouse at") and err.count("\n") == 1


def test_cli_warehouse_that_is_not_duckdb(tmp_path, capsys) -> None:
    (tmp_path / "oral.duckdb").write_text("not a database")
    assert main(["report", "--graph", "g", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "oral.duckdb" in err and err.count("\n") == 1, err


def test_nightly_flow_links_the_report(state, monkeypatch) -> None:
    """flows.nightly rewrites the report after a night and links it as an artifact; a report
    that fails is a warning, and no warehouse yet (a rejected first night) is silent."""
    from flows import artifacts as nightly
    from flows.settings import Settings

    links, warnings = [], []
    monkeypatch.setattr(nightly, "create_link_artifact",
                        lambda link, **kw: links.append((link, kw)))
    monkeypatch.setattr(nightly, "get_run_logger", lambda: type(
        "L", (), {"warning": staticmethod(lambda *a: warnings.append(a[0] % a[1:]))})())
    settings = Settings(state.resolve(), state.resolve() / "oral.duckdb", None)
    nightly.graph_report("g", settings, "sqlite:///x/mlflow.db")
    page = state.resolve() / "reports" / "g" / "report.html"
    assert links == [(page.as_uri(), {"link_text": "g: classes over nights", "key": "oral-g-report",
                                      "description": "HTML report (oral report)"})]
    assert "mlflow ui --backend-store-uri sqlite:///x/mlflow.db" in page.read_text(encoding="utf-8")
    nightly.graph_report("nope", settings, None)
    assert len(links) == 1 and "no published run of graph 'nope'" in warnings[0]
    nightly.graph_report("g", Settings(state, state / "missing.duckdb", None), None)
    assert len(links) == 1 and len(warnings) == 1


#: where Debian's ``chromium`` package puts the browser (also found when not on PATH)
DEBIAN_CHROMIUM = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")


def find_chromium() -> str | None:
    """A headless-capable Chromium: on PATH by one of its usual names, else where Debian's
    package installs it; None when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return next((p for p in DEBIAN_CHROMIUM if os.access(p, os.X_OK)), None)


CHROMIUM = find_chromium()
#: set by .ci/run once it installed chromium: the browser test must run there, not be skipped
REQUIRED = os.environ.get("ORAL_REQUIRE_CHROMIUM") == "1"


def test_debian_chromium_is_found_off_path(monkeypatch) -> None:
    """Issue 48.9: Debian's chromium (``/usr/bin/chromium``) is found even with an empty PATH,
    and .ci/run installs it (quietly, skipped when already there) and makes the browser test
    required, so CI renders the report instead of skipping the test."""
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert re.search(r"apt-get install -y -qq\s*\\?\s*--no-install-recommends chromium", ci)
    assert "apt-get update" in ci and "command -v chromium" in ci
    assert "export ORAL_REQUIRE_CHROMIUM=1" in ci
    assert subprocess.run(["bash", "-n", str(Path(__file__).resolve().parents[2] / ".ci" / "run")]
                          ).returncode == 0
    monkeypatch.setenv("PATH", "")
    found = find_chromium()
    if not any(os.access(p, os.X_OK) for p in DEBIAN_CHROMIUM):
        assert found is None
        pytest.skip("Debian's chromium is not installed here")
    assert found in DEBIAN_CHROMIUM


@pytest.mark.skipif(CHROMIUM is None and not REQUIRED,
                    reason="no headless browser: install Debian's chromium "
                           "(apt-get install chromium) to render the report")
def test_renders_in_headless_chromium(state, tmp_path) -> None:
    """Chromium loads the page with the network off and draws the chart: the screenshot holds
    the chart's colours, and the DOM it built holds the hostile label as text, not as a node."""
    from PIL import Image

    assert CHROMIUM is not None, ("ORAL_REQUIRE_CHROMIUM=1 but no chromium found on PATH or at "
                                  f"{', '.join(DEBIAN_CHROMIUM)}")

    page = report(state / "oral.duckdb", "g", tmp_path / "report.html",
                  contract_dir=state / "reports" / "g")
    png = tmp_path / "report.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--proxy-server=127.0.0.1:9", "--user-data-dir=" + str(tmp_path / "profile")]
    subprocess.run([CHROMIUM, *flags, f"--screenshot={png}", "--window-size=1280,2000",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 2000)
    colours = {c for _, c in image.getcolors(1280 * 2000)}
    for hexcode in ("#4e79a7", "#f28e2b"):  # the first two series' lines
        rgb = tuple(int(hexcode[i:i + 2], 16) for i in (1, 3, 5))
        assert rgb in colours, f"no pixel of {hexcode} in the screenshot"
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom
    assert "<svg" in dom and "polyline" in dom


def test_contract_links_are_relative_inside_the_state_folder(state, tmp_path, capsys) -> None:
    """Issue 48.5: the page linked contract reports by absolute ``file://`` paths, broken once
    the page (or the state folder) was sent on. A page written in the state folder links them
    relative to itself, so a copy of the folder elsewhere still opens them; a page written
    outside the state folder keeps the absolute ``file://`` URI (a relative one would break)."""
    import urllib.parse
    import urllib.request

    def contract_links(page: Path) -> list[str]:
        text = page.read_text(encoding="utf-8")
        return re.findall(r'<a href="([^"]+)"[^>]*>contract report</a>', text)

    assert main(["report", "--graph", "g", "--state-dir", str(state)]) == 0
    page = Path(capsys.readouterr().out.strip())
    links = contract_links(page)
    assert len(links) == len(D) + 1  # every night and the rejected snapshot
    assert all(not h.startswith(("file:", "/")) and "://" not in h for h in links), links
    assert links[0] == "snapshot-2026-04-04-hash-2026-04.html"  # beside the page
    # sent on: the whole state folder copied elsewhere, the original gone
    moved = tmp_path / "sent" / "state-copy"
    shutil.copytree(state, moved)
    shutil.rmtree(state)
    copy = moved / page.relative_to(state.resolve())
    for href in links:
        url = urllib.parse.urljoin(copy.as_uri(), href)
        target = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        assert target.is_file() and target.is_relative_to(moved), url
    # outside the state folder: absolute file:// URIs, which open from there
    outside = report(moved / "oral.duckdb", "g", tmp_path / "elsewhere" / "g.html",
                     contract_dir=moved / "reports" / "g", state_dir=moved)
    hrefs = contract_links(outside)
    assert hrefs and all(h.startswith("file:///") for h in hrefs)
    assert Path(urllib.request.url2pathname(urllib.parse.urlparse(hrefs[0]).path)).is_file()
    # the folder to link from is subtle when names need quoting: a graph folder with a space
    # cannot exist (graph names are checked), but the state folder's own name may hold one
    spaced = tmp_path / "my state"
    shutil.copytree(moved, spaced)
    inside = report(spaced / "oral.duckdb", "g", spaced / "reports" / "g" / "r.html",
                    contract_dir=spaced / "reports" / "g", state_dir=spaced)
    assert contract_links(inside) == links


def test_a_night_the_gate_held_back_is_shown_for_the_record_not_as_the_answer(tmp_path) -> None:
    """The page agrees with latest_runs and emerged_classes (issue 62): a degraded night's
    classes and lineage stay out of the timeline, the sizes table and the counts, its section
    says why it was held back, and the summary's latest night is the last one the gate passed."""
    state = tmp_path / "state"
    wh = Warehouse(state / "oral.duckdb", lock_timeout=2.0, threads=1)
    first, second = nights()[:2]
    degraded = {0: ids(0, 100), 1: ids(100, 180), 2: ids(180, 300)}  # novel classes folded
    for day, members, gate in ((D[0], first, "ok"), (D[1], second, "ok"),
                               (D[2], degraded, "degraded")):
        parts = night(wh, "g", day, members, NAMES, lineage_config=PLAIN)
        parts["run"]["gate_status"] = gate
        parts["run"]["gate_reason"] = ("known-class validation accuracy 0.6000 is below the "
                                       "reference logistic regression's 0.9000" if gate != "ok"
                                       else None)
        wh.publish_run(**parts)
    assert wh.query("SELECT snapshot_date FROM latest_runs").to_pylist() == [
        {"snapshot_date": D[1]}]
    page = report(state / "oral.duckdb", "g", tmp_path / "out" / "report.html",
                  tracking_uri="sqlite:///x/mlflow.db").read_text(encoding="utf-8")
    summary = page.split("Latest night")[1].split("</p>")[0]
    assert D[1].isoformat() in summary.split(":")[0]
    assert "held back 1 night(s) (2026-04-03)" in summary
    held = page.split("id='night-2026-04-03'")[1].split("</section>")[0]
    assert "Held back by the champion gate" in held and "0.6000" in held
    assert "<h4>New tonight (0)</h4>" in held
    sizes = page.split("id='sizes'")[1]
    table = sizes.split("</table>")[0]
    assert "2026-04-02" in table and "2026-04-03" not in table


def test_the_page_says_where_its_prefect_links_lead(state, tmp_path) -> None:
    """Issue 62: without PREFECT_API_URL the nights ran on temporary servers that stopped; the
    page says their runs are kept in the state folder's Prefect database and how to serve it
    (the links pointed at a stopped server without a word). With a Prefect server the links
    open its UI."""

    page = write(state, tmp_path)
    assert "temporary Prefect server" in page and "prefect server start" in page
    assert "PREFECT_HOME=&lt;state&gt;/prefect" in page or "/prefect prefect server" in page
    served = report(state / "oral.duckdb", "g", tmp_path / "served" / "report.html",
                    contract_dir=state / "reports" / "g", tracking_uri="sqlite:///x/mlflow.db",
                    prefect_api_url="http://prefect.example:4200/api").read_text(encoding="utf-8")
    assert "temporary Prefect server" not in served
    assert 'href="http://prefect.example:4200/runs/flow-run/' in served
    assert "Prefect links open the Prefect UI at <code>http://prefect.example:4200</code>" in served
