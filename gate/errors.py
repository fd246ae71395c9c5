"""Errors of the gate layer: commands that cannot be decided at all.

    LedgermemError (ledger.errors)
    └── GateError
        └── CommandRejected (also ValueError)   an impossible command: names the command and why

A rejection the evaluation must count (a hallucinated override id) is not an
error but an event, `override_rejected`.
"""

from __future__ import annotations

from ledger.errors import LedgermemError


class GateError(LedgermemError):
    """A decision could not be made."""


class CommandRejected(GateError, ValueError):
    """The command is impossible in this state."""
