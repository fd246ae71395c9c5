"""A small OpenAI-compatible chat-completions server on loopback, driven by a script.

    with ScriptedLlmServer([("status", 429, {"Retry-After": "1"}), ("ok", "hello")]) as server:
        backend = OpenAICompatibleBackend(HttpSettings(preset="http", base_url=server.base_url, ...), ...)

The script is a list of behaviours, consumed one per request in order (the
last one repeats), or a callable `(request_json) -> behaviour`:

    ("ok", text)                    200 with one choice and a usage block
    ("ok", text, usage)             the same with the given usage dict
    ("no_usage", text)              200 with one choice and no usage block
    ("status", code, headers)       that status, those headers, a JSON error body
    ("status", code, headers, body) the same with a given body (str or bytes)
    ("sleep", seconds, text)        waits, then answers like ("ok", text): for client timeouts
    ("raw", body_bytes)             200 with that body as is (malformed JSON, say)
    ("empty_choices",)              200 with `"choices": []`

Every request is recorded in `server.requests` (path, lower-cased headers,
parsed JSON body or None). The server listens on 127.0.0.1 only, on a free
port, answers one request per connection (HTTP/1.0), and on exit stops the
loop, wakes any sleeping handler and joins every thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = tuple[Any, ...]
Script = Sequence[Behaviour] | Callable[[Any], Behaviour]
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    json: Any  # None when the body was not JSON


def completion_body(text: str, *, model: str, usage: Mapping[str, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return body


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        owner = self.server.owner
        owner.record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, payload))
        if self.path.split("?", 1)[0] != CHAT_PATH:
            self._send(404, {}, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            return
        self._behave(owner.next_behaviour(payload), payload)

    def _behave(self, behaviour: Behaviour, payload: Any) -> None:
        owner = self.server.owner
        kind = behaviour[0]
        requested = payload.get("model", "") if isinstance(payload, dict) else ""
        model = owner.served_model or str(requested)
        if kind in ("ok", "no_usage", "sleep"):
            if kind == "sleep":
                if owner.stopping.wait(float(behaviour[1])):
                    return  # shutting down: the client has long gone
                text = behaviour[2]
            else:
                text = behaviour[1]
            usage = None if kind == "no_usage" else (behaviour[2] if len(behaviour) > 2 and kind == "ok"
                                                     else {"prompt_tokens": 11, "completion_tokens": 7,
                                                           "total_tokens": 18})
            self._send(200, {}, json.dumps(completion_body(text, model=model, usage=usage)).encode())
        elif kind == "status":
            code, headers = int(behaviour[1]), dict(behaviour[2]) if len(behaviour) > 2 else {}
            body = behaviour[3] if len(behaviour) > 3 else json.dumps({"error": {"message": f"scripted {code}"}})
            self._send(code, headers, body.encode() if isinstance(body, str) else bytes(body))
        elif kind == "raw":
            self._send(200, {}, bytes(behaviour[1]))
        elif kind == "empty_choices":
            self._send(200, {}, json.dumps({"model": model, "choices": []}).encode())
        else:
            raise ValueError(f"unknown scripted behaviour {behaviour!r}")

    def _send(self, code: int, headers: Mapping[str, str], body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: the recorded requests are the log


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # joined on close, so no handler outlives the test
    block_on_close = True

    def __init__(self, owner: ScriptedLlmServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is part of the script, not a failure of the server.
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        self.owner.errors.append(repr(exc))


class ScriptedLlmServer:
    """Serves `POST /v1/chat/completions` from a script; use as a context manager."""

    def __init__(self, script: Script, *, served_model: str | None = None) -> None:
        if not callable(script) and not script:
            raise ValueError("the script needs at least one behaviour")
        self.script = script
        self.served_model = served_model
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # exceptions raised inside handlers
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._i = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running; use it in a `with` block")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def next_behaviour(self, payload: Any) -> Behaviour:
        if callable(self.script):
            return self.script(payload)
        with self._lock:
            behaviour = self.script[min(self._i, len(self.script) - 1)]
            self._i += 1
        return behaviour

    def __enter__(self) -> ScriptedLlmServer:
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-llm-server")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()


def purpose_of(payload: Any) -> str:
    """Which of ledgermem's contracts a request body speaks, read from its system message."""
    from ledgermem.evaluation.judge import JUDGE_SYSTEM
    from ledgermem.memory.prompts import RESPOND_SYSTEM, ROLLING_SYSTEM, SUMMARIZER_SYSTEM

    messages = payload.get("messages", []) if isinstance(payload, dict) else []
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    if system.startswith((SUMMARIZER_SYSTEM, ROLLING_SYSTEM.split("{", 1)[0])):
        return "summarize"
    if system.startswith(JUDGE_SYSTEM):
        return "judge"
    if system.startswith(RESPOND_SYSTEM):
        return "respond"
    return "answer"


def heuristic_script(latency_s: float = 0.0, *, tokenizer: str = "estimate:v1") -> Callable[[Any], Behaviour]:
    """A script that answers every request as the offline `heuristic` backend would, after `latency_s`.

    The answer is a function of the request alone, so the server is a
    deterministic model behind real HTTP: what the runner sends can be
    compared across runs, and a slow model can be stood in for.
    """
    from ledgermem.memory.heuristic import HeuristicBackend

    heuristic = HeuristicBackend(tokenizer=tokenizer)

    def behave(payload: Any) -> Behaviour:
        messages = payload.get("messages", []) if isinstance(payload, dict) else []
        text = heuristic.complete(messages, purpose=purpose_of(payload)).text
        return ("sleep", latency_s, text) if latency_s > 0 else ("ok", text)

    return behave
