"""The strict option parser of the pipeline commands (issue 21.6): ``--set KEY=VALUE`` typed by
the ORALConfig field, and the configuration checks that name the option at fault."""
from __future__ import annotations

import pytest

from flows.options import OptionError, check_config, parse_set


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
    values, sources = parse_set(["gamma=0.5", "pol=off", "cluster_freeze_epoch=10"])
    config = check_config(values, sources)
    assert (config.gamma, config.pol, config.cluster_freeze_epoch) == (0.5, False, 10)
