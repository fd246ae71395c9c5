"""Errors of the harness: running, replaying, merging, judging and reporting a run.

    LedgermemError (ledger.errors)
    └── EvaluationError
        ├── UnknownSystem (also ValueError)
        ├── ReplayMismatch     a replay did not reproduce the live run
        ├── MergeRefused       shard ledgers that cannot be merged into one run (named)
        ├── NothingToRepair    a target `repair` does not apply to
        ├── ReportInputError   a run's CSV files cannot be read into a report
        │   ├── MissingRunFile (also FileNotFoundError)
        │   └── MissingColumn (also ValueError)
        ├── ThresholdError (also ValueError)  a verdict thresholds file or entry that cannot be used
        ├── LabelledSetError (also ValueError)  a labelled judge set that cannot be read
        ├── SourcePolicyError (also ValueError)  a --source-policy / --llm-option value that cannot be read
        ├── BaselineError (also ValueError)   a baseline driven wrongly (unknown kind, turns out of order)
        ├── LlmCallFailed      an LLM call failed after its retries; its unit is left to be redone
        └── RunStopped         the run stopped because of its LLM calls

Run storage (a run that exists, is missing, or is named by a path) raises the
memory layer's errors (`memory.errors`), datasets raise `datasets.errors`,
the audit service `service.errors`. The CLI reports any `LedgermemError` as
one line and exit code 1.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledgermem.ledger.errors import LedgermemError
from ledgermem.projections.events import LlmCalled


class EvaluationError(LedgermemError):
    """An evaluation could not run or be reproduced."""


class UnknownSystem(EvaluationError, ValueError):
    """A memory system name this version does not have."""


class ReplayMismatch(EvaluationError):
    """Replaying the ledger did not give what the live run recorded."""


class MergeRefused(EvaluationError):
    """Shard ledgers that cannot become one run: a shard that fails verify, clashing streams or configurations."""


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
