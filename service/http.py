"""`ledgermem serve`: the audit service over read-only HTTP JSON on 127.0.0.1, and the run explorer.

Routes come from the service's questions (`service.core.QUESTIONS`):
`GET /api/...` for every question, `POST .../facts` for the fact intake
when it is enabled; `GET /openapi.json` describes them all; `GET /` is the
explorer page. Parameters are validated by the service: a malformed one is
400 naming it, an unknown run, episode, slot or probe 404 with a message;
lists are paged (`limit`, `offset`, `next_offset`). With a token, every
`/api/` request needs `Authorization: Bearer <token>` (401 otherwise); the
page and the OpenAPI description are public, the page asks for the token.

Requests are answered concurrently by a bounded pool of worker threads
(`BoundedServer`): a connection gets a worker only once it has sent
something, one that stays silent for `idle` seconds is closed without ever
holding a thread, a request that waits when every worker is busy and
`backlog` others already wait is answered 503 at once, and a worker gives
up on a client that stops sending or reading for `idle` seconds. The live
service (`LiveHandler`) keeps connections alive (HTTP/1.1): a worker answers
one request and gives the connection back to the waiting ones, so a client
that keeps it open between turns holds no thread; an error, or a body left
unread, ends the connection. Every
error, the ones of the HTTP layer included (400, 414, 431, 501, 505), is a JSON
body `{"error": ..., "status": ...}`.
"""

from __future__ import annotations

import hmac
import json
import queue
import re
import selectors
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ledgermem.service.errors import MethodNotAllowed
from ledgermem.service.core import BadRequest, NotFound, Question, Service, load_json, version

HOST = "127.0.0.1"
#: The names a request may give in its Host header (DNS rebinding: a foreign name resolved to 127.0.0.1 is refused).
LOCAL_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
MAX_BODY = 64 * 1024
WORKERS = 8  # threads answering requests
BACKLOG = 64  # requests that may wait for a worker; more are answered 503
IDLE = 30.0  # seconds a connection may stay silent (before its request, or while it is read or answered)
MAX_WAITING = 1024  # silent connections kept; past that the oldest is closed
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/explorer.js": ("explorer.js", "text/javascript; charset=utf-8"),
          "/live.js": ("live.js", "text/javascript; charset=utf-8"),
          "/explorer.css": ("explorer.css", "text/css; charset=utf-8")}


def _route(question: Question) -> re.Pattern[str]:
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", question.path)
    return re.compile(f"^{pattern}$")


def openapi(service: Any) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route, generated from the same questions the server answers."""
    paths: dict[str, dict[str, Any]] = {}
    for q in service.questions():
        params = [{"name": p.name, "in": p.where, "required": p.required or p.where == "path",
                   "description": p.description, "schema": p.schema()} for p in q.params if p.where != "body"]
        op: dict[str, Any] = {
            "operationId": q.name, "summary": q.summary, "parameters": params,
            "responses": {
                "200": {"description": "the answer", "content": {"application/json": {"schema": {"type": "object"}}}},
                **{code: {"description": why, "content": {"application/json": {"schema":
                                                                               {"$ref": "#/components/schemas/Error"}}}}
                   for code, why in (("400", "a parameter is missing, malformed or out of range"),
                                     ("401", "a bearer token is required"),
                                     ("404", "no such run, episode, slot or probe"),
                                     ("503", "every worker is busy and the queue is full: try again"),
                                     ("504", "the answer took longer than the server's time limit"))},
            },
        }
        body = [p for p in q.params if p.where == "body"]
        if body:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {p.name: {**p.schema(), "description": p.description} for p in body},
                "required": [p.name for p in body if p.required]}}}}
            op["responses"]["201"] = {"description": "recorded; the answer carries the audit run after it"}
            op["responses"]["409"] = {"description": getattr(service, "conflict", "after_turn does not fit the "
                                                             "episode, or its writer holds it")}
        if getattr(service, "scoped", False):
            op["responses"]["403"] = {"description": f"the token's namespace does not cover the stream, or it "
                                                     f"lacks the {q.scope!r} scope"}
            op["x-scope"] = q.scope
        paths.setdefault(q.path, {})[q.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": getattr(service, "title", "ledgermem audit API"), "version": version(),
                 "description": getattr(service, "description", "Read-only answers about runs of an event-sourced "
                                        "memory: audit, current values, history, as-of, blame, diff, context "
                                        "manifests, probes, erasure receipts.")},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": {"Error": {"type": "object", "required": ["error", "status"], "properties": {
                "error": {"type": "string"}, "status": {"type": "integer"}, "parameter": {"type": "string"}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}] if getattr(service, "scoped", False) else [{}, {"bearer": []}],
    }


class Handler(BaseHTTPRequestHandler):
    service: Service  # set on the subclass made by `make_server`
    token: str | None
    routes: list[tuple[str, re.Pattern[str], Question]]
    static: dict[str, tuple[str, str]] = STATIC
    quiet: bool = False
    body_read = False  # the request's body was read to its end (what a connection kept alive needs)
    server_version = "ledgermem"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, encode(data), "application/json; charset=utf-8", headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The errors of the HTTP layer itself (malformed request line, 414, 431, 501, 505) as JSON, like ours."""
        short = self.responses.get(code, ("error", ""))[0]
        self.log_error("code %d, message %s", code, message)
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # what a request line that did not parse is taken for
            self.request_version = "HTTP/1.0"  # the answer still has a status line and headers
        text = message or short
        if explain and explain not in text:
            text += f": {explain}"
        body = json.dumps({"error": text, "status": code}).encode("ascii")  # escaped: the request may not be text
        self.send_response(code, short)  # the reason phrase never echoes the request
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def _error(self, exc: BaseException) -> None:
        status, body = self.service.error(exc)
        if status >= 500:
            sys.stderr.write(f"error answering {self.command} {self.path}: {type(exc).__name__}: {exc}\n")
        self._json(status, body, {"WWW-Authenticate": 'Bearer realm="ledgermem"'} if status == 401 else None)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_HEAD(self) -> None:
        self._handle("GET")  # the GET answer's headers; `_send` writes no body for HEAD

    def do_PUT(self) -> None:
        self._not_allowed()

    do_DELETE = do_PATCH = do_OPTIONS = do_PUT

    def _not_allowed(self) -> None:
        self._json(405, {"error": f"method {self.command} is not allowed: this API only reads "
                                  "(and takes facts by POST .../facts)", "status": 405}, {"Allow": "GET, POST"})

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        if not self._local_host():
            # A page on another site that rebinds its name to 127.0.0.1 sends its own name here: not ours.
            return self._json(421, {"error": f"Host {self.headers.get('Host', '')!r} is not this server: it answers "
                                             "requests for 127.0.0.1, localhost or [::1] only", "status": 421})
        try:
            if method == "GET" and url.path in self.static:
                name, kind = self.static[url.path]
                text = resources.files("ledgermem.service").joinpath("explorer").joinpath(name).read_bytes()
                return self._send(200, text, kind)
            if method == "GET" and url.path == "/openapi.json":
                return self._json(200, openapi(self.service))
            if method == "GET" and url.path == "/favicon.ico":
                return self._send(204, b"", "image/x-icon")
            if not url.path.startswith("/api/") and url.path != "/api":
                raise NotFound(f"no page {url.path!r}: the explorer is at /, the API under /api/, its description "
                               "at /openapi.json")
            if self.token is not None and not self._authorised():
                return self._json(401, {"error": "a bearer token is required: send 'Authorization: Bearer <token>'",
                                        "status": 401}, {"WWW-Authenticate": 'Bearer realm="ledgermem"'})
            who = self._authenticate()
            question, args = self._match(method, url.path)
            args = self._merge(args, self._query(url.query), "the query")
            if method == "POST":
                args = self._merge(args, self._body(), "the body")
            answer = self._ask(question, args, who)
            created = method == "POST" and isinstance(answer, dict) and answer.get("created")
            self._json(201 if created else 200, answer)
        except ConnectionError:  # the client went away (or the server is closing): nobody to answer
            self.close_connection = True
        except Exception as exc:  # every error becomes a JSON answer; the server keeps running
            try:
                self._error(exc)
            except ConnectionError:
                self.close_connection = True

    def _local_host(self) -> bool:
        """The request names this loopback server (`Host` of 127.0.0.1, localhost or [::1], any port)."""
        host = (self.headers.get("Host") or "").strip().lower()
        if host.startswith("["):
            name = host[: host.find("]") + 1] if "]" in host else host
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return name in LOCAL_NAMES

    def _authenticate(self) -> Any:
        """Who asks, for services that answer per token (`LiveHandler`); the audit service needs no one."""
        return None

    def _ask(self, question: Question, args: dict[str, Any], who: Any) -> Any:
        return self.service.ask(question.name, args)

    def _bearer(self) -> str:
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        return given.strip() if scheme.lower() == "bearer" else ""

    def _authorised(self) -> bool:
        header = self.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), str(self.token).encode())

    def _match(self, method: str, path: str) -> tuple[Question, dict[str, Any]]:
        allowed = []
        for verb, pattern, question in self.routes:
            m = pattern.match(path)
            if m:
                if verb == method:
                    return question, {k: _unquote(k, v) for k, v in m.groupdict().items()}
                allowed.append(verb)
        if allowed:
            raise MethodNotAllowed(f"{method} {path}: use {', '.join(allowed)}")
        raise NotFound(f"no API route {path!r}; see /openapi.json")

    @staticmethod
    def _merge(base: dict[str, Any], extra: dict[str, Any], where: str) -> dict[str, Any]:
        twice = sorted(set(base) & set(extra))
        if twice:
            raise BadRequest(f"parameter {twice[0]!r} is given in the path and in {where}", twice[0])
        return {**base, **extra}

    @staticmethod
    def _query(query: str) -> dict[str, Any]:
        try:
            parsed = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=50,
                              errors="strict")
        except ValueError as exc:  # UnicodeDecodeError included: percent-escapes that are not UTF-8
            raise BadRequest(f"malformed query string: {exc}") from exc
        out: dict[str, Any] = {}
        for name, values in parsed.items():
            if len(values) > 1:
                raise BadRequest(f"parameter {name!r} is given {len(values)} times; give it once", name)
            out[name] = values[0]
        return out

    def _body(self) -> dict[str, Any]:
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise BadRequest(f"the body must be JSON (Content-Type: application/json), not {kind or 'nothing'!r}")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise BadRequest("Content-Length is not a number") from None
        if not 0 < length <= MAX_BODY:
            raise BadRequest(f"the body must be 1 to {MAX_BODY} bytes, got {length}")
        raw = self.rfile.read(length)
        self.body_read = len(raw) == length
        body = load_json(raw.decode("utf-8", "surrogateescape"), "the body")
        if not isinstance(body, dict):
            raise BadRequest(f"the body must be a JSON object, not {type(body).__name__}")
        return body


def _unquote(name: str, value: str) -> str:
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest(f"parameter {name!r}: its percent-escapes are not UTF-8", name) from None


def encode(data: Any) -> bytes:
    """An answer as UTF-8 JSON; text that cannot be UTF-8 (a lone surrogate) is sent escaped, never a crash."""
    try:
        return json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True).encode("ascii")


class BoundedServer(ThreadingHTTPServer):
    """An HTTP server with a bounded number of threads that silent or slow clients cannot exhaust.

    An accepted connection waits, without a thread, in a selector until it
    has sent something; one silent for `idle` seconds is closed (and when
    `max_waiting` are silent, the oldest). A connection that has spoken is
    answered by one of `workers` threads; when they are all busy and
    `backlog` more requests wait, it is answered 503 at once. A worker
    waits at most `idle` seconds for a client to send or read (the
    handler's socket timeout), so a client that stops half way frees it.
    """

    daemon_threads = True
    request_queue_size = 128  # connections the kernel holds before they are accepted (listen backlog)

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, workers: int = WORKERS,
                 backlog: int = BACKLOG, idle: float = IDLE, max_waiting: int = MAX_WAITING) -> None:
        self.workers, self.backlog, self.idle, self.max_waiting = workers, backlog, idle, max_waiting
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ledgermem-http")
        self._taken = 0  # requests handed to the pool and not finished
        self._answering: set[socket.socket] = set()  # the connections workers hold now
        self._kept: set[socket.socket] = set()  # answered by a worker and kept alive (`keep`)
        self._taken_lock = threading.Lock()
        self._arrivals: queue.SimpleQueue[tuple[socket.socket, Any]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="ledgermem-http-waiting", daemon=True)
        super().__init__(address, handler)  # closes the server (server_close) if the port is taken
        self._watcher.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Called on the accepting thread: the connection waits in the selector until it speaks."""
        self._arrivals.put((request, client_address))
        try:
            self._wake_w.send(b"\0")
        except OSError:  # the wake-up pipe is full: the watcher is awake anyway
            pass

    def _watch(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ, None)
        waiting: dict[socket.socket, float] = {}  # insertion order: the oldest first
        try:
            while not self._stopping.is_set():
                for key, _ in selector.select(0.25):
                    if key.data is None:
                        self._drain_wake()
                        self._admit(selector, waiting)
                    else:
                        sock = key.fileobj
                        selector.unregister(sock)
                        del waiting[sock]  # type: ignore[arg-type]
                        self._dispatch(sock, key.data)  # type: ignore[arg-type]
                now = time.monotonic()
                for sock, since in list(waiting.items()):
                    if now - since <= self.idle:
                        break
                    selector.unregister(sock)
                    del waiting[sock]
                    self.shutdown_request(sock)
        finally:
            for sock in list(waiting):
                self.shutdown_request(sock)
            selector.close()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _admit(self, selector: selectors.BaseSelector, waiting: dict[socket.socket, float]) -> None:
        while True:
            try:
                sock, address = self._arrivals.get_nowait()
            except queue.Empty:
                return
            if len(waiting) >= self.max_waiting:  # the oldest silent connection makes room
                oldest = next(iter(waiting))
                selector.unregister(oldest)
                del waiting[oldest]
                self.shutdown_request(oldest)
            selector.register(sock, selectors.EVENT_READ, address)
            waiting[sock] = time.monotonic()

    def _dispatch(self, sock: socket.socket, address: Any) -> None:
        with self._taken_lock:
            busy = self._taken >= self.workers + self.backlog
            if not busy:
                self._taken += 1
        if busy:
            self._refuse(sock)
            return
        try:
            self._pool.submit(self._work, sock, address)
        except RuntimeError:  # the pool is shut down: the server is closing
            with self._taken_lock:
                self._taken -= 1
            self.shutdown_request(sock)

    def _work(self, sock: socket.socket, address: Any) -> None:
        with self._taken_lock:
            self._answering.add(sock)
        try:
            try:
                self.finish_request(sock, address)
            except Exception:
                self.handle_error(sock, address)
            with self._taken_lock:
                kept = sock in self._kept
                self._kept.discard(sock)
            if kept and not self._stopping.is_set():
                self.process_request(sock, address)  # kept alive: it waits in the selector for its next request
            else:
                self.shutdown_request(sock)
        finally:
            with self._taken_lock:
                self._taken -= 1
                self._answering.discard(sock)

    def keep(self, sock: socket.socket) -> None:
        """The handler answered and the connection stays open: the worker gives it back to the waiting ones."""
        with self._taken_lock:
            self._kept.add(sock)

    def _refuse(self, sock: socket.socket) -> None:
        body = json.dumps({"error": f"the server is busy ({self.workers} workers answering, {self.backlog} "
                                    "requests waiting); try again", "status": 503}).encode("ascii")
        head = ("HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode("ascii")
        try:
            sock.setblocking(False)
            try:
                sock.recv(MAX_BODY)  # read what was sent, so that closing does not reset the connection
            except OSError:
                pass
            sock.settimeout(1.0)
            sock.sendall(head + body)
        except OSError:
            pass
        self.shutdown_request(sock)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        sys.stderr.write(f"error on the connection from {client_address[0]}: {type(exc).__name__}: {exc}\n")

    def server_close(self) -> None:
        self._stopping.set()
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass
        if self._watcher.is_alive():
            self._watcher.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._taken_lock:  # a worker waiting on a slow client is woken now, not after `idle` seconds
            for sock in list(self._answering):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        super().server_close()
        self._wake_r.close()
        self._wake_w.close()


def make_server(service: Service, port: int = 0, *, token: str | None = None, quiet: bool = False,
                workers: int = WORKERS, backlog: int = BACKLOG, idle: float = IDLE) -> BoundedServer:
    """The HTTP server on 127.0.0.1:`port` (0: a free port); `serve_forever()` runs it.

    `workers` threads answer requests, `backlog` more may wait, and a
    client silent for `idle` seconds is dropped (see `BoundedServer`).
    """
    routes = [(q.method, _route(q), q) for q in service.questions()]
    handler = type("LedgermemHandler", (Handler,), {"service": service, "token": token or None, "routes": routes,
                                                      "quiet": quiet, "timeout": idle})
    return BoundedServer((HOST, port), handler, workers=workers, backlog=backlog, idle=idle)


class LiveHandler(Handler):
    """The live memory service's routes: every request under /api/ names its token, checked per tool."""

    service: Any  # a service.live_questions.LiveService
    static: dict[str, tuple[str, str]] = STATIC  # the explorer, whose live panel records and asks with a token
    # HTTP/1.1 keep-alive: an agent sends turn after turn on one connection. A worker still answers one
    # request at a time and gives the connection back to the server's waiting ones (`BoundedServer.keep`),
    # so a client that keeps a connection open and says nothing holds no thread (and is closed after `idle`).
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart (Nagle and a delayed ack)

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()
        while not self.close_connection:
            if not self._sent_more():
                self.server.keep(self.request)  # type: ignore[attr-defined]
                return
            self.body_read = False
            self.handle_one_request()  # the next request is already read into this handler's buffer

    def _sent_more(self) -> bool:
        """Whether the client has sent more after its request (then it is answered on this worker: what is
        buffered here would be lost with the handler); never waits."""
        try:
            self.connection.setblocking(False)
            try:
                return bool(self.rfile.peek(1))  # type: ignore[attr-defined]
            finally:
                self.connection.settimeout(self.timeout)
        except (OSError, ValueError):
            self.close_connection = True
            return True

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        whole = self.body_read if self.command == "POST" else not (
            self.headers.get("Content-Length", "0").strip() not in ("", "0") or self.headers.get("Transfer-Encoding"))
        if status >= 400 or not whole:  # an error, or a body left unread: the connection ends with this answer
            self.close_connection = True
        if self.close_connection:
            headers = {**(headers or {}), "Connection": "close"}
        super()._send(status, body, content_type, headers)

    def _authenticate(self) -> Any:
        return self.service.authenticate(self._bearer())

    def _ask(self, question: Question, args: dict[str, Any], who: Any) -> Any:
        return self.service.ask(question.name, args, who)

    def _not_allowed(self) -> None:
        self._json(405, {"error": f"method {self.command} is not allowed: the memory API takes GET and POST",
                         "status": 405}, {"Allow": "GET, POST"})


def make_live_server(service: Any, port: int = 0, *, quiet: bool = False, workers: int = WORKERS,
                     backlog: int = BACKLOG, idle: float = IDLE) -> BoundedServer:
    """The live memory service (`service.live_questions.LiveService`) over HTTP on 127.0.0.1:`port`."""
    routes = [(q.method, _route(q), q) for q in service.questions()]
    handler = type("LedgermemLiveHandler", (LiveHandler,), {"service": service, "token": None, "routes": routes,
                                                              "quiet": quiet, "timeout": idle})
    return BoundedServer((HOST, port), handler, workers=workers, backlog=backlog, idle=idle)


__all__ = ["HOST", "BoundedServer", "Handler", "LiveHandler", "encode", "make_live_server", "make_server", "openapi"]
