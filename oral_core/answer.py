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
  then publishes it, holds it as a candidate or lets it go.

:func:`per_class_answer` puts the two together. :func:`cross_fitted_right` is the honest
measure of the choice (the choice and its score never read the same validation node).
"""
from __future__ import annotations

import torch

#: the known-class classifiers the answer chooses among, in the order ties are broken
NAMERS = ("oral", "lr", "gcn")
#: the paired choice's level (``ORAL_NIGHT_ANSWER=per_class_paired``): another classifier names
#: the known classes only when it beats ORAL's own naming at McNemar p below this
PAIRED_ALPHA = 0.05
#: the known-class GCN (Kipf & Welling 2017): hidden width, dropout, Adam's rate and weight decay,
#: and a fixed number of epochs (no early stop, so the validation nodes stay unread until the
#: choice)
GCN_HIDDEN, GCN_DROPOUT, GCN_LR, GCN_WEIGHT_DECAY, GCN_EPOCHS = 64, 0.5, 0.01, 5e-4, 200


def fit_known_gcn(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                  num_known: int, seed: int = 0, epochs: int = GCN_EPOCHS) -> torch.Tensor:
    """A two-layer GCN, ``softmax(S relu(S X W1) W2)`` with ``S = D^-1/2 (A + I) D^-1/2``,
    fitted by cross-entropy on the nodes labelled in ``train_labels`` (-1 elsewhere) for
    ``epochs`` full-batch Adam steps. Returns its known class for every node (long ``[N]``)."""
    from .known_head import normalised_adjacency

    n = x.shape[0]
    s = normalised_adjacency(edge_index, n)
    x = (x.to_dense() if x.is_sparse else x).float()
    y = train_labels.long()
    seen = y >= 0
    gen = torch.Generator().manual_seed(seed)
    w1 = torch.nn.Parameter(torch.empty(x.shape[1], GCN_HIDDEN))
    w2 = torch.nn.Parameter(torch.empty(GCN_HIDDEN, num_known))
    for w in (w1, w2):  # Glorot, as GCNConv starts
        bound = (6.0 / (w.shape[0] + w.shape[1])) ** 0.5
        with torch.no_grad():
            w.uniform_(-bound, bound, generator=gen)
    sx = torch.sparse.mm(s, x)  # the first propagation does not depend on the weights

    def logits(train: bool) -> torch.Tensor:
        h = torch.relu(sx @ w1)
        if train:
            keep = (torch.rand(h.shape, generator=gen) >= GCN_DROPOUT).float()
            h = h * keep / (1 - GCN_DROPOUT)
        return torch.sparse.mm(s, h @ w2)

    opt = torch.optim.Adam([w1, w2], lr=GCN_LR, weight_decay=GCN_WEIGHT_DECAY)
    with torch.enable_grad():
        for _ in range(epochs):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(logits(True)[seen], y[seen]).backward()
            opt.step()
    with torch.no_grad():
        return logits(False).argmax(1)


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
                  paired_alpha: float | None = None) -> dict:
    """The answer per class from one fit's ``class_id``: the known-class classifiers fitted on
    ``train_labels`` (the reference LR standardised over ``scale``'s rows, the GCN seeded with
    ``seed``), the best on the validation nodes ORAL names known (:func:`best_known_namer`)
    naming them (:func:`per_class_answer`); with ``paired_alpha`` another classifier replaces
    ORAL's own naming only beyond chance (:func:`beats_oral`).

    Returns ``answer`` (class id per node), ``namer``, ``candidates`` (each classifier's known
    class per node), ``right`` (validation nodes each candidate names right among ``nodes``),
    ``nodes`` and ``cross_fitted_right`` (:func:`cross_fitted_right`)."""
    from .reference import reference_predictions

    candidates = {"oral": class_id}
    lr = reference_predictions(x, train_labels, val_labels, scale=scale)
    if lr is not None:  # both labelled sets are there: the GCN is fitted and compared too
        candidates["lr"] = lr
        candidates["gcn"] = fit_known_gcn(x, edge_index, train_labels, num_known, seed=seed)
    nodes = known_validation_nodes(class_id, val_labels, num_known)
    namer = best_known_namer(candidates, val_labels, nodes, paired_alpha)
    crossed, total = cross_fitted_right(candidates, val_labels, nodes, seed=seed,
                                        paired_alpha=paired_alpha)
    return {"answer": per_class_answer(class_id, candidates[namer], num_known), "namer": namer,
            "candidates": candidates,
            "right": {k: named_right(v, val_labels, nodes) for k, v in candidates.items()},
            "nodes": total, "cross_fitted_right": crossed}
