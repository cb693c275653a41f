"""``oral choose`` end to end on a tiny snapshot and a tiny dataset file (the refusals are in
test_refusals.py; the rule and the proxy's labelled-only reading in tests/core/test_proxy.py)."""
from __future__ import annotations

import json
import re

import pytest

TINY = ["--set", "epochs=6", "--set", "hidden_dim=8", "--set", "num_prototypes=8", "--window", "2",
        "--seeds", "2"]


@pytest.fixture()
def snapshot_root(tmp_path):
    """One snapshot of a planted graph: four of five classes labelled on half their nodes."""
    import numpy as np

    from data_contracts import snapshots as snap
    from oral_core.synthetic import make_attributed_sbm

    g = make_attributed_sbm(num_nodes=300, num_classes=5, feature_dim=8, seed=4)
    y = g.y.numpy()
    ids = [f"n{i}" for i in range(g.num_nodes)]
    labels = [f"c{y[i]}" if y[i] < 4 and i % 2 == 0 else None for i in range(g.num_nodes)]
    src, dst = g.edge_index.numpy()
    keep = src < dst
    snap.write_snapshot(tmp_path / "snaps", "g", "2026-03-01",
                        snap.nodes_table(ids, g.x.numpy().astype(np.float32), labels),
                        snap.edges_table([ids[i] for i in src[keep]], [ids[j] for j in dst[keep]]))
    return tmp_path / "snaps"


def test_choose_on_a_snapshot_writes_the_table_and_the_choice_and_reuses_its_fits(
        snapshot_root, tmp_path, capsys, one_thread):
    from cli.main import main

    out = tmp_path / "choose"
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
            "gamma=0.1", "--out", str(out), *TINY]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "defaults seed 1: proxy All" in printed and "gamma=0.1 seed 1" in printed
    choice = json.loads((out / "g.json").read_text())
    assert choice["chosen"] in ("defaults", "gamma=0.1") and choice["rule"] == "mean@6:2"
    wanted = {"defaults": [], "gamma=0.1": ["gamma=0.1"]}[choice["chosen"]]
    base = ["epochs=6", "hidden_dim=8", "num_prototypes=8"]
    assert choice["set"] == base + wanted
    row = choice["candidates"][0]
    assert row["candidate"] == "gamma=0.1" and row["seeds"] == 2
    assert row["bound"] == pytest.approx(row["gain"] - row["se"])
    md = (out / "g.md").read_text()
    assert "| `gamma=0.1` | 2 |" in md and "Chosen: **" in md
    fits = sorted(out.rglob("seed_*.json"))
    assert len(fits) == 4
    stamps = [p.stat().st_mtime_ns for p in fits]
    assert main(argv) == 0  # every fit reused, none retrained
    assert "reused" in capsys.readouterr().out
    assert [p.stat().st_mtime_ns for p in fits] == stamps


def test_choose_on_a_dataset_file_with_the_prior(npz_graph, tmp_path, capsys, one_thread):
    """``--dataset PATH --prior``: the fits carry the full class number, the rotate proxy works on
    four classes, and the default candidates are tried."""
    from cli.main import main

    out = tmp_path / "choose"
    assert main(["choose", "--dataset", str(npz_graph), "--prior", "--hide", "rotate",
                 "--out", str(out), *TINY]) == 0
    choice = json.loads(next(out.glob("*-prior.json")).read_text())
    assert [r["candidate"] for r in choice["candidates"]] == [
        "gamma=0.1", "pseudo_label_groups=novel", "attention_temperature=0.3"]
    fit = json.loads(next(out.rglob("seed_0.json")).read_text())
    assert fit["key"]["config"]["prior_num_classes"] == 4 and fit["key"]["hide"] == "rotate"


class _Log:
    def __init__(self):
        self.lines = []

    def info(self, msg, *args):
        self.lines.append(("info", msg % args))

    def warning(self, msg, *args):
        self.lines.append(("warning", msg % args))


def _choice_file(state, graph, payload):
    (state / "choose").mkdir(parents=True, exist_ok=True)
    (state / "choose" / f"{graph}.json").write_text(
        payload if isinstance(payload, str) else json.dumps(payload))


def test_a_night_applies_the_graphs_choice_under_its_own_overrides(tmp_path):
    """``oral run`` reads ``<state>/choose/<graph>.json``: the choice's overrides apply, the run's
    own config wins key by key, and the night records what the choice contributed."""
    from types import SimpleNamespace

    from flows.configuration import with_choice

    settings = SimpleNamespace(state_dir=tmp_path)
    log = _Log()
    cfg, label = with_choice({"epochs": 20}, None, settings, "papers", log)
    assert label == "none" and cfg.gamma == 0.3 and not log.lines  # no choice: the defaults
    _choice_file(tmp_path, "papers", {"overrides": {"gamma": 0.1, "pseudo_label_groups": "novel"}})
    cfg, label = with_choice({"epochs": 20}, None, settings, "papers", log)
    assert (cfg.gamma, cfg.pseudo_label_groups, cfg.epochs) == (0.1, "novel", 20)
    assert label == "gamma=0.1,pseudo_label_groups=novel"
    cfg, label = with_choice({"gamma": 0.2}, None, settings, "papers", log)
    assert cfg.gamma == 0.2 and label == "pseudo_label_groups=novel"
    assert "gamma overridden by the run's config" in log.lines[-1][1]
    _choice_file(tmp_path, "papers", {"overrides": {}})  # the choice kept the defaults
    assert with_choice(None, None, settings, "papers", log)[1] == "defaults"
    assert with_choice(None, None, settings, "other", log)[1] == "none"  # per graph


@pytest.mark.parametrize("payload, says", [("{broken", "not a usable choice"),
                                           ({"overrides": {"gama": 0.1}}, "gama"),
                                           ({"overrides": {"gamma": 5}}, "gamma must be in"),
                                           ({"chosen": "x"}, "overrides")])
def test_a_broken_choice_is_named_and_never_stops_a_night(tmp_path, payload, says):
    from types import SimpleNamespace

    from flows.configuration import with_choice
    from flows.configuration import read_choice

    _choice_file(tmp_path, "papers", payload)
    assert says in read_choice(tmp_path, "papers").problem
    log = _Log()
    cfg, label = with_choice(None, None, SimpleNamespace(state_dir=tmp_path), "papers", log)
    assert label == "none" and cfg.gamma == 0.3
    assert log.lines[0][0] == "warning" and "choose/papers.json" in log.lines[0][1]


def test_the_choice_oral_choose_writes_is_the_one_a_night_reads(snapshot_root, tmp_path, one_thread):
    from cli.main import main
    from flows.configuration import read_choice

    state = tmp_path / "state"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "gamma=0.1", "--out", str(state / "choose"), *TINY]) == 0
    saved = json.loads((state / "choose" / "g.json").read_text())
    got = read_choice(state, "g")
    assert not got.problem and got.overrides == saved["overrides"]
    assert got.label == ("defaults" if saved["chosen"] == "defaults" else "gamma=0.1")


def test_the_paper_protocol_with_the_strict_known_classes_reuses_the_strict_fits(
        npz_graph, tmp_path, capsys, one_thread):
    """A graph whose paper known classes are the strict ones (any graph the paper does not use:
    the lowest ids either way) has one proxy task: ``--protocol paper`` reuses every strict fit."""
    from cli.main import main

    out = tmp_path / "choose"
    common = ["choose", "--dataset", str(npz_graph), "--hide", "rotate", "--candidate", "gamma=0.1",
              "--out", str(out), *TINY]
    assert main(common) == 0
    capsys.readouterr()
    assert main(common + ["--protocol", "paper"]) == 0
    printed = capsys.readouterr().out
    assert "the paper's known classes are the strict protocol's" in printed
    assert printed.count("(reused)") == 4 and not re.search(r"\(\d+s\)", printed)
    saved = json.loads((out / "tiny-noprior-paper.json").read_text())
    assert saved["protocol"] == "paper (the strict task)"


def test_the_cli_offers_every_hide_mode_of_the_proxy():
    from cli.choose import HIDE_CHOICES
    from harness.proxy import HIDE_MODES

    assert HIDE_CHOICES == HIDE_MODES


def test_fit_seed_fits_one_seed_per_setting_and_a_later_run_reuses_it(snapshot_root, tmp_path, capsys,
                                                                     one_thread):
    """``--fit-seed``: only that seed of every setting is fitted (with the device it ran on), no
    table is written, and the run without it reuses the file instead of training again."""
    from cli.main import main

    out = tmp_path / "choose"
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate", "gamma=0.1",
            "--out", str(out), *TINY]
    assert main([*argv, "--fit-seed", "1"]) == 0
    fits = sorted(out.rglob("seed_*.json"))
    assert [p.name for p in fits] == ["seed_1.json", "seed_1.json"]
    assert json.loads(fits[0].read_text())["device"] == "cpu"
    assert not list(out.glob("*.md")) and "no table" in capsys.readouterr().out
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "defaults seed 1: proxy All" in printed and "(reused)" in printed.split("defaults seed 1")[1].split("\n")[0]
    assert (out / "g.md").exists() and len(list(out.rglob("seed_*.json"))) == 4


def test_fit_seed_outside_the_seeds_is_refused(snapshot_root, tmp_path, capsys):
    from cli.main import main

    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--out",
                 str(tmp_path / "c"), *TINY, "--fit-seed", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --fit-seed 2: the seeds are 0 to 1") and "Traceback" not in err
    assert not (tmp_path / "c").exists()


def test_jobs_fits_the_seeds_in_child_processes_and_the_table_reuses_them(snapshot_root, tmp_path,
                                                                         capsys):
    """``--jobs 2``: both seeds are fitted by ``--fit-seed`` children (one thread each here), the
    parent trains nothing itself and writes the table from their files."""
    from cli.main import main

    out = tmp_path / "choose"
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate", "gamma=0.1",
            "--out", str(out), *TINY]
    assert main([*argv, "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    assert "fitting seed 0, seed 1 in 2 processes" in printed
    assert "seed 0: fitted in its own process" in printed and "seed 1: fitted in its own process" in printed
    fitted = [line for line in printed.splitlines() if line.startswith("  ") and ": proxy All" in line]
    assert len(fitted) == 4 and all("(reused)" in line for line in fitted)
    assert (out / "g.md").exists() and len(list(out.rglob("seed_*.json"))) == 4


def test_a_failed_child_is_named_and_its_seed_fitted_in_the_parent(snapshot_root, tmp_path, capsys,
                                                                   monkeypatch):
    from cli import choose as cli_choose
    from cli.main import main

    monkeypatch.setattr(cli_choose, "_child_argv", lambda argv: ["choose", "--no-such-option"])
    out = tmp_path / "choose"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "gamma=0.1", "--out", str(out), *TINY, "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    assert "seed 0: its process failed (exit 2:" in printed and "fitting it here" in printed
    assert (out / "g.md").exists() and len(list(out.rglob("seed_*.json"))) == 4


def test_jobs_below_one_is_refused(snapshot_root, tmp_path, capsys):
    from cli.main import main

    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--out",
                 str(tmp_path / "c"), *TINY, "--jobs", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --jobs 0: must be at least 1")


def _rigged(monkeypatch, proxy_all: dict, val_acc: dict):
    """Proxy scores and full-task validation accuracies by setting (keyed by the config's
    ``gamma``), so the test decides who wins and who keeps the known classes; returns the list
    of full-task fits made."""
    from harness import proxy

    def rows(x, edges, labels, task, seed, config, window):
        value = proxy_all[config.gamma] + seed
        return [{"rule": f"last@{config.epochs}", "seed": seed, "all": value},
                {"rule": f"mean@{config.epochs}:{window}", "seed": seed, "all": value}]
    fits = []

    def full(x, edges, train, val, seed, config):
        assert int((train >= 0).sum()) > 0 and int((val >= 0).sum()) > 0
        assert not bool(((train >= 0) & (val >= 0)).any())
        fits.append((config.gamma, seed))
        return val_acc[config.gamma] + 0.1 * seed
    monkeypatch.setattr(proxy, "window_rows", rows)
    monkeypatch.setattr(proxy, "full_task_accuracy", full)
    return fits


def test_the_known_class_guard_refuses_a_winner_that_loses_the_known_classes(
        snapshot_root, tmp_path, capsys, monkeypatch):
    """The proxy's best candidate merges the known classes on the full task: the guard refuses
    it, the next bound wins, the table and the choice say so, and a rerun reuses every fit."""
    from cli.main import main

    fits = _rigged(monkeypatch, {0.3: 50.0, 0.1: 60.0, 0.2: 55.0}, {0.3: 95.0, 0.1: 45.0, 0.2: 94.0})
    out = tmp_path / "choose"
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate", "gamma=0.1",
            "--candidate", "gamma=0.2", "--out", str(out), *TINY]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "guard gamma=0.1: known-class validation accuracy -50.0 (s.e. 0.0) against the defaults: " \
           "refused (clearly more than 20 points below)" in printed
    assert "guard gamma=0.2: known-class validation accuracy -1.0" in printed and ": kept" in printed
    assert sorted(fits) == [(g, s) for g in (0.1, 0.2, 0.3) for s in range(3)]
    choice = json.loads((out / "g.json").read_text())
    assert choice["chosen"] == "gamma=0.2" and choice["set"][-1] == "gamma=0.2"
    rows = {r["candidate"]: r for r in choice["candidates"]}
    assert rows["gamma=0.1"]["guard"]["kept"] is False and rows["gamma=0.1"]["guard"]["seeds"] == 3
    assert rows["gamma=0.2"]["guard"]["kept"] is True and choice["guard_seeds"] == 3
    md = (out / "g.md").read_text()
    assert "-50.0 (0.0), 3 seeds: **refused**" in md and "the known-class guard refused `gamma=0.1`" in md
    assert len(list(out.rglob("guard_seed_*.json"))) == 9
    fits.clear()
    assert main(argv) == 0
    assert fits == [] and "guard defaults seed 2: known-class validation accuracy 95.2% (reused)" \
        in capsys.readouterr().out


def test_when_the_guard_refuses_every_winner_the_defaults_stay(snapshot_root, tmp_path, capsys,
                                                               monkeypatch):
    from cli.main import main

    _rigged(monkeypatch, {0.3: 50.0, 0.1: 60.0}, {0.3: 95.0, 0.1: 45.0})
    out = tmp_path / "choose"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "gamma=0.1", "--out", str(out), *TINY, "--guard-seeds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "the defaults (the known-class guard refused gamma=0.1)" in printed
    assert json.loads((out / "g.json").read_text())["overrides"] == {}


def test_the_guard_can_be_turned_off_or_loosened(snapshot_root, tmp_path, capsys, monkeypatch):
    from cli.main import main

    fits = _rigged(monkeypatch, {0.3: 50.0, 0.1: 60.0}, {0.3: 95.0, 0.1: 45.0})
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate", "gamma=0.1",
            *TINY]
    assert main([*argv, "--out", str(tmp_path / "off"), "--guard-seeds", "0"]) == 0
    assert fits == [] and json.loads((tmp_path / "off" / "g.json").read_text())["chosen"] == "gamma=0.1"
    assert "the known-class guard was off" in (tmp_path / "off" / "g.md").read_text()
    assert main([*argv, "--out", str(tmp_path / "loose"), "--guard-drop", "60"]) == 0
    assert json.loads((tmp_path / "loose" / "g.json").read_text())["chosen"] == "gamma=0.1"
    assert "more than 60 points below" in (tmp_path / "loose" / "g.md").read_text()


@pytest.mark.parametrize("flag, value, says", [
    ("--guard-seeds", "-1", "error: --guard-seeds -1: must be 0 (no guard) or more"),
    ("--guard-drop", "-2", "error: --guard-drop -2.0: must be 0 or more points"),
    ("--guard-drop", "nan", "error: --guard-drop nan: must be 0 or more points"),
])
def test_a_bad_guard_option_is_refused_before_any_work(snapshot_root, tmp_path, capsys, flag, value, says):
    from cli.main import main

    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--out",
                 str(tmp_path / "c"), *TINY, flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and "Traceback" not in err and not (tmp_path / "c").exists()


def test_the_guard_trains_the_full_task_of_a_dataset_for_real(npz_graph, tmp_path, capsys, one_thread,
                                                             monkeypatch):
    """Unrigged full-task fits on a dataset file (the proxy rigged so a candidate wins): they are
    saved with their key and validation accuracy, and only the split's labelled nodes are read."""
    from cli.main import main
    from harness import proxy

    def rows(x, edges, labels, task, seed, config, window):
        value = 60.0 + seed + (5 if config.gamma == 0.1 else 0)
        return [{"rule": f"mean@{config.epochs}:{window}", "seed": seed, "all": value}]
    monkeypatch.setattr(proxy, "window_rows", rows)
    out = tmp_path / "choose"
    assert main(["choose", "--dataset", str(npz_graph), "--prior", "--hide", "rotate", "--candidate",
                 "gamma=0.1", "--out", str(out), *TINY, "--guard-seeds", "2"]) == 0
    saved = sorted(out.rglob("guard_seed_*.json"))
    assert len(saved) == 4
    fit = json.loads(saved[0].read_text())
    assert fit["key"]["task"] == "full" and fit["key"]["data"] == "tiny"
    assert fit["key"]["config"]["prior_num_classes"] == 4 and 0 <= fit["val_acc"] <= 100
    assert fit["device"] == "cpu"
    assert "guard gamma=0.1: known-class validation accuracy" in capsys.readouterr().out


def test_jobs_fits_the_guard_in_child_processes(snapshot_root, tmp_path, capsys, monkeypatch):
    """``--jobs 2``: the known-class guard's full-task fits (real, tiny) run in ``--fit-guard``
    children, one fit each, and the parent reads their files (the proxy's seed files are made
    first by a rigged run with the guard off, so that the candidate wins)."""
    from cli.main import main
    from harness import proxy

    _rigged(monkeypatch, {0.3: 50.0, 0.1: 60.0}, {0.3: 95.0, 0.1: 45.0})
    out = tmp_path / "choose"
    argv = ["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate", "gamma=0.1",
            "--out", str(out), *TINY, "--guard-seeds", "2"]
    assert main([*argv, "--guard-seeds", "0"]) == 0
    capsys.readouterr()

    def no_fit_here(*a, **k):
        raise AssertionError("the parent fitted a full task itself")
    monkeypatch.setattr(proxy, "full_task_accuracy", no_fit_here)
    assert main([*argv, "--jobs", "2"]) == 0
    printed = capsys.readouterr().out
    assert ("fitting guard defaults seed 0, guard defaults seed 1, guard gamma=0.1 seed 0, "
            "guard gamma=0.1 seed 1 in 2 processes") in printed
    assert printed.count("fitted in its own process") == 4
    assert len(list(out.rglob("guard_seed_*.json"))) == 4
    assert "guard gamma=0.1: known-class validation accuracy" in printed


@pytest.mark.parametrize("extra, says", [
    (["--fit-guard", "0", "--fit-seed", "0"], "error: --fit-guard and --fit-seed: give one"),
    (["--fit-guard", "-1"], "error: --fit-guard -1: a seed is 0 or more"),
    (["--fit-guard", "0", "--guard-setting", "gamma=0.5"],
     "error: --guard-setting gamma=0.5: not one of this run's settings (defaults, gamma=0.1)"),
])
def test_a_bad_fit_guard_is_refused(snapshot_root, tmp_path, capsys, extra, says):
    from cli.main import main

    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "gamma=0.1", "--out", str(tmp_path / "c"), *TINY, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and "Traceback" not in err


def test_fit_guard_fits_one_full_task_and_writes_no_table(snapshot_root, tmp_path, capsys, one_thread):
    from cli.main import main

    out = tmp_path / "c"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "gamma=0.1", "--out", str(out), *TINY, "--fit-guard", "1", "--guard-setting",
                 "gamma=0.1"]) == 0
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.json")] == ["g/gamma=0.1/guard_seed_1.json"]
    assert "guard gamma=0.1 seed 1: known-class validation accuracy" in capsys.readouterr().out



def test_a_candidate_the_proxy_cannot_see_is_refused_before_any_fit(snapshot_root, tmp_path,
                                                                     capsys):
    """``novel_recut`` only re-cuts the answer after training; the proxy scores every epoch's
    class ids, so the candidate would tie the defaults: one error line, nothing fitted."""
    from cli.main import main

    out = tmp_path / "c"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "novel_recut=true", "--out", str(out), *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --candidate novel_recut=True: sets only")
    assert "after training" in err[0] and "--score final" in err[0] and not out.exists()


def test_scored_as_the_fit_ends_a_re_cut_candidate_is_fitted_and_chosen_or_not(
        snapshot_root, tmp_path, capsys, one_thread):
    """With ``--score final`` the same candidate is fitted and compared on the answer as the
    fit ends; the choice file names that rule."""
    from cli.main import main

    out = tmp_path / "c"
    assert main(["choose", "--graph", "g", "--snapshots", str(snapshot_root), "--candidate",
                 "novel_recut=true,novel_recut_dims=4", "--score", "final", "--guard-seeds", "0",
                 "--out", str(out), *TINY]) == 0
    choice = json.loads((out / "g.json").read_text())
    assert choice["rule"] == "final@6"
    assert [r["candidate"] for r in choice["candidates"]] == ["novel_recut=True,novel_recut_dims=4"]
    assert "answer as the fit ends" in (out / "g.md").read_text()


def test_the_service_refuses_an_unseen_candidate_and_scores_a_mixed_one():
    """The rule lives with the service (the deployment's flow calls it too): a candidate of
    after-training fields only is refused, one that also changes training is kept."""
    from flows.choice import UnseenCandidate, refuse_unseen

    with pytest.raises(UnseenCandidate, match="known_head_pull=0.9: sets only"):
        refuse_unseen({"gamma=0.1": {"gamma": 0.1}, "known_head_pull=0.9": {"known_head_pull": 0.9}})
    refuse_unseen({"gamma=0.1,novel_recut=True": {"gamma": 0.1, "novel_recut": True}})


def test_the_final_score_also_tries_the_re_cut_by_default():
    """choose_recut's rule was met: with ``--score final`` and no ``--candidate`` the re-cut is
    tried besides the usual candidates; the epochs' mean never tries it (it cannot see it)."""
    from cli.choose import _candidates
    from flows.choice import default_candidates

    assert {"novel_recut": True} in default_candidates("final")
    assert {"novel_recut": True} not in default_candidates("mean")
    assert list(_candidates(None, "final"))[-1] == "novel_recut=True"
    assert "novel_recut=True" not in _candidates(None)
