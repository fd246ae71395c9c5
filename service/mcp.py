"""`ledgermem mcp`: the audit service as an MCP server over stdio (JSON-RPC 2.0, one message per line).

Implements what a client needs to use tools: `initialize` (with version
negotiation), `notifications/initialized`, `ping`, `tools/list` and
`tools/call`. Every tool is a question of `service.core` (or, for
`ledgermem live mcp`, a tool of `service.live_questions` answered for the
token the server was started with), with the same parameters as its HTTP
route; a call answers with the same JSON the
HTTP API gives, as `structuredContent` and as the text of its content.
A question that fails (unknown run, bad parameter) is a tool result with
`isError: true` and the same error body as HTTP; an unknown tool or
malformed arguments object is a JSON-RPC error. A line that is not JSON,
not UTF-8, longer than `MAX_LINE` bytes or nested deeper than the service
takes is answered with a parse or invalid-request error, and the server
reads the next line. Nothing is written to stdout but protocol messages;
diagnostics go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO, Protocol, TextIO

from ledgermem.service.core import BadRequest, Question, TooDeep, load_json, version

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")  # newest first
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR = -32603
MAX_LINE = 1024 * 1024  # bytes of one message


class TooLong(str):
    """Stands for a line longer than MAX_LINE, read to its end and dropped."""


def tool(question: Question) -> dict[str, Any]:
    """A question as an MCP tool: its parameters (path and query alike) as one JSON Schema object."""
    return {
        "name": question.name,
        "description": question.summary,
        "inputSchema": question.input_schema(),
        "annotations": {"readOnlyHint": question.method == "GET", "destructiveHint": question.scope == "erase",
                        "openWorldHint": False},
    }


class Answers(Protocol):
    """What the server asks: the audit `Service`, or the live memory service bound to one token."""

    def questions(self, *, mcp: bool = False) -> list[Question]: ...

    def ask(self, name: str, arguments: Mapping[str, Any]) -> Any: ...

    def error(self, exc: BaseException) -> tuple[int, dict[str, Any]]: ...


AUDIT_INSTRUCTIONS = ("Read-only questions about recorded runs of an event-sourced agent memory: "
                      "list_runs, list_episodes, then audit, current_values, history, as_of, blame, diff, "
                      "manifest, list_probes, probe, layers, timeline, erasures.")


class McpServer:
    def __init__(self, service: Answers) -> None:
        self.service = service
        self.tools = {q.name: q for q in service.questions(mcp=True)}

    def handle(self, message: Any) -> dict[str, Any] | None:
        """The response to one message (None for a notification)."""
        request = isinstance(message, dict) and message.get("jsonrpc") == "2.0"
        if not request or not isinstance(message.get("method"), str):
            return _error(message.get("id") if isinstance(message, dict) else None, INVALID_REQUEST,
                          "not a JSON-RPC 2.0 request (an object with jsonrpc '2.0' and a method)")
        method, params, ident = message["method"], message.get("params") or {}, message.get("id")
        if "id" not in message:
            return None  # a notification: initialized, cancelled, ... need no answer
        if not isinstance(params, dict):
            return _error(ident, INVALID_PARAMS, "params must be an object")
        if method == "initialize":
            asked = params.get("protocolVersion")
            agreed = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            return _result(ident, {
                "protocolVersion": agreed,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "ledgermem", "version": version()},
                "instructions": getattr(self.service, "instructions", AUDIT_INSTRUCTIONS),
            })
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": [tool(q) for q in self.tools.values()]})
        if method == "tools/call":
            return self._call(ident, params)
        return _error(ident, METHOD_NOT_FOUND, f"method {method!r} is not supported; this server has tools only")

    def _call(self, ident: Any, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name not in self.tools:
            return _error(ident, INVALID_PARAMS, f"unknown tool {name!r}; tools: {', '.join(self.tools)}")
        if not isinstance(arguments, dict):
            return _error(ident, INVALID_PARAMS, "arguments must be an object")
        try:
            answer, is_error = self.service.ask(str(name), arguments), False
        except Exception as exc:  # a failed question is a tool result the client can read, like an HTTP error
            answer, is_error = self.service.error(exc)[1], True
        text = json.dumps(answer, ensure_ascii=False)
        return _result(ident, {"content": [{"type": "text", "text": text}], "structuredContent": answer,
                               "isError": is_error})

    def serve(self, lines: Iterable[str], out: TextIO) -> None:
        for line in lines:
            if isinstance(line, TooLong):
                response: dict[str, Any] | None = _error(None, PARSE_ERROR, f"parse error: a message is at most "
                                                                           f"{MAX_LINE} bytes")
            elif not line.strip():
                continue
            else:
                response = self.answer(line)
            if response is not None:
                try:
                    text = json.dumps(response, ensure_ascii=False)
                    text.encode("utf-8")
                except UnicodeEncodeError:  # never a crash on text that is not UTF-8: send it escaped
                    text = json.dumps(response, ensure_ascii=True)
                out.write(text + "\n")
                out.flush()

    def answer(self, line: str) -> dict[str, Any] | None:
        """The response to one line: a parse error for one that is not JSON, never an exception."""
        try:
            message = load_json(line, "the message")
        except BadRequest as exc:
            code = INVALID_REQUEST if isinstance(exc, TooDeep) else PARSE_ERROR
            return _error(None, code, f"parse error: {exc}" if code == PARSE_ERROR else str(exc))
        try:
            return self.handle(message)
        except Exception as exc:  # a bug answering one message must not end the session
            sys.stderr.write(f"error answering a message: {type(exc).__name__}: {exc}\n")
            ident = message.get("id") if isinstance(message, dict) else None
            return _error(ident if isinstance(ident, (str, int)) else None, INTERNAL_ERROR,
                          f"internal error: {type(exc).__name__}")


def _result(ident: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def read_lines(stream: BinaryIO, limit: int = MAX_LINE) -> Iterator[str]:
    """The lines of a byte stream as text: bytes that are not UTF-8 become lone surrogates (refused later), and a
    line longer than `limit` is read to its end and given as `TooLong`."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(limit + 1)
            yield TooLong()
            continue
        yield line.decode("utf-8", "surrogateescape")


def run_stdio(service: Answers) -> None:
    """Serve until stdin closes."""
    McpServer(service).serve(read_lines(sys.stdin.buffer), sys.stdout)
