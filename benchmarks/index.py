"""benchmarks/results/INDEX.md, generated from the study folders' READMEs (issue 48, item 2).

    python -m benchmarks.index             # rewrite benchmarks/results/INDEX.md
    python -m benchmarks.index --check     # exit 1 if INDEX.md is stale or the folder is untidy
    python -m benchmarks.index --results DIR [--check]

Every study of ``benchmarks/results`` is one folder whose ``README.md`` has a ``# Title`` line
and paragraphs starting ``Question:``, ``Command:`` (what made the files), ``Answer:`` (the
current answer, copied from the files) and ``Current:`` (``yes`` when measured at today's
defaults, else ``no, <why>``). INDEX.md has one row per study (folder, title, question, answer,
current) and a line for ``goal.md``. Nothing else lies loose at the top: besides INDEX.md and
goal.md only the default output of ``oral reproduce`` (``REPRODUCE_DEFAULT``, described by
``paper_tables/README.md``), until that default moves into ``paper_tables/``.

``--check`` writes nothing: one line per problem on stderr (a loose file, a folder without a
README or a README without a field, a stale INDEX.md), exit 1 if there is any, else 0. Without
``--check`` the same problems of the folders stop the rewrite (exit 1); a stale INDEX.md is
rewritten.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
INDEX = "INDEX.md"
GOAL = "goal.md"
#: what ``oral reproduce`` writes into ``--out`` (default ``benchmarks/results``: cli/main.py,
#: flows/reproduce.py) and ``benchmarks/stability.py`` reads there; ``paper_tables/README.md``
#: describes them. They move into ``paper_tables/`` together with those defaults.
REPRODUCE_DEFAULT = ("reproduction.csv", "reproduction.md", "reproduction_paper.md", "runs")
FIELDS = ("Question", "Command", "Answer", "Current")
#: READMEs their own scripts write (benchmarks/known_head.py, nightly_loop.py, stability.py) with
#: a question and a command only; the index shows "see README" for a missing answer or status.
SCRIPT_READMES = ("known_head", "nightly_loop", "stability")
OPTIONAL_THERE = ("Answer", "Current")
SEE_README = "see README"


@dataclass
class Study:
    folder: str
    title: str
    fields: dict[str, str]


def shown(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_readme(path: Path) -> tuple[str, dict[str, str]]:
    """The ``# Title`` and the ``Field:`` paragraphs (a paragraph ends at a blank line)."""
    title, fields, current = "", {}, None
    for line in path.read_text().splitlines():
        if not line.strip():
            current = None
            continue
        if not title and line.startswith("# "):
            title = line[2:].strip()
            continue
        head, sep, rest = line.partition(":")
        if sep and head in FIELDS and head not in fields:
            fields[head] = rest.strip()
            current = head
        elif current:
            fields[current] += " " + line.strip()
    return title, fields


def survey(results: Path, skip: tuple[str, ...] = ()) -> tuple[list[Study], list[str], bool]:
    """The studies in ``results``, one line per problem (loose file, README, field), and whether
    every study folder could be read (else the index would be incomplete). ``skip``: study
    folders left out (a sweep still writing into one, not yet committed)."""
    studies, problems, complete = [], [], True
    for entry in sorted(results.iterdir(), key=lambda p: p.name):
        name = entry.name
        if (name.startswith(".") or name in (INDEX, GOAL) or name in REPRODUCE_DEFAULT
                or name in skip):
            continue
        if not entry.is_dir():
            problems.append(f"{shown(entry)} is a loose file at the top of {shown(results)}: move "
                            f"it into a study folder (only {INDEX} and {GOAL} stay there)")
            continue
        readme = entry / "README.md"
        if not readme.is_file():
            problems.append(f"{shown(entry)}/ has no README.md (a study folder needs one with a "
                            "# title and " + ", ".join(f"{f}:" for f in FIELDS) + ")")
            complete = False
            continue
        title, fields = read_readme(readme)
        optional = OPTIONAL_THERE if name in SCRIPT_READMES else ()
        missing = (["# title"] if not title else []) + [
            f"{f}:" for f in FIELDS if not fields.get(f) and f not in optional]
        if missing:
            problems.append(f"{shown(readme)} lacks {', '.join(missing)} (every study README has a "
                            "# title and " + ", ".join(f"{f}:" for f in FIELDS) + ")")
            complete = False
            continue
        studies.append(Study(name, title, fields))
    if not (results / GOAL).is_file():
        problems.append(f"{shown(results / GOAL)} is missing (the index has a line for it)")
        complete = False
    return studies, problems, complete


def cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def goal_line(results: Path) -> str:
    title, fields = read_readme(results / GOAL)
    command = fields.get("Command", "").split("`")
    made_by = f" (`{command[1]}`)" if len(command) > 2 else ""
    return f"[{GOAL}]({GOAL}): {title or 'issue 17'}{made_by}."


def render(results: Path, studies: list[Study]) -> str:
    lines = [
        "# Index of benchmarks/results", "",
        "Generated by `python -m benchmarks.index` from each study folder's README.md (the "
        "question, the command that made its files, the current answer and whether it is "
        "current); edit the READMEs, not this file (`python -m benchmarks.index --check` fails "
        "when it is stale). Headline numbers: [docs/results.md](../../docs/results.md); every "
        "command: [docs/reproducing.md](../../docs/reproducing.md#benchmarks-and-their-commands).",
        "",
        "*Current*: measured at today's defaults (`ORALConfig` in `oral_core/config.py`: the last "
        "epoch of 200 and, since 2026-11-27, the known-group checks `known_split_share=0.5`, "
        "`known_absorb_share=0.5`, `known_absorb_guard=true`); otherwise why not.", "",
        goal_line(results), "",
        "At the top besides this file and goal.md: " + ", ".join(
            f"`{n}/`" if (results / n).is_dir() else f"`{n}`" for n in REPRODUCE_DEFAULT
            if (results / n).exists())
        + ", the default output of `oral reproduce` ([paper_tables/](paper_tables/README.md)).", "",
        "| study | title | question | answer | current |",
        "|---|---|---|---|---|",
    ]
    for s in studies:
        lines.append(f"| [{s.folder}/]({s.folder}/README.md) | {cell(s.title)} | "
                     f"{cell(s.fields['Question'])} | {cell(s.fields.get('Answer') or SEE_README)} | "
                     f"{cell(s.fields.get('Current') or SEE_README)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the results folder (default benchmarks/results)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 naming what is stale or out of place")
    ap.add_argument("--skip", action="append", default=[], metavar="FOLDER",
                    help="a study folder to leave out (a sweep still writing into it)")
    args = ap.parse_args(argv)
    results: Path = args.results
    if not results.is_dir():
        print(f"index: {results} is not a folder", file=sys.stderr)
        return 2
    studies, problems, complete = survey(results, tuple(args.skip))
    index = results / INDEX
    if args.check:
        if complete and (not index.is_file() or index.read_text() != render(results, studies)):
            problems.append(f"{shown(index)} is stale: run python -m benchmarks.index"
                            + ("" if results.resolve() == RESULTS else f" --results {results}"))
        for line in problems:
            print(f"index: {line}", file=sys.stderr)
        return 1 if problems else 0
    if problems:
        for line in problems:
            print(f"index: {line}", file=sys.stderr)
        return 1
    text = render(results, studies)
    if not index.is_file() or index.read_text() != text:
        index.write_text(text)
        print(f"wrote {shown(index)} ({len(studies)} studies)")
    else:
        print(f"{shown(index)} is up to date ({len(studies)} studies)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
