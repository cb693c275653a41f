"""benchmarks.fast_path_draws: the fast paths judged against two draws of the defaults, with two
draws of their own."""
from __future__ import annotations

import json

import pytest
import torch

GRAPHS = ("g1", "g2", "g3", "g4", "g5")


@pytest.fixture(autouse=True)
def _defaults_as_when_the_study_ran(monkeypatch):
    """The study's rows were made while the night's defaults were ``gather`` and dense input;
    its ``--run`` is refused since (tests/benchmarks/test_fast_path_rule.py)."""
    import benchmarks.fast_path_rule as fpr

    monkeypatch.setattr(fpr, "fast_paths_are_defaults", lambda: False)


def write_study(tmp_path, graphs=GRAPHS, fast_loss=0.0, fast_seconds=5.0, fast_moved=10,
                fast_invented=0):
    """A study of six tasks per graph (two of each proxy), four fits each, with their kept
    answers: each fit moves 9-11 of 100 unlabelled nodes away from a shared answer in its own way
    (about ``fast_moved`` for the fast fits), and the fast fits score ``fast_loss`` points under the
    default's and invent ``fast_invented`` more classes on every no-novel fit."""
    from benchmarks.answer_proxy import BURST_FORMS
    from benchmarks.fast_path_draws import VARIANTS
    from benchmarks.records import fit_name

    form = BURST_FORMS["burstsplit"]
    study, keep = tmp_path / "study", tmp_path / "keep"
    keep.mkdir(parents=True)
    base = torch.arange(100) % 4
    for j, (name, (sets, offset)) in enumerate(VARIANTS.items()):
        fast = name.startswith("fast")
        (study / name).mkdir(parents=True)
        with open(study / name / "fits.jsonl", "w") as fh:
            for graph in graphs:
                for i, kind in enumerate(["heldout", "nonovel", "witness"] * 2):
                    seed = i // 3
                    score = 60.0 + 3 * i + j % 2 - (fast_loss if fast else 0.0)
                    scores = {"heldout": {"all": score, "surfaced": 1, "novel_classes": 2},
                              "nonovel": {"accuracy": score,
                                          "novel_classes": fast_invented if fast else 0},
                              "witness": {"known": score, "novel_classes": 1}}[kind]
                    row = {"kind": kind, "loop": f"{graph}-sim39", "graph": graph, "night": 5,
                           "seed": seed, form: scores,
                           "fit_seconds": fast_seconds if fast else 10.0}
                    if sets:
                        row["set"] = list(sets)
                    if offset:
                        row["seed_offset"] = offset
                    fh.write(json.dumps(row) + "\n")
                    ids = base.clone()
                    # 9-11 nodes, varying by task and fit, or ``fast_moved`` and more
                    moved = (fast_moved if fast else 10) - 1 + (i + j) % 3
                    start = 10 * j  # each fit moves its own nodes
                    ids[start:start + moved] = (ids[start:start + moved] + 1) % 4
                    names = list(sets) + ([f"fitseed+{offset}"] if offset else [])
                    torch.save({form: ids, "unlabelled": torch.ones(100, dtype=torch.bool)},
                               keep / (fit_name(f"{graph}-sim39", 5, seed, kind=kind,
                                                sets=names) + ".answers.pt"))
    return study, keep


def test_fast_paths_that_are_another_seed_pass_and_slower_worse_or_far_ones_fail(tmp_path):
    from benchmarks.fast_path_draws import decide

    study, keep = write_study(tmp_path / "same")
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert verdict, text
    assert "| g1 | 6 |" in text and "fails" not in text

    # consistently five points under the default on every task: clause 2 fails
    study, keep = write_study(tmp_path / "worse", fast_loss=5.0)
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "fails" in text, text

    # a class invented on every no-novel fit the default keeps clean: clause 2 fails
    study, keep = write_study(tmp_path / "invents", fast_invented=1)
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "| 4 / 0 | fails |" in text, text

    # as good but not faster: clause 3 fails
    study, keep = write_study(tmp_path / "slow", fast_seconds=12.0)
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "slower" in text, text

    # further from the default's answers than their own draws are: clause 1 fails
    study, keep = write_study(tmp_path / "far", fast_moved=40)
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "): fails" in text, text


def test_fewer_than_five_graphs_or_a_missing_fit_decide_nothing(tmp_path):
    from benchmarks.fast_path_draws import decide

    study, keep = write_study(tmp_path / "four", graphs=GRAPHS[:4])
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "five needed: no" in text, text

    study, keep = write_study(tmp_path / "gap")
    (study / "fast_reseed" / "fits.jsonl").write_text("")
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "Graphs with rows: none" in text

    # the rule reads every graph's 18 tasks: six each decide nothing, whatever they show
    study, keep = write_study(tmp_path / "short")
    assert decide(study, keep, tasks_per_graph=6)[1]
    text, verdict = decide(study, keep)
    assert not verdict and "every graph's 18 tasks in: no" in text, text


def test_counts_one_draw_apart_are_noise_a_steady_excess_is_not():
    from benchmarks.fast_path_draws import counts_not_worse

    assert counts_not_worse([0] * 6)
    assert counts_not_worse([-1, 0, 0, 0, 0, 0])  # one class fewer over twelve fits
    assert counts_not_worse([-2, 2, 0, 0, 0, 0])
    assert not counts_not_worse([-1, -1, -1, -1, 0, 0])
    assert not counts_not_worse([-1] * 6)


def test_run_fits_each_task_four_ways_in_order_after_simulating(tmp_path, monkeypatch):
    """``--run``: the loops simulated first, then for each task the default, the fast, the
    reseeded default and the reseeded fast fit, each with its own ``--out``, one ``--keep``."""
    import benchmarks.answer_proxy as ap
    import benchmarks.nightly_loop as nl
    import benchmarks.split_repeat_proxy as srp
    from benchmarks.fast_path_draws import main

    simulated = []
    monkeypatch.setattr(nl, "simulate_missing", lambda *a, **k: simulated.append(a))
    monkeypatch.setattr(srp, "loop_nights",
                        lambda *a, **k: [("cora-sim39", 5, 0, "snap"), ("cora-sim39", 8, 1, "s")])
    calls = []
    monkeypatch.setattr(ap, "main", lambda argv: calls.append(argv) or 0)
    study = tmp_path / "study"
    assert main(["--run", "--loops", str(tmp_path), "--study", str(study)]) == 0
    assert simulated and simulated[0][1:] == ("cora", "39")
    assert len(calls) == 2 * 3 * 4  # two nights, three tasks, four fits
    first = calls[:4]
    assert [argv[argv.index("--out") + 1] for argv in first] == [
        str(study / n) for n in ("default", "fast", "default_reseed", "fast_reseed")]
    assert len({argv[argv.index("--keep") + 1] for argv in calls}) == 1
    sets = [[a[i + 1] for i, x in enumerate(a) if x == "--set"] for a in first]
    assert sets == [[], ["attention_kernel=spmm", "sparse_input_below=0.1"]] * 2
    offsets = [a[a.index("--seed-offset") + 1] if "--seed-offset" in a else None for a in first]
    assert offsets == [None, None, "1000", "1000"]
    assert (study / "decision.md").exists()


def test_agreement_rows_keep_clause_1_when_the_kept_answers_are_lost(tmp_path):
    """Clause 1 reads the ARIs from ``agreement.jsonl`` once recorded; without them and without
    the answers it waits instead of holding on fewer tasks."""
    import shutil

    from benchmarks.fast_path_draws import AGREEMENT, decide, record_agreements

    study, keep = write_study(tmp_path / "far", fast_moved=40)
    before, _ = decide(study, keep, tasks_per_graph=6)
    assert record_agreements(study, keep) == 6 * len(GRAPHS)
    assert record_agreements(study, keep) == 0  # once per task
    shutil.rmtree(keep)
    after, verdict = decide(study, keep, tasks_per_graph=6)
    assert after == before and not verdict

    study, keep = write_study(tmp_path / "lost")
    shutil.rmtree(keep)
    text, verdict = decide(study, keep, tasks_per_graph=6)
    assert not verdict and "clause 1 waits" in text and "g1 (6 of 6 missing)" in text, text
    assert not (study / AGREEMENT).exists()


def test_rebuilt_agreements_say_whether_the_refits_gave_the_committed_rows(tmp_path):
    import json
    import shutil

    from benchmarks.fast_path_draws import AGREEMENT, VARIANTS, decide, record_agreements
    from benchmarks.records import read_jsonl

    study, keep = write_study(tmp_path / "s", graphs=("g1",))
    scratch = tmp_path / "rebuild"
    shutil.copytree(study, scratch)
    rows = read_jsonl(scratch / "fast" / "fits.jsonl")
    form = next(k for k, v in rows[0].items() if isinstance(v, dict))
    rows[0][form]["all"] += 1.0  # the first task's fast refit scores otherwise
    (scratch / "fast" / "fits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (scratch / "default" / "fits.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in read_jsonl(study / "default" / "fits.jsonl")[:2]))
    assert record_agreements(study, keep, rebuilt=scratch) == 2  # only the tasks refitted
    got = read_jsonl(study / AGREEMENT)
    assert [r["rows_match"] for r in got] == [False, True] and all(r["rebuilt"] for r in got)
    text, _ = decide(study, keep, tasks_per_graph=6)
    assert "g1: clause 1 reads 2 task(s) refitted by `--rebuild`" in text
    assert "1 of whose four refits gave the committed rows again" in text
    assert len(VARIANTS) == 4


def test_rebuild_fits_into_a_scratch_study_and_leaves_the_rows(tmp_path, monkeypatch):
    import benchmarks.answer_proxy as ap
    import benchmarks.nightly_loop as nl
    import benchmarks.split_repeat_proxy as srp
    from benchmarks.fast_path_draws import main
    from benchmarks.fast_path_rule import study_keep

    monkeypatch.setattr(nl, "simulate_missing", lambda *a, **k: None)
    monkeypatch.setattr(srp, "loop_nights", lambda *a, **k: [("cora-sim39", 5, 0, "snap")])
    calls = []
    monkeypatch.setattr(ap, "main", lambda argv: calls.append(argv) or 0)
    study = tmp_path / "study_rebuild_test"
    assert main(["--rebuild", "--loops", str(tmp_path), "--study", str(study)]) == 0
    scratch = study / "rebuilt"
    assert {argv[argv.index("--out") + 1] for argv in calls} == {
        str(scratch / n) for n in ("default", "fast", "default_reseed", "fast_reseed")}
    assert {argv[argv.index("--keep") + 1] for argv in calls} == {str(study_keep(study))}


def test_rebuild_refits_only_the_tasks_without_their_agreement(tmp_path, monkeypatch):
    """``--rebuild`` refits what its help says: the tasks with no agreement row; a task whose
    agreement is recorded is not fitted again."""
    import json

    import benchmarks.answer_proxy as ap
    import benchmarks.nightly_loop as nl
    import benchmarks.split_repeat_proxy as srp
    from benchmarks.fast_path_draws import AGREEMENT, main

    monkeypatch.setattr(nl, "simulate_missing", lambda *a, **k: None)
    monkeypatch.setattr(srp, "loop_nights", lambda *a, **k: [("cora-sim39", 5, 0, "snap")])
    calls = []
    monkeypatch.setattr(ap, "main", lambda argv: calls.append(argv) or 0)
    study = tmp_path / "study_partial"
    study.mkdir()
    (study / AGREEMENT).write_text("".join(
        json.dumps({"kind": kind, "loop": "cora-sim39", "night": 5, "seed": 0, "graph": "cora",
                    "across": 0.9, "within": 0.9}) + "\n" for kind in ("heldout", "witness")))
    assert main(["--rebuild", "--loops", str(tmp_path), "--study", str(study)]) == 0
    assert len(calls) == 4  # one task left (the no-novel one), four fits
    assert {argv[argv.index("--tasks") + 1] for argv in calls} == {"nonovel"}


def test_a_pause_file_holds_the_lane_between_fits(tmp_path):
    from benchmarks.fast_path_rule import wait_while_paused

    pause = tmp_path / "pause"
    assert not wait_while_paused(pause)  # no file: no wait
    pause.touch()
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 3:
            pause.unlink()

    assert wait_while_paused(pause, poll=5.0, sleep=sleep) and slept == [5.0] * 3
