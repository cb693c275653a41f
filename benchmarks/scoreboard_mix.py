"""The scoreboard over loops of several studies: a study's loops with some replaced by another's.

    python -m benchmarks.scoreboard_mix --base benchmarks/results/night_answer_paired/loops \
        --with benchmarks/results/novel_wholeness_separable/loops/loops --out FILE.md

A default that changes the answer on some graphs only is rerun there only (where a fit is, draw
for draw, the fit without it, the older loop stands). This puts the loops that changed (``--with``,
``<graph>-sim<k>.json``) in place of the same loops of ``--base`` and writes the scoreboard
(:mod:`benchmarks.scoreboard`) of the loops that changed, before and after, and of the whole set,
before and after. It scores from test labels: a report, never a reason for a default.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def loops_in(folder: Path) -> dict[str, dict]:
    """``{<graph>-sim<k>: loop}`` of a nightly-loop ``loops/`` folder."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(folder).glob("*-sim*.json"))}


def mixed_report(base: dict[str, dict], changed: dict[str, dict], base_name: str,
                 changed_name: str) -> str:
    """The four scoreboards as Markdown (see the module docstring)."""
    from benchmarks import scoreboard

    missing = sorted(set(changed) - set(base))
    if missing:
        raise SystemExit(f"error: {', '.join(missing)} in {changed_name} but not in {base_name}")
    names = sorted(changed)
    final = [changed.get(k, v) for k, v in base.items()]
    return "\n".join([
        f"## The loops that changed ({', '.join(names)})", "",
        f"Before (`{base_name}`):", "", *scoreboard.table_lines([base[k] for k in names]), "",
        f"After (`{changed_name}`):", "", *scoreboard.table_lines([changed[k] for k in names]), "",
        f"## All {len(final)} loops, the {len(names)} that changed replaced", "",
        scoreboard.answer(final), "", *scoreboard.table_lines(final)[:5], "",
        f"Before (the {len(base)} loops of `{base_name}`): " + scoreboard.answer(list(base.values())),
        ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="a nightly-loop loops/ folder")
    ap.add_argument("--with", dest="changed", required=True,
                    help="a loops/ folder whose loops replace the same loops of --base")
    ap.add_argument("--out", help="write the Markdown here (default: print it)")
    args = ap.parse_args(argv)
    text = mixed_report(loops_in(Path(args.base)), loops_in(Path(args.changed)), args.base,
                        args.changed)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
