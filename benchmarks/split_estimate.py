"""Is the known-split check's estimate right? (issue 60; a diagnostic: it reads the simulations'
truth and chooses nothing)

    python -m benchmarks.split_estimate --states benchmarks/.state/nightly_loop_burstjoin
        [--out benchmarks/results/split_estimate]

The known-split check (``+split``; :func:`oral_core.answer.answer_known_split`) drops a novel
class when its *estimated* share of known-class nodes reaches 0.5: the validation nodes it holds
times the unlabelled nodes per validation node of the known classes
(:func:`oral_core.novelty.unlabelled_per_val`, :func:`oral_core.novelty.known_share`). For every
novel class of every answered night of the kept nightly loops (the model's groups,
``predictions.parquet``, and the night's answer, ``answer.parquet``), this puts that estimate
beside the class's *true* share of known-class nodes among its unlabelled nodes (from the
snapshot's truth). The validation nodes are the night's own (``tasks.fitting.fit_inputs`` with
the pipeline's seed 0, the split the night trained with). ``classes.csv`` (every class),
``table.md`` (per graph and stage: mean estimate, mean truth, mean error).
"""
from __future__ import annotations

import argparse
from benchmarks.records import write_csv, write_table
import sys
from pathlib import Path

from benchmarks.discovery_loss import kept_loops, run_folders

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "split_estimate"
STAGES = {"model": "predictions.parquet", "answer": "answer.parquet"}


def class_estimates(class_key, unlabelled, val, known_truth, num_known: int) -> list[dict]:
    """Per novel class of ``class_key`` (long ``[N]``, -1 for no class): its size, unlabelled
    and validation nodes, the check's estimated known share and the true one (``known_truth``,
    bool ``[N]``: the node's true class is a known class) among its unlabelled nodes."""
    import torch

    from oral_core.novelty import known_share, unlabelled_per_val

    key = torch.as_tensor(class_key).long()
    size = int(key.max()) + 2 if key.numel() else 1
    none = size - 1
    group = torch.where(key >= 0, key, torch.full_like(key, none))
    group_class = torch.arange(size)
    group_class[none] = -1
    unl, va = torch.as_tensor(unlabelled).bool(), torch.as_tensor(val).bool()
    rate = unlabelled_per_val(group, group_class, unl, va, num_known)
    if rate is None:
        return []
    est = known_share(group, unl, va, size, rate)
    truth = torch.as_tensor(known_truth).bool()
    rows = []
    for c in range(num_known, size - 1):
        members = (group == c) & unl
        if not bool(members.any()):
            continue
        rows.append({"class": c, "size": int((group == c).sum()), "unlabelled": int(members.sum()),
                     "validation": int(((group == c) & va).sum()),
                     "estimate": round(float(est[c]), 3),
                     "truth": round(float(truth[members].float().mean()), 3)})
    return rows


def loop_rows(base: Path) -> list[dict]:
    """Every novel class of every answered night of one kept loop, each stage."""
    import numpy as np
    import pyarrow.parquet as pq

    from data_contracts import snapshots as snap
    from tasks.fitting import fit_inputs

    graph, sim = base.name.rsplit("-sim", 1)
    folders = run_folders(base / "state", graph)
    rows = []
    for k, (day, path) in enumerate(snap.list_snapshots(base / "snapshots", graph)):
        folder = folders.get(day.isoformat())
        if folder is None:
            continue
        s = snap.load_snapshot(path)
        _, _, train, val, _ = fit_inputs(s, "auto", 0)
        unlabelled = (np.asarray(train) < 0) & (np.asarray(val) < 0)
        known = set(s.class_names)
        known_truth = np.array([t >= 0 and s.truth_names[t] in known for t in s.truth])
        scored = np.asarray(s.truth) >= 0
        for stage, file in STAGES.items():
            table = pq.read_table(folder / file, columns=["class_key"])
            key = np.asarray(table.column("class_key").fill_null(-1).to_numpy(), dtype=np.int64)
            for row in class_estimates(key, unlabelled & scored, np.asarray(val) >= 0,
                                       known_truth, len(s.class_names)):
                rows.append({"graph": graph, "sim": int(sim), "night": k + 1, "stage": stage}
                            | row)
    return rows


def table(rows: list[dict]) -> list[str]:
    """Per graph and stage: classes, mean estimate, mean true share, mean error (estimate minus
    truth), and the classes the check passes (estimate < 0.5) that are at least half known."""
    lines = ["| graph | stage | novel classes | mean estimate | mean true share | mean error | "
             "passed the check (estimate < 0.5) though >= half known |",
             "|---|---|---|---|---|---|---|"]
    keys = sorted({(r["graph"], r["stage"]) for r in rows})
    for graph, stage in keys:
        got = [r for r in rows if r["graph"] == graph and r["stage"] == stage]
        n = len(got)
        est = sum(r["estimate"] for r in got) / n
        tru = sum(r["truth"] for r in got) / n
        missed = sum(1 for r in got if r["estimate"] < 0.5 <= r["truth"])
        lines.append(f"| {graph} | {stage} | {n} | {est:.2f} | {tru:.2f} | {est - tru:+.2f} | "
                     f"{missed} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--states", required=True, help="nightly-loop --state folders, a comma list")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = []
    for base in kept_loops(args.states):
        print(f"[{base.name}]", flush=True)
        rows += loop_rows(base)
    write_csv(args.out / "classes.csv", rows)
    write_table(args.out, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
