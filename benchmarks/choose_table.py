"""ORAL with the per-graph choice of ``oral choose`` against the defaults and the baselines, paired
by seed, under the protocol each choice was made for (issue 17).

    python -m benchmarks.choose_table [--results benchmarks/results] [--out benchmarks/results/choose/choose_paired.md]
    python -m benchmarks.choose_table --choices benchmarks/results/choose_batch \
        --previous benchmarks/results/choose --out benchmarks/results/choose_batch/choose_batch_paired.md

``--choices DIR`` reads the choices of another ``oral choose --out DIR`` (default
``<results>/choose``); ``--previous DIR`` also pairs each cell with the setting the choice in
``DIR`` made for the same cell, when that differs (the choice with a new candidate against the
choice without it).

For every choice ``benchmarks/results/choose/<dataset>-<prior>[-paper].json`` (made by ``oral
choose [--protocol paper]`` on labelled nodes only), the seed files of the chosen setting are looked up among the
result folders (``<results>`` and each subfolder holding ``runs/oral/<dataset>-<prior>``) by
their configuration: every folder whose seeds ran the defaults plus the chosen overrides is
pooled (the seed, progress bar, device and the prior's count set aside). The chosen setting is then
paired by seed with the defaults and with OpenNCD, GCD and the known-class GCN (All in the GCD convention for every method; for GCN that is at least its fixed-id All, so the harder comparison). A cell whose chosen setting has no
seed yet says so.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from oral_core.config import ORALConfig
from oral_core.identity import LATER_FIELDS

from .paired import paired_rows

RESULTS = Path(__file__).resolve().parent / "results"
#: fields every seed sets for itself, or that cannot change a result (the attention kernel is
#: kept: the two kernels agree only within rounding, and single seeds move with it)
NOT_THE_SETTING = ("seed", "progress", "device", "eval_chunk_edges", "prior_num_classes")
BASELINES = ("opennc", "gcd", "gcn")


def setting(config: dict) -> dict:
    """The part of a configuration that names the setting (see :data:`NOT_THE_SETTING`)."""
    return {k: v for k, v in config.items() if k not in NOT_THE_SETTING
            and not (k in LATER_FIELDS and v == LATER_FIELDS[k])}


def folders_with(results: Path, method: str, cell: str, want: dict | None = None) -> list[Path]:
    """Result folders whose ``runs/<method>/<cell>`` seeds ran the setting ``want`` (any, when
    None)."""
    out = []
    for folder in [results, *sorted(p for p in results.iterdir() if p.is_dir())]:
        seeds = sorted((folder / "runs" / method / cell).glob("seed_*.json"))
        if not seeds:
            continue
        if want is not None and setting(json.loads(seeds[0].read_text())["config"]) != want:
            continue
        out.append(folder)
    return out


def _folders_of(results: Path, cell: str, overrides: dict) -> list[Path]:
    return folders_with(results, "oral", cell,
                        setting(ORALConfig.from_dict(ORALConfig().to_dict() | overrides).to_dict()))


def lines_for(results: Path, choice_path: Path, previous: Path | None = None,
              skipped: list[str] | None = None) -> list[str]:
    choice = json.loads(choice_path.read_text())
    cell = choice_path.stem  # <dataset>-<prior>[-paper]: also the seed folders' name
    protocol = "paper" if cell.endswith("-paper") else "ours"
    dataset, prior = cell.removesuffix("-paper").rsplit("-", 1)
    overrides = choice["overrides"]  # typed, as oral choose wrote them
    base = ORALConfig()
    want_cfg = ORALConfig.from_dict(base.to_dict() | overrides)
    want = setting(want_cfg.to_dict())
    defaults = folders_with(results, "oral", cell, setting(base.to_dict()))
    chosen = folders_with(results, "oral", cell, want)
    head = f"| {dataset} | {prior} | {protocol} | `{choice['chosen']}` |"
    if not chosen:
        return [head + " (no seed of this setting yet) |||||"]
    out = []
    against = [("defaults", defaults, None)] if overrides else []
    before = previous / choice_path.name if previous is not None else None
    if before is not None and before.exists():
        old = json.loads(before.read_text())
        if old["overrides"] and old["overrides"] != overrides:
            against.append((f"`{old['chosen']}`", _folders_of(results, cell, old["overrides"]), None))
    for label, side, method in against + [(m, folders_with(results, m, cell), m) for m in BASELINES]:
        rows = paired_rows(side, chosen, "oral", [dataset], ["yes" if prior == "prior" else "no"],
                           protocol, 1.0, method, [] if skipped is None else skipped)
        for r in rows:
            out.append(f"{head} {label} | {r['seeds']} | {r['base_all']:.2f} | {r['new_all']:.2f} | "
                       f"{r['diff']:+.2f} ({r['se']:.2f}) | {r['ahead']}/{r['seeds']} |")
    return out


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(RESULTS.parent.parent))
    except ValueError:
        return str(path)


def _flags(args) -> str:
    out = ""
    for flag, value in (("--choices", args.choices), ("--previous", args.previous),
                        ("--out", args.out)):
        if value is not None:
            out += f" {flag} {_rel(value)}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--choices", type=Path, default=None,
                    help="the choices' folder (oral choose --out; default <results>/choose)")
    ap.add_argument("--previous", type=Path, default=None,
                    help="also pair with the setting each cell's choice in this folder made")
    args = ap.parse_args(argv)
    folder = args.choices or args.results / "choose"
    choices = sorted(folder.glob("*.json"))
    if not choices:
        raise SystemExit(f"error: no choice under {folder}: run `oral choose` first")
    lines = ["# ORAL with the per-graph choice of `oral choose`, paired by seed", "",
             f"Command: `python -m benchmarks.choose_table{_flags(args)}`. The setting of each cell "
             f"was chosen by `oral choose` on labelled nodes only (`{_rel(folder)}/*.md`); the test "
             "labels below only score it. Every result folder whose seeds ran the chosen setting is "
             "pooled; against: the committed defaults, OpenNCD, GCD, the known-class GCN (ORAL's All − theirs).", "",
             "| dataset | prior | protocol | chosen | against | seeds | All against | All chosen | "
             "chosen − against (s.e.) | chosen ahead |", "|---|---|---|---|---|---|---|---|---|---|"]
    skipped: list[str] = []
    for path in choices:
        lines += lines_for(args.results, path, args.previous, skipped)
    if skipped:
        lines += ["", "Seeds left out because a folder listed earlier (the committed tables first, "
                  "then subfolders by name) holds the same seed and setting with another result "
                  "(a rerun on another device, e.g. `gpu_base/`): " + ", ".join(sorted(set(skipped))) + "."]
    text = "\n".join(lines) + "\n"
    out = args.out or folder / f"{folder.name}_paired.md"
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
