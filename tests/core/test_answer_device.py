"""Where the night's answer runs its two steps that grow with the graph (the known-class GCN's fit
and the rejected nodes' neighbours): the training device when this process has it, else the CPU.
The CUDA tests run on a machine with a GPU (benchmarks/gpu_full_night.sh runs them there first)."""
from __future__ import annotations

import pytest
import torch

from tests.core.test_answer import planted_graph

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_the_answer_runs_on_the_cpu_unless_cuda_is_allowed_and_present(monkeypatch):
    from tasks.answer import answer_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert [answer_device(d) for d in ("auto", None, "cpu", "cuda")] == ["cpu"] * 4
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert [answer_device(d) for d in ("auto", None, "cpu", "cuda:1")] == [
        "cuda", "cuda", "cpu", "cuda:1"]


def test_naming_the_cpu_changes_nothing():
    """``device="cpu"`` is the default path: the same GCN logits, neighbours and answer."""
    from oral_core.answer import decide_answer, known_gcn_logits, view_neighbours

    g, train, val, _ = planted_graph(300)
    assert torch.equal(known_gcn_logits(g.x, g.edge_index, train, 3, epochs=5),
                       known_gcn_logits(g.x, g.edge_index, train, 3, epochs=5, device="cpu"))
    rows = torch.arange(0, 300, 11)
    assert torch.equal(view_neighbours(g.x, g.edge_index, rows, 4),
                       view_neighbours(g.x, g.edge_index, rows, 4, device="cpu"))
    class_id = torch.where(g.y == 3, torch.arange(g.y.numel()) % 3, g.y)
    a = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                      rejected_quantile=0.9, split_share=0.5, paired_alpha=0.05)
    b = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                      rejected_quantile=0.9, split_share=0.5, paired_alpha=0.05, device="cpu")
    assert torch.equal(a["answer"], b["answer"]) and a["namer"] == b["namer"]


@cuda
def test_the_gcn_on_the_gpu_names_the_nodes_as_on_the_cpu():
    from oral_core.answer import known_gcn_logits

    g, train, _, _ = planted_graph(600)
    on_cpu = known_gcn_logits(g.x, g.edge_index, train, 3)
    on_gpu = known_gcn_logits(g.x, g.edge_index, train, 3, device="cuda")
    assert on_gpu.device.type == "cpu" and on_gpu.shape == on_cpu.shape
    # different random streams (dropout, initial weights): the same classes, node for node
    # on nearly every node of the known classes
    known = g.y < 3
    agree = (on_gpu.argmax(1)[known] == on_cpu.argmax(1)[known]).float().mean()
    assert float(agree) > 0.9


@cuda
def test_neighbours_on_the_gpu_are_the_cpu_neighbours():
    from oral_core.answer import view_neighbours

    g, _, _, _ = planted_graph(600)
    rows = torch.arange(0, 600, 5)
    on_cpu = view_neighbours(g.x, g.edge_index, rows, 6)
    on_gpu = view_neighbours(g.x, g.edge_index, rows, 6, device="cuda")
    assert on_gpu.device.type == "cpu"
    same = [set(a) == set(b) for a, b in zip(on_cpu.tolist(), on_gpu.tolist())]
    assert sum(same) >= 0.95 * len(same)  # float ties may order a last neighbour differently


@cuda
def test_the_answer_on_the_gpu_comes_back_on_the_cpu():
    from oral_core.answer import decide_answer

    g, train, val, _ = planted_graph(600)
    y = g.y
    class_id = torch.where(y == 3, torch.arange(y.numel()) % 3, y)
    got = decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                        rejected_quantile=0.9, split_share=0.5, paired_alpha=0.05,
                        device="cuda")
    answer = got["answer"]
    assert answer.device.type == "cpu" and answer.shape == y.shape
    assert float((answer[y == 3] >= 3).float().mean()) > 0.5  # as on the CPU (test_answer)


def test_the_view_is_computed_once_when_several_steps_read_it(monkeypatch):
    """Carving, returning and grouping the rejected nodes all read ``S^2 X``: one night's answer
    computes it once."""
    import oral_core.answer as answer_module

    calls = []
    real = answer_module.answer_view
    monkeypatch.setattr(answer_module, "answer_view",
                        lambda x, e: calls.append(1) or real(x, e))
    g, train, val, _ = planted_graph(300)
    class_id = torch.where(g.y == 3, torch.arange(g.y.numel()) % 3, g.y)
    class_id[(g.y == 0) & (torch.arange(g.y.numel()) % 2 == 0)] = 3
    got = answer_module.decide_answer(class_id, g.x, g.edge_index, train, val, 3, scale="all",
                                      rejected_quantile=0.9, returned_quantile=0.5,
                                      carve_share=0.5)
    assert "rejected" in got and "returned" in got and "carved" in got
    assert len(calls) == 1
