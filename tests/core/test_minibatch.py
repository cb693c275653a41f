"""Large-graph paths: the chunked whole-graph forward, sampled-view edge dropping and mini-batch
training (issue 8). The sampler itself is tested in ``test_sampling.py``."""
from __future__ import annotations

import pytest
import torch

from oral_core.attention import ORALNetwork, target_chunks, with_self_loops
from oral_core.clustering import finest_partition
from oral_core.config import ORALConfig, resolve_minibatch
from oral_core.consistency import sampled_edge_drop
from oral_core.identity import config_hash
from oral_core.inference import export_payload
from oral_core.metrics import open_world_accuracy
from oral_core.sampling import CSR
from oral_core.splits import make_split
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def graph():
    return make_attributed_sbm(num_nodes=500, num_classes=4, feature_dim=24, seed=3)


@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("max_edges,max_rows", [(1, 1), (37, 50), (10**9, 10**9)])
def test_chunked_forward_equals_full_forward(graph, attention, max_edges, max_rows) -> None:
    torch.manual_seed(0)
    net = ORALNetwork(24, 16, 3, 10, 0.1, use_attention=attention).eval()
    labels = torch.full((graph.num_nodes,), -1)
    labels[:120] = graph.y[:120] % 3

    def cluster(idx, r, prototypes):
        return finest_partition(r, labels, 3)

    with torch.no_grad():
        full, parts = net(graph.x, graph.edge_index, cluster=cluster)
    csr = CSR.from_edge_index(with_self_loops(graph.edge_index, graph.num_nodes), graph.num_nodes)
    chunked, parts2 = net.forward_chunked(graph.x, csr, cluster=cluster, max_edges=max_edges,
                                          max_rows=max_rows, keep_hidden=True)
    for a, b in zip(full, chunked):
        torch.testing.assert_close(a.r, b.r)
        torch.testing.assert_close(a.p, b.p)
        torch.testing.assert_close(a.h, b.h, atol=1e-5, rtol=1e-5)
    assert [p.num_groups for p in parts] == [p.num_groups for p in parts2]
    # without keep_hidden only the last layer's representation is kept
    dropped, _ = net.forward_chunked(graph.x, csr, partitions=parts, max_edges=max_edges)
    assert [o.h is None for o in dropped] == [True, True, False]


def test_target_chunks_cover_every_node_within_the_edge_budget(graph) -> None:
    csr = CSR.from_edge_index(with_self_loops(graph.edge_index, graph.num_nodes), graph.num_nodes)
    deg = csr.degree()
    for budget in (1, 5, 64, 10**9):
        chunks = target_chunks(csr, budget)
        assert chunks[0][0] == 0 and chunks[-1][1] == graph.num_nodes
        assert all(b0 == a1 for (_, b0), (a1, _) in zip(chunks, chunks[1:]))
        for a, b in chunks:
            # over budget only when a single node alone has more edges
            assert int(deg[a:b].sum()) <= budget or b - a == 1


def test_sampled_edge_drop_keeps_a_subset_and_spares_central_edges() -> None:
    gen = torch.Generator().manual_seed(0)
    # node 0 is a hub (degree 50); nodes 1..50 have degree 1 except a few with degree 40
    edge_index = torch.stack([torch.arange(1, 51), torch.zeros(50, dtype=torch.long)])
    degrees = torch.ones(51, dtype=torch.long)
    degrees[0] = 50
    degrees[1:11] = 40
    kept_count = torch.zeros(50)
    for _ in range(400):
        view = sampled_edge_drop(edge_index, degrees, 0.3, 0.7, gen)
        assert view.shape[0] == 2 and view.shape[1] <= 50
        assert set(map(tuple, view.t().tolist())) <= set(map(tuple, edge_index.t().tolist()))
        kept_count[view[0] - 1] += 1
    # edges at the central nodes 1..10 are dropped less often than those at the leaves
    assert kept_count[:10].mean() > kept_count[10:].mean() + 40
    empty = torch.empty(2, 0, dtype=torch.long)
    assert sampled_edge_drop(empty, degrees, 0.3, 0.7, gen).shape == (2, 0)


@pytest.mark.slow
def test_minibatch_training_discovers_the_planted_novel_class() -> None:
    graph = make_attributed_sbm(num_nodes=800, num_classes=4, feature_dim=32, avg_degree=8.0,
                                homophily=0.8, feature_noise=3.0, seed=0)
    split = make_split(graph.y, seed=0, known_classes=[0, 1, 2])
    config = ORALConfig(epochs=40, hidden_dim=32, progress=False, pol_start_epoch=15,
                        cluster_warmup_epochs=5, seed=0, batch_size=400, num_neighbors=5,
                        eval_chunk_edges=500)
    model = ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                             split.val_labels(graph.y))
    found = model.predict()
    assert all(row.get("batches") == 2 for row in model.history_[:-1])  # 800 seeds / 400
    assert any("t_sampling" in row for row in model.history_)
    test = split.test_mask
    scores = open_world_accuracy(graph.y[test], found.class_id[test], split.known_classes)
    novel_test = test & (graph.y == 3)
    ids, counts = torch.unique(found.class_id[novel_test], return_counts=True)
    assert int(ids[counts.argmax()]) >= 3, "the novel class was merged into a known class"
    # chance is ~0.3; one class for every test node gives 0.69
    assert scores["all"] > 0.8
    assert found.val_accuracy > 0.9


def test_batches_per_epoch_bounds_the_optimiser_steps(graph) -> None:
    split = make_split(graph.y, seed=0)
    config = ORALConfig(epochs=3, hidden_dim=16, progress=False, cluster_warmup_epochs=1,
                        pol_start_epoch=1, batch_size=50, batches_per_epoch=2)
    model = ORAL(config).fit(graph.x, graph.edge_index, split.train_labels(graph.y),
                             split.val_labels(graph.y))
    assert [row["batches"] for row in model.history_[:-1]] == [2, 2, 2]


@pytest.mark.parametrize("field,value", [("batch_size", 0), ("num_neighbors", 0),
                                         ("batches_per_epoch", 0), ("eval_chunk_edges", 0),
                                         ("minibatch_above_edges", 0), ("auto_batch_size", 0),
                                         ("minibatch_above_edges", -5), ("auto_batch_size", -1)])
def test_invalid_minibatch_settings_are_refused(field, value) -> None:
    with pytest.raises(ValueError, match=field):
        ORAL(ORALConfig(**{field: value}))


def test_minibatch_settings_at_their_defaults_keep_the_configuration_hash() -> None:
    """Seeds finished before mini-batch training existed stay valid: the fields are left out of
    the hash at their defaults, and change it otherwise."""
    # revision 4 trained 100 epochs, kept the best validation epoch and had no known-group check
    old = {"epochs": 100, "selection": "best_val", "known_split_share": None,
           "known_absorb_share": None, "known_absorb_guard": False}
    base = ORALConfig(**old)
    # the default configuration's hash at algorithm revision 4, before these fields existed
    assert config_hash(base, "row") == "4ad8ef4a1324"
    assert config_hash(ORALConfig(), "row") != config_hash(base, "row")  # today's defaults
    assert config_hash(base, "row") == config_hash(ORALConfig(eval_chunk_edges=1 << 21, **old), "row")
    assert config_hash(base, "row") != config_hash(ORALConfig(batch_size=1024, **old), "row")
    assert config_hash(base, "row") != config_hash(ORALConfig(num_neighbors=5, **old), "row")
    # automatic mini-batch training: the defaults (and None) keep the hash, other values change it
    assert config_hash(base, "row") == config_hash(
        ORALConfig(minibatch_above_edges=2_000_000, auto_batch_size=2048, **old), "row")
    assert config_hash(base, "row") != config_hash(ORALConfig(minibatch_above_edges=None, **old),
                                                   "row")
    assert config_hash(base, "row") != config_hash(ORALConfig(auto_batch_size=512, **old), "row")


# ------------------------------------------------------------- automatic mini-batch (issue 18.4)
def _tiny_fit(graph, edge_index=None, **settings) -> ORAL:
    split = make_split(graph.y, seed=0)
    config = ORALConfig(epochs=2, hidden_dim=16, num_prototypes=10, progress=False,
                        cluster_warmup_epochs=1, pol_start_epoch=1, seed=0, **settings)
    return ORAL(config).fit(graph.x, graph.edge_index if edge_index is None else edge_index,
                            split.train_labels(graph.y), split.val_labels(graph.y))


def _trained_minibatch(model: ORAL) -> bool:
    return all("batches" in row for row in model.history_[:-1])


def test_a_graph_over_the_edge_budget_trains_in_minibatches_and_says_why(graph) -> None:
    model = _tiny_fit(graph, minibatch_above_edges=100, auto_batch_size=250)
    assert [row["batches"] for row in model.history_[:-1]] == [2, 2]  # 500 seeds / 250
    assert model.train_config_.batch_size == 250
    assert model.config.batch_size is None  # the configuration asked for is kept as it was
    assert "chosen automatically" in model.batch_reason_
    assert "minibatch_above_edges=100" in model.batch_reason_
    payload = export_payload(model)  # what the pipeline saves with the model
    assert payload["train_batch_size"] == 250 and payload["batch_reason"] == model.batch_reason_
    assert payload["config"]["batch_size"] is None


def test_the_budget_counts_the_edges_with_one_self_loop_per_node(graph) -> None:
    """The count is what the full-batch forward propagates over: input self loops are not
    counted twice; a graph exactly at the budget stays full batch."""
    loops = torch.arange(7).repeat(2, 1)
    edges = torch.cat([graph.edge_index, loops], dim=1)
    count = with_self_loops(edges, graph.num_nodes).shape[1]
    assert count == graph.edge_index.shape[1] + graph.num_nodes
    at = _tiny_fit(graph, edges, minibatch_above_edges=count)
    over = _tiny_fit(graph, edges, minibatch_above_edges=count - 1)
    assert not _trained_minibatch(at) and at.batch_reason_.startswith("full batch")
    assert _trained_minibatch(over) and over.train_config_.batch_size == 2048
    assert f"{count:,} edges" in over.batch_reason_


def test_no_automatic_switch_when_off_or_when_batch_size_is_set(graph) -> None:
    off = _tiny_fit(graph, minibatch_above_edges=None)
    assert not _trained_minibatch(off) and off.train_config_.batch_size is None
    assert "minibatch_above_edges=None" in off.batch_reason_
    explicit = _tiny_fit(graph, minibatch_above_edges=100, auto_batch_size=250, batch_size=100)
    assert [row["batches"] for row in explicit.history_[:-1]] == [5, 5]  # its own batch size
    assert "set explicitly" in explicit.batch_reason_
    assert resolve_minibatch(ORALConfig(batch_size=64), 10**6, 10**8)[0].batch_size == 64


def test_below_the_budget_the_fit_is_unchanged(graph) -> None:
    """Bit-identical to full batch with the switch off (today's behaviour before it existed)."""
    default = _tiny_fit(graph)
    off = _tiny_fit(graph, minibatch_above_edges=None)
    assert default.train_config_ == default.config and default.train_config_.batch_size is None
    assert default.batch_reason_.startswith("full batch") and not _trained_minibatch(default)
    assert torch.equal(default.predict().class_id, off.predict().class_id)
    assert [row["loss"] for row in default.history_[:-1]] == [row["loss"] for row in off.history_[:-1]]



def test_a_gpu_with_room_keeps_full_batch_above_the_edge_budget() -> None:
    """On a CUDA device (its memory passed in), a graph over minibatch_above_edges trains full
    batch when the estimated need fits gpu_memory_share of the card; otherwise, on the CPU, or
    with the share None, the edge budget decides as before."""
    from oral_core.config import full_batch_gpu_bytes

    nodes, edges, feats = 10**6, 10_800_000, 64
    need = full_batch_gpu_bytes(ORALConfig(), nodes, edges, feats)
    assert 40 * 2**30 < need < 45 * 2**30  # ~39.4 GiB measured on an H200, rounded up
    h100 = 80 * 10**9
    cfg, why = resolve_minibatch(ORALConfig(), nodes, edges, feats, gpu_memory=h100)
    assert cfg.batch_size is None and why.startswith("full batch") and "gpu_memory_share" in why
    for kwargs in ({}, {"gpu_memory": 24 * 2**30}):  # the CPU; a card too small
        cfg, why = resolve_minibatch(ORALConfig(), nodes, edges, feats, **kwargs)
        assert cfg.batch_size == 2048 and "chosen automatically" in why
    cfg, _ = resolve_minibatch(ORALConfig(gpu_memory_share=None), nodes, edges, feats,
                               gpu_memory=h100)
    assert cfg.batch_size == 2048
    # wider layers need more: 256 hidden units do not fit the same card
    cfg, _ = resolve_minibatch(ORALConfig(hidden_dim=256), nodes, edges, feats, gpu_memory=h100)
    assert cfg.batch_size == 2048
    # below the edge budget nothing changes on any device
    assert resolve_minibatch(ORALConfig(), 10**4, 10**5, feats, gpu_memory=h100)[0] == ORALConfig()
    with pytest.raises(ValueError, match="gpu_memory_share"):
        ORALConfig(gpu_memory_share=0.0).validate()
