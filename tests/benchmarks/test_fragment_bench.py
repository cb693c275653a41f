"""benchmarks.fragment: the distinctness measures of a split-off fragment (diagnostic)."""
import torch

from benchmarks.fragment import centroid_cosine, edge_ratio, fragment_stats, main


def _two_cliques_and_a_bridge():
    # nodes 0-3 and 4-7: two 4-cliques joined by one edge (both directions)
    pairs = [(a, b) for block in (range(0, 4), range(4, 8)) for a in block for b in block if a != b]
    pairs += [(3, 4), (4, 3)]
    return torch.tensor(pairs).T


def test_edge_ratio_is_one_inside_a_set_and_the_bridge_share_between_two() -> None:
    ei = _two_cliques_and_a_bridge()
    a = torch.arange(8) < 4
    assert abs(edge_ratio(a, a, ei) - 12 / 16 / (12 / 12)) < 1e-9  # a set against itself: n*n pairs
    # between: 1 edge of 16 pairs; within: 12 of 12 ordered pairs each
    assert abs(edge_ratio(a, ~a, ei) - 1 / 16) < 1e-9
    assert edge_ratio(torch.arange(8) == 0, ~a, ei) != edge_ratio(torch.arange(8) == 0, ~a, ei)  # nan


def test_centroid_cosine_of_orthogonal_and_equal_sets() -> None:
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    first = torch.tensor([True, True, False, False])
    assert abs(centroid_cosine(first, first, x) - 1) < 1e-9
    assert abs(centroid_cosine(first, ~first, x)) < 1e-9


def test_fragment_stats_finds_main_fragment_and_the_small_class() -> None:
    # truth: known 0 (nodes 0-3), big novel 1 (nodes 4-11), small novel 2 (nodes 12-13)
    y = torch.tensor([0] * 4 + [1] * 8 + [2] * 2)
    # answer: group 5 holds six big nodes and the small class, group 6 the other two big nodes
    class_id = torch.tensor([0] * 4 + [5] * 6 + [6] * 2 + [5] * 2)
    ei = torch.tensor([[4, 5, 10, 11, 12, 4], [5, 4, 11, 10, 4, 12]])
    x = torch.eye(14)[:, :4] + 0.1
    s = fragment_stats(class_id, y, [0], ei, x)
    assert (s["big"], s["small"], s["main_nodes"], s["fragment_nodes"]) == (1, 2, 6, 2)
    assert s["fragment_purity"] == 1.0 and s["small_in_main"] == 1.0
    assert s["fragment_edges"] == 0.0  # no edge between the fragment (10, 11) and main (4-9)


def test_a_bad_set_option_is_one_line_and_exit_2(capsys) -> None:
    assert main(["--set", "no_such_field=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


def test_a_missing_dataset_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    assert main(["--dataset", str(tmp_path / "nowhere.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


def test_a_graph_with_one_novel_class_is_refused_before_any_fit(npz_graph, capsys) -> None:
    # 4 classes: the strict protocol knows 3, leaving one novel class
    assert main(["--dataset", str(npz_graph), "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert "1 novel class(es)" in err and "needs at least two" in err and err.count("\n") == 1


def test_an_unreadable_dataset_file_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    import numpy as np
    path = tmp_path / "wrong.npz"
    np.savez(path, x=np.zeros((3, 2)))
    assert main(["--dataset", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "missing arrays" in err and err.count("\n") == 1
