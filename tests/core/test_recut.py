"""oral_core/recut.py and oral_core/kmeans.py: the novel groups re-cut on fixed propagated
features (the novel_recut study), and the k-means it uses."""
from __future__ import annotations

import pytest
import torch

from oral_core.config import ORALConfig
from oral_core.kmeans import kmeans
from oral_core.recut import recut_novel
from oral_core.synthetic import make_attributed_sbm
from oral_core.trainer import ORAL


def two_blob_graph():
    """12 known nodes (class 0 and 1) and 40 novel nodes in two feature blobs (20 each), no
    edges: the propagated features are the features themselves, scaled."""
    gen = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 0.0, 0.0], [8.0, 8.0, 0.0], [0.0, 8.0, 8.0], [8.0, 0.0, 8.0]])
    group = torch.tensor([0] * 6 + [1] * 6 + [2] * 20 + [3] * 20)
    x = centres[group] + 0.3 * torch.randn(group.numel(), 3, generator=gen)
    return x, torch.empty(2, 0, dtype=torch.long), group


def test_kmeans_separates_two_blobs_whatever_the_seed():
    x, _, group = two_blob_graph()
    z = x[12:].double()
    a, _, _ = kmeans(z, 2, seed=0)
    b, _, _ = kmeans(z, 2, seed=5)
    truth = group[12:] - 2
    assert torch.equal(a, truth) or torch.equal(a, 1 - truth)
    assert torch.equal(a, b) or torch.equal(a, 1 - b)


def test_the_recut_finds_the_blobs_keeps_known_nodes_and_the_fits_ids():
    x, edges, group = two_blob_graph()
    fitted = group.clone()
    fitted[12:] = torch.tensor([2, 5] * 20)  # the fit's novel ids 2 and 5, cut across the blobs
    fitted[12] = fitted[14] = 5  # ...with a slight majority of blob 2 (nodes 12-31) in id 5
    got = recut_novel(fitted, x, edges, num_known=2, dims=3)
    assert torch.equal(got[:12], group[:12])  # known nodes untouched
    assert set(got[12:].tolist()) == {2, 5}  # the fit's ids, no new ones
    assert len(set(got[12:32].tolist())) == 1 and len(set(got[32:].tolist())) == 1
    assert got[12] == 5 and got[32] == 2  # each blob takes the id it overlaps most


def test_two_fits_that_agree_on_the_novel_nodes_agree_on_their_recut():
    x, edges, group = two_blob_graph()
    gen = torch.Generator().manual_seed(1)
    a, b = group.clone(), group.clone()
    a[12:] = 2 + torch.randint(2, (40,), generator=gen)  # two unrelated cuts, ids 2-3 ...
    b[12:] = torch.where(torch.randint(2, (40,), generator=gen) > 0, 7, 4)  # ... and 4, 7
    ra, rb = recut_novel(a, x, edges, 2, dims=3), recut_novel(b, x, edges, 2, dims=3)
    pairs = set(zip(ra[12:].tolist(), rb[12:].tolist()))
    assert len(pairs) == 2  # the same two groups, named by each fit's own ids


def test_an_answer_with_fewer_than_two_novel_classes_is_left_as_it_is():
    x, edges, group = two_blob_graph()
    one = group.clone()
    one[12:] = 2
    assert torch.equal(recut_novel(one, x, edges, 2, dims=3), one)
    known_only = torch.zeros_like(group)
    assert torch.equal(recut_novel(known_only, x, edges, 2, dims=3), known_only)


def small_fit():
    """A 150-node graph of four classes, two known with every other node labelled, and a short
    fit's settings: ``(graph, train labels, config fields)``."""
    graph = make_attributed_sbm(num_nodes=150, num_classes=4, feature_dim=8, seed=3)
    train = graph.y.clone()
    train[train >= 2] = -1
    train[torch.arange(150) % 2 == 1] = -1
    base = dict(epochs=10, hidden_dim=8, num_prototypes=12, cluster_warmup_epochs=2,
                pol_start_epoch=4, progress=False, device="cpu", seed=1)
    return graph, train, base


@pytest.mark.slow
def test_a_fit_with_the_recut_answers_the_recut_of_the_same_fit_without_it():
    """What benchmarks/novel_recut.py relies on: the re-cut runs after training and draws from
    its own generator, so the option's answer is the re-cut of the plain fit's, node for node,
    and the plain answer stays beside it as ``last_no_recut``."""
    graph, train, base = small_fit()
    plain = ORAL(ORALConfig(**base)).fit(graph.x, graph.edge_index, train)
    cut = ORAL(ORALConfig(**base, novel_recut=True, novel_recut_dims=4)).fit(
        graph.x, graph.edge_index, train)
    expected = recut_novel(plain.predict().class_id, graph.x, graph.edge_index, 2, dims=4)
    assert torch.equal(cut.predict().class_id, expected)
    assert torch.equal(cut.discoveries_["last"].class_id, expected)
    assert torch.equal(cut.discoveries_["last_no_recut"].class_id, plain.predict().class_id)


def test_the_recut_dims_must_be_positive():
    with pytest.raises(ValueError, match="novel_recut_dims"):
        ORALConfig(novel_recut_dims=0).validate()


# ------------------------------------------------------------------ the novel classes regrouped

def blobs(*sizes: int, gap: float, dims: int = 16, seed: int = 0) -> torch.Tensor:
    """Gaussian blobs of ``sizes`` rows, their centres ``gap`` apart on separate axes."""
    gen = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(n, dims, generator=gen) + gap * torch.eye(dims)[i]
                      for i, n in enumerate(sizes)])


def test_prediction_strength_is_high_for_real_clusters_and_low_for_one_blob():
    from oral_core.recut import parts_that_hold, prediction_strength

    two, three, one = blobs(60, 60, gap=8.0), blobs(50, 50, 50, gap=8.0), blobs(150, gap=0.0)
    assert prediction_strength(two, 2) > 0.95
    assert prediction_strength(one, 2) < 0.8
    assert (parts_that_hold(two), parts_that_hold(three), parts_that_hold(one)) == (2, 3, 1)
    # a class too small for two parts of REGROUP_MIN_PART nodes per half is not cut
    assert parts_that_hold(blobs(15, 15, gap=8.0)) == 1


def test_pairs_kept_is_the_least_share_of_test_pairs_kept_together():
    from oral_core.recut import pairs_kept

    # test cluster 0: four nodes, the training centres split them 2/2 (2 of 6 pairs kept);
    # test cluster 1: three nodes all on one centre (3 of 3)
    test_cut = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    side = torch.tensor([0, 0, 1, 1, 1, 1, 1])
    assert pairs_kept(test_cut, side, 2) == pytest.approx(2 / 6)
    assert pairs_kept(torch.tensor([0, 1]), torch.tensor([0, 1]), 2) == 0.0  # no pair at all


def test_regroup_cuts_a_novel_class_holding_two_blobs_and_leaves_the_rest():
    """Known nodes (ids 0-1), novel class 2 holding two separated blobs, novel class 3 one blob:
    class 2 is cut in two (the first part keeps id 2, the other takes 4), class 3 and the known
    nodes keep their ids; the count of new classes is returned."""
    from oral_core.recut import regrouped_answer

    view = torch.cat([blobs(20, 20, gap=8.0, seed=1), blobs(60, 60, gap=8.0, seed=2),
                      blobs(100, gap=0.0, seed=3)])
    answer = torch.tensor([0] * 20 + [1] * 20 + [2] * 120 + [3] * 100)
    out, made = regrouped_answer(answer, view, num_known=2)
    assert made == 1
    assert torch.equal(out[:40], answer[:40]) and torch.equal(out[160:], answer[160:])
    cut = out[40:160]
    assert set(cut.tolist()) == {2, 4}
    assert len(set(cut[:60].tolist())) == 1 and len(set(cut[60:].tolist())) == 1  # blob by blob


def test_the_answer_regroups_only_when_asked():
    """``decide_answer(regroup_strength=...)`` cuts the novel class of two blobs and says how many
    classes it made; without it the answer keeps ORAL's one novel class."""
    from oral_core.answer import decide_answer
    from oral_core.recut import REGROUP_STRENGTH

    x = blobs(40, 40, 80, 80, gap=8.0, seed=4)
    edges = torch.empty(2, 0, dtype=torch.long)
    truth = torch.tensor([0] * 40 + [1] * 40 + [2] * 160)
    train = torch.full((240,), -1)
    val = torch.full((240,), -1)
    train[0:10], train[40:50] = 0, 1
    val[10:20], val[50:60] = 0, 1
    plain = decide_answer(truth, x, edges, train, val, 2)
    cut = decide_answer(truth, x, edges, train, val, 2, regroup_strength=REGROUP_STRENGTH)
    assert "regrouped" not in plain and cut["regrouped"] == 1
    assert int(torch.unique(plain["answer"][80:]).numel()) == 1
    assert int(torch.unique(cut["answer"][80:]).numel()) == 2


def test_the_known_classes_are_the_bar_a_novel_cut_must_clear():
    """``known_bar``: a novel class of two blobs is cut when the known classes are single blobs
    (their prediction strength at 2 parts is low), and left whole when every known class halves
    as reproducibly (each is two blobs itself); :func:`known_yardstick` reads one bar per k."""
    from oral_core.recut import known_yardstick, regrouped_answer

    answer = torch.tensor([0] * 100 + [1] * 100 + [2] * 120)
    novel = blobs(60, 60, gap=8.0, dims=16, seed=7)
    single_known = torch.cat([blobs(100, gap=0.0, seed=8), blobs(100, gap=0.0, seed=9) + 20.0])
    split_known = torch.cat([blobs(50, 50, gap=8.0, seed=10), blobs(50, 50, gap=8.0, seed=11) + 20.0])
    for known, cut in ((single_known, True), (split_known, False)):
        view = torch.cat([known, novel])
        bar = known_yardstick(answer, view, num_known=2)
        assert set(bar) == {2, 3, 4} and (bar[2] > 0.9) is not cut
        out, made = regrouped_answer(answer, view, num_known=2, known_bar=True)
        assert made == (1 if cut else 0)
        assert int(torch.unique(out[200:]).numel()) == (2 if cut else 1)
        plain, _ = regrouped_answer(answer, view, num_known=2)
        assert int(torch.unique(plain[200:]).numel()) == 2  # without the bar: cut either way


def test_a_class_larger_than_the_sample_is_read_on_a_fixed_sample():
    from oral_core.recut import sampled_rows

    rows = torch.arange(50)
    assert torch.equal(sampled_rows(rows, 60), rows)
    few = sampled_rows(rows, 20, seed=3)
    assert few.numel() == 20 and torch.equal(few, sampled_rows(rows, 20, seed=3))
    assert set(few.tolist()) <= set(rows.tolist()) and few.unique().numel() == 20


def test_the_calibration_reads_how_the_cut_fares_on_the_labelled_known_classes():
    """``cut_calibration``: single-blob classes are not divided and every pair is told apart;
    classes of two blobs each are divided; classes drawn from one blob are not told apart.
    Classes with fewer than ``4 * REGROUP_MIN_PART`` labelled nodes are not read, unlabelled
    nodes (-1) never, and the pairs are capped."""
    from oral_core.recut import cut_calibration, cut_tells_classes_apart, two_part_purity

    labels = torch.tensor([0] * 60 + [1] * 60 + [2] * 60 + [3] * 30 + [-1] * 40)
    apart = torch.cat([blobs(60, 60, 60, 30, 40, gap=8.0, seed=12)])
    got = cut_calibration(apart, labels, num_known=4)
    assert got == {"classes": 3, "divides": 0.0, "pairs": 3, "tells_apart": 1.0}
    assert cut_tells_classes_apart(got)
    assert cut_calibration(apart, labels, num_known=4, pairs=2)["pairs"] == 2
    divided = torch.cat([blobs(30, 30, gap=8.0, seed=13), blobs(30, 30, gap=8.0, seed=14) + 20.0,
                         blobs(30, 30, gap=8.0, seed=15) - 20.0, blobs(70, gap=0.0, seed=16)])
    got = cut_calibration(divided, labels, num_known=4)
    assert got["divides"] == 1.0 and not cut_tells_classes_apart(got)
    mixed = blobs(250, gap=0.0, seed=17)
    got = cut_calibration(mixed, labels, num_known=4)
    assert got["tells_apart"] == 0.0 and not cut_tells_classes_apart(got)
    # no class with enough labelled nodes: nothing read, and nothing regrouped on its word
    few = cut_calibration(apart, torch.full((250,), -1), num_known=4)
    assert few == {"classes": 0, "divides": None, "pairs": 0, "tells_apart": None}
    assert not cut_tells_classes_apart(few)
    side = torch.tensor([0] * 60 + [1] * 60)
    assert two_part_purity(apart[:120], side) == 1.0
    assert two_part_purity(mixed[:120], side) < 0.7


def test_the_calibrated_answer_regroups_only_where_the_cut_tells_the_known_classes_apart():
    """``decide_answer(regroup_calibrated=True)``: the novel class of two blobs is cut when the
    labelled known classes are single blobs, kept whole when each is two blobs (the cut would
    divide them too); the calibration is returned."""
    from oral_core.answer import decide_answer
    from oral_core.recut import REGROUP_STRENGTH

    edges = torch.empty(2, 0, dtype=torch.long)
    answer = torch.tensor([0] * 100 + [1] * 100 + [2] * 120)
    train, val = torch.full((320,), -1), torch.full((320,), -1)
    train[0:200:2] = answer[0:200:2]  # half of each known class's nodes, the blobs alike
    val[1:200:4] = answer[1:200:4]
    for x, cut in ((blobs(100, 100, 60, 60, gap=8.0, seed=18), True),  # one blob a class
                   (blobs(50, 50, 50, 50, 60, 60, gap=8.0, seed=19), False)):  # two blobs a class
        got = decide_answer(answer, x, edges, train, val, 2, regroup_strength=REGROUP_STRENGTH,
                            regroup_calibrated=True)
        assert got["calibration"]["classes"] == 2 and got["calibration"]["pairs"] == 1
        assert got["calibration"]["divides"] == (0.0 if cut else 1.0)
        assert got["regrouped"] == (1 if cut else 0)
        assert int(torch.unique(got["answer"][200:]).numel()) == (2 if cut else 1)
        plain = decide_answer(answer, x, edges, train, val, 2, regroup_strength=REGROUP_STRENGTH)
        assert plain["regrouped"] == 1 and "calibration" not in plain  # uncalibrated: cut anyway


def test_the_odds_test_regroups_where_pairs_are_told_apart_more_often_than_classes_divided():
    """``+regroupodds`` (``cut_right_more_often``): tells apart more often than it divides. A
    night where two of five labelled known classes are two blobs each (divided: 0.4, above
    ``+regroupcal``'s one in five) but every pair is told apart: the odds test cuts the novel
    class of two blobs, the calibrated test keeps it whole; nothing to read regroups nothing."""
    from oral_core.answer import decide_answer
    from oral_core.recut import REGROUP_STRENGTH, cut_right_more_often

    assert cut_right_more_often({"divides": 0.25, "tells_apart": 1.0})
    assert not cut_right_more_often({"divides": 0.5, "tells_apart": 0.5})
    assert not cut_right_more_often({"divides": 1.0, "tells_apart": 0.4})
    assert not cut_right_more_often({"divides": None, "tells_apart": None})
    x = blobs(30, 30, 30, 30, 60, 60, 60, 60, 60, gap=8.0, seed=20)
    answer = torch.tensor([0] * 60 + [1] * 60 + [2] * 60 + [3] * 60 + [4] * 60 + [5] * 120)
    train, val = torch.full((420,), -1), torch.full((420,), -1)
    train[0:300:2] = answer[0:300:2]
    val[1:300:4] = answer[1:300:4]
    edges = torch.empty(2, 0, dtype=torch.long)
    odds = decide_answer(answer, x, edges, train, val, 5, regroup_strength=REGROUP_STRENGTH,
                         regroup_odds=True)
    cal = decide_answer(answer, x, edges, train, val, 5, regroup_strength=REGROUP_STRENGTH,
                        regroup_calibrated=True)
    assert odds["calibration"] == cal["calibration"]
    assert odds["calibration"]["divides"] == 0.4 and odds["calibration"]["tells_apart"] == 1.0
    assert odds["regrouped"] == 1 and int(torch.unique(odds["answer"][300:]).numel()) == 2
    assert cal["regrouped"] == 0 and torch.equal(cal["answer"][300:], answer[300:])
    assert torch.equal(odds["answer"][:300], cal["answer"][:300])


# ------------------------------------------------ the re-cut on another view, in as many parts as hold

def test_the_mean_silhouette_is_rousseeuws():
    from sklearn.metrics import silhouette_score

    from oral_core.recut import mean_silhouette

    z = blobs(30, 20, 25, gap=3.0, dims=4, seed=2).double()
    cut = torch.tensor([0] * 30 + [1] * 20 + [2] * 25)
    cut[::7] = 1  # a few rows in the wrong part
    rows = torch.arange(z.shape[0])
    assert mean_silhouette(z, cut, rows) == pytest.approx(silhouette_score(z.numpy(), cut.numpy()),
                                                          abs=1e-9)
    assert mean_silhouette(z, torch.zeros(75, dtype=torch.long), rows) == 0.0


def test_the_silhouette_picks_as_many_parts_as_there_are_blobs():
    from oral_core.recut import parts_by_silhouette

    z = blobs(40, 30, 35, gap=8.0, dims=6, seed=1).double()
    cut, count = parts_by_silhouette(z, 2, 6)
    assert count == 3
    truth = torch.tensor([0] * 40 + [1] * 30 + [2] * 35)
    assert len(set(zip(cut.tolist(), truth.tolist()))) == 3  # each blob one part


def test_a_recut_on_a_view_in_more_parts_keeps_the_fits_ids_and_adds_one():
    """Two novel ids over three blobs of the view: the re-cut makes three classes; the blobs
    that each id mostly held keep it, the third takes an id above every id of the answer."""
    view = torch.cat([torch.zeros(12, 6), blobs(20, 20, 20, gap=9.0, dims=6, seed=3)])
    answer = torch.tensor([0] * 6 + [1] * 6 + [2] * 20 + [5] * 20 + [2] * 12 + [5] * 8)
    got = recut_novel(answer, torch.zeros(72, 3), torch.empty(2, 0, dtype=torch.long), 2,
                      view=view, parts="silhouette")
    assert torch.equal(got[:12], answer[:12])  # known nodes untouched
    assert got[12] == 2 and got[32] == 5 and got[52] == 6
    assert all(len(set(got[a:a + 20].tolist())) == 1 for a in (12, 32, 52))
    # the fit's count, not the silhouette's, with "same"
    same = recut_novel(answer, torch.zeros(72, 3), torch.empty(2, 0, dtype=torch.long), 2,
                       view=view, parts="same")
    assert set(same[12:].tolist()) == {2, 5}


def test_one_novel_class_over_two_blobs_is_cut_in_two_with_the_silhouette_only():
    view = torch.cat([torch.zeros(12, 6), blobs(25, 25, gap=9.0, dims=6, seed=4)])
    answer = torch.tensor([0] * 6 + [1] * 6 + [3] * 50)
    none = torch.empty(2, 0, dtype=torch.long)
    assert torch.equal(recut_novel(answer, torch.zeros(62, 3), none, 2, view=view), answer)
    got = recut_novel(answer, torch.zeros(62, 3), none, 2, view=view, parts="silhouette")
    assert set(got[12:].tolist()) == {3, 4} and got[12] != got[37]


def test_the_recut_view_and_parts_are_checked():
    with pytest.raises(ValueError, match="novel_recut_view"):
        ORALConfig(novel_recut_view="pixels").validate()
    with pytest.raises(ValueError, match="novel_recut_parts"):
        ORALConfig(novel_recut_parts="many").validate()


@pytest.mark.slow
def test_a_fit_recut_on_its_own_embedding_answers_the_recut_of_that_embedding():
    """``novel_recut_view="embedding"``: the re-cut reads the selected model's last-layer
    representation (``selected_embedding``, as a saved model computes it), so the option's
    answer is the re-cut of the plain fit's answer on the plain fit's embedding."""
    from oral_core.inference import ORALModel

    graph, train, base = small_fit()
    plain = ORAL(ORALConfig(**base)).fit(graph.x, graph.edge_index, train)
    h = plain.selected_embedding(graph.x, graph.edge_index)
    assert h.shape == (150, 8)
    model = ORALModel.from_fit(plain)
    with torch.no_grad():
        from oral_core.attention import with_self_loops
        from oral_core.sampling import CSR
        looped = with_self_loops(graph.edge_index, 150)
        outs, _ = model.network.forward_chunked(graph.x.float(), CSR.from_edge_index(looped, 150),
                                                partitions=model.partitions)
    assert torch.allclose(h, outs[-1].h)
    cut = ORAL(ORALConfig(**base, novel_recut=True, novel_recut_view="embedding",
                          novel_recut_parts="silhouette")).fit(graph.x, graph.edge_index, train)
    expected = recut_novel(plain.predict().class_id, graph.x, graph.edge_index, 2, view=h,
                           parts="silhouette")
    assert torch.equal(cut.predict().class_id, expected)
    assert torch.equal(cut.discoveries_["last_no_recut"].class_id, plain.predict().class_id)
