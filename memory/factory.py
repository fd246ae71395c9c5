"""Backends by name: the one module that knows every backend class (so no backend module imports another)."""

from __future__ import annotations

from ledgermem.memory.backends import Backend
from ledgermem.memory.errors import UnknownBackend
from ledgermem.memory.heuristic import HeuristicBackend


def make_backend(name: str, *, tokenizer: str) -> Backend:
    """A backend by name. `heuristic` is offline and deterministic."""
    if name == "heuristic":
        return HeuristicBackend(tokenizer=tokenizer)
    raise UnknownBackend(f"unknown LLM backend {name!r}; this version offers: heuristic")
