"""Every hyper-parameter of ORAL in one place (paper defaults where the paper gives them).

The fields of :class:`ORALConfig` come in five kinds (:data:`KINDS`), each field's
``metadata`` naming its kind, a one-line ``doc`` and the ``evidence`` for its default (a path in
this repository, or ''); :func:`config_fields` lists them, and ``python -m
benchmarks.defaults_table`` turns them into ``docs/defaults.md``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, NamedTuple

import numpy as np


#: model-selection rules (``ORALConfig.selection``)
SELECTION_RULES = ("best_val", "last")
#: the supervised known-class heads of ``known_head`` (oral_core.known_head; "none": the paper)
KNOWN_HEADS = ("none", "sgc", "auto")
#: the rows that standardise the known head's inputs (``known_head_scale``)
KNOWN_HEAD_SCALES = ("labelled", "all")
#: how Eq. 5-6 run over the edges (``ORALConfig.attention_kernel``)
ATTENTION_KERNELS = ("gather", "spmm")
#: the terms of OpenNCD that ``opennc_losses`` can add (oral_core.opennc_losses)
OPENNC_TERMS = ("proto", "group", "balance")
#: learning-rate schedules over a fit's epochs (``ORALConfig.lr_schedule``)
LR_SCHEDULES = ("constant", "cosine")
#: the ensemble groups whose confident nodes get pseudo-labels (``ORALConfig.pseudo_label_groups``)
PSEUDO_LABEL_GROUPS = ("all", "novel")
#: fields read only by the steps that finish the answer after training (``ORAL._answer_steps``:
#: the known head, the novel re-cut); an epoch's class ids do not see them
AFTER_TRAINING = ("known_head", "known_head_hops", "known_head_scale", "known_head_pull",
                  "novel_recut", "novel_recut_dims", "novel_recut_view", "novel_recut_parts")
#: what the novel re-cut cuts on, and how many classes it makes (``novel_recut_view``,
#: ``novel_recut_parts``; oral_core.recut)
RECUT_VIEWS = ("features", "embedding")
RECUT_PARTS = ("same", "silhouette")
#: switches removed from the method after their studies decided they stay off (issue 62), with
#: the value that meant off and the study: a saved configuration that has one at that value
#: loads as before (:meth:`ORALConfig.from_dict` drops it); at any other value it is refused
RETIRED = {"known_split_trim": (False, "benchmarks/results/known_split_trim/README.md"),
           "known_floor": (False, "benchmarks/results/known_floor/README.md")}

#: the kinds of ORALConfig fields, in the order of their sections:
#: "paper": a value the paper gives, or fixes by its own formulas (Eq. 13's unit weights);
#: "ablation": the module switches of the paper's Table 4;
#: "open": a choice the paper leaves open, and the one we made;
#: "deviation": a named switch that departs from the paper (its default may be the paper's);
#: "execution": how a fit runs (device, batches, kernels, speed options), not the method itself
KINDS = ("paper", "ablation", "open", "deviation", "execution")

_RESULTS = "benchmarks/results/"


def _setting(default: Any, kind: str, doc: str, evidence: str = ""):
    """A field of :class:`ORALConfig`: ``dataclasses.field(default=...)`` whose ``metadata``
    holds its kind (one of :data:`KINDS`), a one-line doc and the evidence for its default (a
    path relative to the repository root, or '')."""
    return field(default=default, metadata={"kind": kind, "doc": doc, "evidence": evidence})


@dataclass
class ORALConfig:
    """Configuration of :class:`oral_core.trainer.ORAL`.

    Paper defaults: ``num_prototypes`` (N_pro) = 40, ``gamma`` = 0.3, ``mu`` = 0.015. The other
    values are our choices for what the paper leaves open (see docs/method.md, "Open choices"),
    the named switches of every deviation from it, and execution options; each field's kind,
    doc and evidence are in its ``metadata`` (:func:`config_fields`, docs/defaults.md).
    """

    # ----------------------------------------------------------------------------- paper
    # values the paper gives (its hyper-parameter study, Figure 5: N_pro, gamma, mu) or fixes by
    # its own formulas (Eq. 13 sums its terms unweighted, Eq. 5 and 7 have no temperature or weight)
    num_prototypes: int = _setting(
        40, "paper", "N_pro, trainable prototypes per layer (Eq. 1-2); the paper's value",
        _RESULTS + "sensitivity/README.md")
    gamma: float = _setting(
        0.3, "paper", "reliable pseudo-label ratio: the top gamma of each kept group's unlabelled "
        "nodes by confidence get its label (Eq. 8-9)", _RESULTS + "sensitivity/README.md")
    mu: float = _setting(
        0.015, "paper", "recovered edge ratio: the mu share of sampled intra-group pairs with the "
        "lowest Eq. 10 similarity become E_+ (Eq. 11)", _RESULTS + "sensitivity/README.md")
    prior_num_classes: int | None = _setting(
        None, "paper", "the paper's \"with prior\" setting: the total class number the "
        "granularity search must reach; None: without the prior")
    reg_weight: float = _setting(
        1.0, "paper", "weight of L_reg (Eq. 2) in Eq. 13; 1 in the paper")
    consistency_weight: float = _setting(
        1.0, "paper", "weight of L_con (Eq. 12) in Eq. 13; 1 in the paper, 0 drops the term "
        "(a POL lever)", _RESULTS + "lever_table/lever_table.md")
    attention_temperature: float = _setting(
        1.0, "paper", "Eq. 5's softmax over group-assignment cosines divided by this; 1.0 is "
        "exactly the paper (0.3: a per-graph candidate of oral choose)",
        _RESULTS + "choose_temperature/README.md")
    pseudo_label_weight: float = _setting(
        1.0, "paper", "weight of pseudo-labelled nodes in L_ce (Eq. 7); 1 is the paper's sum "
        "over V", _RESULTS + "tuning/tuning_cora_pseudo_label_weight.md")

    # -------------------------------------------------------------------------- ablation
    pan: bool = _setting(
        True, "ablation", "the prototypical attention network; False: GCN propagation instead of "
        "group-aware attention, prototypes and groups kept (Table 4)",
        _RESULTS + "paper_tables/README.md")
    pol: bool = _setting(
        True, "ablation", "pseudo-label guided open-world learning; False: no pseudo-labels, "
        "structure refinement or consistency loss (Table 4)", _RESULTS + "paper_tables/README.md")

    # ------------------------------------------------------------------------------ open
    # what the paper leaves open, and what we chose (docs/method.md, "Open choices")
    num_layers: int = _setting(
        3, "open", "L, stacked prototypical attention layers",
        _RESULTS + "tuning/tuning_cora_num_layers_epochs.md")
    hidden_dim: int = _setting(64, "open", "width of every layer's projection")
    temperature: float = _setting(
        0.1, "open", "Eq. 1 as a softmax over cos(h, c) / temperature",
        _RESULTS + "tuning/tuning_cora_attention_temperature_temperature.md")
    dropout: float = _setting(0.5, "open", "dropout on each layer's input before its projection")
    top_k: int = _setting(
        2, "open", "association size k: each node counts for its top-k prototypes in the Jaccard "
        "prototype graph", _RESULTS + "tuning/tuning_cora_granularity_rule_top_k.md")
    resolution_min: float = _setting(
        0.05, "open", "lowest Leiden resolution of Eq. 4's granularity sweep (geometric)")
    resolution_max: float = _setting(
        20.0, "open", "highest Leiden resolution of the sweep")
    resolution_steps: int = _setting(30, "open", "resolutions in the sweep")
    eta: float = _setting(
        0.02, "open", "Eq. 9 suppression threshold on a group's mean mass (the paper names eta, "
        "not its value)", _RESULTS + "tuning/tuning_cora_eta.md")
    # untrained prototypes give an almost complete Jaccard graph, which Eq. 4 cuts into one group
    cluster_warmup_epochs: int = _setting(
        10, "open", "epochs of singleton prototype groups before the first clustering")
    pol_start_epoch: int = _setting(30, "open", "warm-up epochs before pseudo-labels are used")
    refine_candidates_per_node: int = _setting(
        128, "open", "pair-sampling budget of Eq. 10-11 per group node (exactly the paper's rule "
        "while n(n-1)/2 <= 128 n)")
    edge_drop_rate: float = _setting(
        0.3, "open", "adaptive edge dropping (GCA) for Eq. 12: the mean drop rate")
    edge_drop_max: float = _setting(
        0.7, "open", "adaptive edge dropping: the cap on an edge's rate")
    # 200, not 100: the held-out-class proxy (labelled nodes only) prefers the last epoch of 200
    # over that of 100 or 150
    epochs: int = _setting(
        200, "open", "training epochs (the paper gives no number); chosen by the held-out-class "
        "proxy", _RESULTS + "proxy/README.md")
    lr: float = _setting(
        0.005, "open", "Adam's learning rate; 0.01 and 0.0025 both behind on the proxy",
        _RESULTS + "choose_lr/README.md")
    weight_decay: float = _setting(5e-4, "open", "Adam's weight decay")

    # ------------------------------------------------------------------------- deviation
    # every departure from the paper is a named switch (docs/method.md, "Every deviation
    # switch"); "the paper" in a doc names the value that restores it
    # the raw maximum of Eq. 4 merged novel prototypes into known groups
    granularity_rule: str = _setting(
        "plateau", "deviation", "Eq. 4's granularity: \"plateau\" keeps the median resolution "
        "within granularity_tolerance of the best accuracy; \"best\" (the raw maximum) is the "
        "paper", _RESULTS + "tuning/tuning_cora_granularity_rule_top_k.md")
    granularity_tolerance: float = _setting(
        0.01, "deviation", "the plateau rule's tolerance on Eq. 4's accuracy (1 point)")
    # the finer end separated two planted classes on some Cora nights and split one on
    # AmazonPhoto's: it stays at the median
    granularity_position: float = _setting(
        0.5, "deviation", "where on the plateau the plateau rule takes its resolution: 0 the "
        "coarsest, 1 the finest, 0.5 the median", "benchmarks/results/granularity_proxy/README.md")
    novel_wholeness: float | None = _setting(
        None, "deviation", "split the plateau partition's novel groups at the finest swept "
        "resolution where every known group keeps at least this share of its nodes together; "
        "None: one resolution for every group, the paper")
    novel_wholeness_if: str = _setting(
        "always", "deviation", "when novel_wholeness applies: \"always\", or \"separable\": "
        "only in a fit whose known classes are separable in the propagated features, judged on "
        "the labelled training nodes before training (oral_core.separability)",
        _RESULTS + "novel_wholeness_separable/README.md")
    novel_recut: bool = _setting(
        False, "deviation", "after the fit, the novel nodes regrouped into as many classes by "
        "k-means on fixed propagated features (S^2 X on novel_recut_dims principal axes), so "
        "the cut does not depend on the model's seed (oral_core.recut); False is the paper",
        _RESULTS + "novel_recut/README.md")
    novel_recut_dims: int = _setting(
        64, "deviation", "principal axes of the novel re-cut's view of S^2 X (chosen by the "
        "agreement between seeds, label-free)", _RESULTS + "novel_recut/exploration.md")
    novel_recut_view: str = _setting(
        "features", "deviation", "what the novel re-cut cuts on: \"features\" (S^2 X, no "
        "training) or \"embedding\" (the selected model's last-layer h*, Eq. 6, "
        "ORAL.selected_embedding)", _RESULTS + "novel_recut_embedding/README.md")
    novel_recut_parts: str = _setting(
        "same", "deviation", "how many classes the novel re-cut makes: \"same\" (as many as "
        "the fit found) or \"silhouette\" (the count from max(2, n) to n + 4 whose k-means cut "
        "has the highest mean silhouette, label-free)", _RESULTS + "novel_recut_embedding/README.md")
    # the novel partition depends on the seed (benchmarks/results/seed_agreement)
    consensus_restarts: int = _setting(
        1, "deviation", "answer from this many fits of the same graph and split (model seeds "
        "seed, seed+1, ...): the known class most fits give a node, novel where most call it "
        "novel, novel nodes grouped by co-association (oral_core.consensus); 1, one fit, is the "
        "paper", _RESULTS + "consensus_restarts/README.md")
    consensus_linkage: str = _setting(
        "average", "deviation", "how a consensus groups the novel nodes: \"average\" merges "
        "groups while their mean co-association is above one half, \"components\" joins nodes a "
        "majority of fits put together, transitively, \"medoid\" answers with the one fit that "
        "agrees most with the others (oral_core.consensus)")
    cluster_every: int = _setting(
        1, "deviation", "re-cluster every this many epochs; 1 is the paper's Algorithm 1")
    cluster_freeze_epoch: int | None = _setting(
        None, "deviation", "never re-cluster from this epoch on (OpenNCD's schedule: 100); None: "
        "every epoch, the paper",
        _RESULTS + "proxy/proxy_compare_cora-noprior-cluster_freeze_epoch=100.md")
    # 2 leaves out layer 1, whose groups are scored on a projection of the raw features (no edge)
    ensemble_from_layer: int = _setting(
        1, "deviation", "Eq. 8 averages layers ensemble_from_layer..L (1-based); 1, every layer, "
        "is the paper", _RESULTS + "proxy/proxy_compare_cora-noprior-ensemble_from_layer=2.md")
    # "novel": known classes learn from their labels alone, so an unlabelled node predicted in a
    # known group is never trained towards it
    pseudo_label_groups: str = _setting(
        "all", "deviation", "which ensemble groups give pseudo-labels: \"all\" kept groups (the "
        "paper) or \"novel\" (only groups matched to no known class)",
        _RESULTS + "lever_table/lever_table.md")
    # False keeps E_-: a wrongly split group keeps its internal edges
    remove_inter_edges: bool = _setting(
        True, "deviation", "Eq. 11 removes E_-, the edges between different (pseudo-)labels "
        "(the paper); False only adds E_+", _RESULTS + "lever_table/lever_table.md")
    # OpenNCD's losses, which the paper builds on but does not describe (oral_core.opennc_losses):
    # a prototype similarity between positive pairs and a group similarity across two views from
    # the first epoch, and OpenNCD's group-prior balance (x10) in place of Eq. 2; they collapsed
    # the known classes on the full task
    opennc_losses: bool = _setting(
        False, "deviation", "add OpenNCD's losses (oral_core.opennc_losses); False is the paper",
        _RESULTS + "opennc_rows/README.md")
    opennc_pair_pool: int = _setting(
        512, "deviation", "OpenNCD's losses: nodes searched for an unlabelled node's nearest "
        "neighbour")
    opennc_terms: str = _setting(
        "proto+group+balance", "deviation", "which of OpenNCD's terms opennc_losses adds, "
        "\"+\"-joined (without balance, Eq. 2 stays); all three is OpenNCD")
    # the known-group checks act on the reported classes only (oral_core.novelty); 0.5 (the
    # midpoint, not tuned) and the guard are the defaults since 2026-11-27, chosen by the proxies
    known_split_share: float | None = _setting(
        0.5, "deviation", "the known-split check: suppress a novel group whose unlabelled nodes "
        "are, judged by its validation nodes, at least this share known; None: off, the paper",
        _RESULTS + "epoch_vote/README.md")
    known_split_repeat: bool = _setting(
        False, "deviation", "repeat the known-split check until it suppresses no novel group; "
        "False: one pass", _RESULTS + "split_repeat_proxy/README.md")
    known_absorb_share: float | None = _setting(
        0.5, "deviation", "the known-absorb check: a known group under this estimated known "
        "share releases its least attached excess to the novel groups; None: off, the paper",
        _RESULTS + "epoch_vote/README.md")
    known_absorb_guard: bool = _setting(
        True, "deviation", "guard of the known-absorb check: no release when the released nodes "
        "look known by their validation nodes; False: unguarded",
        _RESULTS + "epoch_vote/README.md")
    # "sgc": a logistic regression on twice-propagated features, fitted to the labelled training
    # nodes, relabels the nodes ORAL keeps in known classes (novel classes untouched); "auto": only
    # when it scores higher on the validation nodes (the nightly pipeline's default)
    known_head: str = _setting(
        "none", "deviation", "known-class fidelity (oral_core.known_head): \"sgc\", \"auto\" or "
        "\"none\" (the paper)", _RESULTS + "known_head/README.md")
    known_head_hops: int | None = _setting(
        2, "deviation", "propagation steps of the known head's features (S^hops X); None: chosen "
        "per fit among 0, 1, 2 by cross-validation on the labelled training nodes",
        _RESULTS + "known_head_hops/README.md")
    known_head_scale: str = _setting(
        "labelled", "deviation", "rows whose mean and spread standardise the known head's "
        "inputs: \"labelled\" (the training and validation nodes) or \"all\" (every node of "
        "the graph the head is fitted on, the nodes it will name)",
        _RESULTS + "known_head_scale/README.md")
    known_head_pull: float | None = _setting(
        None, "deviation", "with a known head: a node in a novel class or none joins the head's "
        "class at this probability; None: off", _RESULTS + "known_head/README.md")
    # "cosine": the last epochs barely move the parameters, so the final model's groups settle
    # instead of being one draw from epochs that re-cluster differently every time
    lr_schedule: str = _setting(
        "constant", "deviation", "\"constant\" Adam at lr (the paper names no schedule) or "
        "\"cosine\" (half cosine from lr to 0 over the fit)",
        _RESULTS + "epoch_vote/"
        "epoch_vote_compare_cora-noprior_vs_cora-noprior-lr_schedule=cosine.md")
    # no label is read; novel ids are aligned by overlap between epochs
    stop_when_stable: float | None = _setting(
        None, "deviation", "early stopping: stop from epoch pol_start_epoch + 10 once fewer than "
        "this share of the nodes changed class in each of the last stop_patience epochs; None: "
        "train every epoch, the paper", _RESULTS + "stop_rules/stop_rules.md")
    stop_patience: int = _setting(
        10, "deviation", "early stopping: the epochs that must each be stable",
        _RESULTS + "stop_rules/stop_rules.md")
    # pol_start_epoch + 1 keeps only epochs whose parameters and structure have been through
    # pseudo-label learning (epoch e is evaluated after e optimiser steps)
    select_from_epoch: int | None = _setting(
        None, "deviation", "selection=\"best_val\" considers epochs >= this only; None: every "
        "epoch", _RESULTS + "tuning/tuning_cora_select_from_epoch_rotate.md")
    # "best_val" was our default up to algorithm revision 4 and rewarded merging novel into known
    # classes; "last" is also what OpenNCD and ORCA report
    selection: str = _setting(
        "last", "deviation", "the epoch kept: \"last\" (the paper's Algorithm 1) or \"best_val\" "
        "(best accuracy on labelled validation nodes of known classes)",
        _RESULTS + "proxy/README.md")
    # 10: the validation accuracy (labelled nodes of known classes only) of warm runs on simulated
    # Cora nights peaked there (benchmarks/warm_start.py)
    warm_epochs: int = _setting(
        10, "deviation", "warm start (ORAL.fit's init, not in the paper): a fit continued from an "
        "earlier snapshot's model trains min(warm_epochs, epochs) epochs",
        _RESULTS + "warm_start/warm_start.md")

    # ------------------------------------------------------------------------- execution
    # how a fit runs; the speed options here that change results (sparse_input_below, eval_every,
    # mini-batches) are off by default here (the reproduction tables); the night turns on
    # attention_kernel="spmm" and sparse_input_below=0.1 (flows/params.py, PIPELINE_DEFAULTS)
    seed: int = _setting(
        0, "execution", "random seed of a fit (initialisation, dropout, sampling, clustering)")
    device: str = _setting(
        "auto", "execution", "torch device; \"auto\": CUDA when present, else CPU")
    progress: bool = _setting(True, "execution", "show a progress bar")
    # equal up to float summation order (oral_core.attention.GroupAwareAttention); "spmm" is 2x
    # faster on graphs with many edges; read against one seed it lost more than a point of All
    # on AmazonPhoto (fast_defaults/), against the defaults' own reseeded draws it held on five
    # graphs and is the night's default (fast_paths_draws/decision.md)
    attention_kernel: str = _setting(
        "gather", "execution", "Eq. 5-6 as PyG message passing (\"gather\") or as sparse "
        "products without an [E, D] tensor (\"spmm\")", _RESULTS + "fast_paths_draws/decision.md")
    # input dropout then draws one mask value per stored feature: the same dropout distribution,
    # another random stream; faster below about 18% non-zero (oral_core.features); at 0.1 it lost
    # more than a point of All on BlogCatalog with the prior against one seed (sparse_input/);
    # against the defaults' own reseeded draws it held on five graphs and is the night's default
    # (fast_paths_draws/decision.md)
    sparse_input_below: float = _setting(
        0.0, "execution", "the first layer's input as a sparse CSR matrix when the share of "
        "non-zero features is below this (full batch only; 0: always dense)",
        _RESULTS + "fast_paths_draws/decision.md")
    # the two views of a training step share their input mask, so the first layer's projection
    # and Eq. 1 scores are the same in both: computed once, the gradient of W summed before its
    # product with the input instead of after (equal up to float summation order)
    share_first_projection: bool = _setting(
        False, "execution", "speed option: the augmented view (Eq. 12) reuses the training "
        "view's first-layer projection W x and its Eq. 1 scores instead of computing them again",
        _RESULTS + "share_first_projection/README.md")
    # the epochs between train on the last evaluated epoch's groups, pseudo-labels and refined
    # structure; the first and the final epoch are always evaluated
    eval_every: int = _setting(
        1, "execution", "speed option: the evaluation pass (groups, ensemble, pseudo-labels, "
        "refinement) every this many epochs; 1 is the paper", _RESULTS + "eval_every/eval_every.md")
    batch_size: int | None = _setting(
        None, "execution", "mini-batch training: seed nodes per optimiser step; None: full batch "
        "(or automatic, minibatch_above_edges)", _RESULTS + "minibatch/README.md")
    num_neighbors: int = _setting(
        10, "execution", "mini-batch: neighbours sampled per node and layer (-1: all)")
    batches_per_epoch: int | None = _setting(
        None, "execution", "mini-batch: optimiser steps per epoch; None: every node a seed once "
        "per epoch", _RESULTS + "minibatch_one_step/README.md")
    shards: int = _setting(
        1, "execution", "data parallel (oral_core.data_parallel): every mini-batch cut into this "
        "many parts, each with its own random stream, the step's gradient their mean; under "
        "torch.distributed one part per worker (needs batch_size)")
    eval_chunk_edges: int = _setting(
        1 << 21, "execution", "edges per chunk of the whole-graph evaluation pass")
    # full-batch memory grows about linearly with the edges (peak resident set of a whole `oral
    # run`, one CPU thread): 1.26 GB at 104k edges, 5.42 GB at 1.07M, about 4.3 GB per million;
    # 2M edges peak near 9.4 GB, leaving about 15 GiB of a 24 GiB host. A GPU with 80 GB can take
    # a larger budget (--set minibatch_above_edges=N)
    minibatch_above_edges: int | None = _setting(
        2_000_000, "execution", "with batch_size None, a training graph of more edges (self "
        "loops included) trains in mini-batches of auto_batch_size; None: never switch",
        _RESULTS + "scale/scale.md")
    auto_batch_size: int = _setting(
        2048, "execution", "the batch size of the automatic switch (that of the measured 1M-node "
        "run, 6.6 GB)", _RESULTS + "scale/scale.md")
    # the edge budget is sized for a 24 GiB host, and an 80-141 GB card fits a 1M-node graph
    # (39.4 GB on an H200), where mini-batches of 2048 seeds would take ~490 steps per epoch
    gpu_memory_share: float | None = _setting(
        0.8, "execution", "on CUDA, a graph over minibatch_above_edges still trains full batch "
        "when full_batch_gpu_bytes fits this share of the GPU; None: the edge budget on GPUs too",
        _RESULTS + "core_night/core_night.csv")

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
        for name, (off, study) in RETIRED.items():
            if name in values and values[name] != off:
                raise ValueError(f"{name}={values[name]!r}: the switch was removed after its study "
                                 f"decided it stays off ({study}); this configuration needs a "
                                 f"revision before 2026-12-07")
        values = {k: v for k, v in values.items() if k not in RETIRED}
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
            (self.shards >= 1, "shards must be >= 1"),
            (self.novel_recut_dims >= 1, "novel_recut_dims must be >= 1"),
            (self.novel_recut_view in RECUT_VIEWS,
             f"novel_recut_view must be one of {list(RECUT_VIEWS)}"),
            (self.novel_recut_parts in RECUT_PARTS,
             f"novel_recut_parts must be one of {list(RECUT_PARTS)}"),
            (self.consensus_restarts >= 1, "consensus_restarts must be >= 1"),
            (self.consensus_linkage in ("components", "average", "medoid"),
             "consensus_linkage must be 'components', 'average' or 'medoid'"),
            (self.consensus_restarts == 1 or self.shards == 1,
             "consensus_restarts > 1 fits whole models one after another: use shards=1"),
            (self.shards == 1 or self.batch_size is not None,
             "shards > 1 splits mini-batches across workers: set batch_size too"),
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
            (self.known_head_hops is None or 0 <= self.known_head_hops <= 4,
             "known_head_hops must be in 0..4 or none"),
            (self.known_head_scale in KNOWN_HEAD_SCALES,
             f"known_head_scale must be one of {list(KNOWN_HEAD_SCALES)}"),
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
            (0 <= self.granularity_position <= 1, "granularity_position must be in [0, 1]"),
            (self.novel_wholeness is None or 0 < self.novel_wholeness <= 1,
             "novel_wholeness must be in (0, 1] or None"),
            (self.novel_wholeness_if in ("always", "separable"),
             "novel_wholeness_if must be 'always' or 'separable'"),
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



class ConfigField(NamedTuple):
    """One ORALConfig field as :func:`config_fields` lists it."""
    name: str
    default: Any
    kind: str  # one of KINDS
    doc: str  # one line
    evidence: str  # a path relative to the repository root, or ''


def config_fields(kind: str | None = None) -> list[ConfigField]:
    """The fields of :class:`ORALConfig` with their metadata, in declaration order (grouped by
    kind, as :data:`KINDS` orders them); only those of ``kind`` when given."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {list(KINDS)}")
    out = [ConfigField(f.name, f.default, f.metadata["kind"], f.metadata["doc"],
                       f.metadata["evidence"]) for f in fields(ORALConfig)]
    return [f for f in out if kind is None or f.kind == kind]

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
