"""Errors of the ledger layer, and the root of every ledgermem error.

    LedgermemError                      root: catch this to catch everything we raise
    └── LedgerError
        ├── ConcurrencyConflict         wrong expected stream version, or a different event at that version
        ├── LedgerLocked                another process holds the ledger file for writing
        ├── LedgerNotFound              no ledger at that path / run id
        ├── LedgerCorrupt               the file cannot be read as a ledger at all
        ├── CheckpointError             a checkpoint cannot be signed or read (key, file, line named)
        ├── EventDecodeError            a stored row cannot become an event (names the seq)
        │   ├── UnknownEventType
        │   └── MalformedEvent
        └── InvalidEvent (also ValueError)  an event that may not be appended

Other packages define their own `errors.py` whose classes derive from
`LedgermemError`; only the CLI turns these into exit codes.
"""

from __future__ import annotations


class LedgermemError(Exception):
    """Root of every error ledgermem raises on purpose."""


class LedgerError(LedgermemError):
    """Something is wrong with a ledger or an append to it."""


class ConcurrencyConflict(LedgerError):
    """The stream is not at the version the writer expected."""

    def __init__(self, stream: str, expected: int, actual: int, detail: str = "") -> None:
        self.stream, self.expected, self.actual = stream, expected, actual
        msg = (
            f"stream {stream}: expected version {expected} but the ledger is at {actual}"
            f"{'; ' + detail if detail else ''}. Re-read the stream and decide again."
        )
        super().__init__(msg)


class LedgerLocked(LedgerError):
    """A second writer: DuckDB allows one writing process per file."""


class LedgerNotFound(LedgerError, FileNotFoundError):
    """There is no ledger where one was expected."""


class LedgerCorrupt(LedgerError):
    """The file exists but is not a readable ledger."""


class CheckpointError(LedgerError):
    """A signed checkpoint cannot be made or read: its key, its file or one of its lines."""


class EventDecodeError(LedgerError):
    """A stored row could not be turned back into an event."""

    def __init__(self, seq: int, message: str) -> None:
        self.seq = seq
        super().__init__(f"seq {seq}: {message}")

    def __reduce__(self) -> tuple[object, ...]:
        # the constructor's arguments are not `args`: rebuilt from the state, as sent from an audit's process
        return (type(self).__new__, (type(self),), {**self.__dict__, "args": self.args})


class UnknownEventType(EventDecodeError):
    """The row's event_type is not registered: no imported module declares it (`ledger.events.register`)."""

    def __init__(self, seq: int, event_type: str) -> None:
        self.event_type = event_type
        super().__init__(seq, f"event type {event_type!r} is not registered: import the package that declares "
                              "it before reading, or leave it out with read(event_types=...)")


class MalformedEvent(EventDecodeError):
    """The row's payload or typed columns do not fit its event type."""


class InvalidEvent(LedgerError, ValueError):
    """An event that may not be appended (wrong type, unserialisable field)."""
