"""benchmarks/consensus_restarts.py: consensus answers against their own single fits."""
from __future__ import annotations

from benchmarks.consensus_restarts import consensus_vs_singles, table


def answers(all_by_name: dict, surfaced: dict | None = None, novel: dict | None = None) -> dict:
    out = {}
    for name, value in all_by_name.items():
        row = {"all": value, "known": value, "novel": value,
               "surfaced": (surfaced or {}).get(name, 1),
               "novel_classes": (novel or {}).get(name, 1), "accuracy": value}
        out[name] = {"oral": row, "paired": row}
    return out


def heldout_night(graph="cora", consensus=(80.0, 70.0), ari=(0.5, 0.8)) -> dict:
    singles = {f"single{s}": 70.0 + s for s in range(6)}  # seeds 0-2 mean 71, 3-5 mean 74
    return {"kind": "heldout", "graph": graph, "loop": f"{graph}-sim0", "night": 8,
            "seconds": 40.0,
            "answers": answers(singles | {"consensus012": consensus[0],
                                          "consensus345": consensus[1]}),
            "ari_single_oral": ari[0], "ari_consensus_oral": ari[1],
            "ari_single_paired": ari[0], "ari_consensus_paired": ari[1]}


def nonovel_night() -> dict:
    """A no-novel proxy night: the singles invent 1, 2 and 0 classes, their consensus none."""
    return {"kind": "nonovel", "graph": "cora", "loop": "cora-sim0", "night": 8, "seconds": 30.0,
            "answers": answers({"single0": 90.0, "single1": 90.0, "single2": 90.0,
                                "consensus012": 92.0},
                               novel={"single0": 1, "single1": 2, "single2": 0,
                                      "consensus012": 0})}


def test_each_consensus_is_measured_against_the_mean_of_its_own_fits():
    got = consensus_vs_singles(heldout_night(), "paired", "all")
    assert got == [80.0 - 71.0, 70.0 - 74.0]


def test_the_table_shows_agreement_all_and_the_invented_classes_side_by_side():
    nonovel = nonovel_night()
    text = table([heldout_night(), nonovel])
    assert "| cora | 1 | paired | 0.50 / 0.80 | 72.5 / +2.5 (6.5) | 2.0 / 2 of 4 | 40 |" in text
    assert "| cora | 1 | paired | 1.0 / 0 | 90.0 / 92.0 |" in text


def test_the_rule_reads_each_clause_per_graph():
    from benchmarks.consensus_restarts import rule_lines

    nonovel = nonovel_night()
    good = heldout_night(consensus=(75.0, 78.0), ari=(0.5, 0.8))  # +4 and +4 on their singles
    lines = rule_lines([good, nonovel])
    assert lines[-1] == ("| cora | +0.30: holds | +4.0 + 0.0; 2 / 2.0: holds | 0 / 1.0: holds "
                         "| met |")
    worse = heldout_night(consensus=(60.0, 61.0), ari=(0.5, 0.52))
    lines = rule_lines([worse])
    assert "+0.02: fails" in lines[-1] and "no rows: fails" in lines[-1]
    assert lines[-1].endswith("| not met |")
