"""Errors of the audit service: runs it cannot serve and requests it refuses.

    LedgermemError (ledger.errors)
    ├── ServeError         the server could not start (the port is taken, say)
    ├── AuditWorkerFailed  the audit's process ended without an answer
    ├── CatalogError       a served run cannot be found or opened
    │   ├── UnknownRun (also memory.errors.RunNotFound, LookupError)
    │   ├── RunBusy        its writer holds it, or it is a read-only export
    │   ├── TimedOut       a request ran past its time limit
    │   ├── Closing        the server closed while the request was answered
    │   └── SnapshotFailed a run being written could not be copied into a snapshot
    ├── MemoryServiceError the live service answered an error (raised by `ledgermem.client`: the status it got)
    └── ServiceError       a request the audit service refuses; names the parameter when there is one
        ├── BadRequest (also ValueError)   a parameter missing, malformed or out of range
        │   ├── TooDeep                    JSON nested deeper than the service reads
        │   └── MethodNotAllowed           an HTTP method the route does not take
        ├── Unauthorized                   no valid bearer token (live memory service)
        ├── Forbidden                      the token's namespace or scopes do not allow the request
        ├── NotFound (also LookupError)    no such episode, slot, probe, question or route
        ├── Conflict                       a fact intake that does not fit the episode's turns
        ├── Unavailable                    the fact intake is not enabled on this server
        └── AuditFailed                    the audit after a fact intake found a violation

No error carries an HTTP status: the service maps error types to statuses in
one table (`service.questions.STATUS`), at its boundary.
"""

from __future__ import annotations

from typing import Any

from ledgermem.ledger.errors import LedgermemError
from ledgermem.memory.errors import RunNotFound


class ServeError(LedgermemError):
    """The server could not start (the port is taken, say)."""


class AuditWorkerFailed(LedgermemError):
    """The audit's process ended without an answer (killed from outside, or out of memory)."""


class CatalogError(LedgermemError):
    """A run cannot be found or opened for a request."""


class UnknownRun(RunNotFound, CatalogError, LookupError):
    """No run of that id among the runs served: a `RunNotFound`."""


class RunBusy(CatalogError):
    """The run cannot be written now (its writer holds it) or at all (an export)."""


class TimedOut(CatalogError):
    """A request ran past its time limit; its queries were interrupted."""


class Closing(CatalogError):
    """The catalog was closed while a request was still being answered."""


class SnapshotFailed(CatalogError):
    """A run being written could not be copied into a snapshot that opens."""


class ServiceError(LedgermemError):
    """A request the service cannot answer; `parameter` names the parameter at fault, `detail` adds data."""

    def __init__(self, message: str, parameter: str | None = None, *, detail: Any = None) -> None:
        super().__init__(message)
        self.parameter, self.detail = parameter, detail


class BadRequest(ServiceError, ValueError):
    """A parameter missing, malformed or out of range."""


class TooDeep(BadRequest):
    """JSON nested deeper than MAX_DEPTH."""


class MethodNotAllowed(BadRequest):
    """An HTTP method the route does not take."""


class Unauthorized(ServiceError):
    """No bearer token, or one that is malformed, unknown or revoked."""


class Forbidden(ServiceError):
    """A valid token whose namespace or scopes do not cover what was asked."""


class NotFound(ServiceError, LookupError):
    """No such episode, slot, probe, question or route in what was asked."""


class Conflict(ServiceError):
    """A fact intake that does not fit the episode's turns."""


class Unavailable(ServiceError):
    """The fact intake is not enabled on this server."""


class RolledBack(Unavailable):
    """A request's write went with a commit group that was rolled back (the live service): nothing of it was
    recorded."""

    def __init__(self) -> None:
        super().__init__("the write was rolled back with its commit group (see the server's log); nothing of it "
                         "was recorded: send it again (with the same idempotency key)")


class AuditFailed(ServiceError):
    """A fact was recorded (the ledger is append-only) and the audit after it found a violation."""


class MemoryServiceError(LedgermemError):
    """The service answered an error: `status`, the server's one-line message, `parameter` and `detail`."""

    def __init__(self, status: int, message: str, *, parameter: str | None = None, detail: Any = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status, self.message, self.parameter, self.detail = status, message, parameter, detail
