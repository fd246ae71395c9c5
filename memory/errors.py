"""Errors of the application layer.

    LedgermemError (ledger.errors)
    ├── MemoryError_
    │   ├── BackendError          an LLM backend failed and could not answer
    │   │   ├── LlmNotRecorded    a replayed run made a call the recorded run did not make
    │   │   └── NetworkDisabled (also ConnectionError)  a connection tried while the network is off
    │   └── UnknownBackend (also ValueError)   no backend of that name
    └── ProjectionError (projections.errors)
        └── ConfigError (also ValueError)  a setting missing, unknown or malformed: the memory's
                                           own, a backend's (memory.settings) or the cache's (--redis)

`ConfigError` is defined once, in the lowest layer that raises it
(`projections.config` validates a `MemoryConfig`), and named here too.
A failed tool call (unknown tool, unknown id) is a tool result the model
sees and the evaluation counts, not an exception.
"""

from __future__ import annotations

from ledger.errors import LedgermemError
from projections.errors import ConfigError

__all__ = ["BackendError", "ConfigError", "LlmNotRecorded", "MemoryError_", "NetworkDisabled", "UnknownBackend"]


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
