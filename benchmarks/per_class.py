"""Per-class accuracy from finished seeds: which classes a method discovers, not only how many nodes.

All (Eq. 14, one Hungarian matching over every test node) weighs each class by its size, so a
method can gain All by merging a small novel class into a large one. The table also gives the
class-balanced mean (every class weighs the same; novel classes alone too) and, paired by seed,
the first method minus each other on All and on both balanced means. This table recomputes, from
each seed file's contingency table (``oral reproduce`` keeps it), the share of each true class's
test nodes that are right under that same matching (:func:`oral_core.metrics.matched_correct`),
mean ± standard error over the seeds, for each method side by side. Diagnostic only: it reads
test labels, so it chooses nothing.

    python -m benchmarks.per_class --dataset amazonphoto --methods oral,opennc [--prior] [--protocol paper]
    python -m benchmarks.per_class --dataset amazonphoto --prior --methods oral@temp03,oral,opennc \
        --out benchmarks/results/per_class_choice/per_class_choice_amazonphoto-prior.md

``METHOD@FOLDER`` takes that method's rows from a folder under ``--results`` (a per-graph
choice's own rows).

writes ``benchmarks/results/per_class/per_class_<dataset>-<prior>[-paper].md``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from oral_core.metrics import from_contingency, matched_correct
from harness.reproduction import mean_se, read_seed_files, run_dir

RESULTS = Path(__file__).resolve().parent / "results"


def class_accuracy(table) -> dict[int, tuple[float, int]]:
    """``{true class: (share right under the one-Hungarian matching, test nodes)}``."""
    y_true, y_pred = from_contingency(table)
    right = matched_correct(y_true, y_pred)
    out = {}
    for c in torch.unique(y_true).tolist():
        mask = y_true == c
        out[int(c)] = (float(right[mask].double().mean()), int(mask.sum()))
    return out


def method_rows(results: Path, method: str, dataset: str, prior: bool, protocol: str):
    """The scored seed files of ``method``, or of ``method@folder``: that method's rows in a
    results folder under ``results`` (e.g. ``oral@temp03``, a per-graph choice's own rows)."""
    if "@" in method:
        method, sub = method.split("@", 1)
        results = results / sub
    rows = [r for r in read_seed_files(run_dir(results, method, dataset, prior, protocol))
            if not r.get("failed") and r.get("contingency")]
    return rows, [class_accuracy(r["contingency"]) for r in rows]


def table(results: Path, dataset: str, methods: list[str], prior: bool, protocol: str) -> str:
    per = {}
    for m in methods:
        rows, accs = method_rows(results, m, dataset, prior, protocol)
        if not rows:
            where = (run_dir(results / m.split("@", 1)[1], m.split("@", 1)[0], dataset, prior, protocol)
                     if "@" in m else run_dir(results, m, dataset, prior, protocol))
            raise SystemExit(f"error: {where}: no finished "
                             "seed with a contingency table (run oral reproduce, --refresh for old files)")
        per[m] = (rows, accs)
    first_rows, first_accs = next(iter(per.values()))
    known = set(first_rows[0].get("known_classes") or [])
    classes = sorted(first_accs[0])
    head = "| class | known | test nodes | " + " | ".join(
        f"{m} ({len(per[m][0])} seeds)" for m in methods) + " |"
    lines = [head, "|" + "---|" * (3 + len(methods))]
    for c in classes:
        cells = []
        for m in methods:
            mean, se = mean_se([100 * a[c][0] for a in per[m][1] if c in a])
            cells.append(f"{mean:.1f} ± {se:.1f}")
        lines.append(f"| {c} | {'yes' if c in known else 'no'} | {first_accs[0][c][1]} | "
                     + " | ".join(cells) + " |")
    alls = " | ".join(f"{mean_se([r['all'] for r in per[m][0]])[0]:.2f}" for m in methods)
    lines.append(f"| All (Eq. 14) | | {sum(v[1] for v in first_accs[0].values())} | {alls} |")
    novel = [c for c in classes if c not in known]
    balanced = {m: _balanced(per[m], classes) for m in methods}
    balanced_novel = {m: _balanced(per[m], novel) for m in methods}
    for name, values in (("Class-balanced (mean over classes)", balanced),
                         ("Novel, class-balanced", balanced_novel)):
        cells = []
        for m in methods:
            mean, se = mean_se(list(values[m].values()))
            cells.append(f"{mean:.1f} ± {se:.1f}")
        lines.append(f"| {name} | | | " + " | ".join(cells) + " |")
    if len(methods) > 1:
        lines += ["", f"Paired by seed, {methods[0]} minus each other method (mean ± s.e., seeds "
                      f"where {methods[0]} is ahead):", "",
                  "| method | All | class-balanced | novel, class-balanced |", "|---|---|---|---|"]
        alls_by_seed = {m: {_seed(r, i): r["all"] for i, r in enumerate(per[m][0])} for m in methods}
        for other in methods[1:]:
            cells = [_paired(scores[methods[0]], scores[other])
                     for scores in (alls_by_seed, balanced, balanced_novel)]
            lines.append(f"| {other} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seed(row: dict, index: int) -> int:
    return int(row.get("seed", index))


def _balanced(method: tuple, classes: list[int]) -> dict[int, float]:
    """``{seed: mean over classes of the per-class share right}`` (every class weighs the same,
    where All weighs each by its test nodes)."""
    rows, accs = method
    return {_seed(r, i): 100 * sum(a[c][0] for c in classes) / len(classes)
            for i, (r, a) in enumerate(zip(rows, accs)) if classes and all(c in a for c in classes)}


def _paired(first: dict[int, float], other: dict[int, float]) -> str:
    seeds = sorted(set(first) & set(other))
    if not seeds:
        return "no common seed"
    gaps = [first[s] - other[s] for s in seeds]
    mean, se = mean_se(gaps)
    return f"{mean:+.2f} ± {se:.2f} ({sum(g > 0 for g in gaps)}/{len(seeds)})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--methods", default="oral,opennc")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--protocol", default="ours", choices=["ours", "paper"])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=None,
                    help="the table (default <results>/per_class_<dataset>-<prior>[-paper].md)")
    args = ap.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    body = table(args.results, args.dataset, methods, args.prior, args.protocol)
    tag = f"{args.dataset}-{'prior' if args.prior else 'noprior'}" + (
        "" if args.protocol == "ours" else f"-{args.protocol}")
    cmd = (f"python -m benchmarks.per_class --dataset {args.dataset} --methods {','.join(methods)}"
           + (" --prior" if args.prior else "") + (f" --protocol {args.protocol}"
                                                     if args.protocol != "ours" else "")
           + (f" --out {args.out}" if args.out else ""))
    text = (f"# Per-class accuracy: {tag}\n\nCommand: `{cmd}`\n\nShare (%) of each true class's "
            "test nodes that are right under the one-Hungarian matching of All (Eq. 14), mean ± "
            "standard error over the seeds, from each seed file's contingency table. Diagnostic "
            "(test labels): it chooses nothing.\n\n" + body + "\n")
    out = args.out or args.results / "per_class" / f"per_class_{tag}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
