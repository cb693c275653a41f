"""Early-stopping rules judged offline on the held-out-class proxy's per-epoch curves.

``benchmarks.epoch_vote`` stores, per seed, every epoch's proxy All (labelled nodes only: the
hidden known class and half the visible classes' validation nodes) and the share of nodes whose
class changed from the epoch before (no label). A stopping rule reads only the change curve;
this script scores where each rule of a small grid would have stopped against the last epoch of
the same run (paired by construction).

    python -m benchmarks.stop_rules cora-noprior amazonphoto-noprior blogcatalog-prior

The rule was **chosen on Cora** (first folder) before the other folders existed: the middle of
the region of the grid that beat the last epoch there (share 2%, patience 10); the other
folders confirm or refute it without being used to choose. Table:
``benchmarks/results/stop_rules/stop_rules.md``.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .epoch_vote import stable_epoch

RESULTS = Path(__file__).resolve().parent / "results"
SHARES = (0.01, 0.02, 0.03, 0.05)
PATIENCES = (3, 5, 10)
#: the rule chosen on the Cora proxy (see the module docstring)
CHOSEN = (0.02, 10)


def curves(folder: Path) -> list[dict]:
    out = []
    for path in sorted(folder.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        data = json.loads(path.read_text())
        found = [r for r in data["rows"] if r["rule"] == "curve"]
        if found:
            out.append(found[0] | {"pol_start_epoch": data["key"]["config"]["pol_start_epoch"]})
    return out


def mean_se(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    se = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)) if len(xs) > 1 else float("nan")
    return m, se


def grid(runs: list[dict]) -> list[dict]:
    rows = []
    for share in SHARES:
        for patience in PATIENCES:
            diffs, stops = [], []
            for c in runs:
                last = len(c["all_by_epoch"]) - 1
                e = stable_epoch(c["changed_by_epoch"], c["pol_start_epoch"] + 10, share, patience)
                stops.append(e / last)
                diffs.append(c["all_by_epoch"][e] - c["all_by_epoch"][last])
            d, se = mean_se(diffs)
            rows.append({"share": share, "patience": patience, "seeds": len(runs), "diff": d,
                         "se": se, "ahead": sum(x > 0 for x in diffs),
                         "behind": sum(x < 0 for x in diffs), "epochs": sum(stops) / len(stops)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="folders under benchmarks/results/epoch_vote/")
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    results = Path(args.results)
    lines = ["# Early stopping when the assignments stop changing (held-out-class proxy)", "",
             f"Command: `python -m benchmarks.stop_rules {' '.join(args.folders)}` (per-epoch "
             "curves of `benchmarks.epoch_vote` runs at the default configuration). Rule "
             "`share / patience`: stop at the first epoch from `pol_start_epoch + 10` on after "
             "which fewer than `share` of the nodes changed class in each of `patience` epochs "
             "(no label read); otherwise train to the end. `stop − last`: the proxy All at the "
             "stop minus at the last epoch of the same run (mean, standard error, seeds ahead / "
             "behind); `epochs`: the share of the epochs trained. The rule marked **chosen** was "
             f"picked on `{args.folders[0]}` alone; the other folders only test it.", ""]
    for name in args.folders:
        runs = curves(results / "epoch_vote" / name)
        if not runs:
            lines += [f"## {name}", "", "no seed with a per-epoch curve yet", ""]
            continue
        lines += [f"## {name} ({len(runs)} seeds)", "", "| share | patience | stop − last (s.e.) | "
                  "ahead / behind | epochs |", "|---|---|---|---|---|"]
        for r in grid(runs):
            mark = " **chosen**" if (r["share"], r["patience"]) == CHOSEN else ""
            lines.append(f"| {r['share']:.0%}{mark} | {r['patience']} | {r['diff']:+.2f} ({r['se']:.2f}) | "
                         f"{r['ahead']} / {r['behind']} | {r['epochs']:.0%} |")
        lines.append("")
    out = results / "stop_rules" / "stop_rules.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
