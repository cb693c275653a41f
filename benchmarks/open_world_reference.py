"""The two reference rows of the nightly scoreboard (issue 60, item 1), answered night by night
on the same snapshots as the pipeline and scored by the same code (:mod:`benchmarks.scoreboard`).

- **silent LR**: a logistic regression on the known classes (standardised over every node, as
  the pipeline's head and gate are), fitted on the pipeline's own training split of the labelled
  nodes. It never publishes a novel class: a product that stays silent scores this row.
- **open-world GCN**: what a practitioner would build without ORAL. A known-class GCN (the
  Table 2 GCN, early-stopped on the validation split); per node its energy
  ``E = -logsumexp(logits)``, propagated over the graph as GNNSafe does
  (``E <- alpha E + (1 - alpha) D^-1 A E``, :func:`oral_core.answer.propagated_energy`, the
  same as the per-class answer's novelty check); an unlabelled node is flagged novel when its energy is above the
  :data:`QUANTILE` quantile of the validation nodes' (so about 5% of known-class nodes are
  flagged: a threshold set on labelled nodes only); the flagged nodes are clustered by k-means
  on the GCN's hidden layer, ``k`` in 2..:data:`MAX_K` chosen by silhouette. Its clusters keep
  an identity from night to night by the simplest lineage (:func:`carry_ids`): a cluster
  continues last night's id when most of its nodes that were there last night sat in it; every
  cluster is published the night it appears.

The answers are dicts as :func:`benchmarks.nightly_loop.score_loop` takes them. Nothing here reads
a test label: the models see the training and validation labels of the snapshot only.
"""
from __future__ import annotations

import json
from pathlib import Path

QUANTILE = 0.95
MAX_K = 8
#: fewer flagged nodes than this form one cluster (silhouette needs several per cluster)
MIN_TO_CLUSTER = 20
#: bumped when an answer changes (cached answers of another version are recomputed)
VERSION = 1


def fit_inputs(snapshot):
    """The inputs every reference reads: ``(x, edges, train, val)``; features preprocessed as
    the pipeline does (dense), canonical edges, the pipeline's split of the labelled nodes."""
    import numpy as np
    import torch

    from oral_core.datasets import auto_feature_mode, preprocess_features
    from oral_core.graph import canonical_edges
    from tasks.fitting import split_labelled

    raw = torch.from_numpy(np.array(snapshot.x))
    x = preprocess_features(raw, auto_feature_mode(raw))
    x = x.to_dense() if x.is_sparse else x
    train, val = split_labelled(snapshot.labels, 0)
    edges = canonical_edges(torch.from_numpy(snapshot.edge_index), snapshot.num_nodes)
    return x, edges, torch.from_numpy(train), torch.from_numpy(val)


def silent_lr_classes(x, train, num_classes: int):
    """Per node, the known class the silent logistic regression names (an index)."""
    import torch

    from oral_core.reference import fit_logistic_regression, standardize

    z = standardize(x)
    lr = fit_logistic_regression(z, train, num_classes)
    with torch.no_grad():
        return lr(z).argmax(1).numpy()


def silhouette_clusters(z, max_k: int = MAX_K, seed: int = 0):
    """k-means on the rows of ``z`` with ``k`` in 2..``max_k`` chosen by silhouette (sampled to
    2,000 rows); fewer than :data:`MIN_TO_CLUSTER` rows form one cluster. Returns cluster ids."""
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(z)
    if n < MIN_TO_CLUSTER:
        return np.zeros(n, dtype=int)
    best, best_score = None, -2.0
    for k in range(2, min(max_k, n - 1) + 1):
        found = KMeans(k, n_init=4, random_state=seed).fit_predict(z)
        if len(set(found)) < 2:
            continue
        s = silhouette_score(z, found, sample_size=min(n, 2000), random_state=seed)
        if s > best_score:
            best, best_score = found, s
    return best if best is not None else np.zeros(n, dtype=int)


def open_world_classes(x, edges, train, val, num_classes: int):
    """Per node: the known class the GCN names (index) and a novel cluster id (-1: not
    flagged) of the open-world reference (module doc)."""
    import numpy as np
    import torch

    from harness.baselines import GCNBaseline

    gcn = GCNBaseline(seed=0, device="cpu").fit(x, edges, train, val)
    net = gcn.network_
    with torch.no_grad():
        xs = x.float()
        logits = net(xs, edges)
        hidden = torch.relu(net.conv1(xs, edges)).numpy()
    known = logits.argmax(1).numpy()
    from oral_core.answer import propagated_energy

    energy = propagated_energy(logits, edges).numpy()
    has_val = val.numpy() >= 0
    cluster = np.full(x.shape[0], -1)
    if not has_val.any():
        return known, cluster
    threshold = np.quantile(energy[has_val], QUANTILE)
    flagged = (train.numpy() < 0) & ~has_val & (energy > threshold)
    if flagged.any():
        cluster[flagged] = silhouette_clusters(hidden[flagged])
    return known, cluster


def carry_ids(clusters: dict[str, int], previous: dict[str, str], counter: int, prefix: str
              ) -> tuple[dict[str, str], dict[str, str], int]:
    """The reference's lineage. ``clusters``: ``{node: cluster id}`` tonight (novel nodes only);
    ``previous``: last night's ``{node: novel lineage id}``. A cluster continues the id that most
    of its nodes present last night held, when they are more than half of them (each old id
    continues once, the larger cluster first); others get new ids ``prefix:novel:<counter>``.
    Returns ``(tonight's {node: lineage id}, statuses, counter)``: ``persisting``, ``emerged``,
    and ``vanished`` for last night's ids that did not continue."""
    from collections import Counter, defaultdict

    groups = defaultdict(list)
    for n, c in clusters.items():
        groups[c].append(n)
    taken, ids, statuses = set(), {}, {}
    for c, nodes in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        before = Counter(previous[n] for n in nodes if n in previous)
        was = sum(1 for n in nodes if n in previous)
        old = next((lid for lid, k in before.most_common() if lid not in taken and 2 * k > was),
                   None)
        if old is None:
            counter += 1
            lid = f"{prefix}:novel:{counter}"
            statuses[lid] = "emerged"
        else:
            lid = old
            taken.add(lid)
            statuses[lid] = "persisting"
        for n in nodes:
            ids[n] = lid
    for lid in set(previous.values()) - set(ids.values()):
        statuses[lid] = "vanished"
    return ids, statuses, counter


def snapshot_answers(snapshot, cache_dir: Path | None = None) -> dict:
    """Both references' per-node answers on one snapshot, as
    ``{"node_ids", "class_names", "lr", "gcn", "cluster"}`` (JSON-able); kept under ``cache_dir``
    by content hash when given (the fits cost seconds to minutes a night)."""
    path = (cache_dir / f"{snapshot.content_hash}-v{VERSION}.json") if cache_dir else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    x, edges, train, val = fit_inputs(snapshot)
    names = list(snapshot.class_names)
    known, cluster = open_world_classes(x, edges, train, val, len(names))
    found = {"node_ids": [str(n) for n in snapshot.node_ids.to_pylist()], "class_names": names,
             "lr": silent_lr_classes(x, train, len(names)).tolist(), "gcn": known.tolist(),
             "cluster": cluster.tolist()}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(found))
    return found


def reference_nights(answers: list[dict], truths: list[dict], known: list[set], graph: str
                     ) -> dict[str, list[dict]]:
    """The two references' nights for :mod:`benchmarks.scoreboard`, from each night's
    :func:`snapshot_answers`, its scored truth and its known class names:
    ``{"silent_lr": [...], "open_world": [...]}``."""
    silent, open_world, previous, counter = [], [], {}, 0
    for found, truth, names_known in zip(answers, truths, known):
        names = found["class_names"]
        known_ids = {f"known:{c}": c for c in names}
        lr = {n: f"known:{names[c]}" for n, c in zip(found["node_ids"], found["lr"])}
        silent.append({"truth": truth, "known": names_known, "assign": lr, "names": known_ids,
                       "statuses": {}, "candidates": set()})
        clusters = {n: c for n, c in zip(found["node_ids"], found["cluster"]) if c >= 0}
        novel, statuses, counter = carry_ids(clusters, previous, counter, f"{graph}-ow")
        assign = {n: novel.get(n, f"known:{names[c]}")
                  for n, c in zip(found["node_ids"], found["gcn"])}
        open_world.append({"truth": truth, "known": names_known, "assign": assign,
                           "names": known_ids | {lid: None for lid in set(novel.values())},
                           "statuses": statuses, "candidates": set()})
        previous = novel
    return {"silent_lr": silent, "open_world": open_world}
