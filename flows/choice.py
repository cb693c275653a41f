"""The choice of settings for one graph (the service behind ``oral choose``; issue 62).

The held-out-class proxy (:mod:`harness.proxy`) scores each candidate setting against the
defaults on labelled nodes only; this module is the use case around it: the graph's inputs
(a benchmark dataset or a snapshot), every fit of every setting and seed (reused from a seed file
under ``out`` or a ``cache`` folder, else trained here, or in child processes that each fit one
seed), the known-class guard, and the table and the choice written under ``out``. The command line
(:mod:`cli.choose`) only checks its options, builds a :class:`ChoiceRequest` and prints.

Progress goes through ``say`` (one line per fit); the answer is a :class:`ChoiceOutcome`.
Nothing here imports Prefect, MLflow or DuckDB.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: the settings tried by default: the levers of benchmarks/results/lever_table/lever_table.md
#: whose proxy bound (gain - s.e.) is above 0 on at least one of our graphs: the two that scale
#: how much pseudo-label learning (Eq. 7-11) reinforces itself and a sharper group-aware
#: attention (Eq. 5 over a temperature of 0.3). opennc_losses=true also has such a bound
#: (AmazonPhoto with the prior) but is left out: on the full task it collapsed the known classes
#: (validation accuracy 35-57% against 95-97% at the defaults, docs/method.md "Open choices"),
#: which the proxy cannot see
DEFAULT_CANDIDATES = ({"gamma": 0.1}, {"pseudo_label_groups": "novel"},
                      {"attention_temperature": 0.3})
#: tried besides them when the choice scores the answer as the fit ends (``score="final"``):
#: the novel re-cut, which that score picks where it helps and only there
#: (benchmarks/results/choose_recut: Cora chosen, AmazonPhoto and the generator not)
FINAL_CANDIDATES = ({"novel_recut": True},)


def default_candidates(score: str = "mean") -> tuple[dict, ...]:
    """The settings tried when none is named: :data:`DEFAULT_CANDIDATES`, and with
    ``score="final"`` also :data:`FINAL_CANDIDATES` (a mean over epochs cannot see them)."""
    return DEFAULT_CANDIDATES + (FINAL_CANDIDATES if score == "final" else ())


def candidate_name(overrides: dict) -> str:
    """A candidate's name in the table and the choice: ``key=value`` joined by commas."""
    return ",".join(f"{k}={v}" for k, v in overrides.items())


#: how progress is said (one line at a time)
Say = Callable[[str], None]


def say_line(line: str) -> None:
    """The default :data:`Say`: the line on standard output at once."""
    print(line, flush=True)


@dataclass
class ChoiceRequest:
    """What ``oral choose`` was asked (its options, checked): one of ``dataset`` / ``graph``
    (with ``snapshots``, ``date``), the settings by name (``configs``: ``defaults`` first, then
    each candidate; ``candidates``: the candidates' overrides; ``base``: the ``--set`` every
    setting starts from), the proxy (``seeds``, ``hide``, ``window``, ``score``, ``protocol``), the guard
    (``guard_seeds``, ``guard_drop``), where fits go (``out``, ``cache``), and how the work is
    split (``fit_seed`` / ``fit_guard`` with ``guard_setting``: fit only those and write no
    table; ``jobs`` > 1: missing fits in child processes started as ``child_command``)."""

    configs: dict
    candidates: dict
    base: dict
    out: Path
    dataset: str | None = None
    graph: str | None = None
    snapshots: Path | None = None
    date: str | None = None
    data_dir: str | None = None
    prior: bool = False
    protocol: str = "ours"
    hide: str = "extremes"
    seeds: int = 5
    window: int = 10
    score: str = "mean"
    guard_seeds: int = 3
    guard_drop: float | None = None
    cache: list[Path] = field(default_factory=list)
    fit_seed: list[int] | None = None
    fit_guard: list[int] | None = None
    guard_setting: str = "defaults"
    jobs: int = 1
    child_command: list[str] = field(default_factory=list)
    command: str = "oral choose"
    #: set by :func:`load_source` when the paper's known classes are the strict protocol's
    paper_same: bool = False

    def protocol_of_fits(self) -> str:
        """The protocol a fit's key names (a snapshot's labels are always "ours")."""
        return self.protocol if self.dataset else "ours"


@dataclass
class ChoiceOutcome:
    """What a choice run produced: the graph's ``name``, ``choice``
    (:func:`harness.proxy.choose_setting`'s answer; None when only fits were asked), the files
    written (``table`` and ``path``, the JSON whose ``set`` list the nightly run applies) and the
    table's ``lines``."""

    name: str
    choice: object | None = None
    table: Path | None = None
    path: Path | None = None
    lines: list[str] = field(default_factory=list)


class ProxyTaskRefused(ValueError):
    """The graph cannot give the asked proxy task (e.g. ``hide="extremes"`` with fewer than three
    known classes); the message says why."""


class UnseenCandidate(ValueError):
    """A candidate that sets only fields the proxy cannot see: the steps that finish the answer
    after training (:data:`oral_core.config.AFTER_TRAINING`) leave every epoch's class ids, which
    the proxy scores, as they are, so it would tie the defaults after all its fits."""


def refuse_unseen(candidates: dict[str, dict]) -> None:
    """Raise :class:`UnseenCandidate` (one line) for the first candidate whose overrides are all
    read only after training; a candidate that also changes training is scored as any other.
    Asked only when the choice scores the epochs (``score="mean"``)."""
    from oral_core.config import AFTER_TRAINING

    for name, overrides in candidates.items():
        if overrides and set(overrides) <= set(AFTER_TRAINING):
            raise UnseenCandidate(
                f"{name}: sets only what finishes the answer after training "
                f"({', '.join(overrides)}); the proxy's mean over the last epochs does not see "
                "it, so it would tie the defaults: score the answer as the fit ends "
                "(--score final)")


class Labels:
    """What the proxy scores against: a snapshot's labels (-1 unlabelled) and known classes."""

    def __init__(self, y, num_classes: int):
        self.y, self.num_classes = y, num_classes


@dataclass
class Source:
    """One graph to choose for: ``name`` (the table's), ``data`` (part of every fit's key), the
    inputs, ``labels`` (what the proxy scores against), ``task(seed)`` (the proxy task),
    ``full(seed)`` (the full task's ``(train, val)`` labels, for the known-class guard) and
    ``prior`` (the class number given to ORAL, or None)."""

    name: str
    data: str
    x: object
    edges: object
    labels: object
    task: Callable
    full: Callable
    prior: int | None


def same_known(graph) -> bool:
    """Whether the paper protocol's known classes and labelled nodes are the strict protocol's
    (BlogCatalog: the first four classes either way)."""
    from harness.experiment import protocol_split

    ours, paper = protocol_split(graph, 0, "ours")[0], protocol_split(graph, 0, "paper")[0]
    return (ours.known_classes.tolist() == paper.known_classes.tolist()
            and bool((ours.train_mask == paper.train_mask).all())
            and bool((ours.val_mask == paper.val_mask).all()))


def load_source(req: ChoiceRequest, say: Say) -> Source:
    """The :class:`Source` of a dataset or a snapshot (the snapshot checked by its contracts;
    raises :class:`~oral_core.datasets.DatasetNotFound` or
    :class:`~data_contracts.snapshots.SnapshotError` with a one-line reason)."""
    import torch

    from harness import proxy

    if req.dataset is not None:
        from harness.experiment import prepare, protocol_split

        prep = prepare(req.dataset, req.data_dir)
        g = prep.graph
        if req.protocol == "paper" and same_known(g):
            req.protocol, req.paper_same = "ours", True  # the same proxy task, the same fits
            say(f"{req.dataset}: the paper's known classes are the strict protocol's, so its "
                "proxy task is the same (fits keyed as the strict ones)")
        stem = (Path(req.dataset).stem if ("/" in req.dataset or "." in req.dataset)
                else req.dataset)
        name = f"{stem}-{'prior' if req.prior else 'noprior'}" + (
            "-paper" if req.protocol == "paper" or req.paper_same else "")

        def full(seed):
            split = protocol_split(g, seed, req.protocol)[0]
            return split.train_labels(g.y), split.val_labels(g.y)
        return Source(name, stem, prep.x, g.edge_index, g,
                      lambda seed: proxy.proxy_task(g, seed, req.hide, True, req.protocol), full,
                      g.num_classes if req.prior else None)
    from data_contracts import contracts, snapshots as snap
    from tasks.fitting import fit_inputs, split_labelled

    path = snap.select_snapshots(req.snapshots, req.graph, date=req.date)[0]  # default: latest
    files = snap.read_snapshot_files(path)
    contracts.require_valid(files)
    s = snap.snapshot_from_files(files)
    x, edges, *_ = fit_inputs(s, "auto", 0)
    y = torch.from_numpy(s.labels).long()
    known = torch.unique(y[y >= 0])
    labels = Labels(y, len(s.class_names))

    def task(seed):
        train, val = split_labelled(s.labels, seed)
        return proxy.task_from_labels(y, torch.from_numpy(train) >= 0, torch.from_numpy(val) >= 0,
                                      known, labels.num_classes, seed, req.hide,
                                      disjoint_val=True)

    def full(seed):  # as `oral run` trains: every labelled node of every known class
        train, val = split_labelled(s.labels, seed)
        return torch.from_numpy(train).long(), torch.from_numpy(val).long()
    return Source(req.graph, f"{req.graph}@{files.content_hash}", x, edges, labels, task, full,
                  None)


def device_name(key: dict) -> str:
    """Where a fit ran ("cpu" or the CUDA card's name), recorded beside its seconds: the device
    changes which basin a seed lands in (benchmarks/results/stability/README.md), so fits from
    two devices should not be paired: keep them in separate ``out`` folders."""
    import torch

    from oral_core.trainer import select_device

    device = select_device(key["config"].get("device", "auto"))
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def write_json_atomically(path: Path, payload: dict) -> None:
    """``payload`` as ``path``, written under a hidden name and renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)


def fit_row(folder: Path, caches: list[Path], key: dict, seed: int, rule: str,
            fit) -> tuple[dict, bool]:
    """The ``rule`` row of one proxy fit and whether it was trained now: from a matching seed
    file under ``caches`` (``out`` and every ``cache``), else trained (``fit()``) and saved as
    ``folder/seed_<seed>.json``."""
    from harness import proxy

    row = proxy.find_seed(caches, key, seed, rule)
    if row is not None:
        return row, False
    t = time.perf_counter()
    rows = fit()
    write_json_atomically(folder / f"seed_{seed}.json", {
        "key": key, "seconds": round(time.perf_counter() - t, 1), "device": device_name(key),
        "rows": rows})
    return next(r for r in rows if r["rule"] == rule), True


def fit_in_processes(req: ChoiceRequest, jobs: list[tuple[str, list[str]]], say: Say) -> None:
    """Every missing fit in its own child process (``req.child_command`` plus the job's
    arguments), ``req.jobs`` at a time; ``jobs`` holds ``(what, extra arguments)``, e.g.
    ``("seed 3", ["--fit-seed", "3"])``. The fits land under ``out`` and the run that follows
    reuses them (a fit whose process failed is made there instead, so a failure costs time,
    never a result)."""
    if not jobs:
        return
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // req.jobs)))
    say(f"  fitting {', '.join(what for what, _ in jobs)} in {min(req.jobs, len(jobs))} "
        f"processes ({env['OMP_NUM_THREADS']} threads each)")
    waiting, running = list(jobs), {}
    while waiting or running:
        while waiting and len(running) < req.jobs:
            what, extra = waiting.pop(0)
            err = tempfile.TemporaryFile("w+")  # a file, not a pipe: progress bars never block
            running[what] = (subprocess.Popen([*req.child_command, *extra], env=env,
                                              cwd=os.getcwd(), stdout=subprocess.DEVNULL,
                                              stderr=err, text=True),
                             err, time.perf_counter())
        time.sleep(0.2)
        for what, (proc, err, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[what]
            took = f"{time.perf_counter() - started:.0f}s"
            if proc.returncode == 0:
                say(f"  {what}: fitted in its own process ({took})")
            else:
                err.seek(0)
                lines = [line.strip() for line in err.read().replace("\r", "\n").splitlines()
                         if line.strip()]
                say(f"  {what}: its process failed (exit {proc.returncode}: "
                    f"{lines[-1] if lines else 'no message'}); fitting it here")
            err.close()


def guard_accuracy(req: ChoiceRequest, src: Source, label: str, seed: int, say: Say) -> float:
    """The known-class validation accuracy of setting ``label`` on ``seed``'s full task (said):
    read from a saved fit, else fitted and saved as
    ``<out>/<name>/<setting>/guard_seed_<s>.json``."""
    from harness import proxy

    key = proxy.guard_key(req.configs[label], req.protocol_of_fits(), src.data)
    acc = proxy.find_guard([req.out, *req.cache], key, seed)
    if acc is not None:
        say(f"  guard {label} seed {seed}: known-class validation accuracy {acc:.1f}% (reused)")
        return acc
    t = time.perf_counter()
    acc = proxy.full_task_accuracy(src.x, src.edges, *src.full(seed), seed, req.configs[label])
    write_json_atomically(req.out / src.name / label.replace("/", "_") / f"guard_seed_{seed}.json",
                          {"key": key, "val_acc": acc,
                           "seconds": round(time.perf_counter() - t, 1),
                           "device": device_name(key)})
    say(f"  guard {label} seed {seed}: known-class validation accuracy {acc:.1f}% "
        f"({time.perf_counter() - t:.0f}s)")
    return acc


def known_class_guard(req: ChoiceRequest, src: Source, say: Say):
    """The known-class guard of this run (:func:`harness.proxy.keeps_known_classes`): asked
    about a candidate, it reads or fits the full task for it and the defaults on seeds 0..G-1
    (:func:`guard_accuracy`; ``oral reproduce``'s ORAL rows under ``cache`` answer too; with
    ``jobs`` > 1 the missing fits run that many at a time in ``--fit-guard`` child processes) and
    returns its verdict; None when ``guard_seeds`` is 0."""
    from harness import proxy

    if req.guard_seeds == 0:
        return None
    folders = [req.out, *req.cache]
    read: dict[str, dict[int, float]] = {}

    def accuracies(label: str) -> dict[int, float]:
        if label not in read:
            read[label] = {seed: guard_accuracy(req, src, label, seed, say)
                           for seed in range(req.guard_seeds)}
        return read[label]

    def verdict(label: str) -> dict:
        if req.jobs > 1:
            fit_in_processes(req, [
                (f"guard {lab} seed {seed}", ["--fit-guard", str(seed), "--guard-setting", lab])
                for lab in ("defaults", label) if lab not in read
                for seed in range(req.guard_seeds)
                if proxy.find_guard(folders, proxy.guard_key(req.configs[lab],
                                                             req.protocol_of_fits(), src.data),
                                    seed) is None], say)
        got = proxy.keeps_known_classes(accuracies("defaults"), accuracies(label), req.guard_drop)
        say(f"  guard {label}: known-class validation accuracy {got['val_change']:+.1f} "
            f"(s.e. {got['val_se']:.1f}) against the defaults: "
            + ("kept" if got["kept"] else
               f"refused (clearly more than {req.guard_drop:g} points below)"))
        return got | {"max_drop": req.guard_drop}
    return verdict


def choose_settings(req: ChoiceRequest, say: Say = say_line) -> ChoiceOutcome:
    """The choice for one graph (see the module): every setting's proxy fits on every seed, the
    choice by :func:`harness.proxy.choose_setting` with the known-class guard, and
    ``<out>/<name>.md`` (the table) and ``<out>/<name>.json`` (the choice) written. With
    ``fit_seed`` or ``fit_guard`` only those fits are made and nothing else is written. Raises
    :class:`ProxyTaskRefused` for a proxy task the graph cannot give, :class:`UnseenCandidate`
    (before any work) for a candidate the proxy cannot see, and what :func:`load_source`
    raises."""
    from harness import proxy

    if req.score != "final":
        refuse_unseen(req.candidates)
    src = load_source(req, say)
    name = src.name
    if req.guard_drop is None:
        req.guard_drop = proxy.GUARD_DROP
    seeds = sorted(set(req.fit_seed)) if req.fit_seed else list(range(req.seeds))
    try:
        tasks = {seed: src.task(seed) for seed in seeds}
    except ValueError as err:
        raise ProxyTaskRefused(str(err)) from None
    epochs = req.configs["defaults"].epochs
    rule = proxy.score_rule(req.score, epochs, req.window)
    say(f"oral choose {name}: {len(req.configs)} settings x {req.seeds} seeds, hide {req.hide}, "
        f"score {rule} (labelled nodes only)")
    keys = {}
    for label, config in req.configs.items():
        if src.prior is not None:
            config.prior_num_classes = src.prior
        keys[label] = proxy.run_key(config, req.hide, req.protocol_of_fits(), src.data)
    folders = [req.out, *req.cache]
    if req.fit_guard:
        for seed in sorted(set(req.fit_guard)):
            guard_accuracy(req, src, req.guard_setting, seed, say)
        return ChoiceOutcome(name)
    if req.jobs > 1 and not req.fit_seed:
        missing = [seed for seed in seeds if any(
            proxy.find_seed(folders, key, seed, rule) is None for key in keys.values())]
        fit_in_processes(req, [(f"seed {seed}", ["--fit-seed", str(seed)]) for seed in missing],
                         say)
    scores: dict[str, dict[int, float]] = {}
    for label, config in req.configs.items():
        folder = req.out / name / label.replace("/", "_")
        scores[label] = {}
        for seed in seeds:
            t = time.perf_counter()
            row, trained = fit_row(
                folder, folders, keys[label], seed, rule,
                lambda c=config, s=seed: proxy.window_rows(src.x, src.edges, src.labels, tasks[s],
                                                          s, c, req.window))
            scores[label][seed] = row["all"]
            say(f"  {label} seed {seed}: proxy All {row['all']:.1f} "
                f"({f'{time.perf_counter() - t:.0f}s' if trained else 'reused'})")
    if req.fit_seed:
        say(f"oral choose {name}: fitted seed(s) {', '.join(map(str, seeds))} under {req.out}; "
            "no table: run again without --fit-seed once every seed is fitted")
        return ChoiceOutcome(name)
    choice = proxy.choose_setting(scores, req.candidates, guard=known_class_guard(req, src, say))
    lines = report_lines(name, req, scores, choice, rule)
    req.out.mkdir(parents=True, exist_ok=True)
    table = req.out / f"{name}.md"
    table.write_text("\n".join(lines) + "\n")
    path = req.out / f"{name}.json"
    path.write_text(json.dumps({
        "graph": name, "chosen": choice.name,
        "set": [f"{k}={v}" for k, v in (req.base | choice.overrides).items()], "rule": rule,
        "hide": req.hide,
        "protocol": ("paper (the strict task)" if req.paper_same else req.protocol)
        if req.dataset else "snapshot labels", "data": src.data,
        "overrides": choice.overrides, "seeds": req.seeds,
        "guard_seeds": req.guard_seeds, "candidates": choice.rows}, indent=1) + "\n")
    return ChoiceOutcome(name, choice, table, path, lines)


def guard_cell(row: dict) -> str:
    """A candidate's known-class guard in the table: its change in known-class validation
    accuracy against the defaults (full task), or "–" when the guard was not asked."""
    got = row.get("guard")
    if got is None:
        return "–"
    return (f"{got['val_change']:+.1f} ({got['val_se']:.1f}), {got['seeds']} seeds: "
            + ("kept" if got["kept"] else "**refused**"))


def report_lines(name: str, req: ChoiceRequest, scores: dict, choice, rule: str) -> list[str]:
    """The choice's table (``<out>/<name>.md``): every candidate's paired gain, bound and guard."""
    ref = scores["defaults"]
    guard = ("; the winner must also pass the known-class guard: on the full task (every known "
             f"class labelled, seeds 0-{req.guard_seeds - 1}) its known-class validation "
             "accuracy may not be clearly (mean + s.e.) more than "
             f"{req.guard_drop:g} points below the defaults', else the next bound is tried"
             if req.guard_seeds else "; the known-class guard was off (`--guard-seeds 0`)")
    lines = [f"# Settings for {name}, chosen by the held-out-class proxy", "",
             f"Command: `{req.command}`. Hidden: `{req.hide}`; score: `{rule}` ("
             + ("mean proxy All over the last epochs" if req.score == "mean" else
                "proxy All of the answer as the fit ends, after the steps that finish it")
             + "; labelled nodes only). A candidate replaces the defaults when "
             "its gain, paired by seed, minus one standard error is above 0 (the highest such "
             f"bound wins){guard}.",
             "", f"defaults: proxy All {sum(ref.values()) / len(ref):.2f} over {len(ref)} seeds",
             "",
             "| candidate | seeds | proxy All | gain (s.e.) | gain − s.e. | ahead | known-class "
             "guard (val. acc. change, s.e.) | chosen |",
             "|---|---|---|---|---|---|---|---|"]
    for r in choice.rows:
        mine = scores[r["candidate"]]
        lines.append(f"| `{r['candidate']}` | {r['seeds']} | {sum(mine.values()) / len(mine):.2f} "
                     f"| {r['gain']:+.2f} ({r['se']:.2f}) | {r['bound']:+.2f} | "
                     f"{r['ahead']}/{r['seeds']} | {guard_cell(r)} | "
                     f"{'yes' if r['candidate'] == choice.name else ''} |")
    refused = [r["candidate"] for r in choice.rows if not r.get("guard", {"kept": True})["kept"]]
    why = (f" (the known-class guard refused {', '.join(f'`{c}`' for c in refused)})" if refused
           else "" if choice.overrides else " (no candidate's bound above 0)")
    lines += ["", f"Chosen: **{choice.name}**{why}"]
    return lines
