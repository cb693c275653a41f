"""Are the fast paths within seed noise? (issue 61, build item 1; labelled nodes and label-free
agreement only)

    OMP_NUM_THREADS=1 python -m benchmarks.fast_path_rule --run --loops STATE --graphs cora
        [--sims 35] [--nights 5,8] [--seeds 0,1,2] [--study DIR] [--default-keep DIR]
    python -m benchmarks.fast_path_rule [--study DIR]          # the clauses, from the rows

Two speed options of ``ORALConfig`` compute what the defaults compute in another order:
``attention_kernel=spmm`` (Eq. 5-6 as sparse products: equal to ``gather`` up to float
summation order) and ``sparse_input_below`` (the first layer's input kept sparse: the same
dropout distribution, another random stream). Over 200 epochs of clustering and pseudo-labels
such differences grow like a change of seed, so a paired test against the default at one seed
reads seed noise as a loss. The yardstick here is the default itself at another seed: the fast
fit should be no further from the default's answer than another seed's fit is, and no worse on
the labelled-only proxies than that other seed.

For each (graph, night, task seed, proxy task) of ``benchmarks.answer_proxy`` (the held-out-class,
no-novel and witness proxies) three fits of the same task, each answered with the night's default
answer (``--only burstsplit``):

- ``default``: the pipeline's defaults (kept fits read back from ``--default-keep`` when there);
- ``fast``: the defaults with :data:`FAST` (``--set``);
- ``reseed``: the defaults with the fit's seed :data:`RESEED` above the task's (``--seed-offset``).

``--run`` makes the rows, row by row in that order (so that ``fast`` and ``reseed`` are timed
side by side under the same load), resumable: each variant's rows in ``<study>/<variant>/fits.jsonl``
and its fits and answers under ``benchmarks/.state/<study name>/fits``. Without ``--run`` the
clauses of the study's rule are read from the rows (:func:`decide`) and written to
``<study>/decision.md``.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "benchmarks" / "results" / "fast_paths_noise"
#: the fast paths judged together
FAST = ("attention_kernel=spmm", "sparse_input_below=0.1")
#: how far above the task's seed the yardstick's fit seed is
RESEED = 1000
#: the night's default answer (benchmarks.answer_proxy's name for ``--only burstsplit``)
FORM = "burstsplit"
TASKS = ("heldout", "nonovel", "witness")
#: the labelled-only measure read per task
MEASURE = {"heldout": "all", "nonovel": "accuracy", "witness": "known"}


def fast_paths_are_defaults() -> bool:
    """Whether the night's defaults already hold :data:`FAST` (so since 2026-12-07,
    benchmarks/results/fast_paths_draws/decision.md): a study whose ``default`` side is "the
    pipeline's defaults" then compares the fast paths with themselves."""
    from flows.configuration import pipeline_defaults

    from cli.options import parse_set

    return parse_set(list(FAST))[0].items() <= pipeline_defaults().items()


def refuse_when_fast_is_default(ap: argparse.ArgumentParser) -> None:
    """``--run`` of a fast-path study made when the defaults were ``gather`` and dense input:
    refused in one line once they hold the fast paths (rows made now would not be the study's)."""
    if fast_paths_are_defaults():
        ap.error("the night's defaults hold the fast paths since 2026-12-07 (fast_paths_draws/"
                 "decision.md): this study's default side was attention_kernel=gather, "
                 "sparse_input_below=0.0; make its rows at d42e3ef (git worktree add DIR d42e3ef)")


def variants(default_keep: Path | None, keep: Path) -> dict[str, dict]:
    """The three fits' ``benchmarks.answer_proxy`` arguments beyond the loop's, by variant."""
    return {"default": {"set": [], "offset": 0, "keep": default_keep or keep},
            "fast": {"set": list(FAST), "offset": 0, "keep": keep},
            "reseed": {"set": [], "offset": RESEED, "keep": keep}}


def study_keep(study: Path) -> Path:
    """Where a study's fast and reseeded fits (and their answers) are kept (ignored by git)."""
    return ROOT / "benchmarks" / ".state" / Path(study).name / "fits"


def run(args) -> None:
    fit_variants(args, variants(args.default_keep, study_keep(args.study)))


#: while this file exists, :func:`fit_variants` waits before its next fit (so that a lane can be
#: held between fits, say for a timed test run, without a stopped fit's clock running on)
PAUSE = ROOT / "benchmarks" / ".state" / "pause"


def wait_while_paused(pause: Path = PAUSE, poll: float = 10.0, sleep=None) -> bool:
    """Wait while ``pause`` exists (said once); whether it waited."""
    import time

    sleep = sleep or time.sleep
    if not pause.exists():
        return False
    print(f"paused: waiting while {pause} exists", flush=True)
    while pause.exists():
        sleep(poll)
    return True


def fit_variants(args, plan: dict[str, dict], after_task=None, skip=None) -> None:
    """Each task (:data:`TASKS` on each of ``args``' loop nights) fitted once per variant of
    ``plan`` (``{name: {"set", "offset", "keep"}}``), in ``plan``'s order, row by row: one
    ``benchmarks.answer_proxy`` call each, its rows in ``<study>/<name>``; ``after_task()``, when
    given, called once each task's fits are all made; ``skip(loop, night, seed, task)``, when
    given, leaves out the tasks it is true for. Before each fit it waits while :data:`PAUSE`
    exists."""
    from benchmarks import answer_proxy
    from benchmarks.split_repeat_proxy import loop_nights

    jobs = [(loop, night, seed, task)
            for loop, night, seed, _ in loop_nights(Path(args.loops), args.graphs, args.sims,
                                                     args.nights, args.seeds)
            for task in TASKS if skip is None or not skip(loop, night, seed, task)]
    for i, (loop, night, seed, task) in enumerate(jobs, 1):
        graph, sim = loop.rsplit("-sim", 1)
        for name, v in plan.items():
            wait_while_paused()
            print(f"[{i}/{len(jobs)}] {name}: {task} {loop} night {night} seed {seed}",
                  flush=True)
            argv = ["--loops", str(args.loops), "--graphs", graph, "--sims", sim,
                    "--nights", str(night), "--seeds", str(seed), "--tasks", task,
                    "--only", FORM, "--keep", str(v["keep"]),
                    "--out", str(Path(args.study) / name)]
            argv += [item for s in v["set"] for item in ("--set", s)]
            argv += ["--seed-offset", str(v["offset"])] if v["offset"] else []
            answer_proxy.main(argv)
        if after_task is not None:
            after_task()


def answers_of(keep: Path, row: dict) -> dict | None:
    """The kept answers of ``row``'s fit (:func:`benchmarks.answer_proxy.keep_answers`), or None."""
    import torch

    from benchmarks.records import fit_name

    sets = list(row.get("set") or []) + (
        [f"fitseed+{row['seed_offset']}"] if row.get("seed_offset") else [])
    path = keep / (fit_name(row["loop"], row["night"], row["seed"], kind=row["kind"],
                            sets=sets) + ".answers.pt")
    return torch.load(path) if path.exists() else None


def agreement(a: dict, b: dict, form: str) -> float:
    """ARI of two fits' ``form`` answers on the task's unlabelled nodes (label-free)."""
    from sklearn.metrics import adjusted_rand_score

    free = a["unlabelled"]
    return float(adjusted_rand_score(a[form][free].tolist(), b[form][free].tolist()))


def mean_se(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return statistics.fmean(values), se


#: the clauses' test: a mean difference is not below zero by more than this many standard
#: errors (one-sided; with ten tests, two clauses on five graphs, about 5% family-wise when the
#: fast paths are another seed)
SES = 3.0
#: ... and over every graph's labelled-only differences together, the mean at least this
#: (points of accuracy)
POOLED = -1.0


def not_worse(values: list[float]) -> bool:
    """The mean difference is not below zero by more than :data:`SES` standard errors; fewer
    than two values decide nothing (False)."""
    mean, se = mean_se(values)
    return len(values) >= 2 and not math.isnan(se) and mean >= -SES * se


def clause_row(graph: str, tasks: int, ari_fast: list[float], ari_yardstick: list[float],
               gaps: list[float], clause1: bool | str, cells: list[str], surfaced, invented,
               clause2: bool, ratio: float) -> str:
    """One graph's row of a decision table: the two mean ARIs, clause 1's gap (and its verdict,
    or a word such as "waits" in its place), the labelled-only ``cells``, the stand-ins surfaced
    and classes invented (fast, yardstick), clause 2 and the median seconds ratio."""
    word1 = clause1 if isinstance(clause1, str) else ("holds" if clause1 else "fails")
    fm, _ = mean_se(ari_fast)
    rm, _ = mean_se(ari_yardstick)
    gm, gse = mean_se(gaps)
    return (f"| {graph} | {tasks} | {fm:.3f} | {rm:.3f} | {gm:+.3f} ({gse:.3f}): "
            f"{word1} | {' | '.join(cells)} | "
            f"{surfaced[0]} / {surfaced[1]} | {invented[0]} / {invented[1]} | "
            f"{'holds' if clause2 else 'fails'} | {ratio:.2f} | "
            f"{'<= 1.1' if ratio <= 1.1 else 'slower'} |")


def speed_clause(ratios: dict[str, float]) -> tuple[bool, int]:
    """Clause 3: the median seconds ratio (fast over its yardstick) per graph at most 1.1 on
    every graph and at most 0.8 on at least two; ``(holds, graphs at or under 0.8)``."""
    fast_graphs = sum(1 for r in ratios.values() if r <= 0.8)
    return bool(ratios) and all(r <= 1.1 for r in ratios.values()) and fast_graphs >= 2, \
        fast_graphs


def pooled_clause(every: list[float]) -> tuple[bool, float, float]:
    """Clause 2 over every graph: the labelled-only differences together at least
    :data:`POOLED`; ``(holds, mean, s.e.)``."""
    mean, se = mean_se(every)
    return bool(every) and mean >= POOLED, mean, se


def paired_rows(study: Path) -> dict[tuple, dict]:
    """``{(kind, loop, night, seed): {variant: row}}`` for the fits all three variants have."""
    from benchmarks.records import read_jsonl

    by: dict[tuple, dict] = {}
    for name in ("default", "fast", "reseed"):
        for r in read_jsonl(study / name / "fits.jsonl"):
            by.setdefault((r["kind"], r["loop"], r["night"], r["seed"]), {})[name] = r
    return {k: v for k, v in by.items() if len(v) == 3}


def decide(study: Path, default_keep: Path | None, keep: Path | None = None) -> tuple[str, bool]:
    """The table of the rule's clauses per graph and whether every clause holds on every graph
    with rows (markdown, verdict); the fits' answers under ``keep`` (default
    :func:`study_keep`) and ``default_keep``."""
    from benchmarks.answer_proxy import BURST_FORMS

    form = BURST_FORMS[FORM]
    plan = variants(default_keep, keep or study_keep(study))
    rows = paired_rows(study)
    graphs = sorted({r["default"]["graph"] for r in rows.values()})
    lines = ["| graph | fits | ARI fast-default | ARI reseed-default | 1. agreement (fast - reseed, "
             "s.e.) | held-out All fast - reseed (s.e., fits) | no-novel accuracy | witness "
             "Known | the three pooled (s.e.) | stand-ins surfaced fast / reseed | invented fast "
             "/ reseed | 2. labelled | fit seconds fast / reseed (median) | 3. speed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    verdicts, ratios, every = [], {}, []
    for graph in graphs:
        mine = {k: v for k, v in rows.items() if v["default"]["graph"] == graph}
        fast_ari, reseed_ari, gaps = [], [], []
        for v in mine.values():
            got = {name: answers_of(plan[name]["keep"], v[name]) for name in plan}
            if any(a is None for a in got.values()):
                continue
            f, r = agreement(got["fast"], got["default"], form), \
                agreement(got["reseed"], got["default"], form)
            fast_ari.append(f)
            reseed_ari.append(r)
            gaps.append(f - r)
        clause1 = not_worse(gaps)
        diffs, cells = {}, []
        for task in TASKS:
            key = MEASURE[task]
            diffs[task] = [v["fast"][form][key] - v["reseed"][form][key]
                           for k, v in mine.items() if k[0] == task
                           and not math.isnan(v["fast"][form][key])
                           and not math.isnan(v["reseed"][form][key])]
            m, se = mean_se(diffs[task])
            cells.append(f"{m:+.2f} ({se:.2f}, {len(diffs[task])})" if diffs[task] else "")
        held = [v for k, v in mine.items() if k[0] == "heldout"]
        nonovel = [v for k, v in mine.items() if k[0] == "nonovel"]
        surfaced = [sum(v[name][form]["surfaced"] for v in held) for name in ("fast", "reseed")]
        invented = [sum(v[name][form]["novel_classes"] for v in nonovel)
                    for name in ("fast", "reseed")]
        pooled = [d for t in TASKS for d in diffs[t]]
        every.extend(pooled)
        pm, pse = mean_se(pooled)
        cells.append(f"{pm:+.2f} ({pse:.2f})")
        clause2 = (not_worse(pooled) and surfaced[0] >= surfaced[1] - 1
                   and invented[0] <= invented[1] + 1)
        timed = [v["fast"]["fit_seconds"] / v["reseed"]["fit_seconds"] for v in mine.values()
                 if v["fast"].get("fit_seconds") and v["reseed"].get("fit_seconds")]
        ratios[graph] = statistics.median(timed) if timed else float("nan")
        verdicts.append(clause1 and clause2)
        lines.append(clause_row(graph, len(mine), fast_ari, reseed_ari, gaps, clause1, cells,
                                surfaced, invented, clause2, ratios[graph]))
    clause3, fast_graphs = speed_clause(ratios)
    overall, em, ese = pooled_clause(every)
    verdict = bool(verdicts) and all(verdicts) and clause3 and overall
    lines += ["", f"Clause 2 over every graph: the labelled-only differences together "
              f"{em:+.2f} (s.e. {ese:.2f}, {len(every)} fits), bound {POOLED:+.1f}: "
              f"{'holds' if overall else 'fails'}.",
              "", f"Clause 3 (speed): the fast fit at most 1.1 times the reseeded default's "
              f"seconds on every graph and at most 0.8 on at least two: "
              f"{fast_graphs} graph(s) at or under 0.8: {'holds' if clause3 else 'fails'}.",
              "", f"Graphs with rows: {', '.join(graphs) or 'none'}. "
              f"Every clause on every graph: {'yes' if verdict else 'no'}."]
    return "\n".join(lines), verdict


def main(argv: list[str] | None = None) -> int:
    from benchmarks.split_repeat_proxy import loop_arguments

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    loop_arguments(ap, "cora", "35", "5,8", "0,1,2", loops="")
    ap.add_argument("--study", default=str(STUDY))
    ap.add_argument("--default-keep", type=Path, default=None,
                    help="where the default's fits are kept (read back when there): another "
                         "study's kept fits of the same tasks at today's defaults")
    ap.add_argument("--run", action="store_true", help="make the rows (resumable)")
    args = ap.parse_args(argv)
    if args.run:
        if not args.loops:
            ap.error("--run needs --loops (a nightly-loop --state folder)")
        refuse_when_fast_is_default(ap)
        run(args)
    text, _ = decide(Path(args.study), args.default_keep)
    Path(args.study).mkdir(parents=True, exist_ok=True)
    (Path(args.study) / "decision.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
