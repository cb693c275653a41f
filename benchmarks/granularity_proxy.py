"""Where on Eq. 4's plateau should the granularity sit? (``granularity_position``; labelled-only)

    OMP_NUM_THREADS=1 python -m benchmarks.granularity_proxy --loops STATE [--graphs cora]
        [--sims 0,1] [--nights 4,8] [--positions 0.5,0.75] [--tasks heldout,nonovel]
        [--static synthetic15 --seeds 0,1] [--out DIR] [--report-only]

On the nightly loop's young Cora graphs the two planted classes share one novel group with the
plateau's median resolution (``granularity_rule="plateau"``), where the plateau spans 5 to 23
groups at the same Eq. 4 accuracy: nothing in Eq. 4 sees a novel class, so where on the plateau
the granularity sits is a free choice. ``granularity_position`` moves it toward the finer end.

Judged on labelled nodes only:

- the held-out-class proxy with two stand-in novel classes (``hide="extremes"``: the known class
  with the most labelled nodes and the one with the fewest), the case of two planted classes: its
  All / Known / Novel, and how many stand-ins *surface* (a novel class holding >= 50% of the
  stand-in's labelled nodes, >= 70% of the class's scored nodes being that stand-in's; the scored
  nodes are labelled, so precision is over them);
- the no-novel proxy (``harness.proxy.no_novel_task``): classes invented where nothing is new.

The fits run at the nightly pipeline's defaults (``flows.configuration.pipeline_defaults``) with
``granularity_position`` set per row, on nightly snapshots of a loop's kept state (``--loops``)
and, with ``--static``, on the generator's 15-class graph (many classes). One JSON line per fit
in ``fits.jsonl`` (resumable); ``README.md`` gets the table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "granularity_proxy"


def surfaced(y, scored, class_id, hidden, visible_count: int) -> list[dict]:
    """Per stand-in class (dataset id in ``hidden``): its best novel class (id >=
    ``visible_count``) by overlap among the scored nodes, that class's recall of the stand-in and
    precision over the scored nodes, and whether it surfaces (recall >= 0.5, precision >= 0.7)."""
    import torch

    out = []
    ids, truth = class_id[scored], y[scored]
    for h in hidden:
        members = truth == h
        novel = ids[members & (ids >= visible_count)]
        if novel.numel() == 0:
            out.append({"class": int(h), "recall": 0.0, "precision": 0.0, "surfaced": False})
            continue
        best = int(torch.mode(novel).values)
        n = int((novel == best).sum())
        recall, precision = n / int(members.sum()), n / int((ids == best).sum())
        out.append({"class": int(h), "recall": recall, "precision": precision,
                    "surfaced": recall >= 0.5 and precision >= 0.7})
    return out


def heldout_scores(g, x, edges, train, val, k: int, seed: int, config,
                   hide: str = "extremes") -> dict:
    """The held-out-class proxy on one labelled graph (two stand-ins with ``hide="extremes"``,
    one with ``"last"``): its scores, the stand-ins' surfacing, the novel classes found."""
    return heldout_answers(g, x, edges, train, val, k, seed, config, hide)["last"]


def heldout_answers(g, x, edges, train, val, k: int, seed: int, config,
                    hide: str = "extremes", answers: tuple[str, ...] = ("last",)) -> dict:
    """:func:`heldout_scores` of each of the fit's ``answers`` (keys of ``ORAL.discoveries_``;
    one absent from the fit is its final answer, ``"last"``), from one fit."""
    import torch

    from benchmarks.split_repeat_proxy import wholeness_gate
    from harness.proxy import proxy_accuracy, task_from_labels
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL

    task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, seed, hide)
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    model = ORAL(cfg).with_diagnostics().fit(x, edges, task.train, task.val)
    v = int(task.visible.numel())
    out = {}
    for key in answers:
        ids = model.discoveries_.get(key, model.discoveries_["last"]).class_id
        acc = proxy_accuracy(g, task, ids)
        found = surfaced(g.y, task.scored, ids, task.hidden, v)
        out[key] = {name: acc[name] for name in ("all", "known", "novel")} | {
            "answer": key if key in model.discoveries_ else "last",
            "surfaced": sum(f["surfaced"] for f in found), "stand_ins": found,
            "novel_classes": int(torch.unique(ids[ids >= v]).numel())} | wholeness_gate(model)
    return out


def static_graph(graph: str, seed: int):
    """``(g, x, edges, train, val, k)``: a graph of :func:`benchmarks.split_repeat_proxy.prepared`
    with the harness's split (its known classes re-indexed ``0..k-1``; the novel ones unlabelled)."""
    import torch

    from benchmarks.split_repeat_proxy import prepared
    from oral_core.splits import make_split

    g, x = prepared(graph, None)
    split = make_split(g.y, seed=seed)
    known = split.known_classes
    index = torch.full((g.num_classes,), -1, dtype=torch.long)
    index[known] = torch.arange(known.numel())
    y = index[g.y]  # known classes 0..k-1, novel -1: the proxy never reads a novel label
    train = torch.where(split.train_mask, y, -1)
    val = torch.where(split.val_mask, y, -1)
    from types import SimpleNamespace
    return (SimpleNamespace(y=torch.where(split.train_mask | split.val_mask, y, -1),
                            num_classes=int(known.numel())),
            x, g.edge_index, train, val, int(known.numel()))


def fit_row(kind: str, source, seed: int, position: float, values: dict,
            hide: str = "extremes") -> dict:
    from flows.configuration import build_config
    from benchmarks.split_repeat_proxy import night_nonovel_fit, night_task, nonovel_fit

    config = build_config(values | {"granularity_position": position})
    start = time.perf_counter()
    if kind == "night-heldout":
        g, x, train, val, k = night_task(source)
        row = heldout_scores(g, x, g.edge_index, train, val, k, seed, config, hide)
    elif kind == "night-nonovel":
        row = night_nonovel_fit(source, seed, config)["final"]
    elif kind == "static-heldout":
        row = heldout_scores(*static_graph(source, seed), seed, config, hide)
    elif kind == "static-nonovel":
        import torch
        g, x, _edges, train, val, k = static_graph(source, seed)
        gg = type(g)(y=g.y, num_classes=k, edge_index=_edges)
        row = nonovel_fit(gg, x, seed, config, (train >= 0, val >= 0, torch.arange(k)))["final"]
    else:
        raise ValueError(f"unknown task {kind!r}")
    return row | {"seconds": round(time.perf_counter() - start, 1)}


def graph_of(source: str) -> str:
    """``cora`` of ``cora-sim0 night 8`` (or of a static graph's name)."""
    return source.split(" ")[0].rsplit("-sim", 1)[0]


def setting(row: dict) -> str:
    """A fit's setting as the table names it: its position, then any ``--set`` it ran with
    (``0.5``, the pipeline's defaults, is the reference every other row is paired with)."""
    return " ".join([f"{row['position']}", *row.get("set", [])])


def table(rows: list[dict]) -> str:
    """Per task, graph and setting (position and ``--set``): mean proxy All / Known / Novel,
    stand-ins surfaced, novel classes found, All paired against the defaults' 0.5 (held-out
    rows); invented classes and share called novel (no-novel rows)."""
    lines = ["| task | graph | setting | fits | All | Known | Novel | stand-ins surfaced "
             "| novel classes | All minus 0.5 (s.e.) | invented classes | % called novel |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict = {}
    for r in rows:
        key = (r["kind"], graph_of(r["source"]), setting(r))
        by.setdefault(key, {})[(r["source"], r["seed"])] = r
    settings = sorted({s for _, _, s in by}, key=lambda s: (s != "0.5", s))
    for kind, graph in sorted({(k, g) for k, g, _ in by}):
        base = by.get((kind, graph, "0.5"), {})
        for pos in settings:
            cell = by.get((kind, graph, pos), {})
            if not cell:
                continue
            rs = list(cell.values())

            def mean(key: str) -> float:
                return statistics.mean(r[key] for r in rs)
            head = f"| {kind} | {graph} | {pos} | {len(rs)} |"
            if "heldout" in kind:
                paired = [cell[k]["all"] - base[k]["all"] for k in cell if k in base]
                se = statistics.stdev(paired) / len(paired) ** 0.5 if len(paired) > 1 else 0.0
                gain = (f"{statistics.mean(paired):+.1f} ({se:.1f})"
                        if paired and pos != "0.5" else "–")
                lines.append(f"{head} {mean('all'):.1f} | {mean('known'):.1f} | "
                             f"{mean('novel'):.1f} | {sum(r['surfaced'] for r in rs)} of "
                             f"{sum(len(r['stand_ins']) for r in rs)} | "
                             f"{mean('novel_classes'):.1f} | {gain} | | |")
            else:
                lines.append(f"{head} | | | | | | {mean('novel_classes'):.1f} | "
                             f"{mean('novel_share'):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--loops", default="", help="a nightly-loop --state folder")
    ap.add_argument("--graphs", default="cora")
    ap.add_argument("--sims", default="0,1")
    ap.add_argument("--nights", default="4,8")
    ap.add_argument("--static", default="", help="static graphs (e.g. synthetic15)")
    ap.add_argument("--seeds", default="0", help="proxy seeds (static graphs: split seeds too)")
    ap.add_argument("--positions", default="0.5,0.75")
    ap.add_argument("--tasks", default="heldout,nonovel")
    ap.add_argument("--hide", default="extremes", choices=("extremes", "last"),
                    help="the held-out task's stand-ins: two (the largest and smallest known "
                    "class) or one")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fits.jsonl"
    rows = read_jsonl(path)
    positions = [float(p) for p in args.positions.split(",")]
    if not args.report_only:
        from cli.options import parse_set
        from data_contracts import snapshots as snap
        from flows.configuration import pipeline_defaults

        values = pipeline_defaults() | parse_set(args.set)[0]
        jobs = []
        for graph in [g for g in args.graphs.split(",") if g and args.loops]:
            for sim in args.sims.split(","):
                base = Path(args.loops) / f"{graph}-sim{sim}"
                if not (base / "snapshots").is_dir():
                    print(f"[{base.name}] no kept snapshots under {base}: skipped")
                    continue
                paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
                for night in [int(n) for n in args.nights.split(",") if n]:
                    for task in args.tasks.split(","):
                        jobs.append((f"night-{task}", str(paths[night - 1]),
                                     f"{base.name} night {night}"))
        for graph in [g for g in args.static.split(",") if g]:
            for task in args.tasks.split(","):
                jobs.append((f"static-{task}", graph, graph))
        for job in list(jobs):
            if job[0].endswith("heldout") and args.hide != "extremes":
                jobs[jobs.index(job)] = (f"{job[0]}-{args.hide}", job[1], job[2])
        done = {(r["kind"], r["source"], r["seed"], r["position"], tuple(r.get("set", [])))
                for r in rows}
        todo = [(j, s, p) for j in jobs for s in [int(v) for v in args.seeds.split(",")]
                for p in positions if (j[0], j[2], s, p, tuple(args.set)) not in done]
        for i, ((kind, source, name), seed, pos) in enumerate(todo, 1):
            print(f"[{i}/{len(todo)}] {kind} {name} seed {seed} position {pos}", flush=True)
            row = {"kind": kind, "source": name, "seed": seed, "position": pos,
                   "set": args.set} | fit_row(kind.removesuffix("-last"), source, seed, pos,
                                              values, "last" if kind.endswith("-last") else
                                              "extremes")
            rows.append(row)
            append_jsonl(path, row)
            print(f"    {json.dumps({k: v for k, v in row.items() if k != 'stand_ins'})}",
                  flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
