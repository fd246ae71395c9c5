"""The append-only event ledger: schema, store, hash chain. Imports no sibling package."""

from ledger.errors import (
    ConcurrencyConflict,
    LedgerCorrupt,
    LedgerError,
    LedgerLocked,
    LedgermemError,
    LedgerNotFound,
)
from ledger.store import Ledger, RecordedEvent, StreamKey, VerifyReport

__all__ = [
    "ConcurrencyConflict",
    "Ledger",
    "LedgerCorrupt",
    "LedgerError",
    "LedgerLocked",
    "LedgerNotFound",
    "LedgermemError",
    "RecordedEvent",
    "StreamKey",
    "VerifyReport",
]
