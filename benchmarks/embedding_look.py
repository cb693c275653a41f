"""A look, not a row (issue 60): where does a planted class sit in one nightly fit, in the
fit's own novel classes and in k-means cuts of the fit's novel nodes on the model's embedding
(``h*`` of the last layer, Eq. 6; ``ORAL.selected_embedding``) and on ``S^2 X``? It reads the
simulation's truth (test labels): it chooses nothing, and what it shows is for a study's rule to
test on fresh rows (``benchmarks/results/novel_recut_embedding/exploration.md``).

    OMP_NUM_THREADS=1 ORAL_DATA_DIR=../shared/datasets python -m benchmarks.embedding_look \\
        --loops STATE --graph amazonphoto --sim 0 --date 2026-01-08 \\
        --classes "Flashes,Lighting & Studio"

One fit of the night at the pipeline's defaults (seed 0), the labelled nodes split as a night
splits them; for each named class, the best match (most of its unlabelled nodes) among the fit's
novel classes and among the parts of k-means cuts (k = 2..8) of the fit's novel nodes, as
precision / recall (the scoreboard's bar: >= 70% / >= 50%), and each cut's mean silhouette.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def best_match(parts, truth, target: str) -> tuple[float, float]:
    """``(precision, recall)`` of the part (of ``parts``, one id per node, -1 none) holding most
    nodes of ``target`` in ``truth`` (a class name per node); recall over every node of
    ``target``, ``(0, 0)`` when no part holds one."""
    import numpy as np

    parts, truth = np.asarray(parts), np.asarray(truth)
    size = int((truth == target).sum())
    best = (0.0, 0.0, 0)
    for part in set(parts[parts >= 0].tolist()):
        inside = parts == part
        hit = int((truth[inside] == target).sum())
        if hit > best[2]:
            best = (hit / int(inside.sum()), hit / size if size else 0.0, hit)
    return best[0], best[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=Path, required=True, help="the loops' state folder "
                    "(the seeded simulation is made there when missing)")
    ap.add_argument("--graph", required=True)
    ap.add_argument("--sim", type=int, required=True)
    ap.add_argument("--date", required=True, help="the night's snapshot date, YYYY-MM-DD")
    ap.add_argument("--classes", required=True, help="comma list of class names to follow")
    args = ap.parse_args(argv)

    import numpy as np
    import pyarrow.parquet as pq
    import torch

    from benchmarks.nightly_loop import simulate_missing
    from data_contracts import snapshots as snap
    from flows.configuration import build_config, pipeline_defaults
    from oral_core.known_head import propagated_features
    from oral_core.kmeans import kmeans
    from oral_core.known_head import standardised
    from oral_core.recut import mean_silhouette, sampled_rows
    from oral_core.trainer import ORAL
    from tasks.fitting import fit_inputs

    simulate_missing(args.loops, args.graph, str(args.sim))
    folder = (args.loops / f"{args.graph}-sim{args.sim}" / "snapshots" / args.graph
              / f"snapshot={args.date}")
    if not folder.is_dir():
        ap.error(f"no snapshot {folder}")
    s = snap.load_snapshot(folder)
    x, edges, train, val, _ = fit_inputs(s, "auto", 0)
    x, edges = torch.as_tensor(x), torch.as_tensor(edges)
    train, val = torch.from_numpy(train), torch.from_numpy(val)
    names = pq.read_table(folder / "truth.parquet").to_pydict()
    truth_of = dict(zip(names["node_id"], names["true_label"]))
    truth = np.array([truth_of.get(i, "") for i in s.node_ids.to_pylist()], dtype=object)
    model = ORAL(build_config(pipeline_defaults() | {"progress": False})).fit(x, edges, train,
                                                                               val)
    class_id = model.predict().class_id
    unlabelled = ((train < 0) & (val < 0)).numpy()
    novel = unlabelled & (class_id >= model.num_known_).numpy()
    targets = [c for c in args.classes.split(",") if c]
    scored = truth[unlabelled]
    fitted = np.where(novel, class_id.numpy(), -1)[unlabelled]
    print(f"{args.graph} sim {args.sim} {args.date}: {int(novel.sum())} novel unlabelled nodes "
          f"in {len(set(class_id[torch.from_numpy(novel)].tolist()))} novel classes")
    for t in targets:
        p, r = best_match(fitted, scored, t)
        print(f"  the fit's classes: {t} {100 * p:.0f}% / {100 * r:.0f}%")
    rows = torch.from_numpy(novel).nonzero().flatten()
    views = {"embedding h*": model.selected_embedding(x, edges)[rows].double(),
             "S^2 X": propagated_features(x.float(), edges)[rows].double()}
    for view, z in views.items():
        z = standardised(z)[0]
        sample = sampled_rows(torch.arange(z.shape[0]), 2000)
        for k in range(2, 9):
            cut, _, _ = kmeans(z, k, restarts=10, seed=0)
            parts = np.full(len(truth), -1)
            parts[rows.numpy()] = cut.numpy()
            found = "  ".join(f"{t} {100 * p:.0f}% / {100 * r:.0f}%"
                              for t in targets for p, r in [best_match(parts[unlabelled],
                                                                       scored, t)])
            print(f"  {view}, k={k} (silhouette {mean_silhouette(z, cut, sample):.3f}): {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
