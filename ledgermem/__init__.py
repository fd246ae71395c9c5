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

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below are loaded on first use: `ledgermem --version` imports no database
    from ledgermem.ledger.errors import LedgermemError
    from ledgermem.ledger.store import Ledger, StreamKey
    from ledgermem.memory.answering import Answer
    from ledgermem.memory.memory import Memory, Reply
    from ledgermem.projections.config import MemoryConfig
    from ledgermem.temporal import Episode, as_of, blame, diff, fact_history

#: Each public name and the module that defines it.
_API = {
    "Answer": "ledgermem.memory.answering",
    "Episode": "ledgermem.temporal",
    "Ledger": "ledgermem.ledger.store",
    "LedgermemError": "ledgermem.ledger.errors",
    "Memory": "ledgermem.memory.memory",
    "MemoryConfig": "ledgermem.projections.config",
    "Reply": "ledgermem.memory.memory",
    "StreamKey": "ledgermem.ledger.store",
    "as_of": "ledgermem.temporal",
    "blame": "ledgermem.temporal",
    "diff": "ledgermem.temporal",
    "fact_history": "ledgermem.temporal",
}

__all__ = ["__version__", *sorted(_API)]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ledgermem")
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata on first use (importing metadata costs ~40 ms)
        globals()[name] = value = _version()
        return value
    if name in _API:
        value = getattr(_import_module(_API[name]), name)
        # Every event type the project writes is registered before anything is read through the API: a run's
        # ledger holds the harness's events (`run_started`, `probe_answered`...) beside the memory's.
        _import_module("ledgermem.evaluation.events")
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ledgermem' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API) | {"__version__"})
