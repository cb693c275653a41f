"""The ``oral`` command line.

Subcommands are added as the product grows; each imports only what it needs, so ``oral --help``
stays fast.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# each command module is light: its heavy imports happen inside the commands
from cli import choose, label, logs, pipeline, report, snapshots, validate
from cli.common import fanout_options, listed, start_pipeline


#: the methods ``oral reproduce --method`` runs (one, a comma list, or the option repeated)
METHODS = ("oral", "oral_no_pan", "oral_no_pol", "opennc", "gcn", "vgae_kmeans", "gcd")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from oral_core.datasets import DatasetNotFound
    from harness.reproduction import markdown_path, reproduce_tables

    from flows import fanout
    from cli.options import OptionError, check_config, check_device, parse_set

    datasets, methods = listed(args.dataset), listed(args.method) or ["oral"]
    address = None
    try:  # every option checked before any work starts: one line naming it, exit 2
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not datasets:
            raise OptionError(f"--method {unknown[0]}: unknown method; choose from "
                              f"{', '.join(METHODS)}" if unknown else
                              f"--dataset {' '.join(args.dataset)}: no dataset named")
        fanout.check_workers(args.workers)
        address = fanout.resolve_address(args.scheduler)
        overrides, sources = parse_set(args.set or [])
        if args.epochs is not None:
            overrides["epochs"], sources["epochs"] = args.epochs, f"--epochs {args.epochs}"
        if args.device:
            overrides["device"], sources["device"] = args.device, f"--device {args.device}"
            check_device(args.device, f"--device {args.device}")
        base = check_config(overrides | {"progress": not args.quiet}, sources)
        if args.seeds < 1 or args.first_seed < 0:
            raise OptionError(f"--seeds {args.seeds} --first-seed {args.first_seed}: need at least "
                              "one seed and a first seed >= 0")
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results = args.out or Path("benchmarks") / "results"  # relative to the current directory
    priors = [False, True] if args.both_priors else [args.prior]
    if args.workers is not None or address:  # asked for: one task per seed on a Dask cluster
        code = _reproduce_fanout(args, datasets, methods, seeds, priors, base, results, address)
        if code is not None:
            return code
    else:
        try:
            reproduce_tables(datasets, methods, seeds, priors, base, args.data_dir,
                             results=results, echo=print, refresh=args.refresh,
                             protocol=args.protocol, known=args.known,
                             on_summary=lambda s: _print_summary(s["method"], s["dataset"],
                                                                 s["prior"], s, s["classes_true"]))
        except DatasetNotFound as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    from harness.experiment import protocol_tag
    md = markdown_path(results, protocol_tag(args.protocol, args.known))
    print(f"tables: {results / 'reproduction.csv'} and {md}")
    return 0


def _print_summary(method: str, dataset: str, prior: bool, s: dict, classes_true) -> None:
    print(f"{method} {dataset} prior={'yes' if prior else 'no'} over {s['seeds']} seeds: "
          f"All {s['all_mean']:.2f} ± {s['all_std']:.2f} | Known {s['known_mean']:.2f} ± "
          f"{s['known_std']:.2f} | Novel {s['novel_mean']:.2f} ± {s['novel_std']:.2f} | "
          f"classes {s['classes_est_mean']:.2f} (true {classes_true})")


def _reproduce_fanout(args, datasets, methods, seeds, priors, base, results, address) -> int | None:
    """``oral reproduce`` with ``--workers`` / ``--scheduler`` (or ``ORAL_DASK_ADDRESS``): every
    (method, dataset, prior, seed) as one Prefect task on a Dask cluster
    (:func:`flows.fanout.reproduce`), which also writes the tables. None when it went through
    (failed seeds are listed as failed), else the exit status."""
    from oral_core.datasets import DatasetNotFound

    from flows import fanout
    from flows.settings import flow_runs_started_here
    start_pipeline(None)  # Prefect's home and the log file under ./state (or $ORAL_STATE_DIR)
    workers = args.workers or 2
    print(f"ORAL reproduction fan-out: {', '.join(methods)} on {', '.join(datasets)}, priors "
          f"{'/'.join('yes' if p else 'no' for p in priors)}, protocol {args.protocol}, known "
          f"classes {args.known}, seeds {seeds[0]}..{seeds[-1]}, on "
          f"{address or f'a local Dask cluster of {workers} worker processes'}")
    config = base.to_dict() | {"progress": False}  # no progress bars from worker processes
    try:
        with flow_runs_started_here():
            out = fanout.reproduce(datasets, methods, seeds, priors, config, args.data_dir,
                                   results, protocol=args.protocol, known=args.known,
                                   refresh=args.refresh, address=address, workers=workers)
    except DatasetNotFound as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for skip in out["skipped"]:
        print(f"{skip['method']} {skip['dataset']} prior={'yes' if skip['prior'] else 'no'}: "
              f"skipped: {skip['reason']}")
    for t in out["tasks"]:
        where = f" (pid {t['pid']} on {t['host']})" if t.get("pid") else ""
        head = f"{t['method']} {t['dataset']} prior={'yes' if t['prior'] else 'no'}"
        if t["failed"]:
            print(f"{head} seed {t['seed']}: FAILED: {t['failed']}{where}")
        else:
            print(f"{head} {t['lines'][-1] if t['lines'] else ''}{where}")
    for s in out["summaries"]:
        _print_summary(s["method"], s["dataset"], s["prior"], s, s["classes_true"])
    return 1 if any(t.get("broken") for t in out["tasks"]) else None


class StrictParser(argparse.ArgumentParser):
    """An argument parser that refuses abbreviated options (``--epoch`` is not ``--epochs``).
    Sub-commands inherit it: ``add_subparsers`` builds its parsers from the parent's class."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """A refused command line is one ``error:`` line naming the command, and exit status 2
        (argparse prints the whole usage first)."""
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog="oral", description="ORAL novel class discovery on graphs.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log progress details, and print tracebacks on the terminal (they "
                             "always go to <state>/logs/oral.log)")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "reproduce", help="reproduce the paper's experiments (resumable ten-seed sweeps)",
        description="Train and score ORAL (or an ablation) on a benchmark dataset over several seeds."
                    " Finished seeds are kept under <out>/runs and skipped on rerun.")
    rep.add_argument("--dataset", required=True, action="append",
                     help="cora, amazonphoto, blogcatalog, or a path to a file of those formats; "
                          "several: a comma list or the option repeated")
    rep.add_argument("--seeds", type=int, default=10, help="number of seeds (default 10)")
    rep.add_argument("--first-seed", type=int, default=0)
    rep.add_argument("--prior", action="store_true", help="give ORAL the true number of classes")
    rep.add_argument("--both-priors", action="store_true", help="run without and with the prior")
    rep.add_argument("--method", action="append", default=None,
                     help=f"{', '.join(METHODS)} (default oral); several: a comma list or the "
                          "option repeated")
    rep.add_argument("--protocol", choices=["ours", "paper"], default="ours",
                     help="ours (default): lowest class ids known, only unlabelled nodes scored; "
                          "paper: the paper's known classes, every node outside the training set "
                          "scored (validation nodes included)")
    rep.add_argument("--known", choices=["default", "random"], default="default",
                     help="known classes: the protocol's choice, or a seeded random choice per seed")
    rep.add_argument("--epochs", type=int, default=None, help="override the number of epochs")
    rep.add_argument("--device", default=None, help="auto (default), cpu or cuda")
    rep.add_argument("--data-dir", default=None, help="dataset folder (else $ORAL_DATA_DIR)")
    rep.add_argument("--out", default=None, type=__import__("pathlib").Path,
                     help="results folder: per-seed files under <out>/runs, reproduction.csv and "
                          "reproduction*.md (default benchmarks/results, relative to the current "
                          "directory)")
    rep.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override any ORALConfig field, e.g. --set gamma=0.4")
    rep.add_argument("--quiet", action="store_true", help="no per-epoch progress bar")
    rep.add_argument("--refresh", action="store_true",
                     help="run again finished seeds whose files lack a score this version records")
    fanout_options(rep, "seed")
    rep.set_defaults(func=cmd_reproduce)
    for commands in (pipeline, snapshots, validate, choose, label, report):
        commands.register(sub)
    parser.commands = sub.choices  # each command's parser, to refuse in its own name
    return parser


def parse(parser: StrictParser, argv: list[str] | None) -> argparse.Namespace:
    """The command line parsed; an unknown option is refused by the command it was given to
    (``oral run ... --epoch 5``: ``oral run``'s usage, not the top level's)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = parser.commands.get(args.command, parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for commands that start children
    # one line per log record on the terminal, tracebacks only in the log file (or with -v)
    logs.setup_console(args.verbose)
    try:
        return args.func(args)
    except BrokenPipeError:
        return reader_gone()
    except Exception as err:  # noqa: BLE001 - unexpected: one line, the traceback in the log
        return logs.report_unexpected(err, args.command)
    finally:
        logs.close_log_file()


def reader_gone() -> int:
    """The reader of the output went away (``oral sql ... | head -2``): not an error. Standard
    output is pointed at the null device so that the interpreter's last flush of the closed
    pipe cannot fail at exit; the command ends quietly with status 0."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file behind stdout (a test's capture)
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
