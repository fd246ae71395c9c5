"""`ledgermem sweep` and the run options it shares with `ledgermem run`.

The sweep table of docs/evaluation.md is rerun here with the page's own command (the doc runner
skips it: it takes minutes); the
gate level, context budget and source policies are recorded in the run's
configuration, so resuming a run with other values is refused.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.cli.options import SourcePolicyError, parse_source_policies
from ledgermem.evaluation.errors import EvaluationError
from ledgermem.evaluation.sweep import parse_levels

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
SWEEP = re.search(r"```bash[^\n]*\n(ledgermem sweep[^\n]*)\n```\n\n((?:\|[^\n]*\n)+)", PAGE)


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def readme_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The page's sweep, run with the page's own command; its runs kept for a second look."""
    assert SWEEP, "docs/evaluation.md shows `ledgermem sweep ...` followed by its table"
    runs = tmp_path_factory.mktemp("sweep")
    result = _invoke(*shlex.split(SWEEP.group(1))[1:], "--runs-dir", str(runs))
    assert result.exit_code == 0, result.output
    return result.output, runs


def test_the_documented_sweep_table_is_what_the_command_prints(readme_sweep: tuple[str, Path]) -> None:
    output, _ = readme_sweep
    assert output.strip().splitlines() == SWEEP.group(2).strip().splitlines()


def test_the_sweeps_runs_are_kept_with_their_gate_level_recorded(readme_sweep: tuple[str, Path]) -> None:
    output, runs = readme_sweep
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in output.strip().splitlines()[2:]]
    kept = sorted(p.name for p in runs.iterdir())
    assert len(kept) == len(rows) == 8
    for name in kept:
        metadata = json.loads((runs / name / "run_metadata.json").read_text(encoding="utf-8"))
        assert metadata["config"]["memory"]["gate_level"] == name.rsplit("-", 1)[1]
        assert metadata["systems"] == ["three_layer"] and metadata["complete"]
    for dataset, level, *_, summarizer, _, _, gated in rows:
        hits, turns = map(int, gated.split("/"))
        assert (hits == 0) == (level == "off")
        assert summarizer == f"{(turns - hits) / turns:.2f}"  # one summarizer call per admitted turn


def test_sweep_json_has_one_row_per_dataset_and_level() -> None:
    result = _invoke("sweep", "--levels", "pattern,off", "--episodes", "1", "--turns", "6", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(r["dataset"], r["level"]) for r in rows] == [
        ("synthetic-zh", "pattern"), ("synthetic-zh", "off"), ("synthetic-en", "pattern"), ("synthetic-en", "off")]
    for row in rows:
        assert row["turns"] == 6 and row["run_id"].startswith("sweep-0")
        assert row["llm_calls_per_turn"] == round((6 - row["Gated_Turns"]) / 6, 4)
        assert set(row) >= {"Current_Fact_Acc", "History_Fact_Acc", "Constraint_Survival", "llm_calls_per_turn_all",
                            "Avg_Rendered_Context_Tokens"}


def test_sweep_over_a_dataset_file_labels_rows_with_the_file(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps({"episodes": [{"episode_id": "e", "dialogues": [
        ["My office floor is 7F.", "Noted."], ["The weather is lovely today.", "Nice."],
        ["My office floor changed to 12F.", "Noted."]],
        "facts": {"office floor": [[0, "7F"], [2, "12F"]]},
        "probes": [{"type": "current_fact", "fact_key": "office floor", "question": "What is my office floor now?",
                    "answer": "12F"}]}]}), encoding="utf-8")
    result = _invoke("sweep", "--dataset", str(data), "--levels", "pattern", "--no-personal-data")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 3
    assert lines[2].startswith(f"| {data} | pattern | 1.000 | n/a | n/a | 0.67 |")
    assert lines[2].endswith("| 1/3 |")


@pytest.mark.parametrize(("args", "message"), [
    (("sweep", "--levels", "off,tight"), "unknown gate level(s) tight"),
    (("sweep", "--dataset", "x.json", "--poison"), "--poison plants values in the built-in synthetic data"),
    (("sweep", "--dataset", "missing.json"), "missing.json: no such dataset file"),
])
def test_sweep_refuses_bad_input_with_one_clear_line(args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (1, 2) and message in result.output
    assert "Traceback" not in result.output


def test_levels_are_parsed_in_order_without_duplicates() -> None:
    assert parse_levels("strict, off,strict") == ("strict", "off")
    with pytest.raises(EvaluationError, match="--levels ''"):
        parse_levels("")


# -- --source-policy -------------------------------------------------------------------


def test_source_policies_add_up_per_source() -> None:
    assert parse_source_policies(["web=remember:false", "web=strip:^Note", "tool=strip:a=b:c", "web=strip:x"]) == {
        "web": {"remember": False, "strip": ["^Note", "x"]}, "tool": {"strip": ["a=b:c"]}}


@pytest.mark.parametrize(("value", "message"), [
    ("web", "expected SOURCE=remember:false or SOURCE=strip:REGEX"),
    ("web=remember:maybe", "remember takes true or false"),
    ("web=strip:(", "strip takes a regular expression"),
    ("web=forget:true", "unknown setting 'forget:true'"),
    ("=remember:false", "expected SOURCE="),
])
def test_a_bad_source_policy_is_a_usage_error_naming_the_option(value: str, message: str) -> None:
    with pytest.raises(SourcePolicyError, match=re.escape(message)):
        parse_source_policies([value])
    result = CliRunner().invoke(cli, ["run", "--source-policy", value, "--runs-dir", "unused"])
    assert result.exit_code == 2
    assert "--source-policy" in result.output and message in result.output


def test_conflicting_remember_settings_are_refused() -> None:
    with pytest.raises(SourcePolicyError, match="remember is given twice"):
        parse_source_policies(["web=remember:false", "web=remember:true"])


# -- recorded configuration and resume --------------------------------------------------

SMALL = ("run", "--episodes", "1", "--turns", "8", "--systems", "three_layer", "--memory-points", "0",
         "--run-id", "cfg")


def test_gate_options_are_recorded_and_a_resume_with_others_is_refused(tmp_path: Path) -> None:
    runs = ("--runs-dir", str(tmp_path))
    first = _invoke(*SMALL, *runs, "--gate-level", "pattern", "--context-budget", "300",
                    "--source-policy", "web=remember:false", "--poison")
    assert first.exit_code == 0, first.output
    metadata = json.loads((tmp_path / "cfg" / "run_metadata.json").read_text(encoding="utf-8"))
    memory = metadata["config"]["memory"]
    assert (memory["gate_level"], memory["context_budget"]) == ("pattern", 300)
    assert memory["source_policies"] == {"web": {"remember": False}}
    assert ",poison=web," in metadata["dataset"]["source"]
    same = _invoke(*SMALL, *runs, "--gate-level", "pattern", "--context-budget", "300",
                   "--source-policy", "web=remember:false", "--poison")
    assert same.exit_code == 0, same.output  # a finished run with the same arguments: read back, unchanged
    for changed in (("--gate-level", "strict", "--context-budget", "300", "--source-policy", "web=remember:false",
                     "--poison"),
                    ("--gate-level", "pattern", "--context-budget", "300", "--poison"),
                    ("--gate-level", "pattern", "--context-budget", "300", "--source-policy", "web=remember:false")):
        refused = CliRunner().invoke(cli, [*SMALL, *runs, *changed])
        assert refused.exit_code == 1, refused.output
        assert "already exists" in refused.output and "different" in refused.output


def test_poison_is_refused_with_a_dataset_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--dataset", str(tmp_path / "x.json"), "--poison"])
    assert result.exit_code == 2 and "--poison plants values in the built-in synthetic data" in result.output
