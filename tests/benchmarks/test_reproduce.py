"""The reproduction harness: seeds and splits, resumability, tables, CLI errors."""
from __future__ import annotations

import csv
import json

import pytest
import torch

from cli.main import main
from oral_core.config import ORALConfig
from harness.experiment import METHODS, method_config, prepare, to_dataset_ids
from harness.reproduction import CSV_COLUMNS, sweep, update_csv, write_markdown
from oral_core.splits import make_split

TINY = ORALConfig(epochs=8, hidden_dim=8, num_prototypes=8, cluster_warmup_epochs=1,
                  pol_start_epoch=1, resolution_steps=5, progress=False,
                  selection="best_val")  # 8 epochs are too few for the last one to have learnt




def test_every_method_sees_the_same_split_for_a_seed(npz_graph):
    y = prepare(str(npz_graph)).graph.y
    a, b = make_split(y, seed=5), make_split(y, seed=5)
    assert torch.equal(a.train_mask, b.train_mask) and torch.equal(a.val_mask, b.val_mask)
    configs = [method_config(m, TINY, None, 5) for m in METHODS]
    assert {c.seed for c in configs} == {5}
    assert [(c.pan, c.pol) for c in configs] == [(True, True), (False, True), (True, False),
                                                 (False, False)]
    with pytest.raises(ValueError, match="unknown method"):
        method_config("gcn-ish", TINY, None, 0)


def test_sweep_resumes_and_reruns_on_changed_config(npz_graph, tmp_path):
    out = tmp_path / "results"
    said = []
    rows = sweep(str(npz_graph), "oral", [0, 1], False, TINY, results=out, echo=said.append)
    assert len(rows) == 2 and all(0 <= r["all"] <= 100 for r in rows)
    files = sorted((out / "runs" / "oral" / "tiny-noprior").glob("seed_*.json"))
    assert [f.name for f in files] == ["seed_0.json", "seed_1.json"]
    said.clear()
    again = sweep(str(npz_graph), "oral", [0, 1], False, TINY, results=out, echo=said.append)
    assert all("reused" in line for line in said)
    assert [r["all"] for r in again] == [r["all"] for r in rows]
    said.clear()
    changed = ORALConfig.from_dict(TINY.to_dict() | {"gamma": 0.4})
    sweep(str(npz_graph), "oral", [0], False, changed, results=out, echo=said.append)
    assert "configuration changed" in said[0]
    assert json.loads(files[0].read_text())["config"]["gamma"] == 0.4


def test_refresh_reruns_only_seeds_that_lack_a_score(npz_graph, tmp_path):
    out = tmp_path / "results"
    sweep(str(npz_graph), "oral", [0, 1], False, TINY, results=out, echo=lambda s: None)
    old = out / "runs" / "oral" / "tiny-noprior" / "seed_1.json"
    row = json.loads(old.read_text())
    fixed = row.pop("fixed_novel")
    del row["fixed_all"], row["fixed_known"]
    old.write_text(json.dumps(row))  # as a file written before the fixed-id scores existed
    said = []
    rows = sweep(str(npz_graph), "oral", [0, 1], False, TINY, results=out, echo=said.append)
    assert all("reused" in line for line in said)  # without --refresh: kept as it is
    assert "fixed_novel" not in rows[1]
    update_csv(rows, out)
    md = write_markdown(out).read_text().split("## Scoring conventions")[1].split("## Selection")[0]
    assert "| oral | tiny | no | 2 |" in md and md.rstrip().endswith("| – | – | – |")
    said.clear()
    rows = sweep(str(npz_graph), "oral", [0, 1], False, TINY, results=out, echo=said.append,
                 refresh=True)
    assert "reused" in said[0] and "lacks fixed_all, fixed_known, fixed_novel" in said[1]
    assert rows[1]["fixed_novel"] == fixed  # deterministic: the same score comes back
    write_markdown(out)
    conventions = (out / "reproduction.md").read_text().split("## Scoring conventions")[1]
    assert not conventions.split("## Selection")[0].rstrip().endswith("| – | – | – |")


def test_seed_result_is_deterministic(npz_graph, tmp_path):
    a = sweep(str(npz_graph), "opennc", [2], True, TINY, results=tmp_path / "a", echo=lambda s: None)
    b = sweep(str(npz_graph), "opennc", [2], True, TINY, results=tmp_path / "b", echo=lambda s: None)
    assert a[0]["all"] == b[0]["all"] and a[0]["classes_est"] == b[0]["classes_est"]
    assert a[0]["prior"] == "yes" and a[0]["config"]["prior_num_classes"] == 4


def test_tables_have_the_agreed_columns_and_upsert(tmp_path):
    rows = [{"method": "oral", "dataset": "cora", "prior": "no", "classes_true": 7, "all": a,
             "known": 70.0, "novel": 60.0, "orca_known": 80.0, "orca_novel": 50.0, "classes_est": 7,
             "classes_abs_err": 0, "seconds": 1.0} for a in (60.0, 70.0)]
    s = update_csv(rows, tmp_path)
    assert s["all_mean"] == pytest.approx(65.0) and s["all_std"] == pytest.approx(7.0710678)
    update_csv(rows[:1], tmp_path)  # same key: replaced, not appended
    with (tmp_path / "reproduction.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == CSV_COLUMNS and len(table) == 1 and table[0]["seeds"] == "1"
    md = write_markdown(tmp_path).read_text()
    assert "69.91" in md and "60.00 ± 0.00" in md and "Ablation" in md


def test_novel_ids_never_collide_with_dataset_ids():
    known = torch.tensor([0, 2, 5])
    ids = to_dataset_ids(torch.tensor([0, 1, 2, 3, 4]), known, num_classes=6)
    assert ids.tolist() == [0, 2, 5, 6, 7]


def test_cli_reports_a_missing_dataset(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ORAL_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["reproduce", "--dataset", str(tmp_path / "nothing.npz"), "--seeds", "1",
                 "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 2
    assert "nothing.npz" in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    (["--set", "no_such_key=1"], "error: --set no_such_key=1: unknown configuration key"),
    (["--set", "gamma=5"], "error: --set gamma=5: gamma must be in (0, 1]"),
    (["--set", "pol=ture"], "error: --set pol=ture: pol must be true or false"),
    (["--set", "selection=first"], "error: --set selection=first: selection must be one of"),
    (["--epochs", "0"], "error: --epochs 0: epochs must be >= 1"),
    (["--seeds", "0"], "error: --seeds 0 --first-seed 0: need at least one seed"),
])
def test_cli_refuses_bad_options_in_one_line_before_any_work(tmp_path, capsys, options, message):
    code = main(["reproduce", "--dataset", "cora", "--out", str(tmp_path), *options])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(message) and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing was run or written


def test_paired_table_differences_seed_by_seed(tmp_path):
    def seed_files(method, scores):
        folder = tmp_path / "runs" / method / "cora-noprior"
        folder.mkdir(parents=True)
        rows = []
        for seed, a in scores.items():
            row = {"method": method, "dataset": "cora", "prior": "no", "seed": seed, "all": a,
                   "known": a, "novel": a, "classes_est": 7, "classes_true": 7,
                   "classes_abs_err": 0, "seconds": 1.0}
            (folder / f"seed_{seed}.json").write_text(json.dumps(row))
            rows.append(row)
        update_csv(rows, tmp_path)
    seed_files("oral", {0: 60.0, 1: 50.0, 2: 70.0})
    seed_files("opennc", {0: 55.0, 1: 52.0, 3: 99.0})  # seed 3 has no ORAL partner: left out
    md = write_markdown(tmp_path).read_text().split("paired by seed")[1]
    # differences +5 and -2: mean +1.5, s.e. = sd / sqrt(2) = 4.95 / 1.41 = 3.50, ahead on 1 of 2
    assert "| cora | no | opennc | 2 | +1.50 | 3.50 | 1/2 |" in md
    assert "| 1/2 | no | ? / ? |" in md  # files without a device field say so, never a guess


def test_paired_table_on_class_balanced_accuracy_reads_the_contingency(tmp_path):
    # Two classes, 8 + 2 test nodes. ORAL finds the small class at the cost of two big-class
    # nodes; OpenNCD merges both into one group. All: 80 vs 80 on seed 0; balanced: 87.5 vs 50.
    found = [[0, 0, 6], [0, 1, 2], [1, 1, 2]]
    merged = [[0, 0, 8], [1, 0, 2]]
    for method, table in (("oral", found), ("opennc", merged)):
        folder = tmp_path / "runs" / method / "cora-noprior"
        folder.mkdir(parents=True)
        rows = []
        for seed in (0, 1):
            row = {"method": method, "dataset": "cora", "prior": "no", "seed": seed, "all": 80.0,
                   "known": 80.0, "novel": 80.0, "classes_est": 2, "classes_true": 2,
                   "classes_abs_err": 0, "seconds": 1.0}
            if seed == 0 or method == "oral":  # OpenNCD's seed 1 predates contingency tables
                row["contingency"] = table
            (folder / f"seed_{seed}.json").write_text(json.dumps(row))
            rows.append(row)
        update_csv(rows, tmp_path)
    md = write_markdown(tmp_path).read_text()
    on_all, balanced = md.split("## ORAL against each method, paired by seed")[1:3]
    assert on_all.startswith(" (All accuracy)") and "| cora | no | opennc | 2 | +0.00 |" in on_all
    assert balanced.startswith(" (class-balanced accuracy)")
    assert "| cora | no | opennc | 1 | +37.50 | – | 1/1 |" in balanced  # seed 1 left out


def test_tables_name_the_device_each_row_and_pair_trained_on(tmp_path):
    def seed_files(method, devices):
        folder = tmp_path / "runs" / method / "cora-noprior"
        folder.mkdir(parents=True)
        rows = []
        for seed, device in enumerate(devices):
            row = {"method": method, "dataset": "cora", "prior": "no", "seed": seed, "all": 50.0,
                   "known": 50.0, "novel": 50.0, "classes_est": 7, "classes_true": 7,
                   "classes_abs_err": 0, "seconds": 1.0, "device": device}
            (folder / f"seed_{seed}.json").write_text(json.dumps(row))
            rows.append(row)
        update_csv(rows, tmp_path)
    seed_files("oral", ["cuda:0", "cuda:0", "cpu"])
    seed_files("opennc", ["cpu", "cpu", "cpu"])
    md = write_markdown(tmp_path).read_text()
    main_table = {l.split(" | ")[0]: l for l in md.split("## ")[0].splitlines()
                  if "| cora | no |" in l}  # "| oral (old defaults)": these files carry no hash
    assert main_table["| oral (old defaults)"].endswith("| cpu 1, cuda 2 |")
    assert main_table["| opennc (old defaults)"].endswith("| cpu |")
    paired = md.split("paired by seed")[1]
    assert "| cora | no | opennc | 3 | +0.00 |" in paired
    assert "| cpu 1, cuda 2 / cpu |" in paired


def test_selection_table_counts_seeds_kept_before_pol_starts(tmp_path):
    folder = tmp_path / "runs" / "oral" / "cora-noprior"
    folder.mkdir(parents=True)
    rows = []
    for seed, epoch in enumerate((5, 40, 30, 31, 90)):
        row = {"method": "oral", "dataset": "cora", "prior": "no", "seed": seed, "all": 50.0,
               "known": 50.0, "novel": 50.0, "classes_est": 7, "classes_true": 7,
               "classes_abs_err": 0, "seconds": 1.0, "selected_epoch": epoch,
               "config": {"pol": True, "pol_start_epoch": 30, "epochs": 100}}
        (folder / f"seed_{seed}.json").write_text(json.dumps(row))
        rows.append(row)
    update_csv(rows, tmp_path)
    md = write_markdown(tmp_path).read_text().split("## Model selection")[1]
    # epochs 5 and 30 were evaluated before any step with pseudo-labels; 31 after the first
    assert "| oral | cora | no | 5 | 31 | 100 | 2/5 |" in md


def test_run_tables_script_sweeps_every_method_of_the_tables(tmp_path):
    """benchmarks/run_tables.sh calls `oral reproduce` for ORAL, its ablations and the baselines,
    each in the prior settings it applies to (checked with a stand-in that logs its arguments)."""
    import os
    import subprocess
    from pathlib import Path
    log = tmp_path / "calls.txt"
    fake = tmp_path / "oral"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\n')
    fake.chmod(0o755)
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "run_tables.sh"
    subprocess.run(["bash", str(script), "cora"], check=True, env={**os.environ, "ORAL": str(fake)})
    calls = log.read_text().splitlines()
    by_protocol = {p: {c.split("--method ")[1].split()[0]: c for c in calls if f"--protocol {p}" in c}
                   for p in ("ours", "paper")}
    assert len(calls) == sum(len(m) for m in by_protocol.values())
    assert set(by_protocol["ours"]) == {"oral", "opennc", "gcd", "gcn", "vgae_kmeans"}
    methods = by_protocol["paper"]  # Table 4's ablations under the paper's protocol
    assert set(methods) == {"oral", "opennc", "oral_no_pol", "oral_no_pan", "gcd", "gcn", "vgae_kmeans"}
    assert all("--dataset cora" in c and "--seeds 10" in c for c in calls)
    assert "--both-priors" in methods["gcd"] and "--both-priors" in methods["oral"]
    assert "--prior" in methods["vgae_kmeans"].split() and "prior" not in methods["gcn"]


def test_ablation_quotes_table_4_where_it_differs_from_table_2():
    from harness.reproduction import ablation_lines
    row = {"method": "opennc", "dataset": "blogcatalog", "prior": "yes", "seeds": 1,
           "all_mean": 50.0, "all_std": 0.0, "novel_mean": 40.0, "novel_std": 0.0}
    line = next(x for x in ablation_lines([row]) if "| yes | × | × | opennc |" in x)
    assert line.endswith("| 42.73 | 40.00 ± 0.00 | 47.27 |")  # Table 2 has 47.37


def test_committed_seed_files_still_match_todays_defaults():
    """A configuration field added later must not invalidate finished seeds: every committed
    ORAL seed file of Table 2's strict rows, recomputed at today's defaults, has the hash it was
    saved with (else ``oral reproduce`` would rerun hours of seeds after a new switch; a new
    field whose default reproduces the old behaviour belongs in ``LATER_FIELDS``)."""
    from pathlib import Path

    from oral_core.identity import config_hash

    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "runs" / "oral"
    files = sorted(root.glob("cora-*/seed_*.json"))
    assert files, f"no committed seed file under {root}"
    for path in files:
        row = json.loads(path.read_text())
        prior = 7 if row["prior"] == "yes" else None
        cfg = method_config("oral", ORALConfig(), prior, row["seed"])
        assert config_hash(cfg, row["features"]) == row["config_hash"], path


def test_opennc_runs_without_the_known_group_checks_whatever_oral_defaults_to() -> None:
    """OpenNCD is a baseline: it keeps its own answer even when ORAL's checks of the known groups
    are on, so its committed rows keep their hash; the ablations keep the checks (ORAL's
    defaults but one module)."""
    from oral_core.identity import config_hash
    checked = ORALConfig.from_dict(ORALConfig().to_dict() | {"known_split_share": 0.5,
                                                            "known_absorb_share": 0.5,
                                                            "known_absorb_guard": True})
    opennc = method_config("opennc", checked, 7, 3)
    assert (opennc.pan, opennc.pol, opennc.known_split_share, opennc.known_absorb_share,
            opennc.known_absorb_guard) == (False, False, None, None, False)
    assert config_hash(opennc, "row") == config_hash(method_config("opennc", ORALConfig(), 7, 3), "row")
    for method in ("oral", "oral_no_pan", "oral_no_pol"):
        cfg = method_config(method, checked, 7, 3)
        assert (cfg.known_split_share, cfg.known_absorb_share) == (0.5, 0.5)
