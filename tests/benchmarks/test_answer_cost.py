"""benchmarks.answer_cost reads the answer's seconds from a loop's log."""
from __future__ import annotations


def test_the_answer_is_timed_from_the_training_line_to_the_answer_line(tmp_path):
    from benchmarks.answer_cost import nights, table

    log = tmp_path / "cora-sim0" / "state" / "logs" / "oral.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-12-02 04:36:37,880 1 INFO prefect.task_runs: trained on cpu in 44.7 s: 7 classes\n"
        "2026-12-02 04:36:38,000 1 INFO prefect.task_runs: something else\n"
        "2026-12-02 04:36:39,880 1 INFO prefect.task_runs: answered per class: known ...\n"
        "2026-12-02 04:40:00,000 1 INFO prefect.task_runs: answered per class: no training\n"
        "2026-12-02 04:41:00,000 1 INFO prefect.task_runs: trained on cpu in 40.0 s: 6 classes\n"
        "2026-12-02 04:41:01,000 1 INFO prefect.task_runs: answered per class: known ...\n")
    assert nights(log) == [(44.7, 2.0), (40.0, 1.0)]
    assert "| cora | 2 | 42.4 | 1.50 / 2.00 | 0.035 |" in table([tmp_path])
