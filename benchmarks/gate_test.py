"""Strict or paired: how should the champion gate compare a night's model with the reference
logistic regression? (``ORAL_GATE_TEST``; labelled nodes only)

    OMP_NUM_THREADS=1 python -m benchmarks.gate_test [--loops STATE] [--out DIR]

For every night of every kept nightly loop (``STATE/<graph>-sim<k>``, as ``benchmarks.nightly_loop
--state`` keeps them), the night's own model (its known class per validation node, read from the
loop's DuckDB file) and the reference logistic regression (``oral_core.reference``, standardised
over every node as the pipeline's gate is) are compared on the night's validation nodes (the
pipeline's split of the labelled nodes, seed 0): their accuracies, the nodes only the reference
names right (``worse``) and only the model (``better``), McNemar's exact p, and the two verdicts
(strict: degraded when the model's accuracy is lower; McNemar: when it is lower and p < 0.05).
The second question (``ORAL_GATE_SCOPE``): the same comparison on the validation nodes the model
names a known class only (``known_*`` columns, the strict verdict ``strict_known``), and each
novel class of the model judged by its own validation nodes: its estimated known share
(``worst_novel_share``: the largest over the night's novel classes) is its validation nodes
times the unlabelled nodes per validation node of the known classes, over its unlabelled nodes,
as the known-split check estimates it (``oral_core.novelty``).
No test label is read: the unlabelled nodes' truth is never opened.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "gate_test"
LOOPS = ROOT / "benchmarks" / ".state" / "nightly_scoreboard"
FIELDS = ["graph", "sim", "night", "date", "val_nodes", "model", "reference", "worse", "better",
          "p", "strict", "mcnemar", "recorded_val", "recorded_gate", "known_nodes", "known_worse",
          "known_better", "strict_known", "novel_classes", "worst_novel_share"]


def night_row(con, graph: str, path: Path) -> dict:
    """One night's comparison (see the module doc), from the loop's DuckDB connection."""
    import torch

    from benchmarks.open_world_reference import fit_inputs
    from data_contracts import snapshots as snap
    from oral_core.reference import discordant, mcnemar_p, reference_val_predictions
    from tasks.registry.champion import GATE_ALPHA

    s = snap.load_snapshot(path)
    run_id, val_recorded, gate = con.execute(
        "SELECT run_id, val_accuracy, gate_status FROM runs WHERE graph = ? AND snapshot_date = ? "
        "ORDER BY published_at DESC LIMIT 1", [graph, s.date]).fetchone()
    names = dict(con.execute("SELECT lineage_id, class_name FROM classes WHERE run_id = ?",
                             [run_id]).fetchall())
    assign = dict(con.execute("SELECT node_id, lineage_id FROM node_assignments WHERE run_id = ?",
                              [run_id]).fetchall())
    x, _, train, val = fit_inputs(s)
    index = {c: i for i, c in enumerate(s.class_names)}
    ids = [str(n) for n in s.node_ids.to_pylist()]
    model = torch.tensor([index.get(names.get(assign.get(n)), -2) for n in ids])
    novel_ids = sorted({lid for lid, name in names.items() if name is None})
    ref = reference_val_predictions(x, train, val, scale="all")
    seen = val >= 0
    worse, better = discordant(model, ref, val)
    acc = float((model[seen] == val[seen]).float().mean())
    racc = float((ref[seen] == val[seen]).float().mean())
    p = mcnemar_p(worse, better)
    known_val = torch.where(model >= 0, val, torch.full_like(val, -1))
    known_worse, known_better = discordant(model, ref, known_val)
    shares = novel_shares([assign.get(n) for n in ids], model >= 0, train >= 0, seen, novel_ids)
    return {"known_nodes": int((known_val >= 0).sum()), "known_worse": known_worse,
            "known_better": known_better,
            "strict_known": "degraded" if known_worse > known_better else "ok",
            "novel_classes": len(novel_ids),
            "worst_novel_share": round(max(shares.values()), 3) if shares else None,
            "graph": graph, "date": s.date.isoformat(), "val_nodes": int(seen.sum()),
            "model": round(100 * acc, 2), "reference": round(100 * racc, 2), "worse": worse,
            "better": better, "p": round(p, 4), "strict": "degraded" if acc < racc else "ok",
            "mcnemar": "degraded" if acc < racc and p < GATE_ALPHA else "ok",
            "recorded_val": round(100 * float(val_recorded), 2), "recorded_gate": gate}


def novel_shares(lineage: list, in_known, train, val, novel_ids: list[str]) -> dict[str, float]:
    """Each novel class's estimated known share (``oral_core.novelty.known_share``'s estimate):
    its validation nodes times the unlabelled nodes per validation node of the known classes,
    over its unlabelled nodes (capped at 1). ``lineage``: each node's lineage id; ``in_known``,
    ``train``, ``val``: bool per node."""
    unlabelled = ~train & ~val
    known_val = int((in_known & val).sum())
    rate = float((in_known & unlabelled).sum()) / known_val if known_val else None
    out = {}
    for lid in novel_ids:
        inside = [i for i, x in enumerate(lineage) if x == lid]
        v = int(val[inside].sum()) if inside else 0
        u = int(unlabelled[inside].sum()) if inside else 0
        if rate is None or not u:
            out[lid] = 1.0 if v else 0.0
        else:
            out[lid] = min(1.0, rate * v / u)
    return out


def loop_rows(base: Path) -> list[dict]:
    import duckdb

    from data_contracts import snapshots as snap

    graph, sim = base.name.rsplit("-sim", 1)
    paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
    con = duckdb.connect(str(base / "state" / "oral.duckdb"), read_only=True)
    try:
        return [night_row(con, graph, p) | {"sim": int(sim), "night": k + 1}
                for k, p in enumerate(paths)]
    finally:
        con.close()


def finished(base: Path) -> bool:
    """Whether a kept loop has a run for each of its snapshots."""
    import duckdb

    from data_contracts import snapshots as snap

    graph = base.name.rsplit("-sim", 1)[0]
    db = base / "state" / "oral.duckdb"
    if not db.exists():
        return False
    n = len(snap.list_snapshots(base / "snapshots", graph))
    con = duckdb.connect(str(db), read_only=True)
    try:
        done = con.execute("SELECT count(DISTINCT snapshot_date) FROM runs").fetchone()[0]
    except duckdb.Error:
        return False
    finally:
        con.close()
    return n > 0 and done == n


def table(rows: list[dict]) -> list[str]:
    """Per graph: nights, held back by each test and scope, every night strict holds back and
    McNemar passes (the model's gap), and every night the night scope holds back and the known
    scope passes (the largest estimated known share of its novel classes)."""
    lines = ["| graph | nights | held back: strict / McNemar / strict on the known part | model "
             "below the reference (points) where McNemar passes and strict does not | worst "
             "novel class's estimated known share where the known part passes and the night "
             "does not |", "|---|---|---|---|---|"]
    for graph in sorted({r["graph"] for r in rows}):
        rs = [r for r in rows if r["graph"] == graph]
        gaps = [f"{r['reference'] - r['model']:.1f}" for r in rs
                if r["strict"] == "degraded" and r["mcnemar"] == "ok"]
        shares = [f"{r['worst_novel_share']:.2f}" if r["worst_novel_share"] is not None else "–"
                  for r in rs if r["strict"] == "degraded" and r["strict_known"] == "ok"]
        lines.append(f"| {graph} | {len(rs)} | {sum(r['strict'] == 'degraded' for r in rs)} / "
                     f"{sum(r['mcnemar'] == 'degraded' for r in rs)} / "
                     f"{sum(r['strict_known'] == 'degraded' for r in rs)} | "
                     f"{' '.join(gaps) or '–'} | {' '.join(shares) or '–'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=Path, default=LOOPS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = []
    for base in sorted(p for p in args.loops.glob("*-sim*") if p.is_dir()):
        if finished(base):
            print(f"[{base.name}]", flush=True)
            rows += loop_rows(base)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "nights.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows(rows)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
