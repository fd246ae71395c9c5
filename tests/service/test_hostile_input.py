"""Hostile requests get a one-line JSON error, never a traceback, an HTML page or a dead process.

Lone surrogates, bytes that are not UTF-8, deep nesting and oversized lines,
over HTTP (bodies, query strings, path segments, the request line itself)
and over MCP stdio; the errors of the HTTP layer (400, 414, 501, 505) come
back as JSON like every other error.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledgermem.service.mcp import INVALID_REQUEST, PARSE_ERROR, McpServer, TooLong, read_lines
from ledgermem.service.core import MAX_DEPTH, BadRequest, Service, TooDeep, load_json
from tests.service.conftest import InProcess, Mcp

EP = b"/api/runs/small/episodes/syn-en-000"


@pytest.fixture(scope="module")
def intake_server(runs_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    """A server with the fact intake on, over a copy of the run: a body that got through would be written."""
    copy = tmp_path_factory.mktemp("hostile") / "runs"
    shutil.copytree(runs_dir, copy)
    server = InProcess(copy, service={"intake": True}, hold=0)
    try:
        yield server
    finally:
        server.stop()


def raw(server: InProcess, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are; the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", server.server.server_address[1]), timeout=30) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers, body


def post(server: InProcess, body: bytes, path: bytes = EP + b"/facts") -> tuple[int, dict[str, str], bytes]:
    return raw(server, b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                       b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() +
               b"\r\n\r\n" + body)


def get(server: InProcess, target: bytes) -> tuple[int, dict[str, str], bytes]:
    return raw(server, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")


def one_line_json_error(status: int, headers: dict[str, str], body: bytes, expected: int) -> str:
    assert status == expected, (status, body[:300])
    assert headers["Content-Type"] == "application/json; charset=utf-8", body[:300]
    error = json.loads(body)
    assert error["status"] == expected and "\n" not in error["error"], error
    return str(error["error"])


@pytest.mark.parametrize(("body", "said"), [
    (b'{"user": "\\ud800", "after_turn": 0}', "lone surrogate"),
    (b'{"user": "ok", "after_turn": 0, "\\udc00": 1}', "lone surrogate"),
    (b'{"user": "\xed\xa0\x80", "after_turn": 0}', "not valid UTF-8"),  # a surrogate encoded as UTF-8
    (b'{"user": "\xff\xfe", "after_turn": 0}', "not valid UTF-8"),
    (b"[" * 30000 + b"]" * 30000, f"nested more than {MAX_DEPTH} levels"),
    (b'{"user": ' + b'{"a": ' * 200 + b"1" + b"}" * 200 + b', "after_turn": 0}', "nested more than"),
    (b'{"user": "x", "after_turn": 0', "not JSON"),
])
def test_a_hostile_body_is_a_400_naming_the_fault(intake_server: InProcess, body: bytes, said: str) -> None:
    assert said in one_line_json_error(*post(intake_server, body), 400)


def test_a_valid_body_still_reaches_the_intake(intake_server: InProcess) -> None:
    """The control of the cases above: the same route takes a well-formed body (with a real surrogate pair)."""
    status, _, body = post(intake_server, json.dumps({"user": "My office floor is 3F \ud83d\ude00", "after_turn": 12},
                                                     ensure_ascii=True).encode())
    assert status == 201, body


@pytest.mark.parametrize(("target", "parameter"), [
    (EP + b"/history?slot=%ED%A0%80", None),  # a UTF-8 encoded surrogate in the query
    (EP + b"/history?slot=%FF", None),
    (b"/api/runs/%ED%A0%80", "run"),
    (b"/api/runs/small/episodes/%C0%AF/values", "episode"),
])
def test_a_query_or_path_that_is_not_utf8_is_a_400(intake_server: InProcess, target: bytes,
                                                   parameter: str | None) -> None:
    status, headers, body = get(intake_server, target)
    error = one_line_json_error(status, headers, body, 400)
    assert "UTF-8" in error or "utf-8" in error
    assert json.loads(body).get("parameter") == parameter


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
    (b"BREW /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 501),
    (b"GET /api/runs?slot=\xed\xa0\x80 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 400),
    (b"GET /api/runs HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n", 431),
    (b"GET /api/runs HTTP/x.y\r\nHost: 127.0.0.1\r\n\r\n", 400),
])
def test_errors_of_the_http_layer_are_json(intake_server: InProcess, request_bytes: bytes, status: int) -> None:
    one_line_json_error(*raw(intake_server, request_bytes), status)


def test_the_server_still_answers_after_the_hostile_requests(intake_server: InProcess) -> None:
    assert intake_server.get("/api/runs").status_code == 200


# -- MCP ------------------------------------------------------------------------------------------


def ask_lines(lines: list[str]) -> list[dict[str, Any]]:
    out = io.StringIO()
    McpServer(Service.__new__(Service)).serve(lines, out)  # these lines never reach a question
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(("line", "code"), [
    ("[" * 100000 + "]" * 100000, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + '{"a":' * 500 + "1" + "}" * 500 + "}",
     INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}', PARSE_ERROR),
    ('{"jsonrpc": "2.0", "id": 1, "method": "\udcff"}', PARSE_ERROR),  # a byte that is not UTF-8, escaped
    ('{"jsonrpc": "2.0", "id": 1,', PARSE_ERROR),
    (TooLong(), PARSE_ERROR),
])
def test_a_hostile_mcp_line_is_a_json_rpc_error_and_the_next_line_is_answered(line: str, code: int) -> None:
    answers = ask_lines([line, '{"jsonrpc": "2.0", "id": 7, "method": "ping"}'])
    assert [a.get("error", {}).get("code") for a in answers] == [code, None]
    assert answers[1] == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_read_lines_cuts_an_oversized_line_and_keeps_the_next() -> None:
    data = io.BytesIO(b"x" * 5000 + b"\n" + b'{"ok": 1}\n' + b"\xff\n")
    lines = list(read_lines(data, limit=1000))
    assert isinstance(lines[0], TooLong) and lines[1] == '{"ok": 1}\n' and lines[2] == "\udcff\n"


def test_load_json_checks_depth_before_parsing() -> None:
    assert load_json('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', "x") == {"a": "[" * 41}  # in a string
    with pytest.raises(TooDeep):
        load_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "x")
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None
    with pytest.raises(BadRequest, match="lone surrogate"):
        load_json('["\\udfff"]', "x")


def test_the_mcp_process_survives_a_deeply_nested_line_and_bytes_that_are_not_utf8(runs_dir: Path) -> None:
    mcp = Mcp(runs_dir)
    try:
        mcp.send("[" * 200000 + "]" * 200000)
        assert mcp.receive()["error"]["code"] == INVALID_REQUEST
        assert mcp.proc.stdin is not None
        mcp.proc.stdin.flush()
        mcp.proc.stdin.buffer.write(b'{"jsonrpc": "2.0", "id": 3, "method": "\xff\xfe"}\n')
        mcp.proc.stdin.buffer.flush()
        assert mcp.receive()["error"]["code"] == PARSE_ERROR
        assert mcp.request("ping")["result"] == {}
        listed = mcp.call("list_runs")
        assert listed["isError"] is False and listed["structuredContent"]["items"][0]["run_id"] == "small"
        assert mcp.proc.poll() is None
    finally:
        mcp.stop()


def test_control_the_stdlib_parser_alone_dies_on_the_deep_line() -> None:
    """What the depth check is for: without it, parsing the line raises RecursionError."""
    code = "import json, sys; json.loads('[' * 200000 + ']' * 200000)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "RecursionError" in done.stderr
