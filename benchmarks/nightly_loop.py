"""The nightly loop as an analyst meets it (issue 47, item 1).

    OMP_NUM_THREADS=1 python -m benchmarks.nightly_loop [--graphs cora,synthetic15,...]
        [--sims 0,1,2] [--periods 8] [--state DIR] [--out DIR] [--set KEY=VALUE ...]

For each graph and simulation seed, an evolving graph is simulated (``oral snapshots simulate``'s
:func:`data_contracts.simulate.simulate`: ``--periods`` dated snapshots, half the known-class
nodes labelled, the novel classes planted in the second half), then the real pipeline runs over
it at its defaults: ``oral backfill`` in a child process, one fresh state folder per loop
(Prefect, Great Expectations, MLflow, DuckDB lineage). What the analyst reads is then scored from
the DuckDB file against the snapshots' truth:

- per night: All / Known / Novel (the pipeline's own scores, one Hungarian matching); the
  known-class accuracy *by name* (an unlabelled node of a known class counted right when the
  class published for it carries its true name: what an analyst reads) beside two reference
  classifiers trained on the same labelled nodes (the pipeline's training / validation split)
  and scored on the same nodes: a logistic regression on the features
  (:mod:`oral_core.reference`) and a known-class GCN (the Table 2 GCN); the novel classes
  published on nights when none exists; classes published against classes present;
- per planted class: the night it is surfaced (a published novel class holding >= 70% of its
  members from the planted class and >= 50% of the planted class's scored nodes) and how many
  lineage ids carry it from then on;
- per loop: lineage events the truth does not have (the truth only grows: every ``merged``,
  ``split`` or ``vanished`` row, and every ``emerged`` novel id that is not the first id of a
  planted class), and each night's cost (wall seconds of the whole loop / nights, and training
  seconds).

Resumable: one JSON file per finished loop under ``<out>/loops/<graph>-sim<seed>.json``; a rerun
skips finished loops and rewrites ``<out>/README.md`` and ``<out>/nights.csv``. A loop stopped
part-way goes on from its first night without a published run when its kept state
(``<state>/<graph>-sim<seed>/progress.json``) was made with the same ``--set``. Two commands on
one ``--state`` share its loops: a loop one of them is running the other skips (a lock,
:func:`loop_claimed`). With ``--trainings-from DIR`` (kept loops of another study, its
``--state``) a loop not yet started takes that study's snapshots and trainings instead of
simulating and training again (:func:`seed_trainings`): a night's model depends only on the
snapshot's bytes, the configuration and a cold start (the pipeline's own training cache key), so
a study of what the pipeline does *after* training (the answer, the lineage) runs its loops at
the cost of those steps; such a loop's nights are not timed. The reference
classifiers are fitted once per snapshot: the simulation is deterministic, so every study's
nights are the same bytes, and their scores are kept by content hash in
``benchmarks/results/nightly_loop/references.csv`` (its first 96 rows, every graph and
simulation 0-2, were read from the studies that fitted them, ``nightly_loop_split_repeat`` and
``nightly_loop_hops``, matched to the snapshots by date). Nothing here
reads a test label to choose anything: it only scores.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "nightly_loop"
STATE = ROOT / "benchmarks" / ".state" / "nightly_loop"  # ignored: snapshots, DuckDB, MLflow
START = "2026-01-01"
GRAPHS = ("cora", "amazonphoto", "blogcatalog", "synthetic15")
FALSE_STATUSES = ("merged", "split", "vanished")
PRECISION, RECALL = 0.70, 0.50


# ---------------------------------------------------------------------------- the graphs
def generated_shape(graph: str) -> tuple[int, float] | None:
    """``(classes, separation)`` of a generated graph's name: ``synthetic<K>`` (K >= 4, class
    centres 2.5 apart) or ``synthetic<K>-sep<S>`` (centres ``S`` apart: lower, broader and
    overlapping classes); else None."""
    count, _, separation = graph.removeprefix("synthetic").partition("-sep")
    if not (graph.startswith("synthetic") and count.isdigit() and int(count) >= 4):
        return None
    try:
        spread = float(separation) if separation else 2.5
    except ValueError:
        return None
    return (int(count), spread) if spread > 0 else None


def generated_classes(graph: str) -> int | None:
    """The class count of a generated graph's name (:func:`generated_shape`), else None."""
    shape = generated_shape(graph)
    return shape[0] if shape else None


def static_graph(graph: str, data_dir: str | None):
    """The static graph a loop evolves: a real dataset, or the generator with K classes
    (``synthetic<K>``: 200 nodes a class, 64 features, class centres 2.5 apart, or ``S`` apart
    with ``-sep<S>``; ``synthetic15`` is the loops' generated graph)."""
    shape = generated_shape(graph)
    if shape is not None:
        from data_contracts.synthetic import make_static_graph
        return make_static_graph(num_nodes=200 * shape[0], num_classes=shape[0],
                                 num_features=64, separation=shape[1], seed=0, name=graph)
    from oral_core.datasets import load_dataset
    return load_dataset(graph, data_dir)


def simulate_loop(graph: str, sim: int, periods: int, root: Path, data_dir: str | None):
    from data_contracts.simulate import simulate
    return simulate(static_graph(graph, data_dir), periods, root, graph, start_date=START,
                    seed=sim, overwrite=True)


def simulate_missing(loops: Path, graphs: str, sims: str, periods: int = 8) -> None:
    """Simulate the loops' snapshots that ``loops`` lacks (``benchmarks.nightly_loop``'s seeded
    simulation, the same snapshots every time). Two commands on one ``loops`` folder (two
    proxies started together) simulate each loop once: the second waits on a lock
    (``<graph>-sim<k>/simulate.lock``) and finds it done; a loop's snapshots are written beside
    their folder and moved into place whole, so no command reads a loop half simulated."""
    import fcntl
    import os
    import shutil

    for graph in filter(None, graphs.split(",")):
        for sim in map(int, filter(None, sims.split(","))):
            root = loops / f"{graph}-sim{sim}" / "snapshots"
            if root.is_dir():
                continue
            root.parent.mkdir(parents=True, exist_ok=True)
            with open(root.parent / "simulate.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                if root.is_dir():  # another command simulated it meanwhile
                    continue
                print(f"[{graph}-sim{sim}] simulating {periods} nights into {root}", flush=True)
                partial = root.with_name(root.name + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                simulate_loop(graph, sim, periods, partial, os.environ.get("ORAL_DATA_DIR"))
                os.replace(partial, root)

# ------------------------------------------------------------------- scoring (pure, tested)
def score_loop(nights: list[dict], planted: dict[str, int]) -> dict:
    """Score one loop. ``nights`` (oldest first), each with:

    - ``truth``: ``{node_id: true class name}`` of the night's scored nodes (unlabelled, with a
      truth row);
    - ``known``: the known class names;
    - ``assign``: ``{node_id: lineage_id}`` published for the night's nodes;
    - ``names``: ``{lineage_id: class name or None}`` (None: a novel class);
    - ``statuses``: ``{lineage_id: status}`` of the night's lineage rows;
    - ``candidates`` (optional): the novel lineage ids of the published answer that are
      candidates (first night, not yet confirmed: not published as a class).

    ``planted``: ``{novel class name: index of the night it starts}``. Returns the per-night rows
    and the per-class and per-loop figures of the module docstring."""
    rows, surfaced, carriers, first_ids = [], {}, defaultdict(list), {}
    false_events, false_by_status = 0, Counter()
    for k, night in enumerate(nights):
        truth, assign, names = night["truth"], night["assign"], night["names"]
        known_nodes = [n for n, c in truth.items() if c in night["known"]]
        by_name = (sum(names.get(assign.get(n)) == truth[n] for n in known_nodes)
                   / len(known_nodes) if known_nodes else None)
        present_novel = {c for c, s in planted.items() if s <= k}
        candidates = set(night.get("candidates", ()))
        novel_ids = {lid for lid, name in names.items() if name is None} - candidates
        members = defaultdict(Counter)
        for n, lid in assign.items():
            if n in truth:
                members[lid][truth[n]] += 1
        for c in present_novel:
            size = sum(1 for v in truth.values() if v == c)
            best, best_overlap = None, 0
            for lid in novel_ids:
                overlap = members[lid][c]
                total = sum(members[lid].values())
                if overlap > best_overlap:
                    best, best_overlap = lid, overlap
                if (c not in surfaced and total and size and overlap / total >= PRECISION
                        and overlap / size >= RECALL):
                    surfaced[c] = k
            if c in surfaced and best is not None:
                carriers[c].append(best)
        for lid, status in night["statuses"].items():
            if lid.startswith("known:"):
                continue
            if status in FALSE_STATUSES:
                false_events += 1
                false_by_status[status] += 1
            elif status == "emerged":
                top = members[lid].most_common(1)
                c = top[0][0] if top else None
                if c in present_novel and c not in first_ids:
                    first_ids[c] = lid
                else:
                    false_events += 1
                    false_by_status["emerged"] += 1
        agreement = None
        if k:  # label-free: the lineage ids of the nodes both nights hold, unlabelled in both
            before = nights[k - 1]["assign"]
            shared = [n for n in truth if n in nights[k - 1]["truth"] and n in before
                      and n in assign]
            if len(shared) > 1:
                from oral_core.metrics import adjusted_rand_index
                ids = {lid: i for i, lid in enumerate({*assign.values(), *before.values()})}
                agreement = adjusted_rand_index([ids[before[n]] for n in shared],
                                                [ids[assign[n]] for n in shared])
        rows.append({"night": k, "known_by_name": by_name, "agreement_previous": agreement,
                     "novel_published": len(novel_ids), "candidates": len(candidates),
                     "novel_present": len(present_novel),
                     "classes_published": len(names),
                     "classes_present": len(set(truth.values()) | set(night["known"]))})
    per_class = {c: {"starts": s, "surfaced": surfaced.get(c),
                     "late": None if c not in surfaced else surfaced[c] - s,
                     "lineage_ids": len(set(carriers[c]))} for c, s in planted.items()}
    quiet = [r for r in rows if r["novel_present"] == 0]
    return {"nights": rows, "planted": per_class, "false_lineage_events": false_events,
            "false_events_by_status": dict(false_by_status),
            "invented_on_quiet_nights": sum(r["novel_published"] for r in quiet),
            "candidates_on_quiet_nights": sum(r["candidates"] for r in quiet)}


# --------------------------------------------------------------------- reading one loop
#: the reference classifiers' scores per snapshot, by content hash: every study simulates the
#: same snapshots (the simulation is deterministic), so each night's references are fitted once
REFERENCES = OUT / "references.csv"
#: bumped when :func:`reference_known` changes what it computes (older rows are then ignored)
REFERENCE_VERSION = 1
REFERENCE_FIELDS = ["graph", "date", "content_hash", "version", "lr", "gcn"]


def read_references(path: Path = REFERENCES) -> dict[str, dict]:
    """``{content_hash: {"lr", "gcn"}}`` of the cached rows of :data:`REFERENCE_VERSION`."""
    if not path.exists():
        return {}
    with path.open() as f:
        return {r["content_hash"]: {k: (float(r[k]) if r[k] not in ("", "None") else None)
                                    for k in ("lr", "gcn")}
                for r in csv.DictReader(f) if int(r["version"]) == REFERENCE_VERSION}


def cached_reference_known(snapshot, graph: str, path: Path = REFERENCES,
                           answers: dict | None = None) -> dict:
    """:func:`reference_known` of the snapshot, from the cache at ``path`` when its content hash
    is there, else scored (from ``answers``, the snapshot's reference answers, when given) and
    appended to the cache."""
    key = snapshot.content_hash
    cached = read_references(path).get(key)
    if cached is not None:
        return cached
    found = reference_known(snapshot, answers)
    from benchmarks.records import append_csv
    append_csv(path, {"graph": graph, "date": snapshot.date.isoformat(), "content_hash": key,
                      "version": REFERENCE_VERSION, **found}, REFERENCE_FIELDS)
    return found


def reference_known(snapshot, answers: dict | None = None) -> dict:
    """Known-class accuracy by name of the two reference classifiers (the logistic regression
    and the known-class GCN, trained on the pipeline's own split of the labelled nodes) on the
    night's scored known-class nodes. ``answers``: the snapshot's
    :func:`benchmarks.open_world_reference.snapshot_answers` (the same two fits), else fitted."""
    import numpy as np

    from benchmarks.open_world_reference import snapshot_answers

    names = list(snapshot.class_names)
    truth = [snapshot.truth_names[t] if t >= 0 else None for t in snapshot.truth]
    test = np.array([snapshot.labels[i] < 0 and truth[i] in names for i in range(len(truth))])
    y = np.array([names.index(t) if t in names else -1 for t in truth])
    if not test.any():
        return {"lr": None, "gcn": None}
    answers = answers or snapshot_answers(snapshot)
    lr_pred, gcn_pred = np.array(answers["lr"]), np.array(answers["gcn"])
    return {"lr": float((lr_pred[test] == y[test]).mean() * 100),
            "gcn": float((gcn_pred[test] == y[test]).mean() * 100)}


def read_loop(state: Path, graph: str, paths: list[Path]
              ) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """The nights as :func:`score_loop` takes them, from the loop's DuckDB file, twice: what the
    analyst reads (each night's latest answer: the night's run, or the last run before it that
    the champion gate did not find degraded, as the ``latest_*`` views and ``class_timeline``
    show it; a night answered by an older run shows no lineage rows of its own), and what each
    night's model published. Then the pipeline's own per-night figures, and the reference rows'
    per-node answers on each snapshot (:func:`benchmarks.open_world_reference.snapshot_answers`,
    kept beside the loop's state under ``references/``)."""
    import duckdb

    from benchmarks.open_world_reference import snapshot_answers
    from data_contracts import snapshots as snap

    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    answered, modelled, pipeline, references = [], [], [], []

    def published(run_id: str, own_night: bool) -> dict:
        assign = dict(con.execute("SELECT node_id, lineage_id FROM node_assignments "
                                  "WHERE run_id = ?", [run_id]).fetchall())
        names = dict(con.execute("SELECT lineage_id, class_name FROM classes WHERE run_id = ?",
                                 [run_id]).fetchall())
        statuses = dict(con.execute("SELECT lineage_id, status FROM class_lineage "
                                    "WHERE run_id = ?", [run_id]).fetchall())
        return {"assign": {str(k): v for k, v in assign.items()}, "names": names,
                "statuses": statuses if own_night else {},
                "candidates": {k for k, v in statuses.items() if v == "candidate"}}

    try:
        for path in paths:
            s = snap.load_snapshot(path)
            answers = snapshot_answers(s, state.parent / "references")
            references.append(answers)
            day = s.date
            run = con.execute(
                "SELECT run_id, acc_all, acc_known, acc_novel, train_seconds, val_accuracy, "
                "gate_status FROM runs WHERE graph = ? AND snapshot_date = ? "
                "ORDER BY published_at DESC LIMIT 1", [graph, day]).fetchall()
            if not run:
                raise RuntimeError(f"{graph} {day}: no published run in {state}")
            run_id, a, kn, nv, secs, val, gate = run[0]
            answer = con.execute(
                "SELECT run_id FROM runs WHERE graph = ? AND snapshot_date <= ? "
                "AND gate_status IS DISTINCT FROM 'degraded' "
                "ORDER BY snapshot_date DESC, published_at DESC LIMIT 1", [graph, day]).fetchall()
            ids = s.node_ids.to_pylist()
            base = {"truth": {str(ids[i]): s.truth_names[t] for i, t in enumerate(s.truth)
                              if t >= 0 and s.labels[i] < 0}, "known": set(s.class_names)}
            modelled.append(base | published(run_id, True))
            answered.append(base | (published(answer[0][0], answer[0][0] == run_id) if answer
                                    else {"assign": {}, "names": {}, "statuses": {},
                                          "candidates": set()}))
            pipeline.append({"date": day.isoformat(), "all": a, "known": kn, "novel": nv,
                             "train_seconds": secs, "val_accuracy": val, "gate": gate,
                             "answered_by": "tonight" if answer and answer[0][0] == run_id
                             else "an earlier night" if answer else "none",
                             **cached_reference_known(s, graph, answers=answers)})
    finally:
        con.close()
    return answered, modelled, pipeline, references


def answer_choices(state: Path, graph: str) -> dict[str, dict]:
    """``{snapshot date: what the per-class answer read}`` (``answer.json`` of each run folder,
    :func:`tasks.answer.decide_per_class`) for the nights answered per class."""
    out = {}
    for path in sorted((state / "runs" / graph).glob("*/answer.json")):
        got = json.loads(path.read_text())
        if got.get("snapshot_date"):
            out[got["snapshot_date"]] = got
    return out


def scored_loop(state: Path, graph: str, paths: list[Path], planted: dict[str, int]) -> dict:
    """The analyst's view scored (the headline), each night's model beside it (``model``), and
    the scoreboard (``scoreboard``, :func:`scoreboards`)."""
    answered, modelled, pipeline, references = read_loop(state, graph, paths)
    choices = answer_choices(state, graph)
    for row in pipeline:
        got = choices.get(row["date"])
        if got:
            row["answer"] = {k: got[k] for k in ("namer", "right", "nodes", "cross_fitted_right",
                                                 "renamed")}
    scored = score_loop(answered, planted)
    model = score_loop(modelled, planted)
    scored["scoreboard"] = scoreboards(answered, model["false_lineage_events"], references,
                                       planted, graph)
    for row, mrow, extra in zip(scored["nights"], model["nights"], pipeline):
        row.update(extra)
        row["model_known_by_name"] = mrow["known_by_name"]
        row["model_novel_published"] = mrow["novel_published"]
    scored["model"] = {k: model[k] for k in ("planted", "false_lineage_events",
                                             "false_events_by_status",
                                             "invented_on_quiet_nights",
                                             "candidates_on_quiet_nights")}
    return scored


def scoreboards(answered: list[dict], false_events: int, references: list[dict],
                planted: dict[str, int], graph: str) -> dict[str, dict]:
    """The scoreboard (:mod:`benchmarks.scoreboard`) of the pipeline's answer as the analyst reads
    it (its false lineage events counted from each night's own model, held-back nights
    included) and of the two reference rows on the same nights, each compared with the silent
    logistic regression's known classes: ``{"pipeline", "silent_lr", "open_world"}``."""
    from benchmarks import scoreboard
    from benchmarks.open_world_reference import reference_nights

    refs = reference_nights(references, [n["truth"] for n in answered],
                            [n["known"] for n in answered], graph)
    silent = refs["silent_lr"]
    board = {"pipeline": scoreboard.score(answered, planted, false_events, silent)}
    for name, nights in refs.items():
        board[name] = scoreboard.score(nights, planted,
                                       score_loop(nights, planted)["false_lineage_events"], silent)
    return board


# ------------------------------------------------------------------------------ the driver
def planted_classes(graph: str, sim: int, args) -> dict[str, int]:
    """``{planted class name: the night it starts}`` of a loop's simulation plan."""
    from data_contracts.simulate import as_static, plan_simulation

    static = as_static(static_graph(graph, args.data_dir))
    plan = plan_simulation(static, args.periods, START, seed=sim)
    return {str(static.class_names[c]): s for c, s in plan.novel_start.items()}


def confirmed_in(state: Path) -> bool:
    """Whether a kept loop's lineage confirmed novel classes on their second night, read from
    its DuckDB file (a novel id was ever a ``candidate`` or ``dismissed``; a loop in which no
    novel id ever appeared reads the same under both rules)."""
    import duckdb

    con = duckdb.connect(str(state / "oral.duckdb"), read_only=True)
    try:
        return bool(con.execute("SELECT count(*) FROM class_lineage WHERE status IN "
                                "('candidate', 'dismissed')").fetchone()[0])
    finally:
        con.close()


def rescore_loop(previous: dict, args) -> dict:
    """A finished loop scored again from its kept state (snapshots and DuckDB file under
    ``--state``), without training: for a change of the scoring, not of the pipeline."""
    from data_contracts import snapshots as snap

    graph, sim = previous["graph"], previous["sim"]
    base = Path(args.state) / f"{graph}-sim{sim}"
    paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
    scored = scored_loop(base / "state", graph, paths, planted_classes(graph, sim, args))
    keep = {k: previous[k] for k in ("graph", "sim", "periods", "settings", "wall_seconds",
                                     "nights_timed", "seconds_per_night", "defaults_of",
                                     "pipeline_defaults") if k in previous}
    return keep | {"confirm_novel": confirmed_in(base / "state")} | scored


def recover_loop(graph: str, sim: int, args) -> dict | None:
    """A loop whose backfill finished but whose scoring was cut off (the process stopped): scored
    from its kept state like :func:`rescore_loop`. Its wall time was never measured, so the
    night's cost is recorded as unknown (None). None when the state holds no finished loop."""
    from data_contracts import snapshots as snap

    base = Path(args.state) / f"{graph}-sim{sim}"
    if not (base / "state" / "oral.duckdb").exists() or not (base / "snapshots" / graph).is_dir():
        return None
    paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
    if len(paths) != args.periods:
        return None
    try:
        scored = scored_loop(base / "state", graph, paths, planted_classes(graph, sim, args))
    except RuntimeError:  # a night without a published run: the backfill did not finish
        return None
    return {"graph": graph, "sim": sim, "periods": args.periods, "settings": args.set,
            "confirm_novel": confirmed_in(base / "state"), "wall_seconds": None,
            "seconds_per_night": None, **scored}


def published_dates(state: Path, graph: str) -> set[str]:
    """The snapshot dates of ``graph`` whose night has a published run in the loop's DuckDB file
    (a run row is written last, so a night stopped half-way has none)."""
    import duckdb

    db = state / "oral.duckdb"
    if not db.exists():
        return set()
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT snapshot_date FROM runs WHERE graph = ?",
                           [graph]).fetchall()
    except duckdb.Error:  # a warehouse without its runs table yet
        return set()
    finally:
        con.close()
    return {str(d) for (d,) in rows}


def night_defaults(code: bool = False) -> dict:
    """What a night runs with beyond ``--set``: the pipeline's defaults
    (``flows.params.PIPELINE_DEFAULTS``) and the champion gate's and the lineage's settings as
    the environment gives them (``ORAL_GATE_TEST``, ``ORAL_GATE_SCOPE``, ``ORAL_CONFIRM_NOVEL``,
    ``ORAL_LINEAGE_CONTAINED``, ``ORAL_LINEAGE_PUBLISHED``, ``ORAL_CANDIDATES_NAMED``), as JSON
    values. With ``code``, the
    code's own defaults: the ``ORAL_`` variables of the environment set aside (a loop run
    with ``ORAL_LINEAGE_PUBLISHED=0`` is not at today's defaults because its report is written
    in the same environment)."""
    from flows.params import PIPELINE_DEFAULTS
    from flows.settings import Settings

    aside = {k: os.environ.pop(k) for k in [k for k in os.environ if k.startswith("ORAL_")]
             if code and k not in ("ORAL_DATA_DIR", "ORAL_STATE_DIR")}
    try:
        s = Settings.from_env()
    finally:
        os.environ.update(aside)
    return dict(PIPELINE_DEFAULTS) | {"gate_test": s.gate_test, "gate_scope": s.gate_scope,
                                      "confirm_novel": s.confirm_novel,
                                      "night_answer": s.night_answer,
                                      "warm_start": s.warm_start,
                                      "lineage_contained": s.lineage_contained,
                                      "lineage_published": s.lineage_published,
                                      "candidates_named": s.candidates_named}


#: the environment a night reads beyond ``--set`` (:func:`night_defaults`), with the value a
#: loop recorded before it was recorded (a loop file without the key ran at that value)
NIGHT_ENV = {"gate_test": ("ORAL_GATE_TEST", "strict"), "gate_scope": ("ORAL_GATE_SCOPE", "night"),
             "warm_start": ("ORAL_WARM_START", False),
             "night_answer": ("ORAL_NIGHT_ANSWER", "whole"),
             "lineage_contained": ("ORAL_LINEAGE_CONTAINED", False),
             "lineage_published": ("ORAL_LINEAGE_PUBLISHED", False),
             "candidates_named": ("ORAL_CANDIDATES_NAMED", False)}


def env_prefix(loops: list[dict]) -> str:
    """The variables (``ORAL_NIGHT_ANSWER=whole ...``) the loops ran with where they differ from
    today's defaults, as a command line's prefix that runs them again."""
    from flows.settings import Settings

    today = {f: Settings.__dataclass_fields__[f].default for f in NIGHT_ENV}
    out = {}
    for lp in loops:
        kept = lp.get("pipeline_defaults") or {}
        for key, (var, before) in NIGHT_ENV.items():
            if kept.get(key, before) != today[key]:
                out[var] = kept.get(key, before)
        if kept.get("confirm_novel", True) is False:
            out["ORAL_CONFIRM_NOVEL"] = "0"
    return "".join(f"{k}={int(v) if isinstance(v, bool) else v} "
                   for k, v in sorted(out.items()))


def confirm_novel() -> bool:
    """The lineage's confirmation rule the pipeline applies here (``ORAL_CONFIRM_NOVEL``)."""
    from flows.settings import Settings

    return Settings.from_env().confirm_novel


def resumable(base: Path, graph: str, args) -> list[Path] | None:
    """The kept snapshots of a loop stopped part-way at the same ``--set`` and lineage rule
    (its ``progress.json`` says so), to go on from its first unpublished night; None
    otherwise."""
    from data_contracts import snapshots as snap

    progress = base / "progress.json"
    if not progress.exists():
        return None
    kept = json.loads(progress.read_text())
    if kept.get("settings") != args.set or kept.get("confirm_novel", False) != confirm_novel():
        return None
    now, before = night_defaults(), kept.get("pipeline_defaults") or {}
    if any(before.get(k, default) != now[k] for k, (_, default) in NIGHT_ENV.items()):
        return None
    if not (base / "snapshots" / graph).is_dir():
        return None
    paths = [p for _, p in snap.list_snapshots(base / "snapshots", graph)]
    return paths if len(paths) == args.periods else None


#: the trained models a seeded loop takes over (:func:`seed_trainings`): the run folders and the
#: train task's persisted results (the Prefect cache entries named by the training's key)
TRAIN_CACHE = ("state/prefect/storage", "oral-train-")


def seed_trainings(source: Path, base: Path) -> bool:
    """Start the loop folder ``base`` from the kept loop ``source`` (the same graph and
    simulation in another study's ``--state``): its snapshots and reference answers copied, its
    run folders (model, predictions, history) copied to ``base/state/runs``, and the train
    task's cached results copied with their paths moved from ``source`` to ``base``, so that
    ``oral backfill`` finds each night's training done (the same snapshot bytes, configuration and
    cold start: the same cache key) and runs only what follows it. A night whose configuration
    differs from the source's misses the cache and trains as usual. False (nothing done) when
    ``source`` holds no finished snapshots and trainings."""
    import shutil

    folder, prefix = TRAIN_CACHE
    cached = sorted((source / folder).glob(prefix + "*")) if (source / folder).is_dir() else []
    if not (source / "snapshots").is_dir() or not (source / "state" / "runs").is_dir() \
            or not cached:
        return False
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    shutil.copytree(source / "snapshots", base / "snapshots")
    if (source / "references").is_dir():
        shutil.copytree(source / "references", base / "references")
    shutil.copytree(source / "state" / "runs", base / "state" / "runs")
    (base / folder).mkdir(parents=True)
    old, new = str((source / "state").resolve()), str((base / "state").resolve())
    for entry in cached:
        (base / folder / entry.name).write_text(entry.read_text().replace(old, new))
    return True


def run_loop(graph: str, sim: int, args) -> dict:
    """One loop: simulate its snapshots and run ``oral backfill`` over them. A loop stopped
    part-way at the same settings goes on from its first night without a published run; its
    cost per night is measured over the nights this and earlier invocations timed."""
    from data_contracts import snapshots as snap

    base = Path(args.state) / f"{graph}-sim{sim}"
    root, state = base / "snapshots", base / "state"
    planted = planted_classes(graph, sim, args)
    paths = resumable(base, graph, args)
    if paths is None:
        source = (Path(args.trainings_from) / base.name) if args.trainings_from else None
        if source is not None and seed_trainings(source, base):
            paths = [p for _, p in snap.list_snapshots(root, graph)]
            print(f"[{graph} sim {sim}] snapshots and trainings from {shown(source)}",
                  flush=True)
        else:
            if source is not None:
                print(f"[{graph} sim {sim}] {shown(source)} holds no kept trainings: "
                      "simulated and trained here", flush=True)
                source = None
            if base.exists():
                import shutil
                shutil.rmtree(base)
            paths = simulate_loop(graph, sim, args.periods, root, args.data_dir)
        from oral_core.identity import code_version

        progress = {"settings": args.set, "confirm_novel": confirm_novel(), "seconds": 0.0,
                    "nights_timed": 0, "defaults_of": code_version(),
                    "pipeline_defaults": night_defaults()} | (
            {"trainings_from": shown(source)} if source is not None else {})
    else:
        progress = json.loads((base / "progress.json").read_text())
    (base / "progress.json").write_text(json.dumps(progress))
    done = published_dates(state, graph)
    todo = [p for p in paths if snap.snapshot_date(p).isoformat() not in done]
    if todo:
        first = snap.snapshot_date(todo[0]).isoformat()
        cmd = [sys.executable, "-m", "cli.main", "backfill", "--graph", graph, "--snapshots",
               str(root), "--state-dir", str(state), "--start", first] + [
                   a for kv in args.set for a in ("--set", kv)]
        env = os.environ | {"ORAL_STATE_DIR": str(state)}
        print(f"[{graph} sim {sim}] nights {len(paths) - len(todo) + 1}-{len(paths)} of "
              f"{len(paths)}: {' '.join(cmd[2:])}", flush=True)
        started = time.perf_counter()
        done_run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if done_run.returncode != 0:
            raise RuntimeError(f"{graph} sim {sim}: backfill failed (rc {done_run.returncode}): "
                               f"{(done_run.stderr or done_run.stdout).strip().splitlines()[-1:]}")
        if not progress.get("trainings_from"):  # a night without its training is not timed
            progress["seconds"] += time.perf_counter() - started
            progress["nights_timed"] += len(todo)
        (base / "progress.json").write_text(json.dumps(progress))
    scored = scored_loop(state, graph, paths, planted)
    timed = progress["nights_timed"]
    from oral_core.identity import code_version

    return {"graph": graph, "sim": sim, "periods": args.periods, "settings": args.set,
            "defaults_of": progress.get("defaults_of") or code_version(),
            "pipeline_defaults": progress.get("pipeline_defaults") or night_defaults(),
            "confirm_novel": progress.get("confirm_novel", False),
            **({"trainings_from": progress["trainings_from"]}
               if progress.get("trainings_from") else {}),
            "wall_seconds": progress["seconds"] if timed else None, "nights_timed": timed,
            "seconds_per_night": progress["seconds"] / timed if timed else None, **scored}


def _fmt(v, digits=0):
    return "–" if v is None else f"{v:.{digits}f}"


def _percents(nights: list[dict], key: str) -> str:
    """One share per night as whole percents ("–" for none)."""
    return " ".join(_fmt(None if r[key] is None else r[key] * 100) for r in nights)


def _planted(planted: dict) -> str:
    """``class: nights late / lineage ids`` for each planted class."""
    return ", ".join(f"{c}: {'never' if v['late'] is None else v['late']} / {v['lineage_ids']}"
                     for c, v in planted.items())


def _events(loop: dict) -> str:
    """A loop's false lineage events, with their kinds when the loop recorded them:
    ``12 (4 merged, 2 split, 2 vanished, 4 emerged)``."""
    kinds = loop.get("false_events_by_status")
    if not kinds:
        return str(loop["false_lineage_events"])
    parts = ", ".join(f"{kinds[k]} {k}" for k in ("merged", "split", "vanished", "emerged")
                      if kinds.get(k))
    return f"{loop['false_lineage_events']} ({parts})"


def _invented(loop: dict) -> str:
    """Novel classes published on quiet nights, with the candidates (first-night novel classes
    under the lineage's confirmation, never published as classes) when there were any:
    ``0 (+3 candidates)``."""
    extra = loop.get("candidates_on_quiet_nights")
    return f"{loop['invented_on_quiet_nights']}" + (f" (+{extra} candidates)" if extra else "")


def _mean_agreement(nights: list[dict]) -> float | None:
    values = [r["agreement_previous"] for r in nights if r.get("agreement_previous") is not None]
    return sum(values) / len(values) if values else None


def shown(path: Path) -> str:
    """``path`` relative to the repository root when it lies below it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def answer_line(loops: list[dict]) -> str:
    """The study's answer in one paragraph, over every finished loop (what an analyst reads)."""
    if not loops:
        return "Answer: no loop finished yet."
    nights = [r for lp in loops for r in lp["nights"]]
    below = sum(1 for r in nights if r["known_by_name"] is not None and r["lr"] is not None
                and r["known_by_name"] * 100 < r["lr"])
    planted = [c for lp in loops for c in lp["planted"].values()]
    on_time = sum(1 for c in planted if c["late"] is not None and c["late"] <= 1)
    events = sum(lp["false_lineage_events"] for lp in loops)
    graphs = sorted({lp["graph"] for lp in loops})
    return (f"Answer: over {len(loops)} loops ({', '.join(graphs)}; {len(nights)} nights) the "
            f"known classes are below the logistic regression on {below} nights, "
            f"{sum(lp['invented_on_quiet_nights'] for lp in loops)} novel classes are invented "
            f"on quiet nights, {on_time} of {len(planted)} planted classes surface the night they "
            f"start or the next, and there are {events} lineage events the truth does not have "
            f"({10 * events / max(len(nights), 1):.1f} per ten nights). Not yet the goals of "
            f"issue 47 (none below, none invented, all on time, at most one per ten nights)."
            if (below or on_time < len(planted) or events > len(nights) / 10) else
            f"Answer: over {len(loops)} loops ({', '.join(graphs)}) every goal of issue 47 holds.")


def lead_answer(loops: list[dict]) -> str:
    """The README's Answer: the scoreboard's (issue 60) where the loops were scored with it,
    then issue 47's figures (:func:`answer_line`)."""
    from benchmarks.scoreboard import answer

    board = answer(loops)
    older = answer_line(loops)
    return older if board is None else "Answer: " + board.removeprefix("Scoreboard: ") + (
        " Issue 47's figures: " + older.removeprefix("Answer: "))


def current_line(loops: list[dict]) -> str:
    """Whether the loops are at today's defaults: the settings they ran with, the lineage rule,
    and the commit whose defaults they ran at where a loop records it (``defaults_of``)."""
    settings = sorted({kv for lp in loops for kv in lp.get("settings") or []})
    commits = sorted({lp["defaults_of"] for lp in loops if lp.get("defaults_of")})
    if commits:
        recorded = [lp.get("pipeline_defaults") for lp in loops]
        today = night_defaults(code=True)
        before = {k: default for k, (_, default) in NIGHT_ENV.items()}
        differ = sorted({k for r in recorded if r for k in set(r) | set(today)
                         if r.get(k, before.get(k)) != today.get(k)})
        status = ("yes" if all(recorded) and not differ and not settings else
                  "no, " + (f"their defaults differ from today's in {', '.join(differ)}"
                            if differ else "run with settings of their own" if settings
                            else "their defaults were not recorded"))
        return (f"{status}: the loops ran through `oral backfill` at the pipeline defaults of "
                "commit " + ", ".join(f"`{c}`" for c in commits)
                + (f", with {', '.join(f'`{kv}`' for kv in settings)}" if settings else "")
                + " (`defaults_of` and `pipeline_defaults` in each loop's file; a later default "
                "needs the loops run again into a fresh `--out`).")
    confirmed = [f"{lp['graph']} {lp['sim']}" for lp in loops if lp.get("confirm_novel")]
    rule = ("; every loop's lineage confirms novel classes on their second night"
            if len(confirmed) == len(loops) else
            "; the lineage confirms novel classes on their second night in "
            + ", ".join(confirmed) if confirmed else
            "; the lineage published novel classes the night they appeared (before confirmation, "
            "2026-11-28)")
    return ("yes: the loops ran through `oral backfill` at the pipeline's defaults of their day"
            + (f", with {', '.join(f'`{kv}`' for kv in settings)}" if settings else "")
            + rule + " (a changed default needs the loops run again into a fresh `--out`).")


def scoreboard_section(loops: list[dict]) -> list[str]:
    """The scoreboard (issue 60) of the loops scored with it, with its two reference rows."""
    from benchmarks import scoreboard

    table = scoreboard.table_lines(loops)
    if not table:
        return []
    return ["## Scoreboard", "", scoreboard.answer(loops), "",
            "Every answer scored by the same code (`benchmarks/scoreboard.py`) on the same nights: "
            "the pipeline as the analyst reads it; an open-world GCN a practitioner would build "
            "(known-class GCN, GNNSafe's propagated energy flags nodes above the validation "
            "nodes' 95th percentile, flagged nodes clustered by k-means with k on silhouette, "
            "published at once); the silent LR (a logistic regression that never publishes a "
            "novel class). Published on time: a novel class, not a candidate, with precision "
            f">= {scoreboard.PRECISION:.0%} and recall >= {scoreboard.RECALL:.0%} by the night "
            "after its class starts; kept: the same lineage id so on every later night. "
            "Precision: share of published novel (id, night) pairs that are >= 70% one planted "
            "class, every night counted; invented: novel ids that never are. False lineage "
            "events: counted on every night from each night's own model (held-back nights "
            "included). All by lineage: every unlabelled node; a planted-class node is right in "
            "the published id matched to its class by one Hungarian matching per loop. Known "
            "below LR: nights the known-class nodes are named worse than the silent LR names "
            f"them, McNemar p < {scoreboard.ALPHA}.", "", *table, ""]


def per_class_section(loops: list[dict]) -> list[str]:
    """The per-class answers' choices (``ORAL_NIGHT_ANSWER=per_class``), read on labelled
    validation nodes only: per graph, the nights answered by their own run, which classifier
    named the known classes, and how many of the validation nodes ORAL names a known class each
    candidate names right, with the choice cross-fitted (chosen on one half, counted on the
    other)."""
    graphs: dict[str, list[dict]] = {}
    for lp in loops:
        graphs.setdefault(lp["graph"], []).extend(lp["nights"])
    rows = []
    for graph, nights in graphs.items():
        chosen = [r["answer"] for r in nights if r.get("answer")]
        if not chosen:
            continue
        tonight = sum(r.get("answered_by") == "tonight" for r in nights)
        namers = Counter(a["namer"] for a in chosen)
        total = sum(a["nodes"] for a in chosen)
        right = {k: sum(a["right"].get(k, 0) for a in chosen) for k in ("oral", "lr", "gcn")}
        crossed = sum(a["cross_fitted_right"] for a in chosen)
        picked = sum(a["right"][a["namer"]] for a in chosen)
        rows.append(f"| {graph} | {tonight} / {len(nights)} | "
                    f"{', '.join(f'{k} {v}' for k, v in sorted(namers.items()))} | {total} | "
                    f"{right['oral']} | {right['lr']} | {right['gcn']} | {picked} | {crossed} | "
                    f"{'yes' if crossed >= right['oral'] else 'no'} |")
    if not rows:
        return []
    return ["## The per-class answer's choices (labelled nodes only)", "",
            "Per graph, over its loops' nights: nights published with an answer of their own; "
            "which classifier named the known classes; the validation nodes ORAL names a known "
            "class, and how many of them ORAL's own naming, the reference LR and the known-class "
            "GCN name right; the chosen classifier (in-sample, the choice read these nodes) and "
            "the choice cross-fitted (chosen on one half of the nodes, counted on the other, "
            "both ways); whether the cross-fitted choice names at least as many right as ORAL.",
            "", "| graph | nights answered tonight | known classes named by (nights) | "
            "validation nodes ORAL names known | ORAL right | LR right | GCN right | chosen "
            "right (in-sample) | chosen right (cross-fitted) | cross-fitted >= ORAL |",
            "|---|---|---|---|---|---|---|---|---|---|", *rows, ""]


#: a study's own question, rule (set down before its rows) and answer, kept apart from the loops'
#: report so rerunning the loops never rewrites it; the README starts with it
RULE = "rule.md"


def report(out: Path, argv: list[str], state: Path | None = None) -> str:
    loops = [json.loads(p.read_text()) for p in sorted((out / "loops").glob("*.json"))]
    lines = ["# Nightly loop: what an analyst reads, night by night", "",
             "Question: on simulated evolving graphs run through the real pipeline at its "
             "defaults, are the known classes right every night (at least the reference "
             "classifiers'), is nothing invented on nights without a novel class, is every "
             "planted class surfaced on time under one lineage id, and is the lineage quiet?", "",
             f"Command: `OMP_NUM_THREADS=1 {env_prefix(loops)}ORAL_DATA_DIR=../shared/datasets "
             "python -m "
             f"benchmarks.nightly_loop --graphs {','.join(GRAPHS)} --sims 0,1,2"
             + "".join(f" --set {kv}" for kv in sorted({kv for lp in loops
                                                         for kv in lp.get("settings") or []}))
             + ("" if out.resolve() == OUT.resolve() else
                f" --out {shown(out)}")
             + ("" if state is None or state.resolve() == STATE.resolve() else
                f" --state {shown(state)}")
             + "` (resumable: finished loops are kept under `loops/` and skipped; `--rescore` "
             "scores them again from their kept state)."
             + (f" Last invocation: `python -m benchmarks.nightly_loop {' '.join(argv)}`."
                if argv else ""), "",
             lead_answer(loops), "",
             "Current: " + current_line(loops), "",
             *scoreboard_section(loops),
             *per_class_section(loops),
             "Known by name: share (%) of the night's unlabelled known-class nodes published "
             "under their true class name; LR / GCN: the reference logistic regression and "
             "known-class GCN on the same labelled nodes and the same scored nodes. Invented: "
             "novel classes published on the nights before any planted class starts (with "
             "the lineage's confirmation, a novel class is a candidate on its first night, "
             "not published as a class; candidates on those nights are shown apart). Surfaced: "
             f"nights late (a published novel class with precision >= {PRECISION:.0%} and recall "
             f">= {RECALL:.0%}; `never` if not), and lineage ids carrying it afterwards.", "",
             "Night to night: adjusted Rand index between consecutive nights' lineage ids on the "
             "unlabelled nodes both nights hold (no label read), mean over nights 2-8.", "",
             "What the analyst reads: each night's latest answer, i.e. the night's own run, or the "
             "last run before it when the champion gate found tonight's model degraded (then the "
             "night's new nodes have no class and count as wrong, and the night shows no lineage "
             "rows). The second table scores each night's own model, degraded or not.", "",
             "| graph | sim | known by name, each night | LR | GCN | nights below LR | invented "
             "(quiet nights) | planted: late / ids | false lineage events | night to night | "
             "s / night |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for lp in loops:
        n = lp["nights"]
        below = sum(1 for r in n if r["known_by_name"] is not None and r["lr"] is not None
                    and r["known_by_name"] * 100 < r["lr"])
        lines.append(
            f"| {lp['graph']} | {lp['sim']} | {_percents(n, 'known_by_name')} | "
            f"{' '.join(_fmt(r['lr']) for r in n)} | {' '.join(_fmt(r['gcn']) for r in n)} | "
            f"{below}/{len(n)} | {_invented(lp)} | {_planted(lp['planted'])} | "
            f"{_events(lp)} | {_fmt(_mean_agreement(n), 3)} | "
            f"{_fmt(lp['seconds_per_night'])} |")
    lines += ["", "Each night's own model (degraded nights included): known by name, novel classes "
              "published per night, and the loop's figures.", "",
              "| graph | sim | known by name, each night | novel published, each night | "
              "nights degraded | invented (quiet nights) | planted: late / ids | false lineage "
              "events |", "|---|---|---|---|---|---|---|---|"]
    for lp in loops:
        n, m = lp["nights"], lp.get("model")
        if not m:
            continue
        lines.append(
            f"| {lp['graph']} | {lp['sim']} | {_percents(n, 'model_known_by_name')} | "
            f"{' '.join(str(r['model_novel_published']) for r in n)} | "
            f"{sum(r.get('gate') == 'degraded' for r in n)}/{len(n)} | "
            f"{_invented(m)} | {_planted(m['planted'])} | "
            f"{m['false_lineage_events']} |")
    lines += ["", "Per night, the pipeline's own scores (All / Known / Novel, one Hungarian "
              "matching over the scored nodes) and its gate: `nights.csv`."]
    text = "\n".join(lines) + "\n"
    rule = out / RULE
    if rule.is_file():  # a study's question, rule and answer come first, the loops' report after
        text = rule.read_text().rstrip() + "\n\n" + text.replace("# ", "## ", 1)
    (out / "README.md").write_text(text)
    with (out / "nights.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["graph", "sim", "night", "date", "all", "known", "novel", "known_by_name",
                    "lr", "gcn", "novel_published", "candidates", "novel_present",
                    "classes_published",
                    "classes_present", "val_accuracy", "gate", "answered_by",
                    "model_known_by_name", "model_novel_published", "agreement_previous",
                    "train_seconds"])
        for lp in loops:
            for r in lp["nights"]:
                w.writerow([lp["graph"], lp["sim"], r["night"], r["date"], r["all"], r["known"],
                            r["novel"], r["known_by_name"], r["lr"], r["gcn"],
                            r["novel_published"], r.get("candidates"), r["novel_present"],
                            r["classes_published"],
                            r["classes_present"], r["val_accuracy"], r["gate"],
                            r.get("answered_by"), r.get("model_known_by_name"),
                            r.get("model_novel_published"), r.get("agreement_previous"),
                            r["train_seconds"]])
    return text


def _command(argv: list[str]) -> list[str]:
    return [a for a in argv if a not in ("--report-only", "--rescore")]


@contextlib.contextmanager
def loop_claimed(state: Path, graph: str, sim: int):
    """Whether this process holds the loop ``<graph>-sim<sim>`` (a lock on
    ``<state>/<graph>-sim<sim>.lock`` the operating system drops with its holder): two loop
    commands on one ``--state`` never run the same loop at once into its state folder."""
    import fcntl

    state.mkdir(parents=True, exist_ok=True)
    with open(state / f"{graph}-sim{sim}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--sims", default="0,1,2", help="simulation seeds, a comma list")
    ap.add_argument("--periods", type=int, default=8)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--state", default=str(STATE))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an ORALConfig override passed to oral backfill")
    ap.add_argument("--trainings-from", default=None, metavar="STATE",
                    help="another study's --state: a loop not started yet takes its snapshots "
                    "and trainings (same configuration: only what follows training runs; "
                    "its nights are not timed)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--rescore", action="store_true",
                    help="score the finished loops again from their kept state (no training); "
                    "a loop whose backfill finished but was never scored is scored, its cost "
                    "unknown")
    args = ap.parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    graphs = [g for g in args.graphs.split(",") if g]
    unknown = [g for g in graphs if g not in GRAPHS and generated_classes(g) is None]
    if unknown:
        print(f"error: --graphs {unknown[0]}: choose from {', '.join(GRAPHS)} or synthetic<K> "
              "(the generator with K >= 4 classes)", file=sys.stderr)
        return 2
    (args.out / "loops").mkdir(parents=True, exist_ok=True)
    if not (args.out / "README.md").exists():  # a study folder always has its README
        report(args.out, _command(argv), Path(args.state))
    if not args.report_only:
        for graph in graphs:
            for sim in [int(s) for s in args.sims.split(",") if s]:
                target = args.out / "loops" / f"{graph}-sim{sim}.json"
                if target.exists() and args.rescore:
                    target.write_text(json.dumps(rescore_loop(json.loads(target.read_text()),
                                                              args), indent=1, default=str))
                    print(f"[{graph} sim {sim}] scored again from its state", flush=True)
                    continue
                if args.rescore and not target.exists():
                    recovered = recover_loop(graph, sim, args)
                    if recovered is not None:
                        target.write_text(json.dumps(recovered, indent=1, default=str))
                    print(f"[{graph} sim {sim}] " + (
                        "scored from its finished state (its cost unknown)" if recovered
                        else "not run yet: nothing to score"), flush=True)
                    continue
                if target.exists():
                    print(f"[{graph} sim {sim}] done before, kept", flush=True)
                    continue
                with loop_claimed(Path(args.state), graph, sim) as mine:
                    if not mine:
                        print(f"[{graph} sim {sim}] running in another process: skipped",
                              flush=True)
                        continue
                    if target.exists():  # the other process finished it meanwhile
                        print(f"[{graph} sim {sim}] done before, kept", flush=True)
                        continue
                    result = run_loop(graph, sim, args)
                target.write_text(json.dumps(result, indent=1, default=str))
                print(f"[{graph} sim {sim}] {_fmt(result['seconds_per_night'])} s/night, "
                      f"invented {result['invented_on_quiet_nights']}, false events "
                      f"{result['false_lineage_events']}", flush=True)
                report(args.out, _command(argv), Path(args.state))
    print(report(args.out, _command(argv), Path(args.state)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
