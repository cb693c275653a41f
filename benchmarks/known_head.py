"""Known-class fidelity on the nightly loop's snapshots (issue 47, item 3): does the supervised
known-class head (``known_head="sgc"``, :mod:`oral_core.known_head`) name the known classes better
than ORAL's prototype groups, measured on labelled nodes only?

    python -m benchmarks.known_head [--graphs cora,synthetic15] [--sims 0,1,2] [--pull 0.9,0.99]

Replays the snapshots that ``benchmarks.nightly_loop`` simulated (its state folder, ignored by
git), each night a cold fit of ORAL at the pipeline's defaults plus the head, on the labelled
nodes split as the pipeline splits them (``tasks.steps.split_labelled``). One fit gives every
variant: the head only relabels ORAL's answer after training (``<rule>_no_head`` is the answer
without it), and ``known_head_pull`` only reads the head's probabilities.

The choosing measure is the known-class accuracy on the labelled validation nodes (ORAL never
trains on them), without and with the head, and for ``known_head="auto"`` (which itself chooses
on the validation nodes) a two-fold estimate: chosen on one half of them, scored on the other. The test-label columns (known by name: share of the
night's unlabelled known-class nodes named right; novel kept: share of the unlabelled nodes of
planted classes left outside the known classes) are diagnostics: they choose nothing.

Resumable: one row per (graph, sim, night) in ``benchmarks/results/known_head/nights.csv``; the
README there is rewritten from all rows.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / "benchmarks" / ".state" / "nightly_loop"
OUT = ROOT / "benchmarks" / "results" / "known_head"
FIELDS = ["graph", "sim", "night", "date", "val_no_head", "val_head", "val_auto_cv",
          "known_no_head",
          "known_head", "novel_kept_no_head", "novel_kept_head", "pull", "known_pull",
          "novel_kept_pull", "fit_seconds", "head_seconds"]


def snapshot_paths(graph: str, sim: int) -> list[Path]:
    folder = STATE / f"{graph}-sim{sim}" / "snapshots" / graph
    return sorted(p for p in folder.glob("snapshot=*") if p.is_dir()) if folder.is_dir() else []


def night_row(path: Path, pulls: list[float]) -> dict:
    """One cold fit on one snapshot; the answer without and with the head (and each pull)."""
    import numpy as np
    import torch

    from data_contracts import snapshots as snap
    from oral_core.columns import writable
    from oral_core.config import ORALConfig
    from oral_core.datasets import auto_feature_mode, preprocess_features
    from oral_core.graph import canonical_edges
    from oral_core.known_head import head_probabilities, keep_known_fidelity
    from oral_core.trainer import ORAL
    from tasks.steps import split_labelled

    s = snap.load_snapshot(path)
    raw = torch.from_numpy(writable(s.x))
    x = preprocess_features(raw, auto_feature_mode(raw))
    edges = canonical_edges(torch.from_numpy(s.edge_index), s.num_nodes)
    config = ORALConfig(known_head="sgc", progress=False)
    train, val = split_labelled(s.labels, config.seed)
    start = time.perf_counter()
    oral = ORAL(config).fit(x, edges, torch.from_numpy(train), torch.from_numpy(val))
    fit_seconds = time.perf_counter() - start
    plain = oral.discoveries[f"{config.selection}_no_head"]
    headed = oral.predict()
    start = time.perf_counter()
    probs = head_probabilities(oral.selected_state()["known_head"], x, edges)
    head_seconds = time.perf_counter() - start
    names = list(s.class_names)
    truth = [s.truth_names[t] if t >= 0 else None for t in s.truth]
    unlabelled = np.asarray(s.labels) < 0
    y = np.array([names.index(t) if t in names else -1 for t in truth])
    known_nodes = unlabelled & (y >= 0)
    novel_nodes = unlabelled & np.array([t is not None and t not in names for t in truth])
    k = len(names)

    def by_name(ids) -> float:
        ids = np.asarray(ids)
        return float((ids[known_nodes] == y[known_nodes]).mean() * 100)

    def novel_kept(ids) -> float | None:
        ids = np.asarray(ids)
        return (float(((ids[novel_nodes] < 0) | (ids[novel_nodes] >= k)).mean() * 100)
                if novel_nodes.any() else None)

    row = {"date": s.date.isoformat(), "val_no_head": 100 * plain.val_accuracy,
           "val_head": 100 * headed.val_accuracy,
           "val_auto_cv": 100 * auto_cross_validated(plain.class_id, headed.class_id, val),
           "known_no_head": by_name(plain.class_id), "known_head": by_name(headed.class_id),
           "novel_kept_no_head": novel_kept(plain.class_id),
           "novel_kept_head": novel_kept(headed.class_id),
           "fit_seconds": fit_seconds, "head_seconds": head_seconds}
    rows = []
    for pull in pulls or [None]:
        pulled = keep_known_fidelity(plain.class_id, probs, k, pull) if pull else None
        rows.append(row | {"pull": pull or "",
                           "known_pull": "" if pulled is None else by_name(pulled),
                           "novel_kept_pull": "" if pulled is None else novel_kept(pulled)})
    return rows


def auto_cross_validated(plain, headed, val, seed: int = 0) -> float:
    """Validation accuracy of ``known_head="auto"`` measured without its own choice: the
    validation nodes split in two halves at random, the choice (head or groups, whichever names
    more of one half right) scored on the other half, both ways, pooled. The choosing measure of
    ``auto`` itself reads every validation node, so its accuracy there is biased upwards."""
    import numpy as np

    val = np.asarray(val)
    nodes = np.flatnonzero(val >= 0)
    if nodes.size < 2:
        return float("nan")
    order = np.random.default_rng(seed).permutation(nodes)
    halves = [order[: nodes.size // 2], order[nodes.size // 2:]]
    plain, headed = np.asarray(plain), np.asarray(headed)
    right = 0
    for choose, score in (halves, halves[::-1]):
        use_head = (headed[choose] == val[choose]).mean() > (plain[choose] == val[choose]).mean()
        right += int(((headed if use_head else plain)[score] == val[score]).sum())
    return right / nodes.size


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


def num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def auto(row: dict) -> bool:
    """Whether ``known_head="auto"`` uses the head on this night: its validation accuracy is
    higher than the groups'."""
    return num(row["val_head"]) > num(row["val_no_head"])


def summary(rows: list[dict]) -> str:
    """Per graph and simulation: validation accuracy without / with the head, nights the head is
    behind on validation, and the diagnostics."""
    lines = ["| graph | sim | nights | val. accuracy: ORAL / head / auto, cross-validated "
             "(mean) | nights head behind on val. | known by name: ORAL / head / auto (test labels) | novel kept: "
             "ORAL / head | pull: known by name / novel kept | head s / fit s |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["graph"], int(r["sim"])) for r in rows})
    for graph, sim in keys:
        rs = [r for r in rows if r["graph"] == graph and int(r["sim"]) == sim]
        nights = sorted({int(r["night"]) for r in rs})
        first = [next(r for r in rs if int(r["night"]) == n) for n in nights]
        behind = sum(num(r["val_head"]) < num(r["val_no_head"]) for r in first)
        pulls = []
        for p in sorted({r["pull"] for r in rs if r["pull"]}):
            pr = [r for r in rs if r["pull"] == p]
            pulls.append(f"{p}: {mean(num(r['known_pull']) for r in pr):.1f} / "
                         f"{mean(num(r['novel_kept_pull']) for r in pr):.1f}")
        lines.append(
            f"| {graph} | {sim} | {len(nights)} | "
            f"{mean(num(r['val_no_head']) for r in first):.1f} / "
            f"{mean(num(r['val_head']) for r in first):.1f} / "
            f"{mean(num(r['val_auto_cv']) for r in first):.1f} | {behind}/{len(nights)} | "
            f"{mean(num(r['known_no_head']) for r in first):.1f} / "
            f"{mean(num(r['known_head']) for r in first):.1f} / "
            f"{mean(num(r['known_head' if auto(r) else 'known_no_head']) for r in first):.1f} | "
            f"{mean(num(r['novel_kept_no_head']) for r in first):.1f} / "
            f"{mean(num(r['novel_kept_head']) for r in first):.1f} | {'; '.join(pulls) or '–'} | "
            f"{mean(num(r['head_seconds']) for r in first):.2f} / "
            f"{mean(num(r['fit_seconds']) for r in first):.0f} |")
    return "\n".join(lines)


def answer(rows: list[dict]) -> str:
    """Over every night: the head's and auto's validation gain, paired by night, with one
    standard error, per graph."""
    parts = []
    for graph in sorted({r["graph"] for r in rows}):
        first = {}
        for r in rows:
            if r["graph"] == graph:
                first.setdefault((r["sim"], r["night"]), r)
        nights = list(first.values())
        for name, key in (("head", "val_head"), ("auto (cross-validated)", "val_auto_cv")):
            gains = [num(r[key]) - num(r["val_no_head"]) for r in nights]
            gains = [g for g in gains if not math.isnan(g)]
            if not gains:
                continue
            m = sum(gains) / len(gains)
            se = (math.sqrt(sum((g - m) ** 2 for g in gains) / (len(gains) - 1) / len(gains))
                  if len(gains) > 1 else math.nan)
            parts.append(f"{graph} {name} {m:+.1f} (s.e. {se:.1f}, {len(gains)} nights, ahead on "
                         f"{sum(g > 0 for g in gains)}, behind on {sum(g < 0 for g in gains)})")
    return ("Answer: validation accuracy gained over ORAL's groups, paired by night: "
            + "; ".join(parts) + "." if parts else "Answer: no night scored yet.")


def table2_summary(runs: Path) -> str:
    """The Table-2 cells fitted with ``--set known_head=sgc`` (``oral reproduce --out``): per
    cell, validation accuracy without / with the head (the choosing measure), the seeds where
    ``auto`` takes the head, and All without / with the head / with auto (test labels: a
    diagnostic, it chooses nothing)."""
    import json

    lines = ["| cell | seeds | val.: ORAL / head | auto takes the head | All: ORAL / head / auto "
             "(test labels) | Known: ORAL / head |", "|---|---|---|---|---|---|"]
    for folder in sorted(p for p in (runs / "oral").glob("*") if p.is_dir()):
        seeds = [json.loads(f.read_text()) for f in sorted(folder.glob("seed_*.json"))]
        seeds = [r for r in seeds if not r.get("failed")
                 and "last_no_head" in r.get("selection_alternatives", {})]
        if not seeds:
            continue
        plain = [r["selection_alternatives"]["last_no_head"] for r in seeds]
        takes = [r["val_acc"] > p["val_acc"] for r, p in zip(seeds, plain)]
        auto_all = [r["all"] if t else p["all"] for r, p, t in zip(seeds, plain, takes)]
        lines.append(
            f"| {folder.name} | {len(seeds)} | {mean(p['val_acc'] for p in plain):.1f} / "
            f"{mean(r['val_acc'] for r in seeds):.1f} | {sum(takes)}/{len(seeds)} | "
            f"{mean(p['all'] for p in plain):.1f} / {mean(r['all'] for r in seeds):.1f} / "
            f"{mean(auto_all):.1f} | {mean(p['known'] for p in plain):.1f} / "
            f"{mean(r['known'] for r in seeds):.1f} |")
    return "\n".join(lines)


def write_readme(rows: list[dict], argv: list[str]) -> str:
    text = "\n".join([
        "# Known-class fidelity: a supervised head for the known classes", "",
        "Question: does the known head (`known_head=sgc`: a logistic regression on "
        "twice-propagated features, fitted on the labelled training nodes; a node ORAL keeps in "
        "a known class takes the head's class) name the known classes better than ORAL's "
        "prototype groups, on the labelled validation nodes, night after night?", "",
        f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.known_head {' '.join(argv)}`".rstrip()
        + "` (cold fits at the pipeline's defaults on the snapshots `benchmarks.nightly_loop` "
        "simulated; resumable, one row per night in `nights.csv`).", "",
        "Choosing measure: validation accuracy (labelled known-class nodes ORAL never trains "
        "on). Diagnostics (test labels of the simulation, choose nothing): known by name (share "
        "of the night's unlabelled known-class nodes named right; auto: the head on the nights "
        "its validation accuracy is higher, `known_head=auto`), novel kept (share of the "
        "unlabelled nodes of planted classes left outside the known classes; empty before a "
        "planted class starts), and the same for `known_head_pull` (nodes ORAL puts in a novel "
        "class or none join the head's class at that head probability).", "",
        answer(rows), "",
        "Current: yes: cold fits at the defaults of 2026-11-27 with the head added after "
        "training (the head changes nothing before it).", "",
        summary(rows), "",
        "## The Table-2 cells (single snapshots)", "",
        "The same head on the static graphs under the strict protocol: `OMP_NUM_THREADS=1 oral "
        "reproduce --dataset D --seeds 5 --both-priors --set known_head=sgc --quiet --out "
        "benchmarks/results/known_head/table2` (each seed file holds the answer without the head "
        "as `selection_alternatives.last_no_head`).", "",
        table2_summary(OUT / "table2" / "runs"), ""])
    (OUT / "README.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="cora,synthetic15")
    ap.add_argument("--sims", default="0,1,2")
    ap.add_argument("--pull", default="0.9,0.99", help="known_head_pull values to score (diagnostic)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    csv_path = OUT / "nights.csv"
    rows = read_rows(csv_path)
    done = {(r["graph"], r["sim"], r["night"]) for r in rows}
    pulls = [float(p) for p in args.pull.split(",") if p]
    if not args.report_only:
        for graph in args.graphs.split(","):
            for sim in [int(s) for s in args.sims.split(",")]:
                paths = snapshot_paths(graph, sim)
                if not paths:
                    print(f"{graph} sim {sim}: no simulated snapshots under {STATE} (run "
                          f"benchmarks.nightly_loop first); skipped", file=sys.stderr)
                    continue
                for night, path in enumerate(paths):
                    if (graph, str(sim), str(night)) in done:
                        continue
                    new = night_row(path, pulls)
                    for r in new:
                        r.update(graph=graph, sim=sim, night=night)
                    rows.extend(new)
                    write_rows(csv_path, rows)
                    r = new[0]
                    print(f"{graph} sim {sim} night {night}: val {r['val_no_head']:.1f} -> "
                          f"{r['val_head']:.1f}, known by name {r['known_no_head']:.1f} -> "
                          f"{r['known_head']:.1f} ({r['fit_seconds']:.0f} s)", flush=True)
    print(write_readme(rows, argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
