"""The live service keeps connections alive (HTTP/1.1) without a worker held by an idle one."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledgermem.service import http as service_http
from ledgermem.service.live import LiveStore
from ledgermem.service.live_questions import LiveService

S = "acme/user-1/s"


@pytest.fixture
def one_worker(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """The live service with one worker thread and connections idle for 3 s closed: (port, a token's secret)."""
    store = LiveStore(tmp_path / "mem")
    secret = store.tokens.create("acme", "read,write")[1]
    server = service_http.make_live_server(LiveService(store), 0, quiet=True, workers=1, idle=3.0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server.server_address[1], secret
    finally:
        server.shutdown()
        server.server_close()
        store.close()


def turn(conn: http.client.HTTPConnection, secret: str, n: int, **headers: str) -> http.client.HTTPResponse:
    body = json.dumps({"stream": S, "user": f"My office is on floor {n}.", "agent": "ok"})
    conn.request("POST", "/api/memory/turns", body=body, headers={
        "Authorization": f"Bearer {secret}", "Content-Type": "application/json", **headers})
    answer = conn.getresponse()
    answer.read()
    return answer


def test_turns_follow_each_other_on_one_connection(one_worker: tuple[int, str]) -> None:
    port, secret = one_worker
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        answers = [turn(conn, secret, 1)]
        assert conn.sock is not None
        first_socket = conn.sock.getsockname()
        answers += [turn(conn, secret, n) for n in (2, 3)]
        assert [a.status for a in answers] == [201, 201, 201]
        assert all(a.getheader("Connection") is None for a in answers)  # none of them closed it
        assert conn.sock is not None and conn.sock.getsockname() == first_socket  # one connection carried all three
    finally:
        conn.close()


def test_an_idle_kept_connection_holds_no_worker(one_worker: tuple[int, str]) -> None:
    """With one worker, a connection kept open after its answer leaves the worker free for another client."""
    port, secret = one_worker
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    other = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        assert turn(idle, secret, 1).status == 201  # and it stays open, silent
        started = time.monotonic()
        assert turn(other, secret, 2).status == 201
        assert time.monotonic() - started < 2.0  # not after the idle one is dropped (3 s)
        assert turn(idle, secret, 3).status == 201  # still open
    finally:
        idle.close()
        other.close()


def test_control_a_worker_that_stays_with_its_connection_is_held_by_an_idle_client(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Must-fail control: the standard HTTP/1.1 handler loops on its connection, so an idle client holds the
    only worker and the other client waits until the idle one is closed."""
    monkeypatch.setattr(service_http.LiveHandler, "handle", service_http.BaseHTTPRequestHandler.handle)
    store = LiveStore(tmp_path / "mem")
    secret = store.tokens.create("acme", "read,write")[1]
    server = service_http.make_live_server(LiveService(store), 0, quiet=True, workers=1, idle=3.0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    port = server.server_address[1]
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    other = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        assert turn(idle, secret, 1).status == 201
        started = time.monotonic()
        assert turn(other, secret, 2).status == 201
        assert time.monotonic() - started >= 2.0  # it waited for the idle connection's worker
    finally:
        idle.close()
        other.close()
        server.shutdown()
        server.server_close()
        store.close()


def test_an_error_ends_the_connection(one_worker: tuple[int, str]) -> None:
    port, secret = one_worker
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        refused = turn(conn, "not-a-token", 1)
        assert refused.status == 401 and refused.getheader("Connection") == "close"
        assert conn.sock is None  # http.client closed it as told
        assert turn(conn, secret, 2).status == 201  # a new connection works
    finally:
        conn.close()


def test_two_requests_sent_at_once_are_both_answered(one_worker: tuple[int, str]) -> None:
    """A client that sends its next request before reading the answer (pipelining) loses nothing: what the
    worker has already read is answered by it."""
    port, secret = one_worker
    requests_ = b""
    for n in (1, 2):
        body = json.dumps({"stream": S, "user": f"note {n}", "agent": "ok"}).encode()
        requests_ += (f"POST /api/memory/turns HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {secret}"
                      f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(requests_)
        received = b""
        deadline = time.monotonic() + 30
        while received.count(b"HTTP/1.1 201") < 2 and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    assert received.count(b"HTTP/1.1 201") == 2, received[:400]
