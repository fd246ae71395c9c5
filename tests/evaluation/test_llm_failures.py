"""The run's failure policy against a real HTTP server on loopback, and replays that match byte for byte.

* A call that fails after its retries leaves its unit (turn, probe) to be
  redone: the failed call is in the ledger, the unit is not, and running the
  same command again redoes it, with no turn recorded twice.
* A fatal failure (401, a bad model, a body that is not JSON) stops the run
  at once; failed calls in a row stop it after `--max-failed-calls`.
* A run replayed with `--replay-llm` writes the same metrics.csv, bytes and
  all, and is labelled with the recorded backend and model.
"""

from __future__ import annotations

import csv
import json
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.failures import RunStopped
from ledgermem.evaluation.metrics import compute_metrics, outcomes_from_ledger
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.projections.events import LlmCalled, TurnRecorded
from ledgermem.ledger.store import Ledger
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR
from tests.evaluation.test_replay_llm import _model_like
from tests.llm_server import Behaviour, ScriptedLlmServer

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)
SYSTEMS = ("three_layer", "naive_chain")
FAST = {"all": {"backoff_base_s": 0.01, "backoff_max_s": 0.05}}


def _dataset() -> Any:
    return generate_synthetic(n_episodes=2, turns=10, seed=5)


def _options(runs: Path, url: str, **extra: Any) -> RunOptions:
    base: dict[str, Any] = {"run_id": "r", "runs_dir": runs, "systems": SYSTEMS, "memory": CONFIG, "judge": "llm",
                            "env_file": None, "backend": "http", "base_url": url, "model": "m", "max_retries": 0,
                            "llm_flags": FAST}
    return RunOptions(**(base | extra))


class Switch:
    """A server script: the heuristic model, except for the requests whose numbers are in `failing`."""

    def __init__(self, failing: set[int], failure: Behaviour = ("status", 503, {})) -> None:
        self.failing, self.failure, self.n = failing, failure, 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Behaviour:
        with self.lock:
            self.n += 1
            n = self.n
        return self.failure if n in self.failing else _model_like(request)


def _probe_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "probe_predictions.csv").open(encoding="utf-8", newline="") as fh:
        return [{k: v for k, v in row.items() if k != "store_events"} for row in csv.DictReader(fh)]


def _events(path: Path, kind: type) -> list[tuple[Any, Any]]:
    with Ledger(path, read_only=True) as ledger:
        return [(r.stream, r.event) for r in ledger.read() if isinstance(r.event, kind)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run against a server that never fails."""
    runs = tmp_path_factory.mktemp("reference")
    with ScriptedLlmServer(_model_like) as server:
        result = run(_dataset(), _options(runs, server.base_url))
    assert not result.incomplete
    return result.ledger_path


def test_failed_calls_are_kept_and_redone_by_running_the_same_command_again(tmp_path: Path, reference: Path) -> None:
    switch = Switch(failing={4, 30, 61})  # a summarize call early on, and later ones wherever they fall
    with ScriptedLlmServer(switch) as server:
        first = run(_dataset(), _options(tmp_path, server.base_url, max_failed_calls=5))
        assert first.incomplete and first.last_error and "503" in first.last_error
        failed = [(s, e) for s, e in _events(first.ledger_path, LlmCalled) if e.error]
        assert len(failed) == 3
        with Ledger(first.ledger_path, read_only=True) as ledger:
            assert not list(ledger.read(event_types=["run_finished"]))
        second = run(_dataset(), _options(tmp_path, server.base_url, max_failed_calls=5))
    assert not second.incomplete
    # The failed attempts stay; each redo is a new event; no turn is recorded twice.
    assert [(s, e) for s, e in _events(second.ledger_path, LlmCalled) if e.error] == failed
    turns = Counter((s, e.turn) for s, e in _events(second.ledger_path, TurnRecorded))
    assert turns and max(turns.values()) == 1
    assert len(turns) == len(_events(reference, TurnRecorded))
    # What the memory holds and how the probes came out is what a run that never failed gets (the count of
    # events in the store differs by the failed calls kept).
    from ledgermem.evaluation.outputs import write_outputs

    write_outputs(reference)
    write_outputs(second.ledger_path)
    assert _probe_rows(second.ledger_path.parent) == _probe_rows(reference.parent)
    keep = ("Current_Fact_Acc", "History_Fact_Acc", "Memory_Point_Acc", "summaries_created", "turns", "probes",
            "summarizer_format_retries", "overrides_applied", "Avg_Active_Chain_Tokens", "Write_Precision")
    with Ledger(reference, read_only=True) as ledger:
        ref = compute_metrics(outcomes_from_ledger(ledger, "r"))
    for system in SYSTEMS:
        assert {k: second.metrics[system][k] for k in keep} == {k: ref[system][k] for k in keep}
    assert sum(second.metrics[s]["llm_errors"] for s in SYSTEMS) == 3


def test_every_attempt_is_recorded_also_for_a_call_that_later_succeeded(tmp_path: Path) -> None:
    switch = Switch(failing={1, 2})
    with ScriptedLlmServer(switch) as server:
        result = run(_dataset(), _options(tmp_path, server.base_url, max_retries=3))
    assert not result.incomplete
    (_, first), *_ = _events(result.ledger_path, LlmCalled)
    assert first.error is None and first.retries == 2
    assert [(a["status"], a["error"]) for a in first.attempts] == [(503, "503"), (503, "503"), (200, None)]
    assert all(a["latency_ms"] > 0 for a in first.attempts)


@pytest.mark.parametrize("failure, said", [
    (("status", 401, {}, '{"error": {"message": "Invalid API Key"}}'), "Invalid API Key"),
    (("status", 400, {}, '{"error": {"message": "model \'m\' not found"}}'), "model 'm' not found"),
    (("status", 404, {}, "<html>no such route</html>"), "no such route"),
    (("raw", b"<html>a login page</html>"), "a login page"),
])
def test_a_fatal_failure_stops_the_run_at_once_with_the_servers_message(
    tmp_path: Path, failure: Behaviour, said: str
) -> None:
    with ScriptedLlmServer([failure]) as server:
        with pytest.raises(RunStopped) as err:
            run(_dataset(), _options(tmp_path, server.base_url, max_retries=3, max_failed_calls=99))
        assert len(server.requests) == 1  # not retried, and no other call was made
    message = str(err.value)
    assert said in message and "\n" not in message and "no retry can fix" in message
    (_, event), = _events(tmp_path / "r" / "ledger.duckdb", LlmCalled)
    assert event.error and said in event.error


def test_failed_calls_in_a_row_stop_the_run(tmp_path: Path) -> None:
    with ScriptedLlmServer([("status", 503, {})]) as server:
        with pytest.raises(RunStopped, match=r"2 LLM calls failed in a row \(--max-failed-calls 2\).*503"):
            run(_dataset(), _options(tmp_path, server.base_url, max_retries=1, max_failed_calls=2))
        assert len(server.requests) == 4  # two calls of two attempts each


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_server_stops_the_cli_fast_with_the_error_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["run", "--episodes", "2", "--turns", "6", "--backend", "http", "--base-url", url,
                                      "--model", "m", "--timeout", "1", "--backoff-base", "0.01", "--max-retries", "2"])
    assert time.monotonic() - started < 20
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "connection error" in line and "3 LLM calls failed in a row" in line and url in line
    assert "Traceback" not in result.output


def test_an_auth_error_exits_non_zero_from_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedLlmServer([("status", 401, {}, '{"error": {"message": "Invalid API Key"}}')]) as server:
        result = CliRunner().invoke(cli, ["run", "--episodes", "1", "--turns", "4", "--backend", "http",
                                          "--base-url", server.base_url, "--model", "m"])
    assert result.exit_code == 1 and "Invalid API Key" in result.stderr and "status 401" in result.stderr


def test_the_cli_exits_non_zero_while_episodes_wait_for_a_redo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--run-id", "r", "--episodes", "2", "--turns", "6", "--systems", "three_layer", "--backend", "http",
            "--model", "m", "--max-retries", "0", "--max-failed-calls", "5"]
    with ScriptedLlmServer(Switch(failing={2})) as server:
        first = CliRunner().invoke(cli, [*args, "--base-url", server.base_url])
        assert first.exit_code == 1 and "1 episode(s) stopped at a failed LLM call" in first.stderr
        assert "INCOMPLETE: 1 episode(s) to redo" in first.stdout
        assert "run the same command again" in first.stderr
        second = CliRunner().invoke(cli, [*args, "--base-url", server.base_url])
    assert second.exit_code == 0, second.output
    assert "note: 1 LLM call(s) failed and their turns or probes were redone" in second.stderr


# -- replay ---------------------------------------------------------------------------------


def test_a_replay_writes_the_same_metrics_csv_and_keeps_the_recorded_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base = ["--episodes", "2", "--turns", "8", "--systems", "three_layer,naive_chain,full_context",
            "--judge", "llm", "--no-personal-data"]
    with ScriptedLlmServer(Switch(failing={3})) as server:  # one retried call: attempts and retries replayed too
        live = CliRunner().invoke(cli, ["run", "--run-id", "live", "--backend", "llamacpp", "--base-url",
                                        server.base_url, "--model", "small-q4", "--backoff-base", "0.01", *base])
    assert live.exit_code == 0, live.output
    replayed = CliRunner().invoke(cli, ["run", "--run-id", "again", "--replay-llm", "live", *base])
    assert replayed.exit_code == 0, replayed.output
    runs = tmp_path / "runs"
    recorded_csv = (runs / "live" / "metrics.csv").read_bytes()
    assert (runs / "again" / "metrics.csv").read_bytes() == recorded_csv
    assert b"llm_latency_ms_summarize" in recorded_csv and b"wall_ms" not in recorded_csv
    assert (runs / "again" / "timing.csv").is_file()
    assert "backend llamacpp, model small-q4" in live.output
    assert "backend llamacpp, model small-q4, replayed from live" in replayed.output
    meta = json.loads((runs / "again" / "run_metadata.json").read_text(encoding="utf-8"))
    assert meta["config"]["backend"] == "llamacpp"
    assert meta["config"]["backends"]["answer"]["model"] == "small-q4"
    assert meta["config"]["backends"]["replay_llm"]["recorded_calls"] > 0


def test_a_broken_replay_latency_would_show_in_metrics_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control: with the replay's own clock instead of the recorded latency, the files differ."""
    import ledgermem.memory.answering as answering
    monkeypatch.chdir(tmp_path)
    base = ["--episodes", "1", "--turns", "6", "--systems", "three_layer", "--no-personal-data"]
    with ScriptedLlmServer([("sleep", 0.02, "NONE")]) as server:  # a slow model: 20 ms a call at least
        assert CliRunner().invoke(cli, ["run", "--run-id", "live", "--backend", "http", "--base-url", server.base_url,
                                        "--model", "m", *base]).exit_code == 0
    original = answering.llm_called

    def own_clock(*args: Any, **kwargs: Any) -> Any:
        completion = args[2]
        from dataclasses import replace

        return original(args[0], args[1], replace(completion, latency_ms=None), **kwargs)

    monkeypatch.setattr(answering, "llm_called", own_clock)
    assert CliRunner().invoke(cli, ["run", "--run-id", "again", "--replay-llm", "live", *base]).exit_code == 0
    runs = tmp_path / "runs"
    assert (runs / "again" / "metrics.csv").read_bytes() != (runs / "live" / "metrics.csv").read_bytes()


def test_a_recorded_run_with_failures_replays_the_same_way(tmp_path: Path) -> None:
    """The failures stop the same episodes; running the replay again serves the redone calls."""
    from ledgermem.memory.netguard import network_disabled

    with ScriptedLlmServer(Switch(failing={4, 40})) as server:
        first = run(_dataset(), _options(tmp_path, server.base_url, max_failed_calls=5))
        recorded = run(_dataset(), _options(tmp_path, server.base_url, max_failed_calls=5))
    assert first.incomplete and not recorded.incomplete
    replay = _options(tmp_path, "http://unused.invalid/v1", run_id="again", replay_llm=recorded.ledger_path,
                      max_failed_calls=5)
    with network_disabled():
        again_first = run(_dataset(), replay)
        again = run(_dataset(), replay)
    assert again_first.incomplete == first.incomplete and not again.incomplete
    wall = {"wall_ms_per_turn", "wall_ms_per_probe"}
    assert {s: {k: v for k, v in row.items() if k not in wall} for s, row in again.metrics.items()} == \
        {s: {k: v for k, v in row.items() if k not in wall} for s, row in recorded.metrics.items()}


# -- settings on the command line -------------------------------------------------------------


def test_cli_settings_reach_each_purposes_requests_and_the_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEDGERMEM_MODEL", "m")
    monkeypatch.setenv("LEDGERMEM_JUDGE_MODEL", "judge-from-env")  # the per-purpose variable beats the global one
    with ScriptedLlmServer(_model_like) as server:
        result = CliRunner().invoke(cli, [
            "run", "--run-id", "s", "--episodes", "1", "--turns", "4", "--systems", "three_layer", "--judge", "llm",
            "--backend", "http", "--base-url", server.base_url, "--max-tokens", "300",
            "--temperature", "0.2", "--stop", "</s>", "--summarize-opt", "max_tokens=99",
            "--summarize-opt", "stop=\\n\\n", "--summarize-opt", "stop=END", "--judge-opt", "timeout=5"])
        assert result.exit_code == 0, result.output
        by_purpose: dict[str, set[tuple[Any, ...]]] = {}
        for r in server.requests:
            from tests.evaluation.test_replay_llm import _purpose

            body = r.json
            by_purpose.setdefault(_purpose(body["messages"]), set()).add(
                (body["model"], body["max_tokens"], body["temperature"], tuple(body.get("stop", ()))))
    assert by_purpose["answer"] == {("m", 300, 0.2, ("</s>",))}
    assert by_purpose["summarize"] == {("m", 99, 0.2, ("\n\n", "END"))}
    assert by_purpose["judge"] == {("judge-from-env", 300, 0.2, ("</s>",))}
    backends = json.loads((tmp_path / "runs" / "s" / "run_metadata.json").read_text())["config"]["backends"]
    assert (backends["judge"]["timeout_s"], backends["judge"]["sources"]["timeout_s"]) == (5.0, "flag")
    assert (backends["judge"]["model"], backends["judge"]["sources"]["model"]) == ("judge-from-env", "env")
    assert backends["summarize"]["stop"] == ["\n\n", "END"] and backends["answer"]["max_tokens"] == 300


@pytest.mark.parametrize("option, fragment", [
    ("colour=red", "expected FIELD=VALUE with FIELD one of base_url, model"),
    ("api_key=sk-123", "keys are not taken on the command line"),
    ("max_tokens", "expected FIELD=VALUE"),
])
def test_a_bad_purpose_option_is_a_usage_error(option: str, fragment: str) -> None:
    result = CliRunner().invoke(cli, ["run", "--summarize-opt", option])
    assert result.exit_code == 2 and fragment in result.output
    assert "sk-123" not in result.output  # the key is not echoed back


def test_a_bad_purpose_value_names_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "--backend", "llamacpp", "--judge", "llm", "--judge-opt",
                                      "max_tokens=lots", "--episodes", "1", "--turns", "4"])
    assert result.exit_code == 1 and "max_tokens 'lots' (str) from flag max_tokens is not a whole number" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_resumed_run_may_change_how_calls_are_delivered_but_not_what_they_ask(tmp_path: Path) -> None:
    """A run that failed on timeouts is resumed with a longer timeout and more retries; a new model is refused."""
    from ledgermem.memory.errors import RunExists

    with ScriptedLlmServer(Switch(failing={3})) as server:
        first = run(_dataset(), _options(tmp_path, server.base_url, timeout=5.0))
        assert first.incomplete
        with pytest.raises(RunExists, match="different config"):
            run(_dataset(), _options(tmp_path, server.base_url, model="other"))
        with pytest.raises(RunExists, match="different config"):
            run(_dataset(), _options(tmp_path, server.base_url, llm_flags={**FAST, "summarize": {"max_tokens": 9}}))
        second = run(_dataset(), _options(tmp_path, server.base_url, timeout=30.0, max_retries=3,
                                          llm_flags={"all": {"backoff_base_s": 0.02, "backoff_max_s": 0.1}}))
    assert not second.incomplete
