"""Do two seeds give the same night? (issue 60's goal: ARI >= 0.9 between seeds; label-free)

    OMP_NUM_THREADS=1 python -m benchmarks.seed_agreement --loops STATE [--graphs cora,synthetic15]
        [--sims 0,1] [--nights 4,8] [--seeds 0,1] [--out benchmarks/results/seed_agreement]
        [--report-only]

Each kept nightly snapshot of a loop (``STATE/<graph>-sim<k>/snapshots``, as
``benchmarks.nightly_loop --state`` keeps them) is trained through the pipeline's own steps at
its defaults, once per seed (the seed draws the labelled nodes' split, the initialisation and
the clustering, as ``--set seed=S`` does for a night): ``tasks.fitting.train`` then the night's
answer (``tasks.answer.decide_per_class``, the pipeline's ``DEFAULT_NIGHT_ANSWER``, written in
each row: ``per_class+paired`` in the rows before 2026-12-04). Two seeds' answers are
compared on the snapshot's unlabelled nodes: the adjusted Rand index of the whole answer, of the
nodes both answers put in novel classes, and the novel classes each seed finds. No label of an
unlabelled node is read.

One JSON line per (snapshot, seed, answer) in ``fits.jsonl`` (the answer's class per unlabelled
node, so the comparison is redone from the file); ``table.md`` gets the table of the answer
asked for (``--answer``, default the pipeline's ``DEFAULT_NIGHT_ANSWER``). With ``--keep DIR``
each fit's run folder is kept there (``<loop>_night<k>_seed<s>``: the model's predictions and its
training result), so another answer is scored later from the same fits without training.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.records import append_jsonl, read_jsonl

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "seed_agreement"


#: a kept fit's training result, beside its run folder's files (``--keep``)
KEPT_RESULT = "trained.json"


def kept_training(folder: Path):
    """The training kept in ``folder`` (:data:`KEPT_RESULT`, its paths moved to ``folder``, where
    the folder may have been moved since), or None when there is none."""
    import json

    from tasks.fitting import TrainResult

    result = folder / KEPT_RESULT
    if not result.exists():
        return None
    kept = json.loads(result.read_text())
    for key in ("model_path", "predictions_path", "history_path"):
        kept[key] = str(folder / Path(kept[key]).name)
    return TrainResult.from_dict(kept | {"run_dir": str(folder)})


def night_answer(path: Path, seed: int, answer: str, keep: Path | None = None) -> dict:
    """One seed's night answer (``answer``, an ``ORAL_NIGHT_ANSWER`` value) on a snapshot: the
    class per unlabelled node (node id -> class key) and the number of known classes, through the
    pipeline's own train and answer steps. With ``keep`` (a folder for this fit) the training is
    read from there when kept, else kept there."""
    import json

    import numpy as np
    import pyarrow.parquet as pq

    from data_contracts import snapshots as snap
    from flows.configuration import build_config, pipeline_defaults
    from tasks.answer import decide_per_class
    from tasks.fitting import train

    snapshot = snap.load_snapshot(path)
    config = build_config(pipeline_defaults() | {"seed": seed, "progress": False})
    with tempfile.TemporaryDirectory() as tmp:
        trained = kept_training(keep) if keep is not None else None
        if trained is None:
            trained = train(snapshot, config, keep or Path(tmp), "auto")
            if keep is not None:
                (keep / KEPT_RESULT).write_text(json.dumps(trained.to_dict()))
        got = decide_per_class(snapshot, trained, config, trained.feature_mode,
                               tuple(answer.split("+")[1:]))
        table = pq.read_table(got["predictions_path"], columns=["node_id", "class_key"])
    unlabelled = np.asarray(snapshot.labels) < 0
    ids = [str(v) for v in table.column("node_id").to_pylist()]
    keys = table.column("class_key").fill_null(-1).to_pylist()
    return {"answer": answer, "num_known": int(trained.num_known),
            "classes": {i: int(k) for i, k, u in zip(ids, keys, unlabelled) if u}}


def agreement(a: dict, b: dict) -> dict:
    """Two seeds' answers on the unlabelled nodes both hold: the ARI of the whole answer, the ARI
    on the nodes both put in novel classes (None when fewer than two), and each seed's novel
    classes there."""
    from sklearn.metrics import adjusted_rand_score

    nodes = sorted(set(a["classes"]) & set(b["classes"]))
    ka, kb = a["num_known"], b["num_known"]
    x = [a["classes"][n] for n in nodes]
    y = [b["classes"][n] for n in nodes]
    both = [(p, q) for p, q in zip(x, y) if p >= ka and q >= kb]
    return {"nodes": len(nodes), "ari": float(adjusted_rand_score(x, y)),
            "novel_both": len(both),
            "novel_ari": (float(adjusted_rand_score([p for p, _ in both], [q for _, q in both]))
                          if len(both) >= 2 else None),
            "novel_classes": [len({p for p in x if p >= ka}), len({q for q in y if q >= kb})]}


def rows_by_night(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault((r["loop"], r["night"]), {})[r["seed"]] = r
    return out


def table(rows: list[dict]) -> str:
    """Per night, each pair of seeds; then the mean per graph."""
    lines = ["| loop | night | seeds | unlabelled nodes | ARI, whole answer | nodes both call novel "
             "| ARI on them | novel classes (each seed) |", "|---|---|---|---|---|---|---|---|"]
    per_graph: dict = {}
    for (loop, night), seeds in sorted(rows_by_night(rows).items()):
        for s, t in itertools.combinations(sorted(seeds), 2):
            got = agreement(seeds[s], seeds[t])
            per_graph.setdefault(loop.rsplit("-sim", 1)[0], []).append(got["ari"])
            novel = "–" if got["novel_ari"] is None else f"{got['novel_ari']:.2f}"
            lines.append(f"| {loop} | {night} | {s}, {t} | {got['nodes']} | {got['ari']:.2f} | "
                         f"{got['novel_both']} | {novel} | "
                         f"{got['novel_classes'][0]}, {got['novel_classes'][1]} |")
    lines += ["", "| graph | pairs | mean ARI, whole answer | lowest | pairs at >= 0.9 |",
              "|---|---|---|---|---|"]
    for graph, aris in sorted(per_graph.items()):
        lines.append(f"| {graph} | {len(aris)} | {statistics.mean(aris):.2f} | {min(aris):.2f} "
                     f"| {sum(a >= 0.9 for a in aris)} of {len(aris)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments, loop_nights

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora,synthetic15", "0,1", "4,8", "0,1", loops="")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--answer", default=None,
                    help="the night's answer to compare (an ORAL_NIGHT_ANSWER value; default "
                         "the pipeline's)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="a folder for the fits: kept there, read back when there, so another "
                         "answer is scored without training")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    from flows.settings import DEFAULT_NIGHT_ANSWER, night_answer_rule

    try:
        answer = night_answer_rule(args.answer) if args.answer else DEFAULT_NIGHT_ANSWER
    except ValueError as err:
        print(f"error: --answer: {err}", flush=True)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "fits.jsonl"
    rows = read_jsonl(path)
    if not args.report_only:
        from benchmarks.nightly_loop import simulate_missing

        simulate_missing(Path(args.loops), args.graphs, args.sims)  # the same seeded snapshots
        done = {(r["loop"], r["night"], r["seed"], r.get("answer")) for r in rows}
        todo = [(loop, night, seed, snap_path) for loop, night, seed, snap_path in
                loop_nights(Path(args.loops), args.graphs, args.sims, args.nights, args.seeds)
                if (loop, night, seed, answer) not in done]
        for i, (loop, night, seed, snap_path) in enumerate(todo, 1):
            print(f"[{i}/{len(todo)}] {loop} night {night} seed {seed}", flush=True)
            start = time.perf_counter()
            keep = None
            if args.keep is not None:
                keep = args.keep / f"{loop}_night{night}_seed{seed}"
                keep.mkdir(parents=True, exist_ok=True)
            row = {"loop": loop, "night": night, "seed": seed} | night_answer(
                Path(snap_path), seed, answer, keep)
            row["seconds"] = round(time.perf_counter() - start, 1)
            rows.append(row)
            append_jsonl(path, row)
    rows = [r for r in rows if r.get("answer") == answer]
    text = table(rows)
    (args.out / "table.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
