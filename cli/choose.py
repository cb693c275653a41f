"""``oral choose``: settings for one graph, chosen by the held-out-class proxy (labelled nodes only).

The paper fixes its settings for every graph; how strongly pseudo-label learning should reinforce
itself turned out to depend on the graph (the lever table, docs/method.md). ``oral choose`` measures that
on the user's own graph without reading one unlabelled node's class: the largest and the smallest
known class are hidden (``--hide extremes``), ORAL trains on the rest once per seed and setting,
and the proxy scores how well the hidden classes are discovered and the visible ones kept. A
candidate replaces the defaults only when its gain over them, paired by seed, stays above 0 at
one standard error below its mean (:func:`harness.proxy.choose_setting`), and when it passes the
known-class guard: on the full task (every known class labelled, seeds 0..G-1) its known-class
validation accuracy may not be clearly more than 20 points below the defaults' (else the next
candidate by bound is asked; :func:`harness.proxy.keeps_known_classes`).

    oral choose --dataset cora [--prior] --seeds 5
    oral choose --graph papers --snapshots data/snapshots [--date 2026-11-20] --seeds 5

Every fit is a seed file under ``--out`` (rerunning reuses it; ``--cache DIR`` also reuses
matching fits of earlier proxy runs, e.g. ``benchmarks/results/epoch_vote``); the table goes to
``<out>/<name>.md`` and the choice to ``<out>/<name>.json``, whose ``set`` list is what to pass
to ``oral run`` / ``oral reproduce`` as ``--set``. ``--fit-seed S`` fits one seed of every
setting and writes no table, so several processes (or machines sharing a folder) can split the
fits; the run without it then only reads them. ``--jobs N`` does that split on one machine.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

#: the settings tried by default: the levers of benchmarks/results/lever_table/lever_table.md whose proxy
#: bound (gain - s.e.) is above 0 on at least one of our graphs: the two that scale how much
#: pseudo-label learning (Eq. 7-11) reinforces itself and a sharper group-aware attention (Eq. 5
#: over a temperature of 0.3). opennc_losses=true also has such a bound (AmazonPhoto with the
#: prior) but is left out: on the full task it collapsed the known classes (validation accuracy
#: 35-57% against 95-97% at the defaults, docs/method.md "Open choices"), which the proxy cannot see
DEFAULT_CANDIDATES = ("gamma=0.1", "pseudo_label_groups=novel", "attention_temperature=0.3")
#: :data:`harness.proxy.HIDE_MODES` (kept literal so building the parser imports no torch)
HIDE_CHOICES = ("last", "rotate", "extremes")


def register(sub) -> None:
    p = sub.add_parser(
        "choose", help="choose settings for one graph with the held-out-class proxy (labelled "
                       "nodes only)",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="a benchmark dataset (cora, amazonphoto, blogcatalog, ...)")
    src.add_argument("--graph", help="a graph's snapshots (with --snapshots)")
    p.add_argument("--snapshots", type=Path, help="snapshot root (with --graph)")
    p.add_argument("--date", help="snapshot date YYYY-MM-DD (default: the latest)")
    p.add_argument("--prior", action="store_true",
                   help="(--dataset) give ORAL the true number of classes; for snapshots use "
                        "--set prior_num_classes=N")
    p.add_argument("--candidate", action="append", metavar="KEY=VALUE[,KEY=VALUE]",
                   help=f"a setting to try against the defaults (repeatable; default: "
                        f"{', '.join(DEFAULT_CANDIDATES)})")
    p.add_argument("--seeds", type=int, default=5,
                   help="proxy seeds per setting (default 5; at least 2, the gain is paired)")
    p.add_argument("--fit-seed", type=int, action="append", metavar="S",
                   help="fit only seed S of every setting and write no table (repeatable): spreads "
                        "one choice over processes or machines; a later run without it reuses "
                        "their seed files from --out or --cache")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="fit N seeds at once, each in its own `oral choose --fit-seed` process "
                        "(default 1: one after another in this process); each process gets "
                        "cores/N threads unless OMP_NUM_THREADS is set")
    p.add_argument("--guard-seeds", type=int, default=3, metavar="G",
                   help="known-class guard: before a candidate wins, it and the defaults train on "
                        "the full task (every known class labelled) on seeds 0..G-1 and the "
                        "candidate must keep the known-class validation accuracy (default 3; "
                        "0 turns the guard off)")
    p.add_argument("--fit-guard", type=int, action="append", metavar="S",
                   help="fit only the known-class guard's full task on seed S (repeatable) for the "
                        "setting --guard-setting names, and write no table (what --jobs hands "
                        "its child processes; machines sharing --out can split the guard this way)")
    p.add_argument("--guard-setting", default="defaults", metavar="NAME",
                   help="with --fit-guard: the setting, `defaults` or a candidate as the table "
                        "names it (e.g. gamma=0.1)")
    p.add_argument("--guard-drop", type=float, default=None, metavar="POINTS",
                   help="the guard refuses a candidate whose validation accuracy is clearly (mean + "
                        "one s.e.) more than POINTS below the defaults' (default 20)")
    p.add_argument("--window", type=int, default=10,
                   help="score: the mean proxy All over the last WINDOW epochs (default 10)")
    p.add_argument("--hide", choices=HIDE_CHOICES, default="extremes",
                   help="which known classes play novel ones (default extremes: the largest and "
                        "the smallest together)")
    p.add_argument("--protocol", choices=["ours", "paper"], default="ours",
                   help="(--dataset) whose known classes: ours (the lowest ids) or the paper's "
                        "(oral reproduce --protocol); only labelled nodes are read either way")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="the configuration every setting starts from (e.g. attention_kernel=spmm)")
    p.add_argument("--cache", action="append", type=Path, default=[],
                   help="a folder of earlier proxy seed files to reuse where they match (read only)")
    p.add_argument("--out", type=Path, default=None,
                   help="where the fits, the table and the choice go (default <state>/choose, "
                        "<state> being $ORAL_STATE_DIR or ./state: where `oral run` reads a "
                        "graph's choice)")
    p.add_argument("--data-dir", default=None, help="dataset folder (else $ORAL_DATA_DIR)")
    p.set_defaults(func=cmd_choose)


def _candidates(items: list[str] | None) -> dict[str, dict]:
    """``{name: overrides}`` of the ``--candidate`` options (one-line errors via parse_set)."""
    from cli.options import OptionError, parse_set

    out = {}
    for item in items or DEFAULT_CANDIDATES:
        parts = [p.strip() for p in item.split(",") if p.strip()]
        if not parts:
            raise OptionError(f"--candidate {item!r}: give KEY=VALUE[,KEY=VALUE]")
        overrides, _ = parse_set(parts)
        out[",".join(f"{k}={v}" for k, v in overrides.items())] = overrides
    return out


def _check(args) -> tuple[dict, dict, dict]:
    """Every option checked before any work: (base overrides, candidates, configs by name)."""
    from cli.options import OptionError, check_config, parse_set

    if args.graph is not None and args.snapshots is None:
        raise OptionError(f"--graph {args.graph}: needs --snapshots ROOT")
    if args.dataset is not None and (args.snapshots is not None or args.date is not None):
        raise OptionError("--snapshots/--date: only with --graph (a benchmark dataset has no snapshots)")
    if args.protocol != "ours" and args.graph is not None:
        raise OptionError(f"--protocol {args.protocol}: only with --dataset (a snapshot's labels "
                          "say which classes are known)")
    if args.prior and args.graph is not None:
        raise OptionError("--prior: only with --dataset; for snapshots give --set prior_num_classes=N")
    if args.seeds < 2:
        raise OptionError(f"--seeds {args.seeds}: the gain is paired by seed, so at least 2")
    if args.jobs < 1:
        raise OptionError(f"--jobs {args.jobs}: must be at least 1")
    if args.guard_seeds < 0:
        raise OptionError(f"--guard-seeds {args.guard_seeds}: must be 0 (no guard) or more")
    if args.guard_drop is not None and not args.guard_drop >= 0:
        raise OptionError(f"--guard-drop {args.guard_drop}: must be 0 or more points")
    if args.fit_guard and args.fit_seed:
        raise OptionError("--fit-guard and --fit-seed: give one (a process fits either the proxy "
                          "or the full task)")
    outside = [s for s in args.fit_guard or [] if s < 0]
    if outside:
        raise OptionError(f"--fit-guard {outside[0]}: a seed is 0 or more")
    outside = [s for s in args.fit_seed or [] if not 0 <= s < args.seeds]
    if outside:
        raise OptionError(f"--fit-seed {outside[0]}: the seeds are 0 to {args.seeds - 1} (--seeds {args.seeds})")
    base, sources = parse_set(args.set or [])
    candidates = _candidates(args.candidate)
    configs = {"defaults": check_config(base, sources)}
    for name, overrides in candidates.items():
        configs[name] = check_config(base | overrides, sources | {
            k: f"--candidate {name}" for k in overrides})
    if args.fit_guard and args.guard_setting not in configs:
        raise OptionError(f"--guard-setting {args.guard_setting}: not one of this run's settings "
                          f"({', '.join(configs)})")
    epochs = configs["defaults"].epochs
    if not 1 <= args.window <= epochs:
        raise OptionError(f"--window {args.window}: must be between 1 and the epochs ({epochs})")
    return base, candidates, configs


class _Labels:
    """What the proxy scores against: a snapshot's labels (-1 unlabelled) and known classes."""

    def __init__(self, y, num_classes: int):
        self.y, self.num_classes = y, num_classes


class _Source:
    """One graph to choose for: ``name`` (the table's), ``data`` (part of every fit's key), the
    inputs, ``labels`` (what the proxy scores against), ``task(seed)`` (the proxy task),
    ``full(seed)`` (the full task's ``(train, val)`` labels, for the known-class guard) and
    ``prior`` (the class number given to ORAL, or None)."""

    def __init__(self, name, data, x, edges, labels, task, full, prior):
        self.name, self.data, self.x, self.edges = name, data, x, edges
        self.labels, self.task, self.full, self.prior = labels, task, full, prior


def _same_known(graph) -> bool:
    """Whether the paper protocol's known classes and labelled nodes are the strict protocol's
    (BlogCatalog: the first four classes either way)."""
    from harness.experiment import protocol_split

    ours, paper = protocol_split(graph, 0, "ours")[0], protocol_split(graph, 0, "paper")[0]
    return (ours.known_classes.tolist() == paper.known_classes.tolist()
            and bool((ours.train_mask == paper.train_mask).all())
            and bool((ours.val_mask == paper.val_mask).all()))


def _load(args) -> _Source:
    """The :class:`_Source` of a dataset or a snapshot."""
    import torch

    from harness import proxy

    if args.dataset is not None:
        from harness.experiment import prepare, protocol_split

        prep = prepare(args.dataset, args.data_dir)
        g = prep.graph
        if args.protocol == "paper" and _same_known(g):
            args.protocol = "ours"  # the same labelled nodes: the same proxy task, the same fits
            print(f"{args.dataset}: the paper's known classes are the strict protocol's, so its "
                  "proxy task is the same (fits keyed as the strict ones)", flush=True)
            args.paper_same = True
        stem = Path(args.dataset).stem if ("/" in args.dataset or "." in args.dataset) else args.dataset
        name = f"{stem}-{'prior' if args.prior else 'noprior'}" + (
            "-paper" if args.protocol == "paper" or getattr(args, "paper_same", False) else "")
        def full(seed):
            split = protocol_split(g, seed, args.protocol)[0]
            return split.train_labels(g.y), split.val_labels(g.y)
        return _Source(name, stem, prep.x, g.edge_index, g,
                       lambda seed: proxy.proxy_task(g, seed, args.hide, True, args.protocol), full,
                       g.num_classes if args.prior else None)
    from data_contracts import contracts, snapshots as snap
    from tasks.fitting import fit_inputs, split_labelled

    path = snap.select_snapshots(args.snapshots, args.graph, date=args.date)[0]  # default: latest
    files = snap.read_snapshot_files(path)
    contracts.require_valid(files)
    s = snap.snapshot_from_files(files)
    x, edges, *_ = fit_inputs(s, "auto", 0)
    y = torch.from_numpy(s.labels).long()
    known = torch.unique(y[y >= 0])
    labels = _Labels(y, len(s.class_names))

    def task(seed):
        train, val = split_labelled(s.labels, seed)
        return proxy.task_from_labels(y, torch.from_numpy(train) >= 0, torch.from_numpy(val) >= 0,
                                      known, labels.num_classes, seed, args.hide, disjoint_val=True)

    def full(seed):  # as `oral run` trains: every labelled node of every known class
        train, val = split_labelled(s.labels, seed)
        return torch.from_numpy(train).long(), torch.from_numpy(val).long()
    return _Source(args.graph, f"{args.graph}@{files.content_hash}", x, edges, labels, task, full, None)


def _fit_rows(folder: Path, caches: list[Path], key: dict, seed: int, rule: str, fit) -> tuple[dict, bool]:
    """The ``rule`` row of one proxy fit: from a matching seed file under ``caches`` (``--out``
    and every ``--cache``), else trained and saved in ``folder``."""
    from harness import proxy

    row = proxy.find_seed(caches, key, seed, rule)
    if row is not None:
        return row, False
    t = time.perf_counter()
    rows = fit()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".seed_{seed}.json.tmp"
    tmp.write_text(json.dumps({"key": key, "seconds": round(time.perf_counter() - t, 1),
                               "device": _device_name(key), "rows": rows}, indent=1))
    tmp.replace(folder / f"seed_{seed}.json")
    return next(r for r in rows if r["rule"] == rule), True


def _child_argv(argv: list[str]) -> list[str]:
    """This command's arguments without ``--jobs`` (a child fits one seed, in its own process)."""
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token == "--jobs":
            skip = True
        elif not token.startswith("--jobs="):
            out.append(token)
    return out


def _fit_in_processes(args, jobs: list[tuple[str, list[str]]]) -> None:
    """``--jobs N``: every missing fit in its own ``oral choose`` child process, N at a time;
    ``jobs`` holds ``(what, extra arguments)``, e.g. ``("seed 3", ["--fit-seed", "3"])``. The
    fits land under ``--out`` and the run that follows reuses them (a fit whose process failed is
    made there instead, so a failure costs time, never a result)."""
    import os
    import subprocess
    import tempfile

    if not jobs:
        return
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // args.jobs)))
    base = [sys.executable, "-m", "cli.main", *_child_argv(args.argv)]
    print(f"  fitting {', '.join(what for what, _ in jobs)} in {min(args.jobs, len(jobs))} processes "
          f"({env['OMP_NUM_THREADS']} threads each)", flush=True)
    waiting, running = list(jobs), {}
    while waiting or running:
        while waiting and len(running) < args.jobs:
            what, extra = waiting.pop(0)
            err = tempfile.TemporaryFile("w+")  # a file, not a pipe: progress bars never block
            running[what] = (subprocess.Popen([*base, *extra], env=env, cwd=os.getcwd(),
                                              stdout=subprocess.DEVNULL, stderr=err, text=True),
                             err, time.perf_counter())
        time.sleep(0.2)
        for what, (proc, err, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[what]
            took = f"{time.perf_counter() - started:.0f}s"
            if proc.returncode == 0:
                print(f"  {what}: fitted in its own process ({took})", flush=True)
            else:
                err.seek(0)
                lines = [line.strip() for line in err.read().replace("\r", "\n").splitlines() if line.strip()]
                print(f"  {what}: its process failed (exit {proc.returncode}: "
                      f"{lines[-1] if lines else 'no message'}); fitting it here", flush=True)
            err.close()


def _device_name(key: dict) -> str:
    """Where a fit ran ("cpu" or the CUDA card's name), recorded beside its seconds: the device
    changes which basin a seed lands in (benchmarks/results/stability/README.md), so fits from two devices should
    not be paired: keep them in separate ``--out`` folders."""
    import torch

    from oral_core.trainer import select_device

    device = select_device(key["config"].get("device", "auto"))
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def _guard_accuracy(args, src, configs: dict, folders: list[Path], label: str, seed: int) -> float:
    """The known-class validation accuracy of ``label`` on ``seed``'s full task (printed): read
    from a saved fit, else fitted and saved as ``<out>/<name>/<setting>/guard_seed_<s>.json``."""
    from harness import proxy

    key = proxy.guard_key(configs[label], args.protocol if args.dataset else "ours", src.data)
    acc = proxy.find_guard(folders, key, seed)
    if acc is not None:
        print(f"  guard {label} seed {seed}: known-class validation accuracy {acc:.1f}% (reused)", flush=True)
        return acc
    t = time.perf_counter()
    acc = proxy.full_task_accuracy(src.x, src.edges, *src.full(seed), seed, configs[label])
    folder = args.out / src.name / label.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".guard_seed_{seed}.json.tmp"
    tmp.write_text(json.dumps({"key": key, "val_acc": acc, "seconds": round(time.perf_counter() - t, 1),
                               "device": _device_name(key)}, indent=1))
    tmp.replace(folder / f"guard_seed_{seed}.json")
    print(f"  guard {label} seed {seed}: known-class validation accuracy {acc:.1f}% "
          f"({time.perf_counter() - t:.0f}s)", flush=True)
    return acc


def _guard(args, src, configs: dict, folders: list[Path]):
    """The known-class guard of this run (:func:`harness.proxy.keeps_known_classes`): asked
    about a candidate, it reads or fits the full task for it and the defaults on seeds 0..G-1
    (:func:`_guard_accuracy`; ``oral reproduce``'s ORAL rows under ``--cache`` answer too; with
    ``--jobs N`` the missing fits run N at a time in ``--fit-guard`` child processes) and returns
    its verdict; None when ``--guard-seeds 0``."""
    from harness import proxy

    if args.guard_seeds == 0:
        return None
    protocol = args.protocol if args.dataset else "ours"
    read: dict[str, dict[int, float]] = {}

    def accuracies(label: str) -> dict[int, float]:
        if label not in read:
            read[label] = {}
            for seed in range(args.guard_seeds):
                read[label][seed] = _guard_accuracy(args, src, configs, folders, label, seed)
        return read[label]

    def verdict(label: str) -> dict:
        if args.jobs > 1:
            _fit_in_processes(args, [
                (f"guard {lab} seed {seed}", ["--fit-guard", str(seed), "--guard-setting", lab])
                for lab in ("defaults", label) if lab not in read for seed in range(args.guard_seeds)
                if proxy.find_guard(folders, proxy.guard_key(configs[lab], protocol, src.data), seed) is None])
        got = proxy.keeps_known_classes(accuracies("defaults"), accuracies(label), args.guard_drop)
        print(f"  guard {label}: known-class validation accuracy {got['val_change']:+.1f} "
              f"(s.e. {got['val_se']:.1f}) against the defaults: "
              + ("kept" if got["kept"] else f"refused (clearly more than {args.guard_drop:g} points below)"),
              flush=True)
        return got | {"max_drop": args.guard_drop}
    return verdict


def cmd_choose(args) -> int:
    from cli.options import OptionError

    try:
        base, candidates, configs = _check(args)
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from data_contracts.snapshots import SnapshotError
    from harness import proxy
    from oral_core.datasets import DatasetNotFound

    try:
        src = _load(args)
    except (DatasetNotFound, SnapshotError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    name = src.name
    if args.guard_drop is None:
        args.guard_drop = proxy.GUARD_DROP
    try:
        seeds = sorted(set(args.fit_seed)) if args.fit_seed else list(range(args.seeds))
        tasks = {seed: src.task(seed) for seed in seeds}
    except ValueError as err:  # e.g. extremes with fewer than three known classes
        print(f"error: --hide {args.hide}: {err}", file=sys.stderr)
        return 2
    if args.out is None:
        from flows.settings import Settings

        args.out = Settings.from_env(None).state_dir / "choose"
    epochs = configs["defaults"].epochs
    rule = f"mean@{epochs}:{args.window}"
    scores: dict[str, dict[int, float]] = {}
    print(f"oral choose {name}: {len(configs)} settings x {args.seeds} seeds, hide {args.hide}, "
          f"score {rule} (labelled nodes only)", flush=True)
    keys = {}
    for label, config in configs.items():
        if src.prior is not None:
            config.prior_num_classes = src.prior
        keys[label] = proxy.run_key(config, args.hide, args.protocol if args.dataset else "ours", src.data)
    folders = [args.out, *args.cache]
    if args.fit_guard:
        label = args.guard_setting
        for seed in sorted(set(args.fit_guard)):
            _guard_accuracy(args, src, configs, folders, label, seed)
        return 0
    if args.jobs > 1 and not args.fit_seed:
        missing = [seed for seed in seeds if any(
            proxy.find_seed(folders, key, seed, rule) is None for key in keys.values())]
        _fit_in_processes(args, [(f"seed {seed}", ["--fit-seed", str(seed)]) for seed in missing])
    for label, config in configs.items():
        key = keys[label]
        folder = args.out / name / label.replace("/", "_")
        scores[label] = {}
        for seed in seeds:
            t = time.perf_counter()
            row, trained = _fit_rows(
                folder, folders, key, seed, rule,
                lambda c=config, s=seed: proxy.window_rows(src.x, src.edges, src.labels, tasks[s], s,
                                                          c, args.window))
            scores[label][seed] = row["all"]
            print(f"  {label} seed {seed}: proxy All {row['all']:.1f} "
                  f"({f'{time.perf_counter() - t:.0f}s' if trained else 'reused'})", flush=True)
    if args.fit_seed:
        print(f"oral choose {name}: fitted seed(s) {', '.join(map(str, seeds))} under {args.out}; "
              "no table: run again without --fit-seed once every seed is fitted", flush=True)
        return 0
    choice = proxy.choose_setting(scores, candidates, guard=_guard(args, src, configs, folders))
    lines = report_lines(name, args, scores, choice, rule)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")
    chosen_set = [f"{k}={v}" for k, v in (base | choice.overrides).items()]
    (args.out / f"{name}.json").write_text(json.dumps({
        "graph": name, "chosen": choice.name, "set": chosen_set, "rule": rule, "hide": args.hide,
        "protocol": ("paper (the strict task)" if getattr(args, "paper_same", False) else
                     args.protocol) if args.dataset else "snapshot labels", "data": src.data,
        "overrides": choice.overrides, "seeds": args.seeds,
        "guard_seeds": args.guard_seeds, "candidates": choice.rows}, indent=1) + "\n")
    print("\n".join(lines))
    where = args.out / f"{name}.json"
    if choice.overrides:
        flags = " ".join(f"--set {k}={v}" for k, v in choice.overrides.items())
        print(f"choice: {where}: {choice.name}; " + (
            f"nightly runs of {args.graph} apply it when it is in their <state>/choose (or pass {flags})"
            if args.graph else f"pass {flags} to oral reproduce"))
    else:
        refused = [r["candidate"] for r in choice.rows if not r.get("guard", {"kept": True})["kept"]]
        print(f"choice: {where}: the defaults (" + (
            f"the known-class guard refused {', '.join(refused)}" if refused else
            "no candidate cleared its standard error") + ")")
    return 0


def _guard_cell(row: dict) -> str:
    """A candidate's known-class guard in the table: its change in known-class validation
    accuracy against the defaults (full task), or "–" when the guard was not asked."""
    got = row.get("guard")
    if got is None:
        return "–"
    return (f"{got['val_change']:+.1f} ({got['val_se']:.1f}), {got['seeds']} seeds: "
            + ("kept" if got["kept"] else "**refused**"))


def report_lines(name: str, args, scores: dict, choice, rule: str) -> list[str]:
    ref = scores["defaults"]
    cmd = " ".join(["oral choose"] + sys.argv[2:]) if sys.argv[1:2] == ["choose"] else "oral choose"
    guard = ("; the winner must also pass the known-class guard: on the full task (every known "
             f"class labelled, seeds 0-{args.guard_seeds - 1}) its known-class validation accuracy "
             "may not be clearly (mean + s.e.) more than "
             f"{args.guard_drop:g} points below the defaults', else the next bound is tried"
             if args.guard_seeds else "; the known-class guard was off (`--guard-seeds 0`)")
    lines = [f"# Settings for {name}, chosen by the held-out-class proxy", "",
             f"Command: `{cmd}`. Hidden: `{args.hide}`; score: `{rule}` (mean proxy All over the "
             "last epochs; labelled nodes only). A candidate replaces the defaults when its gain, "
             "paired by seed, minus one standard error is above 0 (the highest such bound wins)"
             f"{guard}.",
             "", f"defaults: proxy All {sum(ref.values()) / len(ref):.2f} over {len(ref)} seeds", "",
             "| candidate | seeds | proxy All | gain (s.e.) | gain − s.e. | ahead | known-class guard "
             "(val. acc. change, s.e.) | chosen |",
             "|---|---|---|---|---|---|---|---|"]
    for r in choice.rows:
        mine = scores[r["candidate"]]
        lines.append(f"| `{r['candidate']}` | {r['seeds']} | {sum(mine.values()) / len(mine):.2f} | "
                     f"{r['gain']:+.2f} ({r['se']:.2f}) | {r['bound']:+.2f} | {r['ahead']}/{r['seeds']} | "
                     f"{_guard_cell(r)} | {'yes' if r['candidate'] == choice.name else ''} |")
    refused = [r["candidate"] for r in choice.rows if not r.get("guard", {"kept": True})["kept"]]
    why = (f" (the known-class guard refused {', '.join(f'`{c}`' for c in refused)})" if refused
           else "" if choice.overrides else " (no candidate's bound above 0)")
    lines += ["", f"Chosen: **{choice.name}**{why}"]
    return lines

