"""Known-class fidelity: a supervised head for the known classes (not in the paper; switch
``known_head``, with ``known_head_pull``).

ORAL names a node's known class through its prototype groups: Eq. 4 matches each group of the
ensemble (Eq. 8-9) to a known class, and every node of the group takes that class. On a small or
young graph those groups cut through the known classes: on the nightly loop's early Cora nights
(about 550 unlabelled known-class nodes, half the known-class nodes labelled) 20-31% of the
known-class nodes ORAL kept in a known class were in the wrong one, while a plain known-class
GCN on the same labels got 86-88% of them right (``benchmarks/results/nightly_loop``).

The head is the cheapest classifier that reads the graph: a logistic regression on the features
propagated twice over the normalised adjacency with self-loops, ``S^2 X`` with
``S = D^-1/2 (A + I) D^-1/2`` (SGC, Wu et al. 2019), fitted on the labelled training nodes of
the known classes alone (no validation node, no pseudo-label). It never decides *whether* a node
is known:

- ``known_head="sgc"``: a node ORAL puts in a known class takes the head's most likely known
  class instead (the novel classes and their nodes are untouched);
- ``known_head="auto"``: the same, in a fit whose labelled validation nodes the relabelled
  answer names better than the groups do (else the groups' answer stands, and no head is
  saved);
- ``known_head_pull=t`` (with the head): a node ORAL puts in a novel class, or in none, whose
  head probability reaches ``t`` joins the head's class (a node the supervised part is
  confident about stays known). This one moves nodes out of novel classes, so the held-out-class
  proxy, which hides known classes and scores how they are found again, judges it.

``known_head_scale`` says which rows' mean and spread standardise the head's inputs: the
labelled nodes (``"labelled"``, the champion gate's reference logistic regression) or every node
of the graph the head is fitted on (``"all"``, as the nightly loop's reference classifier
standardises its features).

The head's weights and the standardisation of its inputs travel with the model file, so a
model applied to another snapshot (``ORALModel.assign``) relabels the same way.
"""
from __future__ import annotations

import torch

from .reference import column_scale, fit_logistic_regression
#: propagation steps of the ``sgc`` head (``known_head_hops``' default)
SGC_HOPS = 2
#: the propagation steps ``known_head_hops=None`` chooses among (0: the features alone, the
#: reference classifier's inputs)
HOP_CHOICES = (0, 1, 2)
#: folds of the cross-validation on the labelled training nodes that chooses them
CV_FOLDS = 5


def normalised_adjacency(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``S = D^-1/2 (A + I) D^-1/2`` as a sparse ``[N, N]`` matrix, ``A`` the symmetrised
    graph without its own self-loops."""
    edge_index = edge_index.long().cpu()
    off = edge_index[0] != edge_index[1]
    both = torch.cat([edge_index[:, off], edge_index[:, off].flip(0)], dim=1)
    loops = torch.arange(num_nodes).repeat(2, 1)
    idx = torch.cat([both, loops], dim=1)
    a = torch.sparse_coo_tensor(idx, torch.ones(idx.shape[1]), (num_nodes, num_nodes),
                                check_invariants=False).coalesce()
    idx = a.indices()
    deg = torch.zeros(num_nodes).index_add_(0, idx[0], torch.ones(idx.shape[1]))
    w = deg[idx[0]].rsqrt() * deg[idx[1]].rsqrt()
    return torch.sparse_coo_tensor(idx, w, (num_nodes, num_nodes), check_invariants=False).coalesce()


def propagated_features(x: torch.Tensor, edge_index: torch.Tensor,
                        hops: int = SGC_HOPS) -> torch.Tensor:
    """``S^hops X`` (dense, float, on the CPU)."""
    x = x.detach().cpu()
    z = (x.to_dense() if x.is_sparse else x).float()
    s = normalised_adjacency(edge_index, z.shape[0])
    for _ in range(hops):
        z = torch.sparse.mm(s, z)
    return z


def standardised(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(z - mean) / std`` per column (:func:`column_scale`), with mean and std."""
    mean, std = column_scale(z)
    return (z - mean) / std, mean, std


def cross_validated_accuracy(z: torch.Tensor, train_labels: torch.Tensor, num_known: int,
                             folds: int = CV_FOLDS, seed: int = 0) -> float:
    """Mean accuracy of the head's logistic regression on ``z`` over ``folds`` folds of the
    labelled training nodes (``train_labels >= 0``; a random partition drawn from ``seed``):
    each fold is scored by the regression fitted on the others. Reads no validation node."""
    rows = torch.nonzero(train_labels >= 0).flatten()
    gen = torch.Generator().manual_seed(seed)
    rows = rows[torch.randperm(rows.numel(), generator=gen)]
    zs, ys = standardised(z[rows])[0], train_labels[rows].long()
    correct = 0
    for part in torch.arange(rows.numel()).chunk(folds):
        fit_on = torch.ones(rows.numel(), dtype=torch.bool)
        fit_on[part] = False
        held = ys.clone()
        held[~fit_on] = -1
        with torch.enable_grad():
            lin = fit_logistic_regression(zs, held, num_known, seed=seed)
        with torch.no_grad():
            correct += int((lin(zs[part]).argmax(1) == ys[part]).sum())
    return correct / max(rows.numel(), 1)


def choose_hops(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                num_known: int, seed: int = 0) -> tuple[int, dict[int, float]]:
    """``known_head_hops=None``: the propagation steps of :data:`HOP_CHOICES` whose head is
    most accurate in :func:`cross_validated_accuracy` on the labelled training nodes (a tie goes
    to the more propagated, :data:`SGC_HOPS` first), and each choice's accuracy. On a graph
    whose edges join classes (BlogCatalog's friendships) the features alone win; on a
    homophilous one (Cora's citations) the propagated ones."""
    train_labels = train_labels.long().cpu()
    if int((train_labels >= 0).sum()) < 2 * CV_FOLDS:
        return SGC_HOPS, {}
    scores, z, done = {}, propagated_features(x, edge_index, 0), 0
    for hops in sorted(HOP_CHOICES):  # each step count one more propagation of the last
        z, done = propagated_features(z, edge_index, hops - done), hops
        scores[hops] = cross_validated_accuracy(z, train_labels, num_known, seed=seed)
    best = max(scores, key=lambda h: (round(scores[h], 9), h == SGC_HOPS, h))
    return best, scores


def fit_known_head(x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
                   num_known: int, seed: int = 0, hops: int | None = SGC_HOPS,
                   labelled: torch.Tensor | None = None) -> dict:
    """The ``sgc`` head fitted on the nodes with ``train_labels >= 0``: a dict of tensors (it
    is saved in the model file). ``hops``: propagation steps, None: :func:`choose_hops` (the
    cross-validation's accuracies are kept under ``"cv"``). ``labelled`` (bool ``[N]``, the
    training and validation nodes; their features only are read): the rows whose mean and
    spread standardise the inputs, as the reference classifier standardises them, so that at 0
    steps the head *is* the champion gate's reference logistic regression
    (:func:`oral_core.reference.reference_accuracy`); None: every node's, the nodes the head
    will name (``known_head_scale="all"``; a feature rare among the labelled nodes then keeps
    the spread it has over the graph)."""
    scores = {}
    if hops is None:
        hops, scores = choose_hops(x, edge_index, train_labels, num_known, seed=seed)
    z = propagated_features(x, edge_index, hops)
    mean, std = column_scale(z if labelled is None else z[labelled.cpu()])
    with torch.enable_grad():
        lin = fit_logistic_regression((z - mean) / std, train_labels.long().cpu(), num_known,
                                      seed=seed)
    return {"kind": "sgc", "hops": hops, "mean": mean, "std": std,
            "weight": lin.weight.detach().clone(), "bias": lin.bias.detach().clone(),
            "cv": {int(h): float(a) for h, a in scores.items()}}


@torch.no_grad()
def head_probabilities(head: dict, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """Per node, the head's probability of each known class (``[N, K]``, CPU)."""
    z = propagated_features(x, edge_index, int(head["hops"]))
    z = (z - head["mean"]) / head["std"]
    return torch.softmax(z @ head["weight"].T + head["bias"], dim=1)


def keep_known_fidelity(class_id: torch.Tensor, probs: torch.Tensor, num_known: int,
                        pull: float | None = None) -> torch.Tensor:
    """Class ids after the head: a node in a known class takes the head's class; with ``pull``,
    a node in a novel class or in none whose head probability reaches ``pull`` too."""
    conf, head_class = probs.max(dim=1)
    head_class = head_class.to(class_id.dtype)
    known = (class_id >= 0) & (class_id < num_known)
    if pull is not None:
        known = known | (conf >= pull)
    return torch.where(known, head_class, class_id)
