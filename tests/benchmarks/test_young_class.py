"""The young-class benchmark's table (no fit) and its resumption key."""
from __future__ import annotations

from benchmarks.young_class import done, table


def _row(graph, size, seed, fit_surf, recut_surf):
    def answer(s):
        return {"surfaced": s, "recall": 0.6 if s else 0.2, "precision": 0.8 if s else 0.1,
                "all": 70.0, "novel_classes": 1}
    return {"graph": graph, "loop": f"{graph}-sim10", "night": 5, "size": size, "seed": seed,
            "young_nodes": 20, "fit": answer(fit_surf), "recut": answer(recut_surf),
            "paired": answer(fit_surf), "energy": answer(recut_surf)}


def test_the_table_counts_surfaced_fits_per_graph_and_size():
    rows = [_row("cora", 0.03, 0, False, True), _row("cora", 0.03, 1, True, True),
            _row("cora", 0.1, 0, False, False)]
    lines = table(rows)
    assert "surfaced: fit / recut / paired / energy" in lines[0]
    assert ("| cora | defaults | 0.03 | 2 | 1 of 2 / 2 of 2 / 1 of 2 / 2 of 2 | 40.0 / 60.0 / 40.0 / 60.0 "
            "| 45.0 / 80.0 / 45.0 / 80.0 |") in lines[2]
    assert lines[3].startswith("| cora | defaults | 0.1 | 1 | 0 of 1 / 0 of 1 / 0 of 1 / 0 of 1 |")
    assert done(rows, "cora-sim10", 5, 0.03, 1) and not done(rows, "cora-sim10", 5, 0.03, 2)
    pulled = dict(_row("cora", 0.03, 1, True, True), set=["known_head_pull=0.8"])
    assert not done(rows, "cora-sim10", 5, 0.03, 1, ["known_head_pull=0.8"])
    assert done([pulled], "cora-sim10", 5, 0.03, 1, ["known_head_pull=0.8"])
    assert "| cora | known_head_pull=0.8 | 0.03 | 1 |" in "\n".join(table(rows + [pulled]))
    old = dict(_row("cora", 0.03, 1, True, True), recent=True, beside_old=True)
    assert not done(rows, "cora-sim10", 5, 0.03, 1, recent=True, beside_old=True)
    assert not done([old], "cora-sim10", 5, 0.03, 1, recent=True)
    assert done([old], "cora-sim10", 5, 0.03, 1, recent=True, beside_old=True)
    assert "| cora | recent young class,beside an old class | 0.03 | 1 |" in "\n".join(
        table(rows + [old]))
    young = dict(_row("cora", 0.03, 1, True, True), recent=True, beside_young=True)
    assert not done([old], "cora-sim10", 5, 0.03, 1, recent=True, beside_young=True)
    assert done([young], "cora-sim10", 5, 0.03, 1, recent=True, beside_young=True)
    assert "| cora | recent young class,beside a young class | 0.03 | 1 |" in "\n".join(
        table(rows + [young]))
    near = dict(_row("cora", 0.03, 1, True, True), recent=True, beside_near=True)
    assert not done([old], "cora-sim10", 5, 0.03, 1, recent=True, beside_near=True)
    assert not done([near], "cora-sim10", 5, 0.03, 1, recent=True, beside_old=True)
    assert done([near], "cora-sim10", 5, 0.03, 1, recent=True, beside_near=True)
    assert ("| cora | recent young class,beside the class it links to most | 0.03 | 1 |"
            in "\n".join(table(rows + [near])))


def test_beside_young_needs_recent_and_not_beside_old(capsys):
    import pytest

    from benchmarks.young_class import main

    for argv in (["--loops", "x", "--beside-young"],
                 ["--loops", "x", "--recent", "--beside-old", "--beside-young"]):
        with pytest.raises(SystemExit):
            main(argv)
    assert "--beside-young needs --recent and not --beside-old" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--loops", "x", "--beside-old", "--beside-near"])
    assert "--beside-near takes neither --beside-old nor --beside-young" in capsys.readouterr().err


def test_the_paired_table_measures_each_answer_against_the_pipelines_per_fit():
    from benchmarks.young_class import paired_table

    def answer(all_, surfaced=False):
        return {"surfaced": surfaced, "recall": 0.5, "precision": 0.5, "all": all_,
                "novel_classes": 1}

    rows = [{"graph": "cora", "split": answer(60.0), "carve": answer(64.0, True)},
            {"graph": "cora", "split": answer(70.0, True), "carve": answer(72.0, True)},
            {"graph": "cora", "carve": answer(99.0)}]  # an older row without the base: left out
    lines = paired_table(rows)
    assert lines[0].startswith("| graph | fits | answer | All minus split's, paired (s.e.) |")
    assert lines[2] == "| cora | 2 | carve | +3.0 (1.0) | 2 / 1 |"


def test_a_kept_fit_is_read_back_instead_of_fitting_again(tmp_path):
    """``kept_fit``: the first call fits and keeps the class ids, the second reads them back
    without calling the fit; without a folder nothing is kept."""
    import torch

    from benchmarks.records import fit_name, kept_fit

    calls = []

    def fit():
        calls.append(1)
        return torch.tensor([0, 1, 2, 2])

    name = fit_name("cora-sim21", 5, 1, size=0.1)
    assert name == "young_cora-sim21_night5_size0.1_seed1"
    first, kept = kept_fit(tmp_path, name, fit)
    again, kept_again = kept_fit(tmp_path, name, fit)
    assert (kept, kept_again) == (False, True) and len(calls) == 1
    assert torch.equal(first, again) and (tmp_path / f"{name}.pt").exists()
    _, kept_none = kept_fit(None, name, fit)
    assert not kept_none and len(calls) == 2
    assert fit_name("cora-sim21", 8, 0, kind="heldout") == "heldout_cora-sim21_night8_seed0"


def test_a_row_without_a_newer_answer_is_completed_in_place_unless_an_old_answer_moves(tmp_path):
    """A row written before an answer was added is replaced by the same fit read back with it
    (``completed``); the other rows stay. Should an answer the row had come out differently,
    the file stays as it was and the run stops."""
    import json

    import pytest

    from benchmarks.young_class import ANSWERS, completed, read_jsonl, row_of

    path = tmp_path / "rows.jsonl"
    base = {"loop": "g-sim1", "night": 5, "size": 0.03, "seed": 0, "set": [], "recent": True}
    first = base | {a: {"surfaced": False} for a in ANSWERS[:-1]}
    other = base | {"seed": 1}
    path.write_text(json.dumps(first) + "\n" + json.dumps(other) + "\n")
    old = row_of(read_jsonl(path), "g-sim1", 5, 0.03, 0, [], True)
    assert old == first and row_of(read_jsonl(path), "g-sim1", 5, 0.03, 2, [], True) is None
    new = first | {ANSWERS[-1]: {"surfaced": True}}
    completed(path, old, new)
    assert read_jsonl(path) == [new, other]
    with pytest.raises(RuntimeError, match="differently"):
        completed(path, new, new | {ANSWERS[0]: {"surfaced": True}})
    assert read_jsonl(path) == [new, other]
