"""benchmarks/lever_table.py: every oral choose table in one lever x graph table, and its verdict."""
from __future__ import annotations

import json

import pytest

from benchmarks import lever_table


def _choice(folder, graph, rows, protocol="ours"):
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"graph": graph, "protocol": protocol, "candidates": [
        {"candidate": name, "seeds": seeds, "gain": gain, "se": se, "bound": gain - se,
         "ahead": ahead} for name, seeds, gain, se, ahead in rows]}
    (folder / f"{graph}.json").write_text(json.dumps(payload))


def test_verdict_needs_a_gain_somewhere_no_clear_loss_and_every_graph(tmp_path):
    a = tmp_path / "a"
    _choice(a, "cora-noprior", [("x=1", 10, 3.0, 1.0, 8), ("y=1", 10, 3.0, 1.0, 8),
                                ("z=1", 10, 0.5, 1.0, 5), ("w=1", 10, 3.0, 1.0, 8)])
    _choice(a, "amazonphoto-prior", [("x=1", 8, 0.5, 2.0, 4), ("y=1", 8, -3.0, 2.0, 1),
                                     ("z=1", 8, -0.5, 2.0, 4)])
    table = lever_table.read_choices([a])
    graphs = ["amazonphoto-prior", "cora-noprior"]
    assert lever_table.verdict(table["x=1"], graphs).startswith("default candidate (ahead on cora-noprior")
    assert lever_table.verdict(table["y=1"], graphs) == "not a default: behind on amazonphoto-prior"
    assert lever_table.verdict(table["z=1"], graphs) == "no gain shown"
    assert lever_table.verdict(table["w=1"], graphs) == "not judged on amazonphoto-prior"


def test_more_seeds_win_and_protocol_filters(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _choice(a, "cora-noprior", [("x=1", 3, -9.0, 1.0, 0)])
    _choice(b, "cora-noprior", [("x=1", 10, 2.0, 1.5, 6)])
    _choice(b, "cora-noprior-paper", [("x=1", 10, -5.0, 1.0, 1)], protocol="paper")
    _choice(b, "blog-prior-paper", [("x=1", 3, 1.0, 1.0, 2)], protocol="paper (the strict task)")
    table = lever_table.read_choices([a, b])
    assert table["x=1"]["cora-noprior"]["seeds"] == 10
    assert table["x=1"]["cora-noprior"]["folder"] == "b"
    assert "cora-noprior-paper" not in table["x=1"]
    both = lever_table.read_choices([a, b], protocol="both")
    assert set(both["x=1"]) == {"cora-noprior", "cora-noprior-paper", "blog-prior-paper"}
    assert set(lever_table.read_choices([a, b], protocol="paper")["x=1"]) == {
        "cora-noprior-paper", "blog-prior-paper"}
    text = lever_table.render(table, "cmd")
    assert "| `x=1` | **+2.0 ± 1.5 (6/10)** | default candidate" in text
    assert text.split("| `x=1` |")[1].splitlines()[0].endswith("| `b` |")  # where the cells came from


def test_cli_writes_the_table_and_refuses_a_folder_without_tables(tmp_path, capsys):
    a = tmp_path / "a"
    _choice(a, "cora-noprior", [("x=1", 10, 2.0, 1.5, 6)])
    out = tmp_path / "t.md"
    assert lever_table.main([str(a), "--out", str(out)]) == 0
    assert "`x=1`" in out.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="no oral choose table"):
        lever_table.main([str(empty)])
    with pytest.raises(SystemExit):
        lever_table.main([str(tmp_path / "missing")])
    assert "not a folder" in capsys.readouterr().err
