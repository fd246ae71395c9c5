"""Audits answered in a process of their own, so that a server's short reads never wait behind one.

An audit folds every stream of a run in Python: in the server's process it
holds the interpreter for hundreds of milliseconds at a time, and every
other request, however short, waits its turn for it. Here each audit runs
in a child process forked from a server process that has the audit's
modules loaded already (`multiprocessing`'s forkserver), which opens the
run read-only on its own (DuckDB lets several processes read a file that
no one writes) and sends the report back as JSON data. At most `processes`
audits run at once (the others wait for a turn within their own time
limit); one past its time limit is killed and answers 504 like any read.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ledgermem.service.catalog import Deadline
from ledgermem.service.errors import AuditWorkerFailed

PRELOAD = ["ledgermem.evaluation.runner", "ledgermem.gate.invariants", "ledgermem.ledger.store", "ledgermem.projections.materialise"]
POLL = 0.02  # seconds between looks at the child and the deadline


def _child(out: Connection, path: str, keys: str | None, run_id: str | None, at_seq: int | None,
           i4_floor: float | None) -> None:
    try:
        import ledgermem.evaluation.events  # noqa: F401 - a run's ledger holds the harness's event types too
        from ledgermem.memory.runs import open_run
        from ledgermem.gate.invariants import audit

        with open_run(Path(path), keys=Path(keys) if keys else None) as (ledger, projections):
            report = audit(ledger, projections, run_id=run_id, at_seq=at_seq, i4_floor=i4_floor)
        out.send(("ok", report.as_dict()))
    except BaseException as exc:  # noqa: BLE001 - whatever it was, the server answers with it
        try:
            out.send(("error", exc))
        except Exception:  # noqa: BLE001 - an exception that does not pickle: its type and text
            out.send(("error", AuditWorkerFailed(f"{type(exc).__name__}: {exc}")))
    finally:
        out.close()


def _nothing() -> None:
    pass


# The forkserver listens on a Unix socket made inside the temporary directory (`pymp-XXXXXXXX/listener-XXXXXXXX`),
# whose whole path must fit in 107 bytes: under a longer TMPDIR the audits are spawned instead.
_SOCKET_PATH_LIMIT = 107
_SOCKET_NAME_ROOM = 40


def _socket_fits() -> bool:
    return len(os.fsencode(tempfile.gettempdir())) + _SOCKET_NAME_ROOM <= _SOCKET_PATH_LIMIT


class AuditWorkers:
    """Runs `gate.invariants.audit` over a run's files in child processes, at most `processes` at once."""

    def __init__(self, processes: int = 1) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes!r}")
        self.processes = processes
        self._turns = threading.BoundedSemaphore(processes)
        self._context: Any = None
        self._lock = threading.Lock()

    def _ctx(self) -> Any:
        with self._lock:
            if self._context is None:
                methods = multiprocessing.get_all_start_methods()
                if "forkserver" in methods and not _socket_fits():
                    methods = [m for m in methods if m != "forkserver"]
                self._context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
                if "forkserver" in methods:
                    self._context.set_forkserver_preload(PRELOAD)
            return self._context

    def warm(self) -> None:
        """Start the process audits are forked from (it loads their modules once), so the first is not slower."""
        child = self._ctx().Process(target=_nothing, daemon=True, name="ledgermem-audit-warm")
        child.start()
        child.join()

    def audit(self, path: Path, *, keys: Path | None, run_id: str | None, at_seq: int | None,
              i4_floor: float | None, deadline: Deadline | None) -> dict[str, Any]:
        """The audit report of the run at `path` as JSON data; `TimedOut` once `deadline` expires."""
        while not self._turns.acquire(timeout=POLL):
            if deadline is not None:
                deadline.check()
        try:
            return self._run(path, keys, run_id, at_seq, i4_floor, deadline)
        finally:
            self._turns.release()

    def _run(self, path: Path, keys: Path | None, run_id: str | None, at_seq: int | None,
             i4_floor: float | None, deadline: Deadline | None) -> dict[str, Any]:
        ctx = self._ctx()
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child, args=(send, str(path), str(keys) if keys else None, run_id, at_seq,
                                                 i4_floor), daemon=True, name="ledgermem-audit")
        child.start()
        send.close()
        try:
            while not receive.poll(POLL):
                if deadline is not None and deadline.expired:
                    child.kill()
                    deadline.check()
                if not child.is_alive() and not receive.poll(0):
                    raise AuditWorkerFailed(f"the audit's process ended with exit code {child.exitcode} and "
                                            "no answer")
            try:
                kind, value = receive.recv()
            except EOFError as exc:
                raise AuditWorkerFailed(f"the audit's process ended with exit code {child.exitcode} and no "
                                        "answer") from exc
        finally:
            receive.close()
            child.join(5)
            if child.is_alive():
                child.kill()
                child.join()
        if kind == "error":
            raise value
        assert isinstance(value, dict)
        return value

