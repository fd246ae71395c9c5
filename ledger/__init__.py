"""The append-only event ledger: envelope, registry of event types, schema, store, hash chain.

Imports no sibling package: the event types are declared and registered by
the packages that record them (`ledger.events.register`).
"""

from ledgermem.ledger.errors import (
    ConcurrencyConflict,
    LedgerCorrupt,
    LedgerError,
    LedgerLocked,
    LedgermemError,
    LedgerNotFound,
)
from ledgermem.ledger.events import EVENT_TYPES, Event, event_class, register
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey, VerifyReport

__all__ = [
    "EVENT_TYPES",
    "ConcurrencyConflict",
    "Event",
    "Ledger",
    "LedgerCorrupt",
    "LedgerError",
    "LedgerLocked",
    "LedgerNotFound",
    "LedgermemError",
    "RecordedEvent",
    "StreamKey",
    "VerifyReport",
    "event_class",
    "register",
]
