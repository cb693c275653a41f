"""Consensus over restarts (issue 60, item 3): does a night answered from three fits agree with
itself across seeds, and does it find the novel classes as well? Labelled nodes and label-free
measures only.

    OMP_NUM_THREADS=1 python -m benchmarks.consensus_restarts --loops STATE
        [--graphs synthetic15,cora] [--sims 0,1] [--nights 4,8] [--tasks heldout,nonovel]
        [--out benchmarks/results/consensus_restarts] [--linkage components|average|medoid]
        [--report-only]

On each kept nightly snapshot (``STATE/<graph>-sim<k>/snapshots``) two proxy tasks are drawn
once (proxy seed 0, the pipeline's split of the labelled nodes), and ORAL is fitted on each at
the nightly pipeline's defaults with model seeds 0..R-1 (same graph, same split: only the
initialisation, dropout, sampling and clustering draws change):

- the held-out-class proxy (``harness.proxy.task_from_labels``, ``hide="extremes"``, disjoint
  validation halves; 6 fits): the *single* answers of seeds 0-5 and two *consensus* answers
  (:func:`oral_core.consensus.consensus_class_ids`) of seeds 0-2 and of seeds 3-5. Each answer
  is also turned into the nightly pipeline's answer (``per_class+paired``,
  ``benchmarks.answer_proxy.answers``). Scored on labelled nodes: All / Known / Novel (Eq. 14),
  the stand-ins surfaced. Label-free: the adjusted Rand index on the task's unlabelled nodes
  between the two consensus answers, and between single fits of disjoint seeds (0-3, 1-4, 2-5);
- the no-novel proxy (``harness.proxy.no_novel_task``; 3 fits): novel classes invented by each
  single fit and by their consensus.

One JSON line per fit in ``<graph>/fits.jsonl`` (the class id of every node, resumable); once a
night's fits are complete its answers are scored into ``<graph>/nights.jsonl``; ``table.md`` is
the table of every graph's nights (one folder per graph: processes on different graphs may run
side by side).
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl
from oral_core.consensus import LINKAGES

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "consensus_restarts"
RESTARTS = {"heldout": 6, "nonovel": 3}
GROUPS = ((0, 1, 2), (3, 4, 5))


def task_for(kind: str, path: str):
    """``(graph, x, edges, train, val, unlabelled, scored-things, num_known)`` of one proxy task on
    a snapshot, drawn with proxy seed 0."""
    import torch
    from torch_geometric.utils import subgraph

    from benchmarks.split_repeat_proxy import night_task
    from harness.proxy import no_novel_task, task_from_labels

    g, x, train, val, k = night_task(path)
    if kind == "heldout":
        task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, 0, "extremes",
                                disjoint_val=True)
        return {"g": g, "task": task, "x": x, "edges": g.edge_index, "train": task.train,
                "val": task.val, "num_known": int(task.visible.numel())}
    task = no_novel_task(g.y, train >= 0, val >= 0, torch.arange(k), 0)
    keep = task["keep"]
    edges, _ = subgraph(keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    return {"g": g, "task": task, "x": x[keep], "edges": edges, "train": task["train"],
            "val": task["val"], "num_known": k}


def fit_class_ids(t: dict, seed: int, config) -> list[int]:
    """One ORAL fit at the pipeline's defaults with model seed ``seed``: its class id per node."""
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL

    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    model = ORAL(cfg).fit(t["x"], t["edges"], t["train"], t["val"])
    return model.discoveries_["last"].class_id.tolist()


def ari(a, b, nodes) -> float:
    from sklearn.metrics import adjusted_rand_score
    return float(adjusted_rand_score(a[nodes].tolist(), b[nodes].tolist()))


def score_night(kind: str, path: str, fits: dict[int, list[int]], config,
                linkage: str = "components") -> dict:
    """Every answer of one night's task from its fits (seed -> class ids): single and consensus,
    ORAL's own and the pipeline's (``per_class+paired``), scored on labelled nodes; the
    label-free agreement between disjoint seeds."""
    import torch

    from benchmarks.answer_proxy import answers
    from oral_core.config import ORALConfig
    from oral_core.consensus import consensus_class_ids

    t = task_for(kind, path)
    k = t["num_known"]
    unlabelled = (t["train"] < 0) & (t["val"] < 0)
    raw = {f"single{s}": torch.tensor(ids) for s, ids in sorted(fits.items())}
    groups = GROUPS if kind == "heldout" else GROUPS[:1]
    for group in groups:
        raw["consensus" + "".join(map(str, group))] = consensus_class_ids(
            [raw[f"single{s}"] for s in group], k, linkage, unlabelled)
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": 0, "progress": False})
    out: dict = {"answers": {}, "linkage": linkage}
    piped = {}
    for name, ids in raw.items():
        piped[name] = answers(ids, t["x"], t["edges"], t["train"], t["val"], unlabelled, k,
                              cfg)["per_class+paired"]
        for answer, cid in (("oral", ids), ("paired", piped[name])):
            out["answers"].setdefault(name, {})[answer] = answer_row(kind, t, cid, k)
    if kind == "heldout":
        nodes = torch.nonzero(unlabelled).flatten()
        for answer, table in (("oral", raw), ("paired", piped)):
            out[f"ari_single_{answer}"] = statistics.fmean(
                ari(table[f"single{a}"], table[f"single{b}"], nodes) for a, b in zip(*GROUPS))
            out[f"ari_consensus_{answer}"] = ari(table["consensus012"], table["consensus345"],
                                                 nodes)
    return out


def answer_row(kind: str, t: dict, cid, k: int) -> dict:
    """One answer's scores on a night's task ``t`` (:func:`task_for`): on the held-out-class
    proxy All / Known / Novel and the stand-ins surfaced, on the no-novel proxy the accuracy;
    either way the novel classes it holds. Labelled nodes only."""
    import torch

    from benchmarks.granularity_proxy import surfaced
    from harness.proxy import proxy_accuracy

    if kind == "heldout":
        task, g = t["task"], t["g"]
        acc = proxy_accuracy(g, task, cid)
        found = surfaced(g.y, task.scored, cid, task.hidden, k)
        row = {key: acc[key] for key in ("all", "known", "novel")} | {
            "surfaced": sum(f["surfaced"] for f in found)}
    else:
        scored, y = t["task"]["scored"], t["task"]["y"]
        row = {"accuracy": 100 * float((cid[scored] == y[scored]).float().mean())}
    return row | {"novel_classes": int(torch.unique(cid[cid >= k]).numel())}


def night_rows(rows: list[dict]) -> dict:
    nights: dict = {}
    for r in rows:
        nights.setdefault((r["kind"], r["loop"], r["night"]), {})[r["seed"]] = r
    return nights


def mean_se(values: list[float]) -> tuple[float, float]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return statistics.fmean(values), se


def consensus_vs_singles(n: dict, answer: str, key: str) -> list[float]:
    """Per consensus answer of a night, its ``key`` minus the mean of its own single fits'."""
    out = []
    for group in GROUPS:
        name = "consensus" + "".join(map(str, group))
        if name in n["answers"]:
            singles = [n["answers"][f"single{s}"][answer][key] for s in group]
            out.append(n["answers"][name][answer][key] - statistics.fmean(singles))
    return out


def table(nights: list[dict]) -> str:
    lines = ["| graph | nights | answer | ARI between seeds: single / consensus | All: single "
             "mean / consensus - its singles (s.e.) | stand-ins surfaced: singles (mean of 3) / "
             "consensus | fit s (one restart) |", "|---|---|---|---|---|---|---|"]
    held = [n for n in nights if n["kind"] == "heldout"]
    for graph in sorted({n["graph"] for n in held}):
        ns = [n for n in held if n["graph"] == graph]
        for answer in ("oral", "paired"):
            single = statistics.fmean(n[f"ari_single_{answer}"] for n in ns)
            cons = statistics.fmean(n[f"ari_consensus_{answer}"] for n in ns)
            all_single = statistics.fmean(n["answers"][f"single{s}"][answer]["all"]
                                          for n in ns for s in range(6))
            d, se = mean_se([v for n in ns for v in consensus_vs_singles(n, answer, "all")])
            sur_single = sum(statistics.fmean(n["answers"][f"single{s}"][answer]["surfaced"]
                                              for s in g) for n in ns for g in GROUPS)
            sur_cons = sum(n["answers"]["consensus" + "".join(map(str, g))][answer]["surfaced"]
                           for n in ns for g in GROUPS)
            secs = statistics.fmean(n["seconds"] for n in ns)
            lines.append(f"| {graph} | {len(ns)} | {answer} | {single:.2f} / {cons:.2f} | "
                         f"{all_single:.1f} / {d:+.1f} ({se:.1f}) | {sur_single:.1f} / "
                         f"{sur_cons} of {4 * len(ns)} | {secs:.0f} |")
    none = [n for n in nights if n["kind"] == "nonovel"]
    if none:
        lines += ["", "| graph (no-novel proxy) | nights | answer | novel classes invented: "
                  "singles (mean of 3) / consensus 0-2 | accuracy: singles / consensus |",
                  "|---|---|---|---|---|"]
    for graph in sorted({n["graph"] for n in none}):
        ns = [n for n in none if n["graph"] == graph]
        for answer in ("oral", "paired"):
            inv_s = sum(statistics.fmean(n["answers"][f"single{s}"][answer]["novel_classes"]
                                         for s in GROUPS[0]) for n in ns)
            inv_c = sum(n["answers"]["consensus012"][answer]["novel_classes"] for n in ns)
            acc_s = statistics.fmean(n["answers"][f"single{s}"][answer]["accuracy"]
                                     for n in ns for s in GROUPS[0])
            acc_c = statistics.fmean(n["answers"]["consensus012"][answer]["accuracy"]
                                     for n in ns)
            lines.append(f"| {graph} | {len(ns)} | {answer} | {inv_s:.1f} / {inv_c} | "
                         f"{acc_s:.1f} / {acc_c:.1f} |")
    return "\n".join(lines)


def ensure_fits(fits_path: Path, kind: str, loop: str, night: int, snapshot: str,
                config) -> dict[int, dict]:
    """The night's task fitted at every model seed it needs (``RESTARTS[kind]``): the rows
    already in ``fits_path`` (resumable), the missing ones fitted and appended."""
    fits = night_rows(read_jsonl(fits_path)).get((kind, loop, night), {})
    for seed in range(RESTARTS[kind]):
        if seed in fits:
            continue
        print(f"{kind} {loop} night {night} restart {seed}", flush=True)
        start = time.perf_counter()
        t = task_for(kind, snapshot)
        row = {"kind": kind, "loop": loop, "night": night, "seed": seed,
               "class_id": fit_class_ids(t, seed, config),
               "seconds": round(time.perf_counter() - start, 1)}
        append_jsonl(fits_path, row)
        fits[seed] = row
    return fits


def scored(nights_path: Path, kind: str, loop: str, night: int) -> bool:
    """Whether the night's task is already in ``nights_path``."""
    return any((n["kind"], n["loop"], n["night"]) == (kind, loop, night)
               for n in read_jsonl(nights_path))


def run_night(folder: Path, kind: str, loop: str, night: int, snapshot: str, config,
              linkage: str = "components") -> None:
    """Fit what a night's task still lacks (one line per fit in ``folder/fits.jsonl``), then
    score its answers into ``folder/nights.jsonl`` unless they are there: one folder per graph,
    so processes working on different graphs never write the same file."""
    folder.mkdir(parents=True, exist_ok=True)
    fits_path, nights_path = folder / "fits.jsonl", folder / "nights.jsonl"
    if scored(nights_path, kind, loop, night):
        return
    fits = ensure_fits(fits_path, kind, loop, night, snapshot, config)
    night_row = {"kind": kind, "loop": loop, "graph": loop.rsplit("-sim", 1)[0], "night": night,
                 "seconds": statistics.fmean(f["seconds"] for f in fits.values())}
    night_row |= score_night(kind, snapshot, {s: f["class_id"] for s, f in fits.items()}, config,
                             linkage)
    append_jsonl(nights_path, night_row)
    print(f"{kind} {loop} night {night}: scored", flush=True)


def rule_lines(nights: list[dict], answer: str = "paired") -> list[str]:
    """The studies' rule, clause by clause, per graph, for ``answer`` (the pipeline's by default):
    1. the consensus answers' ARI at least 0.05 above the single fits'; 2. the consensus's All
    minus its singles' not below zero beyond one s.e., and at least as many stand-ins surfaced;
    3. no more novel classes invented on the no-novel proxy."""
    def verdict(ok: bool) -> str:
        return "holds" if ok else "fails"

    lines = ["| graph | 1. ARI consensus - single (asked >= +0.05) | 2. All, consensus - singles "
             "(mean + s.e. >= 0); stand-ins surfaced, consensus / singles | 3. invented, "
             "consensus / singles | rule |", "|---|---|---|---|---|"]
    held = [n for n in nights if n["kind"] == "heldout"]
    none = [n for n in nights if n["kind"] == "nonovel"]
    for graph in sorted({n["graph"] for n in held}):
        ns = [n for n in held if n["graph"] == graph]
        gain = statistics.fmean(n[f"ari_consensus_{answer}"] - n[f"ari_single_{answer}"]
                                for n in ns)
        d, se = mean_se([v for n in ns for v in consensus_vs_singles(n, answer, "all")])
        se = 0.0 if math.isnan(se) else se
        sur_c = sum(n["answers"]["consensus" + "".join(map(str, g))][answer]["surfaced"]
                    for n in ns for g in GROUPS)
        sur_s = sum(statistics.fmean(n["answers"][f"single{s}"][answer]["surfaced"] for s in g)
                    for n in ns for g in GROUPS)
        nn = [n for n in none if n["graph"] == graph]
        inv_c = sum(n["answers"]["consensus012"][answer]["novel_classes"] for n in nn)
        inv_s = sum(statistics.fmean(n["answers"][f"single{s}"][answer]["novel_classes"]
                                     for s in GROUPS[0]) for n in nn)
        ok = (gain >= 0.05, d + se >= 0 and sur_c >= sur_s - 1e-9, bool(nn) and inv_c <= inv_s + 1e-9)
        lines.append(f"| {graph} | {gain:+.2f}: {verdict(ok[0])} | {d:+.1f} + {se:.1f}; {sur_c} / "
                     f"{sur_s:.1f}: {verdict(ok[1])} | "
                     + (f"{inv_c} / {inv_s:.1f}: {verdict(ok[2])}" if nn else "no rows: fails")
                     + f" | {'met' if all(ok) else 'not met'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "synthetic15,cora", "0,1", "4,8", None, loops=None)
    ap.add_argument("--tasks", default="heldout,nonovel")
    ap.add_argument("--linkage", default="components", choices=LINKAGES,
                    help="how the consensus groups novel nodes (oral_core.consensus); "
                         "components: this study's rule")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        from flows.configuration import build_config, pipeline_defaults

        config = build_config(pipeline_defaults())
        for kind, loop, night, snapshot in [
                (kind, loop, night, snapshot)
                for loop, night, _, snapshot in loop_nights(Path(args.loops), args.graphs,
                                                            args.sims, args.nights, "0")
                for kind in args.tasks.split(",")]:
            run_night(args.out / loop.rsplit("-sim", 1)[0], kind, loop, night, snapshot, config,
                      args.linkage)
    write_report(args.out, table, rule_lines)
    return 0


def write_report(out: Path, table_of, rule_lines_of) -> None:
    """``out/table.md`` (and the screen): the table of every graph's scored nights and the
    study's rule read clause by clause (a study's own ``table`` and ``rule_lines``)."""
    nights = [n for path in sorted(out.glob("*/nights.jsonl")) for n in read_jsonl(path)]
    text = table_of(nights) + "\n\nThe rule, for the pipeline's answer (per_class+paired):\n\n" + \
        "\n".join(rule_lines_of(nights))
    (out / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    raise SystemExit(main())
