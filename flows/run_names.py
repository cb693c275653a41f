"""The names of the pipeline's flow runs: ``<graph>-<date>`` for a night (``<graph>-next`` when
the flow picks the date), ``backfill-<graph>-<start>..<end>`` for a backfill; a name the caller
chose (``--flow-run-name``, ``run_deployment(flow_run_name=...)``) is kept, one Prefect
generated for an unnamed run is replaced."""
from __future__ import annotations

import functools

from prefect.runtime import flow_run


@functools.cache
def _slug_pairs() -> tuple[tuple[frozenset[str], ...], ...]:
    """The word lists of Prefect's generated run names: ``generate_slug(2)``
    (``prefect.utilities.names``) draws coolname's two-word names, each a cartesian product of
    an adjective list and an animal list; one tuple of word sets per such product."""
    from coolname.data import config  # Prefect's dependency: the words generate_slug draws

    def words(key: str) -> frozenset[str]:
        node = config.get(key, {})
        return frozenset(node.get("words", ())).union(*(words(k) for k in node.get("lists", ())))

    def products(key: str):
        node = config.get(key, {})
        if node.get("type") == "cartesian":
            yield tuple(words(k) for k in node["lists"])
        elif node.get("type") == "nested":
            for k in node["lists"]:
                yield from products(k)
    return tuple(products("2"))


def generated_name(name: str) -> bool:
    """Whether ``name`` is one Prefect generated for an unnamed run (``crafty-okapi``): every
    word from the word list of its place; ``papers-rerun`` is a chosen name."""
    parts = tuple(name.split("-"))
    return any(len(parts) == len(lists) and all(w in ws for w, ws in zip(parts, lists))
               for lists in _slug_pairs())


def given_name() -> str | None:
    """The run's name when its caller chose one (``prefect deployment run --flow-run-name``,
    ``run_deployment(flow_run_name=...)``), None when Prefect generated it (an
    ``adjective-animal`` pair from its word lists): Prefect applies ``flow_run_name`` to every
    run, and a name chosen on purpose (``papers-rerun`` too) is kept."""
    name = flow_run.get_name() or ""
    return None if not name or generated_name(name) else name


def night_name() -> str:
    """Flow run name of a night: ``<graph>-<date>`` (``<graph>-next``: the flow picks the date)."""
    params = flow_run.get_parameters() or {}
    return given_name() or f"{params.get('graph', 'graph')}-{params.get('date') or 'next'}"


def backfill_name() -> str:
    """Flow run name of a backfill: ``backfill-<graph>-<start>..<end>``."""
    params = flow_run.get_parameters() or {}
    return given_name() or (f"backfill-{params.get('graph', 'graph')}-"
                             f"{params.get('start') or 'first'}..{params.get('end') or 'last'}")
