"""The night's answer decided per class, not per night (not in the paper; the pipeline's
``ORAL_NIGHT_ANSWER=per_class``, issue 60 item 2).

ORAL answers a snapshot with one partition: every node in a known class (Eq. 4 matches its
group to one) or in a novel group. The paper scores that partition whole. A nightly product that
withholds the whole night when its known part is weak hides the novel classes with it; here each
part is decided on its own evidence:

- **the known classes** are named by the best known-class classifier the validation nodes
  support (:func:`best_known_namer`): ORAL's own naming, the reference logistic regression
  (:func:`oral_core.reference.reference_predictions`) or a known-class GCN
  (:func:`fit_known_gcn`), each fitted on the labelled *training* nodes only, compared on the
  validation nodes ORAL names a known class;
- **each novel class** stays as ORAL made it: it was judged on its own validation nodes by the
  known-split check (``known_split_share``, :mod:`oral_core.novelty`); the pipeline's lineage
  then publishes it, holds it as a candidate or lets it go;
- with the **novelty check** (``novelty_quantile``, ``ORAL_NIGHT_ANSWER=per_class+energy``, an
  option), each node of a novel group is judged on its own: a known-class classifier (the
  reference LR or the GCN, whichever names the validation nodes better, :func:`energy_scorer`)
  gives every node GNNSafe's energy score, propagated over the graph
  (:func:`propagated_energy`), and a node of a novel group whose energy is at or below the
  ``novelty_quantile`` quantile of the validation nodes' energies looks like a node of a known
  class: it takes that classifier's class (:func:`novelty_checked`).
- with **rejected nodes grouped** (``rejected_quantile``, ``ORAL_NIGHT_ANSWER=...+rejected``,
  the pipeline's default since 2026-12-04), the other way round: a node ORAL puts in a known class whose energy is above the
  ``rejected_quantile`` quantile of the validation nodes' is rejected by the known classes
  (:func:`rejected_by_known`); a small class that has just appeared is folded into known
  classes by the fit but rejected node by node. A rejected node whose nearest neighbours on the
  fixed view ``S^2 X`` (:func:`view_neighbours`) are mostly rejected too is part of something
  new (:func:`rejected_core`): it joins the novel class most of its neighbours are in, or with
  the other such nodes forms one new novel class, at least ``REJECTED_MIN_SIZE`` strong
  (:func:`rejected_grouped`). A rejected node among known neighbours stays where it was, and
  a new class that holds validation nodes as a known class does is a piece of one: it is
  left as it was (:func:`new_class_looks_known`, the known-split check's estimate).
- with **the answer's novel classes split-checked** (``split_share``,
  ``ORAL_NIGHT_ANSWER=...+split``, the pipeline's default since 2026-12-04), each novel class of the answer is judged by the
  known-split check on its own validation nodes (:func:`answer_known_split`,
  :mod:`oral_core.novelty`): a class that holds validation nodes at the rate the answer's known
  classes hold them is made of known nodes, and is dropped, its nodes named by the known-class
  classifier (:func:`split_answer`). A class that is new holds no validation node. Applied after
  the naming, before the energy's parts.
- with **the split check by age** (``age_split``, ``ORAL_NIGHT_ANSWER=...+split+agesplit``, an
  option), a novel class the split check keeps is judged again in two parts by arrival: where
  its old nodes alone hold validation nodes as the known classes do, they are named known and
  the recent ones stay the class (:func:`aged_split`). A new class arrives with new nodes; the
  fit's class around it often takes in a slice of old known nodes. Applied right after the
  split check.
- with **the split check on last night's known part** (``known_last``,
  ``ORAL_NIGHT_ANSWER=...+split+lastsplit``, an option), a novel class the split check keeps
  is judged again on the part the previous night's published answer named known: where that
  part alone holds validation nodes as the known classes do, it is named known
  (:func:`last_night_split`). Unlike the arrival cut, the class's own old nodes, found novel
  last night, stay with it. Applied after the split check (and the age split).
- with **the novel classes carved** (``carve_share``, ``ORAL_NIGHT_ANSWER=...+carve``, an
  option), the split check made finer: a novel class often holds a new class and a slice of known
  nodes together (a class that has just appeared is small; the fit's group around it takes in its
  known neighbours), and the split check drops it whole, the new class with it. A novel class the
  split check calls known is first cut in :data:`CARVE_PARTS` parts by k-means on the fixed view
  ``S^2 X`` (:func:`novel_parts`), each part is judged by the known-split check on its own
  validation nodes of one half, the parts it calls known are named by the known-class
  classifier, and the parts left stay one class under the class's id, judged again whole on the
  other half (:func:`carved_answer`). A class the split check keeps is left as it is. Applied
  after the naming, before the split check.
- with **the carve's rest tested** (``carve_alpha``, ``ORAL_NIGHT_ANSWER=...+carvetest``, an
  option; a carve with more evidence), what a carved class keeps stays novel only when it also
  holds significantly fewer validation nodes of the other half than a known slice of its size
  would (:func:`fewer_than_known`, a one-sided Poisson test at :data:`CARVE_ALPHA`); a small rest
  on a graph with few labelled nodes is named known rather than kept on a half's noise.
- with **novel nodes returned** (``returned_quantile``, ``ORAL_NIGHT_ANSWER=...+returned``, an
  option), the novelty check made local: a node of a novel group whose energy is at or below the
  ``returned_quantile`` quantile of the validation nodes' (:func:`known_like`) *and* most of
  whose nearest neighbours on ``S^2 X`` the answer names a known class is a known node the fit
  put among novel ones: it takes the scorer's known class (:func:`returned_to_known`). A young
  class's own nodes keep each other's company and stay; applied before the rejected grouping.

:func:`per_class_answer` puts the two together. :func:`cross_fitted_right` is the honest
measure of the choice (the choice and its score never read the same validation node).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from .recut import (cut_calibration, cut_right_more_often, cut_tells_classes_apart,
                    regrouped_answer)

#: the known-class classifiers the answer chooses among, in the order ties are broken
NAMERS = ("oral", "lr", "gcn")
#: the paired choice's level (``ORAL_NIGHT_ANSWER=per_class_paired``): another classifier names
#: the known classes only when it beats ORAL's own naming at McNemar p below this
PAIRED_ALPHA = 0.05
#: the known-class GCN (Kipf & Welling 2017): hidden width, dropout, Adam's rate and weight decay,
#: and a fixed number of epochs (no early stop, so the validation nodes stay unread until the
#: choice)
GCN_HIDDEN, GCN_DROPOUT, GCN_LR, GCN_WEIGHT_DECAY, GCN_EPOCHS = 64, 0.5, 0.01, 5e-4, 200
#: GNNSafe's energy propagation (Wu et al., ICLR 2023): ``E <- alpha E + (1 - alpha) D^-1 A E``,
#: this many steps (the open-world reference row of the nightly scoreboard uses the same)
ENERGY_ALPHA, ENERGY_STEPS = 0.5, 2
#: the novelty check's quantile of the validation nodes' energies (``+energy``): set on the
#: held-out-class proxy's labelled nodes (benchmarks/results/novelty_energy)
ENERGY_QUANTILE = 0.8
#: rejected nodes grouped (``+rejected``): the quantile of the validation nodes' energies above
#: which the known classes reject a node, the nearest neighbours read on ``S^2 X``, the share
#: of them that must be rejected (or in one novel class, to join it), and the smallest new
#: class; set on exploration rows of the young-class proxy (labelled nodes only,
#: benchmarks/results/rejected_young/exploration.md)
REJECTED_QUANTILE, REJECTED_NEIGHBOURS, REJECTED_SHARE, REJECTED_MIN_SIZE = 0.95, 10, 0.3, 5
#: the dropped classes' rejected nodes regained (``+regain``): the looser quantile of the
#: validation nodes' energies for the nodes the split check named known (ORAL called them novel:
#: a second witness); read on exploration rows of simulation 21 (labelled nodes only,
#: benchmarks/results/answer_regain/exploration.md)
REGAIN_QUANTILE = 0.8
#: the young classes' bursts (``+burst``): a node is recent when it is absent from the snapshot
#: this many snapshots before tonight's, and the one-sided binomial level below which its nearest
#: neighbours hold more recent nodes than the graph's own growth gives
BURST_WINDOW, BURST_ALPHA = 2, 0.01
#: ``+burstyoung``: a novel class of the answer is young (a burst lying in it joins it) when at
#: least this share of its unlabelled nodes arrived within :data:`BURST_WINDOW` snapshots
BURST_YOUNG_SHARE = 0.5
#: ``+burstgrow``: a recent unlabelled node joins a class a burst went into when at least this
#: many of its :data:`REJECTED_NEIGHBOURS` nearest nodes are recent members of the class, and
#: they are more than half of its recent neighbours (:func:`burst_grown`)
BURST_GROW_LEAST = 2
#: ``+burstgrow``: the growth rounds at most (each joins the nodes that the last one made eligible)
BURST_GROW_ROUNDS = 3
#: principal axes of the neighbours' view (those of the novel re-cut's view)
REJECTED_VIEW_DIMS = 64
#: a new class estimated to hold at least this share of known-class nodes (from its validation
#: nodes, the known-split check's estimate) is a piece of a known class: the known-split
#: check's own share (``known_split_share``' default)
REJECTED_KNOWN_SHARE = 0.5
#: the answer's novel classes split-checked (``+split``): the estimated share of known-class
#: nodes at which a novel class is dropped, the known-split check's own (``known_split_share``'
#: default)
SPLIT_SHARE = 0.5
#: novel nodes returned (``+returned``): the quantile of the validation nodes' energies at or
#: below which a node of a novel group looks known, and the share of its
#: :data:`REJECTED_NEIGHBOURS` nearest neighbours (on ``S^2 X``) the answer must name known; set
#: on exploration rows of simulation 12 (labelled nodes only,
#: benchmarks/results/returned_young/exploration.md)
RETURNED_QUANTILE, RETURNED_SHARE = 0.9, 0.5
#: the novel classes carved (``+carve``): the parts each novel class is cut into (k-means on the
#: neighbours' view ``S^2 X``), the least average part size a class must allow to be cut, and the
#: estimated share of known-class nodes at which a part is named known (the known-split check's
#: own); the parts read on the young-class proxy's exploration rows of simulation 12 (labelled
#: nodes only, benchmarks/results/answer_carve_fresh/exploration.md)
CARVE_PARTS, CARVE_MIN_SIZE, CARVE_SHARE = 4, 10, 0.5
#: the carve's rest tested (``+carvetest``): the one-sided level below which what a carved class
#: keeps holds fewer validation nodes (of the half that judges it) than a known slice of its size
#: would; on simulation 12's exploration rows the rests kept had p <= 0.002 and the rests named
#: known p >= 0.33 (labelled nodes only, benchmarks/results/answer_carve_test/exploration.md)
CARVE_ALPHA = 0.01


def fit_known_gcn(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                  num_known: int, seed: int = 0, epochs: int = GCN_EPOCHS) -> torch.Tensor:
    """The known-class GCN's class for every node (long ``[N]``): the argmax of
    :func:`known_gcn_logits`."""
    return known_gcn_logits(x, edge_index, train_labels, num_known, seed, epochs).argmax(1)


def known_gcn_logits(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                     num_known: int, seed: int = 0, epochs: int = GCN_EPOCHS,
                     device: torch.device | str | None = None) -> torch.Tensor:
    """A two-layer GCN, ``softmax(S relu(S X W1) W2)`` with ``S = D^-1/2 (A + I) D^-1/2``,
    fitted by cross-entropy on the nodes labelled in ``train_labels`` (-1 elsewhere) for
    ``epochs`` full-batch Adam steps, on ``device`` (default the CPU; on a GPU its random
    streams are the GPU's). Returns its logits for every node (``[N, num_known]``, on the CPU)."""
    from .known_head import normalised_adjacency

    dev = torch.device(device or "cpu")
    n = x.shape[0]
    s = normalised_adjacency(edge_index, n).to(dev)
    x = (x.to_dense() if x.is_sparse else x).float().to(dev)
    y = train_labels.long().to(dev)
    seen = y >= 0
    gen = torch.Generator(device=dev).manual_seed(seed)
    w1 = torch.nn.Parameter(torch.empty(x.shape[1], GCN_HIDDEN, device=dev))
    w2 = torch.nn.Parameter(torch.empty(GCN_HIDDEN, num_known, device=dev))
    for w in (w1, w2):  # Glorot, as GCNConv starts
        bound = (6.0 / (w.shape[0] + w.shape[1])) ** 0.5
        with torch.no_grad():
            w.uniform_(-bound, bound, generator=gen)
    sx = torch.sparse.mm(s, x)  # the first propagation does not depend on the weights

    def logits(train: bool) -> torch.Tensor:
        h = torch.relu(sx @ w1)
        if train:
            keep = (torch.rand(h.shape, generator=gen, device=dev) >= GCN_DROPOUT).float()
            h = h * keep / (1 - GCN_DROPOUT)
        return torch.sparse.mm(s, h @ w2)

    opt = torch.optim.Adam([w1, w2], lr=GCN_LR, weight_decay=GCN_WEIGHT_DECAY)
    with torch.enable_grad():
        for _ in range(epochs):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(logits(True)[seen], y[seen]).backward()
            opt.step()
    with torch.no_grad():
        return logits(False).cpu()


def propagated_energy(logits: torch.Tensor, edge_index: torch.Tensor,
                      alpha: float = ENERGY_ALPHA, steps: int = ENERGY_STEPS) -> torch.Tensor:
    """GNNSafe's energy score ``E = -logsumexp(logits)`` per node (high: unlike every known
    class), propagated ``steps`` times as ``E <- alpha E + (1 - alpha) D^-1 A E`` over the
    incoming edges (a node without one keeps its own energy). Float ``[N]``."""
    n = logits.shape[0]
    energy = -torch.logsumexp(logits.float(), dim=1)
    src, dst = edge_index[0].long(), edge_index[1].long()
    degree = torch.bincount(dst, minlength=n).float()
    for _ in range(steps):
        mean = torch.zeros(n).index_add_(0, dst, energy[src])
        mean = torch.where(degree > 0, mean / degree.clamp(min=1), energy)
        energy = alpha * energy + (1 - alpha) * mean
    return energy


def energy_scorer(logits: dict[str, torch.Tensor], val_labels: torch.Tensor) -> str:
    """The known-class classifier whose energy the novelty check reads: of ``logits``
    (``{"lr": ..., "gcn": ...}``), the one whose argmax names the most validation nodes right
    (ties: the first given). A graph whose edges join different classes is named better from
    its features, and there the GCN's energy does not tell a new class apart."""
    seen = val_labels >= 0
    best, most = None, -1
    for name, lg in logits.items():
        right = int((lg.argmax(1)[seen] == val_labels[seen].long()).sum())
        if right > most:
            best, most = name, right
    return best


def known_like(energy: torch.Tensor, val_labels: torch.Tensor, quantile: float) -> torch.Tensor:
    """Nodes whose energy is at or below the ``quantile`` quantile of the validation nodes'
    (bool ``[N]``): about that share of the known classes' nodes, few nodes of a new class."""
    threshold = torch.quantile(energy[val_labels >= 0].double(), quantile).item()
    return energy.double() <= threshold


def novelty_checked(answer: torch.Tensor, scorer_class: torch.Tensor, like_known: torch.Tensor,
                    num_known: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The answer after the novelty check: a node the answer puts in a novel group
    (``>= num_known``) that is ``like_known`` takes the scorer's known class. Returns the
    checked answer and the nodes it moved (bool ``[N]``)."""
    moved = (answer >= num_known) & like_known
    return torch.where(moved, scorer_class.long(), answer.long()), moved


def purified_answer(answer: torch.Tensor, scorer_class: torch.Tensor, energy: torch.Tensor,
                    val_labels: torch.Tensor, unlabelled: torch.Tensor, num_known: int,
                    share: float, quantile: float) -> tuple[torch.Tensor, int]:
    """The mixed novel classes purified (``+purify``, exploration): a novel class the
    known-split estimator (:func:`oral_core.novelty.known_share`, at the rate the answer's known
    classes hold validation nodes) estimates at least ``share`` known-class nodes gives its
    known-like nodes (:func:`known_like` at ``quantile``) the scorer's class; a class estimated
    cleaner is left whole (the novelty check's guard: a new class's own nodes stay). Returns the
    answer and the nodes moved."""
    from .novelty import known_share

    answer = answer.long()
    val = val_labels >= 0
    known = (answer >= 0) & (answer < num_known)
    n_val = int((known & val).sum())
    if n_val == 0 or not bool((answer >= num_known).any()):
        return answer, 0
    rate = int((known & unlabelled).sum()) / n_val
    size = int(answer.max()) + 1
    group = torch.where(answer >= 0, answer, torch.full_like(answer, size))  # -1: a group apart
    est = known_share(group, unlabelled, val, size + 1, rate)
    mixed = torch.zeros(size + 1, dtype=torch.bool)
    mixed[num_known:size] = est[num_known:size].cpu() >= share
    hit = mixed[group.cpu()].to(answer.device) & known_like(energy, val_labels, quantile)
    return torch.where(hit, scorer_class.long(), answer), int(hit.sum())


def rejected_by_known(energy: torch.Tensor, val_labels: torch.Tensor, quantile: float,
                      candidates: torch.Tensor) -> torch.Tensor:
    """The ``candidates`` (bool ``[N]``) whose energy is above the ``quantile`` quantile of the
    validation nodes' (bool ``[N]``): unlike every known class, as few known nodes are."""
    threshold = torch.quantile(energy[val_labels >= 0].double(), quantile).item()
    return candidates & (energy.double() > threshold)


def answer_view(x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """``[N, <= REJECTED_VIEW_DIMS]``: the fixed view ``S^2 X`` of every node on its first
    principal axes (:func:`oral_core.separability.labelled_view`; no label, no training), each row
    of unit length: where the answer's parts look for neighbours and parts."""
    from .separability import labelled_view

    z = labelled_view(x, edge_index, torch.arange(x.shape[0]), dims=REJECTED_VIEW_DIMS)
    return torch.nn.functional.normalize(z.float(), dim=1)


def novel_parts(answer: torch.Tensor, view: torch.Tensor, num_known: int, parts: int,
                min_size: int, only: torch.Tensor | None = None, seed: int = 0) -> torch.Tensor:
    """The answer with each novel class (id ``>= num_known``; with ``only``, bool ``[C]`` over
    class ids, those it marks) of at least ``parts * min_size`` nodes cut into ``parts`` parts by
    k-means on ``view`` (its rows), the first part keeping the class's id and the others taking
    new ids after the largest."""
    from .kmeans import kmeans

    out = answer.clone().long()
    fresh = int(out.max()) + 1 if out.numel() else 0
    for cls in torch.unique(out[out >= num_known]).tolist():
        members = (out == cls).nonzero().flatten()
        if (only is not None and not (cls < only.numel() and bool(only[cls]))) \
                or members.numel() < parts * min_size:
            continue
        part, _, _ = kmeans(view[members], parts, restarts=5, seed=seed)
        for p in range(1, parts):
            out[members[part == p]] = fresh
            fresh += 1
    return out


def fewer_than_known(answer: torch.Tensor, val_labels: torch.Tensor, unlabelled: torch.Tensor,
                     num_known: int, alpha: float) -> torch.Tensor:
    """Bool ``[C]`` over class ids: the classes holding significantly fewer validation nodes
    than known-class nodes would. The answer's known classes hold ``rate`` unlabelled nodes per
    validation node (:func:`oral_core.novelty.unlabelled_per_val`), so a class of ``u``
    unlabelled nodes that were all known would hold about ``Poisson(u / rate)`` validation
    nodes; True where holding ``v`` or fewer has probability below ``alpha`` (one-sided). All
    False when no validation node lies in a known class (nothing to compare with).
    ``val_labels``: the validation nodes' labels (-1 elsewhere); ``unlabelled``: bool ``[N]``."""
    from scipy.stats import poisson

    from .novelty import unlabelled_per_val

    answer = answer.long()
    size = int(answer.max()) + 1 if answer.numel() else 0
    val = val_labels >= 0
    classed = answer >= 0
    rate = unlabelled_per_val(answer.clamp_min(0), torch.arange(max(size, 1)),
                              unlabelled & classed, val & classed, num_known)
    if rate is None or size == 0:
        return torch.zeros(size, dtype=torch.bool)
    held = torch.bincount(answer[val & classed], minlength=size).double()
    expected = torch.bincount(answer[unlabelled & classed], minlength=size).double() / rate
    p = torch.from_numpy(poisson.cdf(held.numpy(), expected.numpy()))
    return (expected > 0) & (p < alpha)


def carved_answer(decided: dict, view: torch.Tensor, val_labels: torch.Tensor,
                  unlabelled: torch.Tensor, num_known: int, share: float,
                  parts: int = CARVE_PARTS, min_size: int = CARVE_MIN_SIZE,
                  alpha: float | None = None) -> tuple[torch.Tensor, int]:
    """The per-class answer ``decided`` (``answer``, ``candidates`` and ``namer``, as
    :func:`decide_answer` has them) with the known slices of its novel classes named known, where
    the known-split check would drop the class whole (:func:`answer_known_split` at ``share`` on
    every validation node; a class it keeps is left as it is), cross-fitted on the two halves of
    the validation nodes (:func:`oral_core.novelty.validation_halves`): each such class is cut by
    :func:`novel_parts`; the
    parts the known-split check calls known on the first half (:func:`answer_known_split` at
    ``share``) are named by the known-class classifier of every node; what a class keeps is
    judged again, whole, on the second half, and named known too when the check calls it known
    there (judged on the half that chose the parts, the rest would look emptier of validation
    nodes than it is); with ``alpha`` (``+carvetest``) also when it does not hold significantly
    fewer of that half's validation nodes than a known slice of its size (:func:`fewer_than_known`).
    Returns the answer and how many nodes were named known (the answer as it
    was when there is no classifier of every node)."""
    from .novelty import validation_halves

    answer, candidates = decided["answer"].long(), decided["candidates"]
    if len(candidates) < 2:
        return answer, 0
    first, second = validation_halves(val_labels >= 0)
    val_first = torch.where(first, val_labels, torch.full_like(val_labels, -1))
    val_second = torch.where(second, val_labels, torch.full_like(val_labels, -1))
    whole = answer_known_split(answer, val_labels, unlabelled, num_known, share)
    if not whole.any():
        return answer, 0
    cut = novel_parts(answer, view, num_known, parts, min_size, only=whole)
    drop = answer_known_split(cut, val_first, unlabelled, num_known, share)
    if not drop.any():
        return answer, 0
    every = namer_of_every_node(decided, val_labels, num_known)
    named = drop_classes(cut, every, drop)
    kept = torch.where((named != cut) & (answer >= num_known), named, answer)
    carved = torch.unique(answer[(kept != answer)])
    rest = answer_known_split(kept, val_second, unlabelled, num_known, share)
    if alpha is not None:
        fewer = fewer_than_known(kept, val_second, unlabelled, num_known, alpha)
        rest |= ~fewer[:rest.numel()]
    rest &= torch.isin(torch.arange(rest.numel()), carved)  # only the classes carved
    kept = drop_classes(kept, every, rest)
    return kept, int((kept != answer).sum())


def view_neighbours(x: torch.Tensor, edge_index: torch.Tensor, rows: torch.Tensor, k: int,
                    chunk: int = 256, device: torch.device | str | None = None,
                    view: Callable[[], torch.Tensor] | None = None) -> torch.Tensor:
    """long ``[len(rows), k]`` (on the CPU): each row's ``k`` nearest other nodes by cosine
    similarity on the fixed view ``S^2 X`` (:func:`answer_view`, or ``view()`` when the caller
    keeps it), computed ``chunk`` rows at a time (a chunk of a 100k-node graph holds 100 MB of
    similarities) on ``device`` (default the CPU: the similarities grow as rows times nodes)."""
    n = x.shape[0]
    dev = torch.device(device or "cpu")
    z = (view() if view is not None else answer_view(x, edge_index)).to(dev)
    k = min(k, n - 1)
    out = []
    for start in range(0, rows.numel(), chunk):
        part = rows[start:start + chunk].to(dev)
        sim = z[part] @ z.T
        sim[torch.arange(part.numel(), device=dev), part] = -2.0  # not its own neighbour
        out.append(sim.topk(k, dim=1).indices.cpu())
    return torch.cat(out) if out else torch.empty(0, k, dtype=torch.long)


def unlabelled_share(labelled: torch.Tensor, neighbours: torch.Tensor) -> torch.Tensor:
    """Float ``[len(neighbours)]``: the share of each row's nearest nodes (``neighbours``, long
    ``[R, k]``) that carry no training label (``labelled``, bool ``[N]``). The known classes'
    labels lie all over their regions (missing at random), a class that has just appeared
    carries none, so its nodes' neighbours are all unlabelled (the positive-unlabelled view)."""
    return 1.0 - labelled[neighbours].float().mean(1)


def rejected_core(rejected: torch.Tensor, neighbours: torch.Tensor, share: float) -> torch.Tensor:
    """bool over the rows of ``neighbours`` (the rejected nodes, in order): at least ``share`` of
    the node's nearest neighbours are rejected too."""
    return rejected[neighbours].float().mean(1) >= share


def rejected_grouped(answer: torch.Tensor, rows: torch.Tensor, neighbours: torch.Tensor,
                     num_known: int, share: float, min_size: int) -> tuple[torch.Tensor, int]:
    """The answer with the core rejected nodes ``rows`` (their nearest neighbours in
    ``neighbours``) taken out of the known classes: a node with at least ``share`` of its
    neighbours in one novel class joins it; the others together form one new novel class when
    there are at least ``min_size`` of them, else stay. Returns the answer and the nodes moved."""
    out = answer.clone().long()
    alone = []
    for node, near in zip(rows.tolist(), answer.long()[neighbours].tolist()):
        novel = [c for c in near if c >= num_known]
        top = max(set(novel), key=novel.count) if novel else None
        if top is not None and novel.count(top) >= share * len(near):
            out[node] = top
        else:
            alone.append(node)
    if len(alone) >= min_size:
        out[torch.tensor(alone, dtype=torch.long)] = max(int(answer.max()) + 1, num_known)
    return out, int((out != answer.long()).sum())


def new_class_looks_known(grouped: torch.Tensor, answer: torch.Tensor, unlabelled: torch.Tensor,
                          val: torch.Tensor, num_known: int, share: float) -> bool:
    """The known-split check on the class :func:`rejected_grouped` made (the ids of ``grouped``
    above every id of ``answer``): :func:`nodes_look_known`."""
    return nodes_look_known(grouped > int(answer.max()), answer, unlabelled, val, num_known, share)


def nodes_look_known(members: torch.Tensor, answer: torch.Tensor, unlabelled: torch.Tensor,
                     val: torch.Tensor, num_known: int, share: float) -> bool:
    """The known-split check (:func:`oral_core.novelty.known_share`) on the nodes ``members``
    (bool ``[N]``): their estimated share of known-class nodes, from the validation nodes they
    hold at the rate the answer's known classes hold them, is at least ``share``. A class that
    is new holds no validation node; a piece of a known class holds them as that class does.
    False when ``members`` is empty or no validation node lies in a known class."""
    from .novelty import known_share

    known = (answer >= 0) & (answer < num_known)
    n_val = int((known & val).sum())
    if not bool(members.any()) or n_val == 0:
        return False
    rate = int((known & unlabelled).sum()) / n_val
    est = known_share(members.long(), unlabelled, val, 2, rate)[1]
    return bool(est >= share)


def rejected_nodes_grouped(answer: torch.Tensor, energy: torch.Tensor, x: torch.Tensor,
                           edge_index: torch.Tensor, train_labels: torch.Tensor,
                           val_labels: torch.Tensor, num_known: int, quantile: float,
                           device: torch.device | str | None = None,
                           view: Callable[[], torch.Tensor] | None = None,
                           within: torch.Tensor | None = None
                           ) -> tuple[torch.Tensor, int]:
    """The rejected nodes grouped: :func:`rejected_by_known` among the unlabelled and the
    validation nodes (with ``within``, bool ``[N]``, only those it marks: :func:`regained_nodes`),
    :func:`rejected_core` and :func:`rejected_grouped` for those the answer
    names a known class (:data:`REJECTED_NEIGHBOURS`, :data:`REJECTED_SHARE`,
    :data:`REJECTED_MIN_SIZE`). The validation nodes are witnesses: they are grouped like the
    others, so that a new class holding them as a known class does is found out
    (:func:`new_class_looks_known`, at :data:`REJECTED_KNOWN_SHARE`) and left as it was, and
    they keep their class in the answer. The neighbours are found on ``device``
    (:func:`view_neighbours`, on ``view()`` when given). Returns the answer and the nodes
    moved."""
    answer = answer.long()
    unlabelled = (train_labels < 0) & (val_labels < 0)
    val = val_labels >= 0
    pool = unlabelled | val
    rejected = rejected_by_known(energy, val_labels, quantile,
                                 pool if within is None else pool & within)
    rows = rejected.nonzero().flatten()
    if rows.numel() < REJECTED_MIN_SIZE:
        return answer, 0
    near = view_neighbours(x, edge_index, rows, REJECTED_NEIGHBOURS, device=device, view=view)
    keep = rejected_core(rejected, near, REJECTED_SHARE) & (answer[rows] >= 0) & (
        answer[rows] < num_known)
    grouped, _ = rejected_grouped(answer, rows[keep], near[keep], num_known, REJECTED_SHARE,
                                  REJECTED_MIN_SIZE)
    new = grouped > int(answer.max())
    if bool(new.any()) and (int((new & unlabelled).sum()) < REJECTED_MIN_SIZE
                            or new_class_looks_known(grouped, answer, unlabelled, val, num_known,
                                                     REJECTED_KNOWN_SHARE)):
        grouped = torch.where(new, answer, grouped)
    grouped = torch.where(val, answer, grouped)
    return grouped, int((grouped != answer).sum())


def recent_burst(recent: torch.Tensor, neighbours: torch.Tensor, alpha: float) -> torch.Tensor:
    """bool over the rows of ``neighbours`` (long ``[R, k]``, each row's nearest nodes): more of
    the row's ``k`` neighbours arrived recently (``recent``, bool ``[N]``) than a region growing
    at the graph's own rate would hold: ``P(Binomial(k, p0) >= m) < alpha`` with ``m`` the recent
    neighbours and ``p0`` the recent share of all nodes (one-sided). A new class arrives as a burst
    of nodes in a region where no old node lies; the known classes grow all over theirs."""
    from scipy.stats import binom

    p0 = float(recent.float().mean())
    if p0 <= 0 or p0 >= 1 or neighbours.numel() == 0:
        return torch.zeros(neighbours.shape[0], dtype=torch.bool)
    m = recent[neighbours].sum(1).numpy()
    tail = binom.sf(m - 1, neighbours.shape[1], p0)  # P(X >= m)
    return torch.from_numpy(tail < alpha)


def burst_components(rows: torch.Tensor, neighbours: torch.Tensor, burst: torch.Tensor
                     ) -> torch.Tensor:
    """long ``[len(rows)]``: the connected components (0, 1, ...) of the ``burst`` rows joined
    where one is among the other's nearest ``neighbours`` (either way); -1 for rows not in a
    burst."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = rows.numel()
    out = torch.full((n,), -1, dtype=torch.long)
    if n == 0 or not bool(burst.any()):
        return out
    size = max(int(rows.max()), int(neighbours.max()) if neighbours.numel() else 0) + 1
    index = torch.full((size,), -1, dtype=torch.long)  # node -> its row, -1 for other nodes
    index[rows] = torch.arange(n)
    src = torch.arange(n).repeat_interleave(neighbours.shape[1])
    dst = index[neighbours.reshape(-1)]
    keep = (dst >= 0) & burst[src] & burst[dst.clamp(min=0)]
    graph = coo_matrix((np.ones(int(keep.sum())), (src[keep].numpy(), dst[keep].numpy())),
                       shape=(n, n))
    label = torch.from_numpy(connected_components(graph, connection="weak")[1]).long()
    out[burst] = torch.unique(label[burst], return_inverse=True)[1]
    return out


def young_class(members: torch.Tensor, recent: torch.Tensor,
                share: float = BURST_YOUNG_SHARE) -> bool:
    """A class of the answer is young when at least ``share`` of its nodes (``members``, bool
    ``[N]``) arrived recently (``recent``, bool ``[N]``): a class that has just appeared, not an
    older class that holds a few new nodes."""
    count = int(members.sum())
    return count > 0 and int((members & recent.to(members.device)).sum()) >= share * count


def burst_grown(answer: torch.Tensor, rows: torch.Tensor, neighbours: torch.Tensor,
                recent: torch.Tensor, free: torch.Tensor, classes: list[int],
                least: int = BURST_GROW_LEAST, rounds: int = BURST_GROW_ROUNDS,
                most: bool = False, keep_from: int | None = None,
                made_from: int | None = None) -> torch.Tensor:
    """The classes a burst went into, grown over the recent nodes around them (``+burstgrow``;
    not in the paper): a burst is the core of a young class, the recent nodes whose nearest nodes
    are too often old to pass :func:`recent_burst` its rim. A recent free node (``rows`` with
    ``free``; its nearest nodes ``neighbours``, long ``[R, k]``) joins class ``c`` of
    ``classes`` when at least ``least`` of its neighbours are recent members of ``c`` and they are
    more than half of its recent neighbours: among the nodes that arrived with it, it lies with
    the young class, not with the known classes' own growth. Repeated for at most ``rounds``
    rounds (each round's joiners count in the next). Label-free: arrival and neighbours only.

    With ``most`` (``+burstgrowmost``; not in the paper) a node joins only when those recent
    members of ``c`` are also more than its neighbours, old or recent, in the class it has: a
    recent node among the old nodes of a class that was there before (an older novel class's
    own growth) stays in it, where the plain rule counts recent neighbours only.

    With ``keep_from`` (``+burstgrowkeep``; not in the paper) a node in a class numbered
    ``keep_from`` or above (a novel class) joins only a class numbered ``made_from`` or above
    (one the bursts made this night, when given): a class the answer already had grows over
    nodes named known only, never over another novel class."""
    out = answer.clone()
    if not classes or rows.numel() == 0:
        return out
    recent = recent.to(out.device)
    movable = free[rows]
    near_recent = recent[neighbours]
    recent_count = near_recent.sum(1)
    for _ in range(rounds):
        near_class = out[neighbours]
        own = (near_class == out[rows].unsqueeze(1)).sum(1) if most else None
        moved = False
        for c in classes:
            inside = ((near_class == c) & near_recent).sum(1)
            joins = movable & (out[rows] != c) & (inside >= least) & (2 * inside > recent_count)
            if keep_from is not None and (made_from is None or c < made_from):
                joins &= out[rows] < keep_from
            if most:
                joins &= inside > own
            if bool(joins.any()):
                out[rows[joins]] = c
                moved = True
        if not moved:
            break
    return out


def burst_classes(answer: torch.Tensor, recent: torch.Tensor, x: torch.Tensor,
                  edge_index: torch.Tensor, train_labels: torch.Tensor, val_labels: torch.Tensor,
                  num_known: int, alpha: float, device: torch.device | str | None = None,
                  view: Callable[[], torch.Tensor] | None = None,
                  join: bool = False, young: bool = False, grow: bool = False,
                  grow_at: tuple[int, int] = (BURST_GROW_LEAST, BURST_GROW_ROUNDS),
                  grow_most: bool = False, keep_novel: bool = False,
                  split_rest: bool = False) -> tuple[torch.Tensor, int]:
    """The young classes' bursts (``+burst``): the unlabelled and validation nodes that arrived
    recently (``recent``, bool ``[N]``) among more recent neighbours than the graph's growth
    gives (:func:`recent_burst` on :data:`REJECTED_NEIGHBOURS` nearest nodes on ``S^2 X``) are
    joined into components (:func:`burst_components`). A component of at least
    :data:`REJECTED_MIN_SIZE` unlabelled nodes that holds at least half of the unlabelled nodes of
    the novel class most of it lies in is that class (its nodes join it); any other becomes a new
    novel class, unless the validation nodes it holds say it is a piece of a known class
    (:func:`nodes_look_known` at :data:`REJECTED_KNOWN_SHARE`). The validation nodes are
    witnesses and keep their class. With ``join`` (``+burstjoin``) the components lying mostly
    in one class of the answer are taken together first, and those in a novel class join it
    whatever their share of it: a young class the answer holds is never cut, a planted class
    arriving in pieces stays one. With ``young`` too (``+burstyoung``) the bursts join a novel
    class only when it is itself young (:func:`young_class`: most of its unlabelled nodes
    arrived recently); in an older, mixed class they become a class of their own as ``+burst``
    makes them. With ``grow`` (``+burstgrow``) the classes the bursts went into then grow over the
    recent nodes around them (:func:`burst_grown`, ``grow_at``: its ``least`` and ``rounds``);
    with ``grow_most`` too (``+burstgrowmost``) a node joins only where the class's recent members
    outnumber its neighbours in the class it has (:func:`burst_grown`'s ``most``). With
    ``keep_novel`` too (``+burstgrowkeep``) no node of a novel class of the answer moves into
    another class the answer already had, by a joining burst or the growth: those claim nodes
    named a known class only (:func:`claimable`), so a novel class the model made is never
    emptied into its neighbour; a new class the bursts make may still be cut out of one. With
    ``split_rest`` (``+burstsplit``; not in the paper) a burst does not join a novel class whose
    other nodes the known-split check calls known (:func:`nodes_look_known` at
    :data:`SPLIT_SHARE`): that class is a region of known classes the young class landed in,
    and joined to it the burst's nodes would dilute its validation nodes' share enough to keep
    the known nodes novel past the split check; the burst becomes a class of its own and the
    check judges the rest on its own (:func:`split_answer`).
    Returns the answer and the nodes moved."""
    answer = answer.long()
    unlabelled = (train_labels < 0) & (val_labels < 0)
    val = val_labels >= 0
    rows = ((unlabelled | val) & recent).nonzero().flatten()
    if rows.numel() < REJECTED_MIN_SIZE:
        return answer, 0
    near = view_neighbours(x, edge_index, rows, REJECTED_NEIGHBOURS, device=device, view=view)
    component = burst_components(rows, near, recent_burst(recent.cpu(), near, alpha))
    out = answer.clone()
    fresh = max(int(answer.max()) + 1, num_known)
    parts = [rows[component == k] for k in range(int(component.max()) + 1)]
    parts = [(nodes, nodes[unlabelled[nodes]]) for nodes in parts]
    if join:  # the bursts inside one class of the answer taken together
        tops: dict[int, list] = {}
        for nodes, free in parts:
            if free.numel():
                tops.setdefault(int(torch.mode(answer[free]).values), []).append((nodes, free))
        parts = [(torch.cat([n for n, _ in group]), torch.cat([f for _, f in group]))
                 for group in tops.values()]
    grown: list[int] = []  # the classes the bursts went into
    for nodes, free in parts:
        if free.numel() < REJECTED_MIN_SIZE:
            continue
        top = int(torch.mode(answer[free]).values)
        members = (answer == top) & unlabelled
        joins = join and (not young or young_class(members, recent))
        inside = torch.zeros_like(answer, dtype=torch.bool)
        inside[nodes] = True
        if (top >= num_known and (joins or free.numel() >= 0.5 * int(members.sum()))
                and not (split_rest and nodes_look_known((answer == top) & ~inside, answer,
                                                         unlabelled, val, num_known,
                                                         SPLIT_SHARE))):
            # the component is (with ``join``: joins) the novel class it lies in
            out[claimable(nodes, out, top, num_known) if keep_novel else nodes] = top
            grown.append(top)
            continue
        if nodes_look_known(inside, answer, unlabelled, val, num_known, REJECTED_KNOWN_SHARE):
            continue  # holds validation nodes as a known class does
        out[nodes] = fresh
        grown.append(fresh)
        fresh += 1
    if grow:
        out = burst_grown(out, rows, near, recent, unlabelled, grown, *grow_at, most=grow_most,
                          keep_from=num_known if keep_novel else None,
                          made_from=max(int(answer.max()) + 1, num_known))
    out = torch.where(val, answer, out)
    return out, int((out != answer).sum())


def claimable(nodes: torch.Tensor, answer: torch.Tensor, target: int, num_known: int
              ) -> torch.Tensor:
    """The ``nodes`` a step may move into ``target``, a class the answer already has, when
    novel classes are kept (``+burstgrowkeep``): those named a known class (below
    ``num_known``) or already in ``target``; a node of another novel class stays where it is."""
    here = answer[nodes]
    return nodes[(here < num_known) | (here == target)]


def regained_nodes(answer: torch.Tensor, dropped_from: torch.Tensor, energy: torch.Tensor,
                   x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                   val_labels: torch.Tensor, num_known: int, quantile: float,
                   device: torch.device | str | None = None,
                   view: Callable[[], torch.Tensor] | None = None) -> tuple[torch.Tensor, int]:
    """The dropped classes' rejected nodes regained (``+regain``): the split check
    (:func:`split_answer`) names known every node of a novel class it judges mostly known, the
    new class's nodes with the rest; of the nodes it named known (``dropped_from``, bool
    ``[N]``), those the known classes reject at the looser ``quantile`` (ORAL called them novel,
    and the known classifier finds them unusual: two witnesses where :func:`rejected_nodes_grouped`
    asks one at :data:`REJECTED_QUANTILE`) are grouped as rejected nodes are, with the same core,
    joining and witness rules. Returns the answer and the nodes moved."""
    if not bool(dropped_from.any()):
        return answer.long(), 0
    return rejected_nodes_grouped(answer, energy, x, edge_index, train_labels, val_labels,
                                  num_known, quantile, device=device, view=view,
                                  within=dropped_from)


def returned_to_known(answer: torch.Tensor, scorer_class: torch.Tensor, energy: torch.Tensor,
                      x: torch.Tensor, edge_index: torch.Tensor, val_labels: torch.Tensor,
                      num_known: int, quantile: float,
                      device: torch.device | str | None = None,
                      view: Callable[[], torch.Tensor] | None = None) -> tuple[torch.Tensor, int]:
    """Novel nodes returned: a node the answer puts in a novel group (``>= num_known``) that
    looks known (:func:`known_like` at ``quantile``) and at least :data:`RETURNED_SHARE` of whose
    :data:`REJECTED_NEIGHBOURS` nearest neighbours on ``S^2 X`` (:func:`view_neighbours`) the
    answer names a known class takes ``scorer_class`` (neighbours found on ``device``, on
    ``view()`` when given). Returns the answer and the nodes moved."""
    answer = answer.long()
    rows = (answer >= num_known).nonzero().flatten()
    if rows.numel() == 0:
        return answer, 0
    near = view_neighbours(x, edge_index, rows, REJECTED_NEIGHBOURS, device=device, view=view)
    named_known = (answer[near] >= 0) & (answer[near] < num_known)
    among_known = named_known.float().mean(1) >= RETURNED_SHARE
    go = rows[known_like(energy, val_labels, quantile)[rows] & among_known]
    out = answer.clone()
    out[go] = scorer_class.long()[go]
    return out, int(go.numel())


def answer_known_split(answer: torch.Tensor, val_labels: torch.Tensor, unlabelled: torch.Tensor,
                       num_known: int, threshold: float) -> torch.Tensor:
    """The known-split check (:func:`oral_core.novelty.known_split_groups`, ``known_split_share``)
    on the answer's own classes rather than the ensemble's groups: bool ``[C]`` over class ids,
    True for a novel class (id ``>= num_known``) whose unlabelled nodes are, judged by its
    validation nodes, at least ``threshold`` known (the unlabelled nodes per validation node
    measured in the answer's known classes). ``unlabelled``: bool ``[N]``, nodes with no label."""
    answer = answer.long()
    size = int(answer.max()) + 2 if answer.numel() else 1
    none = size - 1  # the nodes in no class (-1) form a group of no class
    group = torch.where(answer >= 0, answer, torch.full_like(answer, none))
    group_class = torch.arange(size)
    group_class[none] = -1
    from .novelty import known_split_groups

    return known_split_groups(group, group_class, unlabelled, val_labels >= 0, num_known,
                              threshold)[:size - 1]


def drop_classes(answer: torch.Tensor, namer: torch.Tensor, dropped: torch.Tensor) -> torch.Tensor:
    """The answer with the nodes of the ``dropped`` classes (bool ``[C]`` over class ids) named by
    the known-class ``namer`` instead."""
    answer = answer.long()
    hit = torch.zeros_like(answer, dtype=torch.bool)
    inside = answer >= 0
    hit[inside] = dropped[answer[inside]]
    return torch.where(hit, namer.long(), answer)


def known_namer_of_every_node(candidates: dict[str, torch.Tensor], namer: str,
                              val_labels: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """A known class for every node: the chosen namer's, or, when that is ORAL's own naming
    (which names only the nodes it puts in known classes), the best of the other candidates on
    ``nodes``. Where a dropped novel class's nodes go (:func:`drop_classes`)."""
    if namer != "oral":
        return candidates[namer]
    others = {k: v for k, v in candidates.items() if k != "oral"}
    if not others:
        raise ValueError("no known-class classifier names every node: only ORAL's own naming")
    return others[best_known_namer(others, val_labels, nodes)]


def namer_of_every_node(decided: dict, val_labels: torch.Tensor, num_known: int) -> torch.Tensor:
    """A known class for every node from the per-class answer ``decided`` (its ``candidates``
    and chosen ``namer``; :func:`known_namer_of_every_node`, the candidates compared on the
    validation nodes ORAL names known): where the nodes of dropped or carved classes go."""
    candidates = decided["candidates"]
    nodes = known_validation_nodes(candidates["oral"], val_labels, num_known)
    return known_namer_of_every_node(candidates, decided["namer"], val_labels, nodes)


def split_answer(decided: dict, val_labels: torch.Tensor, unlabelled: torch.Tensor,
                 num_known: int, share: float) -> tuple[torch.Tensor, int]:
    """The per-class answer ``decided`` (``answer``, ``candidates`` and ``namer``, as
    :func:`decide_answer` has them) with each novel class the check calls known
    (:func:`answer_known_split` at ``share``) dropped into the known classes; returns the answer
    and how many classes were dropped (the answer as it was when there is no classifier of every
    node, only ORAL's own naming)."""
    answer, candidates = decided["answer"], decided["candidates"]
    if len(candidates) < 2:
        return answer, 0
    drop = answer_known_split(answer, val_labels, unlabelled, num_known, share)
    if not drop.any():
        return answer, 0
    every = namer_of_every_node(decided, val_labels, num_known)
    return drop_classes(answer, every, drop), int(drop.sum())


def aged_split(decided: dict, recent: torch.Tensor, val_labels: torch.Tensor,
               unlabelled: torch.Tensor, num_known: int, share: float,
               least: int = REJECTED_MIN_SIZE) -> tuple[torch.Tensor, int]:
    """``+agesplit`` (not in the paper): each novel class of the per-class answer ``decided``
    (``answer``, ``candidates``, ``namer``) that the split check keeps is judged again in two
    parts by arrival, label-free: its old nodes (present :data:`BURST_WINDOW` snapshots back,
    ``~recent``) and its recent ones. A new class on an evolving graph arrives with new nodes;
    a novel class of the fit often holds such a class together with a slice of old known nodes
    around it, and the recent nodes dilute the slice's validation nodes below the check's share
    for the class as a whole. Where the old part alone holds validation nodes as the known
    classes do (:func:`part_split`), its nodes are named by the known-class classifier,
    as a dropped class's are; the recent part stays the class. A class of new nodes holds no
    validation node in either part, so a novel class whose first nodes have since grown old is
    left whole. Returns the answer and the nodes moved."""
    return part_split(decided, ~recent.bool(), val_labels, unlabelled, num_known, share, least)


def last_night_split(decided: dict, known_last: torch.Tensor, val_labels: torch.Tensor,
                     unlabelled: torch.Tensor, num_known: int, share: float,
                     least: int = REJECTED_MIN_SIZE) -> tuple[torch.Tensor, int]:
    """``+lastsplit`` (not in the paper): each novel class of the per-class answer ``decided``
    that the split check keeps is judged again on the part of it the previous night's published
    answer named a known class (``known_last``, bool ``[N]``: the node was there last night and
    named known; a new node is not). A slice of old known nodes a novel class drags along was
    named known last night, while the class's own old nodes were found novel the night it was
    found: unlike the arrival cut of :func:`aged_split`, this part leaves a class's own old
    nodes with it. Where the part alone holds validation nodes as the known classes do
    (:func:`part_split`), its nodes are named by the known-class classifier; the rest stays
    the class. Returns the answer and the unlabelled nodes moved."""
    return part_split(decided, known_last.bool(), val_labels, unlabelled, num_known, share,
                      least)


def part_split(decided: dict, part_of: torch.Tensor, val_labels: torch.Tensor,
               unlabelled: torch.Tensor, num_known: int, share: float,
               least: int = REJECTED_MIN_SIZE) -> tuple[torch.Tensor, int]:
    """The split check on a part of each novel class (the shared step of :func:`aged_split`
    and :func:`last_night_split`): for each novel class of ``decided["answer"]`` the split check
    keeps (:func:`nodes_look_known` at ``share`` on the whole class says novel), its nodes in
    ``part_of`` (bool ``[N]``) are named by the known-class classifier
    (:func:`namer_of_every_node`) where that part, with at least ``least`` unlabelled nodes,
    holds validation nodes as the known classes do (:func:`nodes_look_known` at ``share``, the
    split check's own estimate and share). Returns the answer and the unlabelled nodes moved
    (the answer as it was without a classifier of every node)."""
    answer, candidates = decided["answer"].long(), decided["candidates"]
    if len(candidates) < 2:
        return answer, 0
    part_of = part_of.bool().to(answer.device)
    val = val_labels >= 0
    move = torch.zeros_like(answer, dtype=torch.bool)
    for c in torch.unique(answer[answer >= num_known]).tolist():
        members = answer == c
        part = members & part_of
        if int((part & unlabelled).sum()) < least:
            continue
        if nodes_look_known(members, answer, unlabelled, val, num_known, share):
            continue  # the split check's whole class (dropped by it, not here)
        if nodes_look_known(part, answer, unlabelled, val, num_known, share):
            move |= part
    if not bool(move.any()):
        return answer, 0
    every = namer_of_every_node(decided, val_labels, num_known)
    return torch.where(move, every.long(), answer), int((move & unlabelled).sum())


def named_right(candidate: torch.Tensor, val_labels: torch.Tensor, nodes: torch.Tensor) -> int:
    """How many of ``nodes`` (a boolean mask of labelled validation nodes) ``candidate`` names
    their class."""
    return int((candidate[nodes] == val_labels[nodes].long()).sum())


def known_validation_nodes(class_id: torch.Tensor, val_labels: torch.Tensor,
                           num_known: int) -> torch.Tensor:
    """The validation nodes ORAL names a known class (boolean ``[N]``): where the known
    classifiers are compared."""
    return (val_labels >= 0) & (class_id < num_known) & (class_id >= 0)


def beats_oral(candidate: torch.Tensor, oral: torch.Tensor, val_labels: torch.Tensor,
               nodes: torch.Tensor, alpha: float) -> bool:
    """Does ``candidate`` name ``nodes`` better than ORAL's own naming beyond chance: more of the
    nodes the two disagree on right, at an exact two-sided McNemar p below ``alpha``
    (:func:`oral_core.reference.mcnemar_p`)?"""
    from .reference import discordant, mcnemar_p

    masked = torch.where(nodes, val_labels.long(), torch.full_like(val_labels.long(), -1))
    worse, better = discordant(candidate, oral, masked)  # only ORAL right, only candidate right
    return better > worse and mcnemar_p(worse, better) < alpha


def best_known_namer(candidates: dict[str, torch.Tensor], val_labels: torch.Tensor,
                     nodes: torch.Tensor, paired_alpha: float | None = None) -> str:
    """The candidate (``{name: known class per node}``, in :data:`NAMERS` order) naming the most
    of ``nodes`` right; ties keep the earlier one (ORAL's own naming first). With
    ``paired_alpha``, a classifier replaces ORAL's own naming only when it names the nodes better
    beyond chance (:func:`beats_oral`), so noise never moves the answer away from ORAL."""
    best, most = None, -1
    for name in NAMERS:
        if name not in candidates:
            continue
        if (paired_alpha is not None and name != "oral" and "oral" in candidates
                and not beats_oral(candidates[name], candidates["oral"], val_labels, nodes,
                                   paired_alpha)):
            continue
        right = named_right(candidates[name], val_labels, nodes)
        if right > most:
            best, most = name, right
    return best


def cross_fitted_right(candidates: dict[str, torch.Tensor], val_labels: torch.Tensor,
                       nodes: torch.Tensor, seed: int = 0,
                       paired_alpha: float | None = None) -> tuple[int, int]:
    """The choice of :func:`best_known_namer` measured honestly: ``nodes`` split in two halves
    at random, the namer chosen on one half names the other, and the other way round. Returns
    ``(right, total)`` over both halves."""
    idx = torch.nonzero(nodes).flatten()
    order = idx[torch.randperm(idx.numel(), generator=torch.Generator().manual_seed(seed))]
    halves = order[: order.numel() // 2], order[order.numel() // 2:]
    right = 0
    for choose, score in (halves, halves[::-1]):
        pick = torch.zeros_like(nodes)
        pick[choose] = True
        held = torch.zeros_like(nodes)
        held[score] = True
        chosen = best_known_namer(candidates, val_labels, pick, paired_alpha)
        right += named_right(candidates[chosen], val_labels, held)
    return right, int(idx.numel())


def per_class_answer(class_id: torch.Tensor, namer: torch.Tensor, num_known: int) -> torch.Tensor:
    """The night's answer: a node ORAL puts in a known class takes the chosen namer's known class;
    a node in a novel group (or in none, -1) keeps ORAL's."""
    known = (class_id >= 0) & (class_id < num_known)
    return torch.where(known, namer.long(), class_id.long())


def decide_answer(class_id: torch.Tensor, x: torch.Tensor, edge_index: torch.Tensor,
                  train_labels: torch.Tensor, val_labels: torch.Tensor, num_known: int,
                  scale: str = "labelled", seed: int = 0,
                  paired_alpha: float | None = None,
                  novelty_quantile: float | None = None,
                  rejected_quantile: float | None = None,
                  returned_quantile: float | None = None,
                  split_share: float | None = None,
                  carve_share: float | None = None,
                  carve_alpha: float | None = None,
                  regroup_strength: float | None = None,
                  regroup_known: bool = False,
                  regroup_calibrated: bool = False,
                  regroup_odds: bool = False,
                  regain_quantile: float | None = None,
                  recent: torch.Tensor | None = None,
                  burst_alpha: float | None = None,
                  burst_join: bool = False,
                  burst_young: bool = False,
                  burst_grow: bool = False,
                  burst_grow_at: tuple[int, int] = (BURST_GROW_LEAST, BURST_GROW_ROUNDS),
                  burst_grow_most: bool = False,
                  burst_keep: bool = False,
                  split_first: bool = False,
                  burst_split: bool = False,
                  age_split: bool = False,
                  known_last: torch.Tensor | None = None,
                  device: torch.device | str | None = None) -> dict:
    """The answer per class from one fit's ``class_id``: the known-class classifiers fitted on
    ``train_labels`` (the reference LR standardised over ``scale``'s rows, the GCN seeded with
    ``seed``), the best on the validation nodes ORAL names known (:func:`best_known_namer`)
    naming them (:func:`per_class_answer`); with ``paired_alpha`` another classifier replaces
    ORAL's own naming only beyond chance (:func:`beats_oral`); with ``carve_share`` the known
    slices of its novel classes are named known (:func:`carved_answer`, first; with
    ``carve_alpha`` what a class keeps is tested too, :func:`fewer_than_known`); with
    ``split_share`` the answer's
    novel classes the known-split check calls known are dropped (:func:`split_answer`, before
    the rest but the burst; with ``split_first`` too on the model's own classes before the
    burst, ``+splitfirst``, not in the paper: the burst, the growth and the grouping move
    unlabelled nodes only, so after them a class's validation nodes undercount the known nodes
    it holds, while the model's own classes are read as they were made); with ``burst_alpha`` and ``recent`` (bool ``[N]``) the nodes that
    arrived recently in a burst form young classes before the split check
    (:func:`burst_classes`, with ``burst_join`` its joining form, with ``burst_young`` too its
    form joining only young classes, with ``burst_grow`` too those classes grown over the recent
    nodes around them, ``burst_grow_at`` its constants, with ``burst_grow_most`` too only where
    the class outnumbers a node's own, with ``burst_keep`` too never moving a node of a
    novel class into another class the answer already had, with ``burst_split`` a burst never
    joining a class whose other nodes the split check calls known; ``burst``, the nodes moved);
    with ``novelty_quantile`` the
    nodes of novel groups that look known are named a known class (:func:`novelty_checked`);
    with ``returned_quantile`` those among neighbours named known (:func:`returned_to_known`);
    with ``rejected_quantile`` the known-named nodes the known classes reject, among rejected
    neighbours, are grouped as novel (:func:`rejected_nodes_grouped`, after the check); with
    ``regain_quantile`` (and ``split_share``) then the nodes of the classes the split check
    dropped that the known classes reject at that quantile (:func:`regained_nodes`); with
    ``age_split`` (with ``split_share`` and ``recent``) after the split check the old part of
    each novel class it keeps is named known when it alone holds validation nodes as the known
    classes do (:func:`aged_split`, ``+agesplit``; ``aged``, the unlabelled nodes moved); with
    ``known_last`` (bool ``[N]``, with ``split_share``: named known by the previous night's
    published answer) then the part of each kept novel class named known last night is named
    known when it alone holds validation nodes as the known classes do
    (:func:`last_night_split`, ``+lastsplit``; ``last``, the unlabelled nodes moved); with
    ``regroup_strength`` each novel class of the answer, last, is cut into the most parts whose
    cut on ``S^2 X`` reaches that prediction strength (:func:`oral_core.recut.regrouped_answer`;
    with ``regroup_known`` also beyond every known class's own cut, ``known_bar``; with
    ``regroup_calibrated`` only when the cut, tried on the labelled nodes of the known classes,
    tells them apart: :func:`oral_core.recut.cut_calibration`; with ``regroup_odds`` instead
    when it tells their pairs apart more often than it divides one of them,
    :func:`oral_core.recut.cut_right_more_often`, ``+regroupodds``).
    ``device``: where the steps that grow with the graph run, the GCN's fit and the nearest
    neighbours of the rejected and the returned nodes (default the CPU); the rest runs on the CPU.

    Returns ``answer`` (class id per node), ``namer``, ``candidates`` (each classifier's known
    class per node), ``right`` (validation nodes each candidate names right among ``nodes``),
    ``nodes``, ``cross_fitted_right`` (:func:`cross_fitted_right`), and with the novelty check
    ``scorer`` (whose energy it read) and ``moved`` (nodes it named a known class), with the
    rejected nodes grouped ``scorer``, its propagated ``energy`` per node and ``rejected``
    (nodes it moved into novel classes), with the dropped classes' nodes regained
    ``regained`` (nodes it moved), with novel nodes returned ``returned`` (nodes it
    named a known class), with the split check ``dropped`` (novel classes it dropped), with the
    classes carved ``carved`` (nodes of novel classes it named known), with the novel classes
    regrouped ``regrouped`` (new classes the cuts made; calibrated, ``calibration`` too, the
    cut's record on the labelled classes, absent on a night without a novel class)."""
    from .reference import reference_logits

    candidates, logits = {"oral": class_id}, {}
    lr = reference_logits(x, train_labels, val_labels, scale=scale)
    if lr is not None:  # both labelled sets are there: the GCN is fitted and compared too
        logits = {"lr": lr, "gcn": known_gcn_logits(x, edge_index, train_labels, num_known,
                                                    seed=seed, device=device)}
        candidates |= {name: lg.argmax(1) for name, lg in logits.items()}
    nodes = known_validation_nodes(class_id, val_labels, num_known)
    namer = best_known_namer(candidates, val_labels, nodes, paired_alpha)
    crossed, total = cross_fitted_right(candidates, val_labels, nodes, seed=seed,
                                        paired_alpha=paired_alpha)
    answer = per_class_answer(class_id, candidates[namer], num_known)
    out = {"namer": namer, "candidates": candidates,
           "right": {k: named_right(v, val_labels, nodes) for k, v in candidates.items()},
           "nodes": total, "cross_fitted_right": crossed}
    unlabelled = (train_labels < 0) & (val_labels < 0)
    kept = {}

    def view() -> torch.Tensor:  # S^2 X, computed once for the steps that read it
        if "view" not in kept:
            kept["view"] = answer_view(x, edge_index)
        return kept["view"]

    if carve_share is not None:
        answer, carved = carved_answer({"answer": answer, "candidates": candidates,
                                        "namer": namer}, view(), val_labels,
                                       unlabelled, num_known, carve_share, alpha=carve_alpha)
        out |= {"carved": carved}
    split_before = 0
    if split_first and split_share is not None:  # the model's own classes, before any step moves
        answer, split_before = split_answer({"answer": answer, "candidates": candidates,
                                             "namer": namer}, val_labels, unlabelled,
                                            num_known, split_share)
    if burst_alpha is not None and recent is not None:
        answer, burst = burst_classes(answer, recent.bool(), x, edge_index, train_labels,
                                      val_labels, num_known, burst_alpha, device=device,
                                      view=view,
                                      join=burst_join or burst_young or burst_grow
                                      or burst_grow_most or burst_keep,
                                      young=(burst_young or burst_grow or burst_grow_most
                                             or burst_keep),
                                      grow=burst_grow or burst_grow_most or burst_keep,
                                      grow_at=burst_grow_at,
                                      grow_most=burst_grow_most or burst_keep,
                                      keep_novel=burst_keep, split_rest=burst_split)
        out |= {"burst": burst}
    dropped_from = None
    if split_share is not None:
        before = answer
        answer, dropped = split_answer({"answer": answer, "candidates": candidates,
                                        "namer": namer}, val_labels, unlabelled, num_known,
                                       split_share)
        out |= {"dropped": dropped + split_before}
        if age_split and recent is not None:
            answer, aged = aged_split({"answer": answer, "candidates": candidates,
                                       "namer": namer}, recent, val_labels, unlabelled,
                                      num_known, split_share)
            out |= {"aged": aged}
        if known_last is not None:
            answer, last = last_night_split({"answer": answer, "candidates": candidates,
                                             "namer": namer}, known_last, val_labels,
                                            unlabelled, num_known, split_share)
            out |= {"last": last}
        dropped_from = (before >= num_known) & (answer < num_known)
    energised = (novelty_quantile, rejected_quantile, returned_quantile, regain_quantile)
    if any(q is not None for q in energised) and logits:
        scorer = energy_scorer(logits, val_labels)
        energy = propagated_energy(logits[scorer], edge_index)
        out |= {"scorer": scorer, "energy": energy}
        if novelty_quantile is not None:
            like = known_like(energy, val_labels, novelty_quantile)
            answer, moved = novelty_checked(answer, candidates[scorer], like, num_known)
            out |= {"moved": int(moved.sum())}
        if returned_quantile is not None:
            answer, returned = returned_to_known(answer, candidates[scorer], energy, x,
                                                 edge_index, val_labels, num_known,
                                                 returned_quantile, device=device, view=view)
            out |= {"returned": returned}
        if rejected_quantile is not None:
            answer, grouped = rejected_nodes_grouped(answer, energy, x, edge_index, train_labels,
                                                     val_labels, num_known, rejected_quantile,
                                                     device=device, view=view)
            out |= {"rejected": grouped}
        if regain_quantile is not None and dropped_from is not None:
            answer, regained = regained_nodes(answer, dropped_from, energy, x, edge_index,
                                              train_labels, val_labels, num_known,
                                              regain_quantile, device=device, view=view)
            out |= {"regained": regained}
    if regroup_strength is not None:
        cut = True
        if (regroup_calibrated or regroup_odds) and bool((answer >= num_known).any()):
            labels = torch.where(train_labels >= 0, train_labels, val_labels).cpu()
            calibration = cut_calibration(view(), labels, num_known, strength=regroup_strength,
                                          seed=seed)
            cut = (cut_right_more_often if regroup_odds
                   else cut_tells_classes_apart)(calibration)
            out |= {"calibration": calibration}
        made = 0
        if cut:
            answer, made = regrouped_answer(answer, view(), num_known, strength=regroup_strength,
                                            seed=seed, known_bar=regroup_known)
        out |= {"regrouped": made}
    return out | {"answer": answer}
