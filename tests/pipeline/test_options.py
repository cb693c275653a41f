"""The strict option parser of the pipeline commands (issue 21.6): ``--set KEY=VALUE`` typed by
the ORALConfig field, and the configuration checks that name the option at fault."""
from __future__ import annotations

import pytest

from cli.options import OptionError, check_config, parse_set


def test_booleans_accept_only_the_usual_words():
    for word in ("true", "True", "1", "yes", "on", "ON"):
        assert parse_set([f"pol={word}"])[0] == {"pol": True}
    for word in ("false", "0", "no", "off", "Off"):
        assert parse_set([f"pol={word}"])[0] == {"pol": False}
    for word in ("ture", "", "2", "none", "y"):
        with pytest.raises(OptionError, match=f"^--set pol={word}: pol must be true or false"):
            parse_set([f"pol={word}"])


def test_values_are_typed_by_the_field():
    values, sources = parse_set(["gamma=0.4", "epochs=7", "cluster_freeze_epoch=100",
                                 "select_from_epoch=none", "granularity_rule=best",
                                 "batch_size=NULL"])
    assert values == {"gamma": 0.4, "epochs": 7, "cluster_freeze_epoch": 100,
                      "select_from_epoch": None, "granularity_rule": "best", "batch_size": None}
    assert type(values["gamma"]) is float and type(values["epochs"]) is int
    values, _ = parse_set(["minibatch_above_edges=none", "auto_batch_size=512"])
    assert values == {"minibatch_above_edges": None, "auto_batch_size": 512}
    assert check_config(values, {}).minibatch_above_edges is None
    assert sources["gamma"] == "--set gamma=0.4"
    for item, message in (("epochs=1.5", "epochs must be an integer, got '1.5'"),
                          ("epochs=none", "epochs must be an integer, got 'none'"),
                          ("cluster_freeze_epoch=0.5", "must be an integer or none"),
                          ("gamma=abc", "gamma must be a number, got 'abc'"),
                          ("gamma=nan", "gamma must be a finite number"),
                          ("gamma", "expected KEY=VALUE"),
                          ("nope=1", "unknown configuration key 'nope'")):
        with pytest.raises(OptionError) as err:
            parse_set([item])
        assert str(err.value).startswith(f"--set {item}: ") and message in str(err.value)
        assert "\n" not in str(err.value)


def test_configuration_problems_name_their_options():
    values, sources = parse_set(["gamma=5", "top_k=99"])
    values["epochs"], sources["epochs"] = 0, "--epochs 0"
    with pytest.raises(OptionError) as err:
        check_config(values, sources)
    text = str(err.value)
    assert "--set gamma=5: gamma must be in (0, 1]" in text
    assert "--set top_k=99: top_k must be in [1, num_prototypes]" in text
    assert "--epochs 0: epochs must be >= 1" in text
    values, sources = parse_set(["minibatch_above_edges=0", "auto_batch_size=0"])
    with pytest.raises(OptionError) as err:
        check_config(values, sources)
    assert "--set minibatch_above_edges=0: minibatch_above_edges must be >= 1 or None" in str(err.value)
    assert "--set auto_batch_size=0: auto_batch_size must be >= 1" in str(err.value)
    values, sources = parse_set(["gamma=0.5", "pol=off", "cluster_freeze_epoch=10"])
    config = check_config(values, sources)
    assert (config.gamma, config.pol, config.cluster_freeze_epoch) == (0.5, False, 10)


def test_ranges_once_only_the_clis_are_checked_by_the_config_itself():
    """Issue 19 review: hidden_dim, dropout, lr, ... are ranges of ORALConfig.validate, so the
    CLI names the option (one line, as before) and a run started from a deployment or from
    Python (``resolve_config``, the flow's first step) refuses them before training too."""
    values, sources = parse_set(["hidden_dim=0", "dropout=1.5", "lr=0", "gamma=5"])
    with pytest.raises(OptionError) as err:
        check_config(values, sources)
    text = str(err.value)
    assert "\n" not in text
    for part in ("--set gamma=5: gamma must be in (0, 1]", "--set hidden_dim=0: hidden_dim must be >= 1",
                 "--set dropout=1.5: dropout must be in [0, 1)", "--set lr=0: lr must be > 0"):
        assert part in text
    from flows.configuration import resolve_config

    for bad, field in (({"hidden_dim": 0}, "hidden_dim"), ({"dropout": 1.5}, "dropout"),
                       ({"lr": 0.0}, "lr must"), ({"cluster_every": 0}, "cluster_every")):
        with pytest.raises(ValueError, match=field):
            resolve_config(bad)
    assert resolve_config({"hidden_dim": 16}).hidden_dim == 16


def _snapshot_root(tmp_path):
    """A snapshot root whose graph ``g`` has one (empty) snapshot folder: enough for the
    option checks, which list snapshots but read none."""
    (tmp_path / "snaps" / "g" / "snapshot=2026-01-01").mkdir(parents=True)
    return tmp_path / "snaps"


@pytest.mark.parametrize("flag, accepted", [("--remote-training", True), ("--local-training", False)])
def test_remote_training_switch_decides_whether_cuda_must_be_here(tmp_path, monkeypatch, flag,
                                                                  accepted):
    """``oral run --remote-training`` hands training to the GPU pool, so ``--device cuda`` is
    accepted on a machine without CUDA; ``--local-training`` trains here and refuses it."""
    import torch

    from cli.main import build_parser
    from cli.options import check_pipeline

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = build_parser().parse_args(
        ["run", "--graph", "g", "--snapshots", str(_snapshot_root(tmp_path)), "--state-dir",
         str(tmp_path / "state"), "--device", "cuda", flag])
    assert args.remote_training is accepted
    if accepted:
        assert "device" not in check_pipeline(args)  # accepted; the flow takes --device itself
    else:
        with pytest.raises(OptionError, match="--device cuda: CUDA is not available"):
            check_pipeline(args)


def test_remote_training_switch_reaches_the_flow(tmp_path, monkeypatch):
    """The CLI passes ``--remote-training`` / ``--local-training`` (or neither: None, the
    ``ORAL_REMOTE_TRAINING`` setting decides) to the nightly flow and the backfill."""
    import cli.pipeline as cp
    import flows.nightly as nightly
    from cli.main import main

    seen = []
    out = {"graph": "g", "snapshot_date": "2026-01-01", "classes": 1, "novel": 0,
           "statuses": {}, "model_version": "1"}

    def fake_nightly(*args, remote_training=None, cold=None, **kw):
        seen.append(remote_training)
        return out

    def fake_backfill(*args, remote_training=None, cold=None, **kw):
        seen.append(remote_training)
        return [out]

    monkeypatch.setattr(nightly, "nightly_discovery", fake_nightly)
    monkeypatch.setattr(nightly, "backfill", fake_backfill)
    monkeypatch.setattr(cp, "start_pipeline", lambda state_dir: None)
    monkeypatch.setattr(cp, "_run_flow", lambda fn: fn() or 0)
    common = ["--graph", "g", "--snapshots", str(_snapshot_root(tmp_path)),
              "--state-dir", str(tmp_path / "state"), "--device", "cpu"]
    assert main(["run", *common, "--remote-training"]) == 0
    assert main(["run", *common]) == 0
    assert main(["backfill", *common, "--local-training"]) == 0
    assert seen == [True, None, False]


def test_no_help_text_shows_a_doubled_percent_sign(capsys):
    """argparse %-formats help strings but not descriptions, so a literal ``%%`` in a
    description is printed as is (``snapshots import --help`` said ``85%%``)."""
    from cli.main import build_parser

    parser = build_parser()
    pending = [parser]
    while pending:
        p = pending.pop()
        text = p.format_help()
        assert "%%" not in text, p.prog
        for action in p._actions:
            if isinstance(action, __import__("argparse")._SubParsersAction):
                pending.extend(action.choices.values())
