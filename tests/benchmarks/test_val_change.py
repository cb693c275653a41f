"""``benchmarks.val_change`` (the known-class guard's evidence) and ``benchmarks.full_task``."""
from __future__ import annotations

import json

import pytest

from benchmarks import full_task, val_change


def _row(results, seed, val_acc, device="cpu", **config):
    folder = results / "runs" / "oral" / "cora-noprior"
    folder.mkdir(parents=True, exist_ok=True)
    row = {"method": "oral", "dataset": "cora", "seed": seed, "all": 99.0, "val_acc": val_acc,
           "device": device, "config": {"gamma": 0.3, "epochs": 200, "selection": "last", "seed": seed}
           | config}
    (folder / f"seed_{seed}.json").write_text(json.dumps(row))


def test_val_change_pairs_val_acc_flags_devices_and_gives_the_guard_verdict(tmp_path):
    base = tmp_path
    for seed, v in enumerate([90.0, 91.0, 92.0, 93.0]):
        _row(base, seed, v)
        _row(base / "collapse", seed, v - 50, opennc_losses=True)
        _row(base / "gpu", seed, v - 1, device="cuda:0")
        _row(base / "old", seed, v + 5, selection="best_val", gamma=0.1)
    rows = {r["folder"]: r for r in val_change.change_rows(base, [base / "collapse", base / "gpu", base / "old"])}
    assert set(rows) == {"collapse", "gpu"}  # another kept epoch: the selection rule's change, left out
    assert rows["collapse"]["change"] == pytest.approx(-50.0) and not rows["collapse"]["guard"]["kept"]
    assert rows["collapse"]["differs"] == "opennc_losses=True" and rows["collapse"]["seeds"] == 4
    assert rows["gpu"]["cross_device"] and rows["gpu"]["guard"]["kept"]
    md = val_change.markdown(list(rows.values()), "cmd", 20.0)
    assert "| gpu (other device) |" in md and "-50.0: **refused**" in md


def test_val_change_main_writes_the_table_and_refuses_an_empty_tree(tmp_path, capsys):
    out = tmp_path / "guard.md"
    assert val_change.main(["--base", str(tmp_path), "--out", str(out)]) == 2
    assert "no folder under" in capsys.readouterr().err and not out.exists()
    _row(tmp_path, 0, 90.0)
    _row(tmp_path / "new", 0, 80.0, gamma=0.1)
    assert val_change.main(["--base", str(tmp_path), "--out", str(out)]) == 0
    assert "| new | cora | no | ours | 1 | gamma=0.1 |" in out.read_text()


def test_full_task_writes_trajectories_and_reuses_finished_settings(npz_graph, tmp_path, monkeypatch,
                                                                   one_thread):
    out = tmp_path / "ft.md"
    argv = ["--dataset", str(npz_graph), "--setting", "defaults", "--setting", "gamma=0.1",
            "--set", "epochs=4", "--set", "hidden_dim=8", "--set", "num_prototypes=8", "--out", str(out)]
    assert full_task.main(argv) == 0
    md = out.read_text()
    assert "| `defaults` | 0 |" in md and "| `gamma=0.1` | 0 |" in md and "4: " in md
    monkeypatch.setattr(full_task, "trajectory", lambda *a, **k: pytest.fail("refitted a finished setting"))
    assert full_task.main(argv) == 0
    assert full_task.main([*argv[:-2], "--setting", "gamma=oops", "--out", str(out)]) == 2
