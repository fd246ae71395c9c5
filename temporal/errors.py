"""Errors of the temporal layer.

    LedgermemError (ledger.errors)
    └── TemporalError (also ValueError)   a question that cannot be asked of this run
"""

from __future__ import annotations

from ledgermem.ledger.errors import LedgermemError


class TemporalError(LedgermemError, ValueError):
    """A temporal query could not be answered as asked."""
