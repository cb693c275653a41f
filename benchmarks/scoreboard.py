"""A scoreboard that silence cannot win (issue 60, item 1): one loop's answers, scored night by
night as the analyst reads them.

The input is the nights of one loop, oldest first, each a dict as
:func:`benchmarks.nightly_loop.score_loop` takes it (``truth``, ``known``, ``assign``, ``names``,
``statuses``, ``candidates``), and ``planted`` (``{planted class: index of the night it
starts}``). Any answer can be scored: the pipeline's, or a reference's built by
:mod:`benchmarks.open_world_reference` (the silent logistic regression, a GNNSafe-style
open-world GCN). The figures:

- **discovery**, per planted class: the night it is first *published* (a novel lineage id, not a
  candidate, whose scored nodes are >= 70% that class and hold >= 50% of its scored nodes),
  nights late, and whether the same id stays published at that precision and recall on every
  later night (``kept``). Recall on time: classes published by the night after they start /
  planted classes;
- **precision of what is published**: the share of published novel (lineage id, night) pairs
  whose scored nodes are >= 70% one planted class, counted on every night; the novel ids that
  never carry a planted class are *invented*;
- **the analyst's All, by lineage**: every scored node of the night (unlabelled, with a truth
  row); a known-class node is right when the class published for it carries its name, a node of
  a planted class when it sits in the published lineage id matched to that class by one
  Hungarian matching over the whole loop (so an identity switch costs the nights it lasts).
  Nodes without an answer (a held-back night's new nodes) count as wrong;
- **known classes against a reference**, per night: the same scored known-class nodes named by
  the answer and by a reference (a logistic regression), compared by an exact McNemar test on
  the discordant nodes (``below``: the answer is worse at p < 0.05, two-sided).

Nothing here reads a label to choose anything: it only scores.
"""
from __future__ import annotations

from collections import Counter, defaultdict

PRECISION, RECALL = 0.70, 0.50
#: McNemar's two-sided significance for "below the reference beyond noise"
ALPHA = 0.05


def published_novel(night: dict) -> set[str]:
    """The novel lineage ids the night publishes as classes (candidates excluded)."""
    return ({lid for lid, name in night["names"].items() if name is None}
            - set(night.get("candidates", ())))


def members(night: dict) -> dict[str, Counter]:
    """``{lineage id: Counter(true class of its scored nodes)}``."""
    found: dict[str, Counter] = defaultdict(Counter)
    truth = night["truth"]
    for n, lid in night["assign"].items():
        if n in truth:
            found[lid][truth[n]] += 1
    return found


def carries(counts: Counter, planted: set[str]) -> str | None:
    """The planted class a group's scored nodes are >= :data:`PRECISION` of, else None."""
    total = sum(counts.values())
    if not total:
        return None
    top, n = max(((c, counts[c]) for c in planted), key=lambda t: t[1], default=(None, 0))
    return top if n and n / total >= PRECISION else None


def found_class(counts: Counter, cls: str, size: int) -> bool:
    """Whether a group carries ``cls`` at :data:`PRECISION` and :data:`RECALL` (``size``: the
    class's scored nodes tonight)."""
    total = sum(counts.values())
    return bool(total and size and counts[cls] / total >= PRECISION
                and counts[cls] / size >= RECALL)


def loop_matching(nights: list[dict], planted: dict[str, int],
                  groups: list[dict[str, Counter]] | None = None) -> dict[str, str]:
    """One Hungarian matching per loop: ``{planted class: published novel lineage id}``
    maximising the scored nodes they share over all nights (pairs sharing none are left out).
    ``groups``: each night's :func:`members`, when the caller has them."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    groups = groups or [members(night) for night in nights]
    overlap: dict[tuple[str, str], int] = Counter()
    for night, found in zip(nights, groups):
        for lid in published_novel(night):
            for c in planted:
                overlap[(c, lid)] += found[lid][c]
    classes = sorted(planted)
    ids = sorted({lid for _, lid in overlap})
    if not classes or not ids:
        return {}
    gain = np.array([[overlap[(c, lid)] for lid in ids] for c in classes], dtype=float)
    rows, cols = linear_sum_assignment(gain, maximize=True)
    return {classes[r]: ids[c] for r, c in zip(rows, cols) if gain[r, c] > 0}


def all_by_lineage(night: dict, matching: dict[str, str]) -> float | None:
    """The analyst's All on one night (%), every scored node counted (see the module doc)."""
    truth, assign, names = night["truth"], night["assign"], night["names"]
    if not truth:
        return None
    published = published_novel(night)
    right = 0
    for n, c in truth.items():
        lid = assign.get(n)
        if c in night["known"]:
            right += lid is not None and names.get(lid) == c
        else:
            right += lid is not None and lid == matching.get(c) and lid in published
    return 100.0 * right / len(truth)


def against_reference(night: dict, reference: dict) -> dict:
    """Known-class nodes by name, the answer against a reference answer on the same nodes:
    ``{"answer", "reference" (%), "p", "below"}`` (None values when the night has none)."""
    known = [n for n, c in night["truth"].items() if c in night["known"]]
    if not known:
        return {"answer": None, "reference": None, "p": None, "below": False}

    def right(answer, n):
        return answer["names"].get(answer["assign"].get(n)) == night["truth"][n]

    a = [right(night, n) for n in known]
    r = [right(reference, n) for n in known]
    worse = sum(1 for x, y in zip(a, r) if y and not x)
    better = sum(1 for x, y in zip(a, r) if x and not y)
    from oral_core.reference import mcnemar_p

    p = mcnemar_p(worse, better)
    return {"answer": 100.0 * sum(a) / len(a), "reference": 100.0 * sum(r) / len(r), "p": p,
            "below": worse > better and p < ALPHA}


def discovery(nights: list[dict], planted: dict[str, int],
              groups: list[dict[str, Counter]] | None = None) -> dict[str, dict]:
    """Per planted class: ``{"starts", "published", "late", "lineage_id", "kept"}`` (see the
    module doc; ``published`` / ``late`` None when never). ``groups``: each night's
    :func:`members`, when the caller has them."""
    groups = groups or [members(night) for night in nights]
    out = {}
    for c, start in planted.items():
        first, lid = None, None
        for k in range(start, len(nights)):
            night, found = nights[k], groups[k]
            size = sum(1 for v in night["truth"].values() if v == c)
            hits = sorted(x for x in published_novel(night) if found_class(found[x], c, size))
            if hits:
                first, lid = k, hits[0]
                break
        kept = None
        if first is not None:
            kept = True
            for night, found in zip(nights[first + 1:], groups[first + 1:]):
                size = sum(1 for v in night["truth"].values() if v == c)
                if lid not in published_novel(night) or not found_class(found[lid], c, size):
                    kept = False
                    break
        out[c] = {"starts": start, "published": first,
                  "late": None if first is None else first - start, "lineage_id": lid,
                  "kept": kept}
    return out


def score(nights: list[dict], planted: dict[str, int], false_events: int,
          reference: list[dict] | None = None) -> dict:
    """The scoreboard of one answer over one loop. ``false_events``: its lineage events the
    truth does not have, counted on every night (:func:`benchmarks.nightly_loop.score_loop`);
    ``reference``: the nights of a reference answer whose known classes this answer's are
    compared with (the silent logistic regression)."""
    groups = [members(night) for night in nights]
    matching = loop_matching(nights, planted, groups)
    classes = discovery(nights, planted, groups)
    pairs, carrying, invented_ids, rows = 0, 0, set(), []
    carried_ids = set()
    for k, (night, found) in enumerate(zip(nights, groups)):
        present = {c for c, s in planted.items() if s <= k}
        for lid in published_novel(night):
            pairs += 1
            if carries(found[lid], set(planted)):
                carrying += 1
                carried_ids.add(lid)
            else:
                invented_ids.add(lid)
        row = {"night": k, "all": all_by_lineage(night, matching),
               "novel_present": len(present), "novel_published": len(published_novel(night))}
        if reference is not None:
            vs = against_reference(night, reference[k])
            row |= {"known": vs["answer"], "reference_known": vs["reference"],
                    "known_p": vs["p"], "below_reference": vs["below"]}
        rows.append(row)
    invented_ids -= carried_ids  # an id that ever carried a planted class is not invented
    on_time = sum(1 for v in classes.values() if v["late"] is not None and v["late"] <= 1)
    on_time_kept = sum(1 for v in classes.values()
                       if v["late"] is not None and v["late"] <= 1 and v["kept"])
    novel_nights = [r["all"] for r in rows if r["novel_present"] and r["all"] is not None]
    every = [r["all"] for r in rows if r["all"] is not None]
    return {"nights": rows, "planted": classes, "matching": matching,
            "planted_classes": len(planted), "on_time": on_time, "on_time_kept": on_time_kept,
            "published_pairs": pairs, "published_carrying": carrying,
            "precision": (carrying / pairs) if pairs else None,
            "invented": len(invented_ids), "false_events": false_events,
            "all_mean": sum(every) / len(every) if every else None,
            "all_novel_nights": (sum(novel_nights) / len(novel_nights)
                                 if novel_nights else None),
            "below_reference": sum(bool(r.get("below_reference")) for r in rows)}


# ------------------------------------------------------------------------------ the tables
ROWS = (("pipeline", "ORAL pipeline"), ("open_world", "open-world GCN"),
        ("silent_lr", "silent LR"))


def _f(v, digits=1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def totals(loops: list[dict], row: str) -> dict:
    """One answer's figures summed over loops (those with a scoreboard)."""
    boards = [lp["scoreboard"][row] for lp in loops if "scoreboard" in lp]
    nights = [r for b in boards for r in b["nights"]]
    every = [r["all"] for r in nights if r["all"] is not None]
    novel = [r["all"] for r in nights if r["all"] is not None and r["novel_present"]]
    pairs = sum(b["published_pairs"] for b in boards)
    return {"loops": len(boards), "nights": len(nights),
            "planted": sum(b["planted_classes"] for b in boards),
            "on_time": sum(b["on_time"] for b in boards),
            "on_time_kept": sum(b["on_time_kept"] for b in boards),
            "pairs": pairs,
            "precision": (sum(b["published_carrying"] for b in boards) / pairs) if pairs else None,
            "invented": sum(b["invented"] for b in boards),
            "false_events": sum(b["false_events"] for b in boards),
            "all_mean": sum(every) / len(every) if every else None,
            "all_novel_nights": sum(novel) / len(novel) if novel else None,
            "below_reference": sum(b["below_reference"] for b in boards)}


def percent(share: float | None) -> str:
    """A share as whole percents ("–" for none)."""
    return "–" if share is None else f"{100 * share:.0f}%"


def per_ten(count: int, nights: int) -> str:
    return _f(10 * count / nights if nights else None)


def total_cells(t: dict) -> str:
    """A :func:`totals` row's cells from on time to known below the LR (Markdown)."""
    return (f"{t['on_time']} of {t['planted']} ({t['on_time_kept']}) | "
            f"{percent(t['precision'])} ({t['pairs']}) | {per_ten(t['invented'], t['nights'])} | "
            f"{per_ten(t['false_events'], t['nights'])} | {_f(t['all_mean'])} / "
            f"{_f(t['all_novel_nights'])} | {t['below_reference']} |")


def table_lines(loops: list[dict]) -> list[str]:
    """The scoreboard as Markdown: the totals per answer, the same per graph (the goals are read
    graph by graph), then one row per loop and answer."""
    loops = [lp for lp in loops if "scoreboard" in lp]
    if not loops:
        return []
    lines = ["| answer | loops / nights | planted published on time (and kept) | precision of "
             "published (pairs) | invented ids / 10 nights | false lineage events / 10 nights | "
             "All by lineage: every night / nights with a planted class | nights known below "
             "the LR (McNemar) |", "|---|---|---|---|---|---|---|---|"]
    for row, label in ROWS:
        t = totals(loops, row)
        lines.append(f"| {label} | {t['loops']} / {t['nights']} | {total_cells(t)}")
    lines += ["", "| graph | answer | loops / nights | planted published on time (and kept) | "
              "precision (pairs) | invented ids / 10 nights | false events / 10 nights | All by "
              "lineage: every night / with a planted class | nights known below the LR |",
              "|---|---|---|---|---|---|---|---|---|"]
    for graph in sorted({lp["graph"] for lp in loops}):
        mine = [lp for lp in loops if lp["graph"] == graph]
        for row, label in ROWS:
            t = totals(mine, row)
            lines.append(f"| {graph} | {label} | {t['loops']} / {t['nights']} | {total_cells(t)}")
    lines += ["", "| graph | sim | answer | planted: nights late / kept | precision (pairs) | "
              "invented ids | false events | All by lineage, each night | known below LR |",
              "|---|---|---|---|---|---|---|---|---|"]
    for lp in loops:
        for row, label in ROWS:
            b = lp["scoreboard"][row]
            planted = ", ".join(
                f"{c}: {'never' if v['late'] is None else v['late']}"
                f"{'' if v['late'] is None else (' kept' if v['kept'] else ' lost')}"
                for c, v in b["planted"].items())
            precision = percent(b["precision"])
            lines.append(
                f"| {lp['graph']} | {lp['sim']} | {label} | {planted} | {precision} "
                f"({b['published_pairs']}) | {b['invented']} | {b['false_events']} | "
                f"{' '.join(_f(r['all'], 0) for r in b['nights'])} | {b['below_reference']} |")
    return lines


def answer(loops: list[dict]) -> str | None:
    """The scoreboard's answer in one paragraph: each answer's totals (None: no loop scored)."""
    loops = [lp for lp in loops if "scoreboard" in lp]
    if not loops:
        return None
    t = {row: totals(loops, row) for row, _ in ROWS}
    p = t["pipeline"]

    def side(row: str) -> str:
        return f"{_f(t[row]['all_mean'])} ({_f(t[row]['all_novel_nights'])})"

    precision = ("nothing published" if p["precision"] is None
                 else f"{100 * p['precision']:.0f}% of its published novel (id, night) pairs "
                      f"carry a planted class")
    graphs = ", ".join(sorted({lp["graph"] for lp in loops}))
    return (f"Scoreboard: over {p['loops']} loops ({graphs}; "
            f"{p['nights']} nights) the pipeline publishes {p['on_time']} of {p['planted']} "
            f"planted classes by the night after they start ({p['on_time_kept']} kept under one "
            f"id on every later night); {precision}; {per_ten(p['invented'], p['nights'])} "
            f"invented ids and {per_ten(p['false_events'], p['nights'])} false lineage events per "
            f"ten nights; the analyst's All by lineage is {side('pipeline')} on every night (on "
            f"nights with a planted class), against {side('open_world')} for the open-world GCN "
            f"({t['open_world']['on_time']} of {p['planted']} on time) and {side('silent_lr')} "
            f"for the silent LR; known classes below the LR beyond chance on "
            f"{p['below_reference']} nights (the open-world GCN "
            f"{t['open_world']['below_reference']}).")


def compare_lines(studies: dict[str, list[dict]]) -> list[str]:
    """The scoreboard's totals of several studies side by side, over the loops (graph and
    simulation) every study has: ``{study name: its loops}``."""
    common = set.intersection(*({(lp["graph"], lp["sim"]) for lp in loops if "scoreboard" in lp}
                                for loops in studies.values()))
    lines = [f"Loops every study has: {len(common)} "
             f"({', '.join(f'{g} {s}' for g, s in sorted(common))}).", "",
             "| study | answer | planted published on time (and kept) | precision (pairs) | "
             "invented ids / 10 nights | false events / 10 nights | All by lineage: every night "
             "/ with a planted class | nights known below the LR |",
             "|---|---|---|---|---|---|---|---|"]
    for name, loops in studies.items():
        kept = [lp for lp in loops if (lp["graph"], lp["sim"]) in common]
        for row, label in ROWS:
            lines.append(f"| {name} | {label} | {total_cells(totals(kept, row))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.scoreboard STUDY [STUDY ...] [--out FILE]``: the totals of nightly
    loop studies (folders of ``benchmarks.nightly_loop --out``) side by side."""
    import argparse
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(allow_abbrev=False, description=main.__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    names = [p.name for p in args.studies]
    studies = {(p.name if names.count(p.name) == 1 else f"{p.parent.name}/{p.name}"):
               [json.loads(f.read_text()) for f in sorted((p / "loops").glob("*.json"))]
               for p in args.studies}  # two studies' loops/ folders keep their study's name
    command = " ".join(["python -m benchmarks.scoreboard", *map(str, args.studies)]
                       + ([f"--out {args.out}"] if args.out else []))
    text = "\n".join([f"# The scoreboard of {', '.join(studies)}, side by side", "",
                       f"Command: `{command}`.", "", *compare_lines(studies)]) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
