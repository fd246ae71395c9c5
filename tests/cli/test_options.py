"""Every numeric option is validated: a value out of range is a usage error naming the option, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.invoke import invoke_in
from ledgermem.evaluation.errors import EvaluationError
from ledgermem.evaluation.runner import COUNT_MINIMUMS, RunOptions, check_counts, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.ledger.store import Ledger


invoke = invoke_in


RUN = ("run", "--episodes", "1", "--turns", "4", "--systems", "three_layer")
EPISODE = ("--episode", "e")
#: (command line, the option or argument the error must name)
BAD = [
    (("run", "--episodes", "0"), "--episodes"),
    (("run", "--episodes", "-3"), "--episodes"),
    (("run", "--episodes", "many"), "--episodes"),
    (("run", "--turns", "0"), "--turns"),
    (("run", "--max-tool-iterations", "-1"), "--max-tool-iterations"),
    (("run", "--memory-points", "-2"), "--memory-points"),
    (("run", "--timeout", "0"), "--timeout"),
    (("run", "--timeout", "-5"), "--timeout"),
    (("run", "--max-retries", "-1"), "--max-retries"),
    (("run", "--limit", "0"), "--limit"),
    (("run", "--limit", "-1"), "--limit"),
    (("run", "--window-turns", "-1"), "--window-turns"),
    (("run", "--chain-budget", "0"), "--chain-budget"),
    (("run", "--summarizer-input-tokens", "0"), "--summarizer-input-tokens"),
    (("run", "--max-turns", "0"), "--max-turns"),
    (("run", "--max-failed-calls", "0"), "--max-failed-calls"),
    (("run", "--workers", "0"), "--workers"),
    (("run", "--rpm", "0"), "--rpm"),
    (("run", "--tpm", "-1"), "--tpm"),
    (("run", "--context-budget", "0"), "--context-budget"),
    (("run", "--distractor-rate", "1.5"), "--distractor-rate"),
    (("run", "--shards", "0"), "--shards"),
    (("run", "--max-tokens", "0"), "--max-tokens"),
    (("run", "--temperature", "-0.1"), "--temperature"),
    (("run", "--backoff-base", "-1"), "--backoff-base"),
    (("run", "--backoff-max", "-1"), "--backoff-max"),
    (("sweep", "--episodes", "0"), "--episodes"),
    (("sweep", "--turns", "-1"), "--turns"),
    (("sweep", "--limit", "0"), "--limit"),
    (("sweep", "--timeout", "0"), "--timeout"),
    (("sweep", "--max-retries", "-1"), "--max-retries"),
    (("sweep", "--window-turns", "-1"), "--window-turns"),
    (("sweep", "--chain-budget", "0"), "--chain-budget"),
    (("sweep", "--context-budget", "-4"), "--context-budget"),
    (("judge-eval", "--timeout", "0"), "--timeout"),
    (("judge-eval", "--max-retries", "-2"), "--max-retries"),
    (("audit", "demo", "--at", "-5"), "--at"),
    (("audit", "demo", "--i4-floor", "1.5"), "--i4-floor"),
    (("audit", "demo", "--i4-floor", "-0.1"), "--i4-floor"),
    (("as-of", "demo", *EPISODE, "--seq", "-1"), "--seq"),
    (("as-of", "demo", *EPISODE, "--turn", "-1"), "--turn"),
    (("diff", "demo", *EPISODE, "--", "-1", "3"), "SEQ_A"),
    (("diff", "demo", *EPISODE, "--", "3", "-1"), "SEQ_B"),
    (("manifest", "demo", *EPISODE, "--turn", "-1"), "--turn"),
    (("serve", "demo", "--port", "70000"), "--port"),
    (("serve", "demo", "--hold", "-1"), "--hold"),
    (("serve", "demo", "--refresh", "-1"), "--refresh"),
]


@pytest.mark.parametrize(("args", "name"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_out_of_range_values_are_usage_errors_naming_the_option(tmp_path: Path, args: tuple[str, ...],
                                                                 name: str) -> None:
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and f"'{name}'" in errors[0], result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("args", "name"), [
    (("run", "--limit", "1"), "--limit"),
    (("run", "--max-tool-iterations", "0"), "--max-tool-iterations"),
    (("run", "--memory-points", "0"), "--memory-points"),
    (("run", "--window-turns", "0"), "--window-turns"),
    (("run", "--max-retries", "0"), "--max-retries"),
])
def test_control_the_least_allowed_value_runs(tmp_path: Path, args: tuple[str, ...], name: str) -> None:
    """Must-fail control for the table above: the documented minimum itself is accepted."""
    result = invoke(tmp_path, *RUN, *args[1:], "--run-id", "least")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "least" / "ledger.duckdb").is_file()


def test_limit_is_refused_on_a_one_episode_file_instead_of_running_nothing(tmp_path: Path) -> None:
    data = tmp_path / "one.json"
    data.write_text('{"episodes": [{"episode_id": "solo", "dialogues": [["My city is Oslo.", "ok"]]}]}')
    for bad in ("-1", "0"):
        result = invoke(tmp_path, "run", "--dataset", str(data), "--limit", bad, "--run-id", "one")
        assert result.exit_code == 2 and "'--limit'" in result.output
    assert not (tmp_path / "runs").exists()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    cwd = tmp_path_factory.mktemp("options")
    result = invoke(cwd, *RUN, "--memory-points", "0", "--run-id", "demo")
    assert result.exit_code == 0, result.output
    with Ledger(cwd / "runs" / "demo" / "ledger.duckdb", read_only=True) as ledger:
        return cwd, ledger.last_seq


def _episode(cwd: Path) -> str:
    result = invoke(cwd, "sql", "demo", "SELECT DISTINCT episode_id FROM events WHERE episode_id <> ''", "--json")
    assert result.exit_code == 0, result.output
    return str(__import__("json").loads(result.output)[0]["episode_id"])


@pytest.mark.parametrize("args", [
    ("audit", "demo", "--at", "{beyond}"),
    ("as-of", "demo", "--episode", "{episode}", "--seq", "{beyond}"),
    ("diff", "demo", "--episode", "{episode}", "1", "{beyond}"),
])
def test_a_seq_beyond_the_ledger_names_the_last_seq(demo: tuple[Path, int], args: tuple[str, ...]) -> None:
    cwd, last = demo
    filled = [a.format(beyond=last + 1, episode=_episode(cwd)) for a in args]
    result = invoke(cwd, *filled)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"error: {'SEQ_B' if args[0] == 'diff' else args[-2]} {last + 1} is beyond " \
                                    f"the ledger's last seq {last}"


def test_control_the_last_seq_itself_is_accepted(demo: tuple[Path, int]) -> None:
    cwd, last = demo
    result = invoke(cwd, "audit", "demo", "--at", str(last), "--json")
    assert result.exit_code == 0, result.output
    assert '"at_seq": ' + str(last) in result.output


@pytest.mark.parametrize(("field", "value"), [
    ("limit", 0), ("limit", -1), ("max_tool_iterations", -1), ("memory_points", -2), ("workers", 0),
    ("max_failed_calls", 0), ("max_retries", -1), ("rpm", 0), ("tpm", 0), ("timeout", 0.0), ("timeout", -1.0),
    ("limit", True), ("limit", 1.5),
])
def test_the_library_refuses_the_same_values_before_writing(tmp_path: Path, field: str, value: object) -> None:
    opts = RunOptions(run_id="lib", runs_dir=tmp_path / "runs", **{"memory_points": 0, field: value})
    with pytest.raises(EvaluationError, match=f"^{field} must be"):
        run(generate_synthetic(n_episodes=1, turns=4), opts)
    assert not (tmp_path / "runs").exists()


def test_control_the_library_minimums_pass() -> None:
    check_counts(RunOptions(run_id="lib", timeout=0.5, **COUNT_MINIMUMS))
