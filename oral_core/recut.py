"""The novel groups re-cut on fixed features (``novel_recut``; not in the paper).

ORAL's novel classes are groups of the prototype partition (Eq. 3-4), and the prototypes are
trained from a random start: on graphs whose classes overlap (Cora), two fits of the same graph
and split agree on which nodes are novel (95% on a Cora night) and on the known classes (99%),
but cut the novel nodes in unrelated ways (adjusted Rand index about 0 between two seeds on
them), so neither the night's answer nor the next night's lineage can rely on the cut.

The re-cut keeps what the fit decided (which nodes are novel and how many novel classes there
are, Eq. 4's granularity) and draws the boundaries between the novel classes on features no
training has shaped: ``S^2 X`` (the propagated features of the known-class head and the
separability yardstick), standardised over the novel nodes and projected on their first
``dims`` principal axes, cut by k-means with a fixed seed. No label is read. Each new group takes
the fit's novel id it overlaps most (a Hungarian matching), so ids keep their meaning where the
fit's cut and the re-cut agree.
"""
from __future__ import annotations

import torch

from .hungarian import contingency, max_assignment
from .kmeans import kmeans
from .separability import labelled_view

#: principal axes of the re-cut's view (``novel_recut_dims``' default)
RECUT_DIMS = 64


def novel_ids(class_id: torch.Tensor, num_known: int) -> torch.Tensor:
    """The distinct novel class ids of an answer, ascending."""
    return torch.unique(class_id[class_id >= num_known])


def recut_novel(class_id: torch.Tensor, x: torch.Tensor, edge_index: torch.Tensor,
                num_known: int, dims: int = RECUT_DIMS, seed: int = 0,
                restarts: int = 10) -> torch.Tensor:
    """``class_id`` with its novel nodes regrouped into as many groups by k-means on the
    fixed view (module docstring). Known nodes keep their ids; an answer with fewer than two
    novel classes, or no more novel nodes than classes, comes back unchanged."""
    class_id = class_id.cpu().long()
    ids = novel_ids(class_id, num_known)
    novel = (class_id >= num_known).nonzero().flatten()
    k = int(ids.numel())
    if k < 2 or novel.numel() <= k:
        return class_id
    z = labelled_view(x, edge_index, novel, dims=dims, seed=seed).double()
    cut, _, _ = kmeans(z, k, restarts=restarts, seed=seed)
    own = torch.searchsorted(ids, class_id[novel])  # the fit's novel ids as 0..k-1
    rows, cols = max_assignment(contingency(cut, own, k, k))
    to_id = torch.empty(k, dtype=torch.long)
    to_id[torch.as_tensor(rows, dtype=torch.long)] = ids[torch.as_tensor(cols, dtype=torch.long)]
    out = class_id.clone()
    out[novel] = to_id[cut]
    return out
