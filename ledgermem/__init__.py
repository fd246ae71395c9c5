"""ledgermem: an auditable, event-sourced three-layer memory for LLM agents.

The public API: what an application or a notebook needs without knowing the
package layout. Everything else is importable from its package
(`ledgermem.ledger`, `ledgermem.projections`, `ledgermem.temporal`,
`ledgermem.gate`, `ledgermem.memory`, `ledgermem.datasets`,
`ledgermem.evaluation`, `ledgermem.service`, `ledgermem.cli`) and may change
between versions; see docs/architecture.md for what each holds.

    >>> from ledgermem import Ledger, Memory, MemoryConfig, StreamKey
"""

from __future__ import annotations

from importlib import metadata as _metadata

from ledgermem.ledger.errors import LedgermemError
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.answering import Answer
from ledgermem.memory.memory import Memory, Reply
from ledgermem.projections.config import MemoryConfig
from ledgermem.temporal import Episode, as_of, blame, diff, fact_history

try:
    __version__ = _metadata.version("ledgermem")
except _metadata.PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Answer", "Episode", "Ledger", "LedgermemError", "Memory", "MemoryConfig", "Reply", "StreamKey",
    "__version__", "as_of", "blame", "diff", "fact_history",
]
