"""Should the known-split check repeat? (``known_split_repeat``; labelled-only proxies)

    OMP_NUM_THREADS=1 python -m benchmarks.split_repeat_proxy [--graphs ...] [--seeds 0,1,2]
        [--tasks heldout,nonovel] [--set KEY=VALUE ...] [--out DIR]

The repeated check suppresses novel groups that are splits of known classes until none is left
(``oral_core.novelty``). It can only move nodes *out of* novel classes, so it may also swallow a
real novel class: the held-out-class proxy, which hides a known class and scores how it is found
again, is the judge for that, and the no-novel proxy, where nothing is new, for the invented
classes. Both read labelled nodes only (``harness.proxy``).

One fit per graph, seed and task answers both settings: the fit runs with the repeated check,
and when a second pass acted the trainer keeps the one-pass answer as ``last_split_once`` (else
the two answers are the same). Both are read before the known head (``last_no_head``), the head
being the same for both; the final answer (repeat, then the pipeline's head) is shown too.
The fits run at the nightly pipeline's defaults (``flows.configuration.pipeline_defaults``) plus
``known_split_repeat=true`` and any ``--set``. Resumable: one JSON line per fit in ``fits.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "split_repeat_proxy"
GRAPHS = ("cora", "amazonphoto", "blogcatalog", "synthetic15")
TASKS = ("heldout", "nonovel")


def prepared(graph: str, data_dir: str | None):
    """``(graph, x)``: a benchmark dataset preprocessed as the harness does, or the generator:
    ``synthetic<K>`` with K classes of 200 nodes (``synthetic15`` as the nightly-loop benchmark
    makes it), ``synthetic<K>-sep<S>`` with class centres ``S`` apart instead of 2.5 (lower:
    broader, overlapping classes)."""
    if graph.startswith("synthetic"):
        import torch

        from data_contracts.synthetic import make_static_graph
        from oral_core.datasets import auto_feature_mode, preprocess_features
        from oral_core.graph import Graph, canonical_edges

        classes, _, separation = graph.removeprefix("synthetic").partition("-sep")
        k = int(classes)
        s = make_static_graph(num_nodes=200 * k, num_classes=k, num_features=64,
                              separation=float(separation or 2.5), seed=0, name=graph)
        x = torch.from_numpy(s.x)
        g = Graph(x=x, edge_index=canonical_edges(torch.from_numpy(s.edges), x.shape[0]),
                  y=torch.from_numpy(s.y), name=graph)
        return g, preprocess_features(x, auto_feature_mode(x))
    from harness.experiment import prepare
    p = prepare(graph, data_dir)
    return p.graph, p.x


def answers(model, num_known: int) -> dict:
    """The fit's answers by setting: ``once`` and ``repeat`` before the head, ``final``."""
    d = model.discoveries_
    repeat = d.get("last_no_head", d["last"])
    return {"once": d.get("last_split_once", repeat), "repeat": repeat, "final": d["last"]}


def proxy_scores(g, task, model) -> dict:
    """The held-out-class proxy (All / Known / Novel, classes) of each of the fit's answers."""
    from harness.proxy import proxy_accuracy

    out = {}
    for name, found in answers(model, int(task.visible.numel())).items():
        acc = proxy_accuracy(g, task, found.class_id)
        out[name] = {key: acc[key] for key in ("all", "known", "novel", "classes")}
    return out


def heldout_fit(g, x, seed: int, config) -> dict:
    from harness.proxy import proxy_config, proxy_task
    from oral_core.trainer import ORAL

    task = proxy_task(g, seed, "last")
    model = ORAL(proxy_config(config, seed, g.num_classes)).with_diagnostics().fit(
        x, g.edge_index, task.train, task.val)
    return proxy_scores(g, task, model)


def night_task(path: str):
    """``(graph, x, train, val, num_known)`` of a nightly snapshot (its edges in ``graph``), split as the
    pipeline splits its labelled nodes (``tasks.fitting.split_labelled``); ``graph.y`` holds the
    snapshot's labels (-1 where unlabelled), all the proxy reads."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    from data_contracts import snapshots as snap
    from tasks.fitting import fit_inputs

    s = snap.load_snapshot(path)
    x, edges, train, val, _ = fit_inputs(s, "auto", 0)
    train, val = torch.from_numpy(train), torch.from_numpy(val)
    k = len(s.class_names)
    g = SimpleNamespace(y=torch.from_numpy(np.asarray(s.labels, dtype=np.int64)), num_classes=k,
                        edge_index=edges)
    return g, x, train, val, k


def loop_arguments(ap, graphs: str, sims: str, nights: str, seeds: str | None = "0",
                   loops=None) -> None:
    """The arguments of a benchmark read on kept nightly snapshots (:func:`loop_nights`):
    ``--loops`` (a nightly-loop ``--state`` folder; required when ``loops`` is None), and the
    comma lists ``--graphs``, ``--sims``, ``--nights`` (1-based) and, unless ``seeds`` is None,
    ``--seeds``, with these defaults."""
    if loops is None:
        ap.add_argument("--loops", required=True, help="a nightly-loop --state folder")
    else:
        ap.add_argument("--loops", default=str(loops),
                        help="a nightly-loop --state folder (<graph>-sim<k>/snapshots)")
    ap.add_argument("--graphs", default=graphs)
    ap.add_argument("--sims", default=sims)
    ap.add_argument("--nights", default=nights, help="1-based nights of each loop")
    if seeds is not None:
        ap.add_argument("--seeds", default=seeds, help="proxy seeds")


def loop_nights(loops: Path, graphs: str, sims: str, nights: str, seeds: str):
    """``(loop, night, seed, snapshot path)`` for each of the comma lists' graphs, simulations,
    1-based nights and seeds, over the kept loops ``loops/<graph>-sim<k>/snapshots`` (as
    ``benchmarks.nightly_loop --state`` keeps them); a loop without snapshots is said and
    skipped."""
    from data_contracts import snapshots as snap

    def items(text: str) -> list[str]:
        return [t for t in text.split(",") if t]

    for graph in items(graphs):
        for sim in items(sims):
            base = Path(loops) / f"{graph}-sim{sim}"
            if not (base / "snapshots").is_dir():
                print(f"[{base.name}] no snapshots under {base}: skipped", flush=True)
                continue
            paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
            for night in map(int, items(nights)):
                for seed in map(int, items(seeds)):
                    yield base.name, night, seed, str(paths[night - 1])


def night_heldout_fit(path: str, seed: int, config) -> dict:
    """The held-out-class proxy on a nightly snapshot: one known class's labels hidden (its
    labelled nodes play a novel class), scored on labelled nodes only; where the repeated check
    acts (young graphs), unlike the static graphs."""
    import torch

    from harness.proxy import task_from_labels
    from oral_core.config import ORALConfig
    from oral_core.trainer import ORAL

    g, x, train, val, k = night_task(path)
    task = task_from_labels(g.y, train >= 0, val >= 0, torch.arange(k), k, seed, "last")
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    model = ORAL(cfg).with_diagnostics().fit(x, g.edge_index, task.train, task.val)
    return proxy_scores(g, task, model)


def nonovel_fit(g, x, seed: int, config, split=None, keys: tuple[str, ...] | None = None) -> dict:
    """The no-novel proxy (``harness.proxy.no_novel_task``): the labelled nodes alone, half of
    each class's training nodes unlabelled, nothing new; ``split``: ``(train_mask, val_mask,
    known_classes)``, by default :func:`oral_core.splits.make_split` of ``g.y``. ``keys``: the
    fit's answers to score (keys of ``ORAL.discoveries_``, an absent one is ``"last"``); None:
    :func:`answers`."""
    import torch
    from torch_geometric.utils import subgraph

    from harness.proxy import no_novel_task
    from oral_core.config import ORALConfig
    from oral_core.splits import make_split
    from oral_core.trainer import ORAL

    if split is None:
        made = make_split(g.y, seed=seed)
        split = (made.train_mask, made.val_mask, made.known_classes)
    train_mask, val_mask, known = split
    task = no_novel_task(g.y, train_mask, val_mask, known, seed)
    keep, train, val, scored, y = (task[k] for k in ("keep", "train", "val", "scored", "y"))
    edges, _ = subgraph(keep, g.edge_index, relabel_nodes=True, num_nodes=g.y.shape[0])
    cfg = ORALConfig.from_dict(config.to_dict() | {"seed": seed, "progress": False})
    model = ORAL(cfg).with_diagnostics().fit(x[keep], edges, train, val)
    k = int(known.numel())
    found_by = (answers(model, k) if keys is None else
                {key: model.discoveries_.get(key, model.discoveries_["last"]) for key in keys})
    out = {}
    for name, found in found_by.items():
        ids = found.class_id
        out[name] = {"accuracy": 100 * float((ids[scored] == y[scored]).float().mean()),
                     "novel_share": 100 * float((ids[scored] >= k).float().mean()),
                     "novel_classes": int(torch.unique(ids[ids >= k]).numel())
                     } | wholeness_gate(model)
    return out


def wholeness_gate(model) -> dict:
    """What ``novel_wholeness_if`` decided in a fit: ``{}`` when it did not run, else the
    novel_wholeness used and the yardstick's two figures (oral_core.separability)."""
    if model.separability_ is None:
        return {}
    return {"wholeness_used": model.novel_wholeness_used_,
            "pair_median": model.separability_["pair_median"],
            "cut_quartile": model.separability_["cut_quartile"]}


def night_nonovel_fit(path: str, seed: int, config, keys: tuple[str, ...] | None = None) -> dict:
    """The no-novel proxy on a nightly snapshot: its labelled nodes alone (the pipeline's
    training / validation split), half of each known class's training nodes unlabelled."""
    import torch

    g, x, train, val, k = night_task(path)
    return nonovel_fit(g, x, seed, config, (train >= 0, val >= 0, torch.arange(k)), keys)


def gate_share(nights_csv: Path, loops: Path) -> list[dict]:
    """Per Cora night of ``benchmarks/results/known_head/nights.csv`` (cold fits at the
    pipeline's defaults of their day, labelled-only validation accuracies of each answer):
    whether the champion gate would pass the pipeline's answer (``known_head=auto``: the better
    of the groups and the head on the validation nodes) with one pass of the known-split check
    and with the repeated check, against the reference logistic regression the gate computes
    on the same snapshot (``oral_core.reference.reference_accuracy``, read from the kept
    loops' snapshots under ``loops``)."""
    import csv

    import torch

    from data_contracts import snapshots as snap
    from oral_core.reference import reference_accuracy
    from tasks.fitting import fit_inputs

    out = []
    for r in csv.DictReader(nights_csv.open()):
        base = loops / f"{r['graph']}-sim{r['sim']}"
        if not (base / "snapshots").is_dir():
            continue
        paths = [p for _, p in snap.list_snapshots(base / "snapshots", r["graph"])]
        s = snap.load_snapshot(paths[int(r["night"])])
        if s.date.isoformat() != r["date"]:
            raise ValueError(f"{base}: night {r['night']} is {s.date}, not {r['date']}")
        x, _edges, train, val, _ = fit_inputs(s, "auto", 0)
        ref = 100 * reference_accuracy(x, torch.from_numpy(train), torch.from_numpy(val))
        once = max(float(r["val_once"]), float(r["val_once_head"]))
        repeat = max(float(r["val_repeat"]), float(r["val_repeat_head"]))
        out.append({"graph": r["graph"], "sim": int(r["sim"]), "night": int(r["night"]) + 1,
                    "reference": ref, "once": once, "repeat": repeat,
                    "pass_once": once >= ref, "pass_repeat": repeat >= ref})
    return out


def gate_table(rows: list[dict]) -> str:
    lines = ["| graph | sim | nights | the gate passes: one pass / repeated | validation "
             "accuracy: one pass / repeated / reference LR (means) |", "|---|---|---|---|---|"]
    for key in sorted({(r["graph"], r["sim"]) for r in rows}):
        rs = [r for r in rows if (r["graph"], r["sim"]) == key]
        lines.append(f"| {key[0]} | {key[1]} | {len(rs)} | {sum(r['pass_once'] for r in rs)} / "
                     f"{sum(r['pass_repeat'] for r in rs)} | "
                     f"{statistics.mean(r['once'] for r in rs):.1f} / "
                     f"{statistics.mean(r['repeat'] for r in rs):.1f} / "
                     f"{statistics.mean(r['reference'] for r in rs):.1f} |")
    return "\n".join(lines)


def _mean(rs: list[dict], setting: str, key: str) -> float:
    return statistics.mean(r["scores"][setting][key] for r in rs)


def _gain(rs: list[dict], key: str) -> str:
    """Repeat minus once, paired by fit: mean (standard error; worst fit)."""
    d = [r["scores"]["repeat"][key] - r["scores"]["once"][key] for r in rs]
    se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
    return f"{statistics.mean(d):+.1f} ({se:.1f}; {min(d):+.1f})"


def heldout_line(graph: str, rs: list[dict]) -> str:
    acted = sum(1 for r in rs if r["scores"]["once"] != r["scores"]["repeat"])
    return (f"| {graph} | {len(rs)} | {acted} | {_mean(rs, 'once', 'all'):.1f} / "
            f"{_mean(rs, 'repeat', 'all'):.1f} / {_mean(rs, 'final', 'all'):.1f} | "
            f"{_mean(rs, 'once', 'novel'):.1f} / {_mean(rs, 'repeat', 'novel'):.1f} | "
            f"{_gain(rs, 'all')} | {_mean(rs, 'once', 'classes'):.1f} / "
            f"{_mean(rs, 'repeat', 'classes'):.1f} |")


HELDOUT_HEADER = ["| graph | fits | the repeat changed the answer | All: once / repeat / final | "
                  "Novel (the hidden class): once / repeat | repeat minus once, All (s.e.; "
                  "worst) | classes: once / repeat |", "|---|---|---|---|---|---|---|"]


def summary(rows: list[dict]) -> str:
    by: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by.setdefault((r["task"], r["graph"]), []).append(r)
    lines = ["Held-out-class proxy (one known class hidden; Eq. 14 on labelled nodes, %):", "",
             *HELDOUT_HEADER]
    lines += [heldout_line(graph, rs) for (task, graph), rs in sorted(by.items())
              if task == "heldout"]
    nights: dict[str, list[dict]] = {}
    for r in rows:
        if r["task"] == "night-heldout":  # graph: "<graph>-sim<k> night <n>"
            nights.setdefault(r["graph"].rsplit("-sim", 1)[0], []).append(r)
    if nights:
        lines += ["", "The same proxy on nightly snapshots (kept loops' nights, one class hidden "
                  "among the snapshot's labelled ones, seed 0):", "", *HELDOUT_HEADER]
        lines += [heldout_line(f"{graph} nights", rs) for graph, rs in sorted(nights.items())]
    lines += ["", "No-novel proxy (labelled nodes only, nothing is new; the stand-in unlabelled "
              "nodes):", "", "| graph | fits | accuracy: once / repeat / final | called novel %: "
              "once / repeat | novel classes invented: once / repeat |", "|---|---|---|---|---|"]
    night_nonovel: dict[str, list[dict]] = {}
    for r in rows:
        if r["task"] == "night-nonovel":
            night_nonovel.setdefault(r["graph"].rsplit("-sim", 1)[0] + " nights", []).append(r)
    nonovel_rows = sorted(by.items()) + [(("nonovel", g), rs)
                                         for g, rs in sorted(night_nonovel.items())]
    for (task, graph), rs in nonovel_rows:
        if task == "nonovel":
            lines.append(f"| {graph} | {len(rs)} | {_mean(rs, 'once', 'accuracy'):.1f} / "
                         f"{_mean(rs, 'repeat', 'accuracy'):.1f} / "
                         f"{_mean(rs, 'final', 'accuracy'):.1f} | "
                         f"{_mean(rs, 'once', 'novel_share'):.1f} / "
                         f"{_mean(rs, 'repeat', 'novel_share'):.1f} | "
                         f"{_mean(rs, 'once', 'novel_classes'):.1f} / "
                         f"{_mean(rs, 'repeat', 'novel_classes'):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--loops", default="",
                    help="a nightly-loop --state folder: the proxies (--tasks) on nights "
                    "--nights of its loops of --graphs instead of the static graphs")
    ap.add_argument("--nights", default="2,5,8")
    ap.add_argument("--gate-share", default="", metavar="LOOPS",
                    help="a nightly-loop --state folder: the share of nights the champion gate "
                    "passes with one pass and with the repeated check, from the per-night fits "
                    "of benchmarks/results/known_head/nights.csv; writes gate_share.csv")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.gate_share:
        import csv

        rows = gate_share(ROOT / "benchmarks" / "results" / "known_head" / "nights.csv",
                          Path(args.gate_share))
        with (out / "gate_share.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["graph"])
            w.writeheader()
            w.writerows(rows)
        print(gate_table(rows))
        return 0
    path = out / "fits.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if not args.report_only:
        from cli.options import parse_set
        from flows.configuration import build_config, pipeline_defaults

        values = pipeline_defaults() | {"known_split_repeat": True} | parse_set(args.set)[0]
        config = build_config(values)
        done = {(r["task"], r["graph"], r["seed"]) for r in rows}
        if args.loops:
            from data_contracts import snapshots as snap

            for base in sorted(Path(args.loops).glob("*-sim*")):
                graph = base.name.rsplit("-sim", 1)[0]
                if graph not in args.graphs.split(",") or not (base / "snapshots").is_dir():
                    continue
                paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
                for night, task in [(int(n), t) for n in args.nights.split(",") if n
                                    for t in args.tasks.split(",") if t]:
                    name, kind = f"{base.name} night {night}", f"night-{task}"
                    if (kind, name, 0) in done or night > len(paths):
                        continue
                    started = time.perf_counter()
                    fit = night_heldout_fit if task == "heldout" else night_nonovel_fit
                    scores = fit(str(paths[night - 1]), 0, config)
                    row = {"task": kind, "graph": name, "seed": 0, "scores": scores,
                           "settings": args.set, "seconds": time.perf_counter() - started}
                    rows.append(row)
                    with path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"[{kind} {name}] " + json.dumps(
                        {k: {a: round(b, 1) for a, b in v.items()} for k, v in scores.items()}),
                        flush=True)
            print(summary(rows))
            return 0
        for graph in [g for g in args.graphs.split(",") if g]:
            g = x = None
            for task in [t for t in args.tasks.split(",") if t]:
                for seed in [int(s) for s in args.seeds.split(",") if s]:
                    if (task, graph, seed) in done:
                        continue
                    if g is None:
                        g, x = prepared(graph, args.data_dir)
                    started = time.perf_counter()
                    fit = heldout_fit if task == "heldout" else nonovel_fit
                    scores = fit(g, x, seed, config)
                    row = {"task": task, "graph": graph, "seed": seed, "scores": scores,
                           "settings": args.set, "seconds": time.perf_counter() - started}
                    rows.append(row)
                    with path.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"[{task} {graph} seed {seed}] " + json.dumps(
                        {k: {a: round(b, 1) for a, b in v.items()} for k, v in scores.items()}),
                        flush=True)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
