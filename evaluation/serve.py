"""`ledgermem serve`: the audit service over read-only HTTP JSON on 127.0.0.1, and the run explorer.

Routes come from the service's questions (`evaluation.service.QUESTIONS`):
`GET /api/...` for every question, `POST .../facts` for the fact intake
when it is enabled; `GET /openapi.json` describes them all; `GET /` is the
explorer page. Parameters are validated by the service: a malformed one is
400 naming it, an unknown run, episode, slot or probe 404 with a message;
lists are paged (`limit`, `offset`, `next_offset`). With a token, every
`/api/` request needs `Authorization: Bearer <token>` (401 otherwise); the
page and the OpenAPI description are public, the page asks for the token.
"""

from __future__ import annotations

import hmac
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from evaluation.service import BadRequest, NotFound, Question, Service, error_body, version

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/explorer.js": ("explorer.js", "text/javascript; charset=utf-8"),
          "/explorer.css": ("explorer.css", "text/css; charset=utf-8")}


def _route(question: Question) -> re.Pattern[str]:
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", question.path)
    return re.compile(f"^{pattern}$")


def openapi(service: Service) -> dict[str, Any]:
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
                                     ("404", "no such run, episode, slot or probe"))},
            },
        }
        body = [p for p in q.params if p.where == "body"]
        if body:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "properties": {p.name: {**p.schema(), "description": p.description} for p in body},
                "required": [p.name for p in body if p.required]}}}}
            op["responses"]["201"] = {"description": "recorded; the answer carries the audit run after it"}
            op["responses"]["409"] = {"description": "after_turn does not fit the episode, or its writer holds it"}
        paths.setdefault(q.path, {})[q.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "ledgermem audit API", "version": version(),
                 "description": "Read-only answers about runs of an event-sourced memory: audit, current values, "
                                "history, as-of, blame, diff, context manifests, probes, erasure receipts."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": {"Error": {"type": "object", "required": ["error", "status"], "properties": {
                "error": {"type": "string"}, "status": {"type": "integer"}, "parameter": {"type": "string"}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],
    }


class Handler(BaseHTTPRequestHandler):
    service: Service  # set on the subclass made by `make_server`
    token: str | None
    routes: list[tuple[str, re.Pattern[str], Question]]
    quiet: bool = False
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
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8", headers)

    def _error(self, exc: BaseException) -> None:
        status, body = error_body(exc)
        if status >= 500:
            sys.stderr.write(f"error answering {self.command} {self.path}: {type(exc).__name__}: {exc}\n")
        self._json(status, body)

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
        try:
            if method == "GET" and url.path in STATIC:
                name, kind = STATIC[url.path]
                text = resources.files("evaluation").joinpath("explorer").joinpath(name).read_bytes()
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
            question, args = self._match(method, url.path)
            args = self._merge(args, self._query(url.query), "the query")
            if method == "POST":
                args = self._merge(args, self._body(), "the body")
            answer = self.service.ask(question.name, args)
            created = method == "POST" and isinstance(answer, dict) and answer.get("created")
            self._json(201 if created else 200, answer)
        except Exception as exc:  # every error becomes a JSON answer; the server keeps running
            self._error(exc)

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
                    return question, {k: unquote(v) for k, v in m.groupdict().items()}
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
            parsed = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=50)
        except ValueError as exc:
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
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest(f"the body must be a JSON object, not {type(body).__name__}")
        return body


class MethodNotAllowed(BadRequest):
    status = 405


def make_server(service: Service, port: int = 0, *, token: str | None = None, quiet: bool = False
                ) -> ThreadingHTTPServer:
    """The HTTP server on 127.0.0.1:`port` (0: a free port); `serve_forever()` runs it."""
    routes = [(q.method, _route(q), q) for q in service.questions()]
    handler = type("LedgermemHandler", (Handler,), {"service": service, "token": token or None, "routes": routes,
                                                      "quiet": quiet})
    server = ThreadingHTTPServer((HOST, port), handler)
    server.daemon_threads = True
    return server


__all__ = ["HOST", "Handler", "make_server", "openapi"]
