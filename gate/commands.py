"""Commands: what the application asks the memory to do. Imperative names.

The application puts everything impure into the command: the time of the
turn, the LLM's response and its accounting. `decide` then needs nothing
else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.config import MemoryConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmCall:
    """A model call that already happened, as the application observed it."""

    purpose: str
    backend: str
    model: str
    prompt_hash: str
    response: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float | None = None
    retries: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StartEpisode:
    config: MemoryConfig
    lang: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordTurn:
    turn: int
    user: str
    agent: str
    occurred_at: str | None = None
    source: str | None = None
    summarizer: LlmCall | None = None

