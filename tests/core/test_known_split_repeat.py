"""``known_split_repeat`` (oral_core.trainer, oral_core.novelty): the known-split check applied
until it suppresses no further group. One pass moves a suppressed group's nodes to their next
most likely kept group; when that is another novel group, it can then hold as many validation
nodes as a split of a known class, and only a second pass sees it."""
from __future__ import annotations

import torch

from oral_core.config import ORALConfig
from oral_core.pseudo_labels import Ensemble
from oral_core.trainer import ORAL, ensemble_classes


def chained_groups():
    """Group 0: known class 0 (10 training, 5 validation, 25 unlabelled nodes: 5 unlabelled per
    validation node). Group 1: 10 validation and 20 unlabelled nodes (a split of the known
    class), whose second choice is group 2. Group 2: 40 unlabelled nodes, no validation node."""
    rows, labels, val = [], [], []

    def add(n, p, label=-1, v=-1):
        rows.extend([p] * n)
        labels.extend([label] * n)
        val.extend([v] * n)

    add(10, [1.0, 0.0, 0.0], label=0)
    add(5, [1.0, 0.0, 0.0], v=0)
    add(25, [1.0, 0.0, 0.0])
    add(10, [0.0, 0.6, 0.4], v=0)
    add(20, [0.0, 0.6, 0.4])
    add(40, [0.0, 0.0, 1.0])
    p = torch.tensor(rows)
    ens = Ensemble(p, torch.ones(3), [torch.arange(3)], [3])
    labels = torch.tensor(labels)
    return ens, ensemble_classes(ens, labels, 1), labels, torch.tensor(val)


def classes_after(repeat: bool) -> tuple[list[int], int]:
    ens, group_class, labels, val = chained_groups()
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_repeat=repeat))
    checked, checked_class, rounds = model._split_checked(ens, group_class, labels, val, 1, repeat)
    group = (checked.p + 1e-12 * checked.mask).argmax(dim=1)
    return sorted(set(checked_class[group].tolist())), rounds


def test_one_pass_leaves_the_group_that_absorbed_a_split():
    classes, rounds = classes_after(repeat=False)
    assert rounds == 1 and classes == [0, 1]  # group 2 is still a novel class


def test_repeated_passes_suppress_it_too():
    classes, rounds = classes_after(repeat=True)
    assert rounds == 2 and classes == [0]  # nothing novel left: every node back in the known class


def test_a_true_novel_group_survives_repetition():
    """Group 2 without the split's nodes falling into it (their second choice is the known
    group): nothing is suppressed beyond group 1."""
    ens, _, labels, val = chained_groups()
    p = ens.p.clone()
    p[40:70] = torch.tensor([0.3, 0.6, 0.0])
    ens = Ensemble(p, ens.mask, ens.perms, ens.layer_groups)
    group_class = ensemble_classes(ens, labels, 1)
    model = ORAL(ORALConfig(known_split_share=0.5, known_split_repeat=True))
    checked, checked_class, rounds = model._split_checked(ens, group_class, labels, val, 1, True)
    group = (checked.p + 1e-12 * checked.mask).argmax(dim=1)
    assert rounds == 1 and sorted(set(checked_class[group].tolist())) == [0, 1]
