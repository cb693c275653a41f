"""benchmarks.float_portability: one seeded fit per kernel setting, each in a child process,
compared label-free with the first."""
from __future__ import annotations

import torch


def test_compare_reads_a_relabelling_as_the_same_answer_and_a_move_as_a_move():
    from benchmarks.float_portability import compare

    ids = torch.tensor([0, 0, 1, 1, 2, 2, 2, 2])
    assert compare(ids, (ids + 1) % 3) == (1.0, 0.0)
    ari, moved = compare(ids, torch.tensor([0, 0, 1, 1, 2, 2, 2, 1]))
    assert ari < 1.0 and moved == 12.5


def test_each_child_gets_its_own_kernels_and_nothing_inherited(monkeypatch):
    from benchmarks.float_portability import SETTINGS, child_env

    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    native = child_env(dict(SETTINGS)["native"])
    assert "ATEN_CPU_CAPABILITY" not in native and "MKL_CBWR" not in native
    assert native["OMP_NUM_THREADS"] == "1"
    forced = child_env(dict(SETTINGS)["ATen avx2, MKL AVX2"])
    assert forced["ATEN_CPU_CAPABILITY"] == "avx2" and forced["MKL_CBWR"] == "AVX2"


def test_the_table_has_one_row_per_setting_against_the_first(tmp_path, monkeypatch):
    import benchmarks.float_portability as fp

    answers = iter([torch.tensor([0, 0, 1, 1]), torch.tensor([1, 1, 0, 0]),
                    torch.tensor([0, 1, 1, 1]), torch.tensor([0, 0, 1, 1]),
                    torch.tensor([0, 0, 0, 0])])
    seen = []

    def fake(graph, seed, epochs, setting, answer):
        seen.append(setting)
        return {"ids": next(answers), "probes": ["abc"] * 7, "seconds": 10.0 + len(seen)}

    monkeypatch.setattr(fp, "fit_in_child", fake)
    monkeypatch.setattr(fp, "ROOT", tmp_path)
    assert fp.main(["--out", str(tmp_path / "out"), "--epochs", "2"]) == 0
    text = (tmp_path / "out" / "table.md").read_text()
    assert len(seen) == len(fp.SETTINGS) and seen[0] == {}
    assert "| native | (none) |" in text and "| 1.000 | 0.0 | 11.0 | 1.00 |" in text
    assert "| native, again | (none) |" in text and text.count("| 1.000 | 0.0 |") == 3
    assert "| 25.0 |" in text  # one node of four in another class


def test_a_failed_child_is_a_clear_error(tmp_path, monkeypatch):
    import subprocess

    import pytest

    import benchmarks.float_portability as fp

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 1, "", "Traceback ...\nValueError: no such dataset"))
    with pytest.raises(RuntimeError, match="failed: ValueError: no such dataset"):
        fp.fit_in_child("nograph", 0, 2, {"ATEN_CPU_CAPABILITY": "avx2"}, tmp_path / "a.pt")
