"""Errors of the evaluation layer.

    LedgermemError (ledger.errors)
    └── EvaluationError
        ├── RunExists          a run with that id is already there (use --force or another id)
        ├── RunNotFound        no run with that id or path
        ├── UnknownSystem (also ValueError)
        ├── ReplayMismatch     a replay did not reproduce the live run
        ├── MergeRefused       shard ledgers that cannot be merged into one run (named)
        ├── SqlRefused (also PermissionError)  a query the SQL sandbox does not run (evaluation.sandbox)
        ├── InvalidRunId (also ValueError)  a run id that is a path, not a name (evaluation.names)
        ├── NotARunFolder      --force aimed at a folder that is not a run folder inside the runs folder
        ├── ReportInputError   a run's CSV files cannot be read into a report
        │   ├── MissingRunFile (also FileNotFoundError)
        │   └── MissingColumn (also ValueError)
        └── ThresholdError (also ValueError)  a verdict thresholds file or entry that cannot be used

`evaluation.datasets.DatasetError` (a bad dataset file) is registered as a
`LedgermemError` too, so the CLI reports it the same way.
"""

from __future__ import annotations

from ledger.errors import LedgermemError


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


class InvalidRunId(EvaluationError, ValueError):
    """A run id that is not a name: a path, `.`, `..`, empty, or characters outside `evaluation.names.RUN_ID`."""


class NotARunFolder(EvaluationError):
    """`--force` would delete a folder that is not a run folder directly inside the runs folder."""


class ReportInputError(EvaluationError):
    """A CSV file of the run cannot be read into a report."""


class MissingRunFile(ReportInputError, FileNotFoundError):
    """A CSV file the report reads is not in the run folder."""


class MissingColumn(ReportInputError, ValueError):
    """A CSV file lacks a column the report needs."""


class ThresholdError(EvaluationError, ValueError):
    """A verdict thresholds file (or one of its entries) that cannot be used (evaluation.verdicts)."""
