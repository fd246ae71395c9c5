"""Commands: what the application asks the memory to do. Imperative names.

The application puts everything impure into the command: the time of the
turn, the LLM's response and its accounting. `decide` then needs nothing
else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledgermem.ledger.blocks import with_captions
from ledgermem.projections.config import MemoryConfig


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
    attempts: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StartEpisode:
    config: MemoryConfig
    lang: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordTurn:
    """Record one turn and its one memory update.

    The update comes from `summarizer` (the response of a summarizer call)
    or from `self_write` (the inner text of the answering call's
    `<MEMORY_UPDATE>` block, or `NONE`), never from both. `calls` are the
    turn's earlier model calls (the answering call, summarizer attempts
    that were retried), recorded in order before the update. Every
    summarizer attempt is validated (`gate.validation`); one that fails is
    recorded as rejected, and when the update itself fails, no summary is
    written for the turn.
    """

    turn: int
    user: str
    agent: str  # the visible reply
    occurred_at: str | None = None
    source: str | None = None
    summarizer: LlmCall | None = None
    self_write: str | None = None
    calls: tuple[LlmCall, ...] = ()
    #: The answering call's `<MEMORY_UPDATE>` block that summary validation refused (the summarizer then
    #: wrote the update): recorded as a `summary_rejected` event.
    rejected_self_write: str | None = None
    #: Multimodal block references (`ledger.blocks`); their bytes go to the ledger's blob table, not here.
    blocks: tuple[dict[str, Any], ...] = ()

    @property
    def seen_user(self) -> str:
        """The user's text as the window and the summarizer see it: with its blocks' captions."""
        return with_captions(self.user, self.blocks)

    @property
    def seen_agent(self) -> str:
        return with_captions(self.agent, self.blocks, "agent")



@dataclass(frozen=True, slots=True, kw_only=True)
class PinConstraint:
    """Declare a hard constraint or an open loop: it joins the pinned block, verbatim, never compressed."""

    kind: str  # "constraint" | "open_loop"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PageIn:
    """Bring an archived summary or a raw record back into the prompt for the next turns (the `page_in` tool).

    `turn` is the turn it is paged in at: the last recorded turn, or the turn
    being answered when the agent pages in while answering it (its events
    are recorded with that turn's).
    """

    item_id: str
    turn: int
