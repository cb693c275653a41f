"""A fitted ORAL model as a file, and ensemble inference (Eq. 8-9) on any graph with it.

The file holds only tensors and plain Python values (``torch.load(..., weights_only=True)``
reads it; no pickled objects): the configuration, the selected parameters, each layer's
prototype partition (Eq. 3-4), the ensemble's layer alignment and suppression mask (Eq. 8-9) and
the class of every ensemble group. Applying it to another snapshot of the same graph keeps the
groups, so a class means the same thing on every night it is applied to.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .attention import ORALNetwork, with_self_loops
from .config import ORALConfig
from .known_head import head_probabilities, keep_known_fidelity
from .novelty import release_absorbed
from .pseudo_labels import ensemble_assignment, pad_assignments
from .sampling import CSR
from .trainer import payload_partitions

FORMAT = "oral-model/1"
#: Nodes per block of the ensemble step of :meth:`ORALModel.assign` (after the forward pass).
CHUNK_ROWS = 1_000_000


@dataclass
class Assignment:
    """Per node: class id (known ``0..K-1``, novel ``K..``), confidence, novelty."""

    class_id: torch.Tensor
    confidence: torch.Tensor
    is_novel: torch.Tensor
    num_classes: int


def class_name_of(class_id: int, class_names: list[str], num_known: int) -> str | None:
    """A known class keeps its name; a novel or unassigned class has none (its lineage id or
    label names it in the warehouse). The one rule of the pipeline's predictions
    (``tasks.predictions``) and of the registered model's pyfunc output."""
    return class_names[class_id] if 0 <= class_id < num_known and class_id < len(class_names) else None


def class_names_of(class_ids, class_names: list[str], num_known: int) -> list[str | None]:
    """:func:`class_name_of` for each of ``class_ids`` (any iterable of ints), looked up once
    per distinct id."""
    lookup: dict[int, str | None] = {}
    out = []
    for cid in class_ids:
        cid = int(cid)
        if cid not in lookup:
            lookup[cid] = class_name_of(cid, class_names, num_known)
        out.append(lookup[cid])
    return out


class ORALModel:
    """The selected state of a fitted :class:`~oral_core.trainer.ORAL`, ready to assign classes."""

    def __init__(self, payload: dict):
        if payload.get("format") != FORMAT:
            raise ValueError(f"not an ORAL model file (format {payload.get('format')!r}, expected {FORMAT!r})")
        self.payload = payload
        self.config = ORALConfig.from_dict(payload["config"])
        self.num_known = int(payload["num_known"])
        self.class_names = list(payload.get("class_names") or [])
        self.feature_mode = str(payload.get("feature_mode", "none"))
        cfg = self.config
        self.network = ORALNetwork(int(payload["in_dim"]), cfg.hidden_dim, cfg.num_layers,
                                   cfg.num_prototypes, cfg.temperature, cfg.attention_temperature,
                                   cfg.dropout, use_attention=cfg.pan,
                                   attention_kernel=cfg.attention_kernel)
        self.network.load_state_dict(payload["state_dict"])
        self.network.eval()
        self.partitions = payload_partitions(payload)
        self.perms = payload["ensemble"]["perms"]
        self.mask = payload["ensemble"]["mask"]
        self.group_class = payload["group_class"]
        # the known-absorb check's margins (None: off or nothing released; older files lack it)
        self.release_margin = payload.get("release_margin")
        # the known-class head (known_head; None: off, or a file from before it existed)
        self.known_head = payload.get("known_head")

    @classmethod
    def from_fit(cls, model, class_names: list[str] | None = None,
                 feature_mode: str = "none") -> "ORALModel":
        """From a fitted :class:`~oral_core.trainer.ORAL` (its selected epoch). ``class_names``
        name the known classes ``0..K-1``; ``feature_mode`` is the
        :func:`~oral_core.datasets.preprocess_features` mode the training features went through,
        applied again by :meth:`assign_raw`."""
        return cls(export_payload(model, class_names, feature_mode))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(self.payload, tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device = "cpu") -> "ORALModel":
        """Read a model file written by :meth:`save` (tensors and plain values only)."""
        payload = torch.load(Path(path), map_location=map_location, weights_only=True)
        return cls(payload)

    def assign_raw(self, x: torch.Tensor, edge_index: torch.Tensor,
                   chunk_size: int | None = CHUNK_ROWS) -> Assignment:
        """:meth:`assign` on raw features, preprocessed as at training time."""
        from .datasets import preprocess_features
        return self.assign(preprocess_features(x, self.feature_mode), edge_index,
                           chunk_size=chunk_size)

    @torch.no_grad()
    def assign(self, x: torch.Tensor, edge_index: torch.Tensor,
               chunk_size: int | None = CHUNK_ROWS) -> Assignment:
        """Eq. 3 per layer with the fitted partitions, then Eq. 8-9 with the fitted alignment.

        ``x`` must be preprocessed as during training (same feature width). After the network's
        forward pass, the ensemble (align, average, mask, argmax) runs on ``chunk_size`` nodes
        at a time (None: all at once): it is row by row, so the result is the same, and its
        ``[nodes, layers, groups]`` temporaries stay the size of one chunk. The outputs are
        filled into preallocated CPU tensors, one value per node.
        """
        if x.shape[1] != int(self.payload["in_dim"]):
            raise ValueError(f"the model expects {self.payload['in_dim']} features per node, got {x.shape[1]}")
        device = next(self.network.parameters()).device
        # layer by layer in chunks: no [edges, hidden] tensor, only the last layer's hidden kept
        n_nodes = x.shape[0]
        looped = with_self_loops(edge_index.to(device).long(), n_nodes)
        outs, _ = self.network.forward_chunked(x.to(device).float(), CSR.from_edge_index(looped, n_nodes),
                                               partitions=self.partitions)
        layers = [o.p for o in outs]
        n = layers[0].shape[0]
        step = n if chunk_size is None else int(chunk_size)
        if step < 1 and n:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        width = self.mask.numel()
        first = self.config.ensemble_from_layer - 1  # Eq. 8 over the layers the model was fitted with
        mask = self.mask.to(device)
        perms = [q.to(device) for q in self.perms]
        group_class = self.group_class.to(device)
        class_id = torch.empty(n, dtype=group_class.dtype)
        conf = torch.empty(n, dtype=layers[0].dtype)
        for start in range(0, n, max(step, 1)):
            rows = slice(start, min(n, start + step))
            padded = pad_assignments([p[rows] for p in layers])
            padded = [torch.nn.functional.pad(p, (0, width - p.shape[1])) if p.shape[1] < width
                      else p for p in padded]
            p_hat = ensemble_assignment(padded, perms, first) * mask
            group = (p_hat + 1e-12 * mask).argmax(dim=1)
            if self.release_margin is not None:
                group = release_absorbed(p_hat, group, group_class, self.release_margin,
                                         self.num_known)
            total = p_hat.sum(dim=1)
            conf[rows] = torch.where(
                total > 0, p_hat.gather(1, group[:, None]).squeeze(1) / total.clamp_min(1e-12),
                torch.zeros_like(total)).cpu()
            # a group that had no class at training time (suppressed there): unassigned (-1)
            cls = group_class[group]
            class_id[rows] = torch.where(cls < 0, torch.full_like(cls, -1), cls).cpu()
        if self.known_head is not None:  # known-class fidelity (oral_core.known_head)
            class_id = keep_known_fidelity(class_id, head_probabilities(self.known_head, x, edge_index),
                                           self.num_known, self.config.known_head_pull)
        return Assignment(class_id, conf, class_id >= self.num_known,
                          int(torch.unique(class_id[class_id >= 0]).numel()))


def export_payload(model, class_names: list[str] | None = None, feature_mode: str = "none") -> dict:
    """The weights-only payload of a fitted ORAL (its selected epoch)."""
    state = model.selected_state()
    return {
        "format": FORMAT,
        "config": model.config.to_dict(),
        "in_dim": int(model.network_.layers[0].lin.in_features),
        "num_known": int(model.num_known_),
        "class_names": list(class_names or []),
        "feature_mode": str(feature_mode),
        "epoch": int(state["epoch"]),
        # epochs of training behind the saved parameters (a warm start's count continues it)
        "trained_epochs": int(getattr(model, "trained_before_", 0)) + int(state["epoch"]),
        # consecutive warm fits behind the parameters since the last cold one (0: cold)
        "warm_nights": int(getattr(model, "warm_nights_", 0)),
        "val_accuracy": float(state["val_acc"]),
        # the batch size the fit trained with (None: full batch) and why: ``config`` is the one
        # asked for, whose batch_size stays None when the fit switched to mini-batches itself
        "train_batch_size": getattr(model, "train_config_", model.config).batch_size,
        "batch_reason": str(getattr(model, "batch_reason_", "")),
        "state_dict": {k: v.detach().cpu() for k, v in state["state"].items()},
        "partitions": [{"prototype_group": p.prototype_group.cpu(), "num_groups": int(p.num_groups),
                        "group_to_class": p.group_to_class.cpu(), "accuracy": float(p.accuracy),
                        "resolution": float(p.resolution)} for p in state["partitions"]],
        "ensemble": {"perms": [q.cpu() for q in state["ensemble"]["perms"]],
                     "mask": state["ensemble"]["mask"].cpu(),
                     "layer_groups": [int(g) for g in state["ensemble"]["layer_groups"]]},
        "group_class": state["group_class"].cpu(),
        "release_margin": (None if state.get("release_margin") is None
                           else state["release_margin"].cpu()),
        "known_head": _head_payload(state.get("known_head")),
    }


def _head_payload(head: dict | None) -> dict | None:
    """A known head's tensors on the CPU (None stays None)."""
    return None if head is None else {k: (v.cpu() if torch.is_tensor(v) else v)
                                      for k, v in head.items()}
