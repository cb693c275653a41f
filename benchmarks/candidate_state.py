"""Confirming novel classes on their second night: the candidate state, replayed on kept loops.

    python -m benchmarks.candidate_state [--states benchmarks/.state/nightly_loop,...]
        [--out benchmarks/results/candidate_state]

A novel class the pipeline publishes on one night is often gone the next: merged into another,
split, or vanished, and each of those is a lineage event an analyst reads. The rule replayed
here (issue 47, "a candidate state that becomes emerged when confirmed"): a novel lineage id is
a ``candidate`` on the first night it exists and ``emerged`` on the next night it goes on; a
candidate that ends is ``dismissed``, not an event. The rule renames statuses only: the
models, the classes and every node's lineage id stay as they were, so it can be replayed on
the DuckDB files of loops that ``benchmarks.nightly_loop`` kept (its ``--state`` folders),
without training.

Per loop, label-free (no label or truth read): novel ids that appeared, and the share of them
gone the next night (they would have been dismissed candidates); lineage events (``merged``,
``split``, ``vanished`` rows of novel ids, and novel ``emerged`` rows) per ten nights under
both rules. Then the benchmark's own scores under both rules (the simulation's truth, a
diagnostic that chooses nothing): novel classes invented on quiet nights, planted classes
surfaced on time, false lineage events.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "candidate_state"
STATES = ("nightly_loop", "nightly_loop_known_head", "nightly_loop_fidelity",
          "nightly_loop_split_repeat")
EVENTS = ("merged", "split", "vanished")


def replayed(rows: list[tuple], was_candidate: set[str], day) -> dict[str, str]:
    """One run's lineage statuses under the confirmation rule. ``rows``: ``(lineage_id, status,
    class_key, previous_size)`` as stored; ``was_candidate``: the novel ids that were
    candidates on the previous run of the chain."""
    out = {}
    for lid, status, key, previous_size in rows:
        if lid.startswith("known:"):
            out[lid] = status
        elif lid in was_candidate:
            out[lid] = "emerged" if key is not None else "dismissed"
        elif key is not None and previous_size is None:
            out[lid] = "candidate"  # a new id: emerged, a split part or a merge under a new id
        else:
            out[lid] = status
    return out


def read_chain(db: Path, graph: str, paths: list[Path]) -> list[dict] | None:
    """Per night: the night's own run and the answer run (as ``benchmarks.nightly_loop`` reads
    them), their stored lineage rows, and the statuses under both rules. The chain the lineage
    follows is the answer runs' (the previous run a night's lineage compares with is the
    latest one the gate did not find degraded)."""
    import duckdb

    from data_contracts import snapshots as snap

    con = duckdb.connect(str(db), read_only=True)
    try:
        nights, replay = [], {}
        last_candidates: set[str] = set()
        for path in paths:
            day = snap.snapshot_date(path)
            own = con.execute("SELECT run_id, gate_status FROM runs WHERE graph = ? AND "
                              "snapshot_date = ? ORDER BY published_at DESC LIMIT 1",
                              [graph, day]).fetchall()
            if not own:
                return None
            run_id, gate = own[0]
            rows = con.execute("SELECT lineage_id, status, class_key, previous_size FROM "
                               "class_lineage WHERE run_id = ?", [run_id]).fetchall()
            new = replayed(rows, last_candidates, day)
            replay[run_id] = new
            if gate != "degraded":  # the next night's lineage compares with this run
                last_candidates = {k for k, v in new.items() if v == "candidate"}
            nights.append({"run_id": run_id, "degraded": gate == "degraded",
                           "stored": {r[0]: r[1] for r in rows}, "replayed": new})
        return nights
    finally:
        con.close()


def label_free(nights: list[dict]) -> dict:
    """Over the nights the analyst reads (the runs the gate did not find degraded, which the
    lineage chain follows): novel ids that appeared, those gone by the next such night, and
    the lineage events of novel ids under both rules."""
    chain = [n for n in nights if not n["degraded"]]
    appeared = gone = 0
    events = {"stored": 0, "replayed": 0}
    for k, n in enumerate(chain):
        for rule in events:
            events[rule] += sum(1 for lid, status in n[rule].items()
                                if ":novel:" in lid and (status in EVENTS or status == "emerged"))
        new_ids = {lid for lid, st in n["replayed"].items() if st == "candidate"}
        appeared += len(new_ids)
        if k + 1 < len(chain):
            tomorrow = chain[k + 1]["replayed"]
            gone += sum(1 for lid in new_ids if tomorrow.get(lid) == "dismissed")
    return {"appeared": appeared, "gone_next_night": gone, "answered_nights": len(chain),
            **events}


def truth_scores(state: Path, graph: str, sim: int, nights: list[dict], periods: int) -> dict:
    """The nightly-loop benchmark's scores of what the analyst reads, under both rules."""
    import duckdb

    from benchmarks import nightly_loop as nl
    from data_contracts import snapshots as snap
    from types import SimpleNamespace

    paths = [p for _, p in snap.list_snapshots(state / "snapshots", graph)]
    con = duckdb.connect(str(state / "state" / "oral.duckdb"), read_only=True)
    by_run = {n["run_id"]: n for n in nights}
    out = {}
    try:
        for rule in ("stored", "replayed"):
            answered = []
            for path, night in zip(paths, nights):
                s = snap.load_snapshot(path)
                ids = s.node_ids.to_pylist()
                base = {"truth": {str(ids[i]): s.truth_names[t] for i, t in enumerate(s.truth)
                                  if t >= 0 and s.labels[i] < 0}, "known": set(s.class_names)}
                answer = con.execute(
                    "SELECT run_id FROM runs WHERE graph = ? AND snapshot_date <= ? AND "
                    "gate_status IS DISTINCT FROM 'degraded' ORDER BY snapshot_date DESC, "
                    "published_at DESC LIMIT 1", [graph, s.date]).fetchall()
                if not answer:
                    answered.append(base | {"assign": {}, "names": {}, "statuses": {},
                                            "candidates": set()})
                    continue
                rid = answer[0][0]
                statuses = by_run[rid][rule] if rid in by_run else {}
                answered.append(base | {
                    "assign": {str(k): v for k, v in con.execute(
                        "SELECT node_id, lineage_id FROM node_assignments WHERE run_id = ?",
                        [rid]).fetchall()},
                    "names": dict(con.execute("SELECT lineage_id, class_name FROM classes "
                                              "WHERE run_id = ?", [rid]).fetchall()),
                    "statuses": statuses if rid == night["run_id"] else {},
                    "candidates": {k for k, v in statuses.items() if v == "candidate"}})
            args = SimpleNamespace(data_dir=None, periods=periods)
            out[rule] = nl.score_loop(answered, nl.planted_classes(graph, sim, args))
    finally:
        con.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--states", default=",".join(str(ROOT / "benchmarks" / ".state" / s)
                                                 for s in STATES),
                    help="nightly-loop --state folders, a comma list")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from data_contracts import snapshots as snap

    rows = []
    for folder in [Path(s) for s in args.states.split(",") if s]:
        for base in sorted(folder.glob("*-sim*")):
            graph, sim = base.name.rsplit("-sim", 1)
            db = base / "state" / "oral.duckdb"
            if not db.exists() or not (base / "snapshots" / graph).is_dir():
                continue
            paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
            nights = read_chain(db, graph, paths)
            if nights is None or any(":novel:" in lid and st in ("candidate", "dismissed")
                                     for n in nights for lid, st in n["stored"].items()):
                continue  # unfinished, or already run with the rule
            free = label_free(nights)
            scores = truth_scores(base, graph, int(sim), nights, len(paths))
            rows.append({"study": folder.name, "graph": graph, "sim": int(sim),
                         "nights": len(nights), **free, "scores": scores})
            print(f"[{folder.name} {graph} sim {sim}] {free}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    print(write(args.out, rows, argv if argv is not None else sys.argv[1:]))
    return 0


def _on_time(score: dict) -> tuple[int, int]:
    planted = score["planted"].values()
    return sum(1 for c in planted if c["late"] is not None and c["late"] <= 1), len(planted)


def write(out: Path, rows: list[dict], argv: list[str]) -> str:
    import csv

    nights = sum(r["nights"] for r in rows)
    answered = sum(r["answered_nights"] for r in rows)
    appeared = sum(r["appeared"] for r in rows)
    gone = sum(r["gone_next_night"] for r in rows)
    ev = {k: sum(r[k] for r in rows) for k in ("stored", "replayed")}
    fe = {k: sum(r["scores"][k]["false_lineage_events"] for r in rows) for k in ev}
    ot = {k: [sum(x) for x in zip(*(_on_time(r["scores"][k]) for r in rows))] or [0, 0]
          for k in ev}
    lines = [
        "# Confirming novel classes on their second night (the candidate state)", "",
        "Question: most novel classes the nightly loop publishes on one night are gone the next "
        "(merged, split, vanished), and every such end is a lineage event the analyst reads. If "
        "a novel class is a `candidate` on its first night and `emerged` only when it goes on "
        "the next night (a candidate that ends is `dismissed`), how much of that churn goes, "
        "and what does it cost the planted classes?", "",
        "Command: `python -m benchmarks.candidate_state` (replays the rule on the DuckDB files of "
        "the loops `benchmarks.nightly_loop` kept under `benchmarks/.state/`: statuses only, "
        "no training; loops already run with the rule are skipped)."
        + (f" Last invocation: `python -m benchmarks.candidate_state {' '.join(argv)}`."
           if argv else ""), "",
        f"Answer: over {len(rows)} loops ({nights} nights, {answered} answered by their own "
        f"model), {gone} of the {appeared} novel lineage ids that appeared on those nights were "
        f"gone by the next (label-free). Lineage events of novel classes there: {ev['stored']} "
        f"as published, {ev['replayed']} with confirmation "
        f"({10 * ev['stored'] / max(answered, 1):.1f} and "
        f"{10 * ev['replayed'] / max(answered, 1):.1f} per ten such nights). Scored against the simulations' truth (a diagnostic): false lineage "
        f"events {fe['stored']} -> {fe['replayed']}, planted classes surfaced the night they "
        f"start or the next {ot['stored'][0]} -> {ot['replayed'][0]} of {ot['stored'][1]} "
        f"(confirmation makes the next night the earliest a class is published).", "",
        "Current: yes for the rule (statuses only); the loops were run at the defaults of their "
        "studies (see each study folder).", "",
        "Label-free columns, over the nights the analyst reads (those the gate did not find "
        "degraded; the lineage chain follows them): `appeared` novel ids, `gone next night` "
        "(gone by the next such night: dismissed candidates), `events` novel merged / split / "
        "vanished / emerged rows, as published and replayed. Diagnostic columns (truth): invented on quiet nights, false "
        "lineage events and planted classes on time (late <= 1), as published -> replayed; "
        "candidates on quiet nights are novel classes the replay leaves unpublished.", "",
        "| study | graph | sim | nights (answered) | appeared | gone next night | events: published / "
        "confirmed | invented (quiet) | candidates (quiet) | false events | planted on time |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a, b = r["scores"]["stored"], r["scores"]["replayed"]
        oa, ob = _on_time(a), _on_time(b)
        lines.append(
            f"| {r['study']} | {r['graph']} | {r['sim']} | {r['nights']} "
            f"({r['answered_nights']}) | {r['appeared']} | "
            f"{r['gone_next_night']} | {r['stored']} / {r['replayed']} | "
            f"{a['invented_on_quiet_nights']} -> {b['invented_on_quiet_nights']} | "
            f"{b['candidates_on_quiet_nights']} | {a['false_lineage_events']} -> "
            f"{b['false_lineage_events']} | {oa[0]} -> {ob[0]} of {oa[1]} |")
    text = "\n".join(lines) + "\n"
    (out / "README.md").write_text(text)
    with (out / "loops.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["study", "graph", "sim", "nights", "appeared", "gone_next_night",
                    "events_published", "events_confirmed", "false_events_published",
                    "false_events_confirmed", "on_time_published", "on_time_confirmed",
                    "planted"])
        for r in rows:
            a, b = r["scores"]["stored"], r["scores"]["replayed"]
            w.writerow([r["study"], r["graph"], r["sim"], r["nights"], r["appeared"],
                        r["gone_next_night"], r["stored"], r["replayed"],
                        a["false_lineage_events"], b["false_lineage_events"], _on_time(a)[0],
                        _on_time(b)[0], _on_time(a)[1]])
    return text


if __name__ == "__main__":
    sys.exit(main())
