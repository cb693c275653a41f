"""The novel re-cut (``novel_recut``, issue 60 item 3): does a fit's answer, its novel nodes
regrouped on fixed propagated features, agree more across seeds and find the novel classes at
least as well? Labelled nodes and label-free measures only.

    OMP_NUM_THREADS=1 python -m benchmarks.novel_recut --loops STATE
        [--graphs synthetic15,cora] [--sims 8,9] [--nights 4,7] [--tasks heldout,nonovel]
        [--out benchmarks/results/novel_recut] [--report-only]

The fits are the consensus study's (``benchmarks.consensus_restarts.ensure_fits``: on each kept
nightly snapshot the held-out-class proxy fitted at model seeds 0-5 and the no-novel proxy at
seeds 0-2, at the nightly pipeline's defaults; one JSON line per fit with its class ids). The
re-cut happens after training and draws from its own generator, so a fit with
``novel_recut=true`` answers exactly :func:`oral_core.recut.recut_novel` of the same fit without
it (``tests/core/test_recut.py``); both answers of every fit are scored here, paired:

- as fitted and re-cut, each also as the nightly pipeline's answer (``per_class+paired``,
  ``benchmarks.answer_proxy.answers``), scored on labelled nodes: All / Known / Novel (Eq. 14),
  the stand-ins surfaced (held-out proxy), the novel classes invented (no-novel proxy);
- label-free: the adjusted Rand index on the task's unlabelled nodes between single fits of
  disjoint seeds (0-3, 1-4, 2-5), as fitted and re-cut.

``<graph>/fits.jsonl`` and ``<graph>/nights.jsonl`` (one folder per graph, so processes on
different graphs may run side by side); ``table.md`` holds the table and the study's rule read
clause by clause.
"""
from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from benchmarks.consensus_restarts import (GROUPS, answer_row, ari, ensure_fits, mean_se,
                                           scored, task_for, write_report)
from benchmarks.records import append_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "novel_recut"
ANSWERS = ("fit", "recut")


def score_night(kind: str, path: str, fits: dict[int, list[int]], config) -> dict:
    """Both answers of every fit of one night's task (``fit``: as fitted; ``recut``: its novel
    nodes re-cut), ORAL's own and the pipeline's, scored on labelled nodes; the label-free
    agreement between disjoint seeds."""
    import torch

    from benchmarks.answer_proxy import answers
    from oral_core.config import ORALConfig
    from oral_core.recut import recut_novel

    t = task_for(kind, path)
    k = t["num_known"]
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": 0, "progress": False})
    unlabelled = (t["train"] < 0) & (t["val"] < 0)
    out: dict = {"answers": {}}
    tables: dict[tuple[str, str], dict[int, torch.Tensor]] = {}
    for seed, ids in sorted(fits.items()):
        fitted = torch.tensor(ids)
        for name, cid in (("fit", fitted),
                          ("recut", recut_novel(fitted, t["x"], t["edges"], k,
                                                dims=cfg.novel_recut_dims))):
            piped = answers(cid, t["x"], t["edges"], t["train"], t["val"], unlabelled, k,
                            cfg)["per_class+paired"]
            for answer, a_ids in (("oral", cid), ("paired", piped)):
                tables.setdefault((name, answer), {})[seed] = a_ids
                out["answers"].setdefault(f"{name}{seed}", {})[answer] = answer_row(
                    kind, t, a_ids, k)
    if kind == "heldout":
        nodes = torch.nonzero(unlabelled).flatten()
        for (name, answer), table in tables.items():
            out[f"ari_{name}_{answer}"] = statistics.fmean(
                ari(table[a], table[b], nodes) for a, b in zip(*GROUPS))
    return out


def run_night(folder: Path, kind: str, loop: str, night: int, snapshot: str, config) -> None:
    """Fit what the night's task lacks, then score both answers of its fits into
    ``folder/nights.jsonl`` unless they are there."""
    folder.mkdir(parents=True, exist_ok=True)
    nights_path = folder / "nights.jsonl"
    if scored(nights_path, kind, loop, night):
        return
    fits = ensure_fits(folder / "fits.jsonl", kind, loop, night, snapshot, config)
    row = {"kind": kind, "loop": loop, "graph": loop.rsplit("-sim", 1)[0], "night": night,
           "seconds": statistics.fmean(f["seconds"] for f in fits.values())}
    row |= score_night(kind, snapshot, {s: f["class_id"] for s, f in fits.items()}, config)
    append_jsonl(nights_path, row)
    print(f"{kind} {loop} night {night}: scored", flush=True)


def paired(n: dict, answer: str, key: str) -> list[float]:
    """Per fit of a night, its re-cut answer's ``key`` minus its fitted answer's."""
    seeds = sorted({int(name[3:]) for name in n["answers"] if name.startswith("fit")})
    return [n["answers"][f"recut{s}"][answer][key] - n["answers"][f"fit{s}"][answer][key]
            for s in seeds]


def total(ns: list[dict], answer: str, name: str, key: str) -> float:
    """``key`` of the ``name`` answers summed over nights, averaged over each night's fits."""
    out = 0.0
    for n in ns:
        vals = [v[answer][key] for a, v in n["answers"].items() if a.startswith(name)]
        out += statistics.fmean(vals)
    return out


def table(nights: list[dict]) -> str:
    lines = ["| graph | nights | answer | ARI between seeds: fitted / re-cut | All: fitted / "
             "re-cut - fitted, paired per fit (s.e.) | Novel: fitted / re-cut | stand-ins "
             "surfaced (mean of the fits, summed over nights): fitted / re-cut | fit s |",
             "|---|---|---|---|---|---|---|---|"]
    held = [n for n in nights if n["kind"] == "heldout"]
    for graph in sorted({n["graph"] for n in held}):
        ns = [n for n in held if n["graph"] == graph]
        for answer in ("oral", "paired"):
            a_fit = statistics.fmean(n[f"ari_fit_{answer}"] for n in ns)
            a_cut = statistics.fmean(n[f"ari_recut_{answer}"] for n in ns)
            all_fit = statistics.fmean(v[answer]["all"] for n in ns
                                       for a, v in n["answers"].items() if a.startswith("fit"))
            d, se = mean_se([v for n in ns for v in paired(n, answer, "all")])
            nov = [statistics.fmean(v[answer]["novel"] for n in ns
                                    for a, v in n["answers"].items() if a.startswith(name))
                   for name in ANSWERS]
            sur = [total(ns, answer, name, "surfaced") for name in ANSWERS]
            secs = statistics.fmean(n["seconds"] for n in ns)
            lines.append(f"| {graph} | {len(ns)} | {answer} | {a_fit:.2f} / {a_cut:.2f} | "
                         f"{all_fit:.1f} / {d:+.1f} ({se:.1f}) | {nov[0]:.1f} / {nov[1]:.1f} | "
                         f"{sur[0]:.1f} / {sur[1]:.1f} of {2 * len(ns)} | {secs:.0f} |")
    none = [n for n in nights if n["kind"] == "nonovel"]
    if none:
        lines += ["", "| graph (no-novel proxy) | nights | answer | novel classes invented "
                  "(mean of the fits, summed over nights): fitted / re-cut | accuracy: fitted / "
                  "re-cut |", "|---|---|---|---|---|"]
    for graph in sorted({n["graph"] for n in none}):
        ns = [n for n in none if n["graph"] == graph]
        for answer in ("oral", "paired"):
            inv = [total(ns, answer, name, "novel_classes") for name in ANSWERS]
            acc = [statistics.fmean(v[answer]["accuracy"] for n in ns
                                    for a, v in n["answers"].items() if a.startswith(name))
                   for name in ANSWERS]
            lines.append(f"| {graph} | {len(ns)} | {answer} | {inv[0]:.1f} / {inv[1]:.1f} | "
                         f"{acc[0]:.1f} / {acc[1]:.1f} |")
    return "\n".join(lines)


def rule_lines(nights: list[dict], answer: str = "paired") -> list[str]:
    """The study's rule (``benchmarks/results/novel_recut/README.md``), clause by clause, per
    graph, for ``answer`` (the pipeline's by default): 1. ARI between seeds re-cut minus fitted
    at least -0.02 on every graph and at least +0.05 on one; 2. All, re-cut minus fitted, paired
    per fit: mean + s.e. >= 0, and at least as many stand-ins surfaced; 3. no more novel classes
    invented on the no-novel proxy."""
    def verdict(ok: bool) -> str:
        return "holds" if ok else "fails"

    lines = ["| graph | 1. ARI re-cut - fitted (>= -0.02 here; >= +0.05 on some graph) | 2. All, "
             "re-cut - fitted (mean + s.e. >= 0); stand-ins surfaced, re-cut / fitted | "
             "3. invented, re-cut / fitted | clauses 2-3 |", "|---|---|---|---|---|"]
    held = [n for n in nights if n["kind"] == "heldout"]
    none = [n for n in nights if n["kind"] == "nonovel"]
    gains = {}
    for graph in sorted({n["graph"] for n in held}):
        ns = [n for n in held if n["graph"] == graph]
        gain = gains[graph] = statistics.fmean(n[f"ari_recut_{answer}"] - n[f"ari_fit_{answer}"]
                                               for n in ns)
        d, se = mean_se([v for n in ns for v in paired(n, answer, "all")])
        se = 0.0 if math.isnan(se) else se
        sur_c, sur_f = (total(ns, answer, name, "surfaced") for name in ("recut", "fit"))
        nn = [n for n in none if n["graph"] == graph]
        inv_c, inv_f = (total(nn, answer, name, "novel_classes") for name in ("recut", "fit"))
        ok2 = d + se >= 0 and sur_c >= sur_f - 1e-9
        ok3 = bool(nn) and inv_c <= inv_f + 1e-9
        lines.append(f"| {graph} | {gain:+.2f}: {verdict(gain >= -0.02)} | {d:+.1f} + {se:.1f}; "
                     f"{sur_c:.1f} / {sur_f:.1f}: {verdict(ok2)} | "
                     + (f"{inv_c:.1f} / {inv_f:.1f}: {verdict(ok3)}" if nn else "no rows: fails")
                     + f" | {'hold' if ok2 and ok3 else 'fail'} |")
    if gains:
        some = max(gains.values()) >= 0.05
        lines += ["", f"Clause 1 across graphs (a gain of at least +0.05 on some graph): "
                  f"{verdict(some)} (largest {max(gains.values()):+.2f})."]
    return lines


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "synthetic15,cora", "8,9", "4,7", None, loops=None)
    ap.add_argument("--tasks", default="heldout,nonovel")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        from flows.configuration import build_config, pipeline_defaults

        config = build_config(pipeline_defaults())
        if config.novel_recut:
            raise SystemExit("error: the fits must be the pipeline's without the re-cut; "
                             "novel_recut is already on in its defaults")
        from benchmarks.nightly_loop import simulate_missing

        simulate_missing(Path(args.loops), args.graphs, args.sims)
        for loop, night, _, snapshot in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                    args.nights, "0"):
            for kind in args.tasks.split(","):
                run_night(args.out / loop.rsplit("-sim", 1)[0], kind, loop, night, snapshot,
                          config)
    write_report(args.out, table, rule_lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
