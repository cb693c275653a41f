"""benchmarks.split_estimate: the known-split check's estimate beside the true known share."""
import numpy as np


def test_the_estimate_counts_validation_nodes_at_the_known_classes_rate():
    """Known class 0 holds 4 unlabelled and 2 validation nodes (rate 2); novel class 1 holds 4
    unlabelled nodes, 2 of them truly known, and 1 validation node: estimated 2 * 1 / 4 = 0.5,
    true 0.5. Novel class 2 holds 2 unlabelled nodes, both truly known, and no validation node
    (a step kept them in their known class): estimated 0, true 1."""
    from benchmarks.split_estimate import class_estimates, table

    key = np.array([0] * 6 + [1] * 5 + [2] * 2)
    val = np.array([0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 1] + [0, 0]).astype(bool)
    unlabelled = ~val
    known = np.array([1] * 6 + [1, 1, 0, 0, 1] + [1, 1]).astype(bool)
    rows = class_estimates(key, unlabelled, val, known, num_known=1)
    assert [(r["class"], r["unlabelled"], r["validation"], r["estimate"], r["truth"])
            for r in rows] == [(1, 4, 1, 0.5, 0.5), (2, 2, 0, 0.0, 1.0)]
    lines = table([{"graph": "g", "stage": "answer"} | r for r in rows])
    assert lines[-1] == "| g | answer | 2 | 0.25 | 0.75 | -0.50 | 1 |"


def test_no_estimate_without_validation_nodes_in_known_classes():
    from benchmarks.split_estimate import class_estimates

    key = np.array([0, 0, 1, 1])
    none = np.zeros(4, dtype=bool)
    assert class_estimates(key, ~none, none, none, num_known=1) == []
