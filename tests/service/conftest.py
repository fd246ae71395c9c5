"""Fixtures of the serving tests: a real redis-server, a small run, servers on free loopback ports.

Binaries the tests need (redis-server, chromium, chromedriver) are skipped
with a reason when absent on a developer's machine; in CI (CI=true) their
absence is a failure, because `.ci/run` installs them.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from ledgermem.evaluation.runner import Progress, RunOptions, RunResult, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.projections.config import MemoryConfig


def require_binary(name: str, install: str) -> str:
    """The path of `name`; skip without it locally, fail without it in CI."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install -y {install})"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{message}; CI installs it in .ci/run, so its absence is an error here")
        pytest.skip(message)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RedisServer:
    """A redis-server of our own on 127.0.0.1, without persistence and with KEYS disabled."""

    binary: str
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), "--rename-command", "KEYS", "", "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not come up on port {self.port}")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def client(self, decode: bool = True) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=decode)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    pytest.importorskip("redis", reason="the redis client is in the dev extra: pip install -e '.[dev]'")
    server = RedisServer(require_binary("redis-server", "redis-server"), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


SMALL = {"n_episodes": 2, "turns": 12, "seed": 7}


def small_run(runs_dir: Path, run_id: str = "small", progress: Progress | None = None, **options: Any) -> RunResult:
    """A synthetic run of two 12-turn episodes through three_layer only: seconds, with overrides and probes."""
    opts = RunOptions(run_id=run_id, runs_dir=runs_dir, memory=MemoryConfig(personal_data=False), **options)
    return run(generate_synthetic(**SMALL), opts, progress=progress)


@pytest.fixture(scope="session")
def baseline_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The small run without any cache: what every cached run must reproduce."""
    return small_run(tmp_path_factory.mktemp("baseline"))


class Served:
    """`ledgermem serve` in a subprocess on a free port of 127.0.0.1; stopped at the end of the test."""

    def __init__(self, target: Path | str, *args: str, tmpdir: Path | None = None) -> None:
        env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir is not None else None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ledgermem", "serve", str(target), "--port", "0", "--quiet", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=_pump, args=(self.proc.stdout, lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr or ()), daemon=True).start()
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            first = None
        if first is None:
            self.stop()
            raise RuntimeError(f"ledgermem serve printed nothing: {''.join(self.errors)}")
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        if not found:
            self.stop()
            raise RuntimeError(f"unexpected first line of ledgermem serve: {first!r}")
        self.banner = first
        self.url = f"http://127.0.0.1:{found.group(1)}"

    def get(self, path: str, **params: Any) -> Any:
        return requests.get(self.url + path, params=params, timeout=60)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _close_pipes(self.proc)


class Mcp:
    """`ledgermem mcp` in a subprocess, spoken to line by line."""

    def __init__(self, target: Path | str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "ledgermem", "mcp", str(target), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=_pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr or ()), daemon=True).start()
        self._id = 0

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> Any:
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise RuntimeError(f"ledgermem mcp ended: {''.join(self.errors)}")
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._id += 1
        self.send({"jsonrpc": "2.0", "id": self._id, "method": method, **({"params": params} if params else {})})
        answer = self.receive()
        assert answer["id"] == self._id
        return answer

    def call(self, tool: str, **arguments: Any) -> Any:
        return self.request("tools/call", {"name": tool, "arguments": arguments})["result"]

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        _close_pipes(self.proc)


def _pump(pipe: Any, into: queue.Queue[str | None]) -> None:
    """Lines of a pipe into a queue, then None at its end: a reader learns at once that the process died."""
    for line in pipe or ():
        into.put(line)
    into.put(None)


def _close_pipes(proc: subprocess.Popen[str]) -> None:
    time.sleep(0.05)  # let the reader threads see the end of their pipes
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            try:
                pipe.close()
            except OSError:
                pass


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs directory with one small run of three_layer and naive_chain."""
    folder = tmp_path_factory.mktemp("runs")
    small_run(folder, systems=("three_layer", "naive_chain"))
    return folder


@pytest.fixture(scope="module")
def served(runs_dir: Path) -> Iterator[Served]:
    server = Served(runs_dir)
    try:
        yield server
    finally:
        server.stop()


class InProcess:
    """The HTTP server of `service.http` on a thread of this process: for tests of one option."""

    def __init__(self, target: Path, *, token: str | None = None, service: dict[str, Any] | None = None,
                 server: dict[str, Any] | None = None, **catalog: Any) -> None:
        from ledgermem.service.catalog import Catalog
        from ledgermem.service.http import make_server
        from ledgermem.service.core import Service

        self.catalog = Catalog(target, **catalog)
        self.service = Service(self.catalog, **(service or {}))
        self.server = make_server(self.service, 0, token=token, quiet=True, **(server or {}))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def get(self, path: str, **params: Any) -> Any:
        return requests.get(self.url + path, params=params, timeout=60)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.catalog.close()


def assert_no_secret(secret: str, found_in: str | bytes) -> None:
    """Neither a token's whole secret (`lmt_<id>_<random>`) nor its random part appears in `found_in`.

    The id is not secret; the random part may itself hold `_`, so it is what follows the second `_`, whole
    (its tail after the last `_` can be one letter, which any file holds by chance).
    """
    matched = re.fullmatch(r"lmt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})", secret)
    assert matched is not None, f"not a token secret: {secret[:8]}…"
    for part in (secret, matched.group(2)):
        needle = part.encode() if isinstance(found_in, bytes) else part
        assert needle not in found_in, "a token's secret was stored"


@contextmanager
def live_http(store: Any) -> Iterator[str]:
    """The live service of `store` (a `LiveStore`) over HTTP on a free loopback port, answered by a thread: its
    URL. The server stops and the store closes on leaving."""
    from ledgermem.service.http import make_live_server
    from ledgermem.service.live_questions import LiveService

    server = make_live_server(LiveService(store), 0, quiet=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        store.close()
