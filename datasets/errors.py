"""Errors of the datasets: a file that is missing or malformed, named by file, record and field.

    LedgermemError (ledger.errors)
    └── DatasetError (also ValueError)   a dataset file that is missing or malformed
        └── PhrasingError                a phrasing corpus file that is malformed
"""

from __future__ import annotations

from ledgermem.ledger.errors import LedgermemError


class DatasetError(LedgermemError, ValueError):
    """A seed file is missing or malformed; the message is one line."""


class PhrasingError(DatasetError):
    """A corpus file is malformed; the message names the file, family and frame."""
