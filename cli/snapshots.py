"""``oral snapshots ...``: make snapshots (import a raw dataset, simulate an evolving graph,
generate a synthetic one). Heavy imports happen inside the commands."""
from __future__ import annotations

import argparse
import sys

_LAYOUT = "Snapshots are written as OUT/<graph>/snapshot=<YYYY-MM-DD>/{nodes,edges,truth}.parquet."


def _int_list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated class ids, got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _novel_start(items: list[str] | None) -> dict | None:
    if not items:
        return None
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--novel-start expects CLASS=PERIOD, got {item!r}")
        try:
            out[key.strip()] = int(value)
        except ValueError:
            raise ValueError(f"--novel-start {item!r}: the period must be an integer") from None
    return out


def _report(paths, extra: str = "") -> None:
    from data_contracts.importers import snapshot_summary

    for path in paths:
        s = snapshot_summary(path)
        classes = f"{s['classes']} classes" if s["classes"] is not None else "classes unknown"
        print(f"wrote {s['path']}: {s['nodes']} nodes ({s['labelled']} labelled, "
              f"{s['label_classes']} known classes), {s['edges']} edges, {classes}{extra}")


def _fail(err: Exception) -> int:
    print(f"error: {err}", file=sys.stderr)
    return 2


def _errors(datasets: bool = True) -> tuple:
    """The errors a command reports as a message and exit code 2 (bad input, not a bug).
    Evaluated only when an exception is being handled, so torch loads only if needed."""
    from data_contracts.snapshots import SnapshotError

    if not datasets:
        return (SnapshotError, ValueError)
    from oral_core.datasets import DatasetNotFound

    return (DatasetNotFound, SnapshotError, ValueError)


def cmd_import(args: argparse.Namespace) -> int:
    from data_contracts.importers import import_dataset

    try:
        path = import_dataset(args.dataset, args.out, graph=args.graph, date=args.date,
                              seed=args.seed, known_classes=args.known_classes,
                              data_dir=args.data_dir, overwrite=args.overwrite)
        _report([path])
    except _errors() as err:
        return _fail(err)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    from data_contracts.simulate import plan_simulation, simulate

    try:
        if args.dataset.strip().lower() == "synthetic":
            from data_contracts.synthetic import make_static_graph

            static = make_static_graph(args.nodes, args.classes, args.features,
                                       avg_degree=args.avg_degree, homophily=args.homophily,
                                       seed=args.seed)
            name = args.graph or "synthetic"
        else:
            from oral_core.datasets import load_dataset
            from oral_core.datasets import canonical_name

            from data_contracts.synthetic import StaticGraph

            static = StaticGraph.from_graph(load_dataset(args.dataset, args.data_dir))
            name = args.graph or canonical_name(args.dataset)
        options = dict(start_date=args.start_date, interval_days=args.interval_days,
                       known_classes=args.known_classes, novel_start=_novel_start(args.novel_start),
                       label_fraction=args.label_fraction,
                       initial_fraction=args.initial_fraction, seed=args.seed)
        plan = plan_simulation(static, args.periods, **options)
        paths = simulate(static, args.periods, args.out, name, overwrite=args.overwrite, **options)
        starts = ", ".join(f"{static.class_names[c]}@{p}" for c, p in plan.novel_start.items())
        print(f"simulated {name}: {static.num_nodes} nodes, {static.num_edges} edges, "
              f"{len(static.class_names)} classes over {args.periods} periods; novel classes "
              f"start at period: {starts}")
        _report(paths)
    except _errors() as err:
        return _fail(err)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    import time

    from data_contracts.synthetic import generate_snapshot

    try:
        began = time.perf_counter()
        path = generate_snapshot(args.out, args.graph, args.date, num_nodes=args.nodes,
                                 num_classes=args.classes, num_features=args.features,
                                 avg_degree=args.avg_degree, homophily=args.homophily,
                                 power_law_exponent=(None if args.power_law_exponent <= 0
                                                     else args.power_law_exponent),
                                 separation=args.separation, label_fraction=args.label_fraction,
                                 num_known=args.known, seed=args.seed, chunk_size=args.chunk_size,
                                 overwrite=args.overwrite)
        _report([path], f" in {time.perf_counter() - began:.1f} s")
    except _errors(datasets=False) as err:
        return _fail(err)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``snapshots`` command group to the ``oral`` parser."""
    group = sub.add_parser(
        "snapshots", help="make snapshots: import a dataset, simulate an evolving graph, generate",
        description="Make input snapshots for the pipeline. " + _LAYOUT)
    cmds = group.add_subparsers(dest="snapshots_command", required=True, metavar="COMMAND")

    imp = cmds.add_parser(
        "import", help="import a raw dataset as one labelled snapshot",
        description="Load a raw dataset and write it as one snapshot with the paper's labelling: "
                    "the floor(0.8*C) lowest classes are known (or --known-classes) and 85% of "
                    "their nodes (the split's train+validation nodes) carry their label. "
                    "truth.parquet holds every node's class. " + _LAYOUT)
    imp.add_argument("--dataset", required=True, metavar="NAME_OR_PATH",
                     help="cora, amazonphoto, blogcatalog, or a path to a .content/.npz/.mat file "
                          "or a Planetoid/LINQS folder")
    imp.add_argument("--out", required=True, metavar="DIR", help="snapshot root folder")
    imp.add_argument("--graph", default=None, help="graph name (default: the dataset's name)")
    imp.add_argument("--date", default=None, metavar="YYYY-MM-DD", help="snapshot date (default today)")
    imp.add_argument("--seed", type=int, default=0, help="seed of the labelled-node split (default 0)")
    imp.add_argument("--known-classes", type=_int_list, default=None, metavar="0,1,2",
                     help="known class ids (default: the floor(0.8*C) lowest)")
    imp.add_argument("--data-dir", default=None, metavar="DIR",
                     help="dataset folder (else $ORAL_DATA_DIR or ../shared/datasets)")
    imp.add_argument("--overwrite", action="store_true", help="replace an existing snapshot")
    imp.set_defaults(func=cmd_import)

    sim = cmds.add_parser(
        "simulate", help="simulate an evolving graph: one snapshot per period",
        description="Turn a static graph into PERIODS snapshots: known-class nodes arrive from "
                    "period 0, novel classes appear later (by default spread over the second half "
                    "of the periods) and grow; a fixed set of known-class nodes is labelled; "
                    "node ids are stable. " + _LAYOUT)
    sim.add_argument("--dataset", required=True, metavar="NAME_OR_PATH|synthetic",
                     help="cora, amazonphoto, blogcatalog, a dataset file, or 'synthetic' for a "
                          "generated graph (see --nodes, --classes)")
    sim.add_argument("--periods", type=_positive_int, required=True, help="number of snapshots")
    sim.add_argument("--out", required=True, metavar="DIR", help="snapshot root folder")
    sim.add_argument("--graph", default=None,
                     help="graph name (default: the dataset's name, or 'synthetic')")
    sim.add_argument("--start-date", default=None, metavar="YYYY-MM-DD",
                     help="date of the first snapshot (default: so that the last one is today)")
    sim.add_argument("--interval-days", type=_positive_int, default=1,
                     help="days between snapshots (default 1)")
    sim.add_argument("--seed", type=int, default=0,
                     help="seed of the simulation (and of the synthetic graph) (default 0)")
    sim.add_argument("--known-classes", type=_int_list, default=None, metavar="0,1,2",
                     help="known class ids (default: the floor(0.8*C) lowest)")
    sim.add_argument("--novel-start", nargs="+", action="extend", default=None,
                     metavar="CLASS=PERIOD",
                     help="first period of a novel class (class id or name), e.g. "
                          "--novel-start 5=2 6=4; others keep the default")
    sim.add_argument("--label-fraction", type=float, default=0.5,
                     help="fraction of known-class nodes labelled (default 0.5)")
    sim.add_argument("--initial-fraction", type=float, default=0.5,
                     help="fraction of known-class nodes present at period 0 (default 0.5)")
    sim.add_argument("--data-dir", default=None, metavar="DIR",
                     help="dataset folder (else $ORAL_DATA_DIR or ../shared/datasets)")
    sim.add_argument("--nodes", type=_positive_int, default=2000,
                     help="synthetic: number of nodes (default 2000)")
    sim.add_argument("--classes", type=_positive_int, default=5,
                     help="synthetic: number of classes (default 5)")
    sim.add_argument("--features", type=_positive_int, default=32,
                     help="synthetic: feature dimension (default 32)")
    sim.add_argument("--avg-degree", type=float, default=10.0,
                     help="synthetic: average degree (default 10)")
    sim.add_argument("--homophily", type=float, default=0.8,
                     help="synthetic: probability that an edge stays inside a class (default 0.8)")
    sim.add_argument("--overwrite", action="store_true", help="replace existing snapshots")
    sim.set_defaults(func=cmd_simulate)

    gen = cmds.add_parser(
        "generate", help="generate a large synthetic snapshot (chunked, bounded memory)",
        description="Write one degree-corrected stochastic block model snapshot chunk by chunk: "
                    "power-law degrees, tunable homophily, class feature centroids plus Gaussian "
                    "noise. The first floor(0.8*C) classes are known and a fraction of their "
                    "nodes labelled. Edges are written once per pair (src < dst). " + _LAYOUT)
    gen.add_argument("--nodes", type=_positive_int, required=True, help="number of nodes")
    gen.add_argument("--out", required=True, metavar="DIR", help="snapshot root folder")
    gen.add_argument("--graph", default="generated",
                     help="graph name (default 'generated'; 'synthetic' is the simulator's)")
    gen.add_argument("--date", default=None, metavar="YYYY-MM-DD", help="snapshot date (default today)")
    gen.add_argument("--classes", type=_positive_int, default=10, help="number of classes (default 10)")
    gen.add_argument("--known", type=int, default=None,
                     help="number of known classes (default floor(0.8*classes))")
    gen.add_argument("--features", type=_positive_int, default=64,
                     help="feature dimension (default 64)")
    gen.add_argument("--avg-degree", type=float, default=10.0, help="average degree (default 10)")
    gen.add_argument("--homophily", type=float, default=0.8,
                     help="probability that an edge stays inside a class (default 0.8)")
    gen.add_argument("--power-law-exponent", type=float, default=2.5,
                     help="degree tail exponent, > 2 (default 2.5); 0 for equal degrees")
    gen.add_argument("--separation", type=float, default=2.5,
                     help="distance of the class centroids against unit noise (default 2.5)")
    gen.add_argument("--label-fraction", type=float, default=0.5,
                     help="fraction of known-class nodes labelled (default 0.5)")
    gen.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    gen.add_argument("--chunk-size", type=_positive_int, default=50_000,
                     help="nodes per chunk: bounds memory (default 50000)")
    gen.add_argument("--overwrite", action="store_true", help="replace an existing snapshot")
    gen.set_defaults(func=cmd_generate)
