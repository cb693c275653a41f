"""A candidate's nodes published under their known class (``ORAL_CANDIDATES_NAMED``), read on
labelled nodes only and label-free:

    python -m benchmarks.candidates_named --source benchmarks/.state/lineage_merged_pieces \
        --states benchmarks/.state/candidates_named --out benchmarks/results/candidates_named

``--states`` holds nightly loops seeded from ``--source``'s trainings (``benchmarks.nightly_loop
--trainings-from``) and run with the switch on; each is compared with its source loop (same
graph, simulation, snapshots and trained models):

- **label-free**: whether every night's lineage is the source's (the ``class_lineage`` rows,
  ids, statuses and sizes; every node's ``class_key``), and how many nodes the switch
  published under a known class;
- **labelled only**: the validation nodes (labelled nodes of the known classes held out of
  training, :func:`tasks.fitting.split_labelled` with the night's seed) that sit in a candidate:
  as a candidate they are not named their class; with the switch, how many does the known class
  they are published under name right.

No truth of unlabelled nodes is read here; the scoreboard beside is ``benchmarks.scoreboard``'s.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "candidates_named"
LINEAGE = ("lineage_id, snapshot_date, class_key, status, size, previous_size, parents, "
           "merged_into, first_seen, last_seen")


def lineage_rows(con, graph: str) -> list[tuple]:
    """Every ``class_lineage`` row of ``graph`` (run ids left out: they name the configuration)."""
    return con.execute(f"SELECT {LINEAGE} FROM class_lineage WHERE graph = ? "
                       "ORDER BY snapshot_date, lineage_id", [graph]).fetchall()


def memberships(con, graph: str) -> list[tuple]:
    """``(snapshot_date, node_id, class_key)`` of every published node of ``graph``."""
    return con.execute("SELECT r.snapshot_date, a.node_id, a.class_key FROM node_assignments a "
                       "JOIN runs r USING (run_id) WHERE r.graph = ? ORDER BY ALL",
                       [graph]).fetchall()


def candidate_nodes(con, graph: str) -> dict:
    """Per snapshot date, ``{node_id: (published class name or None, is_novel)}`` of the nodes
    that sit in a candidate class (lineage status ``candidate``) of that night's run."""
    rows = con.execute(
        "SELECT r.snapshot_date, a.node_id, a.class_name, a.is_novel FROM node_assignments a "
        "JOIN runs r USING (run_id) JOIN class_lineage l ON l.run_id = a.run_id "
        "AND l.class_key = a.class_key AND l.status = 'candidate' WHERE r.graph = ?",
        [graph]).fetchall()
    out: dict = {}
    for day, node, name, novel in rows:
        out.setdefault(day, {})[str(node)] = (name, bool(novel))
    return out


def validation_names(snapshot, seed: int) -> dict[str, str]:
    """``{node_id: class name}`` of the snapshot's validation nodes at ``seed``."""
    from tasks.fitting import split_labelled

    _, val = split_labelled(snapshot.labels, seed)
    ids = snapshot.node_ids.to_pylist()
    return {str(ids[i]): snapshot.class_names[c] for i, c in enumerate(val) if c >= 0}


def compare_loop(source: Path, named: Path, graph: str, seed: int) -> dict:
    """One loop: its ``--source`` folder and its seeded folder with the switch on."""
    import duckdb

    from data_contracts import snapshots as snap

    a = duckdb.connect(str(source / "state" / "oral.duckdb"), read_only=True)
    b = duckdb.connect(str(named / "state" / "oral.duckdb"), read_only=True)
    try:
        same_lineage = lineage_rows(a, graph) == lineage_rows(b, graph)
        same_classes = memberships(a, graph) == memberships(b, graph)
        before, after = candidate_nodes(a, graph), candidate_nodes(b, graph)
    finally:
        a.close()
        b.close()
    row = {"graph": graph, "loop": named.name, "same_lineage": same_lineage,
           "same_classes": same_classes, "nights": 0, "candidate_nodes": 0, "named_known": 0,
           "validation_in_candidates": 0, "validation_named_right": 0,
           "validation_right_before": 0}
    for _, path in snap.list_snapshots(named / "snapshots", graph):
        s = snap.load_snapshot(path)
        row["nights"] += 1
        val = validation_names(s, seed)
        was, now = before.get(s.date, {}), after.get(s.date, {})
        row["candidate_nodes"] += len(now)
        row["named_known"] += sum(1 for _, novel in now.values() if not novel)
        for node, (name, _) in now.items():
            if node in val:
                row["validation_in_candidates"] += 1
                row["validation_named_right"] += name == val[node]
                row["validation_right_before"] += was.get(node, (None, True))[0] == val[node]
    return row


def compare(source_root: Path, states: Path, seed: int) -> list[dict]:
    rows = []
    for named in sorted(p for p in states.iterdir() if (p / "state" / "oral.duckdb").exists()):
        source = source_root / named.name
        if not (source / "state" / "oral.duckdb").exists():
            print(f"{named.name}: no source loop in {source_root}, skipped", file=sys.stderr)
            continue
        graph = named.name.rsplit("-sim", 1)[0]
        rows.append(compare_loop(source, named, graph, seed))
        print(f"{named.name}: {rows[-1]}", file=sys.stderr)
    return rows


def table(rows: list[dict]) -> list[str]:
    """The per-loop table and the totals (Markdown lines)."""
    lines = ["| loop | nights | lineage as the source's | classes as the source's | nodes in "
             "candidates | published under a known class | validation nodes in candidates | "
             "named right with the switch (without) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['loop']} | {r['nights']} | {'yes' if r['same_lineage'] else 'NO'} | "
                     f"{'yes' if r['same_classes'] else 'NO'} | {r['candidate_nodes']} | "
                     f"{r['named_known']} | {r['validation_in_candidates']} | "
                     f"{r['validation_named_right']} ({r['validation_right_before']}) |")
    total = {k: sum(r[k] for r in rows) for k in ("nights", "candidate_nodes", "named_known",
                                                  "validation_in_candidates",
                                                  "validation_named_right",
                                                  "validation_right_before")}
    same = sum(r["same_lineage"] and r["same_classes"] for r in rows)
    lines.append(f"| all {len(rows)} loops | {total['nights']} | {same} of {len(rows)} | | "
                 f"{total['candidate_nodes']} | {total['named_known']} | "
                 f"{total['validation_in_candidates']} | {total['validation_named_right']} "
                 f"({total['validation_right_before']}) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, required=True, help="the source study's --state")
    ap.add_argument("--states", type=Path, required=True, help="the seeded loops' --state")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--seed", type=int, default=None,
                    help="the nights' split seed (default: the pipeline's configuration's)")
    args = ap.parse_args(argv)
    for p in (args.source, args.states):
        if not p.is_dir():
            ap.error(f"no such folder: {p}")
    if args.seed is None:
        from flows.params import PIPELINE_DEFAULTS
        from oral_core.config import ORALConfig

        args.seed = int(PIPELINE_DEFAULTS.get("seed", ORALConfig().seed))
    rows = compare(args.source, args.states, args.seed)
    if not rows:
        ap.error(f"no seeded loop with a source loop in {args.states}")
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "loops.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (args.out / "table.md").write_text("\n".join(table(rows)) + "\n")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
