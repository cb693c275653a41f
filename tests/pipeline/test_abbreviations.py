"""Every command-line parser refuses abbreviated options (issue 47): ``oral run --epoch 5`` was
read as ``--epochs 5`` and trained a 5-epoch model. Now it is an error, exit 2."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_oral_parser_refuses_abbreviations():
    from cli.main import build_parser

    found = list(_parsers(build_parser()))
    assert len(found) > 10  # the commands and the snapshots sub-commands
    assert [p.prog for p in found if p.allow_abbrev] == []


@pytest.mark.parametrize("argv", [
    ["run", "--graph", "g", "--snapshots", "s", "--epoch", "5"],
    ["backfill", "--graph", "g", "--snapshots", "s", "--epoch", "5"],
    ["reproduce", "--dataset", "cora", "--seed", "3"],
])
def test_an_abbreviated_option_is_refused(argv, capsys):
    from cli.main import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert "unrecognized arguments: " + argv[-2] in capsys.readouterr().err


def test_every_benchmark_parser_refuses_abbreviations():
    lax = [f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
           for path in sorted((ROOT / "benchmarks").glob("*.py"))
           for text in [path.read_text()]
           for m in re.finditer(r"ArgumentParser\((?![^)]*allow_abbrev=False)", text)]
    assert lax == []


@pytest.mark.parametrize("argv, command, says", [
    (["run", "--graph", "g", "--snapshots", "s", "--epoch", "5"], "oral run",
     "unrecognized arguments: --epoch 5"),
    (["run", "--date"], "oral run", "argument --date: expected one argument"),
    (["sql"], "oral sql", "the following arguments are required"),
    (["nonsense"], "oral", "argument command: invalid choice: 'nonsense'"),
])
def test_a_refused_command_line_is_one_error_line_of_its_command(argv, command, says, capsys):
    """argparse printed the whole usage before its error (4-5 lines), and an unknown option of a
    command showed the top level's usage (issue 62)."""
    from cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {command}: {says}")
    assert err[0].endswith(f"(see {command} --help)")
