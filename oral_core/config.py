"""Every hyper-parameter of ORAL in one place (paper defaults where the paper gives them)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np


#: model-selection rules (``ORALConfig.selection``)
SELECTION_RULES = ("best_val", "last")
#: the supervised known-class heads of ``known_head`` (oral_core.known_head; "none": the paper)
KNOWN_HEADS = ("none", "sgc", "auto")
#: how Eq. 5-6 run over the edges (``ORALConfig.attention_kernel``)
ATTENTION_KERNELS = ("gather", "spmm")
#: the terms of OpenNCD that ``opennc_losses`` can add (oral_core.opennc_losses)
OPENNC_TERMS = ("proto", "group", "balance")
#: learning-rate schedules over a fit's epochs (``ORALConfig.lr_schedule``)
LR_SCHEDULES = ("constant", "cosine")
#: the ensemble groups whose confident nodes get pseudo-labels (``ORALConfig.pseudo_label_groups``)
PSEUDO_LABEL_GROUPS = ("all", "novel")


@dataclass
class ORALConfig:
    """Configuration of :class:`oral_core.trainer.ORAL`.

    Paper defaults: ``num_prototypes`` (N_pro) = 40, ``gamma`` = 0.3, ``mu`` = 0.015. The other
    values are our choices for what the paper leaves open (see the README's "Open choices").
    """

    # architecture
    num_layers: int = 3  # L stacked prototypical attention layers
    hidden_dim: int = 64
    num_prototypes: int = 40  # N_pro (paper)
    temperature: float = 0.1  # Eq. 1: softmax over cos(h, c) / temperature
    attention_temperature: float = 1.0  # Eq. 5: 1.0 is exactly the paper
    dropout: float = 0.5
    pan: bool = True  # False: GCN aggregation instead of group-aware attention (ablation)
    # Eq. 5-6 as PyG message passing ("gather": [E, D] messages, scatter-added) or as sparse
    # products on the edge pattern ("spmm": no [E, D] tensor); equal up to float summation order
    # (oral_core.attention.GroupAwareAttention; benchmarks/results/attention_kernels/attention_kernels.md). "spmm"
    # is 2x faster on graphs with many edges but stays an option: paired by seed it lost more than
    # a point of All on AmazonPhoto (benchmarks/results/fast_defaults/fast_paths.md)
    attention_kernel: str = "gather"
    # the first layer's input as a sparse (CSR) matrix when the share of non-zero features is
    # below this (full-batch training only; 0: always dense). Input dropout then draws one mask
    # value per stored feature instead of one per matrix entry: the same dropout distribution
    # (a zero feature stays zero whatever its mask), another random stream. Faster below about
    # 18% non-zero (oral_core.features); an option: paired by seed at 0.1 it lost more than a
    # point of All on BlogCatalog with the prior (benchmarks/results/sparse_input/sparse_input.md)
    sparse_input_below: float = 0.0
    # semi-supervised prototypical clustering (Eq. 3-4)
    top_k: int = 2  # association size for the Jaccard prototype graph
    resolution_min: float = 0.05
    resolution_max: float = 20.0
    resolution_steps: int = 30
    granularity_rule: str = "plateau"  # "plateau" or "best", see clustering.select_granularity
    granularity_tolerance: float = 0.01
    prior_num_classes: int | None = None  # the "with prior" setting: total class number
    cluster_warmup_epochs: int = 10  # singleton prototype groups before the first clustering
    cluster_every: int = 1  # re-cluster every this many epochs ...
    cluster_freeze_epoch: int | None = None  # ... and never again from this epoch on
    # the evaluation pass (groups, ensemble, pseudo-labels, refinement) every this many epochs;
    # 1 is the paper. The epochs between train on the last evaluated epoch's groups, pseudo-labels
    # and refined structure; the first and the final epoch are always evaluated (speed option)
    eval_every: int = 1
    # pseudo-label guided open-world learning (POL)
    pol: bool = True  # False: no pseudo-labels, refinement or consistency (ablation)
    pol_start_epoch: int = 30  # warm-up before pseudo-labels are used
    gamma: float = 0.3  # reliable pseudo-label ratio (paper)
    # which ensemble groups give pseudo-labels: "all" (the paper: every kept group) or "novel"
    # (only groups matched to no known class; known classes learn from their labels alone, so an
    # unlabelled node predicted in a known group is never trained towards it)
    pseudo_label_groups: str = "all"
    mu: float = 0.015  # recovered edge ratio (paper)
    # Eq. 11 removes E_-, the edges whose two ends carry different (pseudo-)labels (the paper).
    # False keeps them and only adds E_+: a wrongly split group keeps its internal edges
    remove_inter_edges: bool = True
    eta: float = 0.02  # Eq. 9 suppression threshold on mean group mass
    # Eq. 8 averages the layers ensemble_from_layer..L (1-based). 1, every layer, is the paper;
    # 2 leaves out layer 1, whose groups are scored on a projection of the raw features (no edge)
    ensemble_from_layer: int = 1
    refine_candidates_per_node: int = 128  # pair-sampling budget of Eq. 10-11
    pseudo_label_weight: float = 1.0  # weight of pseudo-labelled nodes in L_ce (Eq. 7)
    # OpenNCD's losses, which the paper does not describe (oral_core.opennc_losses): a prototype
    # similarity between positive pairs and a group similarity across two views from the first
    # epoch, and OpenNCD's group-prior balance (x10) in place of Eq. 2. False is the paper
    opennc_losses: bool = False
    opennc_pair_pool: int = 512  # nodes searched for an unlabelled node's nearest neighbour
    # which of OpenNCD's terms opennc_losses adds, "+"-joined from proto, group, balance (without
    # balance, Eq. 2 stays); all three is OpenNCD
    opennc_terms: str = "proto+group+balance"
    # the known-split check (a deviation, oral_core.novelty; None: off, the paper): a novel
    # group whose unlabelled nodes are, judged by the validation nodes it holds, at least this
    # share known-class nodes is suppressed like an Eq. 9 group; reported classes only. 0.5 (the
    # midpoint, not tuned) is the default since 2026-11-27, chosen by the proxies (README, "Open
    # choices")
    known_split_share: float | None = 0.5
    # repeat the known-split check until no novel group is suppressed (a deviation,
    # oral_core.novelty): the nodes of a suppressed group take their next most likely kept
    # group, which can be another novel group that then holds too many validation nodes itself;
    # False: one pass
    known_split_repeat: bool = False
    # the known-absorb check (a deviation, oral_core.novelty; None: off, the paper): a known
    # group whose unlabelled nodes are, judged by its validation nodes, less than this share
    # known-class nodes releases the excess (its least attached nodes) to the novel groups;
    # reported classes only; 0.5 by default since 2026-11-27, as known_split_share
    known_absorb_share: float | None = 0.5
    # its guard (a deviation, oral_core.novelty): a known group releases nothing when the nodes
    # it would release hold validation nodes standing for at least known_absorb_share of them
    # (they look known themselves); False: unguarded. On by default since 2026-11-27
    known_absorb_guard: bool = True
    # known-class fidelity (a deviation, oral_core.known_head; "none": the paper): "sgc" fits a
    # logistic regression on twice-propagated features to the labelled training nodes, and a
    # node ORAL keeps in a known class takes the head's known class (novel classes untouched);
    # "auto": the same head, used only when it scores higher on the validation nodes
    known_head: str = "none"
    # with a head: a node ORAL puts in a novel class or in none joins the head's class when the
    # head's probability reaches this (None: off)
    known_head_pull: float | None = None
    edge_drop_rate: float = 0.3  # adaptive edge dropping (GCA) for Eq. 12
    edge_drop_max: float = 0.7
    # loss weights (Eq. 13: all 1 in the paper)
    reg_weight: float = 1.0
    consistency_weight: float = 1.0
    # mini-batch training for graphs that do not fit full-batch (None: full batch, the default)
    batch_size: int | None = None  # seed nodes per optimiser step
    num_neighbors: int = 10  # neighbours sampled per node and layer (-1: all)
    batches_per_epoch: int | None = None  # None: every node is a seed once per epoch
    eval_chunk_edges: int = 1 << 21  # edges per chunk of the whole-graph evaluation pass
    # automatic mini-batch training (resolve_minibatch): with batch_size None, a training graph of
    # more than minibatch_above_edges edges (self loops included, as the full-batch forward
    # propagates them) trains in mini-batches of auto_batch_size seeds; None: never switch.
    # Full-batch memory grows about linearly with the edges (benchmarks/results/scale/scale.md, peak
    # resident set of a whole `oral run`, one CPU thread): 1.26 GB at 104k edges (10k nodes +
    # self loops), 5.42 GB at 1.07M (100k nodes), i.e. about 4.3 GB per million edges. 2M edges
    # (about 180k nodes at mean degree 10) thus peak near 9.4 GB, leaving about 15 GiB of a
    # 24 GiB host for the OS and other processes; 3M would need ~14 GB, a 1M-node graph (10.8M)
    # ~47 GB. A GPU with 80 GB can take a larger budget (--set minibatch_above_edges=N).
    minibatch_above_edges: int | None = 2_000_000
    auto_batch_size: int = 2048  # the batch size of the measured 1M-node run (6.6 GB)
    # on a CUDA device, a graph over minibatch_above_edges still trains full batch when the
    # estimated full-batch need (full_batch_gpu_bytes) fits this share of the GPU's memory: the
    # edge budget is sized for a 24 GiB host, and an 80-141 GB card fits a 1M-node graph
    # (39.4 GB on an H200, benchmarks/results/core_night/core_night.csv), where mini-batches of 2048 seeds
    # would take ~490 optimiser steps per epoch. None: the edge budget on GPUs too.
    gpu_memory_share: float | None = 0.8
    # optimisation
    # 200, not 100: the held-out-class proxy (labelled nodes only) prefers the last epoch of 200
    # over that of 100 or 150 (benchmarks/results/proxy/proxy_rules_*.md; the paper gives no number)
    epochs: int = 200
    lr: float = 0.005
    weight_decay: float = 5e-4
    # "constant": Adam at ``lr`` throughout (the paper names no schedule). "cosine" (a deviation):
    # the rate falls from ``lr`` to 0 along a half cosine over the fit's epochs, so the last
    # epochs barely move the parameters and the final model's groups settle instead of being one
    # draw from epochs that re-cluster differently every time (benchmarks/epoch_vote.py)
    lr_schedule: str = "constant"
    # early stopping (a deviation; the paper trains a fixed number of epochs): with a share such
    # as 0.02, the fit stops at the first epoch from pol_start_epoch + 10 on after which fewer
    # than that share of the nodes changed class (novel ids aligned by overlap) in each of the
    # last ``stop_patience`` epochs, and keeps that epoch as its last. No label is read. None:
    # train every epoch (the default; benchmarks/results/stop_rules/stop_rules.md)
    stop_when_stable: float | None = None
    stop_patience: int = 10
    # model selection: the epoch with the best accuracy on labelled validation nodes of known
    # classes, among epochs >= select_from_epoch (None: every epoch, the default). Setting it to
    # pol_start_epoch + 1 keeps only epochs whose parameters and structure have been through
    # pseudo-label learning (every module active; epoch e is evaluated after e optimiser steps).
    select_from_epoch: int | None = None
    # which epoch's model is kept: "last" (the final epoch, as the paper's Algorithm 1 predicts
    # after its training loop; OpenNCD and ORCA also report their final model; chosen by the
    # held-out-class proxy) or "best_val" (the epoch with the best validation accuracy, as above;
    # our default up to algorithm revision 4, which rewarded merging novel into known classes)
    selection: str = "last"
    seed: int = 0
    device: str = "auto"  # "auto": CUDA when present, else CPU
    progress: bool = True
    # warm start (not in the paper: see ORAL.fit's ``init``): a fit continued from a saved model
    # of an earlier snapshot of the same graph trains min(warm_epochs, epochs) epochs instead of
    # ``epochs``; cold fits ignore it. 10: the validation accuracy (labelled nodes of known
    # classes only) of warm runs on simulated Cora nights peaked there (benchmarks/warm_start.py,
    # its probe table in benchmarks/results/warm_start/warm_start.md)
    warm_epochs: int = 10

    @property
    def minibatch(self) -> bool:
        return self.batch_size is not None

    def resolutions(self) -> np.ndarray:
        """The geometric sweep of clustering resolutions."""
        return np.geomspace(self.resolution_min, self.resolution_max, self.resolution_steps)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ORALConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown ORAL configuration keys: {sorted(unknown)}")
        return cls(**values)

    def validate(self) -> None:
        """Raise ValueError for values outside their meaningful range."""
        checks = [
            (self.num_layers >= 1, "num_layers must be >= 1"),
            (self.num_prototypes >= 2, "num_prototypes must be >= 2"),
            (1 <= self.top_k <= self.num_prototypes, "top_k must be in [1, num_prototypes]"),
            (0 < self.gamma <= 1, "gamma must be in (0, 1]"),
            (0 <= self.mu <= 1, "mu must be in [0, 1]"),
            (0 <= self.eta < 1, "eta must be in [0, 1)"),
            (self.resolution_min > 0, "resolution_min must be > 0"),
            (self.resolution_min <= self.resolution_max, "resolution_max must be >= resolution_min"),
            (self.epochs >= 1, "epochs must be >= 1"),
            (1 <= self.ensemble_from_layer <= self.num_layers,
             "ensemble_from_layer must be in [1, num_layers]"),
            (self.temperature > 0, "temperature must be > 0"),
            (self.attention_temperature > 0, "attention_temperature must be > 0"),
            (0.0 <= self.sparse_input_below <= 1.0, "sparse_input_below must be in [0, 1]"),
            (self.attention_kernel in ATTENTION_KERNELS,
             f"attention_kernel must be one of {list(ATTENTION_KERNELS)}"),
            (self.prior_num_classes is None or self.prior_num_classes >= 1,
             "prior_num_classes must be >= 1"),
            (self.batch_size is None or self.batch_size >= 1, "batch_size must be >= 1 or None"),
            (self.num_neighbors == -1 or self.num_neighbors >= 1, "num_neighbors must be >= 1 or -1"),
            (self.batches_per_epoch is None or self.batches_per_epoch >= 1,
             "batches_per_epoch must be >= 1 or None"),
            (self.eval_chunk_edges >= 1, "eval_chunk_edges must be >= 1"),
            (self.opennc_pair_pool >= 2, "opennc_pair_pool must be >= 2"),
            (bool(self.opennc_terms) and set(self.opennc_terms.split("+")) <= set(OPENNC_TERMS)
             and len(self.opennc_terms.split("+")) == len(set(self.opennc_terms.split("+"))),
             f"opennc_terms must join distinct terms of {list(OPENNC_TERMS)} with '+'"),
            (self.minibatch_above_edges is None or self.minibatch_above_edges >= 1,
             "minibatch_above_edges must be >= 1 or None"),
            (self.auto_batch_size >= 1, "auto_batch_size must be >= 1"),
            (self.gpu_memory_share is None or 0 < self.gpu_memory_share <= 1,
             "gpu_memory_share must be in (0, 1] or None"),
            (self.select_from_epoch is None or 0 <= self.select_from_epoch <= self.epochs,
             "select_from_epoch must be in [0, epochs] or None"),
            (self.warm_epochs >= 1, "warm_epochs must be >= 1"),
            (self.stop_when_stable is None or 0.0 < self.stop_when_stable < 1.0,
             "stop_when_stable must be a share in (0, 1) or none"),
            (self.stop_patience >= 1, "stop_patience must be >= 1"),
            (self.known_split_share is None or self.known_split_share > 0,
             "known_split_share must be > 0 or none"),
            (self.known_absorb_share is None or 0 < self.known_absorb_share <= 1,
             "known_absorb_share must be in (0, 1] or none"),
            (self.known_head in KNOWN_HEADS, f"known_head must be one of {list(KNOWN_HEADS)}"),
            (self.known_head_pull is None or 0 < self.known_head_pull <= 1,
             "known_head_pull must be in (0, 1] or none"),
            (self.known_head_pull is None or self.known_head != "none",
             "known_head_pull needs a known_head"),
            (self.lr_schedule in LR_SCHEDULES,
             f"lr_schedule must be one of {list(LR_SCHEDULES)}"),
            (self.selection in SELECTION_RULES,
             f"selection must be one of {list(SELECTION_RULES)}"),
            (self.hidden_dim >= 1, "hidden_dim must be >= 1"),
            (0 <= self.dropout < 1, "dropout must be in [0, 1)"),
            (self.resolution_steps >= 1, "resolution_steps must be >= 1"),
            (self.granularity_rule in ("plateau", "best"),
             "granularity_rule must be 'plateau' or 'best'"),
            (self.granularity_tolerance >= 0, "granularity_tolerance must be >= 0"),
            (self.cluster_warmup_epochs >= 0, "cluster_warmup_epochs must be >= 0"),
            (self.cluster_every >= 1, "cluster_every must be >= 1"),
            (self.eval_every >= 1, "eval_every must be >= 1"),
            (self.eval_every == 1 or self.stop_when_stable is None,
             "eval_every > 1 needs stop_when_stable none (early stopping reads every epoch)"),
            (self.cluster_freeze_epoch is None or self.cluster_freeze_epoch >= 0,
             "cluster_freeze_epoch must be >= 0 or none"),
            (self.pol_start_epoch >= 0, "pol_start_epoch must be >= 0"),
            (self.pseudo_label_groups in PSEUDO_LABEL_GROUPS,
             f"pseudo_label_groups must be one of {list(PSEUDO_LABEL_GROUPS)}"),
            (self.refine_candidates_per_node >= 0, "refine_candidates_per_node must be >= 0"),
            (self.pseudo_label_weight >= 0, "pseudo_label_weight must be >= 0"),
            (0 <= self.edge_drop_rate <= 1, "edge_drop_rate must be in [0, 1]"),
            (0 <= self.edge_drop_max <= 1, "edge_drop_max must be in [0, 1]"),
            (self.reg_weight >= 0, "reg_weight must be >= 0"),
            (self.consistency_weight >= 0, "consistency_weight must be >= 0"),
            (self.lr > 0, "lr must be > 0"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"),
            (self.seed >= 0, "seed must be >= 0"),
        ]
        bad = [msg for ok, msg in checks if not ok]
        if bad:
            raise ValueError("invalid ORAL configuration: " + "; ".join(bad))


#: GPU memory of a full-batch fit per edge (self loops included) at the default width (3 layers
#: of 64 hidden units, 40 prototypes): 39.43 GiB peak over 10,795,998 edges of the 1M-node
#: synthetic graph on an H200 (``benchmarks/results/core_night/core_night.csv``), rounded up
GPU_BYTES_PER_EDGE = 4000


def full_batch_gpu_bytes(config: ORALConfig, num_nodes: int, num_edges: int,
                         num_features: int) -> int:
    """Estimated peak GPU memory of a full-batch fit: the measured bytes per edge, scaled by
    width and depth, plus the input features and their dropped copies (four float32 copies)."""
    scale = (config.hidden_dim / 64) * (config.num_layers / 3)
    return int(num_edges * GPU_BYTES_PER_EDGE * scale + 16 * num_nodes * num_features)


def resolve_minibatch(config: ORALConfig, num_nodes: int, num_edges: int,
                      num_features: int = 0,
                      gpu_memory: int | None = None) -> tuple[ORALConfig, str]:
    """The configuration a fit trains with, and why (one line for the log and the run).

    ``num_edges``: the edges a full-batch forward propagates over, i.e. the training graph's
    edges other than self loops plus one self loop per node (``ORAL.fit`` counts them). An
    explicit ``batch_size`` always wins; otherwise a graph of more than
    ``minibatch_above_edges`` edges trains in mini-batches of ``auto_batch_size`` seed nodes,
    and one within the budget (or any graph with the budget None) trains full batch, unchanged.
    ``gpu_memory``: the CUDA device's total bytes (None on CPU): a graph over the edge budget
    still trains full batch when :func:`full_batch_gpu_bytes` is within ``gpu_memory_share`` of
    it.
    """
    if config.batch_size is not None:
        return config, f"mini-batch, batch_size={config.batch_size} (set explicitly)"
    budget = config.minibatch_above_edges
    size = f"{num_nodes:,} nodes, {num_edges:,} edges with self loops"
    if budget is None:
        return config, f"full batch ({size}; automatic mini-batch off: minibatch_above_edges=None)"
    if num_edges <= budget:
        return config, f"full batch ({size} <= minibatch_above_edges={budget:,})"
    if gpu_memory and config.gpu_memory_share is not None:
        need = full_batch_gpu_bytes(config, num_nodes, num_edges, num_features)
        if need <= config.gpu_memory_share * gpu_memory:
            return config, (
                f"full batch ({size} > minibatch_above_edges={budget:,}, but the estimated "
                f"{need / 2**30:.1f} GiB fit gpu_memory_share={config.gpu_memory_share} of the "
                f"GPU's {gpu_memory / 2**30:.0f} GiB; --set gpu_memory_share=none for the edge "
                "budget)")
    return replace(config, batch_size=config.auto_batch_size), (
        f"mini-batch, batch_size={config.auto_batch_size} chosen automatically ({size} > "
        f"minibatch_above_edges={budget:,}; --set minibatch_above_edges=none for full batch)")
