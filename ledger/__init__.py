"""The append-only event ledger: schema, store, hash chain. Imports no sibling package."""

from ledgermem.ledger.errors import (
    ConcurrencyConflict,
    LedgerCorrupt,
    LedgerError,
    LedgerLocked,
    LedgermemError,
    LedgerNotFound,
)
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey, VerifyReport

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
