"""``benchmarks.profile --out`` is checked before any profiling starts."""
from __future__ import annotations

import pytest

from benchmarks import profile


@pytest.mark.parametrize("bad", ["folder", "table.csv"])
def test_out_must_name_a_markdown_file(tmp_path, capsys, bad):
    target = tmp_path / bad
    if bad == "folder":
        target.mkdir()
    with pytest.raises(SystemExit) as err:
        profile.main(["--graph", "cora", "--out", str(target)])
    assert err.value.code == 2
    assert f"--out {target}: must name a Markdown file" in capsys.readouterr().err
