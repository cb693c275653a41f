"""Evaluation protocols, the failed-run guard, the model-selection switch and the selection proxy."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from benchmarks.proxy_rules import main as proxy_main
from benchmarks.tune import proxy_rules, proxy_task, rule_epochs
from harness.baselines import GCNConfig
from oral_core.config import ORALConfig
from harness.experiment import (PAPER_KNOWN, FailedRun, Prepared, check_learnt, paper_known_classes,
                                  protocol_split, protocol_tag, run_seed,
                                  run_seed_protocols, twin_protocols)
from harness.reproduction import failed_seeds, read_csv, seed_rows, sweep, update_csv, write_markdown
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL

DATA = Path(__file__).resolve().parents[3] / "shared" / "datasets"
# the known-group checks off: 8 epochs leave groups too rough for them, and these tests are
# about the protocols' plumbing
SMALL = ORALConfig(epochs=8, hidden_dim=8, num_prototypes=8, cluster_warmup_epochs=1,
                   pol_start_epoch=3, resolution_steps=5, progress=False, device="cpu",
                   known_split_share=None, known_absorb_share=None)


@pytest.fixture(scope="module")
def planted():
    return make_attributed_sbm(num_nodes=240, num_classes=5, feature_dim=8, seed=1)


# ------------------------------------------------------------------------------ protocols
def test_strict_protocol_scores_only_unlabelled_nodes(planted):
    split, scored = protocol_split(planted, 0, "ours")
    assert torch.equal(scored, split.test_mask)
    assert not (scored & (split.train_mask | split.val_mask)).any()
    assert split.known_classes.tolist() == [0, 1, 2, 3]  # lowest ids


def test_paper_protocol_scores_validation_nodes_too(planted):
    split, scored = protocol_split(planted, 0, "paper")
    assert torch.equal(scored, ~split.train_mask)
    assert (scored & split.val_mask).sum() == split.val_mask.sum() > 0
    # f, the known share of the scored nodes, follows from the class sizes:
    # 30% of each known class (floor(0.7 n) trained) plus every novel node
    y = planted.y
    known_scored = sum(int((y == c).sum()) - int((split.train_mask & (y == c)).sum())
                       for c in split.known_classes.tolist())
    novel = int((~torch.isin(y, split.known_classes)).sum())
    f = float(torch.isin(y[scored], split.known_classes).float().mean())
    assert f == pytest.approx(known_scored / (known_scored + novel))
    _, strict = protocol_split(planted, 0, "ours")
    assert float(torch.isin(y[strict], split.known_classes).float().mean()) < f


def test_paper_protocol_takes_the_papers_known_classes_by_name(planted):
    names = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
             "Reinforcement_Learning", "Rule_Learning", "Theory"]
    y = torch.arange(7).repeat_interleave(30)
    cora = dataclasses.replace(planted, y=y, x=torch.rand(210, 4), name="cora", class_names=names,
                               edge_index=torch.zeros(2, 0, dtype=torch.long))
    assert paper_known_classes(cora) == [1, 2, 3, 4, 6]  # novel: Case_Based, Rule_Learning
    split, _ = protocol_split(cora, 3, "paper")
    assert split.known_classes.tolist() == [1, 2, 3, 4, 6]
    assert protocol_split(cora, 3, "ours")[0].known_classes.tolist() == [0, 1, 2, 3, 4]
    renamed = dataclasses.replace(cora, class_names=[n.lower() for n in names])
    with pytest.raises(ValueError, match="not among the dataset's classes"):
        paper_known_classes(renamed)
    assert paper_known_classes(dataclasses.replace(cora, name="other")) is None


def test_random_known_classes_are_seeded_and_vary(planted):
    pick = {s: protocol_split(planted, s, "ours", "random")[0].known_classes.tolist() for s in range(6)}
    assert pick[2] == protocol_split(planted, 2, "ours", "random")[0].known_classes.tolist()
    assert len({tuple(v) for v in pick.values()}) > 1 and all(len(v) == 4 for v in pick.values())
    assert protocol_tag("paper", "random") == "paper+random-known"
    with pytest.raises(ValueError, match="protocol must be one of"):
        protocol_tag("strict")


@pytest.mark.skipif(not DATA.exists(), reason=f"real datasets not found at {DATA}")
@pytest.mark.parametrize("dataset, f", [("cora", 0.584), ("amazonphoto", 0.607),
                                         ("blogcatalog", 0.370)])
def test_paper_protocol_reproduces_the_papers_known_share(dataset, f):
    from harness.experiment import prepare
    g = prepare(dataset, str(DATA)).graph
    assert dataset in PAPER_KNOWN
    for seed in (0, 1):
        split, scored = protocol_split(g, seed, "paper")
        assert float(torch.isin(g.y[scored], split.known_classes).float().mean()) == pytest.approx(f, abs=0.002)


def test_sweep_keeps_protocols_apart(planted, tmp_path):
    prep = Prepared(planted, planted.x, "none")
    import harness.reproduction as rep
    rep_prepare = rep.prepare
    rep.prepare = lambda dataset, data_dir=None: prep
    try:
        ours = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=lambda s: None)
        paper = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=lambda s: None,
                      protocol="paper")
    finally:
        rep.prepare = rep_prepare
    assert ours[0]["protocol"] == "ours" and paper[0]["protocol"] == "paper"
    assert paper[0]["scored_known_share"] > ours[0]["scored_known_share"]
    update_csv(ours, tmp_path)
    update_csv(paper, tmp_path)
    assert sorted(r["protocol"] for r in read_csv(tmp_path / "reproduction.csv")) == ["ours", "paper"]
    write_markdown(tmp_path)
    assert "protocol `paper`" in (tmp_path / "reproduction_paper.md").read_text()
    assert "protocol `ours`" in (tmp_path / "reproduction.md").read_text()
    name = planted.name
    assert seed_rows(tmp_path, "oral", name, "no", "paper")[0]["protocol"] == "paper"
    alternatives = ours[0]["selection_alternatives"]
    assert set(alternatives) == {"best_val", "last"} and alternatives["last"]["epoch"] == SMALL.epochs


def _sweeping(prep, monkeypatch):
    import harness.reproduction as rep
    monkeypatch.setattr(rep, "prepare", lambda dataset, data_dir=None: prep)


def test_twin_protocols_are_those_with_the_same_split(planted):
    # the planted graph is not one of the paper's: its paper known classes are the lowest ids
    assert twin_protocols(planted, 0, "ours") == ["paper"]
    assert twin_protocols(planted, 0, "paper") == ["ours"]
    assert twin_protocols(planted, 0, "ours", "random") == ["paper"]
    names = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
             "Reinforcement_Learning", "Rule_Learning", "Theory"]
    y = torch.arange(7).repeat_interleave(30)
    cora = dataclasses.replace(planted, y=y, x=torch.rand(210, 4), name="cora", class_names=names,
                               edge_index=torch.zeros(2, 0, dtype=torch.long))
    assert twin_protocols(cora, 0, "ours") == []  # other known classes: two trainings
    prep = Prepared(cora, cora.x, "none")
    with pytest.raises(ValueError, match="one training cannot serve them all"):
        run_seed_protocols(prep, "gcn", 0, False, ORALConfig(device="cpu"), ["ours", "paper"])


def test_one_training_scores_every_protocol_with_the_same_split(planted, tmp_path, monkeypatch):
    _sweeping(Prepared(planted, planted.x, "none"), monkeypatch)
    said = []
    ours = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=said.append)
    assert any("also scored under protocol paper" in s for s in said)
    assert said[-1].startswith("[1/1] seed 0: all ")  # the seed's own result line comes last
    twin = seed_rows(tmp_path, "oral", planted.name, "no", "paper")[0]
    assert twin["trained_under"] == "ours" and twin["protocol"] == "paper"
    assert twin["config_hash"] == ours[0]["config_hash"] and twin["val_acc"] == ours[0]["val_acc"]
    assert twin["scored_known_share"] > ours[0]["scored_known_share"]  # validation nodes scored
    # the paper sweep reuses it rather than training again ...
    said.clear()
    paper = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=said.append, protocol="paper")
    assert "done before, reused" in said[0] and paper[0]["all"] == twin["all"]
    # ... and a separate training under the paper protocol gives the same scores
    alone = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path / "alone", echo=lambda s: None,
                  protocol="paper")
    for key in ("all", "known", "novel", "classes_est", "contingency"):
        assert alone[0][key] == twin[key]


def test_a_twin_never_overwrites_a_seed_run_on_its_own(planted, tmp_path, monkeypatch):
    _sweeping(Prepared(planted, planted.x, "none"), monkeypatch)
    sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=lambda s: None, protocol="paper")
    path = tmp_path / "runs" / "oral" / f"{planted.name}-noprior-paper" / "seed_0.json"
    own = json.loads(path.read_text())
    own["all"] += 5.0  # as if its own run had come out otherwise
    path.write_text(json.dumps(own))
    said = []
    sweep("sbm", "oral", [0], False, SMALL, results=tmp_path / "x", echo=lambda s: None)  # elsewhere
    (tmp_path / "runs" / "oral" / f"{planted.name}-noprior" / "seed_0.json").unlink(missing_ok=True)
    sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=said.append)
    assert any("not deterministic" in s for s in said)
    assert json.loads(path.read_text())["all"] == own["all"]  # kept


def test_a_twin_replaces_a_file_that_is_itself_a_twin_or_lacks_a_score(planted, tmp_path):
    from harness.experiment import SCORES
    from harness.reproduction import keep_twin
    path = tmp_path / "seed_0.json"
    row = {k: 1.0 for k in SCORES} | {"all": 50.0, "config_hash": "h"}
    path.write_text(json.dumps(row | {"all": 40.0, "trained_under": "paper"}))  # an older twin
    assert "also scored" in keep_twin(path, row, "h", "ours")
    assert json.loads(path.read_text())["all"] == 50.0
    incomplete = {"all": 30.0, "config_hash": "h"}  # its own run, from before a score existed
    path.write_text(json.dumps(incomplete))
    assert "also scored" in keep_twin(path, row, "h", "ours")
    assert json.loads(path.read_text())["all"] == 50.0
    path.write_text(json.dumps(row | {"all": 45.0, "config_hash": "old"}))  # other configuration
    keep_twin(path, row, "h", "ours")
    assert json.loads(path.read_text())["all"] == 50.0
    path.write_text(json.dumps(row | {"all": 45.0}))  # its own complete run: kept
    assert "not deterministic" in keep_twin(path, row, "h", "ours")
    assert json.loads(path.read_text())["all"] == 45.0


def test_a_protocol_that_cannot_split_the_graph_is_no_twin(planted, monkeypatch):
    import harness.experiment as ex
    real = ex.protocol_split

    def split(graph, seed, protocol="ours", known="default"):
        if protocol == "paper":
            raise ValueError("known_classes names every class: at least one class must be novel")
        return real(graph, seed, protocol, known)
    monkeypatch.setattr(ex, "protocol_split", split)
    assert twin_protocols(planted, 0, "ours") == []


# ------------------------------------------------------------------------------ failed runs
def test_a_model_no_better_than_the_majority_class_is_a_failure():
    val = torch.tensor([0, 0, 0, 1, -1, -1])
    found = type("F", (), {"val_accuracy": 0.75, "epoch": 0})()
    with pytest.raises(FailedRun, match="majority class share 75.00%"):
        check_learnt(found, val, "gcn")
    found.val_accuracy = 0.76
    check_learnt(found, val, "gcn")  # learnt something
    found.val_accuracy = float("nan")
    check_learnt(found, val, "vgae_kmeans")  # no validation signal: nothing to judge


def test_a_gcn_that_cannot_learn_is_reported_failed_not_scored(planted, tmp_path, monkeypatch):
    prep = Prepared(planted, planted.x, "none")
    frozen = lambda method, seed, device, prior: GCNConfig(seed=seed, device="cpu", lr=0.0,
                                                           epochs=3)
    monkeypatch.setattr("harness.experiment.baseline_config", frozen)
    with pytest.raises(FailedRun, match="gcn failed to train"):
        run_seed(prep, "gcn", 0, False, ORALConfig(device="cpu"))
    monkeypatch.setattr("harness.reproduction.prepare", lambda dataset, data_dir=None: prep)
    said = []
    rows = sweep("sbm", "gcn", [0], False, ORALConfig(device="cpu"), results=tmp_path,
                 echo=said.append)
    assert rows == [] and "FAILED" in said[-1]  # the last line, which a fan-out task reports
    assert any("also recorded as failed under protocol paper" in s for s in said)
    twin = failed_seeds(tmp_path, "gcn", planted.name, "no", "paper")[0]
    assert twin["trained_under"] == "ours" and "gcn failed to train" in twin["failed"]
    assert failed_seeds(tmp_path, "gcn", planted.name, "no")[0]["seed"] == 0
    assert seed_rows(tmp_path, "gcn", planted.name, "no") == []
    said.clear()
    sweep("sbm", "gcn", [0], False, ORALConfig(device="cpu"), results=tmp_path, echo=said.append)
    assert "FAILED before" in said[0]  # not rerun, still not a number
    write_markdown(tmp_path)
    md = (tmp_path / "reproduction.md").read_text().split("## Runs that failed to train")[1]
    assert "gcn" in md and "seed 0" in md


# ------------------------------------------------------------------------------ selection switch
def test_selection_last_keeps_the_final_epoch_and_records_both_rules(planted):
    split, _ = protocol_split(planted, 0, "ours")
    args = (planted.x, planted.edge_index, split.train_labels(planted.y), split.val_labels(planted.y))
    last = ORAL(SMALL, selection="last")
    last.record_epochs = True
    last.fit(*args)
    assert last.predict().epoch == SMALL.epochs == last.selected_state()["epoch"]
    assert len(last.epoch_class_ids_) == SMALL.epochs + 1
    assert torch.equal(last.epoch_class_ids_[-1].long(), last.predict().class_id)
    vals = [r["val_acc"] for r in last.history_]
    best_epoch = max(range(len(vals)), key=lambda e: (vals[e], e))
    assert last.discoveries_["best_val"].epoch == best_epoch
    best = ORAL(SMALL, selection="best_val").fit(*args)  # the same training run, the other rule
    assert best.predict().epoch == best_epoch
    assert torch.equal(best.predict().class_id, last.discoveries_["best_val"].class_id)
    with pytest.raises(ValueError, match="selection must be one of"):
        ORAL(SMALL, selection="first")


# ------------------------------------------------------------------------------ the proxy
def test_rule_epochs_reads_validation_up_to_each_horizon():
    history = [{"epoch": e, "val_acc": v} for e, v in enumerate([0.1, 0.5, 0.5, 0.2, 0.9])]
    assert rule_epochs(history, [3, 4]) == {"best_val@3": 2, "last@3": 3, "best_val@4": 4,
                                            "last@4": 4}


def test_proxy_scores_only_labelled_nodes_selection_never_read(planted):
    task = proxy_task(planted, 1, "rotate", disjoint_val=True)
    from oral_core.splits import make_split
    split = make_split(planted.y, seed=1)
    assert not (task.scored & split.test_mask).any()  # never a test node
    assert not (task.scored & (task.val >= 0)).any()  # not the nodes selection reads
    assert not (task.scored & (task.train >= 0)).any()
    assert task.hidden == (int(split.known_classes[1]),)
    assert (task.scored & (planted.y == task.hidden[0])).sum() > 0


def test_extremes_proxy_hides_the_largest_and_smallest_known_class(planted):
    from oral_core.splits import make_split
    split = make_split(planted.y, seed=2)
    labelled = split.train_mask | split.val_mask
    counts = torch.bincount(planted.y[labelled], minlength=planted.num_classes)
    known = split.known_classes.tolist()
    task = proxy_task(planted, 2, "extremes", disjoint_val=True)
    largest, smallest = task.hidden
    assert counts[largest] == max(counts[c] for c in known)
    assert counts[smallest] == min(counts[c] for c in known)
    assert largest != smallest and set(task.hidden) <= set(known)
    assert sorted(task.visible.tolist()) == sorted(set(known) - set(task.hidden))
    for c in task.hidden:  # both play novel classes: no label shown, every labelled node scored
        assert not (task.train[planted.y == c] >= 0).any() and not (task.val[planted.y == c] >= 0).any()
        assert torch.equal(task.scored & (planted.y == c), labelled & (planted.y == c))
    assert not (task.scored & split.test_mask).any()
    assert task.hidden_label == f"{largest}+{smallest}"


def test_extremes_proxy_never_reads_a_test_label(planted):
    proxy = lambda prep, seed: proxy_rules(prep, seed, SMALL, [4, 8], "extremes")
    assert not _reads_test_labels(proxy, planted, 1)


def _scrambled_test_labels(graph, seed):
    from oral_core.splits import make_split
    test = make_split(graph.y, seed=seed).test_mask
    y = graph.y.clone()
    y[test] = (y[test] + 1) % graph.num_classes
    return dataclasses.replace(graph, y=y)


def _reads_test_labels(proxy, graph, seed) -> bool:
    """True when the proxy's answer changes with the test labels (what a proxy must never do).
    The split protocol draws per class, so the split is built from the clean labels."""
    from oral_core import splits
    clean = splits.make_split(graph.y, seed=seed)
    real = splits.make_split
    try:
        from harness import proxy as tune  # where proxy_task builds its split
        tune.make_split = lambda y, seed: clean
        a = proxy(Prepared(graph, graph.x, "none"), seed)
        b = proxy(Prepared(_scrambled_test_labels(graph, seed), graph.x, "none"), seed)
    finally:
        tune.make_split = real
    return a != b


def test_selection_proxy_never_reads_a_test_label(planted, monkeypatch):
    proxy = lambda prep, seed: proxy_rules(prep, seed, SMALL, [4, 8])
    assert not _reads_test_labels(proxy, planted, 1)
    # a mutated proxy that also scores test nodes is caught by the same check
    import benchmarks.tune as tune
    honest = tune.proxy_task

    from oral_core.splits import make_split

    def leaky(graph, seed, hide="last", disjoint_val=False):
        task = honest(graph, seed, hide, disjoint_val)
        return dataclasses.replace(task, scored=task.scored | make_split(graph.y, seed=seed).test_mask)
    monkeypatch.setattr(tune, "proxy_task", leaky)
    assert _reads_test_labels(proxy, planted, 1)


def test_proxy_rules_command_is_resumable(planted, tmp_path, monkeypatch):
    prep = Prepared(planted, planted.x, "none")
    monkeypatch.setattr("benchmarks.proxy_rules.prepare", lambda dataset, data_dir=None: prep)
    args = ["--dataset", "sbm", "--seeds", "2", "--horizons", "4,8", "--results", str(tmp_path),
            "--set", "epochs=8"]
    proxy_main(args)
    tag = f"{planted.name.lower()}-noprior-epochs=8"
    md = (tmp_path / "proxy" / f"proxy_rules_{tag}.md").read_text()
    assert "| best_val@4 | 2 |" in md and "| last@8 | 2 |" in md
    saved = json.loads((tmp_path / "proxy" / tag / "seed_1.json").read_text())
    assert {r["rule"] for r in saved["rows"]} == {"best_val@4", "last@4", "best_val@8", "last@8"}
    stamp = (tmp_path / "proxy" / tag / "seed_1.json").stat().st_mtime_ns
    proxy_main(args)  # finished seeds are reused, not retrained
    assert (tmp_path / "proxy" / tag / "seed_1.json").stat().st_mtime_ns == stamp


def test_proxy_reuses_seeds_whose_training_is_the_same():
    """A seed file is reused when only what cannot change a proxy run differs (the selection
    rule and epoch count, read after training to the largest horizon; a field added later at its
    old-behaviour default), and rerun when anything that trains differently does."""
    from benchmarks.proxy_rules import same_training
    old = ORALConfig(epochs=100, selection="best_val").to_dict() | {"seed": None}
    del old["ensemble_from_layer"]  # a file written before the switch existed
    key = {"horizons": [4, 8], "config": ORALConfig().to_dict() | {"seed": None}}
    assert same_training({"horizons": [4, 8], "config": old}, key)
    assert not same_training({"horizons": [4, 9], "config": old}, key)
    for field, value in (("attention_temperature", 0.3), ("ensemble_from_layer", 2), ("lr", 0.01)):
        changed = {"horizons": [4, 8], "config": ORALConfig(**{field: value}).to_dict() | {"seed": None}}
        assert not same_training(changed, key), field
    # under a cosine schedule the epoch count shapes every epoch's rate: it trains differently
    cosine = {"horizons": [4, 8], "config": ORALConfig(lr_schedule="cosine").to_dict() | {"seed": None}}
    longer = {"horizons": [4, 8], "config": ORALConfig(lr_schedule="cosine", epochs=300).to_dict()
              | {"seed": None}}
    assert same_training(cosine, cosine) and not same_training(longer, cosine)


def test_proxy_compare_pairs_two_settings_by_seed_and_rule(tmp_path):
    from benchmarks.proxy_rules import compare
    for name, scores in (("a", [50.0, 60.0, 70.0]), ("b", [55.0, 58.0, 80.0])):
        folder = tmp_path / "proxy" / name
        folder.mkdir(parents=True)
        for seed, score in enumerate(scores):
            rows = [{"rule": "last@4", "seed": seed, "all": score}]
            (folder / f"seed_{seed}.json").write_text(json.dumps({"rows": rows}))
    (tmp_path / "proxy" / "a" / "seed_3.json").write_text(json.dumps(
        {"rows": [{"rule": "last@4", "seed": 3, "all": 99.0}]}))  # unpaired: left out
    line = compare(tmp_path, "a", "b")[2]
    assert line.startswith("| last@4 | 3 | 60.00 | 64.33 | +4.33 (") and line.endswith("| 2/3 |")


def test_rows_not_at_todays_defaults_are_marked_in_the_tables(planted, tmp_path, monkeypatch):
    from harness.reproduction import stale
    prep = Prepared(planted, planted.x, "none")
    monkeypatch.setattr("harness.reproduction.prepare", lambda dataset, data_dir=None: prep)
    rows = sweep("sbm", "oral", [0], False, SMALL, results=tmp_path, echo=lambda s: None)
    update_csv(rows, tmp_path)
    name = planted.name
    assert stale(tmp_path, "oral", name, "no")  # SMALL is not today's default configuration
    assert "| oral (old defaults) | " in write_markdown(tmp_path).read_text()
    path = tmp_path / "runs" / "oral" / f"{name}-noprior" / "seed_0.json"
    row = json.loads(path.read_text())
    from harness.experiment import method_config
    from oral_core.identity import config_hash
    row["config_hash"] = config_hash(method_config("oral", ORALConfig(), None, 0), row["features"])
    path.write_text(json.dumps(row))  # as if it had run at today's defaults
    assert not stale(tmp_path, "oral", name, "no")
    assert "| oral | " in write_markdown(tmp_path).read_text()
