"""The live memory over MCP stdio (`ledgermem live mcp`): the project's own client records turns, renders the
memory and calls every memory tool; a token of one namespace cannot touch another's."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledgermem.service.live_questions import LIVE_QUESTIONS, openai_tools
from ledgermem.service.tokens import TokenStore
from tests.service.conftest import Mcp, _pump


class LiveMcp(Mcp):
    """`ledgermem live mcp FOLDER` with a token in its environment."""

    def __init__(self, folder: Path, secret: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "LEDGERMEM_TOKEN"}
        if secret is not None:
            env["LEDGERMEM_TOKEN"] = secret
        self.proc = subprocess.Popen([sys.executable, "-m", "ledgermem", "live", "mcp", str(folder)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=_pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr or ()), daemon=True).start()
        self._id = 0


S = "acme/user-42/session-7"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "mem"


def secret_for(folder: Path, namespace: str, scopes: str) -> str:
    return TokenStore(folder).create(namespace, scopes)[1]


@pytest.fixture
def acme(folder: Path) -> Iterator[LiveMcp]:
    client = LiveMcp(folder, secret_for(folder, "acme", "read,write,erase"))
    try:
        yield client
    finally:
        client.stop()


def test_an_mcp_client_records_turns_renders_and_calls_every_memory_tool(acme: LiveMcp) -> None:
    init = acme.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "test", "version": "0"}})
    assert "record_turn" in init["result"]["instructions"]
    listed = acme.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in listed] == [q.name for q in LIVE_QUESTIONS]
    by_name = {t["name"]: t for t in listed}
    assert by_name["record_turn"]["annotations"]["readOnlyHint"] is False
    assert by_name["erase"]["annotations"]["destructiveHint"] is True
    assert by_name["render_memory"]["annotations"]["readOnlyHint"] is True
    # The MCP schemas and the OpenAI functions are the same schemas.
    assert {f["function"]["name"]: f["function"]["parameters"] for f in openai_tools()} == \
        {t["name"]: t["inputSchema"] for t in listed}

    for i, (user, agent) in enumerate([("My office is on floor 3.", "Noted."), ("I live in Lyon.", "OK."),
                                       ("Actually my office moved to floor 5.", "Noted.")]):
        done = acme.call("record_turn", stream=S, user=user, agent=agent, idempotency_key=f"k{i}")
        assert not done["isError"] and done["structuredContent"]["turn"] == i + 1
    again = acme.call("record_turn", stream=S, user="I live in Lyon.", agent="OK.", idempotency_key="k1")
    assert again["structuredContent"]["created"] is False and again["structuredContent"]["turn"] == 2

    results: dict[str, Any] = {
        "render_memory": acme.call("render_memory", stream=S),
        "current_values": acme.call("current_values", stream=S),
        "history": acme.call("history", stream=S, slot="office"),
        "get_value_as_of": acme.call("get_value_as_of", stream=S, slot="office", at="2999-01-01T00:00Z"),
        "blame": acme.call("blame", stream=S, slot="office"),
        "get_predecessor_summary": acme.call("get_predecessor_summary", stream=S, fact_key="office",
                                             exclude_value="floor 5"),
        "get_raw_record": acme.call("get_raw_record", stream=S, reference_id="r0002"),
        "expand_index": acme.call("expand_index", stream=S, index_id="i0001"),
        "list_streams": acme.call("list_streams"),
        "respond": acme.call("respond", stream=S, user="Which floor is my office on?", idempotency_key="q1"),
        "ask": acme.call("ask", stream=S, question="Which floor is my office on?"),
        "tool_calls": acme.call("tool_calls", stream=S),
    }
    first = results["history"]["structuredContent"]["values"][0]["summary_id"]
    results["get_archived_summary"] = acme.call("get_archived_summary", stream=S, summary_id=first)
    results["erase"] = acme.call("erase", stream=S, legal_basis="GDPR art. 17", value="Lyon")
    results["apply_retention"] = acme.call("apply_retention", stream=S)  # no policy declared: nothing expires
    assert set(results) | {"record_turn"} == {q.name for q in LIVE_QUESTIONS}
    assert not any(r["isError"] for r in results.values()), {k: r for k, r in results.items() if r["isError"]}
    content = {k: r["structuredContent"] for k, r in results.items()}
    assert "office=floor 5" in content["render_memory"]["text"]
    assert {v["slot"]: v["value"] for v in content["current_values"]["values"]}["office"] == "floor 5"
    assert "value=floor 3" in content["get_predecessor_summary"]["text"]
    assert "Lyon" in content["get_raw_record"]["text"] and "superseded" in content["get_archived_summary"]["text"]
    assert content["expand_index"]["ok"] is False and content["get_value_as_of"]["value"] == "floor 5"
    assert content["blame"]["value"] == "floor 5" and content["blame"]["raw"][0]["record_id"] == "r0003"
    assert "floor 5" in content["respond"]["reply"]
    assert content["erase"]["receipt"]["keys_shredded"]
    assert content["apply_retention"]["policy"] is None and content["apply_retention"]["applied"] is False
    assert by_name["apply_retention"]["annotations"]["destructiveHint"] is True
    assert [s["stream"] for s in content["list_streams"]["streams"]] == [S]
    assert json.loads(results["current_values"]["content"][0]["text"]) == content["current_values"]


def test_an_mcp_token_of_another_namespace_is_refused(folder: Path) -> None:
    writer = LiveMcp(folder, secret_for(folder, "acme", "read,write"))
    try:
        assert not writer.call("record_turn", stream=S, user="My office is on floor 3.")["isError"]
    finally:
        writer.stop()
    other = LiveMcp(folder, secret_for(folder, "globex", "read,write,erase"))
    try:
        for tool, args in (("current_values", {}), ("render_memory", {}),
                           ("record_turn", {"user": "My office is on floor 9."}),
                           ("erase", {"legal_basis": "x", "slot": "office"})):
            result = other.call(tool, stream=S, **args)
            assert result["isError"] and result["structuredContent"]["status"] == 403, (tool, result)
        assert other.call("list_streams")["structuredContent"]["streams"] == []
    finally:
        other.stop()
    reader = LiveMcp(folder, secret_for(folder, "acme", "read"))
    try:
        assert reader.call("current_values", stream=S)["structuredContent"]["turn"] == 1  # globex wrote nothing
        assert reader.call("record_turn", stream=S, user="x")["structuredContent"]["status"] == 403
    finally:
        reader.stop()


def test_live_mcp_without_a_valid_token_does_not_start(folder: Path) -> None:
    secret_for(folder, "acme", "read")
    done = subprocess.run([sys.executable, "-m", "ledgermem", "live", "mcp", str(folder)], input="", text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, "LEDGERMEM_TOKEN": "lmt_0123456789abcdef_" + "A" * 43})
    assert done.returncode == 1 and "bearer token" in done.stderr and done.stdout == ""


def test_a_folder_another_process_serves_is_refused_with_one_line(folder: Path) -> None:
    writer = LiveMcp(folder, secret_for(folder, "acme", "read,write"))
    try:
        assert not writer.call("record_turn", stream=S, user="My office is on floor 3.")["isError"]
        done = subprocess.run([sys.executable, "-m", "ledgermem", "live", "serve", str(folder), "--port", "0"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and "another" in done.stderr
    finally:
        writer.stop()


def test_a_token_revoked_during_an_mcp_session_answers_nothing_more(folder: Path) -> None:
    store = TokenStore(folder)
    token, secret = store.create("acme", "read,write")
    client = LiveMcp(folder, secret)
    try:
        assert not client.call("record_turn", stream=S, user="My office is on floor 3.")["isError"]
        store.revoke(token.token_id)  # from another process, as `ledgermem token revoke` does
        refused = client.call("current_values", stream=S)
        assert refused["isError"] and refused["structuredContent"]["status"] == 401
        assert "revoked" in refused["structuredContent"]["error"]
    finally:
        client.stop()
