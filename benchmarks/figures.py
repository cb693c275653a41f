"""The paper's figures from finished seeds: Table 2 as a plot (ours beside the paper), Figure 4
(each layer against the ensemble) and Figure 5 (sensitivity to N_pro, gamma and mu).

Table 2 reads ``reproduction.csv``::

    python -m benchmarks.figures table2

writes ``figures/table2_all.png``: All accuracy per method, one panel per dataset and prior setting, our
mean with its standard deviation beside the paper's value.

Figure 4 reads the per-seed files of ``oral reproduce`` under both protocols
(``runs/oral/<dataset>-<prior>[-paper]/seed_*.json`` hold every layer's own All / Known / Novel
accuracy beside the ensemble's, before and after the known-group checks)::

    python -m benchmarks.figures layers

writes ``figures/figure4_layers.md`` and ``.png``. Figure 5 first runs (resumable: finished
seeds are skipped) one sweep per value under ``results/sensitivity/<key>=<value>/``, then plots::

    python -m benchmarks.figures sensitivity --dataset blogcatalog --prior --seeds 3

writes ``sensitivity/figure5_sensitivity_<dataset>-<prior|noprior>.md`` and ``.png``. ``--set KEY=VALUE``
changes the base configuration of every point (the defaults then run again, in
``sensitivity/<KEY=VALUE>/default``), e.g. ``--set select_from_epoch=31`` keeps only epochs after
pseudo-label learning started (epoch 30), so that gamma and mu can matter; the files get ``_<KEY=VALUE>``. The paper's Figure 5 is
BlogCatalog with the class number known (``--prior``), the default here. Test labels are only read
to score finished runs; no setting is chosen from these numbers (the defaults are the paper's).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
#: the paper's Figure 5 grid (defaults: N_pro 40, gamma 0.3, mu 0.015)
GRID = {"num_prototypes": [20, 40, 60, 80], "gamma": [0.2, 0.3, 0.4, 0.5],
        "mu": [0.01, 0.015, 0.02, 0.025]}


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def _signed_mean_std(values: list[float]) -> str:
    """A paired difference: the mean with its sign, so "+1.20 ± 0.50" reads as a change."""
    text = _mean_std(values)
    return text if not values or text.startswith("-") else "+" + text


def table2(results: Path = RESULTS) -> Path:
    """Table 2 as bars: our All accuracy (mean ± std over seeds) beside the paper's, per method."""
    import csv
    from harness.experiment import PAPER
    with (results / "reproduction.csv").open() as fh:
        table = list(csv.DictReader(fh))
    if not table:
        raise SystemExit(f"{results / 'reproduction.csv'} has no rows: run oral reproduce first")
    panels = sorted({(r["dataset"], r["prior"]) for r in table})
    methods = sorted({r["method"] for r in table})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.6), squeeze=False)
    for ax, (dataset, prior) in zip(axes[0], panels):
        rows = {r["method"]: r for r in table if (r["dataset"], r["prior"]) == (dataset, prior)}
        xs = range(len(methods))
        ours = [float(rows[m]["all_mean"]) if m in rows else 0.0 for m in methods]
        sd = [float(rows[m]["all_std"]) if m in rows else 0.0 for m in methods]
        paper = [PAPER.get((m, dataset, prior), (float("nan"),))[0] for m in methods]
        ax.bar([x - 0.2 for x in xs], ours, 0.4, yerr=sd, color="#c33", label="ours")
        ax.bar([x + 0.2 for x in xs], paper, 0.4, color="#999", label="paper")
        ax.set_xticks(list(xs), methods, rotation=60, fontsize=7)
        ax.set_title(f"{dataset}, prior {prior}", fontsize=9)
        ax.set_ylim(0, 100)
        ax.set_ylabel("All accuracy (%)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = results / "figures" / "table2_all.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path


def _unchecked(seed: dict) -> dict:
    """The ensemble's answer before the known-group checks (the seed's own where none ran)."""
    return (seed.get("selection_alternatives") or {}).get("last_unchecked") or seed


def layers(results: Path = RESULTS) -> None:
    """Figure 4: every layer's own prediction against the ensemble (Eq. 8-9), per dataset."""
    from harness.reproduction import read_seed_files
    rows = []
    # both protocols: <dataset>-<prior> (strict) and <dataset>-<prior>-paper (the paper's)
    for folder in sorted((results / "runs" / "oral").glob("*-*prior*")):
        seeds = [s for s in read_seed_files(folder) if s.get("layers_all")]
        if not seeds:
            continue
        n_layers = len(seeds[0]["layers_all"])
        entry = {"run": folder.name, "seeds": len(seeds)}
        for metric in ("all", "known", "novel"):
            for l in range(n_layers):
                entry[f"layer{l + 1}_{metric}"] = [s[f"layers_{metric}"][l] for s in seeds]
            # the layers are scored on their own groups, before the known-group checks; the
            # ensemble beside them the same way (Eq. 8-9 alone), then as reported
            entry[f"ensemble_unchecked_{metric}"] = [_unchecked(s)[metric] for s in seeds]
            entry[f"ensemble_{metric}"] = [s[metric] for s in seeds]
        rows.append(entry)
    if not rows:
        raise SystemExit(f"no finished ORAL seeds under {results / 'runs' / 'oral'}")
    names = [k[:-4] for k in rows[0] if k.endswith("_all")]
    lines = ["# Figure 4: each layer against the ensemble", "",
             "Command: `python -m benchmarks.figures layers`. Accuracy (%) of each layer's own "
             "prediction (its groups, matched as in Eq. 4) and of the ensemble (Eq. 8-9), mean ± "
             "std over the finished seeds of `oral reproduce --method oral` (`runs/oral` beside "
             "this file; a run ending in `-paper`: the paper's protocol, else the "
             "strict one). `ensemble_unchecked` is the ensemble before the known-group checks "
             "(like the layers); `ensemble` is the reported answer.", "",
             "| run | seeds | metric | " + " | ".join(names) + " |",
             "|---|---:|---|" + "---:|" * len(names)]
    for r in rows:
        for metric in ("all", "known", "novel"):
            cells = [_mean_std(r[f"{n}_{metric}"]) for n in names]
            lines.append(f"| {r['run']} | {r['seeds']} | {metric} | " + " | ".join(cells) + " |")
    out = results / "figures"
    out.mkdir(parents=True, exist_ok=True)
    (out / "figure4_layers.md").write_text("\n".join(lines) + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.2), squeeze=False)
    for ax, r in zip(axes[0], rows):
        means = [statistics.mean(r[f"{n}_all"]) for n in names]
        ax.bar(range(len(names)), means, color=["#999"] * (len(names) - 1) + ["#c33"])
        ax.set_xticks(range(len(names)), [n.replace("layer", "L") for n in names], fontsize=8)
        ax.set_title(f"{r['run']} ({r['seeds']} seeds)", fontsize=9)
        ax.set_ylabel("All accuracy (%)")
    fig.tight_layout()
    fig.savefig(out / "figure4_layers.png", dpi=100)


def _tag(overrides: dict[str, str]) -> str:
    """Folder and file suffix of a study run with base overrides (``""`` without any)."""
    return ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))


def sensitivity(dataset: str, seeds: int, data_dir: str | None, results: Path = RESULTS,
                run: bool = True, prior: bool = True, overrides: dict[str, str] | None = None) -> Path:
    """Figure 5: All accuracy against N_pro, gamma and mu (one changed at a time); the paper's is
    BlogCatalog with the class-number prior. ``overrides`` (``--set``) change the base
    configuration of every point, the paper's defaults included, which then run in their own
    folder ``sensitivity/<overrides>/default`` instead of reusing the main sweep. Returns the
    Markdown file written."""
    from harness.reproduction import seed_rows
    from oral_core.config import ORALConfig
    overrides = dict(overrides or {})
    unknown = set(overrides) - set(ORALConfig().to_dict())
    if unknown:
        raise SystemExit(f"--set: unknown configuration key(s) {sorted(unknown)}")
    clash = set(overrides) & set(GRID)
    if clash:
        raise SystemExit(f"--set: {sorted(clash)} is what the study varies; set another key")
    defaults = ORALConfig()
    tag = _tag(overrides)
    base = results / "sensitivity" / tag if tag else results / "sensitivity"
    setting = f"{dataset}-{'prior' if prior else 'noprior'}"
    prior_word = "yes" if prior else "no"
    extra = [a for k, v in sorted(overrides.items()) for a in ("--set", f"{k}={v}")]

    default_out = base / "default" if tag else results  # no overrides: the main sweep's seeds

    def folder(key: str, value) -> Path:
        return default_out if value == getattr(defaults, key) else base / f"{key}={value}"

    def sweep(out: Path, setting_args: list[str]) -> None:
        if not run or out == results:
            return
        cmd = [sys.executable, "-m", "cli.main", "reproduce", "--dataset", dataset,
               "--method", "oral", "--seeds", str(seeds), *setting_args, *extra,
               "--out", str(out), "--quiet"] + (["--prior"] if prior else [])
        if data_dir:
            cmd += ["--data-dir", data_dir]
        subprocess.run(cmd, check=True, cwd=Path(__file__).resolve().parent.parent)

    sweep(default_out, [])
    default_all = {s["seed"]: s["all"] for s in seed_rows(default_out, "oral", dataset, prior_word)}
    table = []
    for key, values in GRID.items():
        for value in values:
            out = folder(key, value)
            if out != default_out:
                sweep(out, ["--set", f"{key}={value}"])
            finished = seed_rows(out, "oral", dataset, prior_word)[:seeds]
            paired = [s["all"] - default_all[s["seed"]] for s in finished if s["seed"] in default_all]
            epochs = [str(s["selected_epoch"]) for s in finished if "selected_epoch" in s]
            table.append((key, value, [s["all"] for s in finished], [s["novel"] for s in finished],
                          paired, epochs))
    sets = "".join(f" --set {k}={v}" for k, v in sorted(overrides.items()))
    base_words = (f" Every point, the defaults included, also sets {tag} (`--set`)." if tag else "")
    lines = ["# Figure 5: sensitivity to N_pro, gamma and mu", "",
             f"Command: `python -m benchmarks.figures sensitivity --dataset {dataset} "
             f"{'--prior' if prior else '--no-prior'} --seeds {seeds}{sets}`. "
             f"ORAL {'with' if prior else 'without'} the class-number prior, one setting changed at "
             "a time from the paper's defaults "
             f"(N_pro 40, gamma 0.3, mu 0.015).{base_words} All and Novel accuracy (%), mean ± std over seeds. "
             "`All − default` pairs each seed with the same seed (same split) at the defaults, "
             "which removes the split-to-split spread (the std of the default row) from the "
             "comparison; with one seed it is still a single draw of training noise. "
             "`kept epochs` are the epochs model selection kept (best validation accuracy on "
             f"labelled nodes), one per seed: a seed that keeps an epoch up to pol_start_epoch "
             f"({defaults.pol_start_epoch}) scores as if pseudo-label learning did not exist, "
             "and with it gamma and mu (the structure refinement of Eq. 10-11 runs on pseudo-labels)."
             , "",
             "| setting | value | seeds | All | Novel | All − default | kept epochs |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for key, value, all_, novel, paired, epochs in table:
        lines.append(f"| {key} | {value} | {len(all_)} | {_mean_std(all_)} | {_mean_std(novel)} "
                     f"| {_signed_mean_std(paired)} | {', '.join(epochs) or '-'} |")
    md = results / "sensitivity" / f"figure5_sensitivity_{setting}{'_' + tag if tag else ''}.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text("\n".join(lines) + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, key in zip(axes, GRID):
        pts = [(v, statistics.mean(a), statistics.stdev(a) if len(a) > 1 else 0.0)
               for k, v, a, *_ in table if k == key and a]
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o")
        ax.set_xlabel(key)
        ax.set_ylabel("All accuracy (%)")
    fig.suptitle(f"{setting}{' ' + tag if tag else ''}: sensitivity (one setting changed at a time)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(md.with_suffix(".png"), dpi=100)
    plt.close(fig)
    return md


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="figure", required=True)
    sub.add_parser("table2", help="Table 2 (All accuracy) as a plot, ours beside the paper")
    sub.add_parser("layers", help="Figure 4 from finished seeds")
    sens = sub.add_parser("sensitivity", help="Figure 5 (runs the missing seeds first)")
    sens.add_argument("--dataset", default="blogcatalog", help="the paper's: blogcatalog")
    sens.add_argument("--prior", action=argparse.BooleanOptionalAction, default=True,
                      help="with the class-number prior (the paper's setting; --no-prior: without)")
    sens.add_argument("--seeds", type=int, default=3)
    sens.add_argument("--data-dir", default=None)
    sens.add_argument("--no-run", action="store_true", help="only tabulate finished seeds")
    sens.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="change the base configuration of every point (e.g. select_from_epoch=31)")
    args = ap.parse_args(argv)
    if args.figure == "table2":
        print(table2())
    elif args.figure == "layers":
        layers()
    else:
        overrides = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep:
                raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
            overrides[key] = value
        print(sensitivity(args.dataset, args.seeds, args.data_dir, run=not args.no_run,
                          prior=args.prior, overrides=overrides))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
