"""The documentation stays readable and its references stay true (issue 48).

The README is for a newcomer (what the product does, the two commands, where each concern lives)
and stays under 300 lines; the pages of ``docs/`` are by reader and stay under 600 lines each
(split a page that grows past it). Every relative markdown link and every backticked repository
path cited in README.md, docs/*.md and benchmarks/results/INDEX.md must exist, so moving or
renaming a file without fixing the docs fails here.

What counts as a cited path (pragmatic, not a markdown parser): outside fenced code blocks, a
backticked string without spaces that has a slash and ends in a file extension or a slash, e.g.
`tasks/warehouse/writer_lock.py` or `benchmarks/results/choose/`. Skipped: URLs, placeholders
and globs (`<`, `*`, `{`, `[`, `|`), absolute and home paths, paths outside the checkout (`../`),
and folders the product generates at run time (`state/`, `tour/`, the run folders and the
results' `runs/` written by `oral reproduce`). A path is looked up from the repository root,
then from the citing file's folder, then (the docs' convention for result files) from
`benchmarks/results/`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
INDEX = ROOT / "benchmarks" / "results" / "INDEX.md"
CITING = [README, *DOCS, INDEX]

#: folders that only exist once the product ran (state folders, run folders, MLflow stores)
GENERATED = ("state/", "tour/", ".venv/", "reports/", "mlartifacts/", "runs/<", "gx/", "snapshots/",
             "/tmp/")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PATHLIKE = re.compile(r"^[A-Za-z0-9_.=+\-/]+$")
EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")


def prose(path: Path) -> str:
    """The file's text without its fenced code blocks (commands there are examples)."""
    out, fence = [], False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lstrip("#").strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def cited_paths(text: str) -> list[str]:
    paths = []
    for span in CODE.findall(text):
        span = span.strip()
        if not PATHLIKE.match(span) or "/" not in span:
            continue
        if not (span.endswith("/") or EXTENSION.search(span)):
            continue
        if span.startswith(("/", "~", "../", "http")) or ".." in span.split("/"):
            continue
        if any(span.startswith(g) or f"/{g}" in f"/{span}" for g in GENERATED):
            continue
        paths.append(span)
    return paths


def exists(path: str, citing: Path) -> bool:
    bases = (ROOT, citing.parent, ROOT / "benchmarks" / "results")
    return any((base / path).exists() for base in bases)


@pytest.mark.parametrize("path", [README], ids=lambda p: p.name)
def test_readme_is_short(path):
    lines = len(path.read_text().splitlines())
    assert lines < 300, f"README.md has {lines} lines; move detail to docs/ (limit 300)"


def test_readme_first_screen_has_what_commands_and_folders():
    first = "\n".join(README.read_text().splitlines()[:40])
    assert "make run" in first and "make test" in first
    for folder in ("flows/", "tasks/", "oral_core/", "harness/", "data_contracts/", "deployments/",
                   "benchmarks/", "tests/", "docs/"):
        assert f"`{folder}`" in first, folder


def test_docs_pages_exist_and_are_short():
    names = {p.name for p in DOCS}
    assert {"analysts.md", "operators.md", "method.md", "reproducing.md", "results.md"} <= names
    too_long = {p.name: n for p in DOCS if (n := len(p.read_text().splitlines())) >= 600}
    assert not too_long, f"split these pages (limit 600 lines): {too_long}"


@pytest.mark.parametrize("citing", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_exist(citing):
    assert citing.exists()
    broken = []
    for match in LINK.finditer(prose(citing)):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:, file:
            continue
        file, _, anchor = target.partition("#")
        dest = (citing.parent / file).resolve() if file else citing
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{citing.relative_to(ROOT)}: broken links {broken}"


@pytest.mark.parametrize("citing", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_repository_paths_exist(citing):
    missing = sorted({p for p in cited_paths(prose(citing)) if not exists(p, citing)})
    assert not missing, f"{citing.relative_to(ROOT)} cites paths that do not exist: {missing}"


def test_the_path_check_finds_paths_and_skips_the_rest():
    text = ("`tasks/warehouse/writer_lock.py`, `benchmarks/results/choose/`, `oral run --warm`, "
            "`state/reports/<graph>/`, `runs/<method>/x.json`, `https://a/b.md`, `../shared/x.md`, "
            "`flows/cli_*.py`, `reproduction.md`, `state/logs/oral.log`, `/data/snapshots/a.py`")
    assert cited_paths(text) == ["tasks/warehouse/writer_lock.py", "benchmarks/results/choose/"]
    assert slug("### Settings per graph (`oral choose`)") == "settings-per-graph-oral-choose"
