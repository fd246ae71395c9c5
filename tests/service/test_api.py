"""The audit API over HTTP and MCP: the same answers, validated inputs, paging, a token, no writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.service.core import QUESTIONS
from tests.service.conftest import InProcess, Mcp, Served

EP = "/api/runs/small/episodes/syn-en-000"


def first(served: Served, path: str, key: str, **params: Any) -> Any:
    return served.get(path, **params).json()["items"][0][key]


def examples(served: Served) -> dict[str, dict[str, Any]]:
    """A real argument set for every read question, built from the run's own answers."""
    slot = first(served, EP + "/values", "slot")
    probe = next(p["probe_id"] for p in served.get(EP + "/probes").json()["items"] if p["where"] == "one_hop")
    ep = {"run": "small", "episode": "syn-en-000"}
    return {
        "list_runs": {}, "get_run": {"run": "small"}, "list_episodes": {"run": "small"},
        "audit": {"run": "small"}, "erasures": {"run": "small"},
        "current_values": {**ep, "seq": 40}, "history": {**ep, "slot": slot}, "as_of": {**ep, "turn": 6},
        "blame": {**ep, "slot": slot}, "diff": {**ep, "from_seq": 10, "to_seq": 60},
        "manifest": {**ep, "probe": probe}, "list_probes": {**ep, "limit": 3},
        "probe": {**ep, "probe": probe}, "tool_calls": {**ep, "probe": probe}, "layers": {**ep, "seq": 50, "limit": 4}, "timeline": ep,
    }


def http_path(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    question = next(q for q in QUESTIONS if q.name == name)
    path, query = question.path, dict(args)
    for p in question.params:
        if p.where == "path":
            path = path.replace("{" + p.name + "}", requests.utils.quote(str(query.pop(p.name)), safe=""))
    return path, query


def test_openapi_describes_every_route_and_every_route_answers(served: Served) -> None:
    doc = served.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    operations = {op["operationId"]: (path, method)
                  for path, item in doc["paths"].items() for method, op in item.items()}
    assert set(operations) == {q.name for q in QUESTIONS}
    for name, args in examples(served).items():
        path, query = http_path(name, args)
        assert operations[name] == (next(q.path for q in QUESTIONS if q.name == name), "get")
        answer = served.get(path, **query)
        assert answer.status_code == 200, (name, answer.text)
        assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
        declared = {p["name"] for p in doc["paths"][operations[name][0]]["get"]["parameters"]}
        assert set(args) <= declared


def test_http_and_mcp_return_identical_json(served: Served, runs_dir: Path) -> None:
    mcp = Mcp(runs_dir)
    try:
        init = mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "test", "version": "1"}})
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert "tools" in init["result"]["capabilities"]
        mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = mcp.request("tools/list")["result"]["tools"]
        assert {t["name"] for t in tools} == {q.name for q in QUESTIONS if q.mcp}
        questions = examples(served)
        questions["bad_seq"] = {"run": "small", "episode": "syn-en-000", "seq": "soon"}
        questions["unknown_episode"] = {"run": "small", "episode": "nobody"}
        for name, args in questions.items():
            tool = {"bad_seq": "layers", "unknown_episode": "timeline"}.get(name, name)
            path, query = http_path(tool, args)
            over_http = served.get(path, **query)
            result = mcp.call(tool, **args)
            assert result["structuredContent"] == over_http.json(), name
            assert json.loads(result["content"][0]["text"]) == over_http.json(), name
            assert result["isError"] == (over_http.status_code != 200), name
    finally:
        mcp.stop()


def test_mcp_protocol_errors(runs_dir: Path) -> None:
    mcp = Mcp(runs_dir)
    try:
        old = mcp.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                         "clientInfo": {"name": "t", "version": "1"}})
        assert old["result"]["protocolVersion"] == "2024-11-05"
        future = mcp.request("initialize", {"protocolVersion": "2099-01-01", "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}})
        assert future["result"]["protocolVersion"] == "2025-06-18"
        assert mcp.request("ping")["result"] == {}
        assert mcp.request("resources/list")["error"]["code"] == -32601
        unknown = mcp.request("tools/call", {"name": "drop_table", "arguments": {}})
        assert unknown["error"]["code"] == -32602 and "list_runs" in unknown["error"]["message"]
        mcp.send("{not json")
        assert mcp.receive()["error"]["code"] == -32700
        mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        bad = mcp.call("layers", run="small", episode="syn-en-000", limit=0)
        assert bad["isError"] and bad["structuredContent"]["status"] == 400
        assert bad["structuredContent"]["parameter"] == "limit"
        assert mcp.request("ping")["result"] == {}  # the notification got no answer: the next line is the ping's
    finally:
        mcp.stop()


@pytest.mark.parametrize(("path", "params", "needle"), [
    ("/api/runs/nope", {}, "unknown run 'nope'; runs served: small"),
    ("/api/runs/nope/episodes/x/values", {}, "unknown run 'nope'"),
    (EP.replace("syn-en-000", "nobody") + "/values", {}, "no episode 'nobody' of system 'three_layer'"),
    (EP + "/values", {"system": "nosuch"}, "no system 'nosuch'; systems: naive_chain, three_layer"),
    (EP + "/history", {"slot": "favourite colour"}, "slot 'favourite colour' never had a value"),
    (EP + "/probes/syn-en-000:p99", {}, "asked no probe 'syn-en-000:p99'"),
    ("/api/nothing", {}, "no API route"),
    ("/elsewhere", {}, "the explorer is at /"),
])
def test_unknown_things_are_404_with_a_message(served: Served, path: str, params: dict[str, Any],
                                               needle: str) -> None:
    answer = served.get(path, **params)
    assert answer.status_code == 404 and needle in answer.json()["error"]


@pytest.mark.parametrize(("path", "params", "parameter", "needle"), [
    (EP + "/layers", {"seq": "abc"}, "seq", "must be an integer, got 'abc'"),
    (EP + "/layers", {"seq": "-1"}, "seq", "at least 0"),
    (EP + "/layers", {"limit": "0"}, "limit", "between 1 and 1000"),
    (EP + "/layers", {"limit": "5000"}, "limit", "between 1 and 1000"),
    (EP + "/as-of", {"seq": "5", "turn": "2"}, "seq", "not both"),
    (EP + "/as-of", {}, "seq", "give seq (system time) or turn"),
    (EP + "/diff", {"from_seq": "3"}, "to_seq", "is required"),
    (EP + "/layers", {"sequence": "5"}, "sequence", "unknown parameter(s) 'sequence'"),
    (EP + "/history", {"slot": ""}, "slot", "must not be empty"),
    ("/api/runs/small/audit", {"i4_floor": "1.5"}, "i4_floor", "between 0 and 1"),
    ("/api/runs/small/audit", {"i4_floor": "nan"}, "i4_floor", "must be a number"),
])
def test_malformed_parameters_are_400_naming_them(served: Served, path: str, params: dict[str, Any],
                                                   parameter: str, needle: str) -> None:
    answer = served.get(path, **params)
    body = answer.json()
    assert answer.status_code == 400 and body["parameter"] == parameter and needle in body["error"], body


def test_a_parameter_given_twice_is_refused(served: Served) -> None:
    answer = requests.get(served.url + EP + "/layers?seq=3&seq=4", timeout=30)
    assert answer.status_code == 400 and "given 2 times" in answer.json()["error"]


def test_large_answers_are_paged(served: Served) -> None:
    everything = served.get(EP + "/layers", limit=1000).json()["raw"]
    assert everything["total"] == 12 and everything["next_offset"] is None
    collected, offset = [], 0
    while offset is not None:
        page = served.get(EP + "/layers", limit=5, offset=offset).json()["raw"]
        assert len(page["items"]) <= 5 and page["total"] == 12
        collected += page["items"]
        offset = page["next_offset"]
    assert collected == everything["items"]
    probes = served.get(EP + "/probes", limit=4, offset=4).json()
    assert len(probes["items"]) == 4 and probes["offset"] == 4 and probes["next_offset"] == 8 and probes["total"] >= 9
    assert served.get(EP + "/probes", limit=4, offset=400).json()["items"] == []


def test_the_api_never_writes(served: Served, runs_dir: Path) -> None:
    ledger = runs_dir / "small" / "ledger.duckdb"
    before = hashlib.sha256(ledger.read_bytes()).hexdigest()
    for method in (requests.put, requests.delete, requests.patch):
        answer = method(served.url + EP + "/values", timeout=30)
        assert answer.status_code == 405 and "only reads" in answer.json()["error"]
    wrong = requests.post(served.url + EP + "/values", json={}, timeout=30)
    assert wrong.status_code == 405 and "use GET" in wrong.json()["error"]
    intake = requests.post(served.url + EP + "/facts", json={"user": "My desk is 4.", "after_turn": 12}, timeout=30)
    assert intake.status_code == 503 and "--intake" in intake.json()["error"]
    for name, args in examples(served).items():
        path, query = http_path(name, args)
        assert served.get(path, **query).status_code == 200
    assert hashlib.sha256(ledger.read_bytes()).hexdigest() == before


def test_the_explorer_page_and_its_files_are_served(served: Served) -> None:
    page = served.get("/")
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert '<script src="/explorer.js"' in page.text and "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert served.get("/explorer.js").headers["Content-Type"].startswith("text/javascript")
    assert served.get("/explorer.css").status_code == 200


def test_a_bearer_token_guards_the_api(runs_dir: Path) -> None:
    server = InProcess(runs_dir, token="s3cret")
    try:
        missing = server.get("/api/runs")
        assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = requests.get(server.url + "/api/runs", headers={"Authorization": "Bearer nope"}, timeout=30)
        assert wrong.status_code == 401
        right = requests.get(server.url + "/api/runs", headers={"Authorization": "Bearer s3cret"}, timeout=30)
        assert right.status_code == 200 and right.json()["items"][0]["run_id"] == "small"
        assert server.get("/").status_code == 200 and server.get("/openapi.json").status_code == 200
    finally:
        server.stop()


def test_a_port_in_use_is_a_clear_error(runs_dir: Path, served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    result = CliRunner().invoke(cli, ["serve", str(runs_dir), "--port", port])
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
