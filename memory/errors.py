"""Errors of the application layer.

    LedgermemError (ledger.errors)
    └── MemoryError_
        ├── BackendError          an LLM backend failed and could not answer
        └── UnknownTool (also KeyError-like lookups are reported as tool results, not raised)
"""

from __future__ import annotations

from ledger.errors import LedgermemError


class MemoryError_(LedgermemError):
    """The application layer could not do what was asked."""


class BackendError(MemoryError_):
    """An LLM backend could not produce a response."""


class UnknownBackend(MemoryError_, ValueError):
    """No backend of that name."""
