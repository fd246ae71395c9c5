"""`ledgermem.client` against a live server in a subprocess, and `ledgermem tools`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from ledgermem.client import MemoryClient, MemoryServiceError
from ledgermem.service.live_questions import LIVE_QUESTIONS
from ledgermem.service.tokens import TokenStore
from tests.service.conftest import Served

S = "acme/user-42/session-7"


class LiveServed(Served):
    """`ledgermem live serve FOLDER` in a subprocess on a free port."""

    def __init__(self, folder: Path) -> None:  # the parent's start-up, with the live command line
        import queue
        import threading

        from tests.service.conftest import _pump

        self.proc = subprocess.Popen([sys.executable, "-m", "ledgermem", "live", "serve", str(folder), "--port", "0",
                                      "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=_pump, args=(self.proc.stdout, lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr or ()), daemon=True).start()
        first = lines.get(timeout=60)
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", first or "")
        if not found:
            self.stop()
            raise RuntimeError(f"ledgermem live serve did not start: {first!r} {''.join(self.errors)}")
        self.url = f"http://127.0.0.1:{found.group(1)}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServed, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("live") / "mem"
    store = TokenStore(folder)
    secrets = {"acme": store.create("acme", "read,write,erase")[1], "globex": store.create("globex", "read,write")[1]}
    served = LiveServed(folder)
    try:
        yield served, secrets
    finally:
        served.stop()


def test_the_client_records_reads_and_erases(server: tuple[LiveServed, dict[str, str]]) -> None:
    served, secrets = server
    memory = MemoryClient(served.url, secrets["acme"])
    first = memory.record_turn(S, "My office is on floor 3.", "Noted.", idempotency_key="c1")
    assert first["created"] and first["turn"] == 1
    assert memory.record_turn(S, "My office is on floor 3.", "Noted.", idempotency_key="c1")["created"] is False
    memory.record_turn(S, "Actually my office moved to floor 5.", "Noted.")
    assert memory.current_values(S)["office"] == "floor 5"
    assert [h["value"] for h in memory.history(S, "office")] == ["floor 3", "floor 5"]
    assert "office=floor 5" in memory.render(S)["text"]
    assert "floor 3" in memory.get_predecessor_summary(S, "office", "floor 5")["text"]
    assert memory.get_raw_record(S, "r0001")["ok"]
    assert memory.blame(S, "office")["value"] == "floor 5"
    assert memory.get_archived_summary(S, "s0001")["ok"]
    assert memory.expand_index(S, "i0001")["ok"] is False
    assert "floor 5" in memory.respond(S, "Which floor is my office on?")["reply"]
    assert [s["stream"] for s in memory.streams()] == [S]
    receipt = memory.erase(S, "GDPR art. 17", slot="office")["receipt"]
    assert receipt["keys_shredded"] and "office" not in memory.current_values(S)


def test_the_client_raises_the_status_and_the_current_version(server: tuple[LiveServed, dict[str, str]]) -> None:
    served, secrets = server
    memory = MemoryClient(served.url, secrets["acme"])
    stream = "acme/user-42/session-8"
    version = memory.record_turn(stream, "I live in Lyon.", "OK.")["version"]
    with pytest.raises(MemoryServiceError) as caught:
        memory.record_turn(stream, "I live in Paris.", "OK.", expected_version=version - 1)
    assert caught.value.status == 409 and caught.value.detail == {"current_version": version}
    with pytest.raises(MemoryServiceError) as refused:
        MemoryClient(served.url, secrets["globex"]).render(stream)
    assert refused.value.status == 403
    with pytest.raises(MemoryServiceError) as unknown:
        MemoryClient(served.url, "lmt_nope").render(stream)
    assert unknown.value.status == 401


def test_every_tool_has_a_client_method_or_call(server: tuple[LiveServed, dict[str, str]]) -> None:
    served, secrets = server
    memory = MemoryClient(served.url, secrets["acme"])
    methods = {"render_memory": "render", "list_streams": "streams"}
    assert all(hasattr(memory, methods.get(q.name, q.name)) for q in LIVE_QUESTIONS)
    with pytest.raises(ValueError, match="no tool"):
        memory.call("drop_everything")
    assert requests.get(served.url + "/openapi.json", timeout=30).json()["info"]["title"].startswith("ledgermem live")


def test_tools_prints_the_same_tools_as_openai_functions_and_mcp_tools() -> None:
    def tools(fmt: str) -> object:
        done = subprocess.run([sys.executable, "-m", "ledgermem", "tools", "--format", fmt], capture_output=True,
                              text=True, timeout=120, check=True)
        return json.loads(done.stdout)

    openai, mcp = tools("openai"), tools("mcp")
    assert isinstance(openai, list) and isinstance(mcp, dict)
    assert [f["type"] for f in openai] == ["function"] * len(LIVE_QUESTIONS)
    assert [f["function"]["name"] for f in openai] == [t["name"] for t in mcp["tools"]] == \
        [q.name for q in LIVE_QUESTIONS]
    assert [f["function"]["parameters"] for f in openai] == [t["inputSchema"] for t in mcp["tools"]]
    record = openai[0]["function"]["parameters"]
    assert record["required"] == ["stream", "user"] and record["additionalProperties"] is False
    openapi = tools("openapi")
    assert isinstance(openapi, dict) and set(openapi["paths"]) == {q.path for q in LIVE_QUESTIONS}
