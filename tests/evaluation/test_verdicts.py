"""ok / WARN / FAIL verdicts: the bounds, the design's own example report, thresholds files, report and CLI."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.errors import ThresholdError
from ledgermem.evaluation.report import Probe, render_markdown
from ledgermem.evaluation.verdicts import DEFAULT_THRESHOLDS, FAIL, OK, WARN, Threshold, load_thresholds, verdicts, worst

BY_NAME = {t.metric: t for t in DEFAULT_THRESHOLDS}
HIGHER = Threshold("X", "higher", 0.9, 0.7, "test")
LOWER = Threshold("Y", "lower", 0.0, 0.1, "test")

#: (threshold, value, expected verdict): on each bound, just either side of it, and no value.
BOUNDARIES = [
    (HIGHER, 1.0, OK), (HIGHER, 0.9, OK), (HIGHER, 0.8999, WARN), (HIGHER, 0.7, WARN), (HIGHER, 0.6999, FAIL),
    (HIGHER, 0.0, FAIL), (HIGHER, None, None), (HIGHER, float("nan"), None),
    (LOWER, 0.0, OK), (LOWER, 0.0001, WARN), (LOWER, 0.1, WARN), (LOWER, 0.1001, FAIL), (LOWER, 1.0, FAIL),
    (LOWER, None, None),
    # A value printed rounded on a bound is on the bound.
    (HIGHER, 0.9 - 1e-12, OK), (LOWER, 0.1 + 1e-12, WARN),
]


def mismatches(judge: Callable[[Threshold, float | None], str | None]) -> list[tuple[str, float | None, str | None]]:
    return [(t.metric, v, want) for t, v, want in BOUNDARIES if judge(t, v) != want]


def test_the_verdict_on_and_around_every_bound() -> None:
    assert mismatches(lambda t, v: t.judge(v)) == []


def _strict_bounds(t: Threshold, v: float | None) -> str | None:
    if v is None or v != v:
        return None
    if t.better == "higher":
        return OK if v > t.ok else WARN if v > t.warn else FAIL
    return OK if v < t.ok else WARN if v < t.warn else FAIL


def _direction_ignored(t: Threshold, v: float | None) -> str | None:
    return None if v is None or v != v else Threshold(t.metric, "higher", t.ok, t.warn, t.source).judge(v)


def _no_warn(t: Threshold, v: float | None) -> str | None:
    mark = t.judge(v)
    return FAIL if mark == WARN else mark


@pytest.mark.parametrize("broken", [_strict_bounds, _direction_ignored, _no_warn])
def test_broken_verdicts_are_caught(broken: Callable[[Threshold, float | None], str | None]) -> None:
    """Must-fail controls: bounds compared strictly, the direction ignored, WARN never given."""
    assert mismatches(broken)


def test_the_design_documents_example_report_gets_its_own_verdicts() -> None:
    """Seed 003's example: recall 0.91 ok, 0.58 and 0.61 FAIL; staleness 0.00 ok; 18/20 constraints FAIL;
    write precision 0.41 WARN. Recall stands for the accuracies here (a fact stated earlier, asked for later)."""
    acc = BY_NAME["Current_Fact_Acc"]
    assert [acc.judge(v) for v in (0.91, 0.58, 0.61)] == [OK, FAIL, FAIL]
    assert BY_NAME["Staleness_Rate"].judge(0.0) == OK
    assert BY_NAME["Staleness_Rate"].judge(0.01) == FAIL  # any stale answer: the update path is broken
    assert BY_NAME["Constraint_Survival"].judge(18 / 20) == FAIL
    assert BY_NAME["Constraint_Survival"].judge(1.0) == OK
    assert BY_NAME["Write_Precision"].judge(0.41) == WARN
    assert BY_NAME["Open_Loop_Drops"].judge(1) == FAIL and BY_NAME["Poison_Written"].judge(0.125) == FAIL


def test_verdicts_per_system_and_the_worst() -> None:
    metrics = {"a": {"Current_Fact_Acc": 0.95, "Staleness_Rate": 0.0, "Write_Precision": 0.5},
               "b": {"Current_Fact_Acc": None, "Staleness_Rate": 0.2}}
    marks = verdicts(metrics)
    assert marks["a"]["Current_Fact_Acc"] == OK and marks["a"]["Write_Precision"] == WARN
    assert marks["b"]["Current_Fact_Acc"] is None and marks["b"]["Staleness_Rate"] == FAIL
    assert worst(marks["a"]) == WARN and worst(marks["b"]) == FAIL and worst({"x": None}) is None


def test_a_thresholds_file_changes_adds_and_removes(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text('Current_Fact_Acc = { ok = 0.99, warn = 0.95 }\nStaleness_Rate = false\n'
                    'Interference = { better = "lower", ok = 0.5, warn = 0.8 }\n', encoding="utf-8")
    got = {t.metric: t for t in load_thresholds(toml)}
    assert (got["Current_Fact_Acc"].ok, got["Current_Fact_Acc"].warn, got["Current_Fact_Acc"].better) == (0.99, 0.95, "higher")
    assert got["Current_Fact_Acc"].source == str(toml)
    assert "Staleness_Rate" not in got
    assert got["Interference"].judge(0.6) == WARN
    assert got["History_Fact_Acc"] == BY_NAME["History_Fact_Acc"]
    js = tmp_path / "t.json"
    js.write_text(json.dumps({"Write_Precision": {"warn": 0.5}}), encoding="utf-8")
    assert {t.metric: t for t in load_thresholds(js)}["Write_Precision"].judge(0.45) == FAIL


@pytest.mark.parametrize("content, message", [
    ('{"Current_Fact_Acc": {"ok": 0.5, "warn": 0.9}}', "Current_Fact_Acc: ok (0.5) must be >= warn (0.9)"),
    ('{"Staleness_Rate": {"ok": 0.2, "warn": 0.1}}', "Staleness_Rate: ok (0.2) must be <= warn (0.1)"),
    ('{"Current_Fact_Acc": {"ok": "high"}}', "Current_Fact_Acc.ok='high': expected a finite number"),
    ('{"Current_Fact_Acc": {"ok": true}}', "Current_Fact_Acc.ok=True: expected a finite number"),
    ('{"Current_Fact_Acc": {"okay": 0.9}}', "Current_Fact_Acc: unknown key(s) ['okay']"),
    ('{"Current_Fact_Acc": {"better": "up"}}', "Current_Fact_Acc.better='up'"),
    ('{"Interference": {"ok": 0.5}}', "Interference: a metric with no default needs ok, warn and better"),
    ('{"Current_Fact_Acc": 0.9}', "Current_Fact_Acc: expected a table"),
    ('[1, 2]', "expected a table of metrics at the top level"),
    ('{"Current_Fact_Acc": ', "invalid JSON at line 1"),
])
def test_a_bad_thresholds_file_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ThresholdError) as info:
        load_thresholds(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_the_report_shows_verdicts_and_their_rules() -> None:
    metrics = {"good": {"Current_Fact_Acc": 1.0, "Staleness_Rate": 0.0},
               "bad": {"Current_Fact_Acc": 0.5, "Staleness_Rate": 0.25}}
    probes = [Probe("good", "e", "p", "current_fact", "q", "g", "g", True, "", "prompt", 1)]
    text = render_markdown("r", ["good", "bad"], metrics, probes)
    section = text.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    assert "| `good` | ok | ok (1) | ok (0) |" in section
    assert "| `bad` | FAIL | FAIL (0.5) | FAIL (0.25) |" in section
    assert "| Current_Fact_Acc | higher | ok ≥ 0.9, WARN ≥ 0.7, else FAIL | seed 003" in section
    # A metric no system has is left out; with no such metric at all there is no section.
    assert "Write_Precision" not in section
    assert "## Verdicts" not in render_markdown("r", ["x"], {"x": {}}, [])


def test_report_prints_verdicts_and_takes_a_thresholds_file(tmp_path: Path) -> None:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        run = runner.invoke(cli, ["run", "--dataset", "sample", "--run-id", "v", "--systems", "three_layer",
                                  "--limit", "1"], catch_exceptions=False)
        assert run.exit_code == 0, run.output
        shown = runner.invoke(cli, ["report", "v"], catch_exceptions=False)
        assert shown.exit_code == 0, shown.output
        assert "verdicts" in shown.output and "Current_Fact_Acc" in shown.output and "overall" in shown.output
        current = next(line for line in shown.output.splitlines() if "Current_Fact_Acc" in line)
        assert current.split("│")[-2].strip() == "ok 1", current
        overall = next(line for line in shown.output.splitlines() if "overall" in line)
        cells = re.findall(r"(ok|WARN|FAIL) \d", shown.output)
        worst_shown = "FAIL" if "FAIL" in cells else "WARN" if "WARN" in cells else "ok"
        assert overall.split("│")[-2].strip() == worst_shown, overall
        strict = tmp_path / "strict.toml"
        strict.write_text("Avg_Rendered_Context_Tokens = { better = \"lower\", ok = 10, warn = 20 }\n",
                          encoding="utf-8")
        tight = runner.invoke(cli, ["report", "v", "--thresholds", str(strict)], catch_exceptions=False)
        assert tight.exit_code == 0, tight.output
        row = next(line for line in tight.output.splitlines() if "Avg_Rendered_Context_Tokens" in line)
        assert re.search(r"FAIL \d", row), row
        assert "Avg_Rendered_Context_Tokens | lower" in (tmp_path / "runs" / "v" / "report.md").read_text("utf-8")
        bad = tmp_path / "bad.json"
        bad.write_text('{"Current_Fact_Acc": {"ok": 2, "warn": 3}}', encoding="utf-8")
        refused = runner.invoke(cli, ["report", "v", "--thresholds", str(bad)])
        assert refused.exit_code == 1 and "bad.json: Current_Fact_Acc: ok (2) must be >= warn (3)" in refused.output
    finally:
        os.chdir(old)


def test_the_documented_thresholds_example_loads(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    example = re.search(r"\*\*Verdicts\.\*\*.*?```toml\n(.*?)```", page, re.DOTALL)
    assert example, "docs/evaluation.md shows a thresholds file after **Verdicts.**"
    path = tmp_path / "thresholds.toml"
    path.write_text(example.group(1), encoding="utf-8")
    got = {t.metric: t for t in load_thresholds(path)}
    assert got["Current_Fact_Acc"].ok == 0.95 and "Poison_Surfaced" not in got and got["Interference"].better == "lower"


class _WithoutFacts:
    """A ledger view whose summaries carry no facts: what a memory that captured nothing would leave."""

    def __init__(self, ledger) -> None:
        self.ledger = ledger

    def streams(self, run_id):
        return self.ledger.streams(run_id)

    def read(self, **kwargs):
        from dataclasses import replace

        return [replace(r, event=replace(r.event, facts=())) if r.event.event_type == "summary_created" else r
                for r in self.ledger.read(**kwargs)]


def test_extraction_recall_is_the_audits_i4_and_drops_when_facts_are_lost(tmp_path: Path) -> None:
    from ledgermem.memory.runs import open_run
    from ledgermem.evaluation.verdicts import EXTRACTION, extraction_recall
    from ledgermem.gate.invariants import audit

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        run = CliRunner().invoke(cli, ["run", "--dataset", "sample", "--run-id", "x", "--systems",
                                       "three_layer,naive_chain"], catch_exceptions=False)
        assert run.exit_code == 0, run.output
    finally:
        os.chdir(old)
    with open_run(tmp_path / "runs" / "x" / "ledger.duckdb") as (ledger, projections):
        measured = extraction_recall(ledger)
        i4 = next(c for c in audit(ledger, projections).results if c.invariant == "I4").detail
        lost = extraction_recall(_WithoutFacts(ledger))
    assert set(measured) == {"three_layer"}  # a baseline promises no I4
    assert measured["three_layer"][EXTRACTION] == i4["recall"] and i4["compared"] > 0
    assert lost["three_layer"][EXTRACTION] == 0.0
    assert BY_NAME[EXTRACTION].judge(lost["three_layer"][EXTRACTION]) == FAIL
