"""benchmarks.answer_proxy: every answer built from one fit, and its table."""
from __future__ import annotations

import math

import torch


def toy():
    """Sixty nodes of two known classes on a path, well apart in their features: ``(truth, x,
    edges, train, val)``, nodes 0-19 labelled for training and 20-31 for validation."""
    torch.manual_seed(0)
    n = 60
    truth = torch.arange(n) % 2
    x = torch.nn.functional.one_hot(truth, 2).float() * 3 + torch.randn(n, 2) * 0.1
    edges = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
    train = torch.where(torch.arange(n) < 20, truth, torch.full((n,), -1))
    val = torch.where((torch.arange(n) >= 20) & (torch.arange(n) < 32), truth, torch.full((n,), -1))
    return truth, x, edges, train, val


def test_the_answers_of_one_fit_differ_only_where_their_rules_say():
    """ORAL puts a known class's nodes (validation nodes among them) into a novel class 2 and keeps
    a genuinely unlabelled group 3: per_class renames nothing novel, the split check drops class 2
    and gives its nodes known names, class 3 stays."""
    from types import SimpleNamespace

    from benchmarks.answer_proxy import answers

    truth, x, edges, train, val = toy()
    class_id = truth.clone()
    class_id[[20, 22, 24, 40, 42, 44]] = 2  # validation nodes 20-24 and unlabelled 40-44
    class_id[50:] = 3
    unlabelled = (train < 0) & (val < 0)
    cfg = SimpleNamespace(known_head_scale="all", known_split_share=0.5, seed=0)
    got = answers(class_id, x, edges, train, val, unlabelled, 2, cfg)
    assert torch.equal(got["oral"], class_id)
    assert (got["per_class"] == 2).sum() == 6 and (got["per_class"] == 3).sum() == 10
    assert got["dropped"] == 1
    split = got["per_class+split"]
    assert not (split == 2).any() and (split == 3).sum() == 10
    assert torch.equal(split[[40, 42, 44]], truth[[40, 42, 44]])


def test_the_table_pairs_every_answer_with_per_class():
    from benchmarks.answer_proxy import paired, table

    def row(all_, surfaced, seed):
        base = {"all": 60.0, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2}
        return {"kind": "heldout", "graph": "cora", "seed": seed, "oral": base,
                "per_class": base, "per_class+split": base | {"all": all_,
                                                              "surfaced": surfaced}}
    rows = [row(62.0, 1, 0), row(64.0, 0, 1)]
    mean, se, n = paired(rows, "per_class", "per_class+split", "all")
    assert (mean, n) == (3.0, 2) and math.isclose(se, 1.0)
    text = table(rows + [{"kind": "nonovel", "graph": "cora", "oral": {"accuracy": 50.0,
                                                                       "novel_classes": 2},
                          "per_class": {"accuracy": 55.0, "novel_classes": 2},
                          "per_class+split": {"accuracy": 60.0, "novel_classes": 0}}])
    assert "| held-out | cora | 2 | per_class+split | 63.0 | 70.0 | 50.0 | 1 of 4 | 4 | +3.0 (1.0) |" in text
    assert "| no-novel | cora | 1 | per_class+split | 60.0 | | | | 0 (invented) | +5.0 (nan) |" in text



def toy_answers() -> tuple:
    """The toy graph's true classes and every answer of :func:`benchmarks.answer_proxy.answers`
    when ORAL puts the nodes from 50 on in novel group 3."""
    from types import SimpleNamespace

    from benchmarks.answer_proxy import answers

    truth, x, edges, train, val = toy()
    class_id = truth.clone()
    class_id[50:] = 3
    cfg = SimpleNamespace(known_head_scale="all", known_split_share=0.5, seed=0)
    return truth, answers(class_id, x, edges, train, val, (train < 0) & (val < 0), 2, cfg)


def row_beside_the_pipelines(answer: str, all_score: float) -> dict:
    """A held-out table row in which the answers before ``answer`` (in ``ANSWERS``' order) score
    the same, the pipeline's (``per_class+paired+split+rejected``) All 63.0 and ``answer``
    ``all_score``."""
    from benchmarks.answer_proxy import ANSWERS

    base = {"all": 60.0, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2}
    row = {"kind": "heldout", "graph": "cora", "seed": 0} | {
        name: base for name in ANSWERS[:ANSWERS.index(answer)]}
    return row | {"per_class+paired+split+rejected": base | {"all": 63.0},
                  answer: base | {"all": all_score}}

def test_the_novelty_check_answer_adds_to_the_pipelines_answer():
    """``per_class+paired+energy`` is ``per_class+paired`` with the nodes of novel groups that
    look known named a known class; in this toy every node is of a known class, so the check
    names the novel groups' nodes their classes, and the table pairs it with the paired answer."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    assert torch.equal(got["per_class+paired"], got["per_class"])  # nothing beats ORAL here
    checked = got["per_class+paired+energy"]
    assert got["moved"] == int((checked != got["per_class+paired"]).sum()) > 0
    assert torch.equal(checked[checked != got["per_class+paired"]],
                       truth[checked != got["per_class+paired"]])
    base = {"all": 60.0, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2}
    row = {"kind": "heldout", "graph": "cora", "seed": 0, **{name: base for name in (
        "oral", "per_class", "per_class+split", "per_class+paired")},
        "per_class+paired+energy": base | {"all": 65.0}}
    assert "| per_class+paired+energy | 65.0 | 70.0 | 50.0 | 1 of 2 | 2 | +5.0 (nan) |" in table([row])


def test_the_rejected_answer_adds_to_the_pipelines_answer_and_only_moves_known_named_nodes():
    """``per_class+paired+rejected`` is ``per_class+paired`` with rejected known-named nodes
    grouped as novel: it never changes a node of a novel group, and ``rejected`` counts what it
    moved; the table pairs it with the paired answer."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    grouped, base_answer = got["per_class+paired+rejected"], got["per_class+paired"]
    changed = grouped != base_answer
    assert got["rejected"] == int(changed.sum())
    assert bool((base_answer[changed] < 2).all()) and bool((grouped[changed] >= 2).all())
    base = {"all": 60.0, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2}
    row = {"kind": "heldout", "graph": "cora", "seed": 0, **{name: base for name in (
        "oral", "per_class", "per_class+split", "per_class+paired", "per_class+paired+energy")},
        "per_class+paired+rejected": base | {"all": 58.0}}
    assert "| per_class+paired+rejected | 58.0 | 70.0 | 50.0 | 1 of 2 | 2 | -2.0 (nan) |" in table([row])


def test_the_split_and_returned_answers_build_on_the_paired_answer_and_pair_with_the_default():
    """``per_class+paired+split+rejected`` drops a novel class of the paired answer only into
    known classes (it never makes a node novel that the default answer keeps known, except by
    the rejected grouping both share), and the table pairs the split and returned answers with
    the pipeline's default."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    split, paired = got["per_class+paired+split+rejected"], got["per_class+paired"]
    assert split.shape == paired.shape and got["returned"] >= 0
    assert int((split >= 2).sum()) <= int((got["per_class+paired+rejected"] >= 2).sum())
    base = {"all": 60.0, "known": 70.0, "novel": 50.0, "surfaced": 1, "novel_classes": 2}
    row = {"kind": "heldout", "graph": "cora", "seed": 0, **{name: base for name in (
        "oral", "per_class", "per_class+split", "per_class+paired", "per_class+paired+energy",
        "per_class+paired+rejected")},
        "per_class+paired+returned+rejected": base | {"all": 61.0},
        "per_class+paired+split+rejected": base | {"all": 63.0}}
    text = table([row])
    assert "| per_class+paired+returned+rejected | 61.0 | 70.0 | 50.0 | 1 of 2 | 2 | +1.0 (nan) |" in text
    assert "| per_class+paired+split+rejected | 63.0 | 70.0 | 50.0 | 1 of 2 | 2 | +3.0 (nan) |" in text


def test_the_carved_answer_builds_on_the_paired_answer_and_pairs_with_the_split_answer():
    """``per_class+paired+carve+split+rejected`` keeps no more nodes novel than the split answer
    on the toy (carving only names nodes known), and the table pairs it with the pipeline's
    default (``per_class+paired+split+rejected``)."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    carved, split = got["per_class+paired+carve+split+rejected"], got["per_class+paired+split+rejected"]
    assert carved.shape == split.shape
    assert int((carved >= 2).sum()) <= int((split >= 2).sum())
    row = row_beside_the_pipelines("per_class+paired+carve+split+rejected", 64.0)
    assert ("| per_class+paired+carve+split+rejected | 64.0 | 70.0 | 50.0 | 1 of 2 | 2 | +1.0 (nan) |"
            in table([row]))


def test_the_tested_carve_builds_on_the_paired_answer_and_pairs_with_the_split_answer():
    """``per_class+paired+carvetest+split+rejected`` (what a carved class keeps tested too)
    keeps no more nodes novel than the carve on the toy (the test only names more of it known),
    and the table pairs it with the pipeline's default (``per_class+paired+split+rejected``)."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    tested = got["per_class+paired+carvetest+split+rejected"]
    carved = got["per_class+paired+carve+split+rejected"]
    assert tested.shape == carved.shape
    assert int((tested >= 2).sum()) <= int((carved >= 2).sum())
    row = row_beside_the_pipelines("per_class+paired+carvetest+split+rejected", 62.0)
    assert ("| per_class+paired+carvetest+split+rejected | 62.0 | 70.0 | 50.0 | 1 of 2 | 2 | -1.0 (nan) |"
            in table([row]))


def test_the_regrouped_answer_keeps_the_pipelines_novel_nodes_and_pairs_with_it():
    """``per_class+paired+split+rejected+regroup`` only re-cuts the novel classes of the
    pipeline's answer: the same nodes novel, the known nodes' classes unchanged, ``regrouped`` new
    classes; the table pairs it with the pipeline's answer."""
    from benchmarks.answer_proxy import table

    truth, got = toy_answers()
    regrouped, split = got["per_class+paired+split+rejected+regroup"], got["per_class+paired+split+rejected"]
    assert torch.equal(regrouped >= 2, split >= 2)
    assert torch.equal(regrouped[split < 2], split[split < 2])
    assert got["regrouped"] == (int(torch.unique(regrouped[regrouped >= 2]).numel())
                                - int(torch.unique(split[split >= 2]).numel()))
    row = row_beside_the_pipelines("per_class+paired+split+rejected+regroup", 65.0)
    assert ("| per_class+paired+split+rejected+regroup | 65.0 | 70.0 | 50.0 | 1 of 2 | 2 | +2.0 (nan) |"
            in table([row]))


def test_the_regroup_with_the_known_bar_cuts_no_more_than_the_regroup():
    """``per_class+paired+split+rejected+regroupknown`` keeps the pipeline's novel nodes and makes
    no more classes than the plain regroup (the bar only forbids cuts)."""
    truth, got = toy_answers()
    barred, split = (got["per_class+paired+split+rejected+regroupknown"],
                     got["per_class+paired+split+rejected"])
    assert torch.equal(barred >= 2, split >= 2)
    assert torch.equal(barred[split < 2], split[split < 2])
    assert 0 <= got["regrouped_known"] <= got["regrouped"]


def test_the_calibrated_regroup_is_the_regroup_or_the_pipelines_answer_by_its_calibration():
    """``per_class+paired+split+rejected+regroupcal`` is the plain regroup on a night whose
    calibration (read on the labelled known classes) says the cut tells them apart, else the
    pipeline's answer unchanged; the calibration is kept with the row."""
    from oral_core.recut import cut_tells_classes_apart

    truth, got = toy_answers()
    calibrated = got["per_class+paired+split+rejected+regroupcal"]
    calibration = got["calibration"]
    assert calibration is not None and {"classes", "divides", "pairs", "tells_apart"} <= set(calibration)
    expected = got["per_class+paired+split+rejected+regroup"] \
        if cut_tells_classes_apart(calibration) else got["per_class+paired+split+rejected"]
    assert torch.equal(calibrated, expected)


def test_two_commands_on_one_folder_never_fit_the_same_task_twice(tmp_path, monkeypatch):
    """A fit another command on the same ``--out`` finished meanwhile (another ``--tasks``) is
    skipped, not fitted and written again; the table counts every command's rows."""
    import json

    import benchmarks.answer_proxy as ap
    import benchmarks.nightly_loop as nl
    import benchmarks.split_repeat_proxy as srp

    monkeypatch.setattr(nl, "simulate_missing", lambda *a, **k: None)
    monkeypatch.setattr(srp, "loop_nights", lambda *a, **k: [("cora-sim9", 5, 0, "snap")])
    monkeypatch.setattr(ap, "table", lambda rows: f"{len(rows)} rows")
    fitted = []

    def heldout(snapshot, seed, config, keep=None, name="", only=None, fit_seed=None):
        fitted.append("heldout")
        # meanwhile another command (--tasks nonovel) wrote its row
        with open(tmp_path / "fits.jsonl", "a") as fh:
            fh.write(json.dumps({"kind": "nonovel", "loop": "cora-sim9", "night": 5,
                                 "seed": 0}) + "\n")
        return {"x": 1}

    monkeypatch.setattr(ap, "heldout_row", heldout)
    monkeypatch.setattr(ap, "nonovel_row", lambda *a, **k: fitted.append("nonovel") or {})
    assert ap.main(["--loops", str(tmp_path), "--graphs", "cora", "--sims", "9", "--nights", "5",
                    "--seeds", "0", "--out", str(tmp_path)]) == 0
    assert fitted == ["heldout"]
    rows = [json.loads(line) for line in (tmp_path / "fits.jsonl").read_text().splitlines()]
    assert sorted(r["kind"] for r in rows) == ["heldout", "nonovel"]
    assert (tmp_path / "table.md").read_text().strip() == "2 rows"


def test_only_the_asked_burst_forms_are_built_and_they_are_the_full_builds_answers():
    """``--only``: :func:`benchmarks.answer_proxy.only_answers` decides each asked burst form by
    the pipeline's own options (:func:`tasks.answer.answer_options`) and gives the same answers
    as the full build of every answer, with the nodes each burst moved; a form it does not know
    is refused by the command in one line."""
    from types import SimpleNamespace

    import pytest

    from benchmarks.answer_proxy import (AGE_SPLIT, BURST_GROW_KEEP, BURST_GROW_MOST,
                                         BURST_SPLIT, SPLIT_FIRST, answers, main, only_answers)

    truth, x, edges, train, val = toy()
    class_id = truth.clone()
    class_id[50:] = 2  # a novel group among the last, recent nodes
    recent = torch.arange(60) >= 44
    unlabelled = (train < 0) & (val < 0)
    cfg = SimpleNamespace(known_head_scale="all", known_split_share=0.5, seed=0)
    full = answers(class_id, x, edges, train, val, unlabelled, 2, cfg, recent=recent)
    got = only_answers(class_id, x, edges, train, val, 2, cfg, recent,
                       ["burstgrowmost", "burstgrowkeep", "splitfirst", "burstsplit", "agesplit"])
    assert set(got) == {BURST_GROW_MOST, BURST_GROW_KEEP, SPLIT_FIRST, BURST_SPLIT, AGE_SPLIT,
                        "burstgrowmost", "burstgrowkeep", "splitfirst", "burstsplit", "agesplit"}
    for name, form in ((BURST_GROW_MOST, "burstgrowmost"), (BURST_GROW_KEEP, "burstgrowkeep"),
                       (SPLIT_FIRST, "splitfirst"), (BURST_SPLIT, "burstsplit"),
                       (AGE_SPLIT, "agesplit")):
        assert torch.equal(got[name], full[name]) and got[form] == full[form]
    # +regroupodds: the default answer but for the regroup's test; the toy's known classes are
    # too small to read, so the night regroups nothing, as the default's does not either
    from benchmarks.answer_proxy import REGROUP_ODDS
    odds = only_answers(class_id, x, edges, train, val, 2, cfg, recent, ["regroupodds"])
    assert torch.equal(odds[REGROUP_ODDS], got[BURST_SPLIT]) and odds["regroupodds"] == 0
    with pytest.raises(SystemExit):
        main(["--loops", "x", "--only", "burstgrowmost,nonsense", "--report-only"])


def test_the_witness_task_hides_no_class_and_scores_the_held_validation_half():
    """``hide="none"``: every known class visible, the training nodes as given, one half of the
    validation nodes read by the fit and the other half scored, unlabelled to it."""
    from harness.proxy import task_from_labels

    truth, x, edges, train, val = toy()
    y = torch.where((train >= 0) | (val >= 0), truth, -1)
    task = task_from_labels(y, train >= 0, val >= 0, torch.arange(2), 2, 0, "none",
                            disjoint_val=True)
    assert task.hidden == () and task.visible.tolist() == [0, 1]
    assert torch.equal(task.train, train)
    assert int(task.scored.sum()) == 6 and int((task.val >= 0).sum()) == 6
    assert not bool((task.scored & (task.val >= 0)).any())
    assert bool((val[task.scored] >= 0).all())


def test_the_witness_rows_make_their_own_table_lines_and_unknown_tasks_are_refused(capsys):
    import pytest

    from benchmarks.answer_proxy import main, table

    answer = {"known": 90.0, "novel_classes": 1, "novel_share": 10.0}
    rows = [{"kind": "witness", "graph": "cora", "per_class": answer,
             "per_class+split": dict(answer, known=92.0)}]
    text = table(rows)
    assert "| witness (Known: held validation nodes; Novel: % of unlabelled nodes called novel) " \
           "| cora | 1 | per_class+split | | 92.0 | 10.0 | | 1 | +2.0 (nan), Known |" in text
    with pytest.raises(SystemExit):
        main(["--loops", "x", "--tasks", "heldout,everything", "--report-only"])
    assert "--tasks takes heldout, nonovel and witness" in capsys.readouterr().err


def test_witness_scores_read_the_recent_held_back_nodes_apart():
    """``known_recent``: the share of the held-back nodes that arrived recently named right (a
    burst sweeping recent known nodes into a novel class shows there first); None without a
    recent witness; absent without arrival times. The table adds it beside Known."""
    from benchmarks.answer_proxy import table, witness_scores

    y = torch.tensor([0, 0, 1, 1, -1, -1])
    ids = torch.tensor([0, 2, 1, 1, 2, 0])        # class 2 is novel (two known classes)
    held = torch.tensor([True, True, True, True, False, False])
    free = ~held
    recent = torch.tensor([False, True, False, True, True, False])
    got = witness_scores(ids, y, held, free, 2, recent)
    assert got == {"known": 75.0, "novel_classes": 1, "novel_share": 50.0, "known_recent": 50.0}
    assert witness_scores(ids, y, held, free, 2, torch.zeros(6, dtype=torch.bool))[
        "known_recent"] is None
    assert "known_recent" not in witness_scores(ids, y, held, free, 2)
    rows = [{"kind": "witness", "graph": "cora", "per_class": got,
             "per_class+split": dict(got, known=80.0, known_recent=100.0)}]
    assert "| cora | 1 | per_class+split | | 80.0 (recent 100.0) | 50.0 |" in table(rows)


def test_before_recut_scores_both_arms_of_one_fit_side_by_side():
    """``--before-recut``: a fit with the novel re-cut keeps its answer before it
    (``last_no_recut``); both are kept as one ``[2, N]`` tensor and every answer is built on
    each, the fitted arm's named ``"fitted " + name``; a fit without a re-cut gives the same
    ids twice, and without the flag the fit's answer alone."""
    from types import SimpleNamespace

    from benchmarks.answer_proxy import FITTED, both_arms, fit_ids

    cut, plain = torch.tensor([0, 1, 2, 3]), torch.tensor([0, 1, 2, 2])
    model = SimpleNamespace(discoveries_={"last": SimpleNamespace(class_id=cut),
                                          "last_no_recut": SimpleNamespace(class_id=plain)})
    assert torch.equal(fit_ids(model, False), cut)
    ids = fit_ids(model, True)
    assert ids.shape == (2, 4) and torch.equal(ids[0], cut) and torch.equal(ids[1], plain)
    bare = SimpleNamespace(discoveries_={"last": SimpleNamespace(class_id=plain)})
    assert torch.equal(fit_ids(bare, True)[0], fit_ids(bare, True)[1])

    def build(class_id):
        return {"a": class_id + 10, "moved": 1}, ("a",)

    built, names = both_arms(ids, True, build)
    assert names == ("a", f"{FITTED}a")
    assert torch.equal(built["a"], cut + 10) and torch.equal(built[f"{FITTED}a"], plain + 10)
    assert both_arms(cut, False, build)[1] == ("a",)


def test_the_look_reads_the_best_matching_part_as_precision_and_recall():
    from benchmarks.embedding_look import best_match

    truth = ["a", "a", "a", "b", "b", "c"]
    assert best_match([0, 0, 1, 1, 1, -1], truth, "a") == (1.0, 2 / 3)
    assert best_match([0, 0, 1, 1, 1, -1], truth, "b") == (2 / 3, 1.0)
    assert best_match([-1] * 6, truth, "a") == (0.0, 0.0)
