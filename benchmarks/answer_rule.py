"""An answer study's rows, one answer against another, per graph: what its rule reads.

    python -m benchmarks.answer_rule --study benchmarks/results/answer_burst_grow_most
        --new burstgrowmost --base burstjoin [--out decision.md]

An answer study (``answer_burst_*``) keeps three kinds of labelled-only rows, every answer
scored from the same fit: ``proxies/fits.jsonl`` (``benchmarks.answer_proxy``: the held-out-class
proxy's All and stand-ins surfaced, the no-novel proxy's accuracy and novel classes invented,
and with ``--tasks witness`` the held-back validation nodes named right, ``Known``),
``young/<graph>/rows.jsonl`` and ``young_beside_old/<graph>/rows.jsonl`` (and, where a study
has them, ``young_beside_young/`` and ``young_beside_near/``) (``benchmarks.young_class``: the
young class surfaced, All). ``--new`` and ``--base`` name the
answers as the young-class rows do (``burstjoin``); the proxies' rows name them in full
(:data:`benchmarks.answer_proxy.BURST_JOIN` and the like, looked up by the short name). Per graph:
the fits, ``new`` minus ``base`` paired per fit (mean and standard error), and the classes each
surfaces or invents, summed over the fits. No test label is read.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.records import read_jsonl


def full_name(short: str) -> str:
    """The proxies' name of an answer given as the young-class rows name it."""
    from benchmarks import answer_proxy

    names = answer_proxy.BURST_FORMS
    if short not in names:
        raise ValueError(f"answer {short!r}: one of {', '.join(names)}")
    return names[short]


def paired(values: list[tuple[float, float]]) -> str:
    """``mean (s.e.)`` of new minus base over the pairs, or ``–`` without any."""
    diffs = [a - b for a, b in values]
    if not diffs:
        return "–"
    se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return f"{statistics.fmean(diffs):+.2f} ({se:.2f})"


def found(scores: dict) -> int:
    """The hidden classes one answer of a young-class row surfaced: the young class, and the
    second young class beside it where the row has one (``beside_surfaced``)."""
    return int(bool(scores["surfaced"])) + int(bool(scores.get("beside_surfaced", False)))


def rule_lines(study: Path, new: str, base: str) -> list[str]:
    """The table's lines: one row per graph and kind of rows."""
    lines = [f"| graph | rows | fits | {new} minus {base}, paired (s.e.) | "
             f"surfaced or invented: {base} / {new} |", "|---|---|---|---|---|"]
    fits = read_jsonl(study / "proxies" / "fits.jsonl")
    big_new, big_base = full_name(new), full_name(base)
    for graph in sorted({r["graph"] for r in fits}):
        held = [r for r in fits if r["graph"] == graph and r["kind"] == "heldout"]
        none = [r for r in fits if r["graph"] == graph and r["kind"] == "nonovel"]
        seen = [(r[big_new]["known"], r[big_base]["known"]) for r in fits
                if r["graph"] == graph and r["kind"] == "witness"
                and r[big_new].get("known") is not None
                and r[big_base].get("known") is not None]
        if held:
            lines.append(f"| {graph} | held-out class: All; stand-ins surfaced | {len(held)} | "
                         + paired([(r[big_new]["all"], r[big_base]["all"]) for r in held])
                         + f" | {sum(r[big_base]['surfaced'] for r in held)} / "
                         f"{sum(r[big_new]['surfaced'] for r in held)} |")
        if none:
            lines.append(f"| {graph} | no novel class: accuracy; classes invented | {len(none)} | "
                         + paired([(r[big_new]["accuracy"], r[big_base]["accuracy"])
                                   for r in none])
                         + f" | {sum(r[big_base]['novel_classes'] for r in none)} / "
                         f"{sum(r[big_new]['novel_classes'] for r in none)} |")
        if seen:
            lines.append(f"| {graph} | witness: Known (held-back validation nodes named right); "
                         f"fits better / worse | {len(seen)} | " + paired(seen)
                         + f" | {sum(a > b for a, b in seen)} / {sum(a < b for a, b in seen)} |")
    for kind, label in (("young", "young class: All; surfaced"),
                        ("young_beside_old", "young class beside an old one: All; surfaced"),
                        ("young_beside_young", "two young classes side by side: All; "
                                               "surfaced (both classes counted)"),
                        ("young_beside_near", "young class beside the class it links to most: "
                                              "All; surfaced (both classes counted)")):
        for path in sorted((study / kind).glob("*/rows.jsonl")):
            rows = [r for r in read_jsonl(path) if new in r and base in r]
            lines.append(f"| {path.parent.name} | {label} | {len(rows)} | "
                         + paired([(r[new]["all"], r[base]["all"]) for r in rows])
                         + f" | {sum(found(r[base]) for r in rows)} / "
                         f"{sum(found(r[new]) for r in rows)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--out", default=None, help="a file name inside the study folder")
    args = ap.parse_args(argv)
    if not (args.study / "proxies" / "fits.jsonl").exists():
        print(f"error: {args.study / 'proxies' / 'fits.jsonl'}: no proxy rows", flush=True)
        return 2
    try:
        lines = rule_lines(args.study, args.new, args.base)
    except ValueError as err:
        print(f"error: {err}", flush=True)
        return 2
    text = "\n".join(lines) + "\n"
    if args.out:
        (args.study / args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
