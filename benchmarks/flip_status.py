"""Which rows a change of defaults (a "flip") still needs, on which device, and the copy that
lands it once none is missing.

A flip of ORAL's defaults (today: ``known_split_share=0.5``, ``known_absorb_share=0.5``,
``known_absorb_guard=true``) changes the configuration hash of every ORAL-family row (ORAL, its
Table 4 ablations) and of no baseline row, so its rows are trained first into other folders
(``benchmarks/run_flip.sh``, ``benchmarks/gpu_flip.sh``) with the flip spelled out as ``--set``.
This lists, for every ORAL-family cell the tables hold, the seeds each source folder has at
the flip's hash and where they trained, beside the device of the committed OpenNCD row of the
same cell (the baseline the goal pairs ORAL with). The same seed can land in another basin on
another device, so a cell takes the source whose seeds trained where OpenNCD's did, and
falls back to the first complete source (saying so) when none did.

    python -m benchmarks.flip_status --source benchmarks/results/flip_guard_cpu --source benchmarks/results/flip_guard
    python -m benchmarks.flip_status ... --apply   # copy every cell's seeds over benchmarks/results/runs

``--apply`` copies nothing unless every cell is complete (exit 1, naming the cells still
missing); then set the same values in ``oral_core/config.py`` and rerun
``bash benchmarks/run_tables.sh``, which reuses every copied seed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from oral_core.config import ORALConfig
from harness.experiment import FEATURES, method_config
from oral_core.identity import config_hash
from harness.reproduction import device_summary, read_seed_files, run_dir

#: the last flip, the three known-group settings (README, "Open choices"): the defaults since
#: 2026-11-27; a lent GPU can still train the AmazonPhoto paper-protocol cells where their
#: OpenNCD rows trained (benchmarks/gpu_flip.sh), and --apply then prefers those
FLIP = {"known_split_share": 0.5, "known_absorb_share": 0.5, "known_absorb_guard": True}
#: the ORAL-family cells of the tables (benchmarks/run_tables.sh): ORAL under both protocols,
#: its Table 4 ablations under the paper's
CELLS = [("oral", "ours"), ("oral", "paper"), ("oral_no_pol", "paper"), ("oral_no_pan", "paper")]
DATASETS = ["cora", "amazonphoto", "blogcatalog"]
SEEDS = range(10)
CLASSES = {"cora": 7, "amazonphoto": 8, "blogcatalog": 6}


@dataclass
class Cell:
    method: str
    dataset: str
    prior: bool
    protocol: str
    partner_device: str  # the committed OpenNCD row's devices ("–": none)
    sources: dict[str, list[dict]] = field(default_factory=dict)  # folder -> seeds at the hash

    @property
    def name(self) -> str:
        return (f"{self.method} {self.dataset} {'prior' if self.prior else 'noprior'} "
                f"{self.protocol}")

    def complete(self, folder: str) -> bool:
        return sorted(r["seed"] for r in self.sources.get(folder, [])) == list(SEEDS)

    def choice(self, order: list[str]) -> tuple[str | None, bool]:
        """The source to take (None: no complete one) and whether its device matches."""
        done = [f for f in order if self.complete(f)]
        for folder in done:
            if device_summary(self.sources[folder]) == self.partner_device:
                return folder, True
        return (done[0], False) if done else (None, False)


def flip_hash(method: str, dataset: str, prior: bool, flip: dict) -> str:
    base = ORALConfig.from_dict(ORALConfig().to_dict() | flip)
    n = CLASSES[dataset] if prior else None
    return config_hash(method_config(method, base, n, 0), FEATURES[dataset])


def cells(results: Path, sources: list[Path], flip: dict) -> list[Cell]:
    out = []
    for method, protocol in CELLS:
        for dataset in DATASETS:
            for prior in (False, True):
                partner = read_seed_files(run_dir(results, "opennc", dataset, prior, protocol))
                cell = Cell(method, dataset, prior, protocol,
                            device_summary([r for r in partner if not r.get("failed")]))
                expected = flip_hash(method, dataset, prior, flip)
                for folder in sources:
                    rows = [r for r in read_seed_files(run_dir(folder, method, dataset, prior,
                                                               protocol))
                            if r.get("config_hash") == expected and int(r["seed"]) in SEEDS]
                    cell.sources[str(folder)] = rows
                out.append(cell)
    return out


def table(found: list[Cell], order: list[str]) -> list[str]:
    lines = ["| cell | OpenNCD on | " + " | ".join(f"`{f}`" for f in order) + " | take |",
             "|---|---|" + "---|" * len(order) + "---|"]
    for cell in found:
        have = []
        for folder in order:
            rows = cell.sources[folder]
            have.append(f"{len(rows)}/10 {device_summary(rows)}" if rows else "–")
        folder, matched = cell.choice(order)
        take = ("missing" if folder is None
                else f"`{folder}`" + ("" if matched else " (device differs)"))
        lines.append(f"| {cell.name} | {cell.partner_device} | " + " | ".join(have) + f" | {take} |")
    return lines


def apply(found: list[Cell], order: list[str], results: Path) -> int:
    missing = [c.name for c in found if c.choice(order)[0] is None]
    if missing:
        print(f"flip_status: {len(missing)} cells have no complete source, nothing copied: "
              + ", ".join(missing[:6]) + (" ..." if len(missing) > 6 else ""), file=sys.stderr)
        return 1
    for cell in found:
        folder, _ = cell.choice(order)
        src = run_dir(Path(folder), cell.method, cell.dataset, cell.prior, cell.protocol)
        dst = run_dir(results, cell.method, cell.dataset, cell.prior, cell.protocol)
        dst.mkdir(parents=True, exist_ok=True)
        for row in cell.sources[folder]:
            name = f"seed_{row['seed']}.json"
            shutil.copyfile(src / name, dst / name)
    print(f"copied {len(found)} cells into {results}/runs; now set "
          + ", ".join(f"{k}={v}" for k, v in FLIP.items())
          + " in oral_core/config.py and run bash benchmarks/run_tables.sh")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", required=True,
                    help="a folder of flip rows (its runs/ like benchmarks/results/runs); "
                         "repeat, in order of preference")
    ap.add_argument("--results", default="benchmarks/results", help="the committed tables' folder")
    ap.add_argument("--apply", action="store_true", help="copy every cell's chosen seeds over "
                    "<results>/runs (only when no cell is missing)")
    args = ap.parse_args(argv)
    results = Path(args.results)
    bad = [s for s in [*args.source, args.results] if not Path(s, "runs").is_dir()]
    if bad:
        print(f"flip_status: {bad[0]} has no runs/ folder (rule: every --source and --results is a "
              "folder that oral reproduce --out wrote)", file=sys.stderr)
        return 2
    order = [str(Path(s)) for s in args.source]
    found = cells(results, [Path(s) for s in order], FLIP)
    print("\n".join(table(found, order)))
    return apply(found, order, results) if args.apply else 0


if __name__ == "__main__":
    sys.exit(main())
