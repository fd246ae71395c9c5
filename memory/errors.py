"""Errors of the application layer.

    LedgermemError (ledger.errors)
    └── MemoryError_
        ├── BackendError          an LLM backend failed and could not answer
        └── UnknownBackend (also ValueError)   no backend of that name

A failed tool call (unknown tool, unknown id) is a tool result the model
sees and the evaluation counts, not an exception.
"""

from __future__ import annotations

from ledger.errors import LedgermemError


class MemoryError_(LedgermemError):
    """The application layer could not do what was asked."""


class BackendError(MemoryError_):
    """An LLM backend could not produce a response."""


class UnknownBackend(MemoryError_, ValueError):
    """No backend of that name."""
