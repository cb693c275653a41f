"""The young-class proxy (issue 60): on a nightly snapshot's labelled nodes, is a small class that
has just appeared found, as a planted class must be the night it starts? Labelled nodes only.

    OMP_NUM_THREADS=1 python -m benchmarks.young_class --loops STATE
        [--graphs cora,amazonphoto,synthetic15] [--sims 10] [--nights 5,8] [--seeds 0,1,2]
        [--sizes 0.03,0.1] [--set KEY=VALUE ...] [--out benchmarks/results/young_class]
        [--recent] [--beside-old | --beside-young | --beside-near] [--report-only]

The held-out-class proxy hides whole established classes; a planted class on its first night
is small and new. :func:`harness.proxy.young_class_task` makes one from labelled nodes: the
labelled subgraph, one known class (``seed`` rotates which) cut to ``size`` times the other
nodes and unlabelled, half of every other class's training nodes unlabelled. One ORAL fit per
(night, size, seed) at the nightly pipeline's defaults; its answers (:data:`ANSWERS`: as
fitted, its novel nodes re-cut, ``per_class+paired``, that with the novelty check, that with
the rejected nodes grouped, that with novel nodes returned first, and that with the split check
first: the pipeline's own since 2026-12-04) scored on the same fit: whether the young class
surfaces (a novel class holding >= 50% of it at >= 70% precision), its recall and precision,
All over the scored nodes (Eq. 14) and the novel classes found. Loops missing under
``--loops`` are simulated first (the nightly loop's seeded simulation). With ``--beside-old``
an older novel class stands beside the young one; with ``--beside-young`` (and ``--recent``) a
second young class arrives beside it, and whether it surfaces too is kept per answer
(``beside_surfaced``); with ``--beside-near`` the older novel class is the known class the young
one links to most (:func:`harness.proxy.nearest_class`), and whether it still surfaces is kept
too (``beside_surfaced``). ``<graph>/rows.jsonl``
(resumable; ``--set`` rows kept apart), ``table.md``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks.answer_proxy import (AGE_SPLIT, BURST, BURST_GROW, BURST_GROW_KEEP,
                                     BURST_GROW_MOST, BURST_JOIN, BURST_SPLIT, BURST_YOUNG,
                                     LOOSER_REJECTED, PURIFY_SETTINGS, REGAIN_QUANTILES,
                                     SPLIT_FIRST)
from benchmarks.records import append_jsonl, fit_name, kept_fit, read_jsonl, write_table

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "young_class"
#: the answers scored from each fit: as fitted, its novel nodes re-cut (``novel_recut``), the
#: nightly pipeline's until 2026-12-04 (``per_class+paired``) and that answer with the novelty check
#: (``+energy``: nodes of novel groups that look known take a known class) and that answer with
#: the rejected nodes grouped (``+rejected``: known-named nodes the known classes reject, among
#: rejected neighbours, join a novel class or form one; the pipeline's since 2026-12-04) and that
#: with novel nodes returned first (``returned``: ``+returned+rejected``, nodes of novel groups
#: that look known among neighbours named known take a known class)
#: and the pipeline's with the split check first (``split``: ``+split+rejected``, novel classes
#: holding validation nodes as known classes do dropped) and that with the novel classes carved
#: first (``carve``: ``+carve+split+rejected``, the parts of novel classes that hold validation
#: nodes as known classes do named known) and that carve with what a class keeps tested too
#: (``carvetest``: ``+carvetest+split+rejected``, kept novel only when it holds significantly
#: fewer validation nodes than a known slice of its size) and the pipeline's with each novel class
#: regrouped last (``regroup``: ``+split+rejected+regroup``, cut on ``S^2 X`` where the cut is
#: reproducible, prediction strength >= 0.8) and that regroup with each cut also more reproducible
#: than every known class's own (``regroupknown``: ``+split+rejected+regroupknown``), and that
#: regroup only where the cut tells the labelled known classes apart (``regroupcal``:
#: ``+split+rejected+regroupcal``), and the pipeline's with the young classes' bursts first
#: (``burst``: ``+burst+split+rejected+regroupcal``; with ``--recent`` the young class is drawn
#: from the nodes that arrived within the last ``BURST_WINDOW`` snapshots, a class that has just
#: arrived; without it the burst step sees every node's arrival as the snapshots have it), and
#: that with the bursts in one class taken together (``burstjoin``: ``+burstjoin+split+...``)
#: and that joining a novel class only when it is young (``burstyoung``: ``+burstyoung+...``),
#: and that with the classes the bursts went into grown over the recent nodes around them
#: (``burstgrow``: ``+burstgrow+...``), and that growth only where the class's recent members
#: outnumber a node's neighbours in its own class (``burstgrowmost``: ``+burstgrowmost+...``),
#: and that never moving a node of a novel class into another class the answer already had
#: (``burstgrowkeep``: ``+burstgrowkeep+...``), and the default with the split check also on
#: the model's own classes before the burst (``splitfirst``: ``+split+splitfirst+...``), and
#: the default with no burst joining a class whose other nodes the split check calls known
#: (``burstsplit``: ``+burstgrowmost+burstsplit+...``), and that with each novel class the
#: split check keeps judged again by age (``agesplit``: ``+burstsplit+split+agesplit+...``)
ANSWERS = ("fit", "recut", "paired", "energy", "rejected", "returned", "split", "carve",
           "carvetest", "regroup", "regroupknown", "regroupcal") + tuple(
    f"regain{q:g}" for q in REGAIN_QUANTILES) + tuple(f"rejected{q:g}" for q in LOOSER_REJECTED) + tuple(
    f"purify{s:g}@{q:g}" for s, q in PURIFY_SETTINGS) + ("burst", "burstjoin", "burstyoung",
                                                        "burstgrow", "burstgrowmost",
                                                        "burstgrowkeep", "splitfirst",
                                                        "burstsplit", "agesplit")


def fit_young(path: str, seed: int, size: float, config, keep: Path | None = None,
              name: str = "", recent: bool = False, beside_old: bool = False,
              beside_young: bool = False, beside_near: bool = False,
              only: list[str] | None = None) -> dict:
    """One young-class fit on the snapshot at ``path``: every answer's scores. With ``keep`` the
    fit is kept as ``keep/<name>.pt``, or read back from there
    (:func:`benchmarks.records.kept_fit`). With ``only`` (burst forms) those answers alone
    (:func:`benchmarks.answer_proxy.only_answers`)."""
    from types import SimpleNamespace

    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.answer_proxy import BURST_FORMS, answers, night_recent, only_answers
    from benchmarks.last_night import last_night_of
    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import young_class_task
    from oral_core.config import ORALConfig
    from oral_core.recut import recut_novel
    from oral_core.trainer import ORAL

    g, x, train, val, k = night_task(path)
    arrived = night_recent(path)
    task = young_class_task(g.y, train >= 0, val >= 0, torch.arange(k), seed, size,
                            among=arrived if recent else None, beside_old=beside_old,
                            beside_young=beside_young,
                            beside_near=g.edge_index if beside_near else None)
    edges, _ = subgraph(task.keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    xs = x[task.keep]
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    start = time.perf_counter()
    fitted, kept = kept_fit(keep, name, lambda: ORAL(cfg).fit(xs, edges, task.train,
                                                                task.val).predict().class_id)
    seconds = time.perf_counter() - start
    visible = int(task.visible.numel())
    scored_graph = SimpleNamespace(y=task.y, num_classes=k)
    row = {"nodes": int(task.keep.sum()), "young_nodes": int((task.y == task.hidden[0]).sum()),
           "young": task.hidden[0], "seconds": round(seconds, 1)} | (
        {"kept": True} if kept else {}) | ({"near": task.hidden[1]} if beside_near else {})
    beside = beside_young or beside_near  # the class beside is scored too
    unlabelled = (task.train < 0) & (task.val < 0)
    recent_kept = None if arrived is None else arrived[task.keep]
    if only is not None:
        last = last_night_of(path, task.keep, task.train, task.val, visible, cfg, keep, name,
                             only)
        piped = only_answers(fitted, xs, edges, task.train, task.val, visible, cfg, recent_kept,
                             only, last)
        row |= {f"{form}_moved": piped[form] for form in only} | (
            {} if last is None else {"known_last": int(last.sum())})
        return row | scored_answers(task, scored_graph, visible, beside,
                                    [(form, piped[BURST_FORMS[form]]) for form in only])
    piped = answers(fitted, xs, edges, task.train, task.val, unlabelled, visible, cfg,
                    recent=recent_kept)
    row["burst_moved"], row["burstjoin_moved"] = piped["burst"], piped["burstjoin"]
    row["burstyoung_moved"] = piped["burstyoung"]
    row["burstgrow_moved"] = piped["burstgrow"]
    row["burstgrowmost_moved"] = piped["burstgrowmost"]
    row["burstgrowkeep_moved"] = piped["burstgrowkeep"]
    row["splitfirst_moved"] = piped["splitfirst"]
    row["burstsplit_moved"] = piped["burstsplit"]
    row["agesplit_moved"] = piped["agesplit"]
    row["calibration"] = piped["calibration"]
    return row | scored_answers(task, scored_graph, visible, beside, [
        ("fit", fitted),
        ("recut", recut_novel(fitted, xs, edges, visible,
                              dims=cfg.novel_recut_dims)),
        ("paired", piped["per_class+paired"]),
        ("energy", piped["per_class+paired+energy"]),
        ("rejected", piped["per_class+paired+rejected"]),
        ("returned", piped["per_class+paired+returned+rejected"]),
        ("split", piped["per_class+paired+split+rejected"]),
        ("carve", piped["per_class+paired+carve+split+rejected"]),
        ("carvetest", piped["per_class+paired+carvetest+split+rejected"]),
        ("regroup", piped["per_class+paired+split+rejected+regroup"]),
        ("regroupknown", piped["per_class+paired+split+rejected+regroupknown"]),
        ("regroupcal", piped["per_class+paired+split+rejected+regroupcal"]),
        *((f"regain{q:g}", piped[f"per_class+paired+split+rejected+regain{q:g}"
                                 "+regroupcal"]) for q in REGAIN_QUANTILES),
        *((f"rejected{q:g}", piped[f"per_class+paired+split+rejected{q:g}"
                                   "+regroupcal"]) for q in LOOSER_REJECTED),
        *((f"purify{s_:g}@{q:g}", piped[f"per_class+paired+purify{s_:g}@{q:g}"
                                        "+split+rejected+regroupcal"])
          for s_, q in PURIFY_SETTINGS),
        ("burst", piped[BURST]), ("burstjoin", piped[BURST_JOIN]),
        ("burstyoung", piped[BURST_YOUNG]), ("burstgrow", piped[BURST_GROW]),
        ("burstgrowmost", piped[BURST_GROW_MOST]),
        ("burstgrowkeep", piped[BURST_GROW_KEEP]), ("splitfirst", piped[SPLIT_FIRST]),
        ("burstsplit", piped[BURST_SPLIT]), ("agesplit", piped[AGE_SPLIT])])


def scored_answers(task, scored_graph, visible: int, beside: bool, named) -> dict:
    """``{name: scores}`` for each ``(name, class id per node)`` of ``named``: whether the young
    class surfaces (a novel class holding >= 50% of it at >= 70% precision), its recall and
    precision, All over the scored nodes (Eq. 14), the novel classes found, and with
    ``beside`` whether the second hidden class surfaces too (``beside_surfaced``)."""
    import torch

    from benchmarks.granularity_proxy import surfaced
    from harness.proxy import proxy_accuracy

    out = {}
    for name, ids in named:
        found = surfaced(task.y, task.scored, ids, task.hidden, visible)
        acc = proxy_accuracy(scored_graph, task, ids)
        out[name] = {"surfaced": found[0]["surfaced"], "recall": found[0]["recall"],
                     "precision": found[0]["precision"], "all": acc["all"],
                     "novel_classes": int(torch.unique(ids[ids >= visible]).numel())} | (
            {"beside_surfaced": found[1]["surfaced"]} if beside else {})
    return out


def done(rows: list[dict], loop: str, night: int, size: float, seed: int,
         sets: list[str] | None = None, recent: bool = False, beside_old: bool = False,
         beside_young: bool = False, beside_near: bool = False) -> bool:
    """Whether ``rows`` hold this fit (with these ``--set`` options, none: the defaults; and
    ``--recent``, ``--beside-old`` and ``--beside-young`` or not)."""
    return row_of(rows, loop, night, size, seed, sets, recent, beside_old,
                  beside_young, beside_near) is not None


def row_of(rows: list[dict], loop: str, night: int, size: float, seed: int,
           sets: list[str] | None = None, recent: bool = False, beside_old: bool = False,
           beside_young: bool = False, beside_near: bool = False) -> dict | None:
    """The row of ``rows`` for this fit, None when there is none."""
    key = (loop, night, size, seed, list(sets or []), recent, beside_old, beside_young,
           beside_near)
    return next((r for r in rows if (r["loop"], r["night"], r["size"], r["seed"],
                                     r.get("set", []), r.get("recent", False),
                                     r.get("beside_old", False),
                                     r.get("beside_young", False),
                                     r.get("beside_near", False)) == key), None)


def completed(path: Path, old: dict, row: dict) -> None:
    """Replace ``old`` in the rows file ``path`` by ``row``, the same fit (read back from its
    kept file) with the answers added since ``old`` was written: every answer ``old`` had must come
    out the same, or the file is left as it was and an error raised."""
    changed = [a for a in ANSWERS if a in old and old[a] != row[a]]
    if changed:
        raise RuntimeError(f"{path}: the fit of {old['loop']} night {old['night']} size "
                           f"{old['size']:g} seed {old['seed']} answers {', '.join(changed)} "
                           "differently read back: not completed")
    rows = [row if r == old else r for r in read_jsonl(path)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def table(rows: list[dict]) -> list[str]:
    """Per graph and size: the young class surfaced (share of fits), mean recall / precision,
    All and novel classes, for each answer (:data:`ANSWERS`, in that order, those every row
    has)."""
    names = [a for a in ANSWERS if all(a in r for r in rows)]  # earlier rows have fewer
    lines = ["| graph | setting | young class size | fits | surfaced: " + " / ".join(names)
             + " | recall | precision | "
             "All | novel classes found | young nodes (mean) |", "|---|---|---|---|---|---|---|---|---|---|"]

    def setting(r: dict) -> str:
        return ",".join(r.get("set", []) + (["recent young class"] if r.get("recent") else [])
                        + (["beside an old class"] if r.get("beside_old") else [])
                        + (["beside a young class"] if r.get("beside_young") else [])
                        + (["beside the class it links to most"] if r.get("beside_near")
                           else [])) \
            or "defaults"

    keys = sorted({(r["graph"], setting(r), r["size"]) for r in rows})
    for graph, name, size in keys:
        rs = [r for r in rows if (r["graph"], setting(r), r["size"]) == (graph, name, size)]

        def pair(key: str, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
            return " / ".join(fmt.format(scale * statistics.fmean(float(r[a][key]) for r in rs))
                              for a in names)

        sur = " / ".join(f"{sum(r[a]['surfaced'] for r in rs)} of {len(rs)}" for a in names)
        lines.append(f"| {graph} | {name} | {size:g} | {len(rs)} | {sur} | {pair('recall', 100)} | "
                     f"{pair('precision', 100)} | {pair('all')} | "
                     f"{pair('novel_classes')} | "
                     f"{statistics.fmean(r['young_nodes'] for r in rs):.0f} |")
    return lines


#: the answer the paired table measures the others against: the pipeline's since 2026-12-04
PAIRED_BASE = "split"


def paired_table(rows: list[dict], base: str = PAIRED_BASE) -> list[str]:
    """Per graph (both sizes together), each answer's All minus ``base``'s All, paired per fit:
    mean (standard error) and fits where the young class surfaced with each (rows without
    ``base`` are left out)."""
    from harness.reproduction import mean_se

    rows = [r for r in rows if base in r and not r.get("set")]
    names = [a for a in ANSWERS if a != base and rows and all(a in r for r in rows)]
    lines = [f"| graph | fits | answer | All minus {base}'s, paired (s.e.) | surfaced: answer / "
             f"{base} |", "|---|---|---|---|---|"]
    for graph in sorted({r["graph"] for r in rows}):
        rs = [r for r in rows if r["graph"] == graph]
        for name in names:
            mean, se = mean_se([float(r[name]["all"]) - float(r[base]["all"]) for r in rs])
            lines.append(f"| {graph} | {len(rs)} | {name} | {mean:+.1f} ({se:.1f}) | "
                         f"{sum(r[name]['surfaced'] for r in rs)} / "
                         f"{sum(r[base]['surfaced'] for r in rs)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,amazonphoto,synthetic15", "10", "5,8", "0,1,2", loops=None)
    ap.add_argument("--sizes", default="0.03,0.1")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an ORALConfig override on top of the pipeline's defaults (repeatable); "
                         "its rows are kept apart from the defaults'")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--keep", type=Path, default=None,
                    help="a folder for the fits (class id per node): kept there, read back when "
                         "there, so answers can be scored again without training")
    ap.add_argument("--recent", action="store_true",
                    help="draw the young class from the nodes that arrived within the last "
                         "BURST_WINDOW snapshots (a class that has just arrived); rows kept apart")
    ap.add_argument("--beside-old", action="store_true",
                    help="another known class stays whole and unlabelled beside the young one, "
                         "an older novel class it must be told apart from; rows kept apart")
    ap.add_argument("--beside-young", action="store_true",
                    help="with --recent: another known class keeps its recent nodes only, "
                         "unlabelled, a second young class arriving beside the first; rows kept "
                         "apart")
    ap.add_argument("--beside-near", action="store_true",
                    help="as --beside-old, but the older novel class is the known class the "
                         "young one's labelled nodes link to most (the class it borders, which "
                         "it must neither join nor empty); whether it still surfaces is kept; "
                         "rows kept apart")
    ap.add_argument("--only", default=None, metavar="FORM,FORM",
                    help="build only these burst forms' answers (burstgrowmost, burstgrowkeep, "
                         "...), each by the pipeline's own call, at a fraction of the cost")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.beside_young and (args.beside_old or not args.recent):
        ap.error("--beside-young needs --recent and not --beside-old")
    if args.beside_near and (args.beside_old or args.beside_young):
        ap.error("--beside-near takes neither --beside-old nor --beside-young")
    from benchmarks.answer_proxy import BURST_FORMS

    only = None if args.only is None else [f for f in args.only.split(",") if f]
    if only is not None and (not only or any(f not in BURST_FORMS for f in only)):
        ap.error(f"--only takes burst forms of {', '.join(BURST_FORMS)}, got {args.only!r}")
    wanted = ANSWERS if only is None else tuple(only)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    if not args.report_only:
        from cli.options import parse_set
        from flows.configuration import build_config, pipeline_defaults

        from benchmarks.nightly_loop import simulate_missing

        config = build_config(pipeline_defaults() | parse_set(args.set)[0])
        simulate_missing(Path(args.loops), args.graphs, args.sims)
        for loop, night, seed, path in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                   args.nights, args.seeds):
            graph = loop.rsplit("-sim", 1)[0]
            out = args.out / graph / "rows.jsonl"
            for size in sizes:
                old = row_of(read_jsonl(out), loop, night, size, seed, args.set, args.recent,
                             args.beside_old, args.beside_young, args.beside_near)
                # a row written before an answer was added is done again from its kept fit
                if old is not None and (all(a in old for a in wanted) or args.keep is None):
                    continue
                row = {"graph": graph, "loop": loop, "night": night, "size": size,
                       "seed": seed, "set": args.set} | ({"recent": True} if args.recent else {}) \
                    | ({"beside_old": True} if args.beside_old else {}) \
                    | ({"beside_young": True} if args.beside_young else {}) \
                    | ({"beside_near": True} if args.beside_near else {}) \
                    | fit_young(path, seed, size, config, keep=args.keep,
                                name=fit_name(loop, night, seed, size=size, sets=args.set)
                                + ("-recent" if args.recent else "")
                                + ("-old" if args.beside_old else "")
                                + ("-young" if args.beside_young else "")
                                + ("-near" if args.beside_near else ""), recent=args.recent,
                                beside_old=args.beside_old, beside_young=args.beside_young,
                                beside_near=args.beside_near,
                                only=only)
                out.parent.mkdir(parents=True, exist_ok=True)
                if old is None:
                    append_jsonl(out, row)
                else:
                    completed(out, old, row)
                print(f"[{loop}] night {night} size {size:g} seed {seed}: young class "
                      f"{row['young']} ({row['young_nodes']} nodes) surfaced "
                      + " / ".join(f"{a} {row[a]['surfaced']}" for a in wanted)
                      + f" "
                      f"({row['seconds']:.0f}s)", flush=True)
    rows = [r for p in sorted(args.out.glob("*/rows.jsonl")) for r in read_jsonl(p)]
    lines = table(rows)
    if any(PAIRED_BASE in r for r in rows):
        lines += ["", f"Paired per fit against the pipeline's answer (`{PAIRED_BASE}`):", ""] \
            + paired_table(rows)
    write_table(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
