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


def test_a_wide_sparse_feature_graph_is_made_from_its_spec():
    """``wide:N:F``: the generator's structure with F binary bag-of-words features, sparse as
    BlogCatalog's, whose words follow the classes."""
    from benchmarks.profile import load_graph

    g, x = load_graph("wide:600:2000")
    assert x.shape == (600, 2000) and g.name == "wide-600x2000"
    density = float((x > 0).float().mean())
    assert 0.01 < density < 0.03  # about 40 words of 2,000 (repeats counted once)
    first = x[g.y == 0].mean(0)
    assert float(first.topk(200).values.mean()) > 5 * float(first.mean())  # a topic per class
