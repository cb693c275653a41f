"""The plain reference classifier the champion gate holds ORAL to (not part of the paper).

A multinomial logistic regression on the node features alone, trained on the same labelled
training nodes as ORAL and scored on the same held-out labelled validation nodes. It reads no
edge and no unlabelled node, so it is what a user gets without the graph and without discovery:
a model whose known-class validation accuracy is below it is no answer to publish (issue 47).
"""
from __future__ import annotations

import torch


def standardize(x: torch.Tensor) -> torch.Tensor:
    """Each feature column centred and scaled to unit variance (constant columns left at 0)."""
    x = x.float()
    mean, std = column_scale(x)
    return (x - mean) / std


def fit_logistic_regression(x: torch.Tensor, labels: torch.Tensor, num_classes: int,
                            weight_decay: float = 1e-3, iterations: int = 100,
                            seed: int = 0) -> torch.nn.Linear:
    """A multinomial logistic regression (cross-entropy plus ``weight_decay`` times the squared
    weights) fitted by L-BFGS on the rows of ``x`` with ``labels >= 0``."""
    torch.manual_seed(seed)
    rows = labels >= 0
    xs, ys = x[rows].float(), labels[rows].long()
    model = torch.nn.Linear(x.shape[1], num_classes)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=iterations,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xs), ys)
        loss = loss + weight_decay * model.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return model


def column_scale(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per column of ``rows``, the mean and the spread that standardise it (a constant column
    keeps spread 1)."""
    std = rows.std(0, unbiased=False)
    return rows.mean(0), torch.where(std > 0, std, torch.ones_like(std))


def reference_model(x: torch.Tensor, train_labels: torch.Tensor, val_labels: torch.Tensor,
                    scale: str = "labelled"):
    """The reference logistic regression fitted on the nodes labelled in ``train_labels``, and
    the mean and spread that standardise its inputs (``scale``, as :func:`reference_predictions`
    says): ``(model, mean, std, rows, z)``, ``rows`` the labelled nodes and ``z`` their
    standardised features. None when the training or the validation set is empty."""
    train_labels, val_labels = train_labels.long(), val_labels.long()
    if not bool((train_labels >= 0).any()) or not bool((val_labels >= 0).any()):
        return None
    num_classes = int(max(train_labels.max(), val_labels.max())) + 1
    # only the labelled rows are read to fit (a sparse feature matrix is densified on those)
    rows = torch.nonzero((train_labels >= 0) | (val_labels >= 0)).flatten()
    xs = x.index_select(0, rows)
    xs = (xs.to_dense() if xs.is_sparse else xs).float()
    if scale == "all":  # every node's mean and spread, as the 0-step head's (densified, as it is)
        mean, std = column_scale((x.to_dense() if x.is_sparse else x).float())
    else:
        mean, std = column_scale(xs)
    z = (xs - mean) / std
    with torch.enable_grad():
        model = fit_logistic_regression(z, train_labels[rows], num_classes)
    return model, mean, std, rows, z


def every_node_logits(model, x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor,
                      block: int = 8192) -> torch.Tensor:
    """The logistic regression's logits for every node (``[N, K]``), densifying a block of rows
    at a time."""
    out = []
    with torch.no_grad():
        for start in range(0, x.shape[0], block):
            rows = x.index_select(0, torch.arange(start, min(start + block, x.shape[0])))
            rows = (rows.to_dense() if rows.is_sparse else rows).float()
            out.append(model((rows - mean) / std))
    return torch.cat(out) if out else torch.zeros(0, model.out_features)


def reference_logits(x: torch.Tensor, train_labels: torch.Tensor, val_labels: torch.Tensor,
                     scale: str = "labelled") -> torch.Tensor | None:
    """The reference logistic regression's logits for every node (``[N, K]``; its class is their
    argmax, :func:`reference_predictions`). None when a labelled set is empty."""
    fitted = reference_model(x, train_labels, val_labels, scale)
    if fitted is None:
        return None
    model, mean, std, _, _ = fitted
    return every_node_logits(model, x, mean, std)


def reference_predictions(x: torch.Tensor, train_labels: torch.Tensor,
                          val_labels: torch.Tensor, scale: str = "labelled",
                          every_node: bool = True) -> torch.Tensor | None:
    """The reference logistic regression's class (long ``[N]``) for every node
    (``every_node``), or for the validation nodes only (-1 elsewhere): fitted on the nodes
    labelled in ``train_labels`` (``-1`` elsewhere). ``scale``: the rows whose mean and spread
    standardise the features, ``"labelled"`` (the training and validation nodes) or ``"all"``
    (every node), as ``known_head_scale`` says for the known head, so that a 0-step head *is*
    this classifier. None when the training or the validation set is empty."""
    fitted = reference_model(x, train_labels, val_labels, scale)
    if fitted is None:
        return None
    model, mean, std, rows, z = fitted
    predicted = torch.full_like(val_labels.long(), -1)
    if every_node:
        return every_node_logits(model, x, mean, std).argmax(1)
    with torch.no_grad():
        seen = val_labels.long()[rows] >= 0
        predicted[rows[seen]] = model(z[seen]).argmax(1)
    return predicted


def reference_val_predictions(x: torch.Tensor, train_labels: torch.Tensor,
                              val_labels: torch.Tensor, scale: str = "labelled"
                              ) -> torch.Tensor | None:
    """The reference logistic regression's class for every validation node (long ``[N]``, -1
    where ``val_labels`` is -1): :func:`reference_predictions` on the validation nodes."""
    return reference_predictions(x, train_labels, val_labels, scale, every_node=False)


def reference_accuracy(x: torch.Tensor, train_labels: torch.Tensor,
                       val_labels: torch.Tensor, scale: str = "labelled") -> float | None:
    """Known-class validation accuracy of the reference logistic regression
    (:func:`reference_val_predictions`) on the nodes labelled in ``val_labels``. None when the
    training or the validation set is empty."""
    predicted = reference_val_predictions(x, train_labels, val_labels, scale)
    if predicted is None:
        return None
    seen = val_labels.long() >= 0
    return float((predicted[seen] == val_labels.long()[seen]).float().mean())


def discordant(answer: torch.Tensor, reference: torch.Tensor, val_labels: torch.Tensor
               ) -> tuple[int, int]:
    """The validation nodes two answers disagree on, as McNemar's test reads them:
    ``(worse, better)``: nodes only the reference names right, nodes only the answer names
    right (``answer`` / ``reference``: a class id per node)."""
    seen = val_labels >= 0
    a = answer[seen].long() == val_labels[seen].long()
    r = reference[seen].long() == val_labels[seen].long()
    return int((r & ~a).sum()), int((a & ~r).sum())


def mcnemar_p(worse: int, better: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts of a paired comparison on the
    same nodes (a binomial test of ``worse`` among ``worse + better`` at one half); 1 when the
    two answers never disagree."""
    if worse + better == 0:
        return 1.0
    from scipy.stats import binomtest
    return float(binomtest(int(worse), int(worse + better), 0.5).pvalue)
