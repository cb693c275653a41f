"""Does a loop seeded with another study's trainings (``benchmarks.nightly_loop --trainings-from``)
score exactly as the loop it took them from, when it runs at the same settings?

    python -m benchmarks.seeded_check --seeded benchmarks/results/seeded_loops
        --source benchmarks/results/nightly_loop_burstjoin

Every finished loop under ``<seeded>/loops`` is compared with the loop of the same name under
``<source>/loops``, field by field (each night's scores, the scoreboard, the lineage events, the
per-class answer's choices), leaving out what only records how the loop was run
(:data:`BOOKKEEPING`: the code version, the seeding, the timing, the settings' record). Writes
``<seeded>/same.md``. A seeded loop that scores the same is the evidence that an answer or
lineage study may take its loops' trainings from another study's kept state.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

#: fields that record how a loop was run, not what it answered
BOOKKEEPING = ("defaults_of", "trainings_from", "wall_seconds", "seconds_per_night",
               "nights_timed", "pipeline_defaults")


def differing(seeded: dict, source: dict) -> list[str]:
    """The fields of two loop records that differ, bookkeeping left out, in sorted order."""
    keys = (set(seeded) | set(source)) - set(BOOKKEEPING)
    return sorted(k for k in keys if seeded.get(k) != source.get(k))


def compare(seeded_dir: Path, source_dir: Path) -> list[str]:
    """The table's lines: per seeded loop, the fields compared and those that differ."""
    lines = ["| loop | trainings from | fields compared | fields differing |",
             "|---|---|---|---|"]
    for path in sorted((seeded_dir / "loops").glob("*.json")):
        seeded = json.loads(path.read_text())
        other = source_dir / "loops" / path.name
        if not other.exists():
            lines.append(f"| {path.stem} | {seeded.get('trainings_from', '–')} | – | "
                         f"no loop {path.name} under {source_dir} |")
            continue
        source = json.loads(other.read_text())
        keys = (set(seeded) | set(source)) - set(BOOKKEEPING)
        diff = differing(seeded, source)
        lines.append(f"| {path.stem} | {seeded.get('trainings_from', '– (not seeded)')} | "
                     f"{len(keys)} | {', '.join(diff) if diff else 'none'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--seeded", type=Path, required=True)
    ap.add_argument("--source", type=Path, required=True)
    args = ap.parse_args(argv)
    if not (args.seeded / "loops").is_dir():
        print(f"error: {args.seeded / 'loops'}: no finished loops to compare", flush=True)
        return 2
    lines = compare(args.seeded, args.source)
    (args.seeded / "same.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
