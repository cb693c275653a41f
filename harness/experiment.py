"""The reproduction harness: one dataset, one seed, one method, scored as in the paper.

Kept free of orchestration imports so that the CLI, benchmarks and (later) Prefect flows share it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from oral_core.config import ORALConfig
from oral_core.datasets import canonical_name, load_dataset, preprocess_features
from oral_core.graph import Graph
from oral_core.identity import code_version, config_hash
from oral_core.metrics import (class_number_error, contingency, fixed_id_accuracy,
                               open_world_accuracy, orca_accuracy)
from oral_core.splits import OpenWorldSplit, make_split
from oral_core.trainer import ORAL

from harness.baselines import BASELINES, baseline_config

#: the ablation switches of the paper's Table 4; ``opennc`` is ORAL with both modules off, and
#: without this product's post-hoc checks of the known groups (``known_split_share``,
#: ``known_absorb_share``, ``known_absorb_guard``, ``known_head``): OpenNCD is a baseline and keeps its own
#: answer whatever ORAL's defaults are (the checks, on by default since 2026-11-27, are set off
#: here, so every OpenNCD row keeps the hash it had when they were off by default); the
#: ablations keep ORAL's defaults, checks included, but one module
OPENNC_OFF = {"pan": False, "pol": False, "known_split_share": None, "known_absorb_share": None,
              "known_absorb_guard": False, "known_head": "none", "known_split_repeat": False}
METHODS: dict[str, dict] = {
    "oral": {},
    "oral_no_pan": {"pan": False},
    "oral_no_pol": {"pol": False},
    "opennc": OPENNC_OFF,
}

#: every method ``oral reproduce --method`` runs: ORAL's variants, then the Table 2 baselines
#: (:mod:`harness.baselines`, each with its own configuration dataclass)
ALL_METHODS: list[str] = [*METHODS, *BASELINES]

#: feature preprocessing per dataset (count features get log1p first)
FEATURES = {"cora": "row", "amazonphoto": "row", "blogcatalog": "log_row"}

#: the paper's Table 2 (All / Known / Novel, %) and Table 3 (class-number estimate)
PAPER = {
    ("oral", "cora", "no"): (69.91, 73.60, 64.72), ("oral", "cora", "yes"): (71.39, 76.97, 65.71),
    ("oral", "blogcatalog", "no"): (70.23, 87.39, 60.14),
    ("oral", "blogcatalog", "yes"): (73.76, 88.46, 65.11),
    ("oral", "amazonphoto", "no"): (84.09, 92.71, 70.79),
    ("oral", "amazonphoto", "yes"): (88.05, 95.36, 76.77),
    ("opennc", "cora", "no"): (53.28, 56.76, 48.41), ("opennc", "cora", "yes"): (51.03, 50.56, 51.67),
    ("opennc", "blogcatalog", "no"): (42.83, 34.55, 47.70),
    ("opennc", "blogcatalog", "yes"): (42.73, 34.84, 47.37),
    ("opennc", "amazonphoto", "no"): (67.98, 68.58, 67.04),
    ("opennc", "amazonphoto", "yes"): (67.41, 66.75, 68.43),
    ("oral_no_pol", "cora", "no"): (65.97, float("nan"), 55.27),
    ("oral_no_pol", "cora", "yes"): (64.53, float("nan"), 49.10),
    ("oral_no_pol", "blogcatalog", "no"): (70.44, float("nan"), 60.38),
    ("oral_no_pol", "blogcatalog", "yes"): (73.10, float("nan"), 63.80),
    ("gcn", "cora", "no"): (39.29, 67.31, 0.00), ("gcn", "blogcatalog", "no"): (26.04, 70.28, 0.00),
    ("gcn", "amazonphoto", "no"): (56.69, 93.44, 0.00),
    ("vgae_kmeans", "cora", "yes"): (50.60, 49.48, 52.22),
    ("vgae_kmeans", "blogcatalog", "yes"): (38.18, 25.03, 45.92),
    ("vgae_kmeans", "amazonphoto", "yes"): (66.35, 65.89, 67.06),
    ("gcd", "cora", "no"): (50.67, 54.31, 45.50), ("gcd", "cora", "yes"): (48.08, 51.69, 43.03),
    ("gcd", "blogcatalog", "no"): (37.79, 26.00, 44.73),
    ("gcd", "blogcatalog", "yes"): (37.91, 27.13, 44.25),
    ("gcd", "amazonphoto", "no"): (70.66, 71.98, 68.44),
    ("gcd", "amazonphoto", "yes"): (70.52, 71.98, 68.27),
}
PAPER_CLASSES = {"cora": 7.7, "amazonphoto": 8.0, "blogcatalog": 5.7}
#: Table 3's class-number estimates of the other methods (ORAL's are ``PAPER_CLASSES``)
PAPER_CLASSES_OTHERS = {
    ("gcd", "cora"): 6.0, ("gcd", "amazonphoto"): 7.1, ("gcd", "blogcatalog"): 6.3,
    ("opennc", "cora"): 7.4, ("opennc", "amazonphoto"): 8.8, ("opennc", "blogcatalog"): 5.6,
}


def paper_classes(method: str, dataset: str) -> float | None:
    """The paper's class-number estimate (Table 3, no prior) of ``method`` on ``dataset``."""
    if method == "oral":
        return PAPER_CLASSES.get(dataset)
    return PAPER_CLASSES_OTHERS.get((method, dataset))


def method_config(method: str, base: ORALConfig, prior: int | None, seed: int) -> ORALConfig:
    """The configuration of ``method`` (Table 4 switches) for one seed and prior setting.

    For a baseline, its own configuration dataclass with its defaults; only the seed, the device
    and the prior come from the run (raises :class:`~harness.baselines.NotApplicable`
    where it cannot run).
    """
    if method in BASELINES:
        return baseline_config(method, seed, base.device, prior)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {ALL_METHODS}")
    values = base.to_dict() | METHODS[method] | {"seed": seed, "prior_num_classes": prior}
    return ORALConfig.from_dict(values)


@dataclass
class Prepared:
    graph: Graph
    x: torch.Tensor
    features: str


def prepare(dataset: str, data_dir: str | None = None) -> Prepared:
    """Load a dataset and preprocess its features once for all seeds."""
    graph = load_dataset(dataset, data_dir)
    name = canonical_name(graph.name if graph.name else dataset)
    mode = FEATURES.get(name, FEATURES.get(canonical_name(dataset), "row"))
    return Prepared(graph, preprocess_features(graph.x, mode), mode)


#: evaluation protocols (``oral reproduce --protocol``)
PROTOCOLS = ("ours", "paper")
#: how the known classes are chosen (``oral reproduce --known``): the protocol's own choice, or a
#: seeded random choice per seed
KNOWN_CHOICES = ("default", "random")

#: The paper's known classes, where its Table 2 pins them down. Table 2 obeys
#: All = f·Known + (1−f)·Novel with one f per dataset (Cora 0.584, AmazonPhoto 0.607,
#: BlogCatalog 0.370); with every node outside the labelled training set scored, these choices
#: give that f: Cora's novel classes are the last two of Planetoid's class order (Case_Based,
#: Rule_Learning; OpenNCD and ORCA take known = range(k) in the loader's order), BlogCatalog's the
#: last two ids. For AmazonPhoto the first six classes give f = 0.415, not 0.607; among the 28
#: pairs of novel classes, Lenses + Flashes gives the f closest to 0.607 (0.607; next: Film
#: Photography + Tripods & Monopods, 0.605), so those two are novel (an inference, not stated by
#: the paper). Entries are class names where the loader has them, else class ids.
PAPER_KNOWN: dict[str, list] = {
    "cora": ["Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
             "Reinforcement_Learning", "Theory"],
    "blogcatalog": [0, 1, 2, 3],
    "amazonphoto": ["Film Photography", "Digital Cameras", "Binoculars & Scopes",
                    "Tripods & Monopods", "Video Surveillance", "Lighting & Studio"],
}


def protocol_tag(protocol: str = "ours", known: str = "default") -> str:
    """The protocol's name in result files: ``ours``, ``paper``, ``ours+random-known`` ..."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {list(PROTOCOLS)}, got {protocol!r}")
    if known not in KNOWN_CHOICES:
        raise ValueError(f"known must be one of {list(KNOWN_CHOICES)}, got {known!r}")
    return protocol + ("+random-known" if known == "random" else "")


def paper_known_classes(graph: Graph) -> list[int] | None:
    """Class ids of :data:`PAPER_KNOWN` for this graph, None for a graph the paper does not use."""
    entries = PAPER_KNOWN.get(canonical_name(graph.name))
    if entries is None:
        return None
    if all(isinstance(e, int) for e in entries):
        return list(entries)
    names = list(graph.class_names or [])
    missing = [e for e in entries if e not in names]
    if missing:
        raise ValueError(f"{graph.name}: the paper protocol's known classes {missing} are not "
                         f"among the dataset's classes {names}")
    return sorted(names.index(e) for e in entries)


def protocol_split(graph: Graph, seed: int, protocol: str = "ours",
                   known: str = "default") -> tuple[OpenWorldSplit, torch.Tensor]:
    """The split of one seed and the nodes it scores.

    ``ours`` (strict): the lowest class ids are known; only the unlabelled nodes ``V_U`` are
    scored (validation nodes, which model selection may read, never are). ``paper``: the known
    classes of :data:`PAPER_KNOWN` (lowest ids for other graphs) and every node outside the
    labelled training set is scored, validation nodes included, as the paper's problem statement
    splits V into V_L and V_U only; a rule that reads validation nodes (``selection="best_val"``)
    is then scored partly on nodes it chose by. ``known="random"``: a seeded random choice of
    known classes per seed under either protocol.
    """
    protocol_tag(protocol, known)
    paper_known = paper_known_classes(graph) if protocol == "paper" and known != "random" else None
    if known == "random":
        split = make_split(graph.y, seed=seed, known_choice="random")
    elif paper_known is not None:
        split = make_split(graph.y, seed=seed, known_classes=paper_known)
    else:
        split = make_split(graph.y, seed=seed)
    scored = split.test_mask if protocol == "ours" else ~split.train_mask
    return split, scored


class FailedRun(RuntimeError):
    """A method whose validation accuracy never rose above the majority-class share: it learnt
    nothing, and its scores are reported as a failure, never as a number."""


def check_learnt(found, val_labels: torch.Tensor, method: str) -> None:
    """Raise :class:`FailedRun` when the kept model's validation accuracy on labelled known-class
    nodes is no better than always answering the most frequent validation class."""
    has = val_labels >= 0
    if not bool(has.any()) or math.isnan(found.val_accuracy):
        return
    majority = float(torch.bincount(val_labels[has]).max()) / int(has.sum())
    if found.val_accuracy <= majority + 1e-9:
        raise FailedRun(f"{method} failed to train: validation accuracy {100 * found.val_accuracy:.2f}% "
                        f"is no better than the majority class share {100 * majority:.2f}% "
                        f"(kept epoch {found.epoch})")


def score(graph: Graph, class_id: torch.Tensor, split: OpenWorldSplit, scored: torch.Tensor) -> dict:
    """GCD-convention All / Known / Novel (%) of one prediction on the scored nodes."""
    pred = to_dataset_ids(class_id, split.known_classes, graph.num_classes)
    acc = open_world_accuracy(graph.y[scored], pred[scored], split.known_classes)
    return {k: 100 * v for k, v in acc.items()}


def same_split(a: OpenWorldSplit, b: OpenWorldSplit) -> bool:
    """True when two splits give a method the same input: the same known classes and the same
    labelled training and validation nodes (they may still score different nodes)."""
    return (torch.equal(a.known_classes, b.known_classes) and torch.equal(a.train_mask, b.train_mask)
            and torch.equal(a.val_mask, b.val_mask))


def twin_protocols(graph: Graph, seed: int, protocol: str = "ours", known: str = "default") -> list[str]:
    """The other protocols whose split of this seed is :func:`same_split` as ``protocol``'s (e.g.
    ``paper`` and ``ours`` on BlogCatalog, whose paper known classes are the lowest ids): one
    training serves them all, since nothing a method sees differs; only the scored nodes do."""
    split, _ = protocol_split(graph, seed, protocol, known)
    twins = []
    for other in PROTOCOLS:
        if other == protocol:
            continue
        try:
            other_split = protocol_split(graph, seed, other, known)[0]
        except ValueError:  # the other protocol cannot split this graph: no twin, not an error
            continue
        if same_split(split, other_split):
            twins.append(other)
    return twins


def run_seed(prep: Prepared, method: str, seed: int, prior: bool, base: ORALConfig,
             protocol: str = "ours", known: str = "default") -> dict:
    """Train ``method`` on one seed's split and score it under ``protocol`` (Eq. 14; see
    :func:`protocol_split`).

    Raises :class:`~harness.baselines.NotApplicable` for a baseline that cannot run in this
    prior setting, :class:`FailedRun` for a run that learnt nothing (:func:`check_learnt`).
    """
    return run_seed_protocols(prep, method, seed, prior, base, [protocol], known)[protocol]


def run_seed_protocols(prep: Prepared, method: str, seed: int, prior: bool, base: ORALConfig,
                       protocols: list[str], known: str = "default") -> dict[str, dict]:
    """Train ``method`` once and score it under each of ``protocols``, whose splits of this seed
    must be :func:`same_split` (:func:`twin_protocols`); returns one row per protocol. A row
    scored from a training run under another protocol's split says so (``trained_under``)."""
    g = prep.graph
    splits = {p: protocol_split(g, seed, p, known) for p in protocols}
    split = splits[protocols[0]][0]
    if not all(same_split(split, s) for s, _ in splits.values()):
        raise ValueError(f"protocols {protocols} split seed {seed} of {g.name} differently: "
                         f"one training cannot serve them all")
    num_classes = g.num_classes
    config = method_config(method, base, num_classes if prior else None, seed)
    start = time.perf_counter()
    model = BASELINES[method](config) if method in BASELINES else ORAL(config).with_diagnostics()
    val_labels = split.val_labels(g.y)
    model.fit(prep.x, g.edge_index, split.train_labels(g.y), val_labels)
    found = model.predict()
    seconds = time.perf_counter() - start
    check_learnt(found, val_labels, method)
    pred = to_dataset_ids(found.class_id, split.known_classes, num_classes)
    common = {
        "method": method, "dataset": canonical_name(g.name), "seed": seed,
        "prior": "yes" if prior else "no",
        "known_classes": split.known_classes.tolist(),
        "classes_est": found.num_classes, "classes_true": num_classes,
        "classes_abs_err": class_number_error(found.num_classes, num_classes),
        "val_acc": 100 * found.val_accuracy, "selected_epoch": found.epoch,
        "seconds": seconds, "device": str(next(model.network_.parameters()).device),
        "config": config.to_dict(), "features": prep.features,
        "config_hash": config_hash(config, prep.features), "code_version": code_version(),
    }
    rows = {}
    for protocol in protocols:
        test = splits[protocol][1]
        row = common | {"protocol": protocol_tag(protocol, known)}
        row.update(scored_row(g, found, pred, split, test, getattr(model, "discoveries_", {})))
        if protocol != protocols[0]:
            row["trained_under"] = protocol_tag(protocols[0], known)
        rows[protocol] = row
    return rows


def scored_row(g: Graph, found, pred: torch.Tensor, split: OpenWorldSplit, test: torch.Tensor,
               discoveries: dict) -> dict:
    """The scores of one prediction ``found`` (``pred`` in dataset ids) on the scored nodes
    ``test``: GCD-, ORCA- and fixed-id conventions, per layer, what the other selection rules of
    the same training run (``discoveries``) would have scored, the contingency table."""
    num_classes = g.num_classes
    gcd = open_world_accuracy(g.y[test], pred[test], split.known_classes)
    orca = orca_accuracy(g.y[test], pred[test], split.known_classes)
    fixed = fixed_id_accuracy(g.y[test], pred[test], split.known_classes)
    layers = [open_world_accuracy(g.y[test], to_dataset_ids(c, split.known_classes, num_classes)[test],
                                  split.known_classes) for c in found.layer_class_ids]
    # what the other selection rule would have scored on the same training run (diagnostic only:
    # it never chooses anything)
    alternatives = {rule: score(g, d.class_id, split, test) | {"epoch": d.epoch,
                                                                "classes": d.num_classes}
                    | ({"val_acc": 100 * d.val_accuracy} if math.isfinite(d.val_accuracy) else {})
                    for rule, d in discoveries.items()}
    known_share = float(torch.isin(g.y[test], split.known_classes).float().mean())
    return {
        "scored_known_share": known_share, "selection_alternatives": alternatives,
        "all": 100 * gcd["all"], "known": 100 * gcd["known"], "novel": 100 * gcd["novel"],
        "orca_known": 100 * orca["known"], "orca_novel": 100 * orca["novel"],
        "fixed_all": 100 * fixed["all"], "fixed_known": 100 * fixed["known"],
        "fixed_novel": 100 * fixed["novel"],
        "contingency": contingency(g.y[test], pred[test]),
        "layers_all": [100 * a["all"] for a in layers],
        "layers_known": [100 * a["known"] for a in layers],
        "layers_novel": [100 * a["novel"] for a in layers],
        "partition": partition_text(pred, test),
    }


def partition_text(pred: torch.Tensor, scored: torch.Tensor) -> str:
    """A seed's partition of the scored nodes, compact: one comma-separated id per node of the
    graph, ``-1`` where the node is not scored. Two seeds' partitions are compared on the nodes
    both scored (:func:`oral_core.metrics.adjusted_rand_index`, label-free seed stability)."""
    return ",".join(map(str, torch.where(scored, pred, torch.full_like(pred, -1)).tolist()))


def partition_from_text(text: str) -> torch.Tensor:
    """The ids :func:`partition_text` wrote, ``-1`` for nodes not scored."""
    return torch.tensor([int(v) for v in text.split(",")], dtype=torch.long)


def to_dataset_ids(class_id: torch.Tensor, known_classes: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Known indices back to the dataset's class ids; novel ids moved past every real class id."""
    k = known_classes.numel()
    known = class_id < k
    return torch.where(known, known_classes[class_id.clamp(max=k - 1)], num_classes + class_id - k)


#: The per-seed accuracies under the three scoring conventions (:mod:`oral_core.metrics`).
SCORES = ("all", "known", "novel", "orca_known", "orca_novel", "fixed_all", "fixed_known",
          "fixed_novel")


def summarise(rows: list[dict]) -> dict:
    """Mean and (sample) standard deviation of every metric over seeds.

    A metric that some seed files lack (written before it existed) is NaN rather than a mean over
    a subset of the seeds."""
    out = {"seeds": len(rows)}
    for key in (*SCORES, "classes_est", "classes_abs_err", "seconds"):
        if not all(key in r for r in rows):
            out[f"{key}_mean"] = out[f"{key}_std"] = float("nan")
            continue
        vals = [float(r[key]) for r in rows if not math.isnan(float(r[key]))]
        mean = sum(vals) / len(vals) if vals else float("nan")
        var = sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else 0.0
        out[f"{key}_mean"], out[f"{key}_std"] = mean, math.sqrt(var)
    return out
