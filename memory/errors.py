"""Errors of the application layer.

    LedgermemError (ledger.errors)
    ├── MemoryError_
    │   ├── BackendError          an LLM backend failed and could not answer
    │   │   ├── LlmNotRecorded    a replayed run made a call the recorded run did not make
    │   │   └── NetworkDisabled (also ConnectionError)  a connection tried while the network is off
    │   ├── UnknownBackend (also ValueError)   no backend of that name
    │   ├── RunExists          a run with that id is already there (use --force or another id)
    │   ├── RunNotFound (also FileNotFoundError)  no run with that id or path: the one "no such run"
    │   ├── InvalidRunId (also ValueError)  a run id that is a path, not a name (memory.names)
    │   ├── NotARunFolder      --force aimed at a folder that is not a run folder inside the runs folder
    │   ├── SqlRefused (also PermissionError)  a query the SQL sandbox does not run (memory.sandbox)
    │   └── SqlError           a query the database refused (`sql`)
    └── ProjectionError (projections.errors)
        └── ConfigError (also ValueError)  a setting missing, unknown or malformed: the memory's
                                           own, a backend's (memory.settings) or the cache's (--redis)

`ConfigError` is defined once, in the lowest layer that raises it
(`projections.config` validates a `MemoryConfig`), and named here too.
A failed tool call (unknown tool, unknown id) is a tool result the model
sees and the evaluation counts, not an exception.
"""

from __future__ import annotations

from ledgermem.ledger.errors import LedgermemError
from ledgermem.projections.errors import ConfigError

__all__ = [
    "BackendError", "ConfigError", "InvalidRunId", "LlmNotRecorded", "MemoryError_", "NetworkDisabled", "NotARunFolder",
    "RunExists", "RunNotFound", "SqlError", "SqlRefused", "UnknownBackend",
]


class MemoryError_(LedgermemError):
    """The application layer could not do what was asked."""


class BackendError(MemoryError_):
    """An LLM backend could not produce a response."""


class LlmNotRecorded(BackendError):
    """A replayed run made a call the recorded run did not make."""


class NetworkDisabled(BackendError, ConnectionError):
    """A connection was attempted while the network is disabled."""


class UnknownBackend(MemoryError_, ValueError):
    """No backend of that name."""


# -- run storage: the runs folder, a run's name, its files and queries over them ---------------------


class RunExists(MemoryError_):
    """A run of that id already exists."""


class RunNotFound(MemoryError_, FileNotFoundError):
    """No run of that id or path."""


class InvalidRunId(MemoryError_, ValueError):
    """A run id that is not a name: a path, `.`, `..`, empty, or characters outside `memory.names.RUN_ID`."""


class NotARunFolder(MemoryError_):
    """`--force` would delete a folder that is not a run folder directly inside the runs folder."""


class SqlRefused(MemoryError_, PermissionError):
    """A query on a run that is not one read-only statement, or that reaches outside the run's files."""


class SqlError(MemoryError_):
    """A query the database refused."""
