"""ORALConfig's fields grouped by kind (issue 48 item 4): every field names its kind, a one-line
doc and existing evidence, the paper's values are the paper's, and the grouping changed no
configuration hash (the committed seed files are keyed by it)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from oral_core.config import KINDS, ORALConfig, config_fields
from oral_core.identity import config_hash

ROOT = Path(__file__).resolve().parents[2]


def test_every_field_has_a_kind_a_doc_and_an_evidence_entry() -> None:
    for f in dataclasses.fields(ORALConfig):
        assert set(f.metadata) == {"kind", "doc", "evidence"}, f.name
        assert f.metadata["kind"] in KINDS, f.name
        doc = f.metadata["doc"]
        assert doc.strip() and "\n" not in doc, f"{f.name}: the doc must be one non-empty line"
        assert isinstance(f.metadata["evidence"], str), f.name


def test_every_evidence_path_exists() -> None:
    missing = [(f.name, f.evidence) for f in config_fields()
               if f.evidence and not (ROOT / f.evidence).exists()]
    assert missing == []


def test_the_fields_are_in_sections_by_kind() -> None:
    order = [KINDS.index(f.kind) for f in config_fields()]
    assert order == sorted(order)
    assert {f.kind for f in config_fields()} == set(KINDS)


def test_config_fields_lists_every_field_and_filters_by_kind() -> None:
    listed = config_fields()
    assert [f.name for f in listed] == [f.name for f in dataclasses.fields(ORALConfig)]
    assert all(f.default == getattr(ORALConfig(), f.name) for f in listed)
    assert sum(len(config_fields(k)) for k in KINDS) == len(listed)
    assert [f.name for f in config_fields("ablation")] == ["pan", "pol"]
    with pytest.raises(ValueError, match="unknown kind"):
        config_fields("paperish")


def test_the_paper_values_are_the_papers() -> None:
    paper = {f.name: f.default for f in config_fields("paper")}
    # Sec. "Impact of Hyper-parameter Settings": N_pro peaks at 40, gamma at 0.3, mu at 0.015
    assert paper["num_prototypes"] == 40
    assert paper["gamma"] == 0.3
    assert paper["mu"] == 0.015
    # Eq. 13 sums its three terms unweighted
    assert paper["reg_weight"] == 1.0 and paper["consistency_weight"] == 1.0
    cfg = ORALConfig()
    assert (cfg.num_prototypes, cfg.gamma, cfg.mu) == (40, 0.3, 0.015)


def test_every_known_deviation_is_a_named_deviation_switch() -> None:
    deviations = {f.name for f in config_fields("deviation")}
    assert {"known_split_share", "known_absorb_share", "known_absorb_guard", "known_head",
            "opennc_losses", "pseudo_label_groups", "selection", "granularity_rule",
            "remove_inter_edges", "lr_schedule", "stop_when_stable"} <= deviations


def test_the_grouping_keeps_the_configuration_hash() -> None:
    """Computed before the fields were grouped (commit bfce36f): reordering fields or adding
    metadata must not change the hash that names the committed seed files."""
    assert config_hash(ORALConfig(), "row") == "05a093909c56"
    assert config_hash(ORALConfig(), "log_row") == "9767d9a51aed"


def test_dict_round_trip_is_unchanged() -> None:
    cfg = ORALConfig(gamma=0.1, batch_size=64, known_head="auto")
    assert ORALConfig.from_dict(cfg.to_dict()) == cfg
    assert len(cfg.to_dict()) == len(dataclasses.fields(ORALConfig))
