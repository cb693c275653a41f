"""Structure refinement (Eq. 10-11) before and after a pure speed-up, interleaved in one process.

    python -m benchmarks.refinement_speed --nodes 10000 100000 --repeats 3
    python -m benchmarks.refinement_speed --step merge --nodes 10000 100000 1000000 --repeats 3

``--step similarity`` (the default, results in ``refinement_speed.md``): the chunked
``index_select`` similarity against the formula it replaced (below). ``--step merge``
(``refinement_speed_merge.md``): int32 candidate draws and keys plus the merge of the recovered
edges into the already canonical edge set (``refine_structure(..., canonical=True)``, what the
trainer calls) against int64 draws and keys and a full re-sort of every edge
(:func:`candidate_pairs_before`, ``canonical=False``), the code before 2026-11-26.

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
import csv
import platform
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

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
    if step == "merge":
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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--step", choices=["similarity", "merge"], default="similarity")
    ap.add_argument("--out", type=Path, default=RESULTS / "refinement_speed")
    args = ap.parse_args(argv)
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
    with open(args.out / f"{name}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    threads = torch.get_num_threads()
    step = "" if args.step == "similarity" else f"--step {args.step} "
    what = ("*before*: Eq. 10 gathered rows by advanced indexing in chunks of 2^18 pairs; "
            "*after*: `index_select` in chunks of 2^14 pairs.") if args.step == "similarity" else (
            "*before*: candidate pairs drawn as int64 with int64 keys, and the kept and "
            "recovered edges re-sorted together (`canonical_edges`); *after*: int32 draws and "
            "keys, and the recovered edges merged into the already canonical edge set "
            "(`union_with_canonical`).")
    lines = ["# Structure refinement (Eq. 10-11): " + (
             "the similarity of Eq. 10 before and after" if args.step == "similarity"
             else "candidate keys and the edge merge before and after"),
             "", f"Command: `python -m benchmarks.refinement_speed {step}--nodes "
             f"{' '.join(map(str, args.nodes))} --repeats {args.repeats}` "
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
