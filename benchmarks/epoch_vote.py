"""Is the last epoch's answer stable? A diagnostic by the held-out-class proxy (labelled nodes only).

The kernel comparison (``benchmarks/results/proxy/proxy_compare_cora-noprior-attention_kernel=spmm.md``) showed that
rounding-level differences move a single seed's proxy score at the last epoch of 200 by up to 36
points. This script measures, in ONE training run per seed (so every row is paired by
construction), the default rule ``last@E`` against ``vote@E:k``: every node takes the class it
was given most often over epochs ``E-k+1 .. E``, after each of those epochs' novel class ids is
aligned to epoch E's by overlap (:func:`oral_core.trainer.novel_id_map`, the warm-start id
matching; known class ids mean the same class at every epoch). Not a product rule yet: a
diagnostic for the discovery-quality issue. No test node is read (seed s hides known class
s mod K; selection-free rules, the proxy scores half the visible classes' validation nodes plus
the hidden class's labelled nodes, as ``benchmarks/proxy_rules.py``).

    OMP_NUM_THREADS=1 python -m benchmarks.epoch_vote --dataset cora --seeds 5 --votes 10,25,50

Per-seed rows: ``benchmarks/results/epoch_vote/<dataset>-<prior>/seed_<n>.json`` (resumable);
table: ``benchmarks/results/epoch_vote/epoch_vote_<dataset>-<prior>.md``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from oral_core.config import ORALConfig
from harness.experiment import prepare
from harness.reproduction import mean_se
from harness.proxy import epoch_mean, proxy_accuracy, proxy_config, training_key
from oral_core.trainer import ORAL, novel_id_map

from .tune import HIDE_MODES, config_overrides, hide_tag, proxy_task

RESULTS = Path(__file__).resolve().parent / "results"
RULES = ["last", "vote", "mean", "stable", "curve", "unchecked", "unguarded"]  # recorded in each seed file's key
#: the rules a seed file written before ``RULES`` was recorded answers (it is kept, not rerun:
#: its table rows simply lack the newer rules)
OLD_RULES = ["last", "vote"]


def aligned(ids: torch.Tensor, reference: torch.Tensor, num_known: int) -> torch.Tensor:
    """``ids`` with each novel class renamed to the ``reference`` novel class it overlaps most."""
    mapping = novel_id_map(ids, reference, num_known)
    out = ids.clone()
    for old, new in mapping.items():
        out[ids == old] = new
    return out


def epoch_vote(epoch_ids: list[torch.Tensor], num_known: int) -> torch.Tensor:
    """Each node's most frequent class over ``epoch_ids`` (aligned to the last; ties to the
    smallest id, as :func:`torch.mode`)."""
    reference = epoch_ids[-1].long()
    stack = torch.stack([aligned(e.long(), reference, num_known) for e in epoch_ids])
    return stack.mode(dim=0).values


def seed_rows(prep, seed: int, config: ORALConfig, horizon: int, votes: list[int],
              hide: str = "rotate") -> list[dict]:
    g = prep.graph
    task = proxy_task(g, seed, hide, disjoint_val=True)
    cfg = proxy_config(config, seed, g.num_classes)
    cfg.epochs = horizon
    model = ORAL(cfg).with_diagnostics()
    model.record_epochs = True
    model.fit(prep.x, g.edge_index, task.train, task.val)
    ids = model.epoch_class_ids_
    num_known = len(task.visible)
    rows = [{"rule": f"last@{horizon}", "seed": seed} | proxy_accuracy(g, task, ids[horizon])]
    for k in votes:
        voted = epoch_vote(ids[horizon - k + 1:horizon + 1], num_known)
        rows.append({"rule": f"vote@{horizon}:{k}", "seed": seed} | proxy_accuracy(g, task, voted))
    for k in votes:
        rows.append({"rule": f"mean@{horizon}:{k}", "seed": seed}
                    | epoch_mean([proxy_accuracy(g, task, e) for e in ids[horizon - k + 1:horizon + 1]]))
    if model.epoch_unchecked_ids_:  # a check set: the same fit without the checks
        unchecked = model.epoch_unchecked_ids_
        rows.append({"rule": f"unchecked last@{horizon}", "seed": seed}
                    | proxy_accuracy(g, task, unchecked[horizon]))
        for k in votes:
            rows.append({"rule": f"unchecked mean@{horizon}:{k}", "seed": seed} | epoch_mean(
                [proxy_accuracy(g, task, e) for e in unchecked[horizon - k + 1:horizon + 1]]))
    if "last_unguarded" in model.discoveries_:  # known_absorb_guard on: the same fit unguarded
        rows.append({"rule": f"unguarded last@{horizon}", "seed": seed}
                    | proxy_accuracy(g, task, model.discoveries_["last_unguarded"].class_id))
    changed = change_curve(ids, num_known)
    stop = stable_epoch(changed, STABLE_FROM(cfg), STABLE_SHARE, STABLE_PATIENCE)
    rows.append({"rule": f"stable@{horizon}", "seed": seed, "epoch": stop}
                | proxy_accuracy(g, task, ids[stop]))
    # every epoch's proxy score and change (labelled-free) so that later stopping rules can be
    # judged from this file alone
    rows.append({"rule": "curve", "seed": seed, "all_by_epoch":
                 [round(proxy_accuracy(g, task, e)["all"], 3) for e in ids],
                 "changed_by_epoch": [round(c, 5) for c in changed]})
    return rows


#: ``stable@E``: stop at the first epoch from ``pol_start_epoch + 10`` on after which fewer than
#: ``STABLE_SHARE`` of the nodes changed class (novel ids aligned) in each of the last
#: ``STABLE_PATIENCE`` epochs; the horizon E when that never happens. Label-free: a candidate
#: early-stopping rule (issue 18, "stop when the assignments stop changing").
STABLE_SHARE = 0.01
STABLE_PATIENCE = 10


def STABLE_FROM(cfg) -> int:  # noqa: N802 - a constant of the configuration
    return cfg.pol_start_epoch + 10


def change_curve(ids: list[torch.Tensor], num_known: int) -> list[float]:
    """Per epoch, the share of nodes whose class differs from the epoch before (novel ids
    aligned by overlap; 1.0 for epoch 0)."""
    out = [1.0]
    for prev, cur in zip(ids, ids[1:]):
        out.append(float((aligned(prev.long(), cur.long(), num_known) != cur.long()).float().mean()))
    return out


def stable_epoch(changed: list[float], start: int, share: float, patience: int) -> int:
    """The first epoch ``e >= start`` with ``changed[e - patience + 1 .. e]`` all below
    ``share``; the last epoch when there is none."""
    run = 0
    for e, c in enumerate(changed):
        run = run + 1 if c < share else 0
        if e >= start and run >= patience:
            return e
    return len(changed) - 1


def table(rows: list[dict], reference: str) -> list[str]:
    rows = [r for r in rows if "all" in r]  # not the per-epoch curves
    lines = ["| rule | seeds | proxy All | classes | rule − " + reference + " (s.e.) | ahead |",
             "|---|---|---|---|---|---|"]
    ref = {r["seed"]: r["all"] for r in rows if r["rule"] == reference}
    for rule in dict.fromkeys(r["rule"] for r in rows):
        mine = [r for r in rows if r["rule"] == rule]
        diffs = [r["all"] - ref[r["seed"]] for r in mine if r["seed"] in ref]
        m, _ = mean_se([r["all"] for r in mine])
        d, se = mean_se(diffs)
        cls = sum(r["classes"] for r in mine) / len(mine)
        ahead = sum(x > 0 for x in diffs)
        lines.append(f"| {rule} | {len(mine)} | {m:.2f} | {cls:.1f} | {d:+.2f} ({se:.2f}) | "
                     f"{ahead}/{len(diffs)} |")
    return lines


def check_lines(rows: list[dict]) -> list[str]:
    """The known-split / known-absorb checks (``known_split_share``, ``known_absorb_share``),
    paired within each fit: every rule against the same rule on the unchecked classes of the
    same epochs."""
    rows = [r for r in rows if "all" in r]
    pairs = {(r["rule"][len("unchecked "):], r["seed"]): r for r in rows
             if r["rule"].startswith("unchecked ")}
    if not pairs:
        return []
    lines = ["Known-split / known-absorb checks (`known_split_share`, `known_absorb_share`, whichever "
             "the command sets), paired within each fit (the same training; "
             "only the reported classes differ):", "",
             "| rule | seeds | proxy All, unchecked | proxy All, checked | checked − unchecked (s.e.) "
             "| ahead / behind | classes unchecked → checked |", "|---|---|---|---|---|---|---|"]
    for rule in dict.fromkeys(k[0] for k in pairs):
        mine = [(pairs[(rule, s)], r) for r in rows if r["rule"] == rule
                for s in [r["seed"]] if (rule, s) in pairs]
        if not mine:
            continue
        d, se = mean_se([c["all"] - u["all"] for u, c in mine])
        lines.append(
            f"| {rule} | {len(mine)} | {mean_se([u['all'] for u, _ in mine])[0]:.2f} | "
            f"{mean_se([c['all'] for _, c in mine])[0]:.2f} | {d:+.2f} ({se:.2f}) | "
            f"{sum(c['all'] > u['all'] for u, c in mine)} / {sum(c['all'] < u['all'] for u, c in mine)} | "
            f"{sum(u['classes'] for u, _ in mine) / len(mine):.1f} → "
            f"{sum(c['classes'] for _, c in mine) / len(mine):.1f} |")
    return lines + [""]


def stop_lines(rows: list[dict]) -> list[str]:
    """Where ``stable@E`` stopped, per seed."""
    stops = [(r["seed"], r["epoch"]) for r in rows if r["rule"].startswith("stable@")]
    if not stops:
        return []
    return [f"`stable@E` (stop once fewer than {STABLE_SHARE:.0%} of the nodes changed class in each "
            f"of {STABLE_PATIENCE} epochs, from pol_start_epoch + 10 on) stopped at epoch: "
            + ", ".join(f"seed {s}: {e}" for s, e in stops) + "."]


def _same_run(saved: dict | None, key: dict) -> bool:
    """A seed file answers this run: the same horizon, votes and training (fields added later
    at their old default ignored, :func:`harness.proxy.training_key`), and every rule
    it has is still asked."""
    if not saved:
        return False
    rules = saved.get("rules", OLD_RULES)
    return (saved.get("horizon") == key["horizon"] and saved.get("votes") == key["votes"]
            and saved.get("hide", "rotate") == key.get("hide", "rotate")
            and set(rules) <= set(key["rules"])
            and training_key(saved.get("config", {})) == training_key(key["config"]))


def read_rows(folder: Path) -> dict[tuple[str, int], dict]:
    """``(rule, seed) -> row`` of every finished seed file in ``folder``."""
    rows = {}
    for path in sorted(folder.glob("seed_*.json")):
        for r in json.loads(path.read_text())["rows"]:
            if "all" in r:  # not the per-epoch curves
                rows[(r["rule"], r["seed"])] = r
    return rows


def compare(results: Path, a: str, b: str) -> int:
    """Paired table ``b - a`` per rule over the seeds both runs finished."""
    ra, rb = (read_rows(results / "epoch_vote" / n) for n in (a, b))
    if not ra or not rb:
        raise SystemExit(f"no finished seed under {results / 'epoch_vote' / (a if not ra else b)}")
    lines = [f"# Held-out-class proxy, paired by seed: `{b}` against `{a}`", "",
             f"Command: `python -m benchmarks.epoch_vote --compare {a} {b}` (seed files of "
             "`benchmarks.epoch_vote` runs; `mean@E:k` is the mean of the per-epoch proxy "
             "scores over the last k epochs, the expected `last@E` score with far less noise).",
             "", f"| rule | seeds | All `{a}` | All `{b}` | difference (s.e.) | ahead |",
             "|---|---|---|---|---|---|"]
    for rule in dict.fromkeys(k[0] for k in ra):
        seeds = sorted(s for (r, s) in ra if r == rule and (r, s) in rb)
        if not seeds:
            continue
        xa = [ra[(rule, s)]["all"] for s in seeds]
        xb = [rb[(rule, s)]["all"] for s in seeds]
        d, se = mean_se([y - x for x, y in zip(xa, xb)])
        lines.append(f"| {rule} | {len(seeds)} | {mean_se(xa)[0]:.2f} | {mean_se(xb)[0]:.2f} | "
                     f"{d:+.2f} ({se:.2f}) | {sum(y > x for x, y in zip(xa, xb))}/{len(seeds)} |")
    out = results / "epoch_vote" / f"epoch_vote_compare_{a}_vs_{b}.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"),
                    help="paired table B - A of two finished runs (folder names under "
                         "epoch_vote/, e.g. cora-noprior cora-noprior-attention_kernel=spmm)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=None, help="default: the configured epochs")
    ap.add_argument("--votes", default="10,25,50", help="epochs voted over, comma list")
    ap.add_argument("--prior", action="store_true")
    ap.add_argument("--hide", choices=HIDE_MODES, default="rotate",
                    help="which known classes play novel ones (benchmarks.tune.hidden_classes); "
                         "a mode other than rotate suffixes the folder name")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="ORALConfig override (e.g. attention_kernel=spmm)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--refresh", action="store_true",
                    help="run again the seeds whose files lack a rule asked (kept otherwise)")
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(Path(args.results), *args.compare)
    if not args.dataset:
        ap.error("--dataset is required (or --compare A B)")
    base, overrides = config_overrides(ap, args.set)
    if base.stop_when_stable is not None:
        ap.error(f"--set stop_when_stable={base.stop_when_stable}: these rules are read off every "
                 "epoch of a full run; an early stop leaves the later epochs unrun (the stop "
                 "rule itself is judged offline by benchmarks.stop_rules)")
    horizon = args.horizon or base.epochs
    votes = [int(v) for v in args.votes.split(",")]
    if any(k < 1 or k > horizon for k in votes):
        ap.error(f"--votes {args.votes}: each must be between 1 and the horizon {horizon}")
    prep = prepare(args.dataset, args.data_dir)
    if args.prior:
        base.prior_num_classes = prep.graph.num_classes
    name = f"{args.dataset}-{'prior' if args.prior else 'noprior'}" + "".join(
        f"-{k}={v}" for k, v in overrides.items()) + hide_tag(args.hide)
    folder = Path(args.results) / "epoch_vote" / name
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in range(args.seeds):
        path = folder / f"seed_{seed}.json"
        key = {"horizon": horizon, "votes": votes, "rules": RULES, "config": base.to_dict()}
        if args.hide != "rotate":  # rotate seed files predate the option
            key["hide"] = args.hide
        saved = json.loads(path.read_text()).get("key") if path.exists() else None
        if _same_run(saved, key) and not (args.refresh and set(saved.get("rules", OLD_RULES)) != set(RULES)):
            rows += json.loads(path.read_text())["rows"]
            continue
        t = time.perf_counter()
        got = seed_rows(prep, seed, base, horizon, votes, args.hide)
        path.write_text(json.dumps({"key": key, "seconds": time.perf_counter() - t, "rows": got},
                                   indent=1))
        rows += got
        print(f"seed {seed} ({time.perf_counter() - t:.0f}s): "
              + ", ".join(f"{r['rule']} {r['all']:.1f}" for r in got if "all" in r), flush=True)
    out = Path(args.results) / "epoch_vote" / f"epoch_vote_{name}.md"
    out.write_text("\n".join([
        f"# Voting over the last epochs: {name} (held-out-class proxy, labelled nodes only)", "",
        f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.epoch_vote --dataset {args.dataset} "
        f"--seeds {args.seeds} --votes {args.votes}{' --prior' if args.prior else ''}"
        + ("" if args.hide == "rotate" else f" --hide {args.hide}")
        + "".join(f" --set {k}={v}" for k, v in overrides.items()) + "`. One training "
        "run per seed answers every rule (paired by construction). Diagnostic, not a product rule.",
        "", *table(rows, f"last@{horizon}"), "", *check_lines(rows), *stop_lines(rows), ""]))
    print(out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
