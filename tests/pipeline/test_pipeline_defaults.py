"""The nightly pipeline's own defaults (flows.configuration.PIPELINE_DEFAULTS): where they differ from
ORALConfig's, and that a run's override still wins."""
from __future__ import annotations

from oral_core.config import ORALConfig


def test_the_pipeline_uses_the_known_head_where_validation_favours_it():
    from flows.configuration import PIPELINE_DEFAULTS, resolve_config

    assert ORALConfig().known_head == "none"  # the method's default (the tables) is the paper's
    config = resolve_config({})
    assert config.known_head == "auto" and config.progress is False
    assert resolve_config({"known_head": "none"}).known_head == "none"
    # nothing else differs from the method's defaults
    differs = {k for k, v in ORALConfig().to_dict().items() if getattr(config, k) != v}
    assert differs == set(PIPELINE_DEFAULTS)
