"""Structure refinement (Eq. 10-11) before and after a pure speed-up, interleaved in one process.

    python -m benchmarks.refinement_speed --nodes 10000 100000 --repeats 3
    python -m benchmarks.refinement_speed --step merge --nodes 10000 100000 1000000 --repeats 3
    python -m benchmarks.refinement_speed --step gram --nodes 2708 7650 10000 100000 --classes 7 --repeats 5
    python -m benchmarks.refinement_speed --step gram --fits cora:0 cora:1 amazonphoto:0 ... --data-dir ../shared/datasets

``--step similarity`` (the default, results in ``refinement_speed.md``): the chunked
``index_select`` similarity against the formula it replaced (below). ``--step merge``
(``refinement_speed_merge.md``): int32 candidate draws and keys plus the merge of the recovered
edges into the already canonical edge set (``refine_structure(..., canonical=True)``, what the
trainer calls) against int64 draws and keys and a full re-sort of every edge
(:func:`candidate_pairs_before`, ``canonical=False``), the code before 2026-11-26. ``--step gram``
(``refinement_speed_gram.md``): the lowest pairs of a group of at most
:data:`oral_core.refinement.GRAM_MEMBERS` members found through its Gram matrix
(:func:`oral_core.refinement.lowest_similarity`) against every pair gathered and ranked
(``GRAM_MEMBERS = 0``, the code before 2026-12-07). With ``--fits GRAPH:SEED ...`` it checks
the same on real fits instead (``refinement_speed_gram_fits.md``): every epoch of a fit at the
night's defaults recovers its pairs both ways from the same generator state and keeps going with
the Gram path's; the two sets must be equal every epoch, so the fit is the one the pair path gives.

``refine_structure`` runs on a planted input (``--classes`` labels over the nodes, 40% of them
without a label, random representativeness rows for three layers, an edge set of average degree
10), once with :func:`oral_core.refinement.node_similarity` as it is and once with the formula it
replaced (:func:`similarity_before`: rows gathered by advanced indexing in chunks of 2^18
pairs), interleaved in one process. Both must return the same edges (checked, ``torch.equal``):
the change is a pure speed-up, so no accuracy run is needed. Medians go to
``benchmarks/results/refinement_speed/refinement_speed.csv`` / ``.md``; the figure to compare across machines is
the ratio (before / after) measured in the same run.
"""
from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

from benchmarks.records import write_csv
from oral_core import refinement
from oral_core.graph import canonical_edges

RESULTS = Path(__file__).resolve().parent / "results"


def similarity_before(r_layers, src, dst, chunk: int = 1 << 18, normed=None) -> torch.Tensor:
    """Eq. 10 as computed before (commit 352f59b): ``rn[s]`` gathers, 2^18 pairs per chunk."""
    normed = refinement.normalised_scores(r_layers) if normed is None else normed
    out = torch.empty(src.numel(), dtype=normed[0].dtype, device=src.device)
    for start in range(0, src.numel(), chunk):
        s, d = src[start:start + chunk], dst[start:start + chunk]
        out[start:start + chunk] = torch.stack(
            [(rn[s] * rn[d]).sum(dim=-1) for rn in normed]).mean(dim=0)
    return out


def candidate_pairs_before(num_members, max_pairs, generator, device):
    """Candidate pairs as drawn before 2026-11-26: int64 draws and int64 keys."""
    n = num_members
    if n * (n - 1) // 2 <= max_pairs:
        iu = torch.triu_indices(n, n, 1, device=device)
        return iu[0], iu[1]
    i = torch.randint(0, n, (max_pairs,), generator=generator).to(device)
    j = torch.randint(0, n - 1, (max_pairs,), generator=generator).to(device)
    j = j + (j >= i).long()
    lo, hi = torch.minimum(i, j), torch.maximum(i, j)
    key = torch.unique(lo * n + hi)
    return key // n, key % n


def planted(nodes: int, classes: int, prototypes: int = 40, layers: int = 3, seed: int = 0):
    """Labels (40% unlabelled), per-layer representativeness rows and edges of degree ~10."""
    g = torch.Generator().manual_seed(seed)
    label = torch.randint(0, classes, (nodes,), generator=g)
    label[torch.rand(nodes, generator=g) < 0.4] = -1
    r = [torch.softmax(torch.randn(nodes, prototypes, generator=g), dim=-1) for _ in range(layers)]
    edges = canonical_edges(torch.randint(0, nodes, (2, 5 * nodes), generator=g), nodes)
    return edges, label, r


def refine(edges, label, r, seed: int, before: bool, step: str = "similarity"
           ) -> tuple[torch.Tensor, float]:
    gen = torch.Generator().manual_seed(seed)
    if step == "gram":
        patch = mock.patch.object(refinement, "GRAM_MEMBERS", 0) if before \
            else contextlib.nullcontext()
        canonical = True
    elif step == "merge":
        patch = mock.patch.object(refinement, "candidate_pairs", candidate_pairs_before) if before \
            else contextlib.nullcontext()
        canonical = not before
    else:
        patch = mock.patch.object(refinement, "node_similarity", similarity_before) if before \
            else contextlib.nullcontext()
        canonical = False
    with patch:
        start = time.perf_counter()
        out = refinement.refine_structure(edges, label, r, 0.015, 128, gen, canonical=canonical)
        return out, time.perf_counter() - start


def check_fits(specs: list[str], epochs: int, data_dir, out: Path) -> None:
    """Every epoch of each fit (``GRAPH:SEED``, :func:`benchmarks.profile.load_graph`'s graphs,
    the night's defaults): the pairs recovered through the Gram matrix against every pair ranked
    (``gram_members=0``) from the same generator state; the fit goes on with the Gram path's.
    Writes ``refinement_speed_gram_fits.md`` / ``.csv``; exits non-zero if any epoch differs."""
    from benchmarks.profile import load_graph
    from flows.configuration import build_config, pipeline_defaults
    from oral_core.splits import make_split
    from oral_core.trainer import ORAL

    recover = refinement.intra_class_recovery
    rows = []
    for spec in specs:
        graph_name, _, seed = spec.rpartition(":")
        seed = int(seed)
        row = {"graph": graph_name, "seed": seed, "epochs": 0, "same": 0, "pairs": 0,
               "gram_s": 0.0, "pairs_s": 0.0}

        def both(node_label, r_layers, mu, per_node, generator, gram_members=None, row=row):
            state = generator.get_state()
            start = time.perf_counter()
            gram = recover(node_label, r_layers, mu, per_node, generator)
            row["gram_s"] += time.perf_counter() - start
            after = generator.get_state()
            generator.set_state(state)
            start = time.perf_counter()
            pairs = recover(node_label, r_layers, mu, per_node, generator, gram_members=0)
            row["pairs_s"] += time.perf_counter() - start
            generator.set_state(after)
            same = set(map(tuple, gram.T.tolist())) == set(map(tuple, pairs.T.tolist()))
            row["epochs"] += 1
            row["same"] += int(same)
            row["pairs"] += int(gram.shape[1])
            return gram

        graph, x = load_graph(graph_name, data_dir)
        split = make_split(graph.y, seed=seed)
        cfg = build_config(pipeline_defaults() | {"epochs": epochs, "seed": seed, "device": "cpu"})
        with mock.patch.object(refinement, "intra_class_recovery", both):
            ORAL(cfg).fit(x, graph.edge_index, split.train_labels(graph.y),
                          split.val_labels(graph.y))
        if row["epochs"] == 0:
            raise SystemExit(f"{spec}: no epoch refined its structure in {epochs} epochs "
                             f"(refinement starts at pol_start_epoch={cfg.pol_start_epoch}); "
                             "raise --epochs")
        row["gram_s"], row["pairs_s"] = round(row["gram_s"], 2), round(row["pairs_s"], 2)
        rows.append(row)
        print(row, flush=True)
    write_csv(out / "refinement_speed_gram_fits.csv", rows)
    lines = ["# Structure refinement through the Gram matrix, every epoch of real fits", "",
             f"Command: `python -m benchmarks.refinement_speed --step gram --fits {' '.join(specs)} "
             f"--epochs {epochs}` ({platform.machine()}, {torch.get_num_threads()} torch "
             f"thread(s), torch {torch.__version__}).", "",
             "Each fit at the night's defaults (`flows.configuration.pipeline_defaults()`) on "
             "the labelled split of `make_split(seed)`; every epoch's recovered pairs (`E_+`, Eq. 11) found through "
             "the Gram matrix and by ranking every candidate pair, from the same generator state; "
             "the fit goes on with the Gram path's. Seconds are the two paths' totals over the "
             "fit's epochs (the candidate draws included).", "",
             "| graph | seed | epochs refined | the same pairs | pairs recovered | Gram path s | "
             "every pair s | ratio |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['graph']} | {r['seed']} | {r['epochs']} | {r['same']} of {r['epochs']} | "
              f"{r['pairs']:,} | {r['gram_s']} | {r['pairs_s']} | "
              f"{r['pairs_s'] / max(r['gram_s'], 1e-9):.2f} |" for r in rows]
    (out / "refinement_speed_gram_fits.md").write_text("\n".join(lines) + "\n")
    if any(r["same"] != r["epochs"] for r in rows):
        raise SystemExit("the Gram path recovered other pairs than ranking every pair")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--step", choices=["similarity", "merge", "gram"], default="similarity")
    ap.add_argument("--out", type=Path, default=RESULTS / "refinement_speed")
    ap.add_argument("--fits", nargs="+", metavar="GRAPH:SEED",
                    help="with --step gram: check every epoch of these fits instead")
    ap.add_argument("--epochs", type=int, default=200, help="the fits' epochs (--fits)")
    ap.add_argument("--data-dir", default=None, help="the real datasets' folder (--fits)")
    args = ap.parse_args(argv)
    if args.fits:
        if args.step != "gram":
            ap.error("--fits checks the Gram path: pass --step gram")
        check_fits(args.fits, args.epochs, args.data_dir, args.out)
        return
    rows = []
    for n in args.nodes:
        edges, label, r = planted(n, args.classes)
        times = {"before": [], "after": []}
        for rep in range(args.repeats):
            outs = {}
            for which in ("before", "after"):
                outs[which], sec = refine(edges, label, r, rep, which == "before", args.step)
                times[which].append(sec)
            if not torch.equal(outs["before"], outs["after"]):
                raise SystemExit(f"{n} nodes, repeat {rep}: the refined edges differ")
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        rows.append({"nodes": n, "edges": int(edges.shape[1]), "classes": args.classes,
                     "before_s": round(b, 3), "after_s": round(a, 3), "ratio": round(b / a, 2),
                     "identical": True})
        print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "refinement_speed" + ("" if args.step == "similarity" else "_" + args.step)
    write_csv(args.out / f"{name}.csv", rows)
    threads = torch.get_num_threads()
    step = "" if args.step == "similarity" else f"--step {args.step} "
    what = {"similarity": "*before*: Eq. 10 gathered rows by advanced indexing in chunks of 2^18 "
            "pairs; *after*: `index_select` in chunks of 2^14 pairs.",
            "gram": "*before*: every candidate pair of a group gathered and ranked "
            "(`GRAM_MEMBERS = 0`); *after*: a group of at most "
            f"{refinement.GRAM_MEMBERS:,} members ranked through its Gram matrix, only the pairs "
            "near its cut gathered (`lowest_similarity`).", "merge": (
            "*before*: candidate pairs drawn as int64 with int64 keys, and the kept and "
            "recovered edges re-sorted together (`canonical_edges`); *after*: int32 draws and "
            "keys, and the recovered edges merged into the already canonical edge set "
            "(`union_with_canonical`).")}[args.step]
    title = {"similarity": "the similarity of Eq. 10 before and after",
             "gram": "the lowest pairs through the Gram matrix before and after",
             "merge": "candidate keys and the edge merge before and after"}[args.step]
    lines = ["# Structure refinement (Eq. 10-11): " + title,
             "", f"Command: `python -m benchmarks.refinement_speed {step}--nodes "
             f"{' '.join(map(str, args.nodes))} --classes {args.classes} --repeats {args.repeats}` "
             f"({platform.machine()}, {threads} torch thread(s), torch {torch.__version__}).", "",
             "`refine_structure` on a planted input (labels of "
             f"{args.classes} classes, 40% unlabelled, three layers of 40 prototype scores, "
             "128 candidate pairs per node, mu = 0.015), medians over the repeats, interleaved "
             "in one process. " + what + " The refined edges are "
             "identical (`torch.equal`) in every repeat, so the change cannot move accuracy.", "",
             "| nodes | edges | before s | after s | before / after | identical |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['nodes']:,} | {r['edges']:,} | {r['before_s']} | {r['after_s']} | "
              f"{r['ratio']} | {'yes' if r['identical'] else 'no'} |" for r in rows]
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
