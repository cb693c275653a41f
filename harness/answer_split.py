"""The answer-level known-split check: research only, out of the pipeline (issue 60).

`benchmarks/results/answer_proxy/` asked whether the per-class answer
(:func:`oral_core.answer.decide_answer`) should judge each of its novel classes by the known-split
check on its own validation nodes and drop the ones it calls known. The rule failed (the
held-out proxy never saw it act), so the check is not in the pipeline; it lives here, where
``benchmarks.answer_proxy`` builds it from the same fit as the other answers.
"""
from __future__ import annotations

import torch

from oral_core.answer import best_known_namer
from oral_core.novelty import known_split_groups


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


def split_answer(decided: dict, val_labels: torch.Tensor, unlabelled: torch.Tensor,
                 num_known: int, share: float) -> tuple[torch.Tensor, int]:
    """The per-class answer ``decided`` (:func:`oral_core.answer.decide_answer`'s result) with
    each novel class the check calls known (:func:`answer_known_split` at ``share``) dropped into
    the known classes; returns the answer and how many classes were dropped (the answer as it
    was when there is no classifier of every node, only ORAL's own naming)."""
    answer, candidates = decided["answer"], decided["candidates"]
    if len(candidates) < 2:
        return answer, 0
    drop = answer_known_split(answer, val_labels, unlabelled, num_known, share)
    if not drop.any():
        return answer, 0
    from oral_core.answer import known_validation_nodes

    nodes = known_validation_nodes(candidates["oral"], val_labels, num_known)
    every = known_namer_of_every_node(candidates, decided["namer"], val_labels, nodes)
    return drop_classes(answer, every, drop), int(drop.sum())
