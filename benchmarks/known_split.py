"""What the known-split or known-absorb check (``known_split_share``, ``known_absorb_share``)
does to the test rows: a diagnostic.

Rows made by ``oral reproduce ... --set known_split_share=S --out FOLDER`` (or
``known_absorb_share=S``, with ``--check known_absorb_share``) carry, beside the
checked answer, the same fit's unchecked answer (``selection_alternatives["last_unchecked"]``),
so every seed is paired within one training run. This reads test labels: it reports, it
chooses nothing (the check is judged by the proxies: ``benchmarks.epoch_vote`` and
``benchmarks.false_novelty --labelled-only``).

    python -m benchmarks.known_split benchmarks/results/known_split [more folders] --out benchmarks/results/known_split/known_split.md
    python -m benchmarks.known_split benchmarks/results/known_absorb_* --check known_absorb_share --out benchmarks/results/known_absorb/known_absorb.md
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from harness.reproduction import mean_se

CHECKS = {"known_split_share": "known-split", "known_absorb_share": "known-absorb"}


def cell_rows(folders: list[Path], check: str = "known_split_share") -> dict[str, list[dict]]:
    """``cell -> seed rows`` (with an unchecked answer, fitted with ``check`` set) under each
    ``folder/runs/oral``."""
    cells = {}
    for sub in sorted((s for folder in folders for s in (folder / "runs" / "oral").glob("*")),
                      key=lambda s: s.name):
        rows = [json.loads(p.read_text()) for p in sorted(sub.glob("seed_*.json"))]
        rows = [r for r in rows if "last_unchecked" in r.get("selection_alternatives", {})
                and r.get("config", {}).get(check) is not None]
        if rows:
            cells[sub.name] = sorted(rows, key=lambda r: r["seed"])
    return cells


def against_lines(cells: dict[str, list[dict]], results: Path, method: str) -> list[str]:
    """Checked and unchecked All against ``method``'s committed rows of the same cell, paired
    by seed (the seeds both have; ``results/runs/<method>/<cell>/seed_<n>.json``)."""
    lines = [f"Against `{method}` (its rows under `{results}/runs/{method}`), paired by seed:", "",
             f"| cell | seeds | unchecked − {method} (s.e.) | ahead | checked − {method} (s.e.) | ahead |",
             "|---|---|---|---|---|---|"]
    for cell, rows in cells.items():
        pairs = []
        for r in rows:
            path = results / "runs" / method / cell / f"seed_{r['seed']}.json"
            if path.exists():
                pairs.append((r, json.loads(path.read_text())["all"]))
        if not pairs:
            lines.append(f"| {cell} | 0 | no `{method}` row | | | |")
            continue
        du = [r["selection_alternatives"]["last_unchecked"]["all"] - o for r, o in pairs]
        dc = [r["all"] - o for r, o in pairs]
        (mu, su), (mc, sc) = mean_se(du), mean_se(dc)
        lines.append(f"| {cell} | {len(pairs)} | {mu:+.2f} ({su:.2f}) | {sum(d > 0 for d in du)}/{len(pairs)} "
                     f"| {mc:+.2f} ({sc:.2f}) | {sum(d > 0 for d in dc)}/{len(pairs)} |")
    return lines


def table(cells: dict[str, list[dict]]) -> list[str]:
    lines = ["| cell | seeds | All unchecked | All checked | checked − unchecked (s.e.) | ahead / behind "
             "| classes unchecked → checked (true) | class-number error unchecked → checked |",
             "|---|---|---|---|---|---|---|---|"]
    for cell, rows in cells.items():
        unchecked = [r["selection_alternatives"]["last_unchecked"] for r in rows]
        d, se = mean_se([r["all"] - u["all"] for r, u in zip(rows, unchecked)])
        classes_u = [u.get("classes") for u in unchecked]
        classes = ("n/a" if None in classes_u else f"{sum(classes_u) / len(rows):.1f}")
        error_u = ("n/a" if None in classes_u else
                   f"{sum(abs(c - r['classes_true']) for c, r in zip(classes_u, rows)) / len(rows):.1f}")
        error = sum(abs(r["classes_est"] - r["classes_true"]) for r in rows) / len(rows)
        lines.append(
            f"| {cell} | {len(rows)} | {mean_se([u['all'] for u in unchecked])[0]:.2f} | "
            f"{mean_se([r['all'] for r in rows])[0]:.2f} | {d:+.2f} ({se:.2f}) | "
            f"{sum(r['all'] > u['all'] for r, u in zip(rows, unchecked))} / "
            f"{sum(r['all'] < u['all'] for r, u in zip(rows, unchecked))} | {classes} → "
            f"{sum(r['classes_est'] for r in rows) / len(rows):.1f} ({rows[0]['classes_true']}) | "
            f"{error_u} → {error:.1f} |")
    return lines


def guard_lines(cells: dict[str, list[dict]]) -> list[str]:
    """The known-absorb guard (``known_absorb_guard``) against the same fit's unguarded check
    (``selection_alternatives["last_unguarded"]``), paired by seed; no lines when no row has
    the guard on."""
    cells = {c: [r for r in rows if "last_unguarded" in r["selection_alternatives"]]
             for c, rows in cells.items()}
    cells = {c: rows for c, rows in cells.items() if rows}
    if not cells:
        return []
    lines = ["The known-absorb guard against the unguarded check, same training runs "
             "(validation accuracy: known-class validation nodes, labelled only):", "",
             "| cell | seeds | All unguarded | All guarded | guarded − unguarded (s.e.) "
             "| seeds the guard changed | validation accuracy unguarded → guarded |",
             "|---|---|---|---|---|---|---|"]
    for cell, rows in cells.items():
        unguarded = [r["selection_alternatives"]["last_unguarded"] for r in rows]
        d, se = mean_se([r["all"] - u["all"] for r, u in zip(rows, unguarded)])
        changed = [r["seed"] for r, u in zip(rows, unguarded) if r["all"] != u["all"]]
        val_u = mean_se([u.get("val_acc", float("nan")) for u in unguarded])[0]
        val_g = mean_se([r["val_acc"] for r in rows])[0]
        lines.append(f"| {cell} | {len(rows)} | {mean_se([u['all'] for u in unguarded])[0]:.2f} | "
                     f"{mean_se([r['all'] for r in rows])[0]:.2f} | {d:+.2f} ({se:.2f}) | "
                     f"{', '.join(map(str, changed)) or 'none'} | {val_u:.2f} → {val_g:.2f} |")
    return lines


def device_line(cells: dict[str, list[dict]], results: Path | None, method: str | None) -> str:
    """Where the rows ran (the device moves which basin a seed lands in: a pairing across
    devices mixes that in)."""
    def count(rows) -> str:
        found = Counter(r.get("device", "unrecorded") for r in rows)
        return ", ".join(f"{d} {n}" for d, n in sorted(found.items()))
    text = f"Devices: these rows {count(r for rows in cells.values() for r in rows)}"
    if method:
        other = [json.loads(p.read_text()) for cell, rows in cells.items() for r in rows
                 if (p := results / "runs" / method / cell / f"seed_{r['seed']}.json").exists()]
        text += f"; the `{method}` rows paired with them {count(other) or 'none'}"
    return text + "."


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", type=Path, nargs="+",
                    help="`oral reproduce --out` folders of checked rows")
    ap.add_argument("--out", type=Path, default=None, help="write the table here (Markdown)")
    ap.add_argument("--against", default=None, metavar="METHOD",
                    help="also pair both answers with METHOD's rows under --results (e.g. opennc)")
    ap.add_argument("--results", type=Path, default=Path("benchmarks/results"),
                    help="where --against finds runs/<METHOD>/<cell>/seed_<n>.json")
    ap.add_argument("--check", choices=list(CHECKS), default="known_split_share",
                    help="the check whose rows to pair (rows fitted with it set)")
    args = ap.parse_args(argv)
    cells = cell_rows(args.folders, args.check)
    names = " ".join(str(f) for f in args.folders)
    if not cells:
        print(f"no row with an unchecked answer under {names} (runs/oral): run "
              f"`oral reproduce ... --set {args.check}=S --out FOLDER` first", file=sys.stderr)
        return 2
    # rows fitted with both checks set (benchmarks/run_flip.sh) pair both against neither
    both = all(r["config"].get(c) is not None for rows in cells.values() for r in rows for c in CHECKS)
    title = ("known-split and known-absorb checks together" if both else f"{CHECKS[args.check]} check")
    sets = (" ".join(f"--set {c}=0.5" for c in CHECKS) if both else f"--set {args.check}=0.5")
    guarded = guard_lines(cells)
    if guarded:
        title += ", with the known-absorb guard,"
        sets += " --set known_absorb_guard=true"
    option = "" if args.check == "known_split_share" else f" --check {args.check}"
    option += f" --against {args.against}" if args.against else ""
    lines = [f"# The {title} on the test rows (diagnostic: reads test labels, chooses nothing)",
             "", f"Command: `python -m benchmarks.known_split {names}{option}"
             + (f" --out {args.out}`" if args.out else "`")
             + "; rows from `oral reproduce --dataset D [--prior | --both-priors] --seeds N "
             f"{sets} [--set attention_kernel=spmm] --out FOLDER` (each folder's "
             "`reproduction.md` names its runs). Each seed's checked and unchecked answers come "
             "from one training run, so the kernel a cell ran with does not enter the pairing.",
             "", *table(cells), "", *(guarded + [""] if guarded else [])]
    if args.against:
        lines += [*against_lines(cells, args.results, args.against), ""]
    lines += [device_line(cells, args.results if args.against else None, args.against), ""]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
