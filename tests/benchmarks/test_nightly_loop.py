"""The nightly-loop benchmark's scoring (benchmarks.nightly_loop.score_loop) on a planted toy loop
whose right answer is known: a stub that merges, splits or invents must score worse."""
from __future__ import annotations

import benchmarks.nightly_loop as nl
from benchmarks.nightly_loop import score_loop

KNOWN = {"a", "b"}
PLANTED = {"p": 2}  # the planted class starts on night 2 of 4


def truth_of(k: int) -> dict:
    """Night ``k``'s scored nodes: known classes a and b grow, the planted class p from night 2."""
    truth = {f"a{i}": "a" for i in range(10 + k)} | {f"b{i}": "b" for i in range(10 + k)}
    if k >= 2:
        truth |= {f"p{i}": "p" for i in range(5 * (k - 1))}
    return truth


def toy_loop(answer, confirm: bool = False, held=None) -> list[dict]:
    """Four nights; ``answer(k, node, true class)`` gives a node's published lineage id.
    ``confirm``: the lineage's confirmation rule (a novel id is a candidate on its first night,
    emerged on its second, dismissed when a candidate ends); ``held(k, lid)``: instead, whether
    a novel id is held as a candidate on night ``k``."""
    nights, seen, last, candidates = [], set(), set(), set()
    for k in range(4):
        truth = truth_of(k)
        assign = {n: answer(k, n, c) for n, c in truth.items()}
        ids = set(assign.values())
        names = {lid: (lid.split(":")[1] if lid.startswith("known:") else None) for lid in ids}
        statuses = {lid: ("persisting" if lid in seen else "emerged") for lid in ids}
        statuses |= {lid: "vanished" for lid in last - ids}  # last night's ids that ended
        if confirm:
            for lid in statuses:
                if lid.startswith("known:"):
                    continue
                if lid in candidates:
                    statuses[lid] = "emerged" if lid in ids else "dismissed"
                elif lid not in seen:
                    statuses[lid] = "candidate"
            candidates = {lid for lid, st in statuses.items() if st == "candidate"}
        seen |= ids
        last = ids
        if held is not None:
            candidates = {lid for lid in ids if names[lid] is None and held(k, lid)}
        nights.append({"truth": truth, "known": KNOWN, "assign": assign, "names": names,
                       "statuses": statuses,
                       "candidates": candidates if confirm or held else set()})
    return nights


def right(k, n, c):
    return "known:" + c if c in KNOWN else "g:novel:1"


def merges(k, n, c):  # the planted class published inside known class a
    return "known:a" if c == "p" else right(k, n, c)


def splits(k, n, c):  # the planted class under a new lineage id every night
    return f"g:novel:{k}" if c == "p" else right(k, n, c)


def invents(k, n, c):  # a novel class carved out of class b on every night
    return "g:novel:9" if c == "b" and n.endswith(("1", "3")) else right(k, n, c)


def test_the_right_answer_scores_perfectly():
    got = score_loop(toy_loop(right), PLANTED)
    assert got["planted"]["p"] == {"starts": 2, "surfaced": 2, "late": 0, "lineage_ids": 1}
    assert got["false_lineage_events"] == 0 and got["invented_on_quiet_nights"] == 0
    assert [r["known_by_name"] for r in got["nights"]] == [1.0] * 4
    assert [r["novel_present"] for r in got["nights"]] == [0, 0, 1, 1]
    assert [r["agreement_previous"] for r in got["nights"]] == [None, 1.0, 1.0, 1.0]


def test_a_merge_never_surfaces_the_planted_class():
    got = score_loop(toy_loop(merges), PLANTED)
    assert got["planted"]["p"]["surfaced"] is None


def test_a_split_carries_the_class_under_several_ids_and_false_events():
    got = score_loop(toy_loop(splits), PLANTED)
    assert got["planted"]["p"]["lineage_ids"] == 2
    assert got["false_lineage_events"] >= 2  # a vanished id and an emergence not of a new class
    kinds = got["false_events_by_status"]
    assert sum(kinds.values()) == got["false_lineage_events"] and set(kinds) <= {
        "merged", "split", "vanished", "emerged"}
    # renamed ids group the nodes the same way: the agreement reads groupings, the id count
    # above reads identities
    assert got["nights"][3]["agreement_previous"] == 1.0


def test_an_invented_class_is_counted_on_quiet_nights_and_costs_known_accuracy():
    got = score_loop(toy_loop(invents), PLANTED)
    assert got["invented_on_quiet_nights"] == 2
    assert got["false_lineage_events"] >= 1
    assert all(r["known_by_name"] < 1.0 for r in got["nights"])


def test_a_loop_that_regroups_nodes_overnight_agrees_less():
    def shuffles(k, n, c):  # known classes a and b swap half their nodes every other night
        if k % 2 and c in KNOWN and n.endswith(("1", "3", "5")):
            return "known:" + ("b" if c == "a" else "a")
        return right(k, n, c)

    got = score_loop(toy_loop(shuffles), PLANTED)
    assert got["nights"][1]["agreement_previous"] < 0.9


def test_false_events_are_shown_with_their_kinds_when_recorded():
    from benchmarks.nightly_loop import _events

    assert _events({"false_lineage_events": 5}) == "5"  # a loop scored before the breakdown
    assert _events({"false_lineage_events": 5, "false_events_by_status": {
        "emerged": 1, "merged": 3, "vanished": 1}}) == "5 (3 merged, 1 vanished, 1 emerged)"


def test_a_loop_without_a_finished_backfill_is_not_recovered(tmp_path):
    """``--rescore`` scores a loop whose backfill finished but was never scored; a state with no
    warehouse, or fewer snapshots than nights, is not one (nothing is written for it)."""
    from types import SimpleNamespace

    from benchmarks.nightly_loop import recover_loop

    args = SimpleNamespace(state=str(tmp_path), periods=8, set=[], data_dir=None)
    assert recover_loop("cora", 0, args) is None  # nothing there at all
    (tmp_path / "cora-sim0" / "state").mkdir(parents=True)
    (tmp_path / "cora-sim0" / "state" / "oral.duckdb").write_bytes(b"")
    assert recover_loop("cora", 0, args) is None  # no snapshot: the loop never ran its nights
    (tmp_path / "cora-sim0" / "snapshots" / "cora").mkdir(parents=True)
    assert recover_loop("cora", 0, args) is None  # none of its 8 nights simulated


def test_a_stopped_loop_resumes_only_at_the_same_settings(tmp_path, monkeypatch):
    """A loop stopped part-way goes on from its kept snapshots when its ``progress.json`` was
    written with the same ``--set`` and every night was simulated; otherwise it starts again."""
    import json
    from types import SimpleNamespace

    from benchmarks.nightly_loop import resumable

    base = tmp_path / "cora-sim0"
    args = SimpleNamespace(state=str(tmp_path), periods=2, set=["known_head=auto"])
    assert resumable(base, "cora", args) is None  # nothing kept
    (base / "snapshots" / "cora").mkdir(parents=True)
    for day in ("2026-01-01", "2026-01-02"):
        (base / "snapshots" / "cora" / f"snapshot={day}").mkdir()
    monkeypatch.delenv("ORAL_CONFIRM_NOVEL", raising=False)
    monkeypatch.setenv("ORAL_NIGHT_ANSWER", "whole")  # what a file without the setting ran at
    monkeypatch.setenv("ORAL_LINEAGE_CONTAINED", "0")  # the same
    monkeypatch.setenv("ORAL_LINEAGE_PUBLISHED", "0")  # the same
    monkeypatch.setenv("ORAL_CANDIDATES_NAMED", "0")  # the same
    (base / "progress.json").write_text(json.dumps({"settings": ["known_head=sgc"],
                                                    "confirm_novel": True}))
    assert resumable(base, "cora", args) is None  # made at other settings
    (base / "progress.json").write_text(json.dumps({"settings": ["known_head=auto"]}))
    assert resumable(base, "cora", args) is None  # made before the lineage's confirmation
    (base / "progress.json").write_text(json.dumps({"settings": ["known_head=auto"],
                                                    "confirm_novel": True}))
    paths = resumable(base, "cora", args)
    assert paths is not None and [p.name for p in paths] == ["snapshot=2026-01-01",
                                                             "snapshot=2026-01-02"]
    assert resumable(base, "cora", SimpleNamespace(**{**vars(args), "periods": 3})) is None
    monkeypatch.setenv("ORAL_NIGHT_ANSWER", "per_class")  # another answer rule
    assert resumable(base, "cora", args) is None
    (base / "progress.json").write_text(json.dumps({
        "settings": ["known_head=auto"], "confirm_novel": True,
        "pipeline_defaults": {"night_answer": "per_class"}}))
    assert resumable(base, "cora", args) is not None
    monkeypatch.delenv("ORAL_NIGHT_ANSWER")
    assert resumable(base, "cora", args) is None
    monkeypatch.setenv("ORAL_CONFIRM_NOVEL", "0")  # the pipeline's lineage rule changed
    assert resumable(base, "cora", args) is None
    monkeypatch.delenv("ORAL_CONFIRM_NOVEL")
    monkeypatch.setenv("ORAL_NIGHT_ANSWER", "per_class")
    assert resumable(base, "cora", args) is not None
    monkeypatch.delenv("ORAL_LINEAGE_CONTAINED")  # today's default: the contained continuation
    assert resumable(base, "cora", args) is None
    monkeypatch.setenv("ORAL_LINEAGE_CONTAINED", "0")
    assert resumable(base, "cora", args) is not None
    monkeypatch.delenv("ORAL_LINEAGE_PUBLISHED")  # today's default: the published continuation
    assert resumable(base, "cora", args) is None


def test_the_command_names_the_night_settings_the_loops_ran_with():
    from benchmarks.nightly_loop import env_prefix

    from flows.settings import DEFAULT_NIGHT_ANSWER

    today = {"night_answer": DEFAULT_NIGHT_ANSWER, "lineage_contained": True,
             "lineage_published": True, "candidates_named": True}
    assert env_prefix([{"pipeline_defaults": today}]) == ""
    # a loop from before the setting was recorded ran whole, today's default no longer, and
    # without the contained continuation
    assert env_prefix([{"pipeline_defaults": {"gate_test": "strict"}}, {}]) == \
        "ORAL_CANDIDATES_NAMED=0 ORAL_LINEAGE_CONTAINED=0 ORAL_LINEAGE_PUBLISHED=0 " \
        "ORAL_NIGHT_ANSWER=whole "
    assert env_prefix([{"pipeline_defaults": {"night_answer": "per_class", "gate_test": "strict",
                                              "confirm_novel": False,
                                              "lineage_contained": True,
                                              "lineage_published": True,
                                              "candidates_named": True}}]) == \
        "ORAL_CONFIRM_NOVEL=0 ORAL_NIGHT_ANSWER=per_class "
    # warm starts (issue 61): a loop run warm says so as 1, one from before the key ran cold
    assert env_prefix([{"pipeline_defaults": today | {"warm_start": True}}]) == \
        "ORAL_WARM_START=1 "
    assert env_prefix([{"pipeline_defaults": today | {"warm_start": False}}]) == ""
    # candidates published under their known class (the default since 2026-12-07): a loop run
    # without it says so
    assert env_prefix([{"pipeline_defaults": today | {"candidates_named": False}}]) == \
        "ORAL_CANDIDATES_NAMED=0 "


def test_the_per_class_table_reads_validation_nodes_and_the_cross_fitted_choice():
    from benchmarks.nightly_loop import per_class_section

    night = {"answered_by": "tonight", "answer": {
        "namer": "gcn", "right": {"oral": 40, "lr": 30, "gcn": 45}, "nodes": 50,
        "cross_fitted_right": 39, "renamed": 5}}
    assert per_class_section([{"graph": "cora", "nights": [{"answered_by": "tonight"}]}]) == []
    lines = per_class_section([{"graph": "cora", "nights": [night, night | {
        "answered_by": "an earlier night"}]}])
    row = [r for r in lines if r.startswith("| cora")][0]
    assert row == "| cora | 1 / 2 | gcn 2 | 100 | 80 | 60 | 90 | 90 | 78 | no |"


def test_published_dates_reads_the_nights_with_a_run_row(tmp_path):
    import datetime as dt

    import duckdb

    from benchmarks.nightly_loop import published_dates

    assert published_dates(tmp_path, "cora") == set()  # no warehouse yet
    con = duckdb.connect(str(tmp_path / "oral.duckdb"))
    con.execute("CREATE TABLE other (x INT)")
    con.close()
    assert published_dates(tmp_path, "cora") == set()  # no runs table yet
    con = duckdb.connect(str(tmp_path / "oral.duckdb"))
    con.execute("CREATE TABLE runs (graph VARCHAR, snapshot_date DATE)")
    con.execute("INSERT INTO runs VALUES ('cora', ?), ('cora', ?), ('amazonphoto', ?)",
                [dt.date(2026, 1, 1), dt.date(2026, 1, 1), dt.date(2026, 1, 2)])
    con.close()
    assert published_dates(tmp_path, "cora") == {"2026-01-01"}


def test_confirmation_turns_a_one_night_invention_into_a_candidate_not_an_event():
    """A novel class carved out of a known class on one quiet night only: without confirmation
    it is an invented class and two false events (its emergence, its end); with it, a candidate
    (counted apart) that is dismissed, and no event. The planted class surfaces a night later."""
    def once(k, n, c):
        return "g:novel:9" if k == 1 and c == "b" and n.endswith("1") else right(k, n, c)

    plain = score_loop(toy_loop(once), PLANTED)
    confirmed = score_loop(toy_loop(once, True), PLANTED)
    assert plain["invented_on_quiet_nights"] == 1 and plain["false_lineage_events"] == 2
    assert confirmed["invented_on_quiet_nights"] == 0 and confirmed["false_lineage_events"] == 0
    assert confirmed["candidates_on_quiet_nights"] == 1
    assert plain["planted"]["p"]["late"] == 0 and confirmed["planted"]["p"]["late"] == 1
    assert confirmed["planted"]["p"]["lineage_ids"] == 1
    # a stub that renames the planted class every night is never confirmed: never surfaced
    assert score_loop(toy_loop(splits, True), PLANTED)["planted"]["p"]["surfaced"] is None


def test_the_lineage_rule_of_a_kept_loop_is_read_from_its_statuses(tmp_path):
    import duckdb

    from benchmarks.nightly_loop import confirmed_in

    con = duckdb.connect(str(tmp_path / "oral.duckdb"))
    con.execute("CREATE TABLE class_lineage (lineage_id VARCHAR, status VARCHAR)")
    con.execute("INSERT INTO class_lineage VALUES ('known:a', 'emerged'), ('g:novel:1', 'emerged')")
    con.close()
    assert confirmed_in(tmp_path) is False
    con = duckdb.connect(str(tmp_path / "oral.duckdb"))
    con.execute("INSERT INTO class_lineage VALUES ('g:novel:2', 'candidate')")
    con.close()
    assert confirmed_in(tmp_path) is True


def test_reference_scores_are_fitted_once_per_snapshot_content(tmp_path, monkeypatch):
    """The reference classifiers of a snapshot are cached by its content hash: a second loop on
    the same snapshot reads them; another snapshot, or a cache row of an older reference
    version, is fitted again."""
    import datetime as dt
    from types import SimpleNamespace

    import benchmarks.nightly_loop as loop

    fitted = []

    def fake(snapshot, answers=None):
        fitted.append(snapshot.content_hash)
        return {"lr": 70.0 + len(fitted), "gcn": None}
    monkeypatch.setattr(loop, "reference_known", fake)
    cache = tmp_path / "references.csv"
    night = SimpleNamespace(content_hash="h1", date=dt.date(2026, 1, 1))
    first = loop.cached_reference_known(night, "g", cache)
    assert loop.cached_reference_known(night, "g", cache) == first == {"lr": 71.0, "gcn": None}
    other = SimpleNamespace(content_hash="h2", date=dt.date(2026, 1, 2))
    assert loop.cached_reference_known(other, "g", cache)["lr"] == 72.0
    assert fitted == ["h1", "h2"]
    monkeypatch.setattr(loop, "REFERENCE_VERSION", loop.REFERENCE_VERSION + 1)
    assert loop.cached_reference_known(night, "g", cache)["lr"] == 73.0
    assert fitted == ["h1", "h2", "h1"]


def test_a_study_rule_heads_the_readme_and_the_loops_never_rewrite_it(tmp_path):
    from benchmarks.nightly_loop import RULE, report

    (tmp_path / "loops").mkdir()
    rule = "# A study\n\nQuestion: q?\n\nThe rule, set down before any row: r.\n\nAnswer: a.\n"
    (tmp_path / RULE).write_text(rule)
    text = report(tmp_path, [])
    assert text.startswith(rule) and "\n## Nightly loop: what an analyst reads" in text
    assert (tmp_path / RULE).read_text() == rule and (tmp_path / "README.md").read_text() == text


def test_the_generator_with_any_class_count_is_a_loop_graph_and_other_names_are_refused(
        tmp_path, capsys):
    assert nl.generated_classes("synthetic15") == 15
    assert nl.generated_classes("synthetic20") == 20
    assert nl.generated_classes("synthetic3") is None
    assert nl.generated_classes("synthetic") is None
    assert nl.generated_classes("cora") is None
    assert nl.generated_shape("synthetic15-sep1.5") == (15, 1.5)
    assert nl.generated_shape("synthetic15") == (15, 2.5)
    assert nl.generated_shape("synthetic15-sepwide") is None
    assert nl.generated_shape("synthetic15-sep0") is None
    g = nl.static_graph("synthetic6", None)
    assert len(g.class_names) == 6 and g.x.shape[0] == 1200
    assert nl.main(["--graphs", "synthetic2", "--out", str(tmp_path)]) == 2
    assert "synthetic<K>" in capsys.readouterr().err


def test_a_loop_another_process_is_running_is_skipped_not_run_twice(tmp_path, monkeypatch, capsys):
    """Two loop commands on one ``--state``: a loop the other holds (its lock) is skipped, not
    run a second time into the same state folder; once released it is claimed again."""
    import benchmarks.nightly_loop as nl

    ran = []
    monkeypatch.setattr(nl, "run_loop", lambda graph, sim, args: ran.append((graph, sim)) or {
        "seconds_per_night": 1.0, "invented_on_quiet_nights": 0, "false_lineage_events": 0})
    monkeypatch.setattr(nl, "report", lambda *a, **k: "")
    state, out = tmp_path / "state", tmp_path / "out"
    with nl.loop_claimed(state, "cora", 0) as mine:
        assert mine
        with nl.loop_claimed(state, "cora", 0) as again:
            assert not again  # another open file: as another process would hold it
        assert nl.main(["--graphs", "cora", "--sims", "0,1", "--state", str(state),
                        "--out", str(out)]) == 0
    assert ran == [("cora", 1)]
    assert "[cora sim 0] running in another process: skipped" in capsys.readouterr().out
    assert nl.main(["--graphs", "cora", "--sims", "0", "--state", str(state),
                    "--out", str(out)]) == 0
    assert ran == [("cora", 1), ("cora", 0)] and (out / "loops" / "cora-sim0.json").is_file()


def test_two_commands_simulate_a_missing_loop_once_and_never_read_it_half_written(
        tmp_path, monkeypatch):
    """Two proxy commands started together on one ``--loops`` folder: the loop is simulated
    once (the second waits on the lock and finds it done), into a folder beside its place and
    moved there whole: while it is written, its ``snapshots`` folder does not exist."""
    import threading
    import time

    calls, seen_while_writing = [], []

    def simulate(graph, sim, periods, root, data_dir):
        calls.append((graph, sim, root.name))
        root.mkdir(parents=True)
        time.sleep(0.2)  # the other command arrives meanwhile
        seen_while_writing.append((root.parent / "snapshots").exists())
        (root / "night.parquet").write_text("x")

    monkeypatch.setattr(nl, "simulate_loop", simulate)
    both = [threading.Thread(target=nl.simulate_missing, args=(tmp_path, "cora", "28"))
            for _ in range(2)]
    for t in both:
        t.start()
    for t in both:
        t.join()
    assert calls == [("cora", 28, "snapshots.partial")] and seen_while_writing == [False]
    assert (tmp_path / "cora-sim28" / "snapshots" / "night.parquet").exists()
    assert not (tmp_path / "cora-sim28" / "snapshots.partial").exists()
    nl.simulate_missing(tmp_path, "cora", "28")  # done: nothing again
    assert len(calls) == 1


def test_a_seeded_loop_takes_the_kept_snapshots_and_trainings_with_their_paths_moved(tmp_path):
    """``--trainings-from``: a loop starts from another study's kept loop (its snapshots,
    reference answers, run folders and the train task's cached results, whose paths must point
    into the new loop's state, never back into the source's); a source without trainings seeds
    nothing."""
    from benchmarks.nightly_loop import seed_trainings

    source, base = tmp_path / "a" / "cora-sim0", tmp_path / "b" / "cora-sim0"
    assert not seed_trainings(source, base) and not base.exists()  # nothing kept there
    (source / "snapshots" / "cora" / "snapshot=2026-01-01").mkdir(parents=True)
    (source / "snapshots" / "cora" / "snapshot=2026-01-01" / "nodes.parquet").write_text("n")
    (source / "references").mkdir()
    (source / "references" / "h-v1.json").write_text("{}")
    run = source / "state" / "runs" / "cora" / "abc"
    run.mkdir(parents=True)
    (run / "model.pt").write_text("m")
    assert not seed_trainings(source, base)  # run folders but no cached training
    store = source / "state" / "prefect" / "storage"
    store.mkdir(parents=True)
    old = str((source / "state").resolve())
    (store / "oral-train-cora-h-c-s0").write_text(
        f'{{"storage_key": "{old}/prefect/storage/oral-train-cora-h-c-s0", '
        f'"result": "{{\\"model_path\\": \\"{old}/runs/cora/abc/model.pt\\"}}"}}')
    (store / "other-task-result").write_text(old)  # not a training: not taken
    (base / "stale").mkdir(parents=True)  # a loop folder left before is replaced
    assert seed_trainings(source, base)
    assert not (base / "stale").exists()
    assert (base / "snapshots" / "cora" / "snapshot=2026-01-01" / "nodes.parquet").read_text() == "n"
    assert (base / "references" / "h-v1.json").exists()
    assert (base / "state" / "runs" / "cora" / "abc" / "model.pt").read_text() == "m"
    moved = (base / "state" / "prefect" / "storage" / "oral-train-cora-h-c-s0").read_text()
    new = str((base / "state").resolve())
    assert old not in moved and moved.count(new) == 2
    assert not (base / "state" / "prefect" / "storage" / "other-task-result").exists()
    assert (store / "oral-train-cora-h-c-s0").read_text().count(old) == 2  # the source untouched


def test_the_seeded_check_names_every_field_that_differs_but_the_bookkeeping(tmp_path):
    """``benchmarks.seeded_check``: a seeded loop that differs from its source in a score is
    named with that field; one that differs only in how it was run reads 'none'."""
    import json

    from benchmarks.seeded_check import compare

    for folder in ("seeded", "source"):
        (tmp_path / folder / "loops").mkdir(parents=True)
    same = {"graph": "cora", "sim": 0, "nights": [{"all": 80.0}], "wall_seconds": 9.0}
    (tmp_path / "source" / "loops" / "cora-sim0.json").write_text(json.dumps(same))
    (tmp_path / "source" / "loops" / "cora-sim1.json").write_text(json.dumps(same))
    (tmp_path / "seeded" / "loops" / "cora-sim0.json").write_text(json.dumps(
        same | {"wall_seconds": None, "trainings_from": "x"}))
    (tmp_path / "seeded" / "loops" / "cora-sim1.json").write_text(json.dumps(
        same | {"nights": [{"all": 79.0}]}))
    (tmp_path / "seeded" / "loops" / "cora-sim2.json").write_text(json.dumps(same))
    lines = compare(tmp_path / "seeded", tmp_path / "source")
    assert lines[2].startswith("| cora-sim0 | x |") and lines[2].endswith("| none |")
    assert lines[3].endswith("| nights |")
    assert "no loop cora-sim2.json" in lines[4]
