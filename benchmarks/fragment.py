"""Is the split-off part of a large novel class more distinct than the class it crowds out?
A diagnostic (reads test labels; chooses nothing).

On AmazonPhoto's strict rows with the prior, ORAL trails OpenNCD because its largest novel class
is split into two groups while the small novel class is merged into one of them (see
``benchmarks.per_class``). With the class number fixed, a label-free rule could only undo that by
seeing that the split-off fragment belongs with the rest of its class more than the small class
does. This fits ORAL (today's defaults, or ``--set``) and measures both, by edges and by features:

- edge ratio: the edge density between two node sets over the geometric mean of their
  within-set densities (1: as connected as inside; 0: no edge between them);
- centroid cosine: the cosine of the two sets' mean (row-normalised) feature vectors.

For the largest novel class: its part in the group that holds most of it ("main"), its part in
the other group that holds most of it ("fragment"), and the small novel class (the second novel
class, all of its nodes). Pairs of known classes are given for scale.

    python -m benchmarks.fragment --dataset amazonphoto --prior --seeds 2,3 --out benchmarks/results/fragment/fragment_amazonphoto-prior.md
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch


def edge_ratio(a: torch.Tensor, b: torch.Tensor, edge_index: torch.Tensor) -> float:
    """Edge density between node masks ``a`` and ``b`` over the geometric mean of their
    within-set densities (self-loops left out)."""
    src, dst = edge_index[:, edge_index[0] != edge_index[1]]
    na, nb = float(a.sum()), float(b.sum())
    if na < 2 or nb < 2:
        return float("nan")
    within_a = float((a[src] & a[dst]).sum()) / (na * (na - 1))
    within_b = float((b[src] & b[dst]).sum()) / (nb * (nb - 1))
    between = float((a[src] & b[dst]).sum()) / (na * nb)
    scale = (within_a * within_b) ** 0.5
    return between / scale if scale > 0 else float("nan")


def centroid_cosine(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> float:
    """Cosine of the mean row-normalised feature vectors of node masks ``a`` and ``b``."""
    ca, cb = x[a].mean(0), x[b].mean(0)
    return float(ca @ cb / (ca.norm() * cb.norm()).clamp_min(1e-12))


def fragment_stats(class_id: torch.Tensor, y: torch.Tensor, known: list[int],
                   edge_index: torch.Tensor, x: torch.Tensor) -> dict:
    """The measurements of one answer (``class_id`` per node, any ids) against the truth ``y``."""
    x = torch.nn.functional.normalize(x.double(), dim=1)
    novel = sorted(set(y.tolist()) - set(known), key=lambda c: -int((y == c).sum()))
    if len(novel) < 2:
        raise ValueError("needs at least two novel classes")
    big, small = novel[0], novel[1]
    held = {int(g): int(((class_id == g) & (y == big)).sum()) for g in torch.unique(class_id)}
    order = sorted(held, key=lambda g: -held[g])
    main, frag = order[0], order[1]
    m, f, s = (class_id == main) & (y == big), (class_id == frag) & (y == big), y == small
    pairs = [(a, b) for i, a in enumerate(known) for b in known[i + 1:]]
    known_edges = [edge_ratio(y == a, y == b, edge_index) for a, b in pairs]
    known_cos = [centroid_cosine(y == a, y == b, x) for a, b in pairs]
    return {"big": big, "small": small, "main_nodes": int(m.sum()), "fragment_nodes": int(f.sum()),
            "fragment_purity": float(f.sum()) / max(1, int((class_id == frag).sum())),
            "small_in_main": float(((class_id == main) & s).sum()) / max(1, int(s.sum())),
            "fragment_edges": edge_ratio(f, m, edge_index), "fragment_cos": centroid_cosine(f, m, x),
            "small_edges": edge_ratio(s, m, edge_index), "small_cos": centroid_cosine(s, m, x),
            "known_edges_max": max(known_edges, default=float("nan")),
            "known_cos_max": max(known_cos, default=float("nan"))}


def fit_answer(prep, seed: int, prior: bool, sets: dict) -> tuple[torch.Tensor, list[int]]:
    """ORAL's final answer for one strict-protocol seed on a prepared dataset
    (:func:`harness.experiment.prepare`): class ids per node and the known classes."""
    from oral_core.config import ORALConfig
    from harness.experiment import method_config, protocol_split
    from oral_core.trainer import ORAL

    g = prep.graph
    split, _ = protocol_split(g, seed, "ours")
    base = ORALConfig.from_dict(ORALConfig().to_dict() | {"progress": False} | sets)
    cfg = method_config("oral", base, g.num_classes if prior else None, seed)
    model = ORAL(cfg).fit(prep.x, g.edge_index, split.train_labels(g.y), split.val_labels(g.y))
    return model.predict().class_id, [int(c) for c in split.known_classes]


def main(argv=None) -> int:
    from cli.options import OptionError, parse_set
    from oral_core.datasets import DatasetNotFound
    from harness.experiment import prepare, protocol_split

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="amazonphoto")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--seeds", default="0,1,2,3", help="comma list of seeds")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        sets, _ = parse_set(args.set)
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except (OptionError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    lines = [f"# Split-off fragment against the crowded-out class: {args.dataset}, "
             f"{'with' if args.prior else 'without'} the prior, strict protocol",
             "", "Diagnostic (test labels; chooses nothing). Command: `python -m benchmarks.fragment "
             + " ".join(argv if argv is not None else sys.argv[1:]) + "`.", "",
             "Edge ratio: density between the two sets over the geometric mean of their within-set "
             "densities. Cosine: of the sets' mean row-normalised features. `main`: the largest novel "
             "class's nodes in the group holding most of them; `fragment`: its nodes in the next such "
             "group; `small`: every node of the second novel class. Known pairs: the most connected / "
             "most similar pair of known classes, for scale.", "",
             "| seed | main | fragment (purity) | small in main's group | fragment–main edges / cos "
             "| small–main edges / cos | known pairs, max edges / cos |", "|---|---|---|---|---|---|---|"]
    try:  # the dataset is read once for every seed
        prep = prepare(args.dataset, args.data_dir)
    except (DatasetNotFound, ValueError) as err:  # missing, or a file that is no dataset
        print(f"error: {err}", file=sys.stderr)
        return 2
    g = prep.graph
    split, _ = protocol_split(g, seeds[0] if seeds else 0, "ours")  # known classes: lowest ids
    if g.num_classes - len(split.known_classes) < 2:
        print(f"error: {args.dataset}: the strict protocol leaves "
              f"{g.num_classes - len(split.known_classes)} novel class(es); the fragment "
              "diagnostic needs at least two", file=sys.stderr)
        return 2
    for seed in seeds:
        start = time.time()
        class_id, known = fit_answer(prep, seed, args.prior, sets)
        s = fragment_stats(class_id, g.y, known, g.edge_index, prep.x)
        print(f"seed {seed}: fragment edges {s['fragment_edges']:.3f} cos {s['fragment_cos']:.3f}; "
              f"small edges {s['small_edges']:.3f} cos {s['small_cos']:.3f} ({time.time() - start:.0f}s)",
              flush=True)
        lines.append(f"| {seed} | {s['main_nodes']} | {s['fragment_nodes']} ({s['fragment_purity']:.2f}) "
                     f"| {s['small_in_main']:.2f} | {s['fragment_edges']:.3f} / {s['fragment_cos']:.3f} "
                     f"| {s['small_edges']:.3f} / {s['small_cos']:.3f} "
                     f"| {s['known_edges_max']:.3f} / {s['known_cos_max']:.3f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
