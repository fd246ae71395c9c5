"""Runs against a real HTTP model endpoint, recorded in the ledger and replayed with the network disabled.

The endpoint is `tests/llm_server.py` on 127.0.0.1, answering every chat
completion the way the offline heuristic backend would (so the numbers mean
something), over real HTTP through the OpenAI-compatible client.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.metrics import without_timing
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.ledger.store import Ledger
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.errors import LlmNotRecorded, NetworkDisabled
from ledgermem.memory.netguard import network_disabled
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR
from tests.llm_server import ScriptedLlmServer

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)
SECRET = "sk-test-0123456789abcdef"
HEURISTIC = HeuristicBackend(tokenizer=ESTIMATOR)


def _purpose(messages: list[dict[str, str]]) -> str:
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    if system.startswith(("You maintain an agent's long-term memory", "You keep an agent's running summary")):
        return "summarize"
    if system.startswith("You grade answers"):
        return "judge"
    return "answer"


def _model_like(request: dict) -> tuple:
    """The heuristic backend behind an HTTP endpoint."""
    messages = request["messages"]
    completion = HEURISTIC.complete(messages, purpose=_purpose(messages))
    return ("ok", completion.text, {"prompt_tokens": completion.usage["prompt_tokens"],
                                    "completion_tokens": completion.usage["completion_tokens"]})


def _dataset(turns: int = 16):
    return generate_synthetic(n_episodes=2, turns=turns, seed=3)


def _options(runs: Path, run_id: str, **extra: object) -> RunOptions:
    return RunOptions(run_id=run_id, runs_dir=runs, systems=("three_layer", "naive_chain", "memgpt_style"),
                      memory=CONFIG, judge="llm", env_file=None, **extra)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    runs = tmp_path_factory.mktemp("runs")
    with ScriptedLlmServer(_model_like) as server:
        result = run(_dataset(), _options(runs, "live", backend="http", base_url=server.base_url, model="m-1"))
        served = len(server.requests)
    return result, served


def _llm_texts(path: Path) -> list[tuple[str, str, str]]:
    with Ledger(path, read_only=True) as ledger:
        return [(r.stream.system, r.event.purpose, r.event.text)  # type: ignore[attr-defined]
                for r in ledger.read(event_types=["llm_called"])]


def test_a_live_run_goes_over_http_and_records_every_call(recorded) -> None:
    result, served = recorded
    calls = _llm_texts(result.ledger_path)
    assert served == len(calls) > 50
    with Ledger(result.ledger_path, read_only=True) as ledger:
        events = [r.event for r in ledger.read(event_types=["llm_called"])]
    assert {(e.backend, e.model) for e in events} == {("http", "m-1")}  # type: ignore[attr-defined]
    assert {e.purpose for e in events} == {"summarize", "answer", "judge"}  # type: ignore[attr-defined]
    row = result.metrics["three_layer"]
    assert row["Current_Fact_Acc"] == 1.0 and row["llm_calls_judge"] == row["probes"]
    assert row["prompt_tokens_summarize"] > 0 and row["llm_errors"] == 0


def test_replaying_the_recorded_calls_with_the_network_disabled_gives_identical_metrics(recorded, tmp_path) -> None:
    result, _ = recorded
    with network_disabled():
        again = run(_dataset(), _options(tmp_path, "again", replay_llm=result.ledger_path))
    assert without_timing(again.metrics) == without_timing(result.metrics)
    assert _llm_texts(again.ledger_path) == _llm_texts(result.ledger_path)


def test_a_call_the_recording_never_made_is_an_error_naming_purpose_and_hash(recorded, tmp_path) -> None:
    result, _ = recorded
    with network_disabled(), pytest.raises(LlmNotRecorded, match=r"no recorded 'summarize' call with prompt hash [0-9a-f]{16}"):
        run(_dataset(turns=18), _options(tmp_path, "other", replay_llm=result.ledger_path))


def test_the_network_guard_refuses_connections() -> None:
    with ScriptedLlmServer([("ok", "hi")]) as server:
        with network_disabled(), pytest.raises((NetworkDisabled, requests.ConnectionError)):
            requests.post(server.base_url + "/chat/completions", json={}, timeout=2)
        assert requests.post(server.base_url + "/chat/completions", json={"messages": []}, timeout=2).ok


def test_the_cli_records_over_http_and_replays_without_keys_in_any_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LEDGERMEM_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)
    base = ["--episodes", "1", "--turns", "10", "--systems", "three_layer,full_context", "--no-personal-data"]
    with ScriptedLlmServer(_model_like) as server:
        live = CliRunner().invoke(cli, ["run", "--run-id", "live", "--backend", "http", "--base-url",
                                        server.base_url, "--model", "m-2", *base], catch_exceptions=False)
        assert live.exit_code == 0, live.output
        assert server.requests and all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in server.requests)
    replayed = CliRunner().invoke(cli, ["run", "--run-id", "again", "--replay-llm", "live", *base],
                                  catch_exceptions=False)
    assert replayed.exit_code == 0, replayed.output
    meta = json.loads((tmp_path / "runs" / "live" / "run_metadata.json").read_text(encoding="utf-8"))
    answer = meta["config"]["backends"]["answer"]
    assert answer["api_key"] == "set" and answer["sources"]["api_key"] == "env" and answer["model"] == "m-2"
    for folder in ("live", "again"):
        for f in (tmp_path / "runs" / folder).iterdir():
            assert SECRET.encode() not in f.read_bytes(), f
    live_metrics = (tmp_path / "runs" / "live" / "probe_predictions.csv").read_text(encoding="utf-8")
    assert live_metrics == (tmp_path / "runs" / "again" / "probe_predictions.csv").read_text(encoding="utf-8")


def test_missing_key_for_a_preset_that_needs_one_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    for var in ("OPENAI_API_KEY", "LEDGERMEM_API_KEY", "LEDGERMEM_ANSWER_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "--backend", "openai", "--episodes", "1", "--turns", "4"])
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()
