"""A request must name this loopback server in its Host header: a rebound foreign name is refused (421)."""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest

from tests.service.conftest import InProcess


def _get(server: InProcess, host: str | None, path: str = "/api/runs") -> tuple[int, bytes]:
    port = int(server.url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture
def server(runs_dir: Path):
    served = InProcess(runs_dir)
    yield served
    served.stop()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST:80", "[::1]:8765", "127.0.0.1:{port}"])
def test_loopback_names_are_answered(server: InProcess, host: str) -> None:
    status, _ = _get(server, host.format(port=server.url.rsplit(":", 1)[1]))
    assert status == 200


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8765", "127.0.0.1.attacker.example",
                                  "localhost.attacker.example:80", "", None])
def test_other_names_are_refused_with_a_json_421(server: InProcess, host: str | None) -> None:
    for path in ("/api/runs", "/", "/openapi.json"):
        status, body = _get(server, host, path)
        assert status == 421, (host, path, body)
        assert b'"status": 421' in body and b"is not this server" in body
