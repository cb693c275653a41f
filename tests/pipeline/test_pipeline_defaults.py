"""The nightly pipeline's own defaults (flows.params.PIPELINE_DEFAULTS): where they differ from
ORALConfig's, and that a run's override still wins."""
from __future__ import annotations

from oral_core.config import ORALConfig


def test_the_pipeline_uses_the_known_head_where_validation_favours_it():
    from flows.configuration import PIPELINE_DEFAULTS, resolve_config

    assert ORALConfig().known_head == "none"  # the method's default (the tables) is the paper's
    config = resolve_config({})
    assert config.known_head == "auto" and config.progress is False
    assert ORALConfig().known_head_hops == 2 and config.known_head_hops is None
    assert resolve_config({"known_head": "none"}).known_head == "none"
    assert resolve_config({"known_head_hops": 2}).known_head_hops == 2
    # the repeated known-split check is an option (split_repeat_proxy/: the rule committed
    # before its rows failed; issue 60)
    assert ORALConfig().known_split_repeat is False and config.known_split_repeat is False
    assert resolve_config({"known_split_repeat": True}).known_split_repeat is True
    # the known head's inputs standardised over every node (known_head_scale/: its rule was met)
    assert ORALConfig().known_head_scale == "labelled" and config.known_head_scale == "all"
    assert resolve_config({"known_head_scale": "labelled"}).known_head_scale == "labelled"
    # novel groups cut as finely as the known groups stay whole, in fits whose known classes
    # are separable (novel_wholeness_separable/: its rule was met)
    assert ORALConfig().novel_wholeness is None and config.novel_wholeness == 0.9
    assert ORALConfig().novel_wholeness_if == "always" and config.novel_wholeness_if == "separable"
    assert resolve_config({"novel_wholeness": None}).novel_wholeness is None
    assert resolve_config({"novel_wholeness_if": "always"}).novel_wholeness_if == "always"
    # the fast paths (fast_paths_draws/: their rule held on all five graphs)
    assert ORALConfig().attention_kernel == "gather" and config.attention_kernel == "spmm"
    assert ORALConfig().sparse_input_below == 0.0 and config.sparse_input_below == 0.1
    assert resolve_config({"attention_kernel": "gather"}).attention_kernel == "gather"
    assert resolve_config({"sparse_input_below": 0.0}).sparse_input_below == 0.0
    # nothing else differs from the method's defaults
    differs = {k for k, v in ORALConfig().to_dict().items() if getattr(config, k) != v}
    assert differs == set(PIPELINE_DEFAULTS)


def test_a_pipeline_default_of_none_can_be_overridden_by_the_method_default():
    """``known_head_hops`` may be None and ORALConfig's default is 2; the pipeline's is None. A
    form that sends the pipeline's default back, or no value, keeps None; 2 given is an
    override, as ``--set known_head_hops=2`` means."""
    from flows.configuration import resolve_config
    from flows.params import NULL_IS_A_VALUE, ORALOverrides

    assert NULL_IS_A_VALUE["known_head_hops"] is None
    assert ORALOverrides().overrides() == {}
    assert ORALOverrides(known_head_hops=None).overrides() == {}
    assert ORALOverrides(known_head_hops=2).overrides() == {"known_head_hops": 2}
    assert resolve_config({"known_head_hops": 2}).known_head_hops == 2
    assert resolve_config({"known_head_hops": None}).known_head_hops is None
    # a value the pipeline turns on and ORALConfig leaves at None: None given turns it off
    assert NULL_IS_A_VALUE["novel_wholeness"] == 0.9
    assert ORALOverrides(novel_wholeness=None).overrides() == {"novel_wholeness": None}
    assert ORALOverrides(novel_wholeness=0.9).overrides() == {}
    assert resolve_config(ORALOverrides(novel_wholeness=None)).novel_wholeness is None
    # a field whose pipeline default is ORALConfig's keeps the old rule: its default is no override
    assert ORALOverrides(minibatch_above_edges=NULL_IS_A_VALUE["minibatch_above_edges"]
                         ).overrides() == {}
