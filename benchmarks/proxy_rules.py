"""Model-selection rules and training length, judged by the held-out-class proxy (labelled nodes only).

One training run per seed of ``max(--horizons)`` epochs answers every rule at every horizon
(:func:`benchmarks.tune.rule_epochs`): ``best_val@E`` (the epoch with the best validation accuracy
up to E, our earlier default) and ``last@E`` (epoch E, the paper's Algorithm 1). Seed s hides
known class s mod K (``--hide rotate``); model selection reads half of the visible classes'
validation nodes and the proxy scores the other half plus every labelled node of the hidden class.
No test node is read.

    python -m benchmarks.proxy_rules --dataset cora --seeds 5 --horizons 100,150,200 [--prior]
        [--set KEY=VALUE ...]

Per-seed rows go to ``benchmarks/results/proxy/<dataset>-<prior>[-<overrides>]/seed_<n>.json``
(an interrupted sweep resumes); the table to ``benchmarks/results/proxy/proxy_rules_<dataset>-<prior>[...].md``/``.csv``.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path

from harness.experiment import prepare
from harness.proxy import NOT_TRAINING, training_key  # noqa: F401 (re-exported)
from harness.reproduction import mean_se

from .tune import HIDE_MODES, config_overrides, hide_tag, proxy_rules

RESULTS = Path(__file__).resolve().parent / "results"


def _paired(rows: list[dict], rule: str, reference: str, metric: str = "all") -> tuple[float, float, int]:
    """Mean and standard error of (rule − reference) over the seeds that have both."""
    by = {(r["rule"], r["seed"]): r[metric] for r in rows}
    seeds = sorted({s for (_, s) in by})
    diffs = [by[(rule, s)] - by[(reference, s)] for s in seeds
             if (rule, s) in by and (reference, s) in by and not math.isnan(by[(rule, s)])
             and not math.isnan(by[(reference, s)])]
    return (*mean_se(diffs), len(diffs))


def table(rows: list[dict], reference: str) -> list[str]:
    """One line per rule: means over seeds and the paired difference against ``reference``."""
    rules = list(dict.fromkeys(r["rule"] for r in rows))
    lines = ["| rule | seeds | all | known (visible) | novel (hidden) | classes | epoch | "
             f"all − {reference} (s.e.) | ahead |", "|---|---|---|---|---|---|---|---|---|"]
    for rule in rules:
        sel = [r for r in rows if r["rule"] == rule]

        def mean(key):
            vals = [r[key] for r in sel if not math.isnan(r[key])]
            return sum(vals) / len(vals) if vals else float("nan")
        d, se, n = _paired(rows, rule, reference)
        by = {(r["rule"], r["seed"]): r["all"] for r in rows}
        ahead = sum(by[(rule, s)] > by[(reference, s)] for s in {r["seed"] for r in sel}
                    if (reference, s) in by)
        lines.append(f"| {rule} | {len(sel)} | {mean('all'):.2f} | {mean('known'):.2f} | "
                     f"{mean('novel'):.2f} | {mean('classes'):.1f} | {mean('epoch'):.0f} | "
                     f"{d:+.2f} ({se:.2f}) | {ahead}/{n} |")
    return lines


def read_folder(folder: Path) -> list[dict]:
    """Every finished seed's rows in one proxy folder, in seed order."""
    rows = []
    for path in sorted(folder.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        rows += json.loads(path.read_text())["rows"]
    return rows


def compare(results: Path, reference: str, other: str) -> list[str]:
    """Paired by seed and rule: the proxy's All of folder ``other`` minus folder ``reference``
    (two settings of one lever, same seeds, same hidden classes)."""
    a = {(r["rule"], r["seed"]): r for r in read_folder(results / "proxy" / reference)}
    b = {(r["rule"], r["seed"]): r for r in read_folder(results / "proxy" / other)}
    lines = [f"| rule | seeds | all `{reference}` | all `{other}` | difference (s.e.) | ahead |",
             "|---|---|---|---|---|---|"]
    for rule in dict.fromkeys(rule for rule, _ in a):
        seeds = sorted(s for (r, s) in a if r == rule and (rule, s) in b)
        if not seeds:
            continue
        diffs = [b[(rule, s)]["all"] - a[(rule, s)]["all"] for s in seeds]
        mean, se = mean_se(diffs)
        lines.append(f"| {rule} | {len(seeds)} | {sum(a[(rule, s)]['all'] for s in seeds) / len(seeds):.2f} "
                     f"| {sum(b[(rule, s)]['all'] for s in seeds) / len(seeds):.2f} | {mean:+.2f} "
                     f"({se:.2f}) | {sum(d > 0 for d in diffs)}/{len(diffs)} |")
    return lines


def same_training(saved: dict, key: dict) -> bool:
    """True when a saved seed file answers ``key`` (same horizons, same training)."""
    return (saved.get("horizons") == key["horizons"]
            and training_key(saved.get("config", {})) == training_key(key["config"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--horizons", default="100,150,200",
                    help="comma-separated epoch counts; training runs to the largest")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--hide", choices=HIDE_MODES, default="rotate",
                    help="rotate: seed s hides known class s mod K; last: the last known class; "
                         "extremes: the known classes with the most and the fewest labelled nodes, "
                         "together (a large and a small stand-in novel class)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override for every run (names the output folder)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument("--compare", nargs=2, metavar=("REFERENCE", "OTHER"),
                    help="no training: compare two finished proxy folders (names under "
                         "results/proxy) paired by seed, and write proxy/proxy_compare_<OTHER>.md")
    args = ap.parse_args(argv)
    if args.compare:
        reference, other = args.compare
        lines = [f"# Held-out-class proxy: `{other}` against `{reference}`", "",
                 f"Command: `python -m benchmarks.proxy_rules --dataset {args.dataset} --compare "
                 f"{reference} {other}`", "", "Proxy All (%), paired by seed and rule.", "",
                 *compare(Path(args.results), reference, other)]
        Path(f"{Path(args.results) / 'proxy' / ('proxy_compare_' + other)}.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    horizons = sorted({int(h) for h in args.horizons.split(",")})
    base, overrides = config_overrides(ap, args.set)
    if base.stop_when_stable is not None:
        ap.error(f"--set stop_when_stable={base.stop_when_stable}: these rules are read off every "
                 "epoch of a full run; an early stop leaves the later epochs unrun (the stop "
                 "rule itself is judged offline by benchmarks.stop_rules)")
    if base.lr_schedule != "constant" and len(horizons) > 1:
        ap.error(f"--set lr_schedule={base.lr_schedule}: the rate at every epoch depends on the "
                 "total epochs, so one run cannot answer several horizons; give one --horizons")
    prep = prepare(args.dataset, args.data_dir)
    if args.prior:
        base.prior_num_classes = prep.graph.num_classes
    name = prep.graph.name.lower()
    tag = f"{name}-{'prior' if args.prior else 'noprior'}" + "".join(
        f"-{k}={v}" for k, v in sorted(overrides.items())) + hide_tag(args.hide)
    folder = Path(args.results) / "proxy" / tag
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        path = folder / f"seed_{seed}.json"
        key = {"horizons": horizons, "config": base.to_dict() | {"seed": None}}
        if path.exists():
            saved = json.loads(path.read_text())
            if same_training(saved.get("key", {}), json.loads(json.dumps(key))):
                print(f"seed {seed}: done before, reused", flush=True)
                rows += saved["rows"]
                continue
        t = time.perf_counter()
        seed_rows = proxy_rules(prep, seed, base, horizons, args.hide)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "seconds": time.perf_counter() - t,
                                   "rows": seed_rows}, indent=1))
        tmp.replace(path)
        print(f"seed {seed} ({time.perf_counter() - t:.0f}s): " + ", ".join(
            f"{r['rule']} {r['all']:.1f}" for r in seed_rows), flush=True)
        rows += seed_rows
    # every finished seed in the folder feeds the table (other invocations may have added seeds)
    rows = [r for path in sorted(folder.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1]))
            if (saved := json.loads(path.read_text())).get("key", {}).get("horizons") == horizons
            for r in saved["rows"]]
    reference = f"best_val@{horizons[0]}"
    lines = [f"# Held-out-class proxy: model selection and training length ({tag})", "",
             f"Command: `python -m benchmarks.proxy_rules {' '.join(argv or __import__('sys').argv[1:])}`",
             "", "Labelled nodes only: seed s hides known class s mod K (it plays the novel class);",
             "model selection reads half of the visible classes' validation nodes, the proxy scores",
             "the other half plus every labelled node of the hidden class (GCD-convention accuracy,",
             "%). One training run per seed answers every rule. Paired differences are per seed.", "",
             *table(rows, reference)]
    out = Path(args.results) / "proxy" / f"proxy_rules_{tag}"
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")
    with Path(f"{out}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
