"""Where the pipeline keeps its state, from the environment (embedded defaults, no server).

| variable | default | what |
|---|---|---|
| ``ORAL_STATE_DIR`` | ``./state`` | everything below lives here unless set otherwise |
| ``ORAL_WAREHOUSE`` | ``$ORAL_STATE_DIR/oral.duckdb`` | the DuckDB file analysts query |
| ``ORAL_TRACKING_URI`` (or ``MLFLOW_TRACKING_URI``) | ``sqlite:///$ORAL_STATE_DIR/mlflow.db`` | MLflow store or server |
| ``PREFECT_HOME`` | ``$ORAL_STATE_DIR/prefect`` | Prefect's database and persisted task results |
| ``PREFECT_API_URL`` | unset: in-process server | a Prefect server to report to |
| ``ORAL_PREFECT_HOME_TEMPLATE`` | unset | a Prefect home whose migrated ``prefect.db`` a new, empty Prefect home starts from before the temporary server starts, skipping its migrations (5-10 s a fresh state folder; the test suite sets it; make one with ``PREFECT_HOME=DIR prefect server database upgrade -y``; :func:`seed_prefect_home`) |
| ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` | unset: no heartbeats from runs the CLI starts | seconds between flow-run heartbeats, for a server that marks runs crashed when they stop (:func:`flow_runs_started_here`); deployments' runs keep Prefect's default |
| ``ORAL_REMOTE_TRAINING`` | off | ``1``: the nightly flow hands training to a deployment |
| ``ORAL_TRAINING_DEPLOYMENT`` | ``train-remote/gpu`` | that deployment (``<flow name>/<deployment name>``) |
| ``ORAL_REMOTE_TRAINING_TIMEOUT`` | ``21600`` (6 h) | seconds the nightly flow waits for it |
| ``ORAL_WARM_START`` | off | ``1``: a night continues the previous night's champion (a warm start) |
| ``ORAL_COLD_EVERY`` | ``7`` | with warm starts, a cold night at least every this many nights (``0``: never forced) |
| ``ORAL_GATE_REFERENCE_MARGIN`` | ``0`` | the champion gate finds a model degraded when its known-class validation accuracy is below the reference logistic regression's by more than this (``off``: no reference check) |
| ``ORAL_GATE_TEST`` | ``strict`` | how the reference check compares: ``strict``, degraded whenever the reference's validation accuracy is higher; ``mcnemar``, only when it names the same validation nodes better beyond chance (exact McNemar test, 5%) |
| ``ORAL_GATE_SCOPE`` | ``night`` | which validation nodes the reference check compares on: ``night``, all of them; ``known``, those the model names a known class (the novel classes are judged by their own validation nodes, the known-split check) |
| ``ORAL_NIGHT_ANSWER`` | ``per_class+paired+burstgrowmost+burstsplit+split+lastsplit+rejected+regroupcal`` | what a night publishes: ``whole``, the model's answer when the champion gate passes it, else nothing (the analyst keeps an older night's answer); ``per_class``, every night an answer decided per class: known classes named by the best of ORAL, the reference logistic regression and a known-class GCN on the validation nodes, novel classes as ORAL found them (``tasks.answer``; the gate then decides the champion alone); ``+paired`` (``per_class+paired``): another classifier names the known classes only when it beats ORAL's own naming beyond chance (McNemar, 5%); ``+energy`` (an option, ``per_class+paired+energy``): a node of a novel group whose propagated energy (GNNSafe) is at or below the validation nodes' 0.8 quantile is named a known class; ``+burst`` (an option, before ``+split``): the unlabelled nodes absent from the snapshot two snapshots back whose 10 nearest neighbours (on ``S^2 X``) hold more such recent nodes than the graph's own growth gives (one-sided binomial, 1%) are joined into components, and each of at least 5 nodes becomes a young novel class (or stays the novel class it mostly is) unless its validation nodes say it is a piece of a known class; ``+burstjoin`` (the default's from 2026-12-05 to 2026-12-06, instead of ``+burst``): that step with the bursts lying mostly in one class of the answer taken together and those in a novel class joining it, so that a young class the answer holds is never cut; ``+burstyoung`` (an option, instead of ``+burst``): that joining step with a burst joining a novel class only when most of the class's unlabelled nodes arrived within the last two snapshots (a young class), and becoming a class of its own in an older, mixed one; ``+burstgrow`` (an option, instead of ``+burst``): that young-joining step with each class a burst went into then grown over the recent nodes around it (a recent unlabelled node joins when at least 2 of its 10 nearest nodes are recent members of the class and more than half of its recent neighbours, up to 3 rounds); ``+burstgrowmost`` (the default's since 2026-12-06, instead of ``+burst``): that growth with a node joining only where the class's recent members among its 10 nearest nodes are also more than its neighbours, old or recent, in the class it has (an older class's own growth stays in it); ``+burstsplit`` (the default's since 2026-12-06, with a burst form): a burst does not join a novel class whose other nodes hold validation nodes as the known classes do (the split check's estimate, share 0.5), it becomes a class of its own and the split check judges the rest alone; ``+split`` (the default's): a novel class of the answer that holds validation nodes at the rate the known classes do (the known-split check, share 0.5) is dropped, its nodes named known; ``+agesplit`` (an option, with ``+split``): a novel class the split check keeps is judged again in two parts by arrival, and its nodes present two snapshots back are named known when they alone hold validation nodes as the known classes do (the split check's estimate, share 0.5, at least 5 unlabelled nodes); ``+lastsplit`` (the default's since 2026-12-07, with ``+split``): a novel class the split check keeps is judged again on the part of it the previous published answer named a known class, and that part is named known when it alone holds validation nodes as the known classes do (the same estimate, share and least size); ``+carve`` (an option, before ``+split``): a novel class the split check would drop is first cut in 4 parts on ``S^2 X``, the parts that hold validation nodes as known classes do (one half of them) are named known and the rest stays one class, judged again on the other half; ``+carvetest`` (an option, instead of ``+carve``): that carve with what a class keeps named known too unless it holds significantly fewer validation nodes of the other half than a known slice of its size (one-sided Poisson, 1%); ``+returned`` (an option): a node of a novel group whose energy is at or below the validation nodes' 0.9 quantile, half of whose 10 nearest neighbours (on ``S^2 X``) are named known, is named a known class; ``+rejected`` (the default's): a node named known whose energy is above the validation nodes' 0.95 quantile, among neighbours (on ``S^2 X``) that are mostly above it too, joins their novel class or forms a new one; ``+regain`` (an option, with ``+split``, after ``+rejected``): the nodes of the novel classes the split check dropped whose energy is above the validation nodes' 0.8 quantile are grouped as rejected nodes are; ``+regroup`` (an option, last): each novel class cut on ``S^2 X`` into the most parts (up to 4) whose cut is reproducible, prediction strength >= 0.8 (Tibshirani & Walther); ``+regroupknown`` (an option, instead of ``+regroup``): that regroup with each cut also more reproducible than every known class's own cut into as many parts; ``+regroupcal`` (the default's since 2026-12-04, instead of ``+regroup``): that regroup only on nights whose labelled nodes show the cut telling the known classes apart (it divides at most one in five of them and cuts most pairs of them into their two classes); ``+regroupodds`` (an option, instead of ``+regroupcal``): that regroup on nights where the cut tells pairs of labelled known classes apart more often than it divides one of them |
| ``ORAL_EMERGENCE_ALPHA`` | ``0.01`` | with warm starts, the level of the check that retrains a warm night cold when a class seems to have emerged (``tasks.emergence``; ``0``: off) |
| ``ORAL_CONFIRM_NOVEL`` | on | ``0``: a novel class is published the night it appears, instead of being a ``candidate`` on its first night and ``emerged`` when it is there again the next (``tasks.warehouse.lineage``, confirmation) |
| ``ORAL_LINEAGE_CONTAINED`` | on | ``0``: a novel class that grew out of a single previous novel class (it holds most of that class's nodes, and no other previous class went mostly to it) gets a new id when its Jaccard index with it is under 0.3, instead of continuing it (``tasks.warehouse.lineage.contained_continuations``; the default since 2026-12-04, ``benchmarks/results/lineage_contained``) |
| ``ORAL_LINEAGE_PUBLISHED`` | on | a novel class whose match was last night's candidate and that absorbs a published novel class continues the published one (the candidate is dismissed), so a published id does not end in a one-night candidate grown beside it (``tasks.warehouse.lineage.published_continuations``; the default since 2026-12-05, ``benchmarks/results/lineage_published``; ``0``: the match's id goes on) |
| ``ORAL_CANDIDATES_NAMED`` | on | the nodes of a candidate (a novel class on its first night, waiting for confirmation) are published in ``node_assignments`` under the known class the known-class classifier names them (the night's answer per class), not under the candidate's id, until it is confirmed; the candidate keeps its ``classes`` and ``class_lineage`` rows and its nodes their ``class_key``, so lineage and confirmation are unchanged (``tasks.publishing.write_run``; the default since 2026-12-07, ``benchmarks/results/candidates_named``; ``0``: a candidate's nodes carry its id) |
| ``ORAL_CONFIRM_SIZE`` | ``separable:0.5`` | with confirmation, a new novel class of at least this share of the median known class's size is published the night it appears, only on nights whose fit found the known classes separable (``oral_core.separability``; default since 2026-12-02, ``benchmarks/results/confirm_size_separable_fresh``); ``0.5``: on every night; ``off``: every new novel class waits a night |
| ``ORAL_WRITER_LOCK_TIMEOUT`` | ``600`` | seconds a night waits for the DuckDB writer lock while another live run holds it (``tasks.warehouse.writer_lock``) |
| ``ORAL_MIN_FREE_MB`` | ``200`` | free space, in MB, every folder a night writes to must have before it starts and before each write-heavy step (``tasks.diskspace``; ``0``: no check) |

:func:`configure_environment` must run before ``prefect`` is imported (the CLI does it first).
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: the champion gate's comparisons with the reference classifier (``ORAL_GATE_TEST``) and the
#: validation nodes they compare on (``ORAL_GATE_SCOPE``)
GATE_TESTS = ("mcnemar", "strict")
GATE_SCOPES = ("night", "known")
#: what a night publishes (``ORAL_NIGHT_ANSWER``): the whole night as the gate judges it, or an
#: answer decided per class (tasks.answer, issue 60)
NIGHT_ANSWERS = ("whole", "per_class")
#: the default since 2026-12-02: every night answered, ORAL's own naming of the known classes
#: kept unless another classifier beats it beyond chance (the rule set down before the rows held:
#: every night of 6 loops answered, and the paired choice cross-fitted on the validation nodes
#: names as many right as ORAL's own naming, benchmarks/results/night_answer_paired/README.md);
#: ``+rejected`` since 2026-12-04 (its rule set down before its rows held on fresh simulation 13,
#: labelled nodes only: young classes surfaced in 18 fits against 12, held-out All and stand-ins
#: no worse beyond one standard error, no class invented, benchmarks/results/rejected_young);
#: ``+split`` since 2026-12-04 too (its rule set down before its rows held on fresh simulation
#: 15, labelled nodes only: no young class or stand-in lost, held-out All no worse, invented
#: classes 4 against 9 and Cora's no-novel accuracy +32.7 (s.e. 7.3),
#: benchmarks/results/answer_split_fresh); ``+regroupcal`` since 2026-12-04 (its rule set down
#: before its rows held on fresh simulation 23, labelled nodes only: held-out stand-ins surfaced
#: 43 against 34 over five graphs, none fewer on any graph, held-out All no worse beyond the
#: rule's bounds, no-novel accuracy and invented classes unchanged, young classes unchanged,
#: benchmarks/results/answer_regroup_cal); ``+burstjoin`` since 2026-12-05 (its rule set down before its rows held on fresh simulation 27,
#: labelled nodes only: young classes surfaced 9 against 5 over five graphs, none fewer on any
#: graph, held-out stand-ins, no-novel accuracy and invented classes unchanged, held-out and
#: young All within the rule's bounds,
#: benchmarks/results/answer_burst_join); ``+burstgrowmost`` instead since 2026-12-06 (its rule
#: set down before its rows held on fresh simulation 32, labelled nodes only: 68 classes surfaced
#: against 58 over five graphs, none fewer on any graph, AmazonPhoto's young class beside an old
#: one 10 of 12 against 2, held-out All, no-novel accuracy and young All within the rule's bound
#: of -0.5 on every graph, invented classes unchanged,
#: benchmarks/results/answer_burst_grow_most); ``+burstsplit`` too since 2026-12-06 (its rule
#: set down before its rows held on fresh simulation 33, labelled nodes only: nothing surfaced
#: less on any of five graphs, every cost inside -0.5 (all +0.00 but AmazonPhoto's young-class
#: All, -0.09), classes invented unchanged, witness Known better in 3 of 30 fits, worse in none,
#: +0.94 on average (Cora's night 8),
#: benchmarks/results/answer_burst_split); ``+lastsplit`` too since 2026-12-07 (its rule set
#: down before its rows held on fresh simulation 35, labelled nodes only: nothing surfaced less
#: on any of five graphs, every cost inside -0.5 (the lowest BlogCatalog's young class beside an
#: old one, -0.41, s.e. 2.00), classes invented unchanged, witness Known better in 5 of 30 fits,
#: worse in none, +1.73 on average (BlogCatalog +6.91),
#: benchmarks/results/answer_last_split)
DEFAULT_NIGHT_ANSWER = "per_class+paired+burstgrowmost+burstsplit+split+lastsplit+rejected+regroupcal"
#: what ``per_class`` may add, ``+``-joined (``per_class+paired``): ``paired``, another
#: classifier names the known classes only when it beats ORAL's own naming beyond chance (the
#: answer's own novel classes judged by the known-split check stayed out of the pipeline: its
#: rule failed, benchmarks/results/answer_proxy); ``energy``, the novelty check: a node of a
#: novel group that a known-class classifier's propagated energy finds ordinary is named a known
#: class (oral_core.answer.novelty_checked; an option, benchmarks/results/novelty_energy);
#: ``rejected``, the rejected nodes grouped: nodes named known that the known classes reject,
#: among rejected neighbours, join a novel class or form one (oral_core.answer.
#: rejected_nodes_grouped; the default's since 2026-12-04, benchmarks/results/rejected_young);
#: ``returned``, novel nodes returned: a node of a novel group that looks known among
#: neighbours named known is named a known class (oral_core.answer.returned_to_known; an option,
#: benchmarks/results/returned_young); ``split``, each novel class of the answer judged by the
#: known-split check on its own validation nodes, dropped when it holds them as known classes do
#: (oral_core.answer.split_answer; the default's since 2026-12-04,
#: benchmarks/results/answer_split_fresh); ``carve``, each novel class cut in parts on ``S^2 X``
#: and the parts the known-split check calls known named known, the rest kept as one class
#: (oral_core.answer.carved_answer; an option, benchmarks/results/answer_carve_fresh);
#: ``carvetest``, that carve with the rest tested (oral_core.answer.fewer_than_known; an option,
#: benchmarks/results/answer_carve_test); ``regroup``, last, each novel class of the answer cut
#: on ``S^2 X`` into the most parts whose cut is reproducible (prediction strength >= 0.8,
#: oral_core.recut.regrouped_answer; an option, benchmarks/results/answer_regroup);
#: ``regroupknown``, that regroup with each cut also more reproducible than every known class's
#: own cut into as many parts (oral_core.recut.known_yardstick; an option,
#: benchmarks/results/answer_regroup_known); ``regroupcal``, that regroup only on nights where the
#: cut, tried on the labelled nodes of the known classes, tells them apart
#: (oral_core.recut.cut_calibration; the default's since 2026-12-04,
#: benchmarks/results/answer_regroup_cal); ``regroupodds``, instead of ``regroupcal``, that
#: regroup on nights where the cut tells the labelled known classes' pairs apart more often than
#: it divides one of them (oral_core.recut.cut_right_more_often; an option,
#: benchmarks/results/answer_regroup_odds); ``regain``, after ``rejected``, the nodes of the
#: novel classes the split check dropped that the known classes reject at a looser quantile
#: grouped as rejected nodes are (oral_core.answer.regained_nodes; an option,
#: benchmarks/results/answer_regain); ``burst``, before ``split``, the nodes that arrived within
#: the last two snapshots among more recent neighbours than the graph's growth gives form young
#: classes (oral_core.answer.burst_classes; an option, benchmarks/results/answer_burst);
#: ``burstjoin``, instead of ``burst``, the bursts lying in one class of the answer taken together
#: and those in a novel class joining it (the default's from 2026-12-05 to 2026-12-06,
#: benchmarks/results/answer_burst_join);
#: ``burstyoung``, instead of ``burst``, those joining a novel class only when most of its
#: unlabelled nodes arrived within the window (oral_core.answer.young_class; an option,
#: benchmarks/results/answer_burst_young); ``burstgrow``, instead of ``burst``, that form with
#: the classes the bursts went into grown over the recent nodes around them
#: (oral_core.answer.burst_grown; an option, benchmarks/results/answer_burst_grow);
#: ``burstgrowmost``, instead of ``burst``, that growth only where the class's recent members
#: outnumber the node's neighbours in the class it has (the default's since 2026-12-06,
#: benchmarks/results/answer_burst_grow_most); ``burstsplit``, with a burst form, a burst never
#: joining a novel class whose other nodes the split check calls known: it becomes a class of
#: its own (oral_core.answer.burst_classes' ``split_rest``; the default's since 2026-12-06,
#: benchmarks/results/answer_burst_split); ``agesplit``, with ``split``, each novel class the
#: split check keeps judged again in two parts by arrival, its old nodes named known where they
#: alone hold validation nodes as known classes do (oral_core.answer.aged_split; an option,
#: benchmarks/results/answer_age_split); ``lastsplit``, with ``split``, each novel class the
#: split check keeps judged again on its part the previous published answer named known
#: (oral_core.answer.last_night_split; the default's since 2026-12-07,
#: benchmarks/results/answer_last_split).
#: Applied in this order
NIGHT_ANSWER_PARTS = ("paired", "carve", "carvetest", "burst", "burstjoin", "burstyoung",
                      "burstgrow", "burstgrowmost", "burstgrowkeep", "burstsplit", "split",
                      "splitfirst", "agesplit", "lastsplit",
                      "energy",
                      "returned", "rejected", "regain", "regroup", "regroupknown", "regroupcal",
                      "regroupodds")
#: parts that are forms of one step: a night takes one of each group
NIGHT_ANSWER_FORMS = (("carve", "carvetest"), ("burst", "burstjoin", "burstyoung", "burstgrow",
                                                 "burstgrowmost", "burstgrowkeep"),
                      ("regroup", "regroupknown", "regroupcal", "regroupodds"))
#: parts that act on another's result (one of the parts named), with what they do with it:
#: ``regain`` regroups what ``split`` dropped, ``splitfirst`` runs ``split``'s check once more,
#: on the model's own classes first, and ``burstsplit`` changes where a burst form's bursts go
NIGHT_ANSWER_NEEDS = {"regain": (("split",), "works on what +split dropped"),
                      "splitfirst": (("split",), "runs +split's check on the model's classes too"),
                      "burstsplit": (NIGHT_ANSWER_FORMS[1], "decides where a burst goes"),
                      "agesplit": (("split",), "judges by age the classes +split keeps"),
                      "lastsplit": (("split",), "judges again the classes +split keeps")}


#: ``ORAL_CONFIRM_SIZE`` when unset: large new novel classes published at once on separable
#: nights (its rule met on fresh generated loops, benchmarks/results/confirm_size_separable_fresh)
CONFIRM_SIZE_DEFAULT = "separable:0.5"


def confirm_size_rule(text: str) -> tuple[float | None, bool]:
    """``ORAL_CONFIRM_SIZE`` read: ``(share, separable only)``; ``off`` is ``(None, False)``,
    empty is :data:`CONFIRM_SIZE_DEFAULT`. ValueError names what it may say."""
    given = text.strip().lower() or CONFIRM_SIZE_DEFAULT
    if given == "off":
        return None, False
    only, _, raw = given.rpartition(":")
    try:
        share = float(raw)
    except ValueError:
        share = -1.0
    if only not in ("", "separable") or not share > 0:
        raise ValueError(f"ORAL_CONFIRM_SIZE must be off, a share > 0 (0.5) or separable:<share> "
                         f"(separable:0.5), got {text!r}")
    return share, only == "separable"


def switch(variable: str, default: bool) -> bool:
    """An on/off setting from the environment variable ``variable`` (``1``/``0`` and the other
    spellings of :data:`TRUE` and :data:`FALSE`; unset or empty: ``default``); any other value is
    refused in one line."""
    raw = os.environ.get(variable, "").strip().lower() or ("1" if default else "0")
    if raw not in TRUE + FALSE:
        raise ValueError(f"{variable} must be 1 or 0 (on or off), got {raw!r}")
    return raw in TRUE


def night_answer_rule(text: str) -> str:
    """``ORAL_NIGHT_ANSWER`` checked and written canonically (``per_class+paired``, its parts in
    :data:`NIGHT_ANSWER_PARTS` order); ValueError names what it may say."""
    given = text.strip().lower() or DEFAULT_NIGHT_ANSWER
    base, *parts = [t.strip() for t in given.split("+")]
    if (base not in NIGHT_ANSWERS or (parts and base != "per_class")
            or any(p not in NIGHT_ANSWER_PARTS for p in parts) or len(set(parts)) < len(parts)):
        raise ValueError(f"ORAL_NIGHT_ANSWER must be one of {', '.join(NIGHT_ANSWERS)}, "
                         f"per_class with {' and/or '.join(f'+{p}' for p in NIGHT_ANSWER_PARTS)}"
                         f", got {text!r}")
    for forms in NIGHT_ANSWER_FORMS:
        if len(set(forms) & set(parts)) > 1:
            raise ValueError(f"ORAL_NIGHT_ANSWER takes one of {' or '.join(f'+{f}' for f in forms)}"
                             f" (forms of one step), not more, got {text!r}")
    for part, (needs, what) in NIGHT_ANSWER_NEEDS.items():
        if part in parts and not set(needs) & set(parts):
            raise ValueError(f"ORAL_NIGHT_ANSWER's +{part} {what}: add "
                             f"{' or '.join(f'+{n}' for n in needs)}, got {text!r}")
    return "+".join([base] + [p for p in NIGHT_ANSWER_PARTS if p in parts])

QUIET = {
    "DO_NOT_TRACK": "true",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "GIT_PYTHON_REFRESH": "quiet",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    # one retry layer for MLflow: tasks.registry.with_retries (bounded, logged, permanent errors
    # not retried); MLflow's own HTTP retries would multiply it, and the Prefect tasks around
    # MLflow (register, champion) have no retries of their own
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    # the project's loggers reach the Prefect UI (the run's logs), not only the terminal and file
    "PREFECT_LOGGING_EXTRA_LOGGERS": "tasks,oral_core,flows,data_contracts",
    # ... and stay quiet when used outside a flow run (CLI commands, tests calling steps alone)
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}


TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def _writer_lock_timeout() -> float:
    """``ORAL_WRITER_LOCK_TIMEOUT``: seconds (>= 0) a night waits for a live holder of the DuckDB
    writer lock (:mod:`tasks.warehouse.writer_lock`); default 600."""
    raw = os.environ.get("ORAL_WRITER_LOCK_TIMEOUT", "").strip() or "600"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"ORAL_WRITER_LOCK_TIMEOUT must be a number of seconds >= 0, got {raw!r}")
    return value


def _min_free_mb() -> float:
    from tasks.diskspace import min_free_mb

    return min_free_mb()


class OptionError(ValueError):
    """A command-line option that cannot work; ``str(err)`` is the one-line message."""


@dataclass
class Settings:
    state_dir: Path
    warehouse_path: Path
    tracking_uri: str | None
    remote_training: bool = False
    training_deployment: str = "train-remote/gpu"
    remote_training_timeout: float = 6 * 3600.0
    #: warm starts by default (``ORAL_WARM_START``; off: measured to lose novel classes,
    #: benchmarks/results/warm_start/warm_start.md); the flows' ``cold`` parameter overrides it
    warm_start: bool = False
    #: with warm starts on, a cold night at least every this many nights (``ORAL_COLD_EVERY``;
    #: 0: never forced): warm nights miss classes that emerge, a cold night finds them. 7, the
    #: shortest period whose cost stays within the issue's 20% of a cold chain at the measured
    #: 5% warm / cold cost: (1 + 6 x 0.05) / 7 = 0.19
    cold_every: int = 7
    #: with warm starts on, the level of the emergence check after a warm fit
    #: (``ORAL_EMERGENCE_ALPHA``, :mod:`tasks.emergence`; 0: off): a warm night whose new nodes'
    #: labelled shares say a class emerged is trained again from scratch
    emergence_alpha: float = 0.01
    #: seconds a night waits for the DuckDB writer lock while another live run holds it
    #: (``ORAL_WRITER_LOCK_TIMEOUT``); a dead holder's lock is free at once
    writer_lock_timeout: float = field(default_factory=_writer_lock_timeout, kw_only=True)
    #: free MB every folder a night writes to must keep (``ORAL_MIN_FREE_MB``, ``tasks.diskspace``)
    min_free_mb: float = field(default_factory=_min_free_mb, kw_only=True)
    #: the champion gate's reference check (``ORAL_GATE_REFERENCE_MARGIN``; None: off): a model
    #: whose known-class validation accuracy is below the reference logistic regression's by
    #: more than this is degraded: registered, never champion, never the latest answer
    gate_reference_margin: float | None = 0.0
    #: how the gate's reference check compares (``ORAL_GATE_TEST``): ``strict`` (degraded
    #: whenever the reference's accuracy is higher) or ``mcnemar`` (only when the reference names
    #: the same validation nodes better beyond chance, an exact McNemar test at 5%: issue 60)
    gate_test: str = "strict"
    #: which validation nodes the reference check compares on (``ORAL_GATE_SCOPE``): ``night``
    #: (all of them) or ``known`` (those the model names a known class: a novel class holding
    #: a validation node no longer holds the whole night back; it is judged by its own
    #: validation nodes, the known-split check; issue 60, "decide per class")
    gate_scope: str = "night"
    #: a novel class is a candidate on its first night and published (``emerged``) when it is
    #: there again the next (``ORAL_CONFIRM_NOVEL``; :mod:`tasks.warehouse.lineage`)
    confirm_novel: bool = True
    #: a novel class continues the one previous novel class that went mostly to it alone, whatever
    #: their Jaccard index (``ORAL_LINEAGE_CONTAINED``; ``LineageConfig.continue_contained``, the
    #: default since 2026-12-04, benchmarks/results/lineage_contained)
    lineage_contained: bool = field(default=True, kw_only=True)
    #: a class whose match was last night's candidate and that absorbs a published novel class
    #: continues the published one (``ORAL_LINEAGE_PUBLISHED``; ``LineageConfig.continue_published``,
    #: the default since 2026-12-05, benchmarks/results/lineage_published)
    lineage_published: bool = field(default=True, kw_only=True)
    #: the nodes of a candidate (a novel class waiting for confirmation) are published under the
    #: known class the known-class classifier names them until it is confirmed
    #: (``ORAL_CANDIDATES_NAMED``; :func:`tasks.publishing.write_run`; the default since
    #: 2026-12-07, benchmarks/results/candidates_named)
    candidates_named: bool = field(default=True, kw_only=True)
    #: with confirmation, the share of the median known class's size from which a new novel
    #: class is published the night it appears (None: off), and whether only on nights whose
    #: fit found the known classes separable (``ORAL_CONFIRM_SIZE``)
    confirm_size: float | None = field(default=0.5, kw_only=True)
    confirm_size_separable: bool = field(default=True, kw_only=True)
    #: what a night publishes (``ORAL_NIGHT_ANSWER``): ``whole`` (the model's answer when the
    #: gate passes it, else none) or ``per_class`` (``per_class+paired+split+rejected``; every night,
    #: :mod:`tasks.answer`)
    night_answer: str = field(default=DEFAULT_NIGHT_ANSWER, kw_only=True)

    #: the folders under ``state_dir`` of the contract reports and of the training runs
    reports_dir: Path = field(init=False, repr=False)
    runs_dir: Path = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reports_dir = self.state_dir / "reports"
        self.runs_dir = self.state_dir / "runs"

    @classmethod
    def from_env(cls, state_dir: str | Path | None = None) -> "Settings":
        state = Path(state_dir or os.environ.get("ORAL_STATE_DIR", "state")).resolve()
        warehouse = Path(os.environ.get("ORAL_WAREHOUSE", state / "oral.duckdb"))
        uri = os.environ.get("ORAL_TRACKING_URI") or os.environ.get("MLFLOW_TRACKING_URI")
        remote = os.environ.get("ORAL_REMOTE_TRAINING", "").strip().lower() in TRUE
        deployment = os.environ.get("ORAL_TRAINING_DEPLOYMENT", "").strip() or "train-remote/gpu"
        raw_timeout = os.environ.get("ORAL_REMOTE_TRAINING_TIMEOUT", "").strip()
        try:
            timeout = float(raw_timeout or 6 * 3600)
        except ValueError:
            raise ValueError(f"ORAL_REMOTE_TRAINING_TIMEOUT must be a number of seconds, got "
                             f"{raw_timeout!r}") from None
        warm = os.environ.get("ORAL_WARM_START", "").strip().lower() in TRUE
        raw = os.environ.get("ORAL_COLD_EVERY", "").strip() or "7"
        if not raw.isdigit():
            raise ValueError(f"ORAL_COLD_EVERY must be a whole number of nights >= 0 (0: never "
                             f"forced), got {raw!r}")
        raw_alpha = os.environ.get("ORAL_EMERGENCE_ALPHA", "").strip() or "0.01"
        try:
            alpha = float(raw_alpha)
        except ValueError:
            alpha = -1.0
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"ORAL_EMERGENCE_ALPHA must be a number in [0, 1) (0: no emergence "
                             f"check), got {raw_alpha!r}")
        raw_margin = os.environ.get("ORAL_GATE_REFERENCE_MARGIN", "").strip().lower() or "0"
        try:
            margin = None if raw_margin == "off" else float(raw_margin)
        except ValueError:
            margin = -1.0
        if margin is not None and not 0.0 <= margin <= 1.0:
            raise ValueError(f"ORAL_GATE_REFERENCE_MARGIN must be a number in [0, 1] or 'off', "
                             f"got {raw_margin!r}")
        gate_test = os.environ.get("ORAL_GATE_TEST", "").strip().lower() or "strict"
        if gate_test not in GATE_TESTS:
            raise ValueError(f"ORAL_GATE_TEST must be one of {', '.join(GATE_TESTS)}, got "
                             f"{gate_test!r}")
        gate_scope = os.environ.get("ORAL_GATE_SCOPE", "").strip().lower() or "night"
        if gate_scope not in GATE_SCOPES:
            raise ValueError(f"ORAL_GATE_SCOPE must be one of {', '.join(GATE_SCOPES)}, got "
                             f"{gate_scope!r}")
        night_answer = night_answer_rule(os.environ.get("ORAL_NIGHT_ANSWER", ""))
        confirm_size, size_separable = confirm_size_rule(os.environ.get("ORAL_CONFIRM_SIZE", ""))
        return cls(state, warehouse, uri, remote, deployment, timeout, warm, int(raw), alpha,
                   margin, gate_test, gate_scope,
                   confirm_novel=switch("ORAL_CONFIRM_NOVEL", True),
                   night_answer=night_answer, confirm_size=confirm_size,
                   confirm_size_separable=size_separable,
                   lineage_contained=switch("ORAL_LINEAGE_CONTAINED", True),
                   lineage_published=switch("ORAL_LINEAGE_PUBLISHED", True),
                   candidates_named=switch("ORAL_CANDIDATES_NAMED", True))

    def lineage_size(self, separable: bool | None) -> float | None:
        """The ``confirm_size`` of tonight's lineage: ``ORAL_CONFIRM_SIZE``'s share, unless it
        holds only on separable nights and tonight's fit did not find its known classes
        separable (``separable``: the fit's decision, None when it did not judge)."""
        if self.confirm_size_separable and not separable:
            return None
        return self.confirm_size


def configure_environment(state_dir: str | Path | None = None) -> Settings:
    """Quiet, offline defaults and a Prefect home inside the state folder (existing values win)."""
    settings = Settings.from_env(state_dir)
    for key, value in QUIET.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("PREFECT_HOME", str(settings.state_dir / "prefect"))
    # Prefect creates its home without parents: under a state folder that does not exist yet its
    # temporary server cannot open its database and the run waits for the start-up timeout
    Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    return settings


#: the variable that sets Prefect's flow-run heartbeats (seconds between two; Prefect 3.8's
#: default 180); set, it wins over :func:`flow_runs_started_here`
HEARTBEAT_VARIABLE = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"


#: the variable naming a Prefect home with a migrated database (:func:`seed_prefect_home`)
TEMPLATE_VARIABLE = "ORAL_PREFECT_HOME_TEMPLATE"


def seed_prefect_home() -> bool:
    """Start an empty Prefect home from :data:`TEMPLATE_VARIABLE`'s database: its ``prefect.db``
    (migrated to this Prefect's schema) is copied in before the temporary server starts, which
    otherwise runs every migration on a new database (5-10 s of a fresh state folder's first
    night). Only where the temporary server would create ``<PREFECT_HOME>/prefect.db``: no
    ``PREFECT_API_URL``, the default database location, no database there yet. The copy lands
    under its final name in one rename, so two processes starting together see the whole file or
    none; a copy that fails (a full disk, a read-only folder) is dropped and the server creates
    its database as it would without the template. True when the home was seeded."""
    template = os.environ.get(TEMPLATE_VARIABLE)
    if not template:
        return False
    source = Path(template).expanduser() / "prefect.db"
    if not source.is_file():
        raise ValueError(f"{TEMPLATE_VARIABLE}={template}: no prefect.db there (make one with "
                         f"PREFECT_HOME={template} prefect server database upgrade -y)")
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    target = Path(settings.home).expanduser() / "prefect.db"
    url = settings.server.database.connection_url
    if settings.api.url or url is None or target.exists() \
            or url.get_secret_value() != f"sqlite+aiosqlite:///{target}":
        return False
    partial = target.with_name(f".prefect.db.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, partial)
        os.replace(partial, target)
        return True
    except OSError:
        partial.unlink(missing_ok=True)
        return False


@contextmanager
def flow_runs_started_here():
    """Prefect's settings for the flow runs this process starts itself (``oral run``,
    ``backfill``, ``demo``, ``reproduce``; not a deployment's run, which its worker starts): no
    flow-run heartbeats. Prefect 3.8 sends one every 180 s by default so that an automation on a
    server can mark a deployment's run crashed when its worker dies; a run started here has no
    worker to die apart from this process, and its heartbeat thread holds each flow run up to a
    second as it ends (a one-task flow on the temporary server: 1.16 s a run with them, 0.24 s
    without). ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, when set, wins (an operator whose server
    watches for crashed runs keeps them; docs/operators.md). An empty Prefect home starts from
    :data:`TEMPLATE_VARIABLE`'s database when it is set (:func:`seed_prefect_home`)."""
    seed_prefect_home()
    if os.environ.get(HEARTBEAT_VARIABLE):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield
