"""Training and ensemble inference of ORAL (Algorithm 1, Eq. 7 and Eq. 13).

Each epoch:

1. an evaluation pass (no dropout, no gradient) re-clusters every layer's prototypes (Eq. 3-4),
   ensembles the layers (Eq. 8-9) and scores the labelled validation nodes of known classes,
   which is the only signal model selection sees;
2. with pseudo-label guidance on (after a warm-up), reliable pseudo-labels are drawn from that
   ensemble and the original structure is refined (Eq. 10-11);
3. a training pass on the refined structure, and one on an adaptively edge-dropped view of it,
   give ``L = L_ce + L_reg + L_con`` (Eq. 13), and the parameters take one optimiser step.
"""
from __future__ import annotations

import contextlib
import copy
import logging
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .attention import LayerOutput, ORALNetwork, with_self_loops
from .clustering import (Partition, finest_partition, match_groups_to_classes,
                         semi_supervised_prototypical_clustering)
from . import data_parallel
from .config import ORALConfig, resolve_minibatch
from .consistency import adaptive_edge_drop, consistency_loss, sampled_edge_drop
from .features import input_dropout, is_sparse, network_input
from .prototypes import balance_regulariser
from .pseudo_labels import Ensemble, ensemble_layers, novel_groups_only, select_confident
from .refinement import refine_structure
from .graph import is_canonical
from .recut import recut_novel
from .known_head import fit_known_head, head_probabilities, keep_known_fidelity
from .separability import known_separability
from .novelty import known_split_groups, release_absorbed, release_margins
from .opennc_losses import opennc_terms
from .sampling import CSR, mini_batches, sample_subgraph

log = logging.getLogger(__name__)


class Stopwatch:
    """Seconds spent per named section of an epoch (the profile of ``benchmarks.profile``).

    On CUDA the device is synchronised at each section's end so that asynchronous kernels are
    charged to the section that launched them.
    """

    def __init__(self, device: torch.device):
        self.sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        self.totals: dict[str, float] = {}

    @contextlib.contextmanager
    def section(self, name: str):
        self.sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.sync()
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.totals[name] = self.totals.get(name, 0.0) + seconds

    def take(self) -> dict[str, float]:
        """The totals since the last call, as ``t_<section>`` keys, then reset."""
        out = {f"t_{k}": v for k, v in self.totals.items()}
        self.totals = {}
        return out


def select_device(requested: str = "auto") -> torch.device:
    """CUDA when present (``auto``), else CPU; an explicit request is honoured or refused."""
    if requested == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        why = "CUDA is available" if device.type == "cuda" else "no CUDA device found"
    else:
        device = torch.device(requested)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"device {requested!r} requested but CUDA is not available")
        why = "requested"
    log.info("ORAL runs on %s (%s)", device, why)
    return device


@dataclass
class Discovery:
    """Ensemble inference (Eq. 8-9) for every node of the fitted graph.

    ``class_id``: known classes keep their index ``0..num_known-1``; discovered novel classes get
    new ids ``num_known, num_known+1, ...`` (largest first). ``confidence`` is the suppressed
    ensemble probability of the predicted class, renormalised over the kept groups.
    """

    class_id: torch.Tensor
    confidence: torch.Tensor
    is_novel: torch.Tensor
    num_classes: int
    num_known: int
    layer_class_ids: list[torch.Tensor] = field(default_factory=list)
    epoch: int = -1
    val_accuracy: float = float("nan")


def ensemble_classes(ens: Ensemble, labels: torch.Tensor, num_known: int) -> torch.Tensor:
    """Class id of every ensemble group: known id when matched on labelled nodes (Eq. 4 applied to
    the ensemble), consecutive new ids from ``num_known`` upwards for the other kept groups that
    some node falls in (largest mass first), -1 for suppressed or empty groups."""
    g = ens.p.shape[1]
    pred = (ens.p + 1e-12 * ens.mask).argmax(dim=1).cpu()
    labelled = labels >= 0
    g2c, _ = match_groups_to_classes(pred[labelled], labels[labelled], g, num_known)
    g2c[ens.mask.cpu() == 0] = -1
    predicted = torch.bincount(pred, minlength=g) > 0  # a kept group no node falls in gets no id
    novel = ((g2c < 0) & (ens.mask.cpu() > 0) & predicted).nonzero().flatten()
    mass = ens.p.sum(dim=0).cpu()[novel]
    novel = novel[torch.argsort(mass, descending=True, stable=True)]
    g2c[novel] = num_known + torch.arange(novel.numel())
    return g2c


def discover(ens: Ensemble, group_class: torch.Tensor, num_known: int,
             release: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Per node: class id, confidence and novelty from the suppressed ensemble; ``release``:
    the known-absorb check's margins (:func:`~oral_core.novelty.release_margins`), None: off."""
    scores = ens.p + 1e-12 * ens.mask
    group = scores.argmax(dim=1)
    if release is not None:
        group = release_absorbed(ens.p, group, group_class, release, num_known)
    total = ens.p.sum(dim=1)
    conf = torch.where(total > 0, ens.p.gather(1, group[:, None]).squeeze(1) / total.clamp_min(1e-12),
                       torch.zeros_like(total))
    class_id = group_class.to(group.device)[group]
    return class_id, conf, class_id >= num_known


def layer_classes(outputs: list[LayerOutput], partitions: list[Partition], num_known: int):
    """Each layer's own prediction (for the per-layer study): matched groups take the known id,
    unmatched group ``g`` gets ``num_known + g``."""
    result = []
    for out, part in zip(outputs, partitions):
        g = out.p.argmax(dim=1).cpu()
        g2c = part.group_to_class.clone()
        unmatched = g2c < 0
        g2c[unmatched] = num_known + unmatched.nonzero().flatten()
        result.append(g2c[g])
    return result


class ORAL:
    """Open-world gRAph neuraL network: ``fit`` on a graph with partial labels, then ``predict``.

    Example::

        model = ORAL(ORALConfig(epochs=200)).fit(x, edge_index, train_labels, val_labels)
        found = model.predict()   # Discovery: class ids, confidences, number of classes

    ``train_labels`` / ``val_labels`` are long ``[N]`` with the known class index ``0..K-1`` on
    labelled nodes and -1 elsewhere. Validation labels are used for model selection only.

    What a fit learns ends in an underscore, as scikit-learn's estimators have it: ``history_``
    (a row per epoch), ``network_``, ``discoveries_`` (the answer of each selection rule),
    ``num_known_``, ``epochs_run_``, ``train_config_`` and ``batch_reason_`` (mini-batches or
    not, and why), ``known_head_used_``, ``novel_wholeness_used_`` and ``separability_``.
    """

    def __init__(self, config: ORALConfig | None = None, **overrides):
        config = copy.deepcopy(config) if config is not None else ORALConfig()
        for key, value in overrides.items():
            if not hasattr(config, key):
                raise ValueError(f"unknown ORAL configuration key: {key!r}")
            setattr(config, key, value)
        config.validate()
        self.config = config
        self.history_: list[dict] = []
        self.network_: ORALNetwork | None = None
        self._best: dict | None = None
        #: the prediction each selection rule would keep ("best_val", "last"), whatever the rule
        self.discoveries_: dict[str, Discovery] = {}
        #: set to True before ``fit`` to keep every epoch's class ids (``epoch_class_ids_[e]``)
        self.record_epochs = False
        #: set by :meth:`with_diagnostics` (the harness's studies): the final epoch also keeps
        #: the answers without the switches decided "stays off" (:meth:`_diagnostic_answers`)
        self.record_diagnostics = False
        self.epoch_class_ids_: list[torch.Tensor] = []
        #: with ``known_split_share`` set and ``record_epochs``: each epoch's class ids before
        #: the known-split check (one fit answers both, for the proxy's paired comparison)
        self.epoch_unchecked_ids_: list[torch.Tensor] = []
        #: epochs of training the starting parameters had before this fit (0: a cold start)
        self.trained_before_ = 0
        self.warm_nights_ = 0
        #: epochs this fit trained (``epochs``, or ``warm_epochs`` for a warm start)
        self.epochs_run_ = self.config.epochs
        #: the configuration the last fit trained with: ``config``, with ``batch_size`` set when
        #: the graph was over ``minibatch_above_edges`` (:func:`oral_core.config.resolve_minibatch`),
        #: and that decision in one line
        self.train_config_ = self.config
        self.batch_reason_ = ""
        self.input_layout_ = "dense"  # the first layer's input in the last fit (sparse_input_below)
        #: the novel_wholeness the last fit clustered with (None: off, or not separable) and,
        #: with novel_wholeness_if="separable", its yardstick (oral_core.separability)
        self.novel_wholeness_used_ = self.config.novel_wholeness
        self.separability_: dict | None = None

    # ------------------------------------------------------------------ helpers
    def _cluster_fn(self, labels: torch.Tensor, num_known: int, warmup: bool, watch: Stopwatch):
        cfg = self.config
        resolutions = cfg.resolutions()

        def cluster(idx: int, r: torch.Tensor, prototypes: torch.Tensor) -> Partition:
            with watch.section("cluster"):
                if warmup:
                    return finest_partition(r, labels, num_known)
                return semi_supervised_prototypical_clustering(
                    r, labels, num_known, resolutions, cfg.top_k, seed=cfg.seed + idx,
                    prior_num_classes=cfg.prior_num_classes, prototypes=prototypes,
                    selection=cfg.granularity_rule, tolerance=cfg.granularity_tolerance,
                    position=cfg.granularity_position, novel_wholeness=self.novel_wholeness_used_)
        return cluster

    def _targets(self, partitions: list[Partition], ens: Ensemble | None, labels: torch.Tensor,
                 pseudo: torch.Tensor | None, num_known: int):
        """Per layer, the target group of each supervised node (-1: none) for Eq. 7."""
        targets = []
        for idx, part in enumerate(partitions):
            t = torch.full_like(labels, -1)
            known = labels >= 0
            t[known] = part.class_to_group(num_known).to(labels.device)[labels[known]]
            if pseudo is not None and ens is not None:
                has = (pseudo >= 0) & ~known
                mapped = ens.perms[idx].to(labels.device)[pseudo[has]]
                mapped[mapped >= ens.layer_groups[idx]] = -1  # a padding group of this layer
                t[has] = mapped
            targets.append(t)
        return targets

    @staticmethod
    def _ce(p: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Eq. 7 for one layer: ``-log p_{i y_i}`` averaged over the supervised nodes."""
        ok = target >= 0
        if not ok.any():
            return p.new_zeros(())
        picked = p[ok].gather(1, target[ok][:, None]).squeeze(1).clamp_min(1e-8)
        w = weight[ok]
        return -(w * picked.log()).sum() / w.sum()

    # ------------------------------------------------------------------ fit
    def fit(self, x: torch.Tensor, edge_index: torch.Tensor, train_labels: torch.Tensor,
            val_labels: torch.Tensor | None = None, init: dict | None = None,
            init_class_id: torch.Tensor | None = None, on_progress=None) -> "ORAL":
        """Train on one graph (Algorithm 1).

        ``on_progress`` (optional): called after every epoch as ``on_progress(done, total)``
        (epochs done, epochs of this fit), whether or not the ``progress`` bar is shown; the
        pipeline logs a throttled progress line with it (:class:`tasks.fitting.ProgressLog`).

        **Warm start** (``init``; a deviation from the paper, whose Algorithm 1 always starts
        from random parameters and singleton prototype groups): ``init`` is the payload of a
        model fitted on an earlier snapshot of the same graph
        (:func:`oral_core.inference.export_payload`, ``ORALModel.payload``). The fit then starts
        from its parameters (prototypes included) and its prototype partitions, and trains
        ``min(config.warm_epochs, config.epochs)`` epochs instead of ``config.epochs``. Warm epoch ``e`` counts as
        epoch ``trained_epochs + e`` of the schedule, where ``trained_epochs`` is the epochs the
        saved parameters had been trained for (``init["trained_epochs"]``, else its selected
        epoch): the warm-ups were passed by the earlier fit, so with a saved model of the
        default 200 epochs the prototype clustering never falls back to singleton groups and
        pseudo-label guidance (POL: pseudo-labels, refinement, consistency) is on from the
        first warm epoch; ``cluster_every`` / ``cluster_freeze_epoch`` apply to that count
        too. The first evaluation pass uses the saved partitions (it is the saved model applied
        to this graph); the optimiser (Adam) starts afresh (its moments are not saved). The
        selection rule is the configuration's (``last``: the final warm epoch).

        The payload holds nothing indexed by node (parameters, prototype partitions, ensemble
        alignment and group classes are per prototype or group), so the new graph's nodes may
        differ from the old one's in number and order. ``init_class_id`` (optional, ``[N]``)
        is the class each node of *this* graph had in the saved model's published predictions
        (-1 for a node that is new or was unassigned), mapped by node id by the caller: the
        novel classes found then take the ids of the previous novel classes they overlap most
        (one to one), so class ids persist across warm nights; the others get fresh ids above.

        The saved model must have the same feature width, known classes and architecture
        (:func:`check_init`; a ValueError otherwise).
        """
        cfg = self.config
        if train_labels.shape[0] != x.shape[0]:
            raise ValueError(f"train_labels has {train_labels.shape[0]} entries for {x.shape[0]} nodes")
        if int((train_labels >= 0).sum()) == 0:
            raise ValueError("no labelled training node: ORAL needs labels of the known classes")
        # full batch or mini-batch: the edges the full-batch forward would propagate over (no
        # self loop of the input, one per node added; see attention.with_self_loops)
        num_edges = int((edge_index[0] != edge_index[1]).sum()) + int(x.shape[0])
        device = select_device(cfg.device)
        gpu_memory = (torch.cuda.get_device_properties(device).total_memory
                      if device.type == "cuda" else None)
        cfg, self.batch_reason_ = resolve_minibatch(self.config, int(x.shape[0]), num_edges,
                                                   int(x.shape[1]), gpu_memory)
        if self.record_epochs and cfg.eval_every > 1:
            raise ValueError("record_epochs keeps every epoch's classes: it needs eval_every=1")
        if cfg.shards > 1 and not cfg.minibatch:
            raise ValueError(f"shards={cfg.shards} splits every mini-batch across workers: it "
                             "needs mini-batch training (set batch_size)")
        self.train_config_ = cfg
        log.info("ORAL trains %s", self.batch_reason_)
        if cfg.shards > 1:
            log.info("ORAL trains data parallel: every batch in %d parts, part(s) %s here",
                     cfg.shards, data_parallel.shards_here(cfg.shards))
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed)
        x_in, edge_in = x, edge_index  # the known head's inputs (known_head)
        x, edges0 = x.to(device).float(), edge_index.to(device).long()
        self._edges0_canonical = None
        if not cfg.minibatch:  # bag-of-words features: a sparse first-layer input (oral_core.features)
            x = network_input(x, cfg.sparse_input_below)
        self.input_layout_ = "sparse" if is_sparse(x) else "dense"
        if is_sparse(x):
            log.info("ORAL's first layer reads a sparse input (%d stored features, %.2f%% "
                     "non-zero < sparse_input_below)", x.values().numel(),
                     100.0 * x.values().numel() / max(x.shape[0] * x.shape[1], 1))
        labels = train_labels.to(device).long()
        val = (val_labels if val_labels is not None else torch.full_like(train_labels, -1)).to(device)
        num_known = int(labels.max()) + 1
        self.num_known_ = num_known
        self.network_nodes_ = x.shape[0]
        net = ORALNetwork(x.shape[1], cfg.hidden_dim, cfg.num_layers, cfg.num_prototypes,
                          cfg.temperature, cfg.attention_temperature, cfg.dropout,
                          use_attention=cfg.pan, attention_kernel=cfg.attention_kernel).to(device)
        edges, partitions = edges0, None
        self.trained_before_, self.epochs_run_ = 0, cfg.epochs
        # consecutive warm fits behind the parameters (0: a cold fit); older payloads lack it
        self.warm_nights_ = 0 if init is None else int(init.get("warm_nights", 0)) + 1
        if init is not None:
            check_init(init, x.shape[1], num_known, cfg)
            net.load_state_dict({k: v.to(device) for k, v in init["state_dict"].items()})
            partitions = payload_partitions(init)
            self.trained_before_ = int(init.get("trained_epochs", init.get("epoch", 0)))
            self.epochs_run_ = min(cfg.warm_epochs, cfg.epochs)
        data_parallel.broadcast_parameters(net)
        self._shard_gens = data_parallel.shard_generators(cfg.seed, cfg.shards, device)
        self.network_ = net
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        offset, n_epochs = self.trained_before_, self.epochs_run_
        schedule = learning_rate_schedule(opt, cfg.lr_schedule, n_epochs)
        # pseudo-label candidates: unlabelled nodes only. Validation nodes are excluded so that
        # the known-class accuracy used for model selection is measured on nodes the model never
        # trains on, not even through a pseudo-label.
        candidates = (labels < 0) & (val < 0)
        self._csr = None
        self.history_, self._best = [], None
        self.discoveries_, self.epoch_class_ids_, self.epoch_unchecked_ids_ = {}, [], []
        self.known_head_used_ = False  # whether the known head names the answer (known_head)
        self._novel_wholeness_gate(x_in, edge_in, labels.cpu(), num_known)
        bar = _progress(n_epochs + 1, cfg.progress, n_epochs, on_progress)
        watch = Stopwatch(device)
        previous_ids, calm = None, 0  # early stopping (stop_when_stable): epochs in a row calm
        pseudo = None  # the last evaluated epoch's pseudo-labels (eval_every > 1 reuses them)
        for epoch in range(n_epochs + 1):
            started = time.perf_counter()
            total = offset + epoch  # the epoch of the schedule (warm-ups, clustering, POL)
            if not evaluated_epoch(epoch, n_epochs, total, cfg.eval_every):
                # eval_every > 1 (not in the paper): this epoch trains on the last evaluated
                # epoch's groups, ensemble, pseudo-labels and refined structure
                row = {"epoch": epoch, "evaluated": False}
                if cfg.pol and total >= cfg.pol_start_epoch and pseudo is None:
                    pseudo, edges = self._pseudo_labels(ens, group_class, candidates, labels,
                                                        edges0, outs, num_known, gen, watch, row)
                self._train_epoch(net, opt, schedule, x, edges, partitions, ens, labels, pseudo,
                                  num_known, gen, watch, row, started, bar)
                continue
            recluster = partitions is None or (
                not (init is not None and epoch == 0)  # warm: the saved partitions first
                and total % cfg.cluster_every == 0
                and (cfg.cluster_freeze_epoch is None or total < cfg.cluster_freeze_epoch))
            cluster = self._cluster_fn(labels.cpu(), num_known, total < cfg.cluster_warmup_epochs,
                                       watch)
            outs, partitions, ens, group_class = self._evaluate(
                x, edges, None if recluster else partitions, cluster, labels, num_known, watch)
            class_now = discover(ens, group_class, num_known)[0]
            changed = changed_share(previous_ids, class_now, num_known)
            previous_ids = class_now
            calm = calm + 1 if cfg.stop_when_stable is not None and changed < cfg.stop_when_stable else 0
            # never before a model can be kept: best_val selection from select_from_epoch on
            # needs that epoch evaluated
            stop = (epoch < n_epochs and calm >= cfg.stop_patience
                    and total >= cfg.pol_start_epoch + 10
                    and (cfg.selection != "best_val" or cfg.select_from_epoch is None
                         or total >= cfg.select_from_epoch))
            row = self._select(epoch, outs, partitions, ens, group_class, edges, val, num_known,
                               total=total, final=epoch == n_epochs or stop, labels=labels)
            row["changed"] = changed
            if init is not None:
                row["trained_epochs"] = total
            if stop:
                log.info("ORAL stops at epoch %d: fewer than %.1f%% of the nodes changed class "
                         "in each of the last %d epochs", epoch, 100 * cfg.stop_when_stable,
                         cfg.stop_patience)
                row["stopped_early"] = True
                self.epochs_run_ = epoch
            if epoch == n_epochs or stop:  # the last pass only evaluates the final parameters
                row.update(watch.take())
                self.history_.append(row)
                bar.update(1)
                break
            pseudo = None
            if cfg.pol and total >= cfg.pol_start_epoch:
                pseudo, edges = self._pseudo_labels(ens, group_class, candidates, labels, edges0,
                                                    outs, num_known, gen, watch, row)
            self._train_epoch(net, opt, schedule, x, edges, partitions, ens, labels, pseudo,
                              num_known, gen, watch, row, started, bar)
        bar.close()
        for step in self._answer_steps():
            step(x_in, edge_in, labels.cpu(), val.cpu(), num_known)
        if init_class_id is not None:
            self._keep_class_ids(init_class_id, num_known)
        data_parallel.same_answer(self._best["discovery"].class_id)
        self._shard_gens = None  # generators do not pickle; the fit is done with them
        return self

    def _answer_steps(self) -> list:
        """The steps that finish the selected answer after training, in the order they apply,
        each behind its switch (none is in the paper): the known head's naming of the known
        classes (``known_head``), the novel re-cut (``novel_recut``). Each reads and replaces
        ``self._best["discovery"]``."""
        cfg = self.config
        steps = ((cfg.known_head != "none", self._known_fidelity),
                 (cfg.novel_recut, self._novel_recut))
        return [step for applies, step in steps if applies]

    def _novel_wholeness_gate(self, x: torch.Tensor, edge_index: torch.Tensor,
                              labels: torch.Tensor, num_known: int) -> None:
        """``novel_wholeness_if`` (not in the paper): with ``"separable"``, the fit clusters
        with ``novel_wholeness`` only when its known classes are separable in the propagated
        features (:func:`oral_core.separability.known_separability`, labelled training nodes
        only, before the first epoch); :attr:`novel_wholeness_used_` and :attr:`separability_`
        say what was decided."""
        cfg = self.config
        self.novel_wholeness_used_, self.separability_ = cfg.novel_wholeness, None
        if cfg.novel_wholeness is None or cfg.novel_wholeness_if == "always":
            return
        self.separability_ = known_separability(x, edge_index, labels, num_known, seed=cfg.seed)
        if not self.separability_["separable"]:
            self.novel_wholeness_used_ = None
        log.info("novel_wholeness_if=separable: the known classes' median pair share %s%% "
                 "against the upper quartile of their cut shares %s%%: novel_wholeness %s",
                 self.separability_["pair_median"], self.separability_["cut_quartile"],
                 "applies" if self.novel_wholeness_used_ is not None else "off")

    def _known_fidelity(self, x: torch.Tensor, edge_index: torch.Tensor, labels: torch.Tensor,
                        val: torch.Tensor, num_known: int) -> None:
        """Known-class fidelity (``known_head``, :mod:`oral_core.known_head`; not in the paper):
        fit the head on the labelled training nodes, relabel the selected answer's known-class
        nodes (and, with ``known_head_pull``, pull confident ones out of novel classes), and
        measure its validation accuracy again. With ``known_head="auto"`` the relabelled answer
        replaces the groups' only when its validation accuracy is higher (a choice on labelled
        nodes, per fit; :attr:`known_head_used_` says which). Both answers stay in
        :attr:`discoveries_` as ``<selection>_no_head`` and ``<selection>_head`` (diagnostics)."""
        cfg = self.config
        head = self._fit_head(x, edge_index, labels, val, num_known)
        probs = head_probabilities(head, x, edge_index)
        old = self._best["discovery"]
        class_id = keep_known_fidelity(old.class_id, probs, num_known, cfg.known_head_pull)
        has_val = val >= 0
        val_acc = (float((class_id[has_val] == val[has_val]).float().mean()) if has_val.any()
                   else float("nan"))
        found = Discovery(class_id, old.confidence, class_id >= num_known,
                          int(torch.unique(class_id).numel()), num_known, old.layer_class_ids,
                          old.epoch, val_acc)
        self.discoveries_[f"{cfg.selection}_no_head"] = old
        self.discoveries_[f"{cfg.selection}_head"] = found
        # "auto": the head only where the validation nodes favour it over the groups
        self.known_head_used_ = cfg.known_head != "auto" or val_acc > old.val_accuracy
        if self.known_head_used_:
            self.discoveries_[cfg.selection] = found
            self._best.update(discovery=found, val_acc=val_acc, known_head=head)

    def _fit_head(self, x: torch.Tensor, edge_index: torch.Tensor, labels: torch.Tensor,
                  val: torch.Tensor, num_known: int) -> dict:
        """The known head (:func:`oral_core.known_head.fit_known_head`) on the labelled training
        nodes, at the configured steps and scale."""
        cfg = self.config
        scale_rows = (labels >= 0) | (val >= 0) if cfg.known_head_scale == "labelled" else None
        return fit_known_head(x, edge_index, labels, num_known, seed=cfg.seed,
                              hops=cfg.known_head_hops, labelled=scale_rows)

    def _novel_recut(self, x: torch.Tensor, edge_index: torch.Tensor, labels: torch.Tensor,
                     val: torch.Tensor, num_known: int) -> None:
        """Novel re-cut (``novel_recut``, :func:`oral_core.recut.recut_novel`; not in the
        paper): the selected answer's novel nodes regrouped, as many classes, on fixed
        propagated features (the k-means draws are the re-cut's own, seed 0, so two fits that
        agree on which nodes are novel agree on their cut); with ``novel_recut_view="embedding"``
        on the selected model's own embedding (:meth:`selected_embedding`), and with
        ``novel_recut_parts="silhouette"`` into the count of classes whose cut has the highest
        mean silhouette. Known nodes, confidences and the validation accuracy are unchanged;
        the answer before stays in :attr:`discoveries_` as ``<selection>_no_recut``."""
        cfg = self.config
        old = self._best["discovery"]
        view = (self.selected_embedding(x, edge_index) if cfg.novel_recut_view == "embedding"
                else None)
        class_id = recut_novel(old.class_id, x, edge_index, num_known,
                               dims=cfg.novel_recut_dims, view=view,
                               parts=cfg.novel_recut_parts).to(old.class_id.device)
        found = Discovery(class_id, old.confidence, class_id >= num_known,
                          int(torch.unique(class_id).numel()), num_known, old.layer_class_ids,
                          old.epoch, old.val_accuracy)
        self.discoveries_[f"{cfg.selection}_no_recut"] = old
        self.discoveries_[cfg.selection] = found
        self._best.update(discovery=found)

    @torch.no_grad()
    def selected_embedding(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """``[N, hidden_dim]``: the last layer's aggregated representation ``h*`` (Eq. 6) of the
        selected model (its parameters and partitions, in evaluation mode) on the fitted graph,
        computed as :meth:`oral_core.inference.ORALModel.assign` computes it."""
        if self._best is None:
            raise RuntimeError("no model selected yet: call fit() first")
        net = copy.deepcopy(self.network_)
        net.load_state_dict(self._best["state"])
        net.eval()
        device = next(net.parameters()).device
        n = x.shape[0]
        looped = with_self_loops(edge_index.to(device).long(), n)
        dense = x.to_dense() if x.layout != torch.strided else x
        outs, _ = net.forward_chunked(dense.to(device).float(), CSR.from_edge_index(looped, n),
                                      partitions=self._best["partitions"])
        return outs[-1].h

    def _pseudo_labels(self, ens, group_class, candidates, labels, edges0, outs, num_known, gen,
                       watch: Stopwatch, row: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Reliable pseudo-labels (top ``gamma`` per group) and the refined structure of Eq. 11."""
        cfg = self.train_config_  # the fit's resolved configuration (mini-batch or not)
        with watch.section("pseudo_labels"):
            pseudo = select_confident(ens.p, candidates, cfg.gamma)
            if cfg.pseudo_label_groups == "novel":
                pseudo = novel_groups_only(pseudo, group_class, num_known)
            node_label = labels.clone()
            has = (pseudo >= 0) & candidates
            node_label[has] = group_class.to(labels.device)[pseudo[has]]
        with watch.section("refinement"):
            if self._edges0_canonical is None:  # once per fit: the merge needs canonical edges
                self._edges0_canonical = is_canonical(edges0, int(node_label.numel()))
            edges = refine_structure(edges0, node_label, [o.r for o in outs], cfg.mu,
                                     cfg.refine_candidates_per_node, gen,
                                     remove_inter=cfg.remove_inter_edges,
                                     canonical=self._edges0_canonical)
        row["pseudo_labels"] = int(has.sum())
        return pseudo, edges

    def _train_epoch(self, net, opt, schedule, x, edges, partitions, ens, labels, pseudo,
                     num_known, gen, watch: Stopwatch, row: dict, started: float, bar) -> None:
        """The epoch's optimiser steps, then its history row (timings included)."""
        cfg = self.train_config_  # the fit's resolved configuration (mini-batch or not)
        step = self._minibatch_steps if cfg.minibatch else self._step
        row.update(step(net, opt, x, edges, partitions, ens, labels, pseudo, num_known, gen, watch))
        row["lr"] = opt.param_groups[0]["lr"]
        if schedule is not None:
            schedule.step()
        row["edges"] = int(edges.shape[1])
        row["seconds"] = time.perf_counter() - started
        row.update(watch.take())
        self.history_.append(row)
        bar.update(1)
        if "val_acc" in row:
            bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_acc']:.3f}",
                            groups=row["groups"])
        else:
            bar.set_postfix(loss=f"{row['loss']:.3f}")

    def _keep_class_ids(self, previous: torch.Tensor, num_known: int) -> None:
        """Give the selected model's novel classes the ids of the previous novel classes they
        overlap most on the nodes both share (one to one, largest overlap first); the other
        novel classes get fresh ids above every previous one. Applied to both rules'
        predictions and to the selected model's group classes (saved with it)."""
        sel = self._best["discovery"]
        previous = previous.long().cpu()
        if previous.shape != sel.class_id.shape:
            raise ValueError(f"init_class_id has {previous.shape[0]} entries for "
                             f"{sel.class_id.shape[0]} nodes")
        mapping = novel_id_map(sel.class_id, previous, num_known)
        if not mapping or all(k == v for k, v in mapping.items()):
            return

        def remap(ids: torch.Tensor) -> torch.Tensor:
            out = ids.clone()
            for old, new in mapping.items():
                out[ids == old] = new
            return out

        for d in self.discoveries_.values():
            d.class_id = remap(d.class_id)
            d.is_novel = d.class_id >= num_known
        self._best["group_class"] = remap(self._best["group_class"])

    def _evaluate(self, x, edges, partitions, cluster, labels, num_known, watch: Stopwatch):
        net = self.network_
        net.eval()
        start = time.perf_counter()
        before = watch.totals.get("cluster", 0.0)
        with torch.no_grad():
            if self.train_config_.minibatch:  # whole graph, layer by layer, in chunks
                outs, partitions = net.forward_chunked(x, self._adjacency(edges)[0], partitions,
                                                       cluster, self.train_config_.eval_chunk_edges)
            else:
                outs, partitions = net(x, edges, partitions=partitions, cluster=cluster)
        watch.sync()
        watch.add("eval_forward", time.perf_counter() - start - (watch.totals.get("cluster", 0.0) - before))
        with watch.section("ensemble"):
            ens = ensemble_layers([o.p for o in outs], self.config.eta,
                                  self.config.ensemble_from_layer - 1)
            group_class = ensemble_classes(ens, labels.cpu(), num_known)
        return outs, partitions, ens, group_class

    def _split_checked(self, ens: Ensemble, group_class: torch.Tensor, labels: torch.Tensor,
                       val: torch.Tensor, num_known: int, repeat: bool
                       ) -> tuple[Ensemble, torch.Tensor, int]:
        """The ensemble and group classes after the known-split check (off: unchanged), applied
        once or, with ``repeat`` (``known_split_repeat``), until it suppresses no further group;
        and the number of passes that suppressed a group."""
        rounds = 0
        while self.config.known_split_share is not None:
            checked, checked_class = self._known_split_check(ens, group_class, labels, val,
                                                             num_known)
            if checked is ens:
                break
            ens, group_class, rounds = checked, checked_class, rounds + 1
            if not repeat:
                break
        return ens, group_class, rounds

    def _absorb_checked(self, ens: Ensemble, group_class: torch.Tensor, labels: torch.Tensor,
                        val: torch.Tensor, num_known: int):
        """Class id, confidence and novelty per node after the known-absorb check (off:
        :func:`discover` alone), and its release margins (None: nothing released)."""
        release = None
        if self.config.known_absorb_share is not None:
            release = self._known_absorb_check(ens, group_class, labels, val, num_known)
        return (*discover(ens, group_class, num_known, release), release)

    def _known_split_check(self, ens: Ensemble, group_class: torch.Tensor, labels: torch.Tensor,
                           val: torch.Tensor, num_known: int) -> tuple[Ensemble, torch.Tensor]:
        """``known_split_share`` (not in the paper, :mod:`oral_core.novelty`): the ensemble with
        the novel groups that look like splits of known classes suppressed as Eq. 9 suppresses
        a group, and its group classes; ``ens`` itself when no group is suppressed."""
        group = (ens.p + 1e-12 * ens.mask).argmax(dim=1)
        unlabelled, seen = (labels < 0) & (val < 0), val >= 0
        share = self.config.known_split_share
        split = known_split_groups(group, group_class, unlabelled, seen, num_known, share)
        mask = ens.mask * (~split).to(ens.mask.device, ens.mask.dtype)
        if not bool(split.any()) or float(mask.sum()) == 0:
            return ens, group_class
        checked = Ensemble(ens.p * mask, mask, ens.perms, ens.layer_groups)
        return checked, ensemble_classes(checked, labels.cpu(), num_known)

    def _known_absorb_check(self, ens: Ensemble, group_class: torch.Tensor, labels: torch.Tensor,
                            val: torch.Tensor, num_known: int,
                            guard: bool | None = None) -> torch.Tensor | None:
        """``known_absorb_share`` (not in the paper, :mod:`oral_core.novelty`): the margins under
        which a known group's nodes move to their best novel group (``[G]``), None when no known
        group holds more unlabelled nodes than its validation nodes account for (or every such
        release is stopped by the guard; ``guard`` None: ``known_absorb_guard``)."""
        group = (ens.p + 1e-12 * ens.mask).argmax(dim=1)
        tau = release_margins(ens.p, group, group_class, ((labels < 0) & (val < 0)).to(group.device),
                              (val >= 0).to(group.device), num_known, self.config.known_absorb_share,
                              guard=self.config.known_absorb_guard if guard is None else guard)
        return tau if bool(torch.isfinite(tau).any()) else None

    def _select(self, epoch, outs, partitions, ens, group_class, edges, val, num_known,
                labels: torch.Tensor, total: int | None = None, final: bool | None = None) -> dict:
        """Model selection on labelled validation nodes of known classes only.

        ``selection="best_val"``: the latest epoch with the best validation accuracy among the
        eligible ones (``epoch >= select_from_epoch``; every epoch when it is None; the last epoch
        when there is no validation node). ``selection="last"``: the final epoch (the paper's
        Algorithm 1 predicts after its loop). Whatever the rule, :attr:`discoveries_` keeps the
        predictions both rules would give, and with :attr:`record_epochs` every epoch's class ids
        are kept in :attr:`epoch_class_ids_` (for the held-out-class proxy, which compares rules
        on one training run). ``total``: the epoch of the schedule (``select_from_epoch``
        counts it; differs from ``epoch`` on a warm start); ``final``: the fit's last epoch."""
        cfg = self.config
        final = epoch == cfg.epochs if final is None else final
        # unchecked: (class id, confidence, novelty) per node before either check
        unchecked = discover(ens, group_class, num_known)
        raw = (ens, group_class)
        ens, group_class, split_rounds = self._split_checked(ens, group_class, labels, val,
                                                             num_known, cfg.known_split_repeat)
        class_id, conf, novel, release = self._absorb_checked(ens, group_class, labels, val,
                                                              num_known)
        diagnostics = (self._diagnostic_answers(raw, ens, group_class, labels, val, num_known,
                                                split_rounds)
                       if final and self.record_diagnostics else {})
        checks = cfg.known_split_share is not None or cfg.known_absorb_share is not None
        has_val = val >= 0

        def val_accuracy(ids: torch.Tensor) -> float:
            return float((ids[has_val] == val[has_val]).float().mean()) if has_val.any() else float("nan")

        val_acc = val_accuracy(class_id)
        n_classes = int(torch.unique(class_id).numel())
        start = cfg.select_from_epoch
        eligible = start is None or (epoch if total is None else total) >= start
        improved = eligible and (
            "best_val" not in self.discoveries_ or not has_val.any()
            or val_acc >= self.discoveries_["best_val"].val_accuracy)

        def answer(found: tuple[torch.Tensor, ...], accuracy: float) -> Discovery:
            """Another answer of this epoch (no per-layer classes)."""
            return Discovery(*(t.cpu() for t in found), int(torch.unique(found[0]).numel()),
                             num_known, [], epoch, accuracy)

        def discovery() -> Discovery:
            return Discovery(class_id.cpu(), conf.cpu(), novel.cpu(), n_classes, num_known,
                             [c.cpu() for c in layer_classes(outs, partitions, num_known)],
                             epoch, val_acc)

        if improved:
            self.discoveries_["best_val"] = discovery()
        if final:
            self.discoveries_["last"] = discovery()
            if checks:  # what the unchecked groups would report
                self.discoveries_["last_unchecked"] = answer(unchecked, float("nan"))
            for name, found in diagnostics.items():
                self.discoveries_[name] = answer(found, val_accuracy(found[0]))
        if self.record_epochs:
            self.epoch_class_ids_.append(class_id.to(torch.int32).cpu())
            if checks:
                self.epoch_unchecked_ids_.append(unchecked[0].to(torch.int32).cpu())
        keep = improved if cfg.selection == "best_val" else final
        if keep:
            self._best = {
                "epoch": epoch, "val_acc": val_acc,
                "state": copy.deepcopy(self.network_.state_dict()),
                "partitions": partitions, "edges": edges,
                "ensemble": {"perms": [q.cpu() for q in ens.perms], "mask": ens.mask.cpu(),
                             "layer_groups": list(ens.layer_groups)},
                "group_class": group_class.cpu(),
                "release_margin": None if release is None else release.cpu(),
                "discovery": self.discoveries_[cfg.selection],
            }
        return {"epoch": epoch, "val_acc": val_acc, "classes": n_classes, "split_rounds": split_rounds,
                "groups": [p.num_groups for p in partitions],
                "train_cluster_acc": [round(p.accuracy, 4) for p in partitions]}

    def with_diagnostics(self) -> "ORAL":
        """This model, keeping the research diagnostics of its final epoch in
        :attr:`discoveries_` (:meth:`_diagnostic_answers`); off by default, since a night never
        reads them. Chainable: ``ORAL(cfg).with_diagnostics().fit(...)``."""
        self.record_diagnostics = True
        return self

    def _diagnostic_answers(self, raw, ens, group_class, labels, val, num_known: int,
                            split_rounds: int) -> dict[str, tuple]:
        """What the final epoch would answer without one of the switches decided "stays off"
        (diagnostics, never the answer; ``raw``: the groups before either check; asked only with
        :meth:`with_diagnostics`): without the absorb guard (``last_unguarded``), with one pass of
        the known-split check (``last_split_once``). Each
        is ``(class id, confidence, novelty)`` per node; :meth:`_select` keeps them in
        :attr:`discoveries_`."""
        cfg = self.config
        out = {}
        if cfg.known_absorb_share is not None and cfg.known_absorb_guard:
            tau = self._known_absorb_check(ens, group_class, labels, val, num_known, guard=False)
            out["last_unguarded"] = discover(ens, group_class, num_known, tau)
        if cfg.known_split_repeat and split_rounds > 1:
            once_ens, once_class, _ = self._split_checked(*raw, labels, val, num_known, False)
            out["last_split_once"] = self._absorb_checked(once_ens, once_class, labels, val,
                                                          num_known)[:3]
        return out

    def _step(self, net, opt, x, edges, partitions, ens, labels, pseudo, num_known, gen,
              watch: Stopwatch) -> dict:
        """One full-batch optimiser step on Eq. 13 (:meth:`_eq13_loss`) over every node."""
        cfg = self.config
        net.train()
        opt.zero_grad()
        with watch.section("train_forward"):
            x_in = input_dropout(x, cfg.dropout)  # one input mask shared by both views
            first = net.first_projection(x_in) if cfg.share_first_projection else None
            outs, _ = net(x_in, edges, partitions=partitions, input_dropout=False, first=first)
            targets = self._targets(partitions, ens, labels, pseudo, num_known)
            weight = torch.where(labels >= 0, 1.0, cfg.pseudo_label_weight).to(x.dtype)

        def augmented():
            """The layer outputs on an adaptively edge-dropped view (same input mask)."""
            with watch.section("augmentation"):
                view = adaptive_edge_drop(edges, x.shape[0], cfg.edge_drop_rate,
                                          cfg.edge_drop_max, gen)
            with watch.section("augmented_forward"):
                return net(x_in, view, partitions=partitions, input_dropout=False,
                           first=first)[0]

        loss, terms = self._eq13_loss(outs, targets, weight, labels, partitions, pseudo,
                                      augmented, gen, watch)
        with watch.section("backward"):
            loss.backward()
            opt.step()
        return {"loss": float(loss.detach())} | {k: float(v.detach()) for k, v in terms.items()}

    def _eq13_loss(self, outs, targets, weight, labels, partitions, pseudo, augmented, gen,
                   watch: Stopwatch, seeds: int | None = None) -> tuple[torch.Tensor, dict]:
        """The training loss of one optimiser step, Eq. 13: ``L = L_ce + L_reg + L_con``.

        Eq. 13 is the paper's "overall training loss" (end of its section on pseudo-label
        guided open-world learning), an unweighted sum of three terms; here ``L = L_ce +
        reg_weight * L_reg + consistency_weight * L_con`` (both weights 1 by default, the
        paper). Every full-batch step and every mini-batch step is built here, and only here:

        - ``L_ce`` (Eq. 7): per layer, the cross-entropy of the group assignment ``p`` against
          the target group of each supervised node (a labelled node's class, an unlabelled
          node's pseudo-label, weighted ``pseudo_label_weight``; :meth:`_ce`), summed over the
          layers;
        - ``L_reg`` (Eq. 2): the balance regulariser of every layer's representativeness ``r``,
          summed over the layers; with ``opennc_losses`` and its ``balance`` term, OpenNCD's
          group-prior balance replaces it (a deviation);
        - ``L_con`` (Eq. 12): the consistency between the predictions on the graph and on an
          adaptively edge-dropped view, only while pseudo-labels exist (``pol`` and
          ``consistency_weight > 0``); 0 otherwise;
        - with ``opennc_losses`` (a deviation, not in the paper): OpenNCD's cross-view terms
          ``l_opennc`` are added.

        ``outs``: the layer outputs of the step's forward pass; ``targets``, ``weight`` and
        ``labels``: per node of the rows the loss covers (the seed nodes in a mini-batch);
        ``seeds``: None for full batch, else the number of seed nodes, the first rows of
        ``outs``; ``augmented()``: runs the forward pass on the augmented view (called only when
        a term needs it). The terms are added in one fixed order (floating-point sums depend on
        it). Returns ``(loss, {"l_ce", "l_reg", "l_con"[, "l_opennc"]})``.
        """
        cfg = self.train_config_  # the fit's resolved configuration (mini-batch or not)

        def rows(t: torch.Tensor) -> torch.Tensor:
            return t if seeds is None else t[:seeds]

        def seed_outputs(layer_outs: list[LayerOutput]) -> list[LayerOutput]:
            return layer_outs if seeds is None else [
                LayerOutput(o.r[:seeds], o.p[:seeds], o.h[:seeds]) for o in layer_outs]

        with watch.section("train_forward"):
            l_ce = sum(self._ce(rows(o.p), t, weight) for o, t in zip(outs, targets))
            l_reg = (None if self._opennc_balance
                     else sum(balance_regulariser(rows(o.r)) for o in outs))
            loss = l_ce if l_reg is None else l_ce + cfg.reg_weight * l_reg
        l_con = torch.zeros(())
        use_con = cfg.pol and pseudo is not None and cfg.consistency_weight > 0
        outs_seeds, outs_aug = seed_outputs(outs), None
        if use_con or cfg.opennc_losses:
            outs_aug = seed_outputs(augmented())
        if use_con:
            with watch.section("augmented_forward"):
                l_con = consistency_loss([o.p for o in outs_seeds], [o.p for o in outs_aug])
                loss = loss + cfg.consistency_weight * l_con
        extra = {}
        if cfg.opennc_losses:
            with watch.section("train_forward"):
                balance, extra = self._opennc(outs_seeds, outs_aug, partitions, labels, gen)
                if balance is not None:
                    l_reg = balance
                    loss = loss + cfg.reg_weight * l_reg
                loss = loss + extra["l_opennc"]
        return loss, {"l_ce": l_ce, "l_reg": l_reg, "l_con": l_con} | extra

    @property
    def _opennc_balance(self) -> bool:
        """Whether OpenNCD's group-prior balance replaces Eq. 2 (``opennc_losses`` with the
        ``balance`` term among ``opennc_terms``)."""
        return self.config.opennc_losses and "balance" in self.config.opennc_terms.split("+")

    def _opennc(self, outs, outs_aug, partitions, labels, gen) -> tuple[torch.Tensor | None, dict]:
        """With ``opennc_losses``: OpenNCD's group-prior balance, in place of Eq. 2 (None when
        ``opennc_terms`` leaves it out), and its cross-view terms that ``opennc_terms`` names
        (:mod:`oral_core.opennc_losses`): ``(balance, {"l_opennc": proto + group})``."""
        cfg = self.config
        chosen = cfg.opennc_terms.split("+")
        terms = opennc_terms(outs, outs_aug, partitions, labels, cfg.opennc_pair_pool, gen, chosen)
        l_opennc = sum((terms[t] for t in ("proto", "group") if t in chosen), torch.zeros(()))
        return terms.get("balance"), {"l_opennc": l_opennc}

    def _adjacency(self, edges: torch.Tensor) -> tuple[CSR, CSR, torch.Tensor]:
        """Incoming adjacency of the current structure: with self loops (evaluation pass), without
        (neighbour sampling), and the degrees; rebuilt only when the structure changes."""
        if self._csr is None or self._csr[0] is not edges:
            n = self.network_nodes_
            plain = CSR.from_edge_index(edges, n)
            looped = CSR.from_edge_index(with_self_loops(edges, n), n)
            self._csr = (edges, looped, plain, plain.degree())
        return self._csr[1:]

    def _minibatch_steps(self, net, opt, x, edges, partitions, ens, labels, pseudo, num_known, gen,
                         watch: Stopwatch) -> dict:
        """Eq. 13 on sampled subgraphs: one optimiser step per batch of seed nodes.

        Every node is a seed once per epoch (or ``batches_per_epoch`` batches of a shuffled
        order). A batch's subgraph holds ``num_neighbors`` sampled incoming edges per node and
        layer (:func:`oral_core.sampling.sample_subgraph`); the losses of Eq. 7, 2 and 12 are taken
        over the seeds, whose L-layer receptive field the subgraph contains. With ``shards > 1``
        each batch is cut into parts whose gradients are averaged, across workers under
        ``torch.distributed`` (:mod:`oral_core.data_parallel`); the row then also holds the
        epoch's ``communication_seconds``.
        """
        cfg = self.train_config_
        net.train()
        _, plain, degrees = self._adjacency(edges)
        targets = self._targets(partitions, ens, labels, pseudo, num_known)
        weight = torch.where(labels >= 0, 1.0, cfg.pseudo_label_weight).to(x.dtype)
        graph = (plain, degrees, targets, weight, labels, partitions, pseudo)
        totals = {"loss": 0.0, "l_ce": 0.0, "l_reg": 0.0, "l_con": 0.0}
        steps, talking = 0, 0.0
        parts = data_parallel.shards_here(cfg.shards) if cfg.shards > 1 else None
        params = [p for p in net.parameters() if p.requires_grad]
        for seeds in mini_batches(torch.arange(x.shape[0]), cfg.batch_size, gen):
            if cfg.batches_per_epoch is not None and steps >= cfg.batches_per_epoch:
                break
            opt.zero_grad()
            if parts is None:  # one stream for the whole batch
                loss, terms = self._batch_loss(net, x, seeds, graph, gen, watch)
                with watch.section("backward"):
                    loss.backward()
                    opt.step()
                values = {"loss": loss, **terms}
            else:  # data parallel (oral_core.data_parallel): the mean of the parts' gradients
                grads, values = [], {}
                for s in parts:
                    part = data_parallel.shard_of(seeds, cfg.shards, s)
                    if part.numel() == 0:  # a last batch smaller than the parts
                        grads.append([torch.zeros_like(p) for p in params])
                        continue
                    with data_parallel.shard_random_state(self._shard_gens[s]):
                        loss, terms = self._batch_loss(net, x, part, graph, self._shard_gens[s],
                                                       watch)
                        with watch.section("backward"):
                            grads.append(data_parallel.part_gradients(loss, params))
                    for key, value in (("loss", loss), *terms.items()):
                        values[key] = values.get(key, 0.0) + float(
                            value.detach() if torch.is_tensor(value) else value) / cfg.shards
                with watch.section("all_reduce"):
                    talking += data_parallel.mean_gradients(grads, params, cfg.shards)
                with watch.section("backward"):
                    opt.step()
                values = data_parallel.summed_over_workers(values)
            for key, value in values.items():
                totals[key] = totals.get(key, 0.0) + (
                    float(value.detach()) if torch.is_tensor(value) else float(value))
            steps += 1
        row = {key: value / max(steps, 1) for key, value in totals.items()} | {"batches": steps}
        return row | ({"communication_seconds": talking} if parts is not None else {})

    def _batch_loss(self, net, x, seeds, graph, gen, watch: Stopwatch):
        """Eq. 13 (:meth:`_eq13_loss`) over one batch of seed nodes, on its sampled subgraph:
        ``num_neighbors`` sampled incoming edges per node and layer, input dropout, and the
        sampled edge-dropped view, all drawn from ``gen`` (and torch's global stream)."""
        cfg = self.train_config_
        plain, degrees, targets, weight, labels, partitions, pseudo = graph
        fanouts = [cfg.num_neighbors] * cfg.num_layers
        with watch.section("sampling"):
            sub = sample_subgraph(plain, seeds.to(x.device), fanouts, gen)
            k = sub.num_seeds
            x_sub = x.index_select(0, sub.nodes)
        with watch.section("train_forward"):
            x_in = F.dropout(x_sub, cfg.dropout, training=True)
            first = net.first_projection(x_in) if cfg.share_first_projection else None
            outs, _ = net(x_in, sub.edge_index, partitions=partitions, input_dropout=False,
                          first=first)
            seed_ids = sub.nodes[:k]

        def augmented():
            """The subgraph's layer outputs on a sampled edge-dropped view (same input mask)."""
            with watch.section("augmentation"):
                view = sampled_edge_drop(sub.edge_index, degrees[sub.nodes], cfg.edge_drop_rate,
                                         cfg.edge_drop_max, gen)
            with watch.section("augmented_forward"):
                return net(x_in, view, partitions=partitions, input_dropout=False,
                           first=first)[0]

        return self._eq13_loss(outs, [t[seed_ids] for t in targets], weight[seed_ids],
                               labels[seed_ids], partitions, pseudo, augmented, gen, watch,
                               seeds=k)

    # ------------------------------------------------------------------ predict
    def predict(self) -> Discovery:
        """Ensemble inference (Eq. 8-9) of the selected model on the fitted graph's nodes."""
        if self._best is None:
            raise RuntimeError("ORAL.predict() called before fit()")
        return self._best["discovery"]

    def selected_state(self) -> dict:
        """The selected parameters, partitions and refined edges (for saving)."""
        if self._best is None:
            raise RuntimeError("no model selected yet: call fit() first")
        return {k: self._best.get(k) for k in ("state", "partitions", "edges", "epoch", "val_acc",
                                                "ensemble", "group_class", "release_margin",
                                                "known_head")}


def evaluated_epoch(epoch: int, n_epochs: int, total: int, eval_every: int) -> bool:
    """Whether epoch ``epoch`` of a fit (``total`` of the schedule) runs the evaluation pass:
    always the first and the final one, else every ``eval_every``-th epoch of the schedule
    (1, every epoch, is the paper's Algorithm 1)."""
    return eval_every <= 1 or epoch in (0, n_epochs) or total % eval_every == 0


def learning_rate_schedule(opt: torch.optim.Optimizer, name: str, epochs: int):
    """``ORALConfig.lr_schedule`` over a fit of ``epochs`` optimiser epochs: None for
    ``"constant"`` (the paper), a cosine annealing from the configured rate to 0 for ``"cosine"``
    (stepped once per epoch, so epoch ``e`` trains at ``lr * (1 + cos(pi e / epochs)) / 2``)."""
    if name == "constant":
        return None
    if name == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(epochs, 1), eta_min=0.0)
    raise ValueError(f"unknown lr_schedule {name!r}: use one of 'constant', 'cosine'")


def payload_partitions(payload: dict) -> list[Partition]:
    """The prototype partitions (Eq. 3-4) saved in a model payload."""
    return [Partition(part["prototype_group"], int(part["num_groups"]), part["group_to_class"],
                      float(part["accuracy"]), float(part["resolution"]))
            for part in payload["partitions"]]


#: configuration fields that shape the saved parameters: a warm start needs them equal
ARCHITECTURE_FIELDS = ("num_layers", "hidden_dim", "num_prototypes", "pan")


def check_init(payload: dict, in_dim: int, num_known: int, config: ORALConfig) -> None:
    """Raise ValueError (saying why) when ``payload`` cannot start a fit on features of width
    ``in_dim`` with ``num_known`` known classes under ``config``."""
    saved = payload.get("config") or {}
    problems = []
    if int(payload.get("in_dim", -1)) != int(in_dim):
        problems.append(f"feature dimension {payload.get('in_dim')} -> {in_dim}")
    if int(payload.get("num_known", -1)) != int(num_known):
        problems.append(f"known classes {payload.get('num_known')} -> {num_known}")
    for key in ARCHITECTURE_FIELDS:
        if key in saved and saved[key] != getattr(config, key):
            problems.append(f"{key} {saved[key]!r} -> {getattr(config, key)!r}")
    if len(payload.get("partitions") or []) != config.num_layers:
        problems.append(f"{len(payload.get('partitions') or [])} saved partitions for "
                        f"{config.num_layers} layers")
    if problems:
        raise ValueError("the saved model cannot start this fit: " + "; ".join(problems))


def changed_share(previous: torch.Tensor | None, class_id: torch.Tensor, num_known: int) -> float:
    """The share of nodes whose class differs from ``previous`` (the epoch before), novel ids
    aligned by overlap (:func:`novel_id_map`); 1.0 without a previous epoch."""
    if previous is None:
        return 1.0
    mapping = novel_id_map(previous, class_id, num_known)
    renamed = previous.clone()
    for old, new in mapping.items():
        renamed[previous == old] = new
    return float((renamed != class_id).float().mean())


def novel_id_map(class_id: torch.Tensor, previous: torch.Tensor, num_known: int) -> dict[int, int]:
    """``{novel id now: id to use}``: each novel class takes the previous novel id it shares
    most nodes with (greedy one-to-one, largest overlap first, ties to the lower ids); the
    others keep their id unless a previous class had it, else take fresh ids above every
    previous and current one, in id order."""
    now = sorted(int(c) for c in torch.unique(class_id) if int(c) >= num_known)
    if not now:
        return {}
    before = previous[(previous >= num_known)]
    both = (class_id >= num_known) & (previous >= num_known)
    pairs: dict[tuple[int, int], int] = {}
    if both.any():
        keys, counts = torch.unique(torch.stack([class_id[both], previous[both]], 1), dim=0,
                                    return_counts=True)
        pairs = {(int(a), int(b)): int(n) for (a, b), n in zip(keys.tolist(), counts.tolist())}
    mapping: dict[int, int] = {}
    taken: set[int] = set()
    for (a, b), _ in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        if a not in mapping and b not in taken:
            mapping[a] = b
            taken.add(b)
    earlier = {int(v) for v in torch.unique(before)}
    nxt = max([num_known - 1, *now, *earlier]) + 1
    for a in now:
        if a not in mapping:
            if a in taken or a in earlier:  # the id meant another class before
                mapping[a], nxt = nxt, nxt + 1
            else:
                mapping[a] = a
    return mapping


def _progress(total: int, enabled: bool, epochs: int | None = None, on_progress=None):
    """The per-epoch bar (tqdm, shown when ``enabled``), and ``on_progress(done, epochs)`` after
    each of its updates (``total`` is ``epochs + 1``: the last pass only evaluates)."""
    from tqdm.auto import tqdm
    bar = tqdm(total=total, desc="ORAL", unit="epoch", disable=not enabled, leave=False)
    return bar if on_progress is None else _Reporting(bar, total - 1 if epochs is None else epochs,
                                                      on_progress)


class _Reporting:
    """A progress bar that also tells ``callback(done, epochs)`` after each update."""

    def __init__(self, bar, epochs: int, callback):
        self.bar, self.epochs, self.callback, self.done = bar, int(epochs), callback, 0

    def update(self, n: int = 1) -> None:
        self.bar.update(n)
        self.done += n
        self.callback(min(self.done, self.epochs), self.epochs)

    def __getattr__(self, name):  # the rest of tqdm's interface (set_postfix...)
        return getattr(self.bar, name)

    def close(self) -> None:
        self.bar.close()
