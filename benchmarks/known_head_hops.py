"""How many propagation steps should the known head read? (``known_head_hops``; labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.known_head_hops [--graphs ...] [--seeds 0,1,2]
        [--loops benchmarks/.state/nightly_loop_known_head] [--out DIR]

The known head (``oral_core.known_head``) is a logistic regression on ``S^hops X`` fitted on the
labelled training nodes of the known classes. Its default, two steps (SGC), was chosen on Cora
and the 15-class generator; on a graph whose edges join different classes the propagation blurs
what the features say. ``known_head_hops=None`` chooses the steps per fit among 0, 1, 2 by
cross-validation on the labelled training nodes. This study asks, per graph and split, on the
labelled validation nodes the head never trains on (no test label is read):

- the head's validation accuracy at each number of steps, and the reference logistic
  regression's (the champion gate's floor);
- which steps the cross-validation chose, and the validation accuracy of that choice against
  the fixed two steps.

Two kinds of rows: the static graphs under the strict protocol's split
(``oral_core.splits.make_split``, seeds ``--seeds``; the known classes' train and validation
nodes), including the generator with 15 and with 40 classes; and the nightly snapshots the
nightly-loop benchmark kept (nights 1, 4 and 8 of every loop under ``--loops``, split as the
pipeline splits them, ``tasks.fitting.split_labelled``). Resumable: one CSV row per case.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from benchmarks.nightly_loop import static_graph

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "known_head_hops"
LOOPS = ROOT / "benchmarks" / ".state" / "nightly_loop_known_head"
GRAPHS = ("cora", "amazonphoto", "blogcatalog", "synthetic15", "synthetic40")
NIGHTS = (1, 4, 8)
FIELDS = ["kind", "graph", "case", "train", "val", "known", "val_h0", "val_h1", "val_h2",
          "cv_h0", "cv_h1", "cv_h2", "chosen", "val_chosen", "val_reference", "seconds"]


def measure(x, edge_index, train, val, known: int) -> dict:
    """One case: the head at each step count on the validation nodes, the cross-validation's
    scores and choice, and the reference logistic regression."""
    from oral_core.known_head import (HOP_CHOICES, choose_hops, fit_known_head,
                                      head_probabilities)
    from oral_core.reference import reference_accuracy

    started = time.perf_counter()
    seen = val >= 0
    row = {"train": int((train >= 0).sum()), "val": int(seen.sum()), "known": known}
    for hops in HOP_CHOICES:
        head = fit_known_head(x, edge_index, train, known, hops=hops, labelled=(train >= 0) | seen)
        guess = head_probabilities(head, x, edge_index).argmax(1)
        row[f"val_h{hops}"] = round(100 * float((guess[seen] == val[seen]).float().mean()), 2)
    chosen, cv = choose_hops(x, edge_index, train, known)
    for hops in HOP_CHOICES:
        row[f"cv_h{hops}"] = round(100 * cv.get(hops, float("nan")), 2)
    row["chosen"] = chosen
    row["val_chosen"] = row[f"val_h{chosen}"]
    row["val_reference"] = round(100 * reference_accuracy(x, train, val), 2)
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def static_cases(graphs: list[str], seeds: list[int], data_dir: str | None, measure=measure):
    """``(kind, graph, case, run)`` per static graph and split seed; ``run()`` is
    ``measure(x, edges, train, val, known)`` on that split."""
    import torch

    from oral_core.datasets import auto_feature_mode, preprocess_features
    from oral_core.graph import canonical_edges
    from oral_core.splits import make_split

    for graph in graphs:
        g = static_graph(graph, data_dir)
        if hasattr(g, "edge_index"):  # a loaded dataset
            x_raw, edges, y = g.x, g.edge_index, g.y
        else:
            x_raw, edges, y = (torch.from_numpy(g.x), torch.from_numpy(g.edges),
                               torch.from_numpy(g.y))
        x = preprocess_features(x_raw.float(), auto_feature_mode(x_raw))
        edges = canonical_edges(edges, x.shape[0])
        for seed in seeds:
            split = make_split(y, seed=seed)
            train = torch.where(split.train_mask, y, torch.full_like(y, -1))
            val = torch.where(split.val_mask, y, torch.full_like(y, -1))
            known = int(split.known_classes.numel())
            yield "static", graph, f"seed {seed}", lambda x=x, e=edges, t=train, v=val, k=known: \
                measure(x, e, t, v, k)


def night_cases(loops: Path, measure=measure):
    """``(kind, graph, case, run)`` per kept nightly snapshot (nights :data:`NIGHTS`), split as
    the pipeline splits it; ``run()`` is ``measure(x, edges, train, val, known)``."""
    import torch

    from data_contracts import snapshots as snap
    from tasks.fitting import fit_inputs

    for base in sorted(p for p in loops.glob("*-sim*") if (p / "snapshots").is_dir()):
        graph = base.name.rsplit("-sim", 1)[0]
        paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
        for night in NIGHTS:
            if night > len(paths):
                continue

            def case(path=paths[night - 1]):
                s = snap.load_snapshot(path)
                x, edges, train, val, _ = fit_inputs(s, "auto", 0)
                return measure(x, edges, torch.from_numpy(train), torch.from_numpy(val),
                               len(s.class_names))
            yield "night", graph, f"{base.name.rsplit('-', 1)[1]} night {night}", case


def cases_of(args, measure) -> list:
    """The cases of the parsed ``--graphs``, ``--seeds``, ``--data-dir`` (static graphs) and
    ``--loops`` (nightly snapshots), each measured by ``measure``."""
    graphs = [g for g in args.graphs.split(",") if g]
    cases = list(static_cases(graphs, [int(s) for s in args.seeds.split(",") if s],
                              args.data_dir, measure))
    if args.loops:
        cases += list(night_cases(Path(args.loops), measure))
    return cases


def record_cases(cases, table: Path, fields: list[str], rows: list[dict], describe) -> None:
    """Run each case of ``cases`` (``(kind, graph, case, run)``) not yet in ``rows``, append its
    row, rewrite ``table`` (CSV with ``fields``) after each, and print ``describe(row)``."""
    done = {(r["kind"], r["graph"], r["case"]) for r in rows}
    for kind, graph, case, run in cases:
        if (kind, graph, case) in done:
            continue
        row = {"kind": kind, "graph": graph, "case": case, **run()}
        rows.append({k: str(v) for k, v in row.items()})
        with table.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        print(f"[{kind} {graph} {case}] {describe(row)} ({row['seconds']} s)", flush=True)


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def summary(rows: list[dict]) -> str:
    """The table per graph and kind: mean validation accuracy at each step count, of the
    cross-validation's choice and of the reference; how often each choice was made."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["graph"]), []).append(r)
    lines = ["| rows | graph | cases | val.: 0 / 1 / 2 steps | val.: chosen (by cross-validation) "
             "| chosen minus 2 steps (worst case) | reference LR | chosen 0 / 1 / 2 |",
             "|---|---|---|---|---|---|---|---|"]
    for (kind, graph), rs in sorted(groups.items()):
        def mean(key):
            return sum(float(r[key]) for r in rs) / len(rs)
        gains = [float(r["val_chosen"]) - float(r["val_h2"]) for r in rs]
        counts = [sum(1 for r in rs if int(r["chosen"]) == h) for h in (0, 1, 2)]
        lines.append(f"| {kind} | {graph} | {len(rs)} | {mean('val_h0'):.1f} / {mean('val_h1'):.1f}"
                     f" / {mean('val_h2'):.1f} | {mean('val_chosen'):.1f} | "
                     f"{sum(gains) / len(gains):+.1f} ({min(gains):+.1f}) | "
                     f"{mean('val_reference'):.1f} | {' / '.join(map(str, counts))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--loops", default=str(LOOPS),
                    help="a nightly-loop --state folder whose kept snapshots to read ('' : none)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = out / "cases.csv"
    rows = read_rows(table)
    if not args.report_only:
        record_cases(cases_of(args, measure), table, FIELDS, rows, lambda row: (
            f"val 0/1/2: {row['val_h0']} / {row['val_h1']} / {row['val_h2']}, chosen "
            f"{row['chosen']}, reference {row['val_reference']}"))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
