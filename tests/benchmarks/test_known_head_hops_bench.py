"""benchmarks/known_head_hops.py and benchmarks/split_repeat_proxy.py: their measures on a toy
graph whose answer is known, and their summaries."""
from __future__ import annotations

import torch

from benchmarks import known_head_hops as hops_bench
from benchmarks import known_head_scale as scale_bench
from benchmarks import split_repeat_proxy as repeat_bench
from oral_core.synthetic import make_attributed_sbm


def _across():
    """A graph whose edges join different classes, with training and validation labels."""
    g = make_attributed_sbm(num_nodes=300, num_classes=3, feature_dim=8, avg_degree=8.0,
                            homophily=0.05, feature_noise=1.0, seed=5)
    train = torch.full_like(g.y, -1)
    val = torch.full_like(g.y, -1)
    train[::3], val[1::6] = g.y[::3], g.y[1::6]
    return g, train, val


def test_the_hops_measure_finds_the_features_alone_on_a_graph_that_joins_classes():
    g, train, val = _across()
    row = hops_bench.measure(g.x, g.edge_index, train, val, 3)
    assert row["chosen"] == 0 and row["val_chosen"] == row["val_h0"]
    assert row["val_h0"] > row["val_h2"] + 10
    assert row["train"] == int((train >= 0).sum()) and row["val"] == int((val >= 0).sum())


def test_the_hops_summary_pairs_the_choice_with_two_steps():
    rows = [{"kind": "static", "graph": "g", "case": f"seed {i}", "val_h0": "90", "val_h1": "80",
             "val_h2": "70", "chosen": "0", "val_chosen": "90", "val_reference": "89"}
            for i in range(2)]
    table = hops_bench.summary(rows)
    assert "| static | g | 2 | 90.0 / 80.0 / 70.0 | 90.0 | +20.0 (+20.0) | 89.0 | 2 / 0 / 0 |" in table


def test_the_scale_measure_scores_both_arms_at_the_chosen_steps():
    """Both arms on the validation nodes; a feature that only the unlabelled nodes carry is
    standardised to huge values by the training nodes' spread, and the ``all`` arm is not."""
    g, train, val = _across()
    row = scale_bench.measure(g.x, g.edge_index, train, val, 3)
    assert row["hops"] == 0 and 0 <= row["val_labelled"] <= 100 and 0 <= row["val_all"] <= 100
    # a column almost constant on the training nodes and wild elsewhere
    x = torch.cat([g.x, torch.where(train >= 0, 0.0, 50.0 * torch.randn(g.y.numel(),
                   generator=torch.Generator().manual_seed(0))).unsqueeze(1)], dim=1)
    x[0, -1] = 1e-3  # a tiny spread on the training nodes, not zero
    row = scale_bench.measure(x, g.edge_index, train, val, 3)
    assert row["val_all"] > row["val_labelled"] + 10


def test_the_scale_summary_pairs_the_arms_by_case():
    rows = [{"kind": "night", "graph": "g", "case": f"sim{i} night 1", "hops": "0",
             "val_labelled": "90", "val_all": str(91 + 2 * i)} for i in range(2)]
    table = scale_bench.summary(rows)
    assert "| night | g | 2 | 0 | 90.0 | 92.0 | +2.0 (1.0) | +1.0 |" in table


class _Found:
    def __init__(self, ids):
        self.class_id = torch.tensor(ids)


class _Fit:
    def __init__(self, discoveries):
        self.discoveries_ = discoveries


def test_the_repeat_proxy_reads_both_settings_from_one_fit():
    once, repeat, final = _Found([0, 2]), _Found([0, 0]), _Found([1, 0])
    got = repeat_bench.answers(_Fit({"last_split_once": once, "last_no_head": repeat,
                                     "last": final}), 2)
    assert got["once"] is once and got["repeat"] is repeat and got["final"] is final
    # no second pass acted and no head: all three are the fit's answer
    got = repeat_bench.answers(_Fit({"last": final}), 2)
    assert got["once"] is got["repeat"] is got["final"] is final


def test_the_repeat_summary_shows_the_paired_gain_and_the_invented_classes():
    held = [{"task": "heldout", "graph": "g", "seed": s, "scores": {
        "once": {"all": 80.0, "known": 90.0, "novel": 60.0, "classes": 5},
        "repeat": {"all": 70.0 + s, "known": 95.0, "novel": 30.0, "classes": 4},
        "final": {"all": 71.0, "known": 96.0, "novel": 30.0, "classes": 4}}} for s in (0, 2)]
    quiet = [{"task": "nonovel", "graph": "g", "seed": 0, "scores": {
        "once": {"accuracy": 70.0, "novel_share": 15.0, "novel_classes": 1},
        "repeat": {"accuracy": 80.0, "novel_share": 0.0, "novel_classes": 0},
        "final": {"accuracy": 81.0, "novel_share": 0.0, "novel_classes": 0}}}]
    nights = [dict(held[0], task="night-heldout", graph=f"g-sim{k} night 2") for k in (0, 1)]
    quiet_nights = [dict(quiet[0], task="night-nonovel", graph="g-sim0 night 5")]
    table = repeat_bench.summary(held + quiet + nights + quiet_nights)
    assert "| g nights | 1 | 70.0 / 80.0 / 81.0 | 15.0 / 0.0 | 1.0 / 0.0 |" in table
    assert "| g nights | 2 | 2 | 80.0 / 70.0 / 71.0 |" in table
    assert "| g | 2 | 2 | 80.0 / 71.0 / 71.0 | 60.0 / 30.0 | -9.0 (1.0; -10.0) | 5.0 / 4.0 |" in table
    assert "| g | 1 | 70.0 / 80.0 / 81.0 | 15.0 / 0.0 | 1.0 / 0.0 |" in table


def test_the_no_novel_proxy_runs_on_a_nightly_snapshot(tmp_path):
    """``night_nonovel_fit`` fits the labelled nodes of a simulated night alone (nothing new)
    and scores its stand-in unlabelled nodes under each setting."""
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph
    from oral_core.config import ORALConfig

    static = make_static_graph(num_nodes=240, num_classes=3, num_features=8, seed=1)
    [path] = simulate(static, 1, tmp_path, "toy", start_date="2026-01-01", known_classes=[0, 1],
                      novel_start={2: 0}, seed=0)
    config = ORALConfig(epochs=4, pol_start_epoch=2, cluster_warmup_epochs=1, progress=False)
    got = repeat_bench.night_nonovel_fit(str(path), 0, config)
    assert set(got) == {"once", "repeat", "final"}
    for scores in got.values():
        assert 0.0 <= scores["accuracy"] <= 100.0 and 0.0 <= scores["novel_share"] <= 100.0
        assert scores["novel_classes"] >= 0


def test_the_pull_moves_only_confident_nodes_outside_the_known_classes():
    from benchmarks.pull_proxy import pulled, summary

    class_id = torch.tensor([0, 1, 2, 2, -1])  # two known classes; 2 is novel, -1 none
    probs = torch.tensor([[0.2, 0.8], [0.99, 0.01], [0.95, 0.05], [0.6, 0.4], [0.1, 0.9]])
    assert pulled(class_id, probs, 2, 0.9).tolist() == [0, 1, 0, 2, 1]
    assert pulled(class_id, probs, 2, 0.99).tolist() == [0, 1, 2, 2, -1]
    row = {"graph": "g-sim0 night 2", "scores": {
        "none": {"all": 80.0, "known": 70.0, "novel": 90.0, "val": 75.0, "moved": 0},
        "0.9": {"all": 82.0, "known": 80.0, "novel": 85.0, "val": 85.0, "moved": 12}}}
    table = summary([row, dict(row, graph="g-sim1 night 2")], ["0.9"])
    assert "| g nights | 2 | 0.9 | 82.0 | 80.0 | 85.0 | 85.0 | 12 | +2.0 (0.0; +2.0) |" in table


def test_the_pull_proxy_runs_on_a_nightly_snapshot(tmp_path):
    from benchmarks.pull_proxy import night_fit
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph
    from oral_core.config import ORALConfig

    static = make_static_graph(num_nodes=300, num_classes=4, num_features=8, seed=2)
    [path] = simulate(static, 1, tmp_path, "toy", start_date="2026-01-01",
                      known_classes=[0, 1, 2], novel_start={3: 0}, seed=0)
    config = ORALConfig(epochs=4, pol_start_epoch=2, cluster_warmup_epochs=1, progress=False)
    got = night_fit(str(path), 0, config, [0.9])
    assert set(got) == {"none", "0.9", "hops"} and got["none"]["moved"] == 0
    assert got["0.9"]["moved"] >= 0 and 0.0 <= got["0.9"]["val"] <= 100.0


def test_the_gate_share_table_counts_the_nights_each_setting_passes():
    rows = [{"graph": "g", "sim": 0, "night": n, "reference": 70.0, "once": once,
             "repeat": 80.0, "pass_once": once >= 70.0, "pass_repeat": True}
            for n, once in ((1, 60.0), (2, 75.0))]
    table = repeat_bench.gate_table(rows)
    assert "| g | 0 | 2 | 1 / 2 | 67.5 / 80.0 / 70.0 |" in table
