"""The torch neighbour sampler, checked against brute-force Python references on small graphs."""
from __future__ import annotations

from collections import Counter, deque

import pytest
import torch

from oral_core.sampling import (CSR, Subgraph, mini_batches, sample_neighbor_positions,
                                sample_neighbors, sample_subgraph)

HUB = 0


def random_graph(num_nodes: int, num_edges: int, seed: int, duplicates: bool = False,
                 isolated: int = 5) -> torch.Tensor:
    """Random directed edges j -> i; the last ``isolated`` nodes have no edges; node HUB receives
    an edge from about half the nodes. Without ``duplicates``: no repeated edge, no self loop."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - isolated
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active, (num_edges,), generator=g)
    hub_src = torch.randperm(active, generator=g)[: active // 2]
    src = torch.cat([src, hub_src, src[:10]])
    dst = torch.cat([dst, torch.full_like(hub_src, HUB), dst[:10]])  # src[:10]: duplicate edges
    edge_index = torch.stack([src, dst])
    if not duplicates:
        edge_index = edge_index[:, edge_index[0] != edge_index[1]]
        edge_index = torch.unique(edge_index, dim=1)
        edge_index = edge_index[:, torch.randperm(edge_index.shape[1], generator=g)]
    return edge_index


def incoming(edge_index: torch.Tensor, num_nodes: int) -> list[list[int]]:
    """Brute force: the sources of every node, in the order of ``edge_index``."""
    lists: list[list[int]] = [[] for _ in range(num_nodes)]
    for j, i in edge_index.t().tolist():
        lists[i].append(j)
    return lists


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture(params=[(50, 120, 1), (120, 400, 2), (200, 300, 3)], ids=lambda p: f"n{p[0]}")
def graph(request: pytest.FixtureRequest) -> tuple[torch.Tensor, int]:
    n, e, seed = request.param
    return random_graph(n, e, seed), n


# ----------------------------------------------------------------------------------------- CSR

@pytest.mark.parametrize("duplicates", [False, True])
def test_csr_matches_brute_force_incoming_lists(duplicates: bool) -> None:
    n = 80
    edge_index = random_graph(n, 250, seed=7, duplicates=duplicates)
    csr = CSR.from_edge_index(edge_index, n)
    ref = incoming(edge_index, n)
    assert csr.rowptr.shape == (n + 1,) and csr.col.shape == (edge_index.shape[1],)
    assert csr.degree().tolist() == [len(r) for r in ref]
    for i in range(n):
        got = csr.col[csr.rowptr[i]:csr.rowptr[i + 1]].tolist()
        assert got == ref[i]  # stable: same multiset, and even the same order
    assert csr.degree()[-5:].eq(0).all() and int(csr.degree()[HUB]) >= 35


def test_csr_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="shape"):
        CSR.from_edge_index(torch.zeros(3, 4, dtype=torch.long), 5)
    with pytest.raises(ValueError, match="outside"):
        CSR.from_edge_index(torch.tensor([[0], [5]]), 5)
    empty = CSR.from_edge_index(torch.empty(2, 0, dtype=torch.long), 4)
    assert empty.degree().tolist() == [0, 0, 0, 0]


# --------------------------------------------------------------------------- sample_neighbors

@pytest.mark.parametrize("fanout", [0, 1, 3, 10])
def test_sample_neighbors_counts_membership_and_no_repeats(graph, fanout: int) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    ref = incoming(edge_index, n)
    seeds = torch.randperm(n, generator=gen(0))[: n // 2]
    extra = [s for s in (HUB, n - 1) if s not in seeds.tolist()]  # the hub and an isolated node
    seeds = torch.cat([seeds, torch.tensor(extra, dtype=torch.long)])
    pos, dst = sample_neighbor_positions(csr, seeds, fanout, gen(1))
    src, dst2 = sample_neighbors(csr, seeds, fanout, gen(1))
    assert torch.equal(dst, dst2) and torch.equal(csr.col[pos], src)
    assert src.dtype == dst.dtype == torch.long
    # every sampled position lies in its target's segment
    assert torch.all(csr.rowptr[dst] <= pos) and torch.all(pos < csr.rowptr[dst + 1])
    edges = set(map(tuple, edge_index.t().tolist()))
    per_seed: dict[int, list[int]] = {s: [] for s in seeds.tolist()}
    for j, i in zip(src.tolist(), dst.tolist()):
        assert (j, i) in edges
        per_seed[i].append(j)
    for s, sources in per_seed.items():
        assert len(sources) == min(len(ref[s]), fanout)
        assert len(set(sources)) == len(sources)  # duplicate-free graph: distinct sources
    assert len(set(pos.tolist())) == pos.numel()


def test_sample_neighbors_with_multi_edges_never_repeats_a_position() -> None:
    n = 60
    edge_index = random_graph(n, 300, seed=4, duplicates=True)
    csr = CSR.from_edge_index(edge_index, n)
    seeds = torch.arange(n)
    pos, dst = sample_neighbor_positions(csr, seeds, 2, gen(0))
    assert len(set(pos.tolist())) == pos.numel()
    assert torch.bincount(dst, minlength=n).tolist() == csr.degree().clamp(max=2).tolist()


def test_fanout_minus_one_returns_every_incoming_edge(graph) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    src, dst = sample_neighbors(csr, torch.arange(n), -1, gen(0))
    assert Counter(zip(src.tolist(), dst.tolist())) == Counter(map(tuple, edge_index.t().tolist()))


def test_sample_neighbors_deterministic_per_generator_seed(graph) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    seeds = torch.arange(n)
    a = sample_neighbors(csr, seeds, 2, gen(5))
    b = sample_neighbors(csr, seeds, 2, gen(5))
    c = sample_neighbors(csr, seeds, 2, gen(6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_sample_neighbors_seed_order_and_empty_seeds() -> None:
    csr = CSR.from_edge_index(torch.tensor([[1, 2, 0, 3], [0, 0, 1, 2]]), 4)
    src, dst = sample_neighbors(csr, torch.tensor([2, 3, 0, 1]), -1)
    assert dst.tolist() == [2, 0, 0, 1] and src.tolist() == [3, 1, 2, 0]
    src, dst = sample_neighbors(csr, torch.empty(0, dtype=torch.long), 3)
    assert src.numel() == dst.numel() == 0
    with pytest.raises(ValueError, match="outside"):
        sample_neighbors(csr, torch.tensor([4]), 1)


def test_sampling_is_uniform_without_replacement() -> None:
    # node 0 has six in-neighbours 1..6; fanout 2 -> each neighbour is drawn with probability 1/3,
    # each of the 15 pairs with probability 1/15.
    edge_index = torch.tensor([[1, 2, 3, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0, 1, 2]])
    csr = CSR.from_edge_index(edge_index, 7)
    draws = 3000
    g = gen(11)
    src, dst = sample_neighbors(csr, torch.zeros(draws, dtype=torch.long), 2, g)
    assert src.numel() == 2 * draws and dst.eq(0).all()
    freq = torch.bincount(src, minlength=7)[1:].double() / draws
    assert torch.all((freq - 1 / 3).abs() < 0.05), freq  # sd ~0.009
    pairs = src.view(draws, 2).sort(dim=1).values
    assert torch.all(pairs[:, 0] != pairs[:, 1])
    pair_freq = Counter(map(tuple, pairs.tolist()))
    assert len(pair_freq) == 15
    assert all(abs(c / draws - 1 / 15) < 0.025 for c in pair_freq.values()), pair_freq
    # repeated calls on one generator are independent draws too
    firsts = Counter(sample_neighbors(csr, torch.tensor([0]), 1, g)[0].item() for _ in range(600))
    assert set(firsts) == {1, 2, 3, 4, 5, 6} and max(firsts.values()) < 160  # mean 100


# ---------------------------------------------------------------------------- sample_subgraph

def reference_subgraph(csr: CSR, seeds: torch.Tensor, fanouts: list[int],
                       generator: torch.Generator) -> tuple[list[int], list[tuple[int, int]]]:
    """Brute force hop bookkeeping with Python loops, drawing the same samples as the sampler."""
    nodes = seeds.tolist()
    seen = set(nodes)
    frontier = list(nodes)
    edges: list[tuple[int, int]] = []
    for fanout in fanouts:
        if not frontier:
            break
        src, dst = sample_neighbors(csr, torch.tensor(frontier, dtype=torch.long), fanout,
                                    generator)
        new = []
        for j, i in zip(src.tolist(), dst.tolist()):
            edges.append((j, i))
            if j not in seen:
                seen.add(j)
                new.append(j)
        nodes += new
        frontier = new
    return nodes, edges


def global_edges(sub: Subgraph) -> list[tuple[int, int]]:
    return list(zip(sub.nodes[sub.edge_index[0]].tolist(), sub.nodes[sub.edge_index[1]].tolist()))


def hops_from_seeds(sub: Subgraph) -> list[int]:
    """BFS distance of every local node from the seeds, following sampled edges target -> source."""
    m = sub.nodes.numel()
    sources: list[list[int]] = [[] for _ in range(m)]
    for j, i in sub.edge_index.t().tolist():
        sources[i].append(j)
    dist = [-1] * m
    queue = deque(range(sub.num_seeds))
    for s in range(sub.num_seeds):
        dist[s] = 0
    while queue:
        i = queue.popleft()
        for j in sources[i]:
            if dist[j] < 0:
                dist[j] = dist[i] + 1
                queue.append(j)
    return dist


@pytest.mark.parametrize("fanouts", [[3, 2], [5, 3, 2], [1], [-1, 2]])
def test_subgraph_matches_python_reference(graph, fanouts: list[int]) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    seeds = torch.randperm(n - 1, generator=gen(2))[:8] + 1
    seeds[0] = HUB  # the hub, and otherwise nodes 1..n-1
    sub = sample_subgraph(csr, seeds, fanouts, gen(3))
    ref_nodes, ref_edges = reference_subgraph(csr, seeds, fanouts, gen(3))
    assert sub.nodes.tolist() == ref_nodes
    assert global_edges(sub) == ref_edges
    assert sub.num_seeds == 8 and torch.equal(sub.nodes[:8], seeds)


@pytest.mark.parametrize("fanouts", [[4, 3], [2, 2, 2], [10, 1, 5]])
def test_subgraph_invariants(graph, fanouts: list[int]) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    deg = csr.degree().tolist()
    seeds = torch.randperm(n, generator=gen(9))[:6]
    sub = sample_subgraph(csr, seeds, fanouts, gen(4))
    nodes = sub.nodes.tolist()
    assert sub.nodes.dtype == sub.edge_index.dtype == torch.long
    assert nodes[:6] == seeds.tolist() and len(set(nodes)) == len(nodes)
    assert sub.edge_index.shape[0] == 2
    assert int(sub.edge_index.min()) >= 0 and int(sub.edge_index.max()) < len(nodes)
    real = Counter(map(tuple, edge_index.t().tolist()))
    sampled = Counter(global_edges(sub))
    assert all(real[e] >= c for e, c in sampled.items())  # real edges, none sampled twice
    hops = hops_from_seeds(sub)
    assert all(h >= 0 for h in hops) and hops == sorted(hops)  # discovered hop by hop
    assert max(hops) <= len(fanouts)
    in_count = Counter(sub.edge_index[1].tolist())
    for local, (node, hop) in enumerate(zip(nodes, hops)):
        expected = min(deg[node], fanouts[hop]) if hop < len(fanouts) else 0
        assert in_count[local] == expected, (node, hop)
    # every edge targets a node expanded at an earlier hop than the last
    for j, i in sub.edge_index.t().tolist():
        assert hops[i] < len(fanouts) and hops[j] <= hops[i] + 1


def bfs_in_neighbourhood(edge_index: torch.Tensor, n: int, seeds: list[int],
                         hops: int) -> tuple[set[int], Counter]:
    """Nodes within ``hops`` incoming steps of the seeds, and the edges into nodes at distance
    < hops (the edges a full-fanout sampler takes)."""
    ref = incoming(edge_index, n)
    dist = {s: 0 for s in seeds}
    queue = deque(seeds)
    edges: Counter = Counter()
    while queue:
        i = queue.popleft()
        if dist[i] == hops:
            continue
        for j in ref[i]:
            edges[(j, i)] += 1
            if j not in dist:
                dist[j] = dist[i] + 1
                queue.append(j)
    return set(dist), edges


def connected_graph(n: int, extra: int, seed: int) -> torch.Tensor:
    """A bidirected ring plus random extra edges: connected, no self loops or duplicates."""
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    more = torch.randint(0, n, (2, extra), generator=gen(seed))
    edge_index = torch.cat([ring, ring.flip(0), more], dim=1)
    return torch.unique(edge_index[:, edge_index[0] != edge_index[1]], dim=1)


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_full_fanout_equals_bfs_neighbourhood(hops: int) -> None:
    n = 60
    edge_index = connected_graph(n, 40, seed=21)
    csr = CSR.from_edge_index(edge_index, n)
    seeds = [5, 40, 17]
    sub = sample_subgraph(csr, torch.tensor(seeds), [-1] * hops, gen(0))
    ref_nodes, ref_edges = bfs_in_neighbourhood(edge_index, n, seeds, hops)
    assert set(sub.nodes.tolist()) == ref_nodes and len(ref_nodes) == sub.nodes.numel()
    assert Counter(global_edges(sub)) == ref_edges


def test_full_fanout_with_enough_hops_takes_the_whole_connected_graph() -> None:
    n = 14
    edge_index = connected_graph(n, 6, seed=2)
    csr = CSR.from_edge_index(edge_index, n)
    sub = sample_subgraph(csr, torch.tensor([3]), [-1] * n, gen(0))
    assert sorted(sub.nodes.tolist()) == list(range(n))
    assert Counter(global_edges(sub)) == Counter(map(tuple, edge_index.t().tolist()))


def test_subgraph_deterministic_per_generator_seed(graph) -> None:
    edge_index, n = graph
    csr = CSR.from_edge_index(edge_index, n)
    seeds = torch.arange(0, n, 7)
    a = sample_subgraph(csr, seeds, [3, 2], gen(8))
    b = sample_subgraph(csr, seeds, [3, 2], gen(8))
    c = sample_subgraph(csr, seeds, [3, 2], gen(9))
    assert torch.equal(a.nodes, b.nodes) and torch.equal(a.edge_index, b.edge_index)
    assert not (a.nodes.numel() == c.nodes.numel() and torch.equal(a.nodes, c.nodes)
                and torch.equal(a.edge_index, c.edge_index))


def test_subgraph_duplicate_seeds_raise_and_empty_seeds_give_empty_subgraph() -> None:
    csr = CSR.from_edge_index(random_graph(30, 60, seed=0), 30)
    with pytest.raises(ValueError, match="unique"):
        sample_subgraph(csr, torch.tensor([3, 4, 3]), [2, 2])
    sub = sample_subgraph(csr, torch.empty(0, dtype=torch.long), [2, 2])
    assert sub.num_seeds == 0 and sub.nodes.numel() == 0 and sub.edge_index.shape == (2, 0)
    assert sub.nodes.dtype == sub.edge_index.dtype == torch.long


def test_subgraph_of_isolated_seeds_and_no_hops() -> None:
    csr = CSR.from_edge_index(random_graph(30, 60, seed=0), 30)
    sub = sample_subgraph(csr, torch.tensor([29, 28]), [3, 3])  # isolated nodes
    assert sub.nodes.tolist() == [29, 28] and sub.edge_index.shape == (2, 0)
    sub = sample_subgraph(csr, torch.tensor([1, 2]), [])
    assert sub.nodes.tolist() == [1, 2] and sub.edge_index.shape == (2, 0)


# ------------------------------------------------------------------------------- mini_batches

def test_mini_batches_cover_every_node_once() -> None:
    nodes = torch.arange(100, 203)
    batches = list(mini_batches(nodes, 10, gen(0)))
    assert [b.numel() for b in batches] == [10] * 10 + [3]
    assert sorted(torch.cat(batches).tolist()) == nodes.tolist()
    again = list(mini_batches(nodes, 10, gen(0)))
    assert all(torch.equal(a, b) for a, b in zip(batches, again))
    other = torch.cat(list(mini_batches(nodes, 10, gen(1))))
    assert not torch.equal(torch.cat(batches), other)
    assert not torch.equal(torch.cat(batches), nodes)  # shuffled


def test_mini_batches_without_shuffle_and_edge_cases() -> None:
    nodes = torch.tensor([5, 3, 9, 1])
    assert [b.tolist() for b in mini_batches(nodes, 3, shuffle=False)] == [[5, 3, 9], [1]]
    assert [b.tolist() for b in mini_batches(nodes, 4, gen(0))][0].__len__() == 4
    assert list(mini_batches(torch.empty(0, dtype=torch.long), 4)) == []
    with pytest.raises(ValueError):
        list(mini_batches(nodes, 0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_gives_the_cpu_sample() -> None:
    n = 200
    edge_index = random_graph(n, 600, seed=3)
    cpu = CSR.from_edge_index(edge_index, n)
    cuda = CSR.from_edge_index(edge_index.cuda(), n)
    seeds = torch.arange(0, n, 9)
    a = sample_subgraph(cpu, seeds, [4, 3], gen(1))
    b = sample_subgraph(cuda, seeds.cuda(), [4, 3], gen(1))
    assert b.nodes.is_cuda and torch.equal(a.nodes, b.nodes.cpu())
    assert torch.equal(a.edge_index, b.edge_index.cpu())
