"""Errors of the gate layer: commands that cannot be decided at all.

    LedgermemError (ledger.errors)
    └── GateError
        ├── CommandRejected (also ValueError)   an impossible command: names the command and why
        │   └── NothingToErase                  an erasure whose target is not readable in this stream
        └── InvariantViolation (also AssertionError)   strict mode: an invariant failed after a commit

A rejection the evaluation must count (a hallucinated override id) is not an
error but an event, `override_rejected`.
"""

from __future__ import annotations

from ledgermem.ledger.errors import LedgermemError


class GateError(LedgermemError):
    """A decision could not be made."""


class CommandRejected(GateError, ValueError):
    """The command is impossible in this state."""


class NothingToErase(CommandRejected):
    """An erasure found nothing readable to erase in this stream (never there, or erased already)."""


class InvariantViolation(GateError, AssertionError):
    """Strict mode: an invariant failed right after a commit. Names the invariant, seq and ids."""

    def __init__(self, invariant: str, seq: int | None, ids: tuple[str, ...], message: str) -> None:
        self.invariant, self.seq, self.ids = invariant, seq, ids
        where = f" at seq {seq}" if seq is not None else ""
        super().__init__(f"{invariant} violated{where} ({', '.join(ids) or 'no ids'}): {message}")
