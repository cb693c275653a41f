"""Exploration for ``+burst`` (issue 60; labelled nodes only, no ORAL fit): the burst step
(:func:`oral_core.answer.burst_classes`) alone on top of the reference LR's silent answer, on the
young-class proxy with a recent young class (drawn from the nodes that arrived within the last
``BURST_WINDOW`` snapshots) and on the no-novel proxy, at three binomial levels. Prints one line
per fit and a summary: per graph and size the young class surfaced (of the fits), mean recall and
precision; on the no-novel proxy the novel classes made and the nodes moved. Chooses nothing by
itself (``benchmarks/results/answer_burst/exploration``).

    OMP_NUM_THREADS=1 python -m benchmarks.burst_probe LOOPS GRAPHS SIMS [NIGHTS]
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

ALPHAS = (0.01, 0.001, 0.0001)


def probe(loops: str, graphs: str, sims: str, nights: str = "5,8") -> dict:
    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.answer_proxy import night_recent
    from benchmarks.granularity_proxy import surfaced
    from benchmarks.split_repeat_proxy import loop_nights, night_task
    from harness.proxy import no_novel_task, young_class_task
    from oral_core.answer import answer_view, burst_classes
    from oral_core.reference import reference_logits

    res: dict = {}
    for loop, night, seed, path in loop_nights(Path(loops), graphs, sims, nights, "0,1,2"):
        g, x, train, val, k = night_task(path)
        recent = night_recent(path)
        graph = loop.rsplit("-sim", 1)[0]
        for size in (0.03, 0.1):
            t = young_class_task(g.y, train >= 0, val >= 0, torch.arange(k), seed, size,
                                 among=recent)
            e, _ = subgraph(t.keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
            xs, rk, vis = x[t.keep], recent[t.keep], int(t.visible.numel())
            base = reference_logits(xs, t.train, t.val).argmax(1)
            view = answer_view(xs, e)
            row = {"young": int((t.y == t.hidden[0]).sum())}
            for a in ALPHAS:
                ans, _ = burst_classes(base, rk, xs, e, t.train, t.val, vis, a, view=lambda: view)
                f = surfaced(t.y, t.scored, ans, t.hidden, vis)[0]
                row[a] = (f["surfaced"], f["recall"], f["precision"])
            res.setdefault((graph, size), []).append(row)
            print(loop, night, seed, size, row, flush=True)
        nn = no_novel_task(g.y, train >= 0, val >= 0, torch.arange(k), seed)
        e, _ = subgraph(nn["keep"], g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
        xs, rk = x[nn["keep"]], recent[nn["keep"]]
        base = reference_logits(xs, nn["train"], nn["val"]).argmax(1)
        view = answer_view(xs, e)
        row = {}
        for a in ALPHAS:
            ans, moved = burst_classes(base, rk, xs, e, nn["train"], nn["val"], k, a,
                                       view=lambda: view)
            row[a] = (int(torch.unique(ans[ans >= k]).numel()), moved)
        res.setdefault((graph, "no novel"), []).append(row)
        print(loop, night, seed, "no novel", row, flush=True)
    return res


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    res = probe(*args)
    print("== summary: level -> (surfaced, mean recall, mean precision) or (classes made, moved)")
    for (graph, size), rows in res.items():
        if size == "no novel":
            got = {a: (sum(r[a][0] for r in rows), sum(r[a][1] for r in rows)) for a in ALPHAS}
        else:
            got = {a: (sum(r[a][0] for r in rows), round(statistics.fmean(r[a][1] for r in rows), 2),
                       round(statistics.fmean(r[a][2] for r in rows), 2)) for a in ALPHAS}
        print(graph, size, f"fits {len(rows)}", got)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
