"""Where a planted class is lost on its way to the analyst (issue 60; a diagnostic: it reads the
simulations' truth and chooses nothing).

    python -m benchmarks.discovery_loss --states benchmarks/.state/nightly_loop_regroupcal
        [--out benchmarks/results/discovery_loss]

For every planted class of every kept nightly loop (``benchmarks.nightly_loop --state``
folders), on the night it starts and the next (the scoreboard's "on time"), the best group of
each stage, as precision / recall of the class among the night's unlabelled nodes:

- ``model``: the model's own predictions (``predictions.parquet``: ORAL's partition, its novel
  groups);
- ``answer``: the night's answer (``answer.parquet``: the known classes named, the split check,
  the rejected grouping, the regroup);
- ``published``: what the analyst reads (the run's node assignments and lineage statuses in
  DuckDB): the best *published* novel class (a candidate is not).

A class is *found* at a stage when a group there holds it at precision >= 70% and recall >= 50%
(the scoreboard's bar). Each (class, night) is put where it is first lost: ``model`` (no group
of the model's or the answer's finds it; counted apart when one holds half of the class but is
mixed with other classes' nodes), ``answer`` (the model's does, the answer's does not),
``lineage`` (the answer's does, but it is not a published class that night: a candidate), or
``published``. ``answer found it`` counts the nights where only the answer's groups find it.
``README.md`` (the table) and ``classes.csv`` (every class and night).
"""
from __future__ import annotations

import argparse
from benchmarks.records import write_csv, write_table
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "discovery_loss"
#: the scoreboard's bar for a found class (``benchmarks.scoreboard``)
PRECISION, RECALL = 0.7, 0.5
STAGES = ("model", "answer", "lineage", "published")


def best_group(assign: dict, members: set, eligible=None) -> tuple[float, float, object]:
    """``(precision, recall, group)`` of the group of ``assign`` (node -> group) that comes
    closest to finding a class's ``members``: the one with the largest ``min(precision / 0.7,
    recall / 0.5)`` (a found group scores 1 or more), among the groups ``eligible`` accepts (all
    when None); ``(0, 0, None)`` when none holds any of them."""
    counts = Counter(assign[n] for n in members if n in assign)
    sizes = Counter(assign.values())
    best, score = (0.0, 0.0, None), -1.0
    for group, hit in counts.items():
        if eligible is not None and not eligible(group):
            continue
        p, r = hit / sizes[group], hit / len(members)
        if min(p / PRECISION, r / RECALL) > score:
            best, score = (p, r, group), min(p / PRECISION, r / RECALL)
    return best


def found(p: float, r: float) -> bool:
    return p >= PRECISION and r >= RECALL


def lost_at(model: tuple, answer: tuple, published: tuple) -> str:
    """Where a (class, night) is first lost (:data:`STAGES`; ``published``: it is not)."""
    if found(*published[:2]):
        return "published"
    if found(*answer[:2]):
        return "lineage"
    if found(*model[:2]):
        return "answer"
    return "model"


def run_folders(state: Path, graph: str) -> dict[str, Path]:
    """``{snapshot date: run folder}`` of a kept loop's runs (their ``answer.json``)."""
    out = {}
    for path in sorted((state / "runs" / graph).glob("*/answer.json")):
        day = json.loads(path.read_text()).get("snapshot_date")
        if day:
            out[day] = path.parent
    return out


def loop_rows(base: Path) -> list[dict]:
    """Every planted class's start night and next night of one kept loop."""
    import duckdb
    import pyarrow.parquet as pq

    from data_contracts import snapshots as snap

    graph, sim = base.name.rsplit("-sim", 1)
    folders = run_folders(base / "state", graph)
    con = duckdb.connect(str(base / "state" / "oral.duckdb"), read_only=True)
    started: dict[str, int] = {}
    rows = []
    try:
        for k, (day, path) in enumerate(snap.list_snapshots(base / "snapshots", graph)):
            s = snap.load_snapshot(path)
            ids = s.node_ids.to_pylist()
            truth = {ids[i]: s.truth_names[t] for i, t in enumerate(s.truth)
                     if t >= 0 and s.labels[i] < 0}
            planted = sorted({c for c in truth.values() if c not in set(s.class_names)})
            for c in planted:
                started.setdefault(c, k)
            due = [c for c in planted if k - started[c] <= 1]
            if not due:
                continue
            folder = folders.get(day.isoformat())
            run = con.execute("SELECT run_id FROM runs WHERE graph = ? AND snapshot_date = ? "
                              "ORDER BY published_at DESC LIMIT 1", [graph, day]).fetchall()
            if folder is None or not run:
                continue

            def groups(file: str) -> dict:
                return {r["node_id"]: (r["class_name"] if not r["is_novel"]
                                       else f"novel {r['class_key']}")
                        for r in pq.read_table(folder / file).to_pylist()}

            model, answer = groups("predictions.parquet"), groups("answer.parquet")
            # the class each node sits in (a candidate's nodes are published under their known
            # class's name, ORAL_CANDIDATES_NAMED, but still sit in the candidate)
            pub = {int(n): lid for n, lid in con.execute(
                "SELECT a.node_id, c.lineage_id FROM node_assignments a JOIN classes c "
                "ON c.run_id = a.run_id AND c.class_key = a.class_key WHERE a.run_id = ?",
                [run[0][0]]).fetchall()}
            status = dict(con.execute("SELECT lineage_id, status FROM class_lineage WHERE "
                                      "run_id = ?", [run[0][0]]).fetchall())
            for c in due:
                members = {n for n, t in truth.items() if t == c}
                got = {"model": best_group(model, members),
                       "answer": best_group(answer, members),
                       "published": best_group(pub, members, lambda g: ":novel:" in str(g)
                                               and status.get(g) != "candidate")}
                cand = best_group(pub, members)
                rows.append({"graph": graph, "sim": int(sim), "class": c,
                             "night": k + 1, "late": k - started[c],
                             **{f"{st}_{m}": round(v[i], 3) for st, v in got.items()
                                for i, m in ((0, "precision"), (1, "recall"))},
                             "best_status": status.get(cand[2], ""),
                             "lost_at": lost_at(got["model"], got["answer"],
                                                got["published"])})
    finally:
        con.close()
    return rows


def table(rows: list[dict]) -> list[str]:
    """Per graph and night (the start, the next): how many (class, night) pairs are lost where,
    and how many the answer finds that the model's own groups do not."""
    lines = ["| graph | night | classes | not found by the model or the answer (of which "
             "recall >= 50%, precision < 70%) | lost in the answer | lost in the lineage (a "
             "candidate) | published | answer found it, the model did not |",
             "|---|---|---|---|---|---|---|---|"]
    for graph in sorted({r["graph"] for r in rows}) + ["all"]:
        for late, name in ((0, "start"), (1, "next")):
            rs = [r for r in rows if r["late"] == late and graph in ("all", r["graph"])]
            n = Counter(r["lost_at"] for r in rs)
            gained = sum(1 for r in rs if found(r["answer_precision"], r["answer_recall"])
                         and not found(r["model_precision"], r["model_recall"]))
            mixed = sum(1 for r in rs if r["lost_at"] == "model"
                        and max(r["model_recall"], r["answer_recall"]) >= RECALL)
            lines.append(f"| {graph} | {name} | {len(rs)} | {n['model']} ({mixed}) | "
                         f"{n['answer']} | "
                         f"{n['lineage']} | {n['published']} | {gained} |")
    return lines


def kept_loops(states: str) -> list[Path]:
    """The kept loops (``<graph>-sim<k>`` folders with a DuckDB file) of the nightly-loop
    ``--state`` folders in ``states``, a comma list."""
    return [base for folder in [Path(s) for s in states.split(",") if s]
            for base in sorted(p for p in folder.glob("*-sim*") if p.is_dir())
            if (base / "state" / "oral.duckdb").exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--states", required=True, help="nightly-loop --state folders, a comma list")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = []
    for base in kept_loops(args.states):
        try:
            rows += loop_rows(base)
        except Exception as exc:  # noqa: BLE001 - a loop still being written is skipped
            print(f"[{base}] skipped: {type(exc).__name__}: {exc}", flush=True)
    write_csv(args.out / "classes.csv", rows)
    write_table(args.out, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
