"""Which per-node signal tells a young class from the known classes' unlabelled nodes? (issue 60,
labelled nodes only; no ORAL fit, it chooses nothing by itself)

    OMP_NUM_THREADS=1 python -m benchmarks.novelty_signals --loops STATE
        [--graphs cora,amazonphoto,blogcatalog,synthetic15] [--sims 25] [--nights 5,8]
        [--seeds 0,1,2] [--sizes 0.03,0.1] [--out benchmarks/results/novelty_signals]
        [--report-only]

On the young-class proxy (:func:`harness.proxy.young_class_task`: a nightly snapshot's labelled
nodes, one known class cut small and unlabelled, half of every other class's training nodes
unlabelled), each node gets the scores the answer could read for "unlike every known class":

- ``energy``: the answer's own, GNNSafe's propagated energy of the known-class classifier (LR or
  GCN) that names the validation nodes best (:func:`oral_core.answer.energy_scorer`);
- ``unlabelled_knn``: the share of the node's ``k`` nearest nodes on ``S^2 X`` (the answer's
  view) that carry no training label (:func:`oral_core.answer.unlabelled_share`): a known class
  has labelled nodes all over its region, a new class has none (the positive-unlabelled view);
- ``labelled_far``: one minus the cosine similarity to the nearest training-labelled node on the
  same view (deep nearest neighbours' distance, Sun et al. 2022);
- ``unlabelled_edges``: the share of the node's graph neighbours that carry no training label.

For each score: AUROC of the young class against the known classes' unlabelled nodes, and at the
answer's own cut (above the ``q`` quantile of the validation nodes' scores, q = 0.95 and 0.9)
the share of the young class above it and the young share of the unlabelled nodes above it
(what the grouping of rejected nodes starts from). Rows: ``<graph>/rows.jsonl`` (resumable),
``table.md``. Loops missing under ``--loops`` are simulated first.

With ``--arrivals`` it reads the simulations' truth instead (a diagnostic: it chooses nothing):
on every night of the loops, per planted class present, its share of the unlabelled nodes new
that night (absent from the night before) and the share of a planted node's 10 nearest
neighbours on ``S^2 X`` of its class, among the new unlabelled nodes and among all unlabelled
nodes (``arrivals.md``).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl, write_table

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "novelty_signals"
SIGNALS = ("energy", "unlabelled_knn10", "unlabelled_knn20", "labelled_far", "unlabelled_edges",
           "energy+knn20")
CUTS = (0.95, 0.9)


def auroc(pos, neg) -> float:
    """P(a positive scores above a negative), ties half (Mann-Whitney)."""
    import torch

    both = torch.cat([pos, neg]).double()
    ranks = torch.empty_like(both)
    order = torch.argsort(both, stable=True)
    ranks[order] = torch.arange(1, both.numel() + 1, dtype=torch.double)
    for v in torch.unique(both):  # average ranks of ties
        tie = both == v
        if int(tie.sum()) > 1:
            ranks[tie] = ranks[tie].mean()
    r = ranks[:pos.numel()].sum() - pos.numel() * (pos.numel() + 1) / 2
    return float(r / (pos.numel() * neg.numel()))


def signals(x, edges, train, val, num_known: int, seed: int) -> dict:
    """Every score of :data:`SIGNALS` per node (high: unlike the known classes)."""
    import torch

    from oral_core.answer import (answer_view, energy_scorer, known_gcn_logits,
                                  propagated_energy, unlabelled_share, view_neighbours)
    from oral_core.reference import reference_logits

    logits = {"lr": reference_logits(x, train, val),
              "gcn": known_gcn_logits(x, edges, train, num_known, seed=seed)}
    energy = propagated_energy(logits[energy_scorer(logits, val)], edges)
    view = answer_view(x, edges)
    n = x.shape[0]
    rows = torch.arange(n)
    near = view_neighbours(x, edges, rows, 20, view=lambda: view)
    labelled = train >= 0
    out = {"energy": energy,
           "unlabelled_knn10": unlabelled_share(labelled, near[:, :10]),
           "unlabelled_knn20": unlabelled_share(labelled, near)}
    sim = view @ view[labelled].T
    own = labelled.nonzero().flatten()
    sim[own, torch.arange(own.numel())] = -2.0
    out["labelled_far"] = 1 - sim.max(1).values
    src, dst = edges
    deg = torch.bincount(dst, minlength=n).double()
    lab = torch.zeros(n, dtype=torch.double).index_add_(0, dst, labelled[src].double())
    out["unlabelled_edges"] = torch.where(deg > 0, 1 - lab / deg.clamp(min=1),
                                          torch.ones(n, dtype=torch.double))
    # the two together: each as its rank among the validation nodes' (a quantile), the larger
    vmask = val >= 0

    def as_quantile(s):
        ref = torch.sort(s[vmask].double()).values
        return torch.searchsorted(ref, s.double().contiguous(), right=True).double() / ref.numel()

    out["energy+knn20"] = torch.maximum(as_quantile(energy), as_quantile(out["unlabelled_knn20"]))
    return out


def score_row(path: str, seed: int, size: float) -> dict:
    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import young_class_task

    g, x, train, val, k = night_task(path)
    task = young_class_task(g.y, train >= 0, val >= 0, torch.arange(k), seed, size)
    edges, _ = subgraph(task.keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    xs = x[task.keep]
    visible = int(task.visible.numel())
    s = signals(xs, edges, task.train, task.val, visible, seed)
    unl = (task.train < 0) & (task.val < 0)
    young = unl & (task.y == task.hidden[0])
    stand = unl & ~young
    vmask = task.val >= 0
    row = {"nodes": int(task.keep.sum()), "young_nodes": int(young.sum())}
    for name, score in s.items():
        score = score.double()
        r = {"auroc": round(auroc(score[young], score[stand]), 4)}
        for q in CUTS:
            cut = torch.quantile(score[vmask], q).item()
            above = unl & (score > cut)
            r[f"young_above{q:g}"] = round(float((above & young).sum()) / max(1, int(young.sum())), 4)
            r[f"young_share{q:g}"] = round(float((above & young).sum()) / max(1, int(above.sum())), 4)
        row[name] = r
    return row


def table(rows: list[dict]) -> list[str]:
    lines = ["| graph | size | fits | signal | AUROC | young above q0.95 | young share of those above q0.95 "
             "| young above q0.9 | young share above q0.9 |", "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["graph"], r["size"]) for r in rows})
    for graph, size in keys:
        part = [r for r in rows if (r["graph"], r["size"]) == (graph, size)]
        for name in SIGNALS:
            def m(key):
                return statistics.mean(r[name][key] for r in part if name in r)
            lines.append(f"| {graph} | {size:g} | {len(part)} | {name} | {m('auroc'):.3f} | "
                         f"{100 * m('young_above0.95'):.0f}% | {100 * m('young_share0.95'):.0f}% | "
                         f"{100 * m('young_above0.9'):.0f}% | {100 * m('young_share0.9'):.0f}% |")
    return lines


def arrival_lines(loops: Path, graphs: str, sims: str) -> list[str]:
    """The ``--arrivals`` table (truth; see the module's docstring)."""
    import numpy as np
    import torch

    from data_contracts import snapshots as snap
    from oral_core.answer import answer_view
    from tasks.fitting import fit_inputs

    lines = ["| loop | night | planted class | present | new tonight | share of the new unlabelled "
             "nodes | 10-NN of its class among the new | among all unlabelled |",
             "|---|---|---|---|---|---|---|---|"]
    for graph in filter(None, graphs.split(",")):
        for sim in filter(None, sims.split(",")):
            base = loops / f"{graph}-sim{sim}" / "snapshots"
            paths = [p for _, p in snap.list_snapshots(base, graph)]
            for night, path in enumerate(paths[1:], start=2):
                s = snap.load_snapshot(path)
                x, edges, train, val, _ = fit_inputs(s, "auto", 0)
                recent = torch.from_numpy(snap.recent_nodes(path, s.node_ids, 1))
                unl = torch.from_numpy((train < 0) & (val < 0))
                truth = np.asarray(s.truth)
                names = s.truth_names
                z = answer_view(x, edges)
                new = recent & unl
                for c, name in enumerate(names):
                    planted = torch.from_numpy(truth == c)
                    if name in s.class_names or not bool(planted.any()):
                        continue
                    sim_new = z[new] @ z[new].T
                    sim_new.fill_diagonal_(-2.0)
                    near_new = sim_new.topk(min(10, int(new.sum()) - 1), dim=1).indices
                    mine = planted[new]
                    among_new = float(mine[near_new[mine]].float().mean())
                    near_all = (z[planted & unl] @ z[unl].T).topk(11, dim=1).indices[:, 1:]
                    among_all = float(planted[unl][near_all].float().mean())
                    lines.append(f"| {graph}-sim{sim} | {night} | {name} | {int(planted.sum())} | "
                                 f"{int((planted & recent).sum())} | "
                                 f"{100 * float(mine.float().mean()):.0f}% | "
                                 f"{100 * among_new:.0f}% | {100 * among_all:.0f}% |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,amazonphoto,blogcatalog,synthetic15", "25", "5,8", "0,1,2", loops=None)
    ap.add_argument("--sizes", default="0.03,0.1")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--arrivals", action="store_true",
                    help="the truth diagnostic of the planted classes' arrivals (arrivals.md)")
    args = ap.parse_args(argv)
    if args.arrivals:
        args.out.mkdir(parents=True, exist_ok=True)
        lines = arrival_lines(Path(args.loops), args.graphs, args.sims)
        (args.out / "arrivals.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    sizes = [float(s) for s in args.sizes.split(",") if s]
    if not args.report_only:
        from benchmarks.nightly_loop import simulate_missing

        simulate_missing(Path(args.loops), args.graphs, args.sims)
        for loop, night, seed, path in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                   args.nights, args.seeds):
            graph = loop.rsplit("-sim", 1)[0]
            out = args.out / graph / "rows.jsonl"
            for size in sizes:
                if any((r["loop"], r["night"], r["seed"], r["size"]) == (loop, night, seed, size)
                       for r in read_jsonl(out)):
                    continue
                row = {"graph": graph, "loop": loop, "night": night, "size": size,
                       "seed": seed} | score_row(path, seed, size)
                out.parent.mkdir(parents=True, exist_ok=True)
                append_jsonl(out, row)
                print(f"[{loop}] night {night} size {size:g} seed {seed}: AUROC "
                      + " / ".join(f"{n} {row[n]['auroc']:.3f}" for n in SIGNALS), flush=True)
    rows = [r for p in sorted(args.out.glob("*/rows.jsonl")) for r in read_jsonl(p)]
    write_table(args.out, table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
