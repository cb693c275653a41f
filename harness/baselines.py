"""The baselines of the paper's Table 2: GCN, VGAE + k-means and GCD on graphs.

Every baseline has the API of :class:`oral_core.trainer.ORAL`: ``Model(config).fit(x, edge_index,
train_labels, val_labels)`` then ``predict()``, which returns a :class:`~oral_core.trainer.Discovery`
in the harness's convention: known classes keep their index ``0..K-1`` (the split's known-class
order), every other predicted group gets a new id ``K, K+1, ...`` (largest first). ``train_labels`` /
``val_labels`` are long ``[N]`` with the known-class index on labelled nodes and -1 elsewhere;
hyper-parameters are fixed in each config dataclass and any selection (epoch, number of clusters)
uses the labelled *validation* nodes only — never a test label.

* :class:`GCNBaseline` (``gcn``): a two-layer GCN with cross-entropy on the labelled training
  nodes. Its output layer has one unit per known class, so it cannot name a novel class.
* :class:`VGAEKMeans` (``vgae_kmeans``): a variational graph auto-encoder trained without labels,
  then k-means on its embeddings with ``k`` = the class-number prior. Without the prior it is not
  applicable (:class:`NotApplicable`).
* :class:`GraphGCD` (``gcd``): Generalized Category Discovery (Vaze et al. 2022) with a GCN encoder:
  supervised contrastive loss on labelled nodes plus self-supervised contrastive loss between two
  augmented views of the graph, then semi-supervised k-means; without the prior, ``k`` is chosen
  by clustering accuracy on the labelled validation nodes.

Clusters of the k-means based methods are matched to the known classes by the Hungarian algorithm on
the labelled *training* nodes; unmatched clusters are the discovered novel classes.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, fields
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from oral_core.clustering import match_groups_to_classes
from oral_core.kmeans import kmeans, semi_supervised_kmeans, squared_distances
from oral_core.metrics import cluster_accuracy
from oral_core.trainer import Discovery, select_device


class NotApplicable(ValueError):
    """A baseline cannot run in the requested setting (e.g. k-means without the class number)."""


# ---------------------------------------------------------------------------------------- configs
@dataclass
class BaselineConfig:
    """Settings every baseline shares; the harness fills them from the run (seed, device, prior).

    ``prior_num_classes``: the "with prior" setting, the total number of classes.
    """

    NAME: ClassVar[str] = ""
    seed: int = 0
    device: str = "auto"  # "auto": CUDA when present, else CPU
    prior_num_classes: int | None = None

    def to_dict(self) -> dict:
        """Every field plus the method name (part of the run's configuration hash)."""
        return {"baseline": self.NAME, **asdict(self)}

    @classmethod
    def from_dict(cls, values: dict):
        values = {k: v for k, v in values.items() if k != "baseline"}
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown {cls.NAME} configuration keys: {sorted(unknown)}")
        return cls(**values)


@dataclass
class GCNConfig(BaselineConfig):
    """Two-layer GCN (Kipf & Welling 2017) for semi-supervised classification of the known classes.

    Kipf & Welling's settings except a wider hidden layer: Adam, ``lr`` 0.01, weight decay 5e-4,
    dropout 0.5. Model selection: the epoch with the best accuracy on the labelled validation nodes
    (earliest on ties); training stops after ``patience`` epochs without improvement.
    """

    NAME: ClassVar[str] = "gcn"
    hidden_dim: int = 64
    dropout: float = 0.5
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    patience: int = 50


@dataclass
class VGAEConfig(BaselineConfig):
    """VGAE (Kipf & Welling 2016) + k-means with ``k`` = the class-number prior.

    Encoder: GCN(F -> ``hidden_dim``) -> ReLU -> two GCN heads (mean, log std) of ``latent_dim``;
    inner-product decoder. Loss: reconstruction of every edge against as many uniformly drawn node
    pairs (negative sampling) plus ``KL / N``; Adam with ``lr`` for a fixed number of ``epochs``.
    No label is used for training and nothing is selected per run: k-means (``kmeans_restarts``
    k-means++ starts, the lowest inertia kept) runs on the mean embeddings of the final model,
    L2-normalised when ``normalize``.

    Defaults: Kipf & Welling's lr 0.01, but wider and longer than their 32 / 16 / 200 epochs, and
    normalised embeddings: chosen on the clustering accuracy of the labelled *validation* nodes
    of Cora, seeds 0 and 1 (no test label): 32/16/200 raw 0.44/-, normalised 0.54/0.45;
    64/32/200 0.66/0.65; 128/64/200 0.65/0.67; 64/32/400 0.70/0.67 (kept).
    """

    NAME: ClassVar[str] = "vgae_kmeans"
    hidden_dim: int = 64
    latent_dim: int = 32
    lr: float = 0.01
    epochs: int = 400
    normalize: bool = True
    kmeans_restarts: int = 10
    kmeans_iterations: int = 100


@dataclass
class GCDConfig(BaselineConfig):
    """GCD (Vaze et al. 2022) with a two-layer GCN encoder instead of a ViT.

    Encoder GCN(F -> ``hidden_dim``) -> ReLU -> GCN(-> ``out_dim``); a two-layer MLP projection head
    (``proj_dim``) feeds the losses. Every step draws two views of the graph (each drops feature
    columns with probability ``feature_mask`` and edges with probability ``edge_drop``) and
    minimises ``(1 - sup_weight) * L_self + sup_weight * L_sup`` on a random batch of
    ``batch_size`` nodes: ``L_self`` is InfoNCE between the two views of every node in the batch,
    ``L_sup`` the supervised contrastive loss of the batch's labelled training nodes (positives:
    same class, both views). ``sup_weight`` = 0.35 as in GCD; both temperatures ``temperature``.
    Fixed ``epochs`` (no selection on epochs).

    Clustering: L2-normalised encoder outputs, semi-supervised k-means (training nodes fixed to
    their class, known centroids initialised from them, novel ones by k-means++ on the rest;
    ``kmeans_restarts`` starts, lowest inertia kept). With the prior ``k`` is the class number.
    Without it, as GCD's estimator, plain k-means is run for every ``k`` in
    ``num_known .. num_known + k_search_extra`` (``k_search_restarts`` starts each) and the ``k``
    with the best clustering accuracy on the labelled *validation* nodes (Hungarian on those nodes
    only; smallest ``k`` on ties) is kept; it is the class-number estimate.
    """

    NAME: ClassVar[str] = "gcd"
    hidden_dim: int = 128
    out_dim: int = 64
    proj_dim: int = 64
    feature_mask: float = 0.3
    edge_drop: float = 0.3
    temperature: float = 0.5
    sup_weight: float = 0.35
    batch_size: int = 1024
    lr: float = 0.001
    weight_decay: float = 1e-5
    epochs: int = 200
    kmeans_restarts: int = 10
    kmeans_iterations: int = 100
    k_search_extra: int = 10
    k_search_restarts: int = 3


def clusters_to_classes(cluster: torch.Tensor, num_clusters: int, train_labels: torch.Tensor,
                        num_known: int) -> torch.Tensor:
    """Per node class id: clusters matched to a known class by the Hungarian algorithm on the
    labelled training nodes take its index, the other non-empty clusters ids ``num_known, ...``
    (largest cluster first)."""
    cluster, train_labels = cluster.cpu().long(), train_labels.cpu().long()
    labelled = train_labels >= 0
    g2c, _ = match_groups_to_classes(cluster[labelled], train_labels[labelled], num_clusters,
                                     num_known)
    size = torch.bincount(cluster, minlength=num_clusters)
    novel = ((g2c < 0) & (size > 0)).nonzero().flatten()
    novel = novel[torch.argsort(size[novel], descending=True, stable=True)]
    g2c[novel] = num_known + torch.arange(novel.numel())
    return g2c[cluster]


def _val_cluster_accuracy(pred: torch.Tensor, val_labels: torch.Tensor | None) -> float:
    """Clustering accuracy (Hungarian) on the labelled validation nodes only."""
    if val_labels is None or not bool((val_labels >= 0).any()):
        return float("nan")
    has = val_labels.cpu() >= 0
    return cluster_accuracy(val_labels.cpu()[has], pred.cpu()[has])


def _soft_confidence(z: torch.Tensor, centres: torch.Tensor, assign: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(-squared_distances(z.detach().cpu().float(), centres.cpu()), dim=1)
    return p.gather(1, assign.cpu()[:, None]).squeeze(1)


def _check_inputs(x: torch.Tensor, train_labels: torch.Tensor) -> int:
    if train_labels.shape[0] != x.shape[0]:
        raise ValueError(f"train_labels has {train_labels.shape[0]} entries for {x.shape[0]} nodes")
    if int((train_labels >= 0).sum()) == 0:
        raise ValueError("no labelled training node")
    return int(train_labels.max()) + 1


class _Baseline:
    """Shared ``__init__`` / ``predict`` of the baselines."""

    Config: ClassVar[type] = BaselineConfig
    requires_prior: ClassVar[bool] = False

    def __init__(self, config: BaselineConfig | None = None, **overrides):
        config = copy.deepcopy(config) if config is not None else self.Config()
        for key, value in overrides.items():
            if not hasattr(config, key):
                raise ValueError(f"unknown {config.NAME} configuration key: {key!r}")
            setattr(config, key, value)
        self.config = config
        self.network_: nn.Module | None = None
        self._found: Discovery | None = None

    def predict(self) -> Discovery:
        if self._found is None:
            raise RuntimeError(f"{type(self).__name__}.predict() called before fit()")
        return self._found


# ---------------------------------------------------------------------------------------- GCN
class _GCN(nn.Module):
    """Two GCN layers (Kipf and Welling) with dropout: the Table 2 GCN baseline's network.

    Args:
        in_dim (int): ``F``, the number of node features.
        hidden (int): size of the hidden layer.
        out_dim (int): ``C``, one logit per known class.
        dropout (float): dropout on the input and on the hidden layer, in training mode.

    Shapes:
        - **input:** node features ``(N, F)``, edge indices ``(2, E)``
        - **output:** class logits ``(N, C)``
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv1, self.conv2 = GCNConv(in_dim, hidden), GCNConv(hidden, out_dim)
        self.dropout = dropout

    def forward(self, x, edge_index):
        x = F.dropout(x, self.dropout, self.training)
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, self.dropout, self.training)
        return self.conv2(x, edge_index)


class GCNBaseline(_Baseline):
    """Semi-supervised GCN on the known classes (see :class:`GCNConfig`)."""

    Config = GCNConfig

    def fit(self, x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
            val_labels: torch.Tensor | None = None) -> "GCNBaseline":
        cfg = self.config
        num_known = _check_inputs(x, train_labels)
        torch.manual_seed(cfg.seed)
        device = select_device(cfg.device)
        x, edge_index = x.to(device).float(), edge_index.to(device).long()
        y = train_labels.to(device).long()
        val = (val_labels if val_labels is not None else torch.full_like(train_labels, -1)).to(device)
        tr, has_val = y >= 0, val >= 0
        net = _GCN(x.shape[1], cfg.hidden_dim, num_known, cfg.dropout).to(device)
        self.network_ = net
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        best_acc, best_epoch, best_state = -1.0, -1, None
        for epoch in range(cfg.epochs):
            net.train()
            opt.zero_grad()
            F.cross_entropy(net(x, edge_index)[tr], y[tr]).backward()
            opt.step()
            net.eval()
            with torch.no_grad():
                pred = net(x, edge_index).argmax(dim=1)
            acc = float((pred[has_val] == val[has_val]).float().mean()) if has_val.any() else 0.0
            if acc > best_acc or not has_val.any():  # no validation nodes: the last epoch
                best_acc, best_epoch = acc, epoch
                best_state = copy.deepcopy(net.state_dict())
            elif epoch - best_epoch >= cfg.patience:
                break
        net.load_state_dict(best_state)
        net.eval()
        with torch.no_grad():
            prob = torch.softmax(net(x, edge_index), dim=1).cpu()
        conf, class_id = prob.max(dim=1)
        self._found = Discovery(class_id, conf, class_id >= num_known, num_known, num_known, [],
                                best_epoch, best_acc if has_val.any() else float("nan"))
        return self


# ---------------------------------------------------------------------------------------- VGAE
class _VGAEEncoder(nn.Module):
    """The VGAE encoder (Kipf and Welling, 2016): a shared GCN layer, then GCN layers for the mean
    and the log standard deviation of each node's latent Gaussian.

    Args:
        in_dim (int): ``F``, the number of node features.
        hidden (int): size of the shared hidden layer.
        latent (int): ``D``, size of the latent space (clustered by k-means afterwards).

    Shapes:
        - **input:** node features ``(N, F)``, edge indices ``(2, E)``
        - **output:** ``(mu, logstd)``, each ``(N, D)``
    """

    def __init__(self, in_dim: int, hidden: int, latent: int):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv = GCNConv(in_dim, hidden)
        self.mu, self.logstd = GCNConv(hidden, latent), GCNConv(hidden, latent)

    def forward(self, x, edge_index):
        h = F.relu(self.conv(x, edge_index))
        return self.mu(h, edge_index), self.logstd(h, edge_index)


class VGAEKMeans(_Baseline):
    """Unsupervised VGAE embeddings clustered by k-means with ``k`` = the prior (:class:`VGAEConfig`)."""

    Config = VGAEConfig
    requires_prior = True

    def fit(self, x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
            val_labels: torch.Tensor | None = None) -> "VGAEKMeans":
        from torch_geometric.nn import VGAE
        cfg = self.config
        if cfg.prior_num_classes is None:
            raise NotApplicable(not_applicable_reason("vgae_kmeans", False))
        num_known = _check_inputs(x, train_labels)
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed)
        device = select_device(cfg.device)
        x, edge_index = x.to(device).float(), edge_index.to(device).long()
        n = x.shape[0]
        model = VGAE(_VGAEEncoder(x.shape[1], cfg.hidden_dim, cfg.latent_dim)).to(device)
        self.network_ = model
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        for _ in range(cfg.epochs):
            model.train()
            opt.zero_grad()
            z = model.encode(x, edge_index)
            neg = torch.randint(n, edge_index.shape, generator=gen).to(device)  # negative pairs
            loss = model.recon_loss(z, edge_index, neg) + model.kl_loss() / n
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            z = model.encode(x, edge_index)  # the mean embedding in eval mode
        if cfg.normalize:
            z = F.normalize(z, dim=1)
        k = int(cfg.prior_num_classes)
        assign, centres, _ = kmeans(z, k, cfg.kmeans_restarts, cfg.kmeans_iterations, cfg.seed)
        class_id = clusters_to_classes(assign, k, train_labels, num_known)
        self.embedding = z.cpu()
        self._found = Discovery(class_id, _soft_confidence(z, centres, assign), class_id >= num_known,
                                k, num_known, [], -1, _val_cluster_accuracy(class_id, val_labels))
        return self


# ---------------------------------------------------------------------------------------- GCD
class _GCDNetwork(nn.Module):
    """The graph GCD baseline's backbone: two GCN layers (the second without activation) and an
    MLP projection head for the contrastive losses.

    Args:
        in_dim (int): ``F``, the number of node features.
        hidden (int): size of the hidden GCN layer.
        out_dim (int): ``D``, size of the node embeddings (clustered afterwards).
        proj_dim (int): size of the projection head's output.

    Shapes:
        - **input:** node features ``(N, F)``, edge indices ``(2, E)``
        - **output:** embeddings ``(N, D)``; :attr:`head` maps ``(N, D)`` to ``(N, proj_dim)``
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, proj_dim: int):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv1, self.conv2 = GCNConv(in_dim, hidden), GCNConv(hidden, out_dim)
        self.head = nn.Sequential(nn.Linear(out_dim, proj_dim), nn.ReLU(), nn.Linear(proj_dim, proj_dim))

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


def supervised_contrastive_loss(z: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
    """SupCon (Khosla et al. 2020) of L2-normalised rows ``z``: every other row with the same label
    is a positive. With each label shared by exactly the two views of one item, this is InfoNCE
    (NT-Xent)."""
    z = F.normalize(z, dim=1)
    sim = z @ z.t() / temperature
    eye = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(eye, float("-inf"))
    log_prob = (sim - torch.logsumexp(sim, dim=1, keepdim=True)).masked_fill(eye, 0.0)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    n_pos = pos.sum(dim=1)
    per_row = -(log_prob * pos).sum(dim=1) / n_pos.clamp_min(1)
    return per_row[n_pos > 0].mean() if bool((n_pos > 0).any()) else z.new_zeros(())


def _augment(x: torch.Tensor, edge_index: torch.Tensor, feature_mask: float, edge_drop: float,
             gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One view: feature columns dropped with probability ``feature_mask``, edges with ``edge_drop``."""
    cols = (torch.rand(x.shape[1], generator=gen) >= feature_mask).to(x.device, x.dtype)
    keep = (torch.rand(edge_index.shape[1], generator=gen) >= edge_drop).to(edge_index.device)
    return x * cols, edge_index[:, keep]


class GraphGCD(_Baseline):
    """GCD with a GCN encoder and semi-supervised k-means (:class:`GCDConfig`).

    After ``fit``: ``k_sweep`` holds ``(k, validation clustering accuracy)`` for every ``k`` tried
    (empty with the prior), ``embedding`` the clustered node features.
    """

    Config = GCDConfig

    def fit(self, x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
            val_labels: torch.Tensor | None = None) -> "GraphGCD":
        cfg = self.config
        num_known = _check_inputs(x, train_labels)
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed)
        device = select_device(cfg.device)
        x, edge_index = x.to(device).float(), edge_index.to(device).long()
        y = train_labels.to(device).long()
        n = x.shape[0]
        net = _GCDNetwork(x.shape[1], cfg.hidden_dim, cfg.out_dim, cfg.proj_dim).to(device)
        self.network_ = net
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        for _ in range(cfg.epochs):
            net.train()
            opt.zero_grad()
            v1 = net.head(net(*_augment(x, edge_index, cfg.feature_mask, cfg.edge_drop, gen)))
            v2 = net.head(net(*_augment(x, edge_index, cfg.feature_mask, cfg.edge_drop, gen)))
            batch = torch.randperm(n, generator=gen)[:cfg.batch_size].to(device)
            ids = torch.arange(batch.numel(), device=device)
            l_self = supervised_contrastive_loss(torch.cat([v1[batch], v2[batch]]),
                                                 torch.cat([ids, ids]), cfg.temperature)
            lab = batch[y[batch] >= 0]
            l_sup = supervised_contrastive_loss(torch.cat([v1[lab], v2[lab]]),
                                                torch.cat([y[lab], y[lab]]), cfg.temperature)
            ((1 - cfg.sup_weight) * l_self + cfg.sup_weight * l_sup).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            z = F.normalize(net(x, edge_index), dim=1).cpu()
        self.embedding = z
        self.k_sweep: list[tuple[int, float]] = []
        if cfg.prior_num_classes is not None:
            k = int(cfg.prior_num_classes)
        else:
            k = self.estimate_k(z, val_labels, num_known)
        assign, centres, _ = semi_supervised_kmeans(z, k, train_labels, cfg.kmeans_restarts,
                                                    cfg.kmeans_iterations, cfg.seed)
        class_id = clusters_to_classes(assign, k, train_labels, num_known)
        score = (dict(self.k_sweep)[k] if self.k_sweep
                 else _val_cluster_accuracy(class_id, val_labels))
        self._found = Discovery(class_id, _soft_confidence(z, centres, assign), class_id >= num_known,
                                k, num_known, [], -1, score)
        return self

    def estimate_k(self, z: torch.Tensor, val_labels: torch.Tensor | None, num_known: int) -> int:
        """GCD's class-number estimate: the ``k`` in ``num_known .. num_known + k_search_extra``
        whose plain k-means clustering is most accurate on the labelled validation nodes."""
        cfg = self.config
        if val_labels is None or not bool((val_labels >= 0).any()):
            raise ValueError("gcd without the prior needs labelled validation nodes to choose k")
        top = min(num_known + cfg.k_search_extra, z.shape[0])
        self.k_sweep = []
        for k in range(num_known, top + 1):
            assign, _, _ = kmeans(z, k, cfg.k_search_restarts, cfg.kmeans_iterations, cfg.seed + k)
            self.k_sweep.append((k, _val_cluster_accuracy(assign, val_labels)))
        best = max(acc for _, acc in self.k_sweep)
        return min(k for k, acc in self.k_sweep if acc == best)


# ---------------------------------------------------------------------------------------- registry
BASELINES: dict[str, type[_Baseline]] = {"gcn": GCNBaseline, "vgae_kmeans": VGAEKMeans,
                                         "gcd": GraphGCD}


def not_applicable_reason(method: str, prior: bool) -> str | None:
    """Why ``method`` cannot run in this prior setting, or ``None`` when it can."""
    cls = BASELINES.get(method)
    if cls is not None and cls.requires_prior and not prior:
        return (f"{method} is not applicable without the class-number prior: k-means needs the "
                f"number of classes (the paper reports it with the prior only)")
    return None


def baseline_config(method: str, seed: int, device: str, prior_num_classes: int | None):
    """The configuration of baseline ``method`` for one seed, device and prior setting.

    Raises :class:`NotApplicable` for a setting the method does not support.
    """
    reason = not_applicable_reason(method, prior_num_classes is not None)
    if reason:
        raise NotApplicable(reason)
    return BASELINES[method].Config(seed=seed, device=device, prior_num_classes=prior_num_classes)
