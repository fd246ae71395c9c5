"""Audits in a child process: the same report as in the server's process, killed at the time limit.

Whether other reads go on meanwhile is measured in benchmarks/ (case
serve_concurrency); here: the answer, the time limit, and that no process
is left behind.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from ledgermem.service.audit_worker import AuditWorkers
from ledgermem.service.catalog import Catalog, Deadline, TimedOut
from ledgermem.service.core import Service
from tests.service.conftest import InProcess


def _ask(service: Service, **arguments: object) -> object:
    return service.ask("audit", {"run": "small", **arguments})


def test_an_audit_in_a_child_process_is_the_audit_in_this_one(runs_dir: Path) -> None:
    catalog = Catalog(runs_dir)
    try:
        here = Service(catalog)
        there = Service(catalog, audit_processes=1)
        assert there.audit_workers is not None and here.audit_workers is None
        for at in (None, 60):
            args = {} if at is None else {"at": at}
            assert _ask(there, **args) == _ask(here, **args)
    finally:
        catalog.close()
    assert multiprocessing.active_children() == []


def test_an_audit_process_past_the_time_limit_is_killed_and_answers_504(runs_dir: Path) -> None:
    server = InProcess(runs_dir, service={"time_limit": 0.01, "audit_processes": 1})
    try:
        answer = server.get("/api/runs/small/audit")
        assert answer.status_code == 504, answer.text
        assert "time limit of 0.01 s" in answer.json()["error"]
        assert multiprocessing.active_children() == []  # the child was killed and reaped
    finally:
        server.stop()


def test_an_error_in_the_child_comes_back_as_the_same_error(tmp_path: Path) -> None:
    workers = AuditWorkers(1)
    with pytest.raises(Exception) as raised:
        workers.audit(tmp_path / "absent.duckdb", keys=None, run_id=None, at_seq=None, i4_floor=None,
                      deadline=None)
    assert "absent.duckdb" in str(raised.value)


def test_an_expired_deadline_stops_a_request_waiting_for_its_turn(runs_dir: Path) -> None:
    workers = AuditWorkers(1)
    workers._turns.acquire()  # another audit holds the only turn
    try:
        with Deadline(0.01) as deadline, pytest.raises(TimedOut):
            workers.audit(runs_dir / "small" / "ledger.duckdb", keys=None, run_id=None, at_seq=None,
                          i4_floor=None, deadline=deadline)
    finally:
        workers._turns.release()


def test_processes_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AuditWorkers(0)


def test_warming_starts_the_fork_server_and_leaves_no_process() -> None:
    workers = AuditWorkers(1)
    workers.warm()
    assert multiprocessing.active_children() == []
    assert workers._context is not None


@pytest.mark.parametrize("long_tmp", [True, False], ids=["tmpdir-too-long-for-a-socket", "control-short-tmpdir"])
def test_under_a_long_tmpdir_audits_are_spawned_and_still_answer(runs_dir: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   long_tmp: bool) -> None:
    """The forkserver's Unix socket lives in TMPDIR and must fit in 107 bytes; a longer TMPDIR once made every
    audit of the server answer 500 ('AF_UNIX path too long')."""
    import tempfile

    folder = tmp_path / ("t" * 90 if long_tmp else "t")
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder) if long_tmp else "/tmp")
    workers = AuditWorkers()
    method = workers._ctx().get_start_method()
    if long_tmp:
        assert method == "spawn"
    else:
        assert method == ("forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
    report = workers.audit(runs_dir / "small" / "ledger.duckdb", keys=None, run_id=None, at_seq=None,
                           i4_floor=None, deadline=None)
    assert report["ok"] is True
    assert multiprocessing.active_children() == []
