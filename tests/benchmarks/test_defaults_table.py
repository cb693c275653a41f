"""benchmarks/defaults_table.py: docs/defaults.md is generated from ORALConfig's field metadata
and is current (issue 48, item 4)."""
from __future__ import annotations

from pathlib import Path

from benchmarks import defaults_table
from oral_core.config import KINDS, config_fields

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_table_is_current() -> None:
    assert defaults_table.check() is None, "run python -m benchmarks.defaults_table"


def test_every_field_appears_once_under_its_kind() -> None:
    text = (ROOT / "docs" / "defaults.md").read_text()
    sections = text.split("\n## ")[1:]
    assert len(sections) == len(KINDS)
    for kind, section in zip(KINDS, sections):
        assert f"(`{kind}`," in section.splitlines()[0]
        for f in config_fields(kind):
            assert section.count(f"| `{f.name}` |") == 1, f.name
    assert text.count("\n| `") == len(config_fields())
    assert len(text.splitlines()) < 600


def test_defaults_are_written_as_set_takes_them_and_evidence_links_from_docs() -> None:
    text = defaults_table.render()
    assert "| `known_split_share` | `0.5` |" in text
    assert "| `prior_num_classes` | `none` |" in text
    assert "| `pan` | `true` |" in text
    assert "| `granularity_rule` | `plateau` |" in text
    assert "(../benchmarks/results/sensitivity/README.md)" in text
    assert text.startswith("# ") and "python -m benchmarks.defaults_table" in text.splitlines()[2]


def test_the_nights_defaults_stand_beside_the_methods() -> None:
    """Every pipeline default that differs from ORALConfig's is shown in bold in the night
    column; the others repeat ORALConfig's."""
    from flows.params import PIPELINE_DEFAULTS

    text = defaults_table.render()
    assert "| `known_head` | `none` | **`auto`** |" in text
    assert "| `pan` | `true` | `true` |" in text
    assert "| `known_split_repeat` | `false` | `false` |" in text
    assert text.count(" | **`") == sum(
        1 for f in config_fields() if f.name in PIPELINE_DEFAULTS
        and PIPELINE_DEFAULTS[f.name] != f.default)


def test_check_names_a_stale_or_missing_file(tmp_path, capsys, monkeypatch) -> None:
    stale = tmp_path / "defaults.md"
    assert "missing" in defaults_table.check(stale)
    stale.write_text(defaults_table.render().replace("`40`", "`41`"))
    assert "stale" in defaults_table.check(stale)
    monkeypatch.setattr(defaults_table, "DEFAULTS", stale)
    assert defaults_table.main(["--check"]) == 1
    err = capsys.readouterr().err.strip()
    assert "stale" in err and "\n" not in err
    assert defaults_table.main([]) == 0
    assert defaults_table.main(["--check"]) == 0
