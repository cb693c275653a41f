"""Two result folders of ``oral reproduce``, paired by seed (issue 18: does a faster setting keep
the accuracy of the defaults?).

    python -m benchmarks.paired --base benchmarks/results --new benchmarks/results/fast_defaults \\
        --dataset cora,blogcatalog,amazonphoto --both-priors [--method oral] [--protocol ours] \\
        [--label "spmm + sparse input"] [--tolerance 1.0] [--out FILE.md]

``--base`` and ``--new`` repeat: the seeds of several folders of one side are pooled (e.g. seeds
0-9 in the committed tables, 10-19 in a check's own folder).

For every dataset and prior setting, the seeds finished in both folders: All (GCD convention),
Known and Novel (ORCA convention), the class-number error, and ``new − base`` on All with its
standard error and the number of seeds where ``new`` is ahead. A row is ``within`` when the mean
change of All is at least ``−tolerance`` points (issue 18: a speed-up that loses more than one
point of All on any dataset is an option, not a default). The fit seconds the seed files record
come from different runs and machine loads: indicative only (``benchmarks.speed`` measures
speed). Seeds that failed to train are left out of both sides (``seed_rows``).
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness.reproduction import mean_se, seed_rows

ROOT = Path(__file__).resolve().parent.parent


class SeedClash(ValueError):
    """One side's folders hold the same seed with different results."""


def side_rows(folders, method: str, dataset: str, prior: str, protocol: str,
              skipped: list[str] | None = None) -> dict:
    """Seed -> result over one side's folders (one folder or several: seeds pooled; the same
    result twice is one seed). A seed two folders hold with different All is refused, unless
    ``skipped`` is a list: then the first folder's seed is kept and the later one named there
    (e.g. a diagnostic rerun of committed seeds on another device)."""
    out: dict = {}
    for folder in ([folders] if isinstance(folders, (str, Path)) else folders):
        for r in seed_rows(Path(folder), method, dataset, prior, protocol):
            if r["seed"] in out and float(out[r["seed"]]["all"]) != float(r["all"]):
                if skipped is None:
                    raise SeedClash(f"{dataset} {prior} seed {r['seed']}: two folders of one side "
                                    f"disagree (All {out[r['seed']]['all']} vs {r['all']}, {folder})")
                skipped.append(f"{Path(folder).name}/{method} {dataset} {prior} seed {r['seed']}")
                continue
            out[r["seed"]] = r
    return out


def paired_rows(base, new, method: str, datasets: list[str], priors: list[str],
                protocol: str, tolerance: float, base_method: str | None = None,
                skipped: list[str] | None = None) -> list[dict]:
    """``base`` / ``new``: a results folder each, or a list of folders whose seeds are pooled.
    ``base_method``: the base side's method when it differs from ``method`` (e.g. ORAL against
    OpenNCD, paired by seed). ``skipped``: see :func:`side_rows` (None: a clash is refused)."""
    rows = []
    for dataset in datasets:
        for prior in priors:
            a = side_rows(base, base_method or method, dataset, prior, protocol, skipped)
            b = side_rows(new, method, dataset, prior, protocol, skipped)
            seeds = sorted(set(a) & set(b))
            if not seeds:
                continue

            def mean(side: dict, key: str) -> float:
                values = [float(side[s][key]) for s in seeds if key in side[s]]
                return sum(values) / len(values) if values else float("nan")

            diffs = [float(b[s]["all"]) - float(a[s]["all"]) for s in seeds]
            d, se = mean_se(diffs)
            rows.append({"dataset": dataset, "prior": prior, "seeds": len(seeds),
                         "base_all": mean(a, "all"), "new_all": mean(b, "all"),
                         "base_known": mean(a, "orca_known"), "new_known": mean(b, "orca_known"),
                         "base_novel": mean(a, "orca_novel"), "new_novel": mean(b, "orca_novel"),
                         "base_err": mean(a, "classes_abs_err"), "new_err": mean(b, "classes_abs_err"),
                         "diff": d, "se": se, "ahead": sum(x > 0 for x in diffs),
                         "base_s": mean(a, "seconds"), "new_s": mean(b, "seconds"),
                         "within": d >= -tolerance})
    return rows


def markdown(rows: list[dict], command: str, label: str, tolerance: float,
             base: str | None = None) -> str:
    title = f"paired by seed with {base}" if base else "paired by seed with the defaults"
    lines = [f"# {label}: {title}", "", f"Command: `{command}`", "",
             "All: GCD convention; Known / Novel: ORCA convention; |k̂ − k|: class-number error. "
             f"`within`: the mean change of All is at least −{tolerance:g} points. Fit seconds "
             "are what the seed files record (different runs and loads; indicative only).", "",
             "| dataset | prior | seeds | All base | All new | new − base (s.e.) | new ahead | "
             "Known base / new | Novel base / new | abs(k̂ − k) base / new | fit s base / new | within |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['prior']} | {r['seeds']} | {r['base_all']:.2f} | "
            f"{r['new_all']:.2f} | {r['diff']:+.2f} ({r['se']:.2f}) | {r['ahead']}/{r['seeds']} | "
            f"{r['base_known']:.1f} / {r['new_known']:.1f} | {r['base_novel']:.1f} / "
            f"{r['new_novel']:.1f} | {r['base_err']:.2f} / {r['new_err']:.2f} | "
            f"{r['base_s']:.0f} / {r['new_s']:.0f} | {'yes' if r['within'] else 'NO'} |")
    if not rows:
        lines.append("| (no seed finished in both folders) |||||||||||| ")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, action="append", required=True,
                    help="results folder of the defaults (repeat to pool seeds of several)")
    ap.add_argument("--new", type=Path, action="append", required=True,
                    help="results folder of the other setting (repeatable likewise)")
    ap.add_argument("--dataset", required=True, help="comma list")
    ap.add_argument("--method", default="oral")
    ap.add_argument("--base-method", default=None,
                    help="the base side's method (default: --method), e.g. opennc to pair ORAL "
                         "with a baseline seed by seed")
    ap.add_argument("--protocol", default="ours", choices=["ours", "paper"])
    ap.add_argument("--both-priors", action="store_true")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--label", default=None)
    ap.add_argument("--tolerance", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    for folder in (*args.base, *args.new):
        if not (folder / "runs").is_dir():
            print(f"error: {folder}: no runs/ folder of `oral reproduce` results", file=sys.stderr)
            return 2
    priors = ["no", "yes"] if args.both_priors else ["yes" if args.prior else "no"]
    datasets = [d.strip() for d in args.dataset.split(",") if d.strip()]
    try:
        rows = paired_rows(args.base, args.new, args.method, datasets, priors, args.protocol,
                           args.tolerance, args.base_method)
    except SeedClash as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    command = "python -m benchmarks.paired " + shlex.join(argv if argv is not None else sys.argv[1:])
    against = f" against {args.base_method}" if args.base_method else ""
    text = markdown(rows, command, args.label or f"{' + '.join(map(str, args.new))} "
                                                  f"({args.method}{against}, {args.protocol})",
                    args.tolerance, base=args.base_method)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
