"""The experiment figures render from finished results, and say what is missing otherwise."""
from __future__ import annotations

import json

import pytest

from benchmarks.figures import layers, sensitivity, table2
from harness.reproduction import update_csv


def _row(method, dataset, prior, all_, seed=0):
    return {"method": method, "dataset": dataset, "prior": prior, "seed": seed, "all": all_,
            "known": all_, "novel": all_, "classes_est": 7, "classes_true": 7,
            "classes_abs_err": 0, "seconds": 1.0, "layers_all": [all_ - 5, all_ + 5],
            "layers_known": [all_, all_], "layers_novel": [all_, all_], "selected_epoch": 20}


def test_table2_plots_every_dataset_and_prior(tmp_path):
    update_csv([_row("oral", "cora", "no", 55.0), _row("oral", "cora", "no", 57.0)], tmp_path)
    update_csv([_row("gcd", "cora", "yes", 60.0)], tmp_path)
    path = table2(tmp_path)
    assert path.name == "table2_all.png" and path.read_bytes()[:4] == b"\x89PNG"


def test_table2_without_results_says_so(tmp_path):
    (tmp_path / "reproduction.csv").write_text("method,dataset,prior\n")
    with pytest.raises(SystemExit, match="no rows"):
        table2(tmp_path)


def test_layers_table_has_each_layer_and_the_ensemble(tmp_path):
    folder = tmp_path / "runs" / "oral" / "cora-noprior"
    folder.mkdir(parents=True)
    for seed, a in enumerate((50.0, 60.0)):
        (folder / f"seed_{seed}.json").write_text(json.dumps(_row("oral", "cora", "no", a, seed)))
    layers(tmp_path)
    md = (tmp_path / "figures" / "figure4_layers.md").read_text()
    # layer 1 = all - 5, layer 2 = all + 5, ensemble = all: means 50, 60, 55 over the two seeds
    # no checks recorded: the unchecked ensemble is the reported one
    assert "| cora-noprior | 2 | all | 50.00 ± 7.07 | 60.00 ± 7.07 | 55.00 ± 7.07 | 55.00 ± 7.07 |" in md
    assert (tmp_path / "figures" / "figure4_layers.png").exists()


def test_layers_table_covers_both_protocols_and_the_unchecked_ensemble(tmp_path):
    for name, a in (("cora-noprior", 50.0), ("cora-noprior-paper", 70.0)):
        folder = tmp_path / "runs" / "oral" / name
        folder.mkdir(parents=True)
        row = _row("oral", "cora", "no", a) | {"selection_alternatives": {"last_unchecked": {
            "all": a - 2, "known": a - 2, "novel": a - 2}}}
        (folder / "seed_0.json").write_text(json.dumps(row))
    layers(tmp_path)
    md = (tmp_path / "figures" / "figure4_layers.md").read_text()
    assert "| ensemble_unchecked | ensemble |" in md
    assert "| cora-noprior | 1 | all | 45.00 ± 0.00 | 55.00 ± 0.00 | 48.00 ± 0.00 | 50.00 ± 0.00 |" in md
    assert "| cora-noprior-paper | 1 | all | 65.00 ± 0.00 | 75.00 ± 0.00 | 68.00 ± 0.00 | 70.00 ± 0.00 |" in md


def test_layers_without_seeds_says_where_it_looked(tmp_path):
    with pytest.raises(SystemExit, match="no finished ORAL seeds"):
        layers(tmp_path)


def _write_seeds(folder, values):
    folder.mkdir(parents=True)
    for seed, a in enumerate(values):
        (folder / f"seed_{seed}.json").write_text(json.dumps(_row("oral", "blogcatalog", "yes", a, seed)))


def test_sensitivity_reads_the_prior_setting_and_numeric_seed_order(tmp_path):
    # the paper's default (N_pro 40) comes from the main sweep; eleven seeds so that seed_10
    # would sort before seed_2 as text: the first three by number are 50, 52, 54
    _write_seeds(tmp_path / "runs" / "oral" / "blogcatalog-prior", [50.0 + 2 * i for i in range(11)])
    _write_seeds(tmp_path / "runs" / "oral" / "blogcatalog-noprior", [10.0, 10.0, 10.0])
    _write_seeds(tmp_path / "sensitivity" / "gamma=0.2" / "runs" / "oral" / "blogcatalog-prior",
                 [70.0])
    _write_seeds(tmp_path / "sensitivity" / "mu=0.02" / "runs" / "oral" / "blogcatalog-prior",
                 [45.0])
    md = sensitivity("blogcatalog", 3, None, results=tmp_path, run=False)
    text = md.read_text()
    assert md.name == "figure5_sensitivity_blogcatalog-prior.md" and "--prior --seeds 3" in text
    assert "| num_prototypes | 40 | 3 | 52.00 ± 2.00 |" in text  # not the no-prior 10.0s
    # the default row against itself: zero; gamma 0.2 ran seed 0 only, paired with seed 0 (50.0)
    assert "| num_prototypes | 40 | 3 | 52.00 ± 2.00 | 52.00 ± 2.00 | +0.00 ± 0.00 | 20, 20, 20 |" in text
    assert "| gamma | 0.2 | 1 | 70.00 ± 0.00 | 70.00 ± 0.00 | +20.00 ± 0.00 | 20 |" in text
    assert "| mu | 0.01 | 0 | - | - | - | - |" in text  # not run: shown as missing
    assert "| mu | 0.02 | 1 | 45.00 ± 0.00 | 45.00 ± 0.00 | -5.00 ± 0.00 | 20 |" in text
    assert md.with_suffix(".png").exists()


def test_sensitivity_with_base_overrides_reads_its_own_defaults(tmp_path):
    # the main sweep's seeds must not be used as the default point once the base changes
    _write_seeds(tmp_path / "runs" / "oral" / "blogcatalog-prior", [10.0, 10.0])
    study = tmp_path / "sensitivity" / "select_from_epoch=30"
    _write_seeds(study / "default" / "runs" / "oral" / "blogcatalog-prior", [50.0, 54.0])
    _write_seeds(study / "gamma=0.5" / "runs" / "oral" / "blogcatalog-prior", [60.0, 58.0])
    md = sensitivity("blogcatalog", 2, None, results=tmp_path, run=False,
                     overrides={"select_from_epoch": "30"})
    text = md.read_text()
    assert md.name == "figure5_sensitivity_blogcatalog-prior_select_from_epoch=30.md"
    assert "--seeds 2 --set select_from_epoch=30" in text
    assert "| gamma | 0.3 | 2 | 52.00 ± 2.83 |" in text
    assert "| gamma | 0.5 | 2 | 59.00 ± 1.41 | 59.00 ± 1.41 | +7.00 ± 4.24 |" in text
    assert "| mu | 0.01 | 0 | - |" in text


@pytest.mark.parametrize("overrides, message", [({"gamma": "0.5"}, "what the study varies"),
                                                ({"no_such_key": "1"}, "unknown configuration")])
def test_sensitivity_refuses_bad_overrides(tmp_path, overrides, message):
    with pytest.raises(SystemExit, match=message):
        sensitivity("blogcatalog", 1, None, results=tmp_path, run=False, overrides=overrides)
