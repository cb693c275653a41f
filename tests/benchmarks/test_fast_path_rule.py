"""benchmarks.fast_path_rule: the fast paths judged against another seed of the defaults, and
benchmarks.answer_proxy's variants (``--set``, ``--seed-offset``) they are run with."""
from __future__ import annotations

import json

import pytest
import torch


def write_study(tmp_path, graphs=("g1", "g2"), fast_loss=0.0, fast_seconds=5.0,
                fast_ari_noise=0.0):
    """A study of six fits per graph (two of each task) with their kept answers: the default's
    answer, a reseeded fit that moves 10 of 100 unlabelled nodes, and a fast fit that moves
    ``fast_ari_noise`` of them and scores ``fast_loss`` points under the reseeded fit."""
    from benchmarks.answer_proxy import BURST_FORMS
    from benchmarks.fast_path_rule import FAST, RESEED, variants
    from benchmarks.records import fit_name

    form = BURST_FORMS["burstsplit"]
    study, keep = tmp_path / "study", tmp_path / "keep"
    plan = variants(None, keep)
    base = torch.arange(100) % 4
    for name, v in plan.items():
        (study / name).mkdir(parents=True)
        with open(study / name / "fits.jsonl", "w") as fh:
            for graph in graphs:
                for i, kind in enumerate(["heldout", "nonovel", "witness"] * 2):
                    seed = i // 3
                    score = 60.0 + 3 * i - (fast_loss if name == "fast" else 0.0)
                    scores = {"heldout": {"all": score, "surfaced": 1, "novel_classes": 2},
                              "nonovel": {"accuracy": score, "novel_classes": 0},
                              "witness": {"known": score, "novel_classes": 1}}[kind]
                    row = {"kind": kind, "loop": f"{graph}-sim35", "graph": graph, "night": 5,
                           "seed": seed, form: scores,
                           "fit_seconds": {"default": 10.0, "fast": fast_seconds,
                                           "reseed": 10.0}[name]}
                    if name == "fast":
                        row["set"] = list(FAST)
                    if name == "reseed":
                        row["seed_offset"] = RESEED
                    fh.write(json.dumps(row) + "\n")
                    ids = base.clone()
                    moved = {"default": 0, "fast": int(fast_ari_noise), "reseed": 10}[name]
                    ids[:moved] = (ids[:moved] + 1 + i % 2) % 4
                    sets = list(row.get("set", [])) + (
                        [f"fitseed+{RESEED}"] if name == "reseed" else [])
                    v["keep"].mkdir(parents=True, exist_ok=True)
                    torch.save({form: ids, "unlabelled": torch.ones(100, dtype=torch.bool)},
                               v["keep"] / (fit_name(f"{graph}-sim35", 5, seed, kind=kind,
                                                     sets=sets) + ".answers.pt"))
    return study, keep


def test_a_fast_path_that_is_another_seed_passes_and_a_slower_or_worse_one_fails(tmp_path):
    from benchmarks.fast_path_rule import decide

    study, keep = write_study(tmp_path / "same")
    text, verdict = decide(study, None, keep)
    assert verdict, text
    assert "| g1 | 6 |" in text and "holds" in text

    # consistently ten points under the other seed on every fit: clause 2 fails
    study, keep = write_study(tmp_path / "worse", fast_loss=10.0)
    text, verdict = decide(study, None, keep)
    assert not verdict and "fails" in text, text

    # as good but not faster: clause 3 fails
    study, keep = write_study(tmp_path / "slow", fast_seconds=12.0)
    text, verdict = decide(study, None, keep)
    assert not verdict and "Clause 3" in text and "slower" in text, text

    # further from the default's answer than another seed (40 of 100 nodes moved, not 10)
    study, keep = write_study(tmp_path / "far", fast_ari_noise=40)
    text, verdict = decide(study, None, keep)
    assert not verdict, text


def test_rows_without_all_three_fits_decide_nothing(tmp_path):
    from benchmarks.fast_path_rule import decide

    study, keep = write_study(tmp_path)
    (study / "reseed" / "fits.jsonl").write_text("")
    text, verdict = decide(study, None, keep)
    assert not verdict and "Graphs with rows: none" in text


def test_answer_proxy_variants_resume_only_their_own_rows(tmp_path, capsys):
    from benchmarks.answer_proxy import main, variant_of

    assert variant_of(None, None) == variant_of([], 0) == ((), 0)
    assert variant_of(["b=1", "a=2"], 0) == variant_of(["a=2", "b=1"], None)
    assert variant_of([], 1000) != variant_of([], 0)
    with pytest.raises(SystemExit) as err:
        main(["--loops", str(tmp_path), "--set", "attention_kernal=spmm", "--out",
              str(tmp_path / "out")])
    assert err.value.code == 2
    assert "attention_kernal" in capsys.readouterr().err


def test_a_reseeded_variant_in_the_same_folder_fits_again_under_its_own_name(tmp_path,
                                                                             monkeypatch):
    """Rows of the defaults do not count as done for ``--seed-offset`` or ``--set`` runs in the same
    ``--out``: each variant fits with its own seed and kept name and its own rows."""
    import benchmarks.answer_proxy as ap
    import benchmarks.nightly_loop as nl
    import benchmarks.split_repeat_proxy as srp

    monkeypatch.setattr(nl, "simulate_missing", lambda *a, **k: None)
    monkeypatch.setattr(srp, "loop_nights", lambda *a, **k: [("cora-sim9", 5, 2, "snap")])
    monkeypatch.setattr(ap, "table", lambda rows: f"{len(rows)} rows")
    calls = []

    def heldout(snapshot, seed, config, keep=None, name="", only=None, fit_seed=None):
        calls.append((name, seed, fit_seed, config.attention_kernel))
        return {"x": 1}

    monkeypatch.setattr(ap, "heldout_row", heldout)
    common = ["--loops", str(tmp_path), "--tasks", "heldout", "--out", str(tmp_path)]
    assert ap.main(common) == 0
    assert ap.main(common) == 0  # done: not fitted again
    assert ap.main(common + ["--seed-offset", "1000"]) == 0
    assert ap.main(common + ["--set", "attention_kernel=gather"]) == 0
    assert calls == [("heldout_cora-sim9_night5_seed2", 2, 2, "spmm"),  # the night's default
                     ("heldout_cora-sim9_night5_seed2_fitseed+1000", 2, 1002, "spmm"),
                     ("heldout_cora-sim9_night5_seed2_attention_kernel-gather", 2, 2, "gather")]
    rows = [json.loads(line) for line in (tmp_path / "fits.jsonl").read_text().splitlines()]
    assert [(r.get("seed_offset"), r.get("set")) for r in rows] == [
        (None, None), (1000, None), (None, ["attention_kernel=gather"])]
    assert (tmp_path / "table.md").read_text().strip() == "1 rows"  # the last variant's own


def test_run_fits_each_task_three_ways_row_by_row(tmp_path, monkeypatch):
    """``--run``: for each task the default (read from ``--default-keep``), the fast and the
    reseeded fit, one after the other, each with its own ``--out`` and the night's answer only."""
    import benchmarks.answer_proxy as ap
    import benchmarks.fast_path_rule as fpr
    import benchmarks.split_repeat_proxy as srp
    from benchmarks.fast_path_rule import main

    monkeypatch.setattr(srp, "loop_nights",
                        lambda *a, **k: [("cora-sim35", 5, 0, "snap"), ("cora-sim35", 8, 1, "s")])
    calls = []
    monkeypatch.setattr(ap, "main", lambda argv: calls.append(argv) or 0)
    monkeypatch.setattr(fpr, "fast_paths_are_defaults", lambda: False)  # as when it was run
    study = tmp_path / "study"
    assert main(["--run", "--loops", str(tmp_path), "--study", str(study),
                 "--default-keep", str(tmp_path / "kept")]) == 0
    assert len(calls) == 2 * 3 * 3  # two nights, three tasks, three fits
    first = calls[:3]
    assert [argv[argv.index("--out") + 1] for argv in first] == [
        str(study / "default"), str(study / "fast"), str(study / "reseed")]
    assert all(argv[argv.index("--tasks") + 1] == "heldout" and
               argv[argv.index("--only") + 1] == "burstsplit" and
               argv[argv.index("--nights") + 1] == "5" for argv in first)
    assert first[0][first[0].index("--keep") + 1] == str(tmp_path / "kept")
    assert "--set" not in first[0] and "--seed-offset" not in first[0]
    assert [first[1][i + 1] for i, a in enumerate(first[1]) if a == "--set"] == [
        "attention_kernel=spmm", "sparse_input_below=0.1"]
    assert first[2][first[2].index("--seed-offset") + 1] == "1000"
    assert (study / "decision.md").exists()


def test_run_is_refused_once_the_fast_paths_are_the_nights_defaults(tmp_path, monkeypatch, capsys):
    """Since the fast paths became the night's defaults the study's ``default`` side (the
    pipeline's defaults) would be the fast paths too: ``--run`` is refused in one line, before any
    fit, naming the revision to make its rows at; reading the rows still works."""
    import benchmarks.answer_proxy as ap
    from benchmarks.fast_path_draws import main as draws_main
    from benchmarks.fast_path_rule import fast_paths_are_defaults, main

    assert fast_paths_are_defaults()  # flows.params.PIPELINE_DEFAULTS holds both
    monkeypatch.setattr(ap, "main", lambda argv: pytest.fail("no fit may start"))
    for run in (main, draws_main):
        for flag in ("--run", "--rebuild") if run is draws_main else ("--run",):
            with pytest.raises(SystemExit) as exit_:
                run([flag, "--loops", str(tmp_path), "--study", str(tmp_path / "study")])
            assert exit_.value.code == 2
            err = capsys.readouterr().err.strip().splitlines()[-1]
            assert "hold the fast paths" in err and "d42e3ef" in err
    assert main(["--study", str(tmp_path / "study")]) == 0
