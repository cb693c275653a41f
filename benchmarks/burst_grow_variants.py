"""Exploration of ``+burstgrow``'s two constants on kept young-class fits (labelled nodes only;
not evidence: ``benchmarks/results/answer_burst_grow/README.md`` sets its rule before the rows
that decide).

    OMP_NUM_THREADS=1 python -m benchmarks.burst_grow_variants --loops DIR --keep DIR
        --graphs amazonphoto,cora --sims 27 [--beside-old] [--variants 2:3,1:3] > rows.jsonl

For every kept fit of ``benchmarks.young_class --recent`` (``--beside-old``: of that proxy beside
an old class) on nights 5 and 8, seeds 0-2, sizes 3% and 10%, the pipeline's answer is decided
again (:func:`oral_core.answer.decide_answer`, as :mod:`benchmarks.answer_proxy` does) with the
young-joining burst step (``burstyoung``) and with it grown (``burstgrow``) at each
``least:rounds`` of ``--variants`` (:func:`oral_core.answer.burst_grown`). One JSON row per fit:
the young class's recall and precision, whether it (and, beside an old class, the old class too)
surfaced, All, and the nodes the burst step moved. No fit is made: a fit not kept is skipped.
``--table ROWS.jsonl ...`` prints the rows' table instead: per graph and proxy, the fits, the
young classes surfaced with each variant, mean recall / precision, and All paired against
``burstyoung`` (mean and standard error)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=Path)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--graphs")
    ap.add_argument("--sims")
    ap.add_argument("--beside-old", action="store_true")
    ap.add_argument("--variants", default="2:3", help="least:rounds, a comma list")
    ap.add_argument("--table", nargs="+", type=Path, help="rows files to tabulate (no fit read)")
    args = ap.parse_args(argv)
    if args.table:
        print(table([r for path in args.table for r in read_rows(path)]))
        return 0
    missing = [f"--{k}" for k in ("loops", "keep", "graphs", "sims") if getattr(args, k) is None]
    if missing:
        ap.error(f"{', '.join(missing)} needed (or --table ROWS.jsonl)")

    from types import SimpleNamespace

    import torch
    from torch_geometric.utils import subgraph

    import oral_core.answer as answer
    from benchmarks.answer_proxy import night_recent
    from benchmarks.granularity_proxy import surfaced
    from benchmarks.records import fit_name
    from benchmarks.split_repeat_proxy import loop_nights, night_task
    from flows.configuration import build_config, pipeline_defaults
    from harness.proxy import proxy_accuracy, young_class_task
    from oral_core.recut import REGROUP_STRENGTH

    config = build_config(pipeline_defaults())
    variants = [("burstyoung", None)] + [
        (f"grow{v}", tuple(int(p) for p in v.split(":"))) for v in args.variants.split(",") if v]
    for loop, night, seed, path in loop_nights(args.loops, args.graphs, args.sims, "5,8",
                                               "0,1,2"):
        g, x, train, val, k = night_task(path)
        arrived = night_recent(path)
        for size in (0.03, 0.1):
            name = (fit_name(loop, night, seed, size=size, sets=[]) + "-recent"
                    + ("-old" if args.beside_old else ""))
            kept = args.keep / f"{name}.pt"
            if not kept.exists():
                print(f"{kept}: not kept, skipped", file=sys.stderr)
                continue
            task = young_class_task(g.y, train >= 0, val >= 0, torch.arange(k), seed, size,
                                    among=arrived, beside_old=args.beside_old)
            edges, _ = subgraph(task.keep, g.edge_index, relabel_nodes=True,
                                num_nodes=g.y.shape[0])
            class_id = torch.load(kept, weights_only=False)
            visible = int(task.visible.numel())
            row = {"graph": loop.rsplit("-sim", 1)[0], "loop": loop, "night": night,
                   "size": size, "seed": seed, "beside_old": args.beside_old,
                   "young_nodes": int((task.y == task.hidden[0]).sum())}
            for label, constants in variants:
                got = answer.decide_answer(
                    class_id, x[task.keep], edges, task.train, task.val, visible,
                    scale=config.known_head_scale, seed=seed,
                    paired_alpha=answer.PAIRED_ALPHA, split_share=answer.SPLIT_SHARE,
                    rejected_quantile=answer.REJECTED_QUANTILE,
                    regroup_strength=REGROUP_STRENGTH, regroup_calibrated=True,
                    recent=arrived[task.keep], burst_alpha=answer.BURST_ALPHA,
                    burst_join=True, burst_young=True, burst_grow=constants is not None,
                    **({"burst_grow_at": constants} if constants is not None else {}))
                ids = got["answer"]
                found = surfaced(task.y, task.scored, ids, task.hidden, visible)
                acc = proxy_accuracy(SimpleNamespace(y=task.y, num_classes=k), task, ids)
                row[label] = {"surfaced": found[0]["surfaced"],
                              "old_surfaced": found[1]["surfaced"] if len(found) > 1 else None,
                              "recall": found[0]["recall"], "precision": found[0]["precision"],
                              "all": acc["all"], "moved": got.get("burst", 0)}
            print(json.dumps(row), flush=True)
    return 0


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def table(rows: list[dict]) -> str:
    """Markdown: per graph and proxy, each variant's young classes surfaced (of the fits), mean
    recall / precision of the young class, and All minus ``burstyoung``'s, paired (s.e.)."""
    import math
    import statistics

    lines = ["| graph | proxy | fits | variant | young classes surfaced | recall / precision "
             "| All minus burstyoung (s.e.) |", "|---|---|---|---|---|---|---|"]
    keys = sorted({(r["graph"], r["beside_old"]) for r in rows})
    for graph, old in keys:
        group = [r for r in rows if (r["graph"], r["beside_old"]) == (graph, old)]
        names = [k for k, v in group[0].items() if isinstance(v, dict)]
        for name in names:
            diff = [r[name]["all"] - r["burstyoung"]["all"] for r in group]
            se = statistics.stdev(diff) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
            lines.append(
                f"| {graph} | {'beside an old class' if old else 'young class'} | {len(group)} "
                f"| {name} | {sum(r[name]['surfaced'] for r in group)} "
                f"| {100 * statistics.fmean(r[name]['recall'] for r in group):.0f}% / "
                f"{100 * statistics.fmean(r[name]['precision'] for r in group):.0f}% "
                f"| {statistics.fmean(diff):+.2f} ({se:.2f}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
