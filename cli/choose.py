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
import sys
from pathlib import Path

from flows.choice import DEFAULT_CANDIDATES, FINAL_CANDIDATES, candidate_name, default_candidates

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
                   help="a setting to try against the defaults (repeatable; default: "
                        + ", ".join(candidate_name(c) for c in DEFAULT_CANDIDATES)
                        + "; with --score final also "
                        + ", ".join(candidate_name(c) for c in FINAL_CANDIDATES) + ")")
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
    p.add_argument("--score", choices=["mean", "final"], default="mean",
                   help="what a fit scores: mean, the last WINDOW epochs' answers (default); "
                        "final, the answer as the fit ends, after the steps that finish it (the "
                        "known head, the floor, the novel re-cut: candidates setting only those "
                        "need it)")
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


def _candidates(items: list[str] | None, score: str = "mean") -> dict[str, dict]:
    """``{name: overrides}`` of the ``--candidate`` options (one-line errors via parse_set); none
    named: the defaults for ``score`` (:func:`flows.choice.default_candidates`)."""
    from cli.options import OptionError, parse_set

    if not items:
        return {candidate_name(c): dict(c) for c in default_candidates(score)}
    out = {}
    for item in items:
        parts = [p.strip() for p in item.split(",") if p.strip()]
        if not parts:
            raise OptionError(f"--candidate {item!r}: give KEY=VALUE[,KEY=VALUE]")
        overrides, _ = parse_set(parts)
        out[candidate_name(overrides)] = overrides
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
    candidates = _candidates(args.candidate, args.score)
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


def cmd_choose(args) -> int:
    """Check the options, hand the choice to :func:`flows.choice.choose_settings`, print where
    it went and what to pass on."""
    from cli.options import OptionError

    try:
        base, candidates, configs = _check(args)
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from data_contracts.snapshots import SnapshotError
    from flows.choice import ChoiceRequest, ProxyTaskRefused, UnseenCandidate, choose_settings
    from oral_core.datasets import DatasetNotFound

    if args.out is None:
        from flows.settings import Settings

        args.out = Settings.from_env(None).state_dir / "choose"
    req = ChoiceRequest(
        configs=configs, candidates=candidates, base=base, out=args.out, dataset=args.dataset,
        graph=args.graph, snapshots=args.snapshots, date=args.date, data_dir=args.data_dir,
        prior=args.prior, protocol=args.protocol, hide=args.hide, seeds=args.seeds,
        window=args.window, score=args.score, guard_seeds=args.guard_seeds, guard_drop=args.guard_drop,
        cache=list(args.cache), fit_seed=args.fit_seed, fit_guard=args.fit_guard,
        guard_setting=args.guard_setting, jobs=args.jobs,
        child_command=[sys.executable, "-m", "cli.main", *_child_argv(args.argv)],
        command=" ".join(["oral", *args.argv]))
    try:
        outcome = choose_settings(req)
    except (DatasetNotFound, SnapshotError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except UnseenCandidate as err:  # refused by the service before any fit
        print(f"error: --candidate {err}", file=sys.stderr)
        return 2
    except ProxyTaskRefused as err:  # e.g. extremes with fewer than three known classes
        print(f"error: --hide {args.hide}: {err}", file=sys.stderr)
        return 2
    if outcome.choice is None:  # --fit-seed / --fit-guard: fits only
        return 0
    print("\n".join(outcome.lines))
    choice = outcome.choice
    if choice.overrides:
        flags = " ".join(f"--set {k}={v}" for k, v in choice.overrides.items())
        print(f"choice: {outcome.path}: {choice.name}; " + (
            f"nightly runs of {args.graph} apply it when it is in their <state>/choose (or pass "
            f"{flags})" if args.graph else f"pass {flags} to oral reproduce"))
    else:
        refused = [r["candidate"] for r in choice.rows if not r.get("guard", {"kept": True})["kept"]]
        print(f"choice: {outcome.path}: the defaults (" + (
            f"the known-class guard refused {', '.join(refused)}" if refused else
            "no candidate cleared its standard error") + ")")
    return 0
