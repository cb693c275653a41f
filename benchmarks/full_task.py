"""Known-class validation accuracy over the epochs of one full-task fit (labelled nodes only).

The known-class guard of ``oral choose`` reads the validation accuracy of the model a full-task
fit keeps; this diagnostic shows the whole trajectory (every tenth epoch, and how many classes
the fit reports), to see when and how a setting loses the known classes. Reads no test label.

    python -m benchmarks.full_task --dataset amazonphoto --prior --seed 0 \\
        --setting defaults --setting opennc_losses=true,opennc_terms=balance [--set attention_kernel=spmm] \\
        --out benchmarks/results/full_task/full_task_amazonphoto-prior.md

Each setting's row is kept in ``<out>.json`` and reused when the command is rerun.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path


def trajectory(dataset: str, data_dir: str | None, seed: int, prior: bool, overrides: dict) -> dict:
    """One full-task fit: final validation accuracy, classes, seconds and every tenth epoch's
    ``(epoch, validation accuracy %, classes)``."""
    from oral_core.config import ORALConfig
    from harness.experiment import prepare, protocol_split
    from oral_core.trainer import ORAL

    prep = prepare(dataset, data_dir)
    g = prep.graph
    split = protocol_split(g, seed, "ours")[0]
    config = ORALConfig.from_dict(ORALConfig().to_dict() | overrides | {
        "seed": seed, "progress": False, "prior_num_classes": g.num_classes if prior else None})
    start = time.perf_counter()
    model = ORAL(config).fit(prep.x, g.edge_index, split.train_labels(g.y), split.val_labels(g.y))
    found = model.predict()
    rows = [(r["epoch"], round(100 * r["val_acc"], 1), r.get("classes")) for r in model.history_
            if "val_acc" in r]
    last = rows[-1][0]
    return {"val_acc": 100 * found.val_accuracy, "classes": found.num_classes,
            "seconds": round(time.perf_counter() - start, 1),
            "epochs": [r for r in rows if r[0] % 10 == 0 or r[0] == last]}


def main(argv=None) -> int:
    from cli.options import OptionError, parse_set

    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--setting", action="append", required=True, metavar="defaults|KEY=VALUE[,KEY=VALUE]")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        base, _ = parse_set(args.set)
        settings = {s: ({} if s == "defaults" else parse_set(s.split(","))[0]) for s in args.setting}
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    store = args.out.with_suffix(".json")
    done = json.loads(store.read_text()) if store.exists() else {}
    for name, overrides in settings.items():
        tag = f"{name}|seed {args.seed}|{'prior' if args.prior else 'noprior'}|{json.dumps(base, sort_keys=True)}"
        if tag not in done:
            print(f"{name}: fitting seed {args.seed} ...", flush=True)
            done[tag] = {"setting": name, "seed": args.seed} | trajectory(
                args.dataset, args.data_dir, args.seed, args.prior, base | overrides)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            store.write_text(json.dumps(done, indent=1) + "\n")
        row = done[tag]
        print(f"{name}: validation accuracy {row['val_acc']:.1f}%, {row['classes']} classes "
              f"({row['seconds']:.0f}s)", flush=True)
    command = "python -m benchmarks.full_task " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    lines = [f"# Full-task fits of {args.dataset} {'with' if args.prior else 'without'} the prior: "
             "known-class validation accuracy over the epochs", "", f"Command: `{command}`", "",
             "Labelled nodes only (the full task's validation nodes); every tenth epoch as "
             "`epoch: accuracy % (classes)`. Base settings: "
             + (", ".join(f"`{k}={v}`" for k, v in base.items()) or "the defaults") + ".", "",
             "| setting | seed | kept model: val. acc. | classes | seconds | trajectory |",
             "|---|---|---|---|---|---|"]
    for row in done.values():
        path = ", ".join(f"{e}: {a} ({c})" for e, a, c in row["epochs"])
        lines.append(f"| `{row['setting']}` | {row['seed']} | {row['val_acc']:.1f} | {row['classes']} | "
                     f"{row['seconds']:.0f} | {path} |")
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
