"""How one night's data walks through the code (issue 62's goal "a night that walks down the
layers once"): the project files a night visits from the flow to DuckDB, the stops, the files it
re-enters after leaving them and the calls that climb back up a layer, traced while it runs.

    OMP_NUM_THREADS=1 python -m benchmarks.night_walk --out benchmarks/results/night_walk

A small generated graph (600 nodes, 4 classes, one planted from night 2) is run through
``flows.nightly.nightly_discovery`` for two nights under Prefect's test harness; the second night
(which has a previous run, a champion and lineage to continue) is traced with ``sys.setprofile``
from the moment ``nightly_discovery`` is entered until it returns. Only the project's own files
are followed; the method (``oral_core/``) counts as one unit, its inside is the method's business.

- **stop**: the walk moves from one file to another, by a call or by a return to the caller;
- **left / re-entered**: a file is left when its last frame returns to a caller in another file,
  re-entered when it is called again afterwards (the flow file itself is the recipe and exempt);
- **climb**: a call from a file into a file of a higher layer (cli > flows >
  tasks/prefect_tasks.py > the step modules of tasks/ > tasks/registry, tasks/warehouse >
  data_contracts > oral_core, as docs/architecture.md orders them).

Writes ``walk.csv`` (every stop, in order) and ``README.md`` (the counts, the re-entries by file
and every climb).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "night_walk"
FLOW = "flows/nightly.py"
CONFIG = {"epochs": 20, "hidden_dim": 16, "pol_start_epoch": 10, "cluster_warmup_epochs": 5,
          "device": "cpu"}
PACKAGES = ("cli", "flows", "tasks", "data_contracts", "oral_core")
#: the reading view: the flow's body (1), its Prefect task (2), the plain step (3), its callees (4)
READING = 4


def unit_of(filename: str) -> str | None:
    """The project unit of a source file: its path under the repository, ``oral_core/`` for
    the whole method; None outside the project's packages."""
    try:
        rel = Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    top = rel.split("/", 1)[0]
    if top not in PACKAGES:
        return None
    return "oral_core/" if top == "oral_core" else rel


def layer(unit: str) -> int:
    """The layer of a unit, higher above (docs/architecture.md)."""
    if unit.startswith("cli/"):
        return 6
    if unit.startswith("flows/"):
        return 5
    if unit == "tasks/prefect_tasks.py":
        return 4
    if unit.startswith(("tasks/registry/", "tasks/warehouse/")):
        return 2
    if unit.startswith("tasks/"):
        return 3
    if unit.startswith("data_contracts/"):
        return 1
    return 0


class Walk:
    """The profile function: follows the project units' frames and records the walk.
    ``depth``: follow calls at most that many project frames below the flow (the flow's body
    is 1, a Prefect task 2, the plain step it calls 3, ...); None: every call."""

    def __init__(self, depth: int | None = None):
        self.max_depth = depth
        self.active = False
        self.depth = Counter()          # live frames per unit
        self.stops: list[dict] = []     # every move between units
        self.left: set[str] = set()
        self.reentered = Counter()
        self.climbs: list[dict] = []

    @staticmethod
    def caller_unit(frame) -> str | None:
        back = frame.f_back
        while back is not None:
            unit = unit_of(back.f_code.co_filename)
            if unit is not None:
                return unit
            back = back.f_back
        return None

    @staticmethod
    def project_depth(frame) -> int:
        """Project frames from the flow's body (1) down to ``frame``; 0 outside the night."""
        depth = 0
        while frame is not None:
            code = frame.f_code
            if unit_of(code.co_filename) is not None:
                depth += 1
                if code.co_name == "nightly_discovery" and unit_of(code.co_filename) == FLOW:
                    return depth
            frame = frame.f_back
        return 0

    def __call__(self, frame, event, arg):
        if event not in ("call", "return"):
            return
        code = frame.f_code
        unit = unit_of(code.co_filename)
        if unit is None:
            return
        if not self.active:
            if event == "call" and unit == FLOW and code.co_name == "nightly_discovery":
                self.active = True
                self.depth[unit] += 1
            return
        if self.max_depth is not None and self.project_depth(frame) > self.max_depth:
            return
        caller = self.caller_unit(frame)
        if event == "call":
            self.depth[unit] += 1
            if caller is not None and caller != unit:
                if unit in self.left and unit != FLOW:
                    self.reentered[unit] += 1
                    self.left.discard(unit)
                if layer(unit) > layer(caller):
                    self.climbs.append({"from": caller, "to": unit, "function": code.co_name})
                self.stops.append({"move": "call", "from": caller, "to": unit,
                                   "function": code.co_name, "left": 0})
        else:
            self.depth[unit] -= 1
            if unit == FLOW and code.co_name == "nightly_discovery":
                self.active = False
                return
            if caller is not None and caller != unit:
                left = self.depth[unit] <= 0
                if left:
                    self.left.add(unit)
                self.stops.append({"move": "return", "from": unit, "to": caller,
                                   "function": code.co_name, "left": int(left)})


def run_nights(work: Path, walk) -> dict:
    """Two nights of the small graph; the second traced by the profile function ``walk``."""
    state = work / "state"
    os.environ["ORAL_STATE_DIR"] = str(state)
    for key in ("ORAL_TRACKING_URI", "ORAL_WAREHOUSE"):
        os.environ.pop(key, None)
    from flows.settings import configure_environment

    configure_environment(state)
    from prefect.testing.utilities import prefect_test_harness

    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph
    from flows.nightly import nightly_discovery

    static = make_static_graph(num_nodes=600, num_classes=4, num_features=16, separation=4.0,
                               seed=0, name="walk")
    root = state / "snapshots"
    simulate(static, 2, root, "walk", start_date="2026-03-01", seed=0, known_classes=[0, 1, 2],
             novel_start={3: 1})
    with prefect_test_harness(server_startup_timeout=120):
        nightly_discovery("walk", str(root), "2026-03-01", CONFIG, str(state))
        threading.setprofile(walk)
        sys.setprofile(walk)
        try:
            out = nightly_discovery("walk", str(root), "2026-03-02", CONFIG, str(state))
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    return out


def summary(walk: Walk) -> dict:
    units = {s["to"] for s in walk.stops} | {s["from"] for s in walk.stops}
    return {"files": len(units), "stops": len(walk.stops),
            "reentries": sum(walk.reentered.values()), "climbs": len(walk.climbs)}


def counts_of(walk_csv: Path) -> dict:
    """The reading view's counts read back from a ``walk.csv`` (as :func:`summary` gives them:
    a return row says whether it left its file, so re-entries and climbs follow from the
    rows)."""
    with open(walk_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    left, reentries, climbs = set(), 0, 0
    for r in rows:
        if r["move"] == "return":
            if r["left"] == "1":
                left.add(r["from"])
            continue
        if r["to"] in left and r["to"] != FLOW:
            reentries += 1
            left.discard(r["to"])
        climbs += layer(r["to"]) > layer(r["from"])
    units = {r["from"] for r in rows} | {r["to"] for r in rows}
    return {"files": len(units), "stops": len(rows), "reentries": reentries, "climbs": climbs}


def write(out: Path, walks: dict, command: str, before: Path | None = None) -> str:
    """``walks``: ``{depth: Walk}``, the reading view (a depth) and the whole trace (None);
    ``before``: a folder holding an earlier trace's ``walk.csv``, shown as a row beside."""
    out.mkdir(parents=True, exist_ok=True)
    reading = walks[READING]
    with open(out / "walk.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["step", "move", "from", "to", "function", "left"])
        w.writeheader()
        for i, s in enumerate(reading.stops, 1):
            w.writerow({"step": i} | s)
    s, whole = summary(reading), summary(walks[None])
    lines = [
        "# How one night's data walks through the code",
        "",
        "Question: (issue 62, goal: \"one night's data, followed from the flow to DuckDB: apart "
        "from the flow itself, no file is re-entered after it is left, and no step climbs back "
        "up a layer\") how many project files does a night visit, how often does it move between "
        "them, re-enter a file it left, or call up a layer?",
        "",
        f"Command: `{command}`",
        "",
        f"Answer: read as a reader follows it ({READING} project frames deep: the flow, its "
        f"Prefect task, the plain step, what the step calls), the second night of a small "
        f"generated graph visits {s['files']} project files in {s['stops']} stops, re-enters a "
        f"file it had left {s['reentries']} times and climbs up a layer {s['climbs']} times. "
        f"Every call followed, it visits {whole['files']} files in {whole['stops']} stops with "
        f"{whole['reentries']} re-entries (most of them small shared helpers: value formatting, "
        f"configuration, retries) and {whole['climbs']} calls up a layer, into functions a higher "
        "layer handed down (tests/core/test_layering.py allows no import upward)."
        + ("" if before is None else " Before: {files} files, {stops} stops, {reentries} "
           "re-entries, {climbs} climbs in the reading view (`{name}`).".format(
               **counts_of(before / "walk.csv"), name=before.as_posix())),
        "",
        "Current: yes (traced at the commit this README was committed with).",
        "",
        "How it is measured: `sys.setprofile` from the moment `nightly_discovery` is entered "
        "until it returns; only the project's files are followed, the method (`oral_core/`) as "
        "one unit. A stop is a call into another project file or a return to the caller in "
        "another file; a file is left when its last frame returns, re-entered when called again "
        "after that (the flow file, the recipe, is exempt); a climb is a call into a higher "
        "layer (cli > flows > tasks/prefect_tasks.py > the step modules of tasks/ > "
        "tasks/registry, tasks/warehouse > data_contracts > oral_core). Every stop of the "
        "reading view: `walk.csv`.",
        "",
        "| view | files | stops | re-entries | climbs |",
        "|---|---|---|---|---|",
        f"| reading ({READING} project frames deep) | {s['files']} | {s['stops']} | "
        f"{s['reentries']} | {s['climbs']} |",
        f"| every call | {whole['files']} | {whole['stops']} | {whole['reentries']} | "
        f"{whole['climbs']} |",
    ]
    if before is not None:
        b = counts_of(before / "walk.csv")
        lines.append(f"| reading, before (`{before.as_posix()}`) | {b['files']} | {b['stops']} | "
                     f"{b['reentries']} | {b['climbs']} |")
    lines += [
        "",
        "Re-entries by file (reading view):",
        "",
        "| file | re-entered |",
        "|---|---|",
    ]
    lines += [f"| `{u}` | {n} |" for u, n in reading.reentered.most_common()]
    for title, walk in (("reading view", reading), ("every call", walks[None])):
        lines += ["", f"Climbs, {title} (a call into a higher layer):", "",
                  "| from | to | function | times |", "|---|---|---|---|"]
        climbs = Counter((c["from"], c["to"], c["function"]) for c in walk.climbs)
        lines += [f"| `{a}` | `{b}` | `{f}` | {n} |" for (a, b, f), n in climbs.most_common()]
        if not climbs:
            lines.append("| – | – | – | 0 |")
    text = "\n".join(lines) + "\n"
    (out / "README.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--before", type=Path, default=None,
                    help="a folder with an earlier trace's walk.csv, shown as a row beside")
    args = ap.parse_args(argv)
    walks = {READING: Walk(READING), None: Walk()}

    def profile(frame, event, arg):
        for walk in walks.values():
            walk(frame, event, arg)
    with tempfile.TemporaryDirectory(prefix="night-walk-") as tmp:
        run_nights(Path(tmp), profile)
    command = "OMP_NUM_THREADS=1 python -m benchmarks.night_walk" + (
        "" if args.out == OUT else f" --out {args.out}") + (
        "" if args.before is None else f" --before {args.before}")
    print(write(args.out, walks, command, args.before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
