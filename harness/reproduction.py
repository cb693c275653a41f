"""Resumable ten-seed reproduction sweeps and the tables they feed (the code behind ``oral
reproduce`` and the ``reproduce`` flow).

Every function takes the results folder as a parameter; there is no default, since the package
may be installed read-only. ``oral reproduce --out`` defaults to ``benchmarks/results`` of the
current directory, and the scripts under ``benchmarks/`` pass their own ``results/`` folder.

Per-seed results are JSON files under ``<results>/runs/<method>/<dataset>-<prior>/``;
a seed whose file exists with the same configuration hash is skipped, so an interrupted sweep
resumes where it stopped. ``reproduction.csv`` (one row per method, dataset and prior setting) and
``reproduction.md`` (ours beside the paper's numbers) are regenerated from those files.
"""
from __future__ import annotations

import csv
import fcntl
import json
import math
import uuid
from contextlib import contextmanager
from pathlib import Path

from oral_core.config import ORALConfig
from oral_core.datasets import canonical_name
from oral_core.identity import config_hash
from oral_core.metrics import class_balanced_accuracy, from_contingency

from harness.baselines import not_applicable_reason
from harness.experiment import (PAPER, SCORES, FailedRun, method_config, paper_classes, prepare,
                                protocol_tag, run_seed_protocols, summarise, twin_protocols)

CSV_COLUMNS = ["method", "dataset", "prior", "protocol", "seeds", "all_mean", "all_std", "known_mean",
               "known_std", "novel_mean", "novel_std", "classes_est_mean", "classes_true"]


def run_dir(results: Path, method: str, dataset: str, prior: bool, protocol: str = "ours") -> Path:
    """``runs/<method>/<dataset>-<prior>[-<protocol>]``: the strict protocol keeps the folder it
    always had, so its finished seeds stay valid."""
    suffix = "" if protocol == "ours" else "-" + protocol.replace("+", "-")
    return (results / "runs" / method
            / f"{canonical_name(dataset)}-{'prior' if prior else 'noprior'}{suffix}")


def read_seed_files(folder: Path) -> list[dict]:
    """Every ``seed_<n>.json`` in ``folder``, in seed order (seed_2 before seed_10)."""
    paths = sorted(folder.glob("seed_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    return [json.loads(p.read_text()) for p in paths]


def seed_rows(results: Path, method: str, dataset: str, prior: str, protocol: str = "ours") -> list[dict]:
    """The finished, scored seed files of one table row (``prior`` is "yes" or "no"), in seed
    order; seeds that failed to train (:func:`failed_seeds`) are left out."""
    return [r for r in read_seed_files(run_dir(results, method, dataset, prior == "yes", protocol))
            if not r.get("failed")]


def stale(results: Path, method: str, dataset: str, prior: str, protocol: str = "ours") -> bool:
    """True when some finished seed of this row was run with another configuration than today's
    defaults (e.g. an ablation row left from before the defaults changed): its numbers are not
    comparable with rows run at the current defaults, and the tables say so."""
    for row in seed_rows(results, method, dataset, prior, protocol):
        if "config_hash" not in row or "features" not in row:
            return True
        n = int(row.get("classes_true", 0)) if prior == "yes" else None
        try:
            expected = config_hash(method_config(method, ORALConfig(), n, int(row["seed"])),
                                   row["features"])
        except Exception:  # a method or setting that no longer exists
            return True
        if row["config_hash"] != expected:
            return True
    return False


def failed_seeds(results: Path, method: str, dataset: str, prior: str, protocol: str = "ours") -> list[dict]:
    """Seed files of runs that failed to train (:class:`~harness.experiment.FailedRun`)."""
    return [r for r in read_seed_files(run_dir(results, method, dataset, prior == "yes", protocol))
            if r.get("failed")]


def sweep(dataset: str, method: str, seeds: list[int], prior: bool, base: ORALConfig,
          data_dir: str | None = None, *, results: Path, echo=print,
          refresh: bool = False, protocol: str = "ours", known: str = "default") -> list[dict]:
    """Run (or reuse) every seed under ``protocol`` (:func:`harness.experiment.protocol_split`);
    returns the per-seed rows of the seeds that trained (none, with a message, for a method that
    does not apply in this prior setting). A seed that failed to train is recorded as failed (its
    file says why), echoed, and left out of the rows. With ``refresh``, a finished seed whose file
    lacks one of the current scores (:data:`SCORES`) is run again."""
    tag = protocol_tag(protocol, known)
    reason = not_applicable_reason(method, prior)
    if reason:
        echo(f"skipped: {reason}")
        return []
    prep = prepare(dataset, data_dir)
    folder = run_dir(results, method, prep.graph.name, prior, tag)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, seed in enumerate(seeds):
        path = folder / f"seed_{seed}.json"
        expected = config_hash(method_config(method, base, prep.graph.num_classes if prior else None,
                                             seed), prep.features)
        if path.exists():
            row = json.loads(path.read_text())
            missing = [k for k in SCORES if k not in row] if refresh and not row.get("failed") else []
            if row.get("config_hash") == expected and row.get("failed"):
                echo(f"[{i + 1}/{len(seeds)}] seed {seed}: FAILED before, not rerun ({row['failed']})")
                continue
            if row.get("config_hash") == expected and missing:
                echo(f"[{i + 1}/{len(seeds)}] seed {seed}: lacks {', '.join(missing)}, running again")
            elif row.get("config_hash") == expected:
                echo(f"[{i + 1}/{len(seeds)}] seed {seed}: done before, reused ({path.name})")
                rows.append(row)
                continue
            else:
                echo(f"[{i + 1}/{len(seeds)}] seed {seed}: configuration changed, running again")
        twins = twin_protocols(prep.graph, seed, protocol, known)
        try:
            scored = run_seed_protocols(prep, method, seed, prior, base, [protocol, *twins], known)
        except FailedRun as err:
            scored = {p: {"method": method, "dataset": canonical_name(prep.graph.name), "seed": seed,
                          "prior": "yes" if prior else "no", "protocol": protocol_tag(p, known),
                          "failed": str(err), "config_hash": expected}
                      | ({} if p == protocol else {"trained_under": protocol_tag(protocol, known)})
                      for p in [protocol, *twins]}
        row = scored[protocol]
        write_seed_file(path, row)
        # the twins' lines first: the seed's own result (or FAILED) line is always its last, which
        # is the line a fan-out task reports (flows.fanout)
        for twin in twins:
            twin_path = run_dir(results, method, prep.graph.name, prior, protocol_tag(twin, known)) / path.name
            echo(f"[{i + 1}/{len(seeds)}] seed {seed}: "
                 + keep_twin(twin_path, scored[twin], expected, twin))
        if row.get("failed"):
            echo(f"[{i + 1}/{len(seeds)}] seed {seed}: FAILED: {row['failed']}")
        else:
            echo(f"[{i + 1}/{len(seeds)}] seed {seed}: all {row['all']:.2f} known {row['known']:.2f} "
                 f"novel {row['novel']:.2f} classes {row['classes_est']} ({row['seconds']:.0f}s)")
            rows.append(row)
    return rows


def reproduce_tables(datasets: list[str], methods: list[str], seeds: list[int],
                     priors: list[bool], base: ORALConfig, data_dir: str | None = None, *,
                     results: Path, echo=print, on_summary=None, refresh: bool = False,
                     protocol: str = "ours", known: str = "default") -> list[dict]:
    """The reproduction sweep, one service for its callers (``oral reproduce`` and the
    ``reproduce`` flow): every (dataset, method, prior) row swept over ``seeds``
    (:func:`sweep`, resumable), its CSV row updated (:func:`update_csv`), and the Markdown tables
    written once at the end (:func:`write_markdown`). ``echo`` receives the progress lines,
    ``on_summary`` each summary as its row is written. Returns one summary per row written:
    ``{method, dataset, prior, protocol, known, classes_true}`` and :func:`update_csv`'s means.
    A dataset that cannot be found raises :class:`oral_core.datasets.DatasetNotFound`."""
    summaries = []
    for dataset in datasets:
        for method in methods:
            for prior in priors:
                echo(f"ORAL reproduction: {method} on {dataset}, prior={'yes' if prior else 'no'}, "
                     f"protocol {protocol}, known classes {known}, seeds {seeds[0]}..{seeds[-1]}")
                rows = sweep(dataset, method, seeds, prior, base, data_dir, results=results,
                             echo=echo, refresh=refresh, protocol=protocol, known=known)
                if not rows:  # not applicable in this prior setting, or every seed failed
                    continue
                summary = {"method": method, "dataset": dataset, "prior": prior,
                           "protocol": protocol, "known": known,
                           "classes_true": rows[0]["classes_true"]} | update_csv(rows, results)
                summaries.append(summary)
                if on_summary is not None:
                    on_summary(summary)
    write_markdown(results)
    return summaries


def write_seed_file(path: Path, row: dict) -> None:
    """Write one seed's row atomically: a killed sweep never leaves half a result; the scratch
    name is this writer's own, so two sweeps writing the same seed at once (two hosts of a
    fan-out, two terminals) never write into one file: the last replace wins, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(row, indent=1))
    tmp.replace(path)


def keep_twin(path: Path, row: dict, expected: str, twin: str) -> str:
    """File ``row``, scored under protocol ``twin`` from a training run of another protocol with
    the same split (:func:`~harness.experiment.twin_protocols`), unless ``path`` already holds
    that seed at the same configuration from its own run (no ``trained_under``) with every score
    (:data:`SCORES`): then that run is kept, and a different score says that training is not
    deterministic. A file at another configuration, itself a twin, or lacking a score (or, for
    a failed run, its ``failed`` reason) is replaced. Returns what happened, for the progress
    line."""
    if path.exists():
        old = json.loads(path.read_text())
        own = "trained_under" not in old and (
            bool(old.get("failed")) or all(k in old for k in SCORES))
        if old.get("config_hash") == expected and own:
            if bool(old.get("failed")) != bool(row.get("failed")) or (
                    not row.get("failed") and abs(float(old["all"]) - float(row["all"])) > 1e-6):
                return (f"protocol {twin} (same split) has this seed from its own run with another "
                        f"result ({old.get('all', 'failed')} against {row.get('all', 'failed')}): "
                        f"training is not deterministic here; kept {path}")
            return f"protocol {twin} (same split) has this seed from its own run, the same result"
    write_seed_file(path, row)
    if row.get("failed"):
        return f"also recorded as failed under protocol {twin} (same split, same training): {path}"
    return f"also scored under protocol {twin} (same split, same training): {path}"


def update_csv(rows: list[dict], results: Path) -> dict:
    """Upsert the summary row of one (method, dataset, prior) into ``reproduction.csv``."""
    s = summarise(rows)
    first = rows[0]
    new = {"method": first["method"], "dataset": first["dataset"], "prior": first["prior"],
           "protocol": first.get("protocol", "ours"), "seeds": s["seeds"],
           "classes_true": first["classes_true"]}
    for key in ("all", "known", "novel"):
        new[f"{key}_mean"], new[f"{key}_std"] = round(s[f"{key}_mean"], 2), round(s[f"{key}_std"], 2)
    new["classes_est_mean"] = round(s["classes_est_mean"], 2)
    path = results / "reproduction.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(results / ".reproduction.lock"):  # sweeps of other datasets may run beside us
        table = read_csv(path)
        key = (new["method"], new["dataset"], new["prior"], new["protocol"])
        table = [r for r in table
                 if (r["method"], r["dataset"], r["prior"], r["protocol"]) != key] + [new]
        table.sort(key=lambda r: (r["protocol"] != "ours", r["protocol"], r["method"],
                                  r["dataset"], r["prior"]))
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            writer.writerows({c: r[c] for c in CSV_COLUMNS} for r in table)
        tmp.replace(path)
    return s


@contextmanager
def _locked(path: Path):
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_csv(path: Path) -> list[dict]:
    """Rows of ``reproduction.csv``; rows written before the protocol column are ``ours``."""
    if not path.exists():
        return []
    with path.open() as fh:
        return [r | {"protocol": r.get("protocol") or "ours"} for r in csv.DictReader(fh)]


def _fmt(mean, std=None) -> str:
    mean = float(mean)
    if math.isnan(mean):
        return "–"
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {float(std):.2f}"


PROTOCOL_TEXT = {
    "ours": ["Protocol `ours` (strict): the lowest class ids are known; only the unlabelled nodes",
             "V_U are scored, never the validation nodes that model selection may read."],
    "paper": ["Protocol `paper`: the known classes that reproduce the paper's known share f of its",
              "test set (`harness.experiment.PAPER_KNOWN`), and every node outside the labelled",
              "training set is scored, validation nodes included. A rule that reads validation",
              "nodes (model selection with `selection=best_val`) is partly scored on nodes it chose",
              "by, which inflates this protocol's numbers for that rule."],
}


def markdown_path(results: Path, protocol: str = "ours") -> Path:
    """``reproduction.md`` for the strict protocol, ``reproduction_<protocol>.md`` for others."""
    stem = "reproduction" if protocol == "ours" else "reproduction_" + protocol.replace("+", "_")
    return results / f"{stem}.md"


def write_markdown(results: Path) -> Path:
    """One Markdown file per protocol in ``reproduction.csv`` (:func:`markdown_path`); returns the
    strict protocol's ``reproduction.md``."""
    table = read_csv(results / "reproduction.csv")
    for protocol in sorted({r["protocol"] for r in table} - {"ours"}):
        _write_protocol(results, [r for r in table if r["protocol"] == protocol], protocol)
    return _write_protocol(results, [r for r in table if r["protocol"] == "ours"], "ours")


def _write_protocol(results: Path, table: list[dict], protocol: str) -> Path:
    """Table 2 / 3 / 4 views of one protocol's rows of ``reproduction.csv`` beside the paper."""
    base = protocol.split("+")[0]
    lines = [f"# ORAL reproduction, protocol `{protocol}` (generated by `oral reproduce`; do not "
             "edit by hand)", "", *PROTOCOL_TEXT[base],
             *(["Known classes: a seeded random choice per seed."] if "random" in protocol else []), "",
             "Accuracies in percent on the scored nodes, one Hungarian matching over all of",
             "them, then split into known and novel (GCD convention). Mean ± standard deviation over",
             "seeds. `paper` is the value the paper reports (– where it reports none); `not run`",
             "marks a cell of the paper's table no seed has been run for yet.", ""]
    flag = "" if protocol == "ours" else f" --protocol {base}"
    flag += " --known random" if "random" in protocol else ""
    lines += ["Made by `bash benchmarks/run_tables.sh [dataset ...]`; each row is one",
              f"`oral reproduce --dataset D --method M --seeds 10 --both-priors{flag}` (finished seeds",
              "are reused, so the file only changes when a result does).", ""]
    lines += ["`Known`/`Novel`: GCD convention (one matching over all scored nodes, as `All`); `ORCA`:",
              "known ids compared directly and novel nodes matched on their own, which is most likely",
              "what the paper's Known/Novel columns are (its GCN has Novel 0.00). For `gcn`, which",
              "can only answer known ids, the ORCA columns hold the fixed-id scores (novel 0), as in",
              "the paper. `(old defaults)`: some seed of the row ran with another configuration than",
              "today's defaults (not yet rerun); compare it with nothing run at today's defaults.",
              "`device`: where the row's seeds trained (`cuda`: a lent GPU); the same seed can land",
              "in another basin on another device, so rows of different devices differ by more than",
              "their code.", "",
              "| method | dataset | prior | seeds | All | paper | Known | ORCA | paper | Novel | ORCA "
              "| paper | classes (true) | paper | device |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(table + not_applicable_rows(table) + pending_rows(table, protocol), key=_row_key):
        paper = PAPER.get((r["method"], r["dataset"], r["prior"]), (float("nan"),) * 3)
        if r.get("n/a") or r.get("pending"):
            seeds, cell = ("n/a", "n/a") if r.get("n/a") else ("0", "not run")
            lines.append(f"| {r['method']} | {r['dataset']} | {r['prior']} | {seeds} | {cell} | "
                         f"{_fmt(paper[0])} | {cell} | {cell} | {_fmt(paper[1])} | {cell} | {cell} "
                         f"| {_fmt(paper[2])} | {cell} | – | – |")
            continue
        pc = paper_classes(r["method"], r["dataset"]) if r["prior"] == "no" else None
        seeds = seed_rows(results, r["method"], r["dataset"], r["prior"], r["protocol"])
        s = summarise(seeds or [{}])
        old = " (old defaults)" if stale(results, r["method"], r["dataset"], r["prior"], r["protocol"]) else ""
        orca = ("fixed_known", "fixed_novel") if r["method"] == "gcn" else ("orca_known", "orca_novel")
        lines.append(
            f"| {r['method']}{old} | {r['dataset']} | {r['prior']} | {r['seeds']} | "
            f"{_fmt(r['all_mean'], r['all_std'])} | {_fmt(paper[0])} | "
            f"{_fmt(r['known_mean'], r['known_std'])} | {_fmt(s[orca[0] + '_mean'])} | {_fmt(paper[1])} | "
            f"{_fmt(r['novel_mean'], r['novel_std'])} | {_fmt(s[orca[1] + '_mean'])} | {_fmt(paper[2])} | "
            f"{_fmt(r['classes_est_mean'])} ({r['classes_true']}) | {_fmt(pc) if pc else '–'} | "
            f"{device_summary(seeds)} |")
    lines += ["", *class_number_lines(table, results), "", *ablation_lines(table), "",
              *paired_lines(table, results), "",
              *paired_lines(table, results, "balanced"), "", *selection_lines(table, results), "",
              *convention_lines(table, results), "", *alternative_lines(table, results), "",
              *failure_lines(table, results, protocol)]
    path = markdown_path(results, protocol)
    path.write_text("\n".join(lines) + "\n")
    return path


def device_kind(row: dict) -> str:
    """``cpu`` or ``cuda`` (any CUDA index) for one seed file; ``?`` for a file that predates the
    ``device`` field or failed before training."""
    device = str(row.get("device") or "?")
    return device.split(":")[0]


def device_summary(rows: list[dict]) -> str:
    """Where a row's seeds trained: one kind (``cpu``), or each kind with its seed count
    (``cpu 4, cuda 6``) when a row mixes devices."""
    kinds = [device_kind(r) for r in rows]
    if not kinds:
        return "–"
    if len(set(kinds)) == 1:
        return kinds[0]
    return ", ".join(f"{k} {kinds.count(k)}" for k in sorted(set(kinds)))


def _row_key(r: dict) -> tuple:
    return (r["method"], r["dataset"], r["prior"])


def not_applicable_rows(table: list[dict]) -> list[dict]:
    """Placeholder rows ("n/a") for the prior settings a swept method does not apply to (the
    k-means baseline without the class-number prior)."""
    have = {_row_key(r) for r in table}
    protocol = table[0]["protocol"] if table else "ours"
    out = []
    for method, dataset in sorted({(r["method"], r["dataset"]) for r in table}):
        for prior in ("no", "yes"):
            if (method, dataset, prior) not in have and not_applicable_reason(method, prior == "yes"):
                out.append({"method": method, "dataset": dataset, "prior": prior, "n/a": True,
                            "protocol": protocol})
    return out


def pending_rows(table: list[dict], protocol: str = "ours") -> list[dict]:
    """Placeholder rows ("not run") for the paper's Table 2 cells no seed has been run for yet, so
    the table shows what is missing instead of silently leaving it out."""
    have = {_row_key(r) for r in table}
    return [{"method": m, "dataset": d, "prior": p, "pending": True, "protocol": protocol}
            for (m, d, p) in sorted(PAPER) if (m, d, p) not in have]


def class_number_lines(table: list[dict], results: Path) -> list[str]:
    """Table 3: estimated class number and mean absolute error (no prior), from the seed files."""
    lines = ["## Class-number estimate (paper's Table 3, no prior)", "",
             "`MAE` is the mean over seeds of |estimate − true|; `|mean − true|` is the error of the",
             "mean estimate, which is what the paper's MAE column equals in every cell of its Table 3",
             "(e.g. GCD on Cora: estimate 6.0, MAE 1.0), so that column is the one to compare.", "",
             "| method | dataset | seeds | estimate | true | MAE | \\|mean − true\\| | paper estimate "
             "| paper MAE |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(table + not_applicable_rows(table), key=_row_key):
        if r["prior"] != "no":
            continue
        if r.get("n/a"):
            lines.append(f"| {r['method']} | {r['dataset']} | n/a | n/a | – | n/a | n/a | – | – |")
            continue
        errs = [row["classes_abs_err"]
                for row in seed_rows(results, r["method"], r["dataset"], "no", r["protocol"])]
        mae = sum(errs) / len(errs) if errs else float("nan")
        bias = abs(float(r["classes_est_mean"]) - float(r["classes_true"]))
        pc = paper_classes(r["method"], r["dataset"])
        paper_err = _fmt(abs(pc - float(r["classes_true"]))) if pc else "–"
        lines.append(f"| {r['method']} | {r['dataset']} | {r['seeds']} | {_fmt(r['classes_est_mean'])} | "
                     f"{r['classes_true']} | {_fmt(mae)} | {_fmt(bias)} | {_fmt(pc) if pc else '–'} "
                     f"| {paper_err} |")
    return lines


ABLATION = [("opennc", "×", "×"), ("oral_no_pan", "×", "✓"), ("oral_no_pol", "✓", "×"),
            ("oral", "✓", "✓")]


#: where the paper's Table 4 disagrees with its own Table 2 for the same method and setting
#: (OpenNCD on BlogCatalog with the prior: Novel 47.27 in Table 4, 47.37 in Table 2)
PAPER_TABLE4 = {("opennc", "blogcatalog", "yes"): (42.73, 34.84, 47.27)}


def ablation_lines(table: list[dict]) -> list[str]:
    """Table 4: All / Novel accuracy of the module switches (PAN, POL), ours beside the paper, one
    row per dataset, prior setting and method."""
    index = {(r["method"], r["dataset"], r["prior"]): r for r in table}
    datasets = sorted({r["dataset"] for r in table})
    lines = ["## Ablation (paper's Table 4)", "",
             "| dataset | prior | PAN | POL | method | seeds | All | paper | Novel | paper |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for d in datasets:
        for prior in ("no", "yes"):
            for method, pan, pol in ABLATION:
                r = index.get((method, d, prior))
                paper = PAPER_TABLE4.get((method, d, prior),
                                         PAPER.get((method, d, prior), (float("nan"),) * 3))
                if r is None and math.isnan(paper[0]):
                    continue
                lines.append(
                    f"| {d} | {prior} | {pan} | {pol} | {method} | {r['seeds'] if r else '–'} | "
                    f"{_fmt(r['all_mean'], r['all_std']) if r else '–'} | {_fmt(paper[0])} | "
                    f"{_fmt(r['novel_mean'], r['novel_std']) if r else '–'} | {_fmt(paper[2])} |")
    lines += ["", "`paper` is the paper's Table 4; it equals its Table 2 in every cell but one "
              "(OpenNCD, BlogCatalog, prior: Novel 47.27 here, 47.37 in Table 2)."]
    return lines


PAIRED = ("opennc", "oral_no_pol", "oral_no_pan", "gcd", "gcn", "vgae_kmeans")


def seed_class_balanced(row: dict) -> float | None:
    """Class-balanced accuracy in percent of one seed file, recomputed from its contingency table
    (:func:`oral_core.metrics.class_balanced_accuracy`); None for a file without one."""
    table = row.get("contingency")
    if not table:
        return None
    return 100 * class_balanced_accuracy(*from_contingency(table))


LIKE_FOR_LIKE = ("`like for like`: both rows at today's defaults (no means one of them ran with an "
                 "older")
DEVICES = "`devices`: where the paired seeds trained, ORAL's / the method's; `cpu / cuda` means"
PAIRED_SCORES = {
    "all": ("All accuracy", lambda row: float(row["all"]), [
        "Mean of (ORAL − method) over the seeds both have, its standard error, and on how many",
        "of those seeds ORAL is ahead."]),
    "balanced": ("class-balanced accuracy", seed_class_balanced, [
        "As above, on each seed's accuracy averaged over the true classes under All's one",
        "matching (every class weighs the same; All weighs each by its test nodes), recomputed",
        "from the seed file's contingency table; seeds whose file has none are left out. Not in",
        "the paper: it shows where a method gains All by merging a small class into a large one",
        "(`python -m benchmarks.per_class` lists the classes one by one)."]),
}


def paired_lines(table: list[dict], results: Path, score: str = "all") -> list[str]:
    """ORAL minus each other method on ``score`` (``all``: All accuracy, Eq. 14; ``balanced``:
    class-balanced accuracy), seed by seed (every method sees the same split for a seed, so the
    difference removes the split's share of the spread)."""
    title, value, intro = PAIRED_SCORES[score]
    lines = [f"## ORAL against each method, paired by seed ({title})", "", *intro, ""]
    if score == "all":
        lines += [LIKE_FOR_LIKE, "configuration, so the difference mixes two versions of the "
                  "code's defaults).", DEVICES, "the difference also mixes two devices.", ""]
    lines += ["| dataset | prior | method | seeds | ORAL − method | s.e. | ORAL ahead | like for like "
              "| devices |",
              "|---|---|---|---|---|---|---|---|---|"]
    have = {_row_key(r) for r in table}
    protocol = table[0]["protocol"] if table else "ours"

    def scored(method, dataset, prior):
        rows = {r["seed"]: r for r in seed_rows(results, method, dataset, prior, protocol)}
        values = {seed: value(r) for seed, r in rows.items()}
        return rows, {seed: v for seed, v in values.items() if v is not None}

    for dataset in sorted({r["dataset"] for r in table}):
        for prior in ("no", "yes"):
            if ("oral", dataset, prior) not in have:
                continue
            oral_rows, ours = scored("oral", dataset, prior)
            for method in PAIRED:
                if (method, dataset, prior) not in have:
                    continue
                their_rows, theirs = scored(method, dataset, prior)
                both = sorted(set(ours) & set(theirs))
                diffs = [ours[s] - theirs[s] for s in both]
                if not diffs:
                    continue
                mean, se = mean_se(diffs)
                ahead = sum(d > 0 for d in diffs)
                same = not (stale(results, "oral", dataset, prior, protocol)
                            or stale(results, method, dataset, prior, protocol))
                devices = (f"{device_summary([oral_rows[s] for s in both])} / "
                           f"{device_summary([their_rows[s] for s in both])}")
                lines.append(f"| {dataset} | {prior} | {method} | {len(diffs)} | {mean:+.2f} | "
                             f"{_fmt(se)} | {ahead}/{len(diffs)} | {'yes' if same else 'no'} | "
                             f"{devices} |")
    return lines


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (NaN for fewer than two values)."""
    mean = sum(values) / len(values) if values else float("nan")
    se = (math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
          if len(values) > 1 else float("nan"))
    return mean, se


def selection_lines(table: list[dict], results: Path) -> list[str]:
    """Which epoch model selection kept (validation accuracy on labelled known-class nodes), and
    on how many seeds that epoch came before pseudo-label guided learning started: there the
    result is the same as without POL."""
    lines = ["## Model selection: the epoch kept", "",
             "Epoch with the best validation accuracy (labelled nodes of known classes only). Epoch e",
             "is evaluated after e optimiser steps, so a seed whose kept epoch is at most",
             "`pol_start_epoch` scores what the no-POL ablation would (`before POL starts`).", "",
             "| method | dataset | prior | seeds | median epoch | epochs | before POL starts |",
             "|---|---|---|---|---|---|---|"]
    for r in sorted(table, key=_row_key):
        rows = [row for row in seed_rows(results, r["method"], r["dataset"], r["prior"], r["protocol"])
                if "selected_epoch" in row and "pol" in row.get("config", {})]
        if not rows:
            continue
        kept = sorted(int(row["selected_epoch"]) for row in rows)
        epochs = int(rows[0]["config"].get("epochs", 0))
        # epoch e is evaluated after e optimiser steps; pseudo-labels first enter the step taken
        # at pol_start_epoch, so a kept epoch up to and including it has never seen them
        early = sum(int(row["selected_epoch"]) <= int(row["config"].get("pol_start_epoch", 0))
                    for row in rows if row["config"]["pol"])
        pol = "–" if not rows[0]["config"]["pol"] else f"{early}/{len(rows)}"
        lines.append(f"| {r['method']} | {r['dataset']} | {r['prior']} | {len(rows)} | "
                     f"{kept[len(kept) // 2]} | {epochs} | {pol} |")
    return lines


def convention_lines(table: list[dict], results: Path) -> list[str]:
    """The same runs under the three scoring conventions (:mod:`oral_core.metrics`), from the seed
    files; "–" where a seed file predates a convention (``oral reproduce --refresh`` reruns it)."""
    lines = ["## Scoring conventions", "",
             "GCD: one Hungarian matching over all test nodes (the paper's, used above). ORCA: known",
             "ids compared directly, novel nodes matched on their own. Fixed ids: known ids compared",
             "directly, novel ids matched to novel classes only, so a novel node given a known id is",
             "wrong (a model that never predicts a novel id scores 0 on Novel, as in the paper's GCN row).",
             "", "| method | dataset | prior | seeds | GCD All | ORCA Known | ORCA Novel | "
             "Fixed All | Fixed Known | Fixed Novel |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(table, key=_row_key):
        rows = seed_rows(results, r["method"], r["dataset"], r["prior"], r["protocol"])
        if not rows:
            continue
        s = summarise(rows)
        cells = [_fmt(s[f"{k}_mean"], s[f"{k}_std"]) for k in
                 ("all", "orca_known", "orca_novel", "fixed_all", "fixed_known", "fixed_novel")]
        lines.append(f"| {r['method']} | {r['dataset']} | {r['prior']} | {len(rows)} | " + " | ".join(cells) + " |")
    return lines


def alternative_lines(table: list[dict], results: Path) -> list[str]:
    """What each model-selection rule scores on the same training runs (seed files that record
    ``selection_alternatives``). A diagnostic read off test labels: it never chooses anything."""
    lines = ["## Selection rules on the same training runs (diagnostic, test labels)", "",
             "Every ORAL run records what `selection=best_val` and `selection=last` would have kept.",
             "Defaults are chosen by the held-out-class proxy on labelled nodes only",
             "(`benchmarks/results/proxy/proxy_rules_*.md`), never from this table.", "",
             "| method | dataset | prior | seeds | kept (config) | All best_val | All last | last − best_val |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(table, key=_row_key):
        rows = [row for row in seed_rows(results, r["method"], r["dataset"], r["prior"], r["protocol"])
                if len(row.get("selection_alternatives") or {}) == 2]
        if not rows:
            continue
        best = [row["selection_alternatives"]["best_val"]["all"] for row in rows]
        last = [row["selection_alternatives"]["last"]["all"] for row in rows]
        kept = rows[0]["config"].get("selection", "best_val")
        diff = sum(b - a for a, b in zip(best, last)) / len(rows)
        lines.append(f"| {r['method']} | {r['dataset']} | {r['prior']} | {len(rows)} | {kept} | "
                     f"{sum(best) / len(best):.2f} | {sum(last) / len(last):.2f} | {diff:+.2f} |")
    return lines


def failure_lines(table: list[dict], results: Path, protocol: str) -> list[str]:
    """Seeds that failed to train: reported as failures, never as numbers in the tables above."""
    lines = ["## Runs that failed to train", "",
             "A run whose validation accuracy never rose above the majority-class share learnt",
             "nothing; it is left out of every mean above and listed here.", ""]
    found = []
    keys = {(r["method"], r["dataset"], r["prior"]) for r in table}
    runs = results / "runs"
    if runs.exists():
        for folder in sorted(p for p in runs.glob("*/*") if p.is_dir()):
            for row in read_seed_files(folder):
                if row.get("failed") and row.get("protocol", "ours") == protocol:
                    found.append(row)
                    keys.discard((row["method"], row["dataset"], row["prior"]))
    lines += [f"- {row['method']} {row['dataset']} prior={row['prior']} seed {row['seed']}: "
              f"{row['failed']}" for row in found] or ["None."]
    return lines
