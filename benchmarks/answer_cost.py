"""What deciding the night's answer per class costs beside training (``ORAL_NIGHT_ANSWER``).

    python -m benchmarks.answer_cost STATE [STATE ...]

Reads each nightly loop's ``<loop>/state/logs/oral.log`` under the ``--state`` folders of
``benchmarks.nightly_loop``: per night, the training's seconds (the ``trained on ... in X s``
line) and the seconds from that line to the ``answered per class`` line (the reference logistic
regression and the known-class GCN fitted, the choice made, the answer written). Prints, per
graph, the nights read, the median and largest seconds of the answer and its share of the
training's seconds. A night whose run stopped between the two lines is counted when it is rerun
(its gap then holds the stop), hence the median.
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"(\S+ \S+),(\d+) \d+ INFO prefect\.task_runs: "
                  r"(trained on \S+ in ([\d.]+) s|answered per class)")


def nights(log: Path) -> list[tuple[float, float]]:
    """``(training seconds, answer seconds)`` per night of one loop's log."""
    out, trained = [], None
    for line in log.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        at = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + dt.timedelta(
            milliseconds=int(m.group(2)))
        if m.group(4) is not None:
            trained = (at, float(m.group(4)))
        elif trained is not None:
            out.append((trained[1], (at - trained[0]).total_seconds()))
            trained = None
    return out


def table(states: list[Path]) -> str:
    by: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for state in states:
        for log in sorted(state.glob("*/state/logs/oral.log")):
            by[log.parts[-4].rsplit("-sim", 1)[0]] += nights(log)
    lines = ["| graph | nights | training s (median) | answer s (median / largest) | answer / "
             "training (medians) |", "|---|---|---|---|---|"]
    for graph, rows in sorted(by.items()):
        train = statistics.median(t for t, _ in rows)
        answer = statistics.median(a for _, a in rows)
        lines.append(f"| {graph} | {len(rows)} | {train:.1f} | {answer:.2f} / "
                     f"{max(a for _, a in rows):.2f} | {answer / train:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("states", nargs="+", type=Path)
    print(table(ap.parse_args(argv).states))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
