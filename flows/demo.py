"""``oral demo``: an evolving graph with a novel class emerging mid-way, run night by night.

1. Simulate ``--periods`` nightly snapshots (``state/demo/snapshots``) of a synthetic graph (or a
   real dataset): known classes from the first night, each novel class from a later one.
2. Backfill them through the nightly flow (Prefect in-process, MLflow SQLite, DuckDB file).
3. Print the class timeline from DuckDB and, per planted novel class, the night a discovered
   class whose majority true label is that class first appeared, with its purity.
Rerunning the demo regenerates identical snapshots, so trained runs are reused (cache) and the
rows are republished unchanged.
"""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

DEMO_START = dt.date(2026, 1, 1)
SYNTHETIC = dict(num_classes=5, num_features=32, avg_degree=10.0, homophily=0.8, separation=4.0)


def simulate_demo(dataset: str, root: Path, periods: int, nodes: int, seed: int,
                  data_dir: str | None = None):
    """Write the demo's snapshots; returns ``(graph name, plan)``."""
    from data_contracts.simulate import as_static, plan_simulation, simulate
    from data_contracts.synthetic import make_static_graph

    if dataset == "synthetic":
        static = make_static_graph(num_nodes=nodes, seed=seed, name="demo", **SYNTHETIC)
        graph = "demo"
    else:
        from oral_core.datasets import load_dataset
        from oral_core.datasets import canonical_name

        static = load_dataset(dataset, data_dir)
        graph = f"{canonical_name(dataset)}-demo"
    plan = plan_simulation(static, periods, DEMO_START, seed=seed)
    simulate(static, periods, root, graph, start_date=DEMO_START, seed=seed, overwrite=True)
    return graph, plan, as_static(static).class_names


def timeline(warehouse, graph: str):
    """One row per night and discovered class: size, status, purity, majority true label, as the
    analyst reads it (a night whose model was degraded is left out, its latest answer unchanged)."""
    return warehouse.query(
        """
        SELECT l.snapshot_date, l.lineage_id, c.class_name, c.is_novel, l.size, l.status,
               c.purity, c.majority_true_label
        FROM class_lineage l
        JOIN runs r ON r.run_id = l.run_id
        LEFT JOIN classes c ON c.run_id = l.run_id AND c.lineage_id = l.lineage_id
        WHERE l.graph = ? AND r.run_id IN (SELECT run_id FROM latest_runs_by_date WHERE graph = ?)
        ORDER BY l.snapshot_date, c.is_novel, l.lineage_id
        """.replace("latest_runs_by_date", "(SELECT DISTINCT ON (graph, snapshot_date) graph, "
                    "snapshot_date, run_id FROM runs WHERE gate_status IS DISTINCT FROM 'degraded' "
                    "ORDER BY graph, snapshot_date, published_at DESC)"),
        [graph, graph])


def degraded_nights(warehouse, graph: str) -> list[dict]:
    """The nights whose model the champion gate found degraded: left out of :func:`timeline`, as
    the analyst's views leave them out. One row per night, from its latest run (a demo run again
    on the same state folder runs every night again)."""
    return warehouse.query(
        "SELECT snapshot_date, gate_reason FROM (SELECT snapshot_date, gate_status, gate_reason, "
        "row_number() OVER (PARTITION BY snapshot_date ORDER BY published_at DESC, rowid DESC) "
        "AS k "
        "FROM runs WHERE graph = ?) WHERE k = 1 AND gate_status = 'degraded' "
        "ORDER BY snapshot_date", [graph]).to_pylist()


def emergence(rows: list[dict], plan, class_names: list[str], min_purity: float = 0.5) -> list[dict]:
    """Per planted novel class: its true start night and the first night a novel discovered class
    whose majority true label is that class (purity >= ``min_purity``) was published (a
    ``candidate``, a novel class on its first night, is not published as a class yet)."""
    out = []
    for cls, period in sorted(plan.novel_start.items()):
        name = class_names[cls]
        hits = [r for r in rows if r["is_novel"] and r["majority_true_label"] == name
                and r["purity"] is not None and r["purity"] >= min_purity and r["size"] > 0
                and r.get("status") != "candidate"]
        first = min(hits, key=lambda r: r["snapshot_date"]) if hits else None
        seen = [r for r in rows if first is not None and r["lineage_id"] == first["lineage_id"]
                and r.get("status") == "candidate"]
        found = None
        if first is not None:
            found = plan.dates.index(first["snapshot_date"])
        out.append({"class": name, "true_start": plan.dates[period], "found": first["snapshot_date"] if first else None,
                    "periods_late": None if found is None else found - period,
                    "lineage_id": first["lineage_id"] if first else None,
                    "purity": first["purity"] if first else None, "size": first["size"] if first else None,
                    "candidate": min(r["snapshot_date"] for r in seen) if seen else None})
    return out


def render(graph: str, rows: list[dict], found: list[dict], seconds: float,
           degraded: list[dict] | None = None) -> str:
    lines = [f"# ORAL demo: {graph}", "",
             "| night | lineage id | known name | novel | size | status | purity | majority true label |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pur = "" if r["purity"] is None else f"{r['purity']:.2f}"
        lines.append(f"| {r['snapshot_date']} | {r['lineage_id']} | {r['class_name'] or ''} | "
                     f"{r['is_novel'] if r['is_novel'] is not None else ''} | {r['size']} | {r['status']} | "
                     f"{pur} | {r['majority_true_label'] or ''} |")
    if degraded:
        lines += ["", "Nights whose model the champion gate found degraded (not published as the "
                  "latest answer, left out above):", ""]
        lines += [f"- {d['snapshot_date']}: {d['gate_reason']}" for d in degraded]
    lines += ["", "Planted novel classes:", ""]
    for f in found:
        if f["found"] is None:
            lines.append(f"- {f['class']} (starts {f['true_start']}): NOT discovered")
        else:
            lines.append(f"- {f['class']} starts {f['true_start']}; discovered {f['found']} "
                         f"({f['periods_late']} period(s) after its start) as {f['lineage_id']}, "
                         f"{f['size']} nodes, purity {f['purity']:.2f}"
                         + (f" (a candidate since {f['candidate']}, published when it was "
                            f"there again)" if f.get("candidate") else ""))
    lines += ["", f"Backfill wall time: {seconds:.0f} s."]
    return "\n".join(lines)


def run_demo(args) -> int:
    from flows.settings import configure_environment

    state = args.state_dir or Path("state/demo")
    settings = configure_environment(state)
    root = settings.state_dir / "snapshots"
    graph, plan, class_names = simulate_demo(args.dataset, root, args.periods, args.nodes,
                                             args.seed, args.data_dir)
    print(f"simulated {graph}: {args.periods} nights from {plan.dates[0]}, novel classes start: "
          + ", ".join(f"{class_names[c]}@{plan.dates[p]}" for c, p in sorted(plan.novel_start.items())))
    from flows.nightly import backfill
    from tasks.warehouse import Warehouse

    start = time.perf_counter()
    config = {"epochs": args.epochs or 60, "seed": args.seed}
    for out in backfill(graph, str(root), config=config, state_dir=str(settings.state_dir),
                        device=args.device):
        from flows.nightly import summary_line
        print(summary_line(out))
    seconds = time.perf_counter() - start
    rows = timeline(Warehouse(settings.warehouse_path), graph).to_pylist()
    found = emergence(rows, plan, class_names)
    text = render(graph, rows, found, seconds,
                  degraded_nights(Warehouse(settings.warehouse_path), graph))
    print()
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(f"\nstate: {settings.state_dir} (DuckDB {settings.warehouse_path.name}, MLflow mlflow.db); "
          f"try: oral sql --state-dir {settings.state_dir} \"SELECT * FROM emerged_classes\"")
    return 0 if all(f["found"] is not None for f in found) else 1
