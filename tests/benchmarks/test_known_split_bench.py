"""``benchmarks.known_split``: checked test rows paired with their own unchecked answer."""
import json

from benchmarks.known_split import main


def _row(folder, cell, seed, all_, unchecked, classes, classes_u, check="known_split_share"):
    path = folder / "runs" / "oral" / cell
    path.mkdir(parents=True, exist_ok=True)
    (path / f"seed_{seed}.json").write_text(json.dumps({
        "seed": seed, "all": all_, "classes_est": classes, "classes_true": 7,
        "config": {"known_split_share": None, "known_absorb_share": None, check: 0.5},
        "selection_alternatives": {"last": {"all": all_},
                                   "last_unchecked": {"all": unchecked, "classes": classes_u}}}))


def test_the_table_pairs_each_seed_with_its_unchecked_answer(tmp_path, capsys):
    _row(tmp_path, "cora-noprior", 0, 70.0, 68.0, 7, 8)
    _row(tmp_path, "cora-noprior", 1, 60.0, 60.0, 6, 7)
    out = tmp_path / "t.md"
    assert main([str(tmp_path), "--out", str(out)]) == 0
    line = next(x for x in out.read_text().splitlines() if x.startswith("| cora-noprior"))
    # class-number error |estimate - 7|: unchecked 1 and 0, checked 0 and 1
    assert line == "| cora-noprior | 2 | 64.00 | 65.00 | +1.00 (1.00) | 1 / 0 | 7.5 → 6.5 (7) | 0.5 → 0.5 |"
    assert out.read_text().startswith("# The known-split check on the test rows")


def test_rows_with_both_checks_set_are_titled_and_commanded_as_both(tmp_path):
    _row(tmp_path, "cora-prior", 0, 70.0, 68.0, 7, 9)
    path = tmp_path / "runs" / "oral" / "cora-prior" / "seed_0.json"
    row = json.loads(path.read_text())
    row["config"] = {"known_split_share": 0.5, "known_absorb_share": 0.5}
    path.write_text(json.dumps(row))
    out = tmp_path / "t.md"
    assert main([str(tmp_path), "--check", "known_absorb_share", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# The known-split and known-absorb checks together on the test rows")
    assert "--set known_split_share=0.5 --set known_absorb_share=0.5" in text
    assert "| cora-prior | 1 | 68.00 | 70.00 | +2.00 (nan) | 1 / 0 | 9.0 → 7.0 (7) | 2.0 → 0.0 |" in text


def test_a_folder_without_checked_rows_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "known_split_share" in capsys.readouterr().err


def test_cells_from_several_folders_share_one_table(tmp_path):
    _row(tmp_path / "a", "cora-noprior", 0, 70.0, 68.0, 7, 8)
    _row(tmp_path / "b", "amazonphoto-prior", 0, 80.0, 81.0, 8, 8)
    out = tmp_path / "t.md"
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 0
    cells = [x.split(" | ")[0] for x in out.read_text().splitlines() if x.startswith("| ") and "seeds" not in x
             and "---" not in x]
    assert cells == ["| amazonphoto-prior", "| cora-noprior"]


def test_each_check_pairs_only_the_rows_fitted_with_it(tmp_path, capsys):
    _row(tmp_path / "split", "cora-noprior", 0, 70.0, 68.0, 7, 8)
    _row(tmp_path / "absorb", "cora-noprior", 0, 75.0, 71.0, 7, 7, check="known_absorb_share")
    out = tmp_path / "t.md"
    assert main([str(tmp_path / "split"), str(tmp_path / "absorb"), "--check", "known_absorb_share",
                 "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# The known-absorb check") and "--check known_absorb_share" in text
    line = next(x for x in text.splitlines() if x.startswith("| cora-noprior"))
    assert line.startswith("| cora-noprior | 1 | 71.00 | 75.00 | +4.00 (")  # not the split row
    assert main([str(tmp_path / "split"), "--check", "known_absorb_share"]) == 2
    assert "known_absorb_share=S" in capsys.readouterr().err


def test_against_pairs_both_answers_with_another_methods_rows_by_seed(tmp_path):
    _row(tmp_path / "absorb", "amazonphoto-prior", 0, 75.0, 70.0, 8, 8, check="known_absorb_share")
    _row(tmp_path / "absorb", "amazonphoto-prior", 1, 80.0, 80.0, 8, 8, check="known_absorb_share")
    _row(tmp_path / "absorb", "cora-prior", 0, 80.0, 80.0, 7, 7, check="known_absorb_share")
    other = tmp_path / "results" / "runs" / "opennc" / "amazonphoto-prior"
    other.mkdir(parents=True)
    for seed, all_ in ((0, 74.0), (1, 82.0), (5, 50.0)):  # seed 5: no checked row, not paired
        (other / f"seed_{seed}.json").write_text(json.dumps({"seed": seed, "all": all_}))
    out = tmp_path / "t.md"
    assert main([str(tmp_path / "absorb"), "--check", "known_absorb_share", "--against", "opennc",
                 "--results", str(tmp_path / "results"), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("Against `opennc`"))
    rows = [x for x in lines[start:] if x.startswith("| amazonphoto") or x.startswith("| cora")]
    # unchecked: 70 - 74, 80 - 82 -> -3.00 (1.00); checked: 75 - 74, 80 - 82 -> -0.50 (1.50)
    assert rows[0] == "| amazonphoto-prior | 2 | -3.00 (1.00) | 0/2 | -0.50 (1.50) | 1/2 |"
    assert rows[1] == "| cora-prior | 0 | no `opennc` row | | | |"


def test_guarded_rows_get_the_guard_table_paired_with_their_unguarded_answer(tmp_path):
    for seed, (guarded, unguarded, val_g, val_u) in enumerate([(72.0, 64.0, 80.0, 60.0),
                                                               (70.0, 70.0, 81.0, 81.0)]):
        _row(tmp_path, "blogcatalog-prior", seed, guarded, 71.0, 6, 6, check="known_absorb_share")
        path = tmp_path / "runs" / "oral" / "blogcatalog-prior" / f"seed_{seed}.json"
        row = json.loads(path.read_text())
        row["config"] = {"known_split_share": 0.5, "known_absorb_share": 0.5,
                         "known_absorb_guard": True}
        row["val_acc"], row["device"] = val_g, "cuda:0"
        row["selection_alternatives"]["last_unguarded"] = {"all": unguarded, "val_acc": val_u}
        path.write_text(json.dumps(row))
    out = tmp_path / "t.md"
    assert main([str(tmp_path), "--check", "known_absorb_share", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# The known-split and known-absorb checks together, with the "
                           "known-absorb guard, on the test rows")
    assert "--set known_absorb_guard=true" in text
    # guarded - unguarded: +8, 0 -> +4.00 (4.00); only seed 0 changed; validation 70.5 -> 80.5
    assert "| blogcatalog-prior | 2 | 67.00 | 71.00 | +4.00 (4.00) | 0 | 70.50 → 80.50 |" in text
    assert "Devices: these rows cuda:0 2." in text


def test_rows_without_the_guard_get_no_guard_table(tmp_path):
    _row(tmp_path, "cora-prior", 0, 70.0, 68.0, 7, 9, check="known_absorb_share")
    out = tmp_path / "t.md"
    assert main([str(tmp_path), "--check", "known_absorb_share", "--out", str(out)]) == 0
    assert "known-absorb guard" not in out.read_text()
    assert "Devices: these rows unrecorded 1." in out.read_text()
