"""Does a known-class classifier's energy tell a new class apart? (labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.energy_separation --loops STATE
        [--graphs cora,synthetic15,amazonphoto,blogcatalog] [--sims 0] [--nights 4,8] [--seeds 0]

On each kept nightly snapshot, the held-out-class proxy (``harness.proxy.task_from_labels``,
``hide="extremes"``, disjoint validation halves): the known classes with the most and the fewest
labelled nodes play new classes. The known-class GCN and the reference logistic regression
(standardised over every node) are fitted on the visible classes' training nodes; each gives
every node GNNSafe's energy propagated over the graph (:func:`oral_core.answer.propagated_energy`).
Per classifier: the area under the ROC curve between the stand-ins' labelled nodes (positive)
and the visible classes' held validation half (negative), its validation accuracy on the
selection half, and at the quantiles 0.5 / 0.8 / 0.95 of the selection half's energies, the
share of stand-in nodes and of held visible nodes at or below it ("known-like"). No unlabelled
node's label is read. This is the exploration behind the novelty check's settings
(``benchmarks/results/novelty_energy``); it chooses nothing by itself.
"""
from __future__ import annotations

import argparse
from pathlib import Path

QUANTILES = (0.5, 0.8, 0.95)


def auroc(pos, neg) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))


def separation(path: str, seed: int) -> dict:
    import numpy as np
    import torch

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import task_from_labels
    from oral_core.answer import known_gcn_logits, propagated_energy
    from oral_core.reference import reference_logits

    g, x, train, val, k = night_task(path)
    task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, seed, "extremes",
                            disjoint_val=True)
    v = int(task.visible.numel())
    hidden = (torch.isin(g.y, torch.tensor(task.hidden)) & task.scored).numpy()
    held = (task.scored & (g.y >= 0)).numpy() & ~hidden
    select = (task.val >= 0).numpy()
    logits = {"lr": reference_logits(x, task.train, task.val, scale="all"),
              "gcn": known_gcn_logits(x, g.edge_index, task.train, v, seed=seed)}
    row = {}
    for name, lg in logits.items():
        e = propagated_energy(lg, g.edge_index).numpy()
        named = lg.argmax(1).numpy()
        row[name] = {"auroc": auroc(e[hidden], e[held]),
                     "val_accuracy": float((named[select] == task.val.numpy()[select]).mean())}
        for q in QUANTILES:
            t = np.quantile(e[select], q)
            row[name][f"q{q}"] = {"stand_in": float((e[hidden] <= t).mean()),
                                  "visible": float((e[held] <= t).mean())}
    return row


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,synthetic15,amazonphoto,blogcatalog", "0", "4,8", "0")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" /
                                         "novelty_energy" / "exploration.md"))
    args = ap.parse_args(argv)
    lines = ["| loop | night | classifier | validation accuracy | AUROC stand-ins vs visible | "
             + " | ".join(f"known-like at q{q}: stand-ins / visible" for q in QUANTILES) + " |",
             "|---|---|---|---|---|" + "---|" * len(QUANTILES)]
    for loop, night, seed, snapshot in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                   args.nights, args.seeds):
        row = separation(snapshot, seed)
        for name, r in row.items():
            lines.append(f"| {loop} | {night} | {name} | {100 * r['val_accuracy']:.1f} | "
                         f"{r['auroc']:.3f} | " + " | ".join(
                             f"{r[f'q{q}']['stand_in']:.2f} / {r[f'q{q}']['visible']:.2f}"
                             for q in QUANTILES) + " |")
        print(lines[-2], lines[-1], sep="\n", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
