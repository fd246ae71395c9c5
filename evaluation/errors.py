"""Errors of the evaluation layer: the harness, the datasets, run storage, the CLI and the audit service.

    LedgermemError (ledger.errors)
    └── EvaluationError
        ├── RunExists          a run with that id is already there (use --force or another id)
        ├── RunNotFound (also FileNotFoundError)  no run with that id or path: the one "no such run"
        │   └── UnknownRun (also CatalogError, LookupError)  not among the runs a server serves
        ├── UnknownSystem (also ValueError)
        ├── ReplayMismatch     a replay did not reproduce the live run
        ├── MergeRefused       shard ledgers that cannot be merged into one run (named)
        ├── SqlRefused (also PermissionError)  a query the SQL sandbox does not run (evaluation.sandbox)
        ├── SqlError           a query the database refused (`sql`)
        ├── InvalidRunId (also ValueError)  a run id that is a path, not a name (evaluation.names)
        ├── NotARunFolder      --force aimed at a folder that is not a run folder inside the runs folder
        ├── NothingToRepair    a target `repair` does not apply to
        ├── ReportInputError   a run's CSV files cannot be read into a report
        │   ├── MissingRunFile (also FileNotFoundError)
        │   └── MissingColumn (also ValueError)
        ├── ThresholdError (also ValueError)  a verdict thresholds file or entry that cannot be used
        ├── DatasetError (also ValueError)    a dataset file that is missing or malformed (names file, record, field)
        ├── PhrasingError (also ValueError)   a phrasing corpus file that is malformed
        ├── LabelledSetError (also ValueError)  a labelled judge set that cannot be read
        ├── SourcePolicyError (also ValueError)  a --source-policy / --llm-option value that cannot be read
        ├── BaselineError (also ValueError)   a baseline driven wrongly (unknown kind, turns out of order)
        ├── LlmCallFailed      an LLM call failed after its retries; its unit is left to be redone
        ├── RunStopped         the run stopped because of its LLM calls
        ├── ServeError         the server could not start (the port is taken, say)
        ├── AuditWorkerFailed  the audit's process ended without an answer
        ├── CatalogError       a served run cannot be found or opened
        │   ├── UnknownRun     (see RunNotFound)
        │   ├── RunBusy        its writer holds it, or it is a read-only export
        │   ├── TimedOut       a request ran past its time limit
        │   ├── Closing        the server closed while the request was answered
        │   └── SnapshotFailed a run being written could not be copied into a snapshot
        └── ServiceError       a request the audit service refuses; names the parameter when there is one
            ├── BadRequest (also ValueError)   a parameter missing, malformed or out of range
            │   ├── TooDeep                    JSON nested deeper than the service reads
            │   └── MethodNotAllowed           an HTTP method the route does not take
            ├── NotFound (also LookupError)    no such episode, slot, probe, question or route
            ├── Conflict                       a fact intake that does not fit the episode's turns
            ├── Unavailable                    the fact intake is not enabled on this server
            └── AuditFailed                    the audit after a fact intake found a violation

No error carries an HTTP status: the service maps error types to statuses in
one table (`evaluation.questions.STATUS`); the CLI reports any
`LedgermemError` as one line and exit code 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.errors import LedgermemError
from ledger.events import LlmCalled


class EvaluationError(LedgermemError):
    """An evaluation could not run or be reproduced."""


class RunExists(EvaluationError):
    """A run of that id already exists."""


class RunNotFound(EvaluationError, FileNotFoundError):
    """No run of that id or path."""


class UnknownSystem(EvaluationError, ValueError):
    """A memory system name this version does not have."""


class ReplayMismatch(EvaluationError):
    """Replaying the ledger did not give what the live run recorded."""


class MergeRefused(EvaluationError):
    """Shard ledgers that cannot become one run: a shard that fails verify, clashing streams or configurations."""


class SqlRefused(EvaluationError, PermissionError):
    """A query on a run that is not one read-only statement, or that reaches outside the run's files."""


class SqlError(EvaluationError):
    """A query the database refused."""


class InvalidRunId(EvaluationError, ValueError):
    """A run id that is not a name: a path, `.`, `..`, empty, or characters outside `evaluation.names.RUN_ID`."""


class NotARunFolder(EvaluationError):
    """`--force` would delete a folder that is not a run folder directly inside the runs folder."""


class NothingToRepair(EvaluationError):
    """A target `repair` does not apply to."""


class ReportInputError(EvaluationError):
    """A CSV file of the run cannot be read into a report."""


class MissingRunFile(ReportInputError, FileNotFoundError):
    """A CSV file the report reads is not in the run folder."""


class MissingColumn(ReportInputError, ValueError):
    """A CSV file lacks a column the report needs."""


class ThresholdError(EvaluationError, ValueError):
    """A verdict thresholds file (or one of its entries) that cannot be used (evaluation.verdicts)."""


class DatasetError(EvaluationError, ValueError):
    """A seed file is missing or malformed; the message is one line."""


class PhrasingError(EvaluationError, ValueError):
    """A corpus file is malformed; the message names the file, family and frame."""


class LabelledSetError(EvaluationError, ValueError):
    """A labelled-set file that cannot be read; the message names the file, line and field."""


class SourcePolicyError(EvaluationError, ValueError):
    """A `--source-policy` value that cannot be read; the message names the value and the fix."""


class BaselineError(EvaluationError, ValueError):
    """A baseline was driven wrongly (unknown kind, turns out of order)."""


class LlmCallFailed(EvaluationError):
    """An LLM call failed after its retries; the unit it belonged to is left to be redone."""

    def __init__(self, message: str, *, events: Sequence[LlmCalled], stop: str | None = None) -> None:
        super().__init__(message)
        self.events = tuple(events)
        self.stop = stop  # why the whole run must stop, or None when only this unit failed


class RunStopped(EvaluationError):
    """The run stopped because of its LLM calls; the message holds the last error, on one line."""


class ServeError(EvaluationError):
    """The server could not start (the port is taken, say)."""


class AuditWorkerFailed(EvaluationError):
    """The audit's process ended without an answer (killed from outside, or out of memory)."""


# -- run storage as a server sees it (evaluation.catalog) ------------------------------------


class CatalogError(EvaluationError):
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


# -- requests the audit service refuses (evaluation.questions, .service, .serve) -------------


class ServiceError(EvaluationError):
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


class NotFound(ServiceError, LookupError):
    """No such episode, slot, probe, question or route in what was asked."""


class Conflict(ServiceError):
    """A fact intake that does not fit the episode's turns."""


class Unavailable(ServiceError):
    """The fact intake is not enabled on this server."""


class AuditFailed(ServiceError):
    """A fact was recorded (the ledger is append-only) and the audit after it found a violation."""
