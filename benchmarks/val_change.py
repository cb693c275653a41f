"""The evidence behind the known-class guard's tolerance (``oral choose``; labelled nodes only).

For every results folder of ``oral reproduce`` whose ORAL rows ran a setting other than the
defaults', the paired-by-seed change of the known-class validation accuracy (``val_acc``: the
full task's validation nodes, the only labelled quantity a full-task run has) against the
defaults' rows, and the guard's verdict on seeds 0-2 (``harness.proxy.keeps_known_classes``).
No test score is read. Rows that keep another epoch's model than the defaults' rows (older runs
with 100 epochs or best-validation selection) are left out: their change is the selection rule's,
not the setting's. Rows whose seeds ran on another device are marked: ``oral choose`` pairs fits
of one machine, and the device alone moves BlogCatalog's seeds between basins.

    python -m benchmarks.val_change [--base benchmarks/results] [--out benchmarks/results/known_class_guard/guard.md]
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from benchmarks.paired import side_rows
from oral_core.identity import LATER_FIELDS
from harness.proxy import GUARD_DROP, KEPT_EPOCH, keeps_known_classes, training_key
from harness.reproduction import mean_se

RESULTS = Path(__file__).resolve().parent / "results"
CELLS = [(d, p, proto) for proto in ("ours", "paper") for d in ("cora", "amazonphoto", "blogcatalog")
         for p in ("no", "yes")]


def differs(base: dict, new: dict) -> str:
    """The training fields (and epochs / selection) where ``new``'s configuration differs."""
    a, b = training_key(base), training_key(new)
    keys = sorted(set(a) | set(b) | {"epochs", "selection"})
    out = [f"{k}={b.get(k, new.get(k))}" for k in keys
           if a.get(k, base.get(k)) != b.get(k, new.get(k))]
    return ", ".join(out) or "(same training)"


def _device(row: dict) -> str:
    return "cuda" if str(row.get("device", "cpu")).startswith("cuda") else "cpu"


def change_rows(base: Path, folders: list[Path], drop: float = GUARD_DROP) -> list[dict]:
    rows = []
    for folder in folders:
        for dataset, prior, protocol in CELLS:
            a = side_rows(base, "oral", dataset, prior, protocol, skipped=[])
            b = side_rows(folder, "oral", dataset, prior, protocol, skipped=[])
            seeds = sorted(set(a) & set(b))
            if not seeds or any(a[seeds[0]]["config"].get(k, LATER_FIELDS.get(k))
                                != b[seeds[0]]["config"].get(k, LATER_FIELDS.get(k)) for k in KEPT_EPOCH):
                continue
            devices = {_device(a[s]) for s in seeds} | {_device(b[s]) for s in seeds}
            changes = [float(b[s]["val_acc"]) - float(a[s]["val_acc"]) for s in seeds]
            mean, se = mean_se(changes)
            first = [s for s in seeds if s < 3]
            verdict = (keeps_known_classes({s: float(a[s]["val_acc"]) for s in first},
                                           {s: float(b[s]["val_acc"]) for s in first}, drop)
                       if first else None)
            rows.append({"folder": folder.relative_to(base).as_posix(), "dataset": dataset,
                         "prior": prior, "protocol": protocol, "seeds": len(seeds),
                         "differs": differs(a[seeds[0]]["config"], b[seeds[0]]["config"]),
                         "base": sum(float(a[s]["val_acc"]) for s in seeds) / len(seeds),
                         "new": sum(float(b[s]["val_acc"]) for s in seeds) / len(seeds),
                         "change": mean, "se": se, "worst": min(changes), "guard": verdict,
                         "cross_device": len(devices) > 1})
    return rows


def markdown(rows: list[dict], command: str, drop: float) -> str:
    lines = ["# Known-class validation accuracy: each setting against the defaults (the guard's evidence)",
             "", f"Command: `{command}`", "",
             "Labelled nodes only: `val_acc` is the known-class validation accuracy of the model each "
             "full-task run keeps. Paired by seed with the defaults' rows; `guard (0-2)` is "
             f"`oral choose`'s verdict on seeds 0-2 (refused when mean + s.e. < −{drop:g}).", "",
             "| folder | dataset | prior | protocol | seeds | differs from the defaults | val. base | "
             "val. new | change (s.e.) | worst seed | guard (0-2) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r["guard"]
        verdict = "–" if g is None else f"{g['val_change']:+.1f}: " + ("kept" if g["kept"] else "**refused**")
        folder = r["folder"] + (" (other device)" if r["cross_device"] else "")
        lines.append(f"| {folder} | {r['dataset']} | {r['prior']} | {r['protocol']} | {r['seeds']} | "
                     f"{r['differs']} | {r['base']:.1f} | {r['new']:.1f} | {r['change']:+.2f} "
                     f"({r['se']:.2f}) | {r['worst']:+.1f} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, default=RESULTS, help="the defaults' results folder")
    ap.add_argument("--out", type=Path, default=RESULTS / "known_class_guard" / "guard.md")
    args = ap.parse_args(argv)
    folders = sorted({p.parent.parent for p in args.base.rglob("runs/oral")
                      if p.parent.parent != args.base})
    rows = change_rows(args.base, folders)
    if not rows:
        print(f"error: no folder under {args.base} has ORAL rows paired with its defaults", file=sys.stderr)
        return 2
    here = Path.cwd()

    def shown(p: Path) -> str:
        return str(p.relative_to(here)) if p.is_absolute() and p.is_relative_to(here) else str(p)
    command = "python -m benchmarks.val_change " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(rows, command.strip(), GUARD_DROP))
    print(f"{len(rows)} rows -> {shown(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
