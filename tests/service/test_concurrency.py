"""The service answers requests concurrently, with a bounded number of threads, a socket timeout and a time limit.

No timing thresholds here (figures live in benchmarks/, case serve_concurrency):
a slow request is made slow on purpose (an audit that waits for the test to
release it, or a query that never ends) and the tests check the order in
which things finish, the number of threads, and the answers.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from ledgermem.service import core as service_module
from ledgermem.service.catalog import Catalog, Deadline, TimedOut
from ledgermem.service.http import HOST
from ledgermem.service.core import Service
from tests.service.conftest import InProcess

EP = "/api/runs/small/episodes/syn-en-000"


@pytest.fixture
def gated_audit(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """The service's audit made slow: it signals `entered`, then waits until the test sets `release`."""
    entered, release = threading.Event(), threading.Event()
    real = service_module.audit

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(60)  # the test releases it; a hung test still ends
        return real(*args, **kwargs)

    monkeypatch.setattr(service_module, "audit", slow)
    yield entered, release
    release.set()


def values_finish_during_audit(server: InProcess, entered: threading.Event, release: threading.Event,
                               wait: float) -> tuple[bool, int, int]:
    """Start an audit that blocks, then ask for values: did the values come back while the audit was blocked?"""
    audit_status: list[int] = []
    audit = threading.Thread(target=lambda: audit_status.append(server.get("/api/runs/small/audit").status_code))
    audit.start()
    assert entered.wait(30), "the audit request never reached the audit"
    values_status: list[int] = []
    values = threading.Thread(target=lambda: values_status.append(server.get(EP + "/values").status_code))
    values.start()
    values.join(wait)  # returns as soon as the values are answered
    answered_first = not values.is_alive()
    release.set()
    values.join(60)
    audit.join(60)
    return answered_first, values_status[0], audit_status[0]


def test_values_are_answered_while_an_audit_is_in_flight(runs_dir: Path,
                                                         gated_audit: tuple[threading.Event, threading.Event]) -> None:
    server = InProcess(runs_dir)
    try:
        answered_first, values_status, audit_status = values_finish_during_audit(server, *gated_audit, wait=60)
    finally:
        server.stop()
    assert answered_first, "the values waited for the audit: requests are serialised"
    assert (values_status, audit_status) == (200, 200)


class OneAtATime(Service):
    """The service as it was: one lock around every answer (the control)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._global = threading.Lock()

    def ask(self, name: str, arguments: Any) -> Any:
        with self._global:
            return super().ask(name, arguments)


def test_control_a_service_with_one_global_lock_makes_the_values_wait(
        runs_dir: Path, gated_audit: tuple[threading.Event, threading.Event]) -> None:
    server = InProcess(runs_dir)
    server.server.RequestHandlerClass.service = OneAtATime(server.catalog)  # type: ignore[attr-defined]
    try:
        answered_first, values_status, audit_status = values_finish_during_audit(server, *gated_audit, wait=2)
    finally:
        server.stop()
    assert not answered_first  # the check above catches a serialised service
    assert (values_status, audit_status) == (200, 200)


def test_concurrent_answers_are_the_sequential_ones(runs_dir: Path) -> None:
    """Eight threads asking at once get exactly what one asking alone gets (no cursor is shared)."""
    server = InProcess(runs_dir)
    paths = [EP + "/values", EP + "/values?seq=40", EP + "/history?slot=office%20floor", EP + "/layers?seq=50",
             EP + "/timeline", "/api/runs/small/audit?at=60", "/api/runs/small/episodes", "/api/runs",
             EP + "/values?system=naive_chain", EP + "/diff?from_seq=10&to_seq=60"]
    try:
        alone = {p: requests.get(server.url + p, timeout=60) for p in paths}
        assert all(r.status_code in (200, 404) for r in alone.values()), {p: r.text for p, r in alone.items()}
        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(lambda p: (p, requests.get(server.url + p, timeout=60)), paths * 6))
    finally:
        server.stop()
    for path, answer in together:
        assert (answer.status_code, answer.json()) == (alone[path].status_code, alone[path].json()), path


def open_silent(port: int, n: int) -> list[socket.socket]:
    return [socket.create_connection((HOST, port), timeout=30) for _ in range(n)]


def test_silent_connections_hold_no_thread_and_are_closed_after_the_idle_timeout(runs_dir: Path) -> None:
    server = InProcess(runs_dir, server={"workers": 4, "idle": 1.0})
    before = threading.active_count()
    silent = open_silent(server.server.server_address[1], 300)
    try:
        answer = server.get("/api/runs")  # accepted after the 300: they are all accepted by now
        assert answer.status_code == 200, answer.text
        assert threading.active_count() <= before + 4 + 1  # the workers (and a timer), not one per connection
        for sock in silent:
            assert sock.recv(1) == b""  # the server closed it after the idle timeout
    finally:
        for sock in silent:
            sock.close()
        server.stop()


def test_control_a_thread_per_connection_server_is_held_by_silent_connections(runs_dir: Path) -> None:
    """The check above catches the server as it was: 300 silent connections are 300 threads."""
    catalog_server = InProcess(runs_dir)
    handler = type("Unbounded", (catalog_server.server.RequestHandlerClass,), {"timeout": None})
    plain = type("Plain", (ThreadingHTTPServer,), {"request_queue_size": 128})((HOST, 0), handler)
    plain.daemon_threads = True
    threading.Thread(target=plain.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    before = threading.active_count()
    silent = open_silent(plain.server_address[1], 300)
    try:
        answer = requests.get(f"http://{HOST}:{plain.server_address[1]}/api/runs", timeout=60)
        assert answer.status_code == 200
        assert threading.active_count() > before + 4 + 1
    finally:
        for sock in silent:
            sock.close()
        plain.shutdown()
        plain.server_close()
        catalog_server.stop()


def test_a_client_that_stops_half_way_frees_its_worker(runs_dir: Path) -> None:
    """Partial requests occupy the workers until the idle timeout; then a whole request is answered."""
    server = InProcess(runs_dir, server={"workers": 2, "backlog": 8, "idle": 1.0})
    partial = open_silent(server.server.server_address[1], 4)
    try:
        for sock in partial:
            sock.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1")  # and nothing more
        answer = server.get("/api/runs")
        assert answer.status_code == 200, answer.text
        for sock in partial:
            assert sock.recv(4096) == b""  # dropped without an answer
    finally:
        for sock in partial:
            sock.close()
        server.stop()


def test_a_request_past_the_workers_and_the_backlog_gets_a_json_503(
        runs_dir: Path, gated_audit: tuple[threading.Event, threading.Event]) -> None:
    entered, release = gated_audit
    server = InProcess(runs_dir, server={"workers": 1, "backlog": 0})
    try:
        audit = threading.Thread(target=lambda: server.get("/api/runs/small/audit"))
        audit.start()
        assert entered.wait(30)
        busy = server.get(EP + "/values")
        assert busy.status_code == 503
        assert busy.headers["Content-Type"] == "application/json; charset=utf-8"
        assert busy.json()["status"] == 503 and "busy" in busy.json()["error"]
        release.set()
        audit.join(60)
        assert server.get(EP + "/values").status_code == 200  # the worker is free again
    finally:
        release.set()
        server.stop()


def test_a_read_past_the_time_limit_is_interrupted_and_answers_504(runs_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def endless(ledger: Any, *args: Any, **kwargs: Any) -> Any:
        return ledger.conn.execute("SELECT count(*) FROM range(1000000000000) a, range(1000) b").fetchall()

    monkeypatch.setattr(service_module, "audit", endless)
    server = InProcess(runs_dir, service={"time_limit": 0.5})
    try:
        answer = server.get("/api/runs/small/audit")
        assert answer.status_code == 504, answer.text
        assert answer.json() == {"error": "the request ran past its time limit of 0.5 s and was stopped",
                                 "status": 504}
        after = [server.get(EP + "/values") for _ in range(3)]  # the interrupted cursors serve again
        assert [a.status_code for a in after] == [200, 200, 200]
    finally:
        server.stop()


def test_a_deadline_interrupts_only_the_cursors_it_watches(tmp_path: Path) -> None:
    import duckdb

    conn = duckdb.connect(":memory:")
    watched, other = conn.cursor(), conn.cursor()
    endless = "SELECT count(*) FROM range(1000000000000) a, range(1000) b"
    with Deadline(0.2) as deadline, deadline.watch(watched):
        with pytest.raises(duckdb.InterruptException):
            watched.execute(endless).fetchall()
        assert deadline.expired
        with pytest.raises(TimedOut):
            deadline.check()
        assert other.execute("SELECT 42").fetchall() == [(42,)]  # not watched: not interrupted
    conn.close()


def copy_run(source: Path, into: Path) -> None:
    into.mkdir(parents=True)
    for f in source.iterdir():
        if f.is_file():
            shutil.copyfile(f, into / f.name)


def test_two_ledgers_with_the_same_run_id_are_both_listed_and_reachable(runs_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "served"
    copy_run(runs_dir / "small", folder / "small")
    copy_run(runs_dir / "small", folder / "small-copy")
    server = InProcess(folder)
    try:
        listed = server.get("/api/runs").json()["items"]
        assert [(r["run_id"], r["source"]) for r in listed] == [
            ("small", "small/ledger.duckdb"), ("small@small-copy", "small-copy/ledger.duckdb")]
        assert listed[1]["recorded_run_id"] == "small" and "recorded_run_id" not in listed[0]
        assert str(tmp_path) not in json.dumps(listed)  # no absolute path is shown
        answers = {}
        for run in ("small", "small@small-copy", "small@small"):  # the qualified id reaches the original too
            values = server.get(f"/api/runs/{run}/episodes/syn-en-000/values")
            assert values.status_code == 200, (run, values.text)
            answers[run] = values.json()
            assert server.get(f"/api/runs/{run}").json()["run_id"] == run
        assert answers["small"] == answers["small@small-copy"] == answers["small@small"]
        assert server.get("/api/runs/small@elsewhere").status_code == 404
    finally:
        server.stop()


def test_copies_without_the_original_are_each_served_under_their_folder(runs_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "served"
    copy_run(runs_dir / "small", folder / "a")
    copy_run(runs_dir / "small", folder / "b")
    catalog = Catalog(folder, hold=0)
    try:
        assert [(sid, rid, catalog.shown_path(src)) for sid, rid, src in catalog.served()] == [
            ("small@a", "small", "a/ledger.duckdb"), ("small@b", "small", "b/ledger.duckdb")]
        shutil.rmtree(folder / "b")
        assert [sid for sid, _, _ in catalog.served()] == ["small"]  # alone again: its plain id
        assert catalog.resolve("small@a")[1] == "small"  # and its qualified id still reaches it
    finally:
        catalog.close()


def test_a_single_run_target_shows_no_absolute_path(runs_dir: Path) -> None:
    server = InProcess(runs_dir / "small")
    try:
        body = server.get("/api/runs").text
        assert json.loads(body)["items"][0]["source"] == "ledger.duckdb"
        assert str(runs_dir) not in body
    finally:
        server.stop()


def test_closing_the_server_wakes_a_worker_held_by_a_client_that_stopped_half_way(runs_dir: Path) -> None:
    server = InProcess(runs_dir, server={"workers": 1, "idle": 600.0})
    partial = socket.create_connection((HOST, server.server.server_address[1]), timeout=30)
    try:
        partial.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1")
        while not server.server._answering:  # a worker has taken the connection and waits for the rest
            threading.Event().wait(0.01)
        server.stop()
        assert partial.recv(4096) == b""  # closed by the server's close, not after the idle timeout
    finally:
        partial.close()


@pytest.mark.parametrize(("option", "value"), [("--workers", "0"), ("--workers", "-3"), ("--idle-timeout", "0"),
                                               ("--time-limit", "-1"), ("--time-limit", "soon")])
def test_serve_bounds_out_of_range_are_a_one_line_error(runs_dir: Path, option: str, value: str) -> None:
    from click.testing import CliRunner

    from ledgermem.cli.commands import cli

    result = CliRunner().invoke(cli, ["serve", str(runs_dir), "--port", "0", option, value])
    assert result.exit_code == 2 and option in result.stderr, result.output


def test_a_closed_catalog_opens_no_run_again(runs_dir: Path) -> None:
    """A request still in flight when the server closes must not reopen a ledger that nothing would close."""
    from ledgermem.service.catalog import Closing

    catalog = Catalog(runs_dir, hold=60)
    with catalog.open("small") as view:
        assert view.ledger.last_seq > 0
    catalog.close()
    with pytest.raises(Closing, match="shutting down"), catalog.open("small"):
        pass
    assert not catalog._held


def test_errors_name_no_path_of_the_machine(runs_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "served"
    copy_run(runs_dir / "small", folder / "small")
    (folder / "broken").mkdir()
    (folder / "broken" / "ledger.duckdb").write_bytes(b"not a database" * 100)
    server = InProcess(folder)
    try:
        answer = server.get("/api/runs")
        assert answer.status_code >= 500 and answer.json()["error"].startswith("broken/ledger.duckdb: "), answer.text
        assert str(tmp_path) not in answer.text and tempfile.gettempdir() + "/" not in answer.text
    finally:
        server.stop()
