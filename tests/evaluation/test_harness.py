"""The harness's acceptance on built-in synthetic data, with the offline heuristic backend.

These are checks of the harness, not of a model: a baseline scoring 0 where
its memory visibly holds the answer would be a harness bug, and so would a
comparison whose confidence intervals cannot separate systems that differ.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.runner import SYSTEMS, RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)


def _metrics(runs: Path, run_id: str, systems: tuple[str, ...], **synthetic: object) -> dict[str, dict]:
    ds = generate_synthetic(**({"n_episodes": 8, "seed": 5} | synthetic))  # type: ignore[arg-type]
    return run(ds, RunOptions(run_id=run_id, runs_dir=runs, systems=systems, memory=CONFIG)).metrics


# The comparison of docs/evaluation.md takes minutes, so the doc runner skips it and this test reruns it.
PAGE = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
COMPARE = re.search(r"```bash[^\n]*\n(ledgermem run --run-id compare [^\n]*)\n(ledgermem report compare)\n```", PAGE)


@pytest.fixture(scope="module")
def compare_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The comparison of docs/evaluation.md, run with the page's own commands."""
    assert COMPARE, "docs/evaluation.md shows `ledgermem run --run-id compare ...` and `ledgermem report compare`"
    runs = tmp_path_factory.mktemp("runs")
    for command in COMPARE.groups():
        result = CliRunner().invoke(cli, [*shlex.split(command)[1:], "--runs-dir", str(runs)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return runs / "compare"


@pytest.fixture(scope="module")
def all_systems_40(compare_run: Path) -> dict[str, dict]:
    with (compare_run / "run_metadata.json").open(encoding="utf-8") as fh:
        assert "turns=40," in json.load(fh)["dataset"]["source"]
    with (compare_run / "metrics.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {r["system"]: {k: (None if v == "" else float(v)) for k, v in r.items() if k != "system"} for r in rows}


def _main_table(markdown: str) -> list[list[str]]:
    """The main comparison's rows, without the wall-time column (it measures the machine, not the memory)."""
    found = re.search(r"^(\| system \| Current_Fact_Acc .*\n(?:\|.*\n)+)", markdown, re.MULTILINE)
    assert found, "no main comparison table"
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in found.group(1).splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if name != "wall_ms_per_turn"]
    return [[row[i] for i in keep] for row in rows]


def test_the_documented_table_is_the_report_of_that_run(compare_run: Path) -> None:
    assert _main_table(PAGE) == _main_table((compare_run / "report.md").read_text(encoding="utf-8"))


def test_the_report_plots_open_as_images(compare_run: Path) -> None:
    from matplotlib.image import imread

    for name in ("accuracy_vs_tokens.png", "reachability_by_distance.png", "per_episode.png"):
        pixels = imread(compare_run / name)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.std() > 0, name


def test_all_systems_give_one_row_each(all_systems_40) -> None:
    assert sorted(all_systems_40) == sorted(SYSTEMS)
    assert len({row["probes"] for row in all_systems_40.values()}) == 1  # the same probes for every system
    assert len({row["episodes"] for row in all_systems_40.values()}) == 1


def test_full_context_answers_current_facts_while_its_dialogue_fits(all_systems_40) -> None:
    row = all_systems_40["full_context"]
    assert row["Avg_Rendered_Context_Tokens"] < CONFIG.context_budget  # the whole dialogue fits
    assert row["Current_Fact_Acc"] == 1.0 and row["diag_gone"] == 0.0


def test_three_layer_beats_the_destructive_baselines_on_history_with_separate_cis(all_systems_40) -> None:
    ours = all_systems_40["three_layer"]
    assert ours["History_Fact_Acc"] >= 0.95
    for baseline in ("memgpt_style", "naive_chain"):
        theirs = all_systems_40[baseline]
        assert theirs["History_Fact_Acc"] < ours["History_Fact_Acc"]
        assert theirs["History_Fact_Acc_hi"] < ours["History_Fact_Acc_lo"], baseline


def test_tool_metrics_are_not_applicable_to_baselines(all_systems_40) -> None:
    assert all_systems_40["three_layer"]["Tool_Call_Success_Rate"] == 1.0
    assert all_systems_40["three_layer"]["Tool_Call_Parse_Rate"] == 1.0
    assert all_systems_40["three_layer"]["tool_calls"] > 0
    for baseline in ("full_context", "memgpt_style", "naive_chain"):
        assert all_systems_40[baseline]["Tool_Call_Success_Rate"] is None
        assert all_systems_40[baseline]["unavailable_tool_calls"] == 0  # never given tools, never tried one


def test_memory_points_need_the_archive(all_systems_40) -> None:
    """A summary that left the chain is fetched by id; the rolling summary deleted what it named."""
    assert all_systems_40["three_layer"]["Memory_Point_Acc"] == 1.0
    assert all_systems_40["three_layer"]["diag_raw_only"] == 0.0  # everything is one exact-id call away
    assert all_systems_40["memgpt_style"]["Memory_Point_Acc"] == 0.0


@pytest.mark.parametrize("turns", [12, 40, 120])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_three_layer_answers_current_and_history_at_every_length(tmp_path: Path, turns: int, lang: str) -> None:
    row = _metrics(tmp_path, f"{lang}{turns}", ("three_layer",), turns=turns, n_episodes=4, langs=(lang,))
    ours = row["three_layer"]
    assert ours["Current_Fact_N"] > 0 and ours["History_Fact_N"] > 0
    assert ours["Current_Fact_Acc"] >= 0.95 and ours["History_Fact_Acc"] >= 0.95


def test_per_turn_cost_does_not_grow_with_length_and_beats_full_context_on_long_episodes(tmp_path: Path) -> None:
    short = _metrics(tmp_path, "short", ("three_layer",), turns=40, n_episodes=4)["three_layer"]
    long = _metrics(tmp_path, "long", ("three_layer", "full_context"), turns=120, n_episodes=4)
    ours, full = long["three_layer"], long["full_context"]
    # What each turn costs the model is bounded: the summarizer sees a capped chain, the prompt a budget.
    assert ours["prompt_tokens_per_turn_summarize"] <= 1.25 * short["prompt_tokens_per_turn_summarize"]
    assert ours["Avg_Rendered_Context_Tokens"] <= 1.25 * short["Avg_Rendered_Context_Tokens"]
    assert ours["Avg_Rendered_Context_Tokens"] < 0.5 * full["Avg_Rendered_Context_Tokens"]
    assert ours["Current_Fact_Acc"] >= full["Current_Fact_Acc"] and ours["History_Fact_Acc"] > full["History_Fact_Acc"]


def test_evidence_diagnostics_follow_what_each_memory_keeps(all_systems_40) -> None:
    """memory_point probes name their evidence record: kept and readable by id only where the memory allows."""
    assert all_systems_40["three_layer"]["Evidence_Retained_Rate"] == 1.0
    assert all_systems_40["three_layer"]["Evidence_Reachable_Rate"] == 1.0
    assert all_systems_40["full_context"]["Evidence_Retained_Rate"] == 1.0  # kept, but no tool reads it by id
    assert all_systems_40["full_context"]["Evidence_Reachable_Rate"] == 0.0
    assert all_systems_40["memgpt_style"]["Evidence_Retained_Rate"] == 0.0  # folded into the rolling summary


def test_the_readme_comparison_audits_clean_against_its_gold_facts(compare_run: Path) -> None:
    """The heuristic summarizer captures every planted fact of the documented comparison run, per record; baselines are exempt."""
    result = CliRunner().invoke(cli, ["audit", str(compare_run), "--json", "--i4-floor", "1.0"], catch_exceptions=False)
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["ok"], result.output
    i4 = next(c for c in report["checks"] if c["invariant"] == "I4")["detail"]
    assert set(i4["sources"]) == {"gold facts", "exempt"} and i4["recall"] == 1.0 and i4["compared"] > 0
