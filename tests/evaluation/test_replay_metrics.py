"""Replay compares every metric the live run recorded; a metric added since it ran is named, not a difference."""

from __future__ import annotations

from ledgermem.evaluation.replay import ReplayReport

RECORDED = {"three_layer": {"current_accuracy": 1.0, "history_accuracy": 0.5},
            "full_context": {"current_accuracy": 0.75, "history_accuracy": 0.5}}


def _report(metrics: dict[str, dict[str, object]]) -> ReplayReport:
    return ReplayReport("r", (), metrics, RECORDED)  # type: ignore[arg-type]


def test_a_metric_added_since_the_run_is_no_difference_and_is_named() -> None:
    now = {s: {**row, "summary_truncations": 0} for s, row in RECORDED.items()}
    report = _report(now)
    assert report.metrics_identical and report.identical
    assert report.added_metrics == ["summary_truncations"]


def test_controls_a_changed_value_a_lost_metric_and_a_lost_system_are_differences() -> None:
    changed = {s: dict(row) for s, row in RECORDED.items()}
    changed["three_layer"]["history_accuracy"] = 0.25
    assert not _report(changed).metrics_identical
    lost = {s: {k: v for k, v in row.items() if k != "history_accuracy"} for s, row in RECORDED.items()}
    assert not _report(lost).metrics_identical
    assert not _report({"three_layer": RECORDED["three_layer"]}).metrics_identical
    assert _report({s: dict(row) for s, row in RECORDED.items()}).metrics_identical
    assert _report({s: dict(row) for s, row in RECORDED.items()}).added_metrics == []


def test_no_recorded_metrics_is_never_identical() -> None:
    assert not ReplayReport("r", (), dict(RECORDED), None).metrics_identical  # type: ignore[arg-type]
