"""benchmarks/cut_calibration.py: ``+regroupcal``'s calibration read on kept nightly snapshots
(labelled nodes only, no fit)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_calibration_of_kept_nights_is_tabled_per_loop_and_night(tmp_path, capsys):
    from benchmarks.cut_calibration import main, row_text
    from data_contracts.simulate import simulate
    from data_contracts.synthetic import make_static_graph

    static = make_static_graph(num_nodes=1200, num_classes=4, num_features=8, separation=4.0,
                               seed=3, name="toy")
    simulate(static, 2, tmp_path / "toy-sim0" / "snapshots", "toy", start_date="2026-01-01",
             known_classes=[0, 1, 2], novel_start={3: 1}, seed=0)
    assert main(["--loops", str(tmp_path), "--graphs", "toy", "--sims", "0", "--nights", "1,2",
                 "--out", str(tmp_path / "out")]) == 0
    lines = (tmp_path / "out" / "table.md").read_text().splitlines()
    assert lines[0].startswith("| loop | night | known classes read | divided |")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [(r[0], r[1]) for r in rows] == [("| toy-sim0", "1"), ("| toy-sim0", "2")]
    for r in rows:  # three known classes with labelled nodes enough: read, and their 3 pairs
        assert r[2] == "3" and r[4] == "3" and r[6] in ("yes |", "no |")
    assert lines[2] in capsys.readouterr().out
    assert row_text("g-sim1", 5, {"classes": 0, "divides": None, "pairs": 0, "tells_apart": None,
                                  "regroups": False}) == "| g-sim1 | 5 | 0 |  | 0 |  | no |"
