"""The worked example: an agent loop against an OpenAI-compatible model (the loopback fake model server) that
keeps its memory in the live service through `ledgermem.client`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledgermem.client import MemoryClient
from ledgermem.service.agent_loop import MODEL_TOOLS, Agent
from ledgermem.service.live import LiveStore
from ledgermem.service.live_questions import openai_tools
from tests.llm_server import ScriptedLlmServer
from tests.service.conftest import live_http

S = "acme/user-42/session-7"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[tuple[MemoryClient, LiveStore]]:
    store = LiveStore(tmp_path / "mem")
    secret = store.tokens.create("acme/user-42", "read,write")[1]
    with live_http(store) as url:
        yield MemoryClient(url, secret), store


def tool_call(name: str, arguments: Any, ident: str = "call_1") -> tuple[str, bytes]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    body = {"id": "x", "object": "chat.completion", "model": "fake", "choices": [{"index": 0, "finish_reason":
            "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": ident, "type": "function", "function": {"name": name, "arguments": text}}]}}]}
    return ("raw", json.dumps(body).encode())


def test_the_agent_renders_calls_a_tool_answers_and_records_its_turn(memory: tuple[MemoryClient, LiveStore]) -> None:
    client, store = memory
    client.record_turn(S, "My office is on floor 3.", "Noted.")
    client.record_turn(S, "Actually my office moved to floor 5.", "Noted.")

    def model(payload: Any) -> Any:
        if not any(m["role"] == "tool" for m in payload["messages"]):
            return tool_call("get_predecessor_summary", {"fact_key": "office", "exclude_value": "floor 5"})
        return ("ok", "It was on floor 3 before; now it is on floor 5.")

    with ScriptedLlmServer(model) as llm:
        agent = Agent(client, S, model_url=llm.base_url, model="fake")
        reply = agent.turn("Where was my office before it moved?")
        first, second = llm.requests[0].json, llm.requests[1].json
    assert reply == "It was on floor 3 before; now it is on floor 5."
    assert "office=floor 5" in first["messages"][1]["content"]  # the rendered memory is data in the user message
    assert "office=floor 5" not in first["messages"][0]["content"]  # never in the system prompt
    assert first["tools"] == openai_tools(MODEL_TOOLS) and {t["function"]["name"] for t in first["tools"]} >= {
        "get_archived_summary", "get_raw_record", "get_predecessor_summary", "expand_index"}
    assert "value=floor 3" in second["messages"][-1]["content"] and second["messages"][-1]["role"] == "tool"
    assert agent.trace[0]["ok"] is True
    raw = client.get_raw_record(S, "r0003")
    assert raw["ok"] and "Where was my office before it moved?" in raw["text"] and reply in raw["text"]


def test_the_model_cannot_write_erase_or_leave_its_stream(memory: tuple[MemoryClient, LiveStore]) -> None:
    client, store = memory
    client.record_turn(S, "My office is on floor 3.", "Noted.")
    client.record_turn("acme/user-42/other", "My PIN is 4921.", "Noted.")
    script = [tool_call("erase", {"legal_basis": "because", "slot": "office"}),
              tool_call("get_raw_record", {"stream": "acme/user-42/other", "reference_id": "r0001"}),
              tool_call("current_values", "not json"),
              ("ok", "Done.")]
    with ScriptedLlmServer(script) as llm:
        agent = Agent(client, S, model_url=llm.base_url, model="fake", max_steps=5)
        assert agent.turn("Please forget everything.") == "Done."
    assert [t["ok"] for t in agent.trace] == [False, True, False]
    assert "4921" not in json.dumps(agent.trace[1]["result"])  # read from the agent's own stream instead
    assert "My office is on floor 3." in agent.trace[1]["result"]["text"]
    assert client.current_values(S) == {"office": "floor 3"}  # nothing was erased
    assert [w["operation"] for w in store.writes() if w["operation"] == "erase"] == []
