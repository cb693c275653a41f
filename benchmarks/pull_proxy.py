"""Pulling confident nodes out of novel classes (``known_head_pull``), on labelled nodes only.

    OMP_NUM_THREADS=1 python -m benchmarks.pull_proxy --loops benchmarks/.state/nightly_loop_known_head
        [--graphs blogcatalog,cora] [--nights 2,5,8] [--pulls 0.9,0.95,0.99] [--out DIR]

On BlogCatalog's nightly loop the champion gate holds back the nights with a planted class: the
novel class ORAL finds there takes in about a fifth of the known-class validation nodes. The
pull (``oral_core.known_head.keep_known_fidelity`` with ``pull=t``) moves a node ORAL put in a
novel class, or in none, into the known class the known head gives it when the head's
probability reaches ``t``. That returns known-class nodes, but it also takes nodes of a real
novel class. The held-out-class proxy judges both on a nightly snapshot: one known class is
hidden (its labelled nodes play a novel class), ORAL is fitted at the nightly pipeline's
defaults, the known head is fitted on the visible classes' training nodes as the pipeline fits
it (steps chosen by cross-validation), and the final answer is pulled at each ``t``. Reported
per ``t``: the proxy's All / Known / Novel (Novel: the hidden class found again) and the
validation accuracy of the visible known classes (the champion gate's measure). One fit answers
every ``t``. Resumable: one JSON line per fit in ``fits.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "pull_proxy"


def pulled(class_id, probs, num_known: int, pull: float):
    """``class_id`` with its nodes outside the known classes (a novel class, or none) moved to
    the head's class where the head's probability reaches ``pull``; known-class nodes stay."""
    import torch

    conf, head_class = probs.max(dim=1)
    outside = (class_id < 0) | (class_id >= num_known)
    return torch.where(outside & (conf >= pull), head_class.to(class_id.dtype), class_id)


def night_fit(path: str, seed: int, config, pulls: list[float]) -> dict:
    import torch

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import proxy_accuracy, task_from_labels
    from oral_core.config import ORALConfig
    from oral_core.known_head import fit_known_head, head_probabilities
    from oral_core.trainer import ORAL

    g, x, train, val, k = night_task(path)
    task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, seed, "last")
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    model = ORAL(cfg).fit(x, g.edge_index, task.train, task.val)
    final = model.discoveries_["last"].class_id
    visible = int(task.visible.numel())
    head = fit_known_head(x, g.edge_index, task.train, visible, seed=seed, hops=None,
                          labelled=(task.train >= 0) | (task.val >= 0))
    probs = head_probabilities(head, x, g.edge_index)
    seen = task.val >= 0
    out = {}
    for t in [None, *pulls]:
        ids = final if t is None else pulled(final, probs, visible, t)
        acc = proxy_accuracy(g, task, ids)
        out["none" if t is None else f"{t:g}"] = {
            **{key: acc[key] for key in ("all", "known", "novel", "classes")},
            "val": 100 * float((ids[seen] == task.val[seen]).float().mean()),
            "moved": int((ids != final).sum())}
    out["hops"] = int(head["hops"])
    return out


def summary(rows: list[dict], pulls: list[str]) -> str:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["graph"].rsplit("-sim", 1)[0], []).append(r)
    lines = ["| graph | fits | pull | All | Known | Novel (the hidden class) | validation "
             "(visible known) | nodes moved | All minus no pull (s.e.; worst) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for graph, rs in sorted(by.items()):
        for t in ["none", *pulls]:
            got = [r["scores"][t] for r in rs if t in r["scores"]]
            if not got:
                continue
            mean = {key: statistics.mean(s[key] for s in got)
                    for key in ("all", "known", "novel", "val", "moved")}
            if t == "none":
                gain = "–"
            else:
                d = [r["scores"][t]["all"] - r["scores"]["none"]["all"] for r in rs]
                se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
                gain = f"{statistics.mean(d):+.1f} ({se:.1f}; {min(d):+.1f})"
            lines.append(f"| {graph} nights | {len(got)} | {t} | {mean['all']:.1f} | "
                         f"{mean['known']:.1f} | {mean['novel']:.1f} | {mean['val']:.1f} | "
                         f"{mean['moved']:.0f} | {gain} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "blogcatalog,cora", "0,1,2", "2,5,8", seeds=None)
    ap.add_argument("--pulls", default="0.9,0.95,0.99")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    pulls = [float(t) for t in args.pulls.split(",") if t]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "fits.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if not args.report_only:
        from data_contracts import snapshots as snap
        from flows.configuration import build_config, pipeline_defaults

        config = build_config(pipeline_defaults())
        done = {r["graph"] for r in rows}
        for graph in [g for g in args.graphs.split(",") if g]:
            for sim in [s for s in args.sims.split(",") if s]:
                base = Path(args.loops) / f"{graph}-sim{sim}"
                if not (base / "snapshots" / graph).is_dir():
                    continue
                paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
                for night in [int(n) for n in args.nights.split(",") if n]:
                    name = f"{base.name} night {night}"
                    if name in done or night > len(paths):
                        continue
                    started = time.perf_counter()
                    scores = night_fit(str(paths[night - 1]), 0, config, pulls)
                    row = {"graph": name, "seed": 0, "scores": scores,
                           "seconds": time.perf_counter() - started}
                    rows.append(row)
                    with path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"[{name}] " + json.dumps({t: {a: round(b, 1) for a, b in v.items()}
                                                    for t, v in scores.items()
                                                    if isinstance(v, dict)}), flush=True)
    text = summary(rows, [f"{t:g}" for t in pulls])
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
