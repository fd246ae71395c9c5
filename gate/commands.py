"""Commands: what the application asks the memory to do. Imperative names.

The application puts everything impure into the command: the time of the
turn, the model calls it made (the `llm_called` events it observed, as
they will be recorded). `decide` then needs nothing else.

A turn is planned before it is decided: `gate.plan.plan_turn` reads the
turn once (its cleaned words, whether it is remembered and admitted to the
summarizer) and `RecordTurn` carries that plan to `decide`, so the
application and the decision never judge the same turn twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledgermem.ledger.blocks import with_captions
from ledgermem.projections.events import LlmCalled
from ledgermem.projections.config import MemoryConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class StartEpisode:
    config: MemoryConfig
    lang: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One dialogue turn as it happened: what the user said, the visible reply, when, from which source."""

    turn: int
    user: str
    agent: str  # the visible reply
    occurred_at: str | None = None
    source: str | None = None
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
class TurnPlan:
    """A turn read once, before any model is called (`gate.plan.plan_turn`).

    `user` and `agent` are the turn's words with their captions, cleaned by
    the source's policy: what the admission rule, the summarizer, summary
    validation and pin detection read. `grounds` is both sides cleaned as
    one text, what a summary's claims must appear in to count as facts.
    `gated` says why the turn is not admitted to the summarizer ("" when it
    is). A plan depends on the episode's config only, which never changes
    after the start.
    """

    turn: Turn
    user: str
    agent: str
    grounds: str
    remember: bool
    gated: str

    @property
    def summarize(self) -> bool:
        """Whether the summarizer is asked for this turn's memory update."""
        return not self.gated


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordTurn:
    """Record one planned turn and its one memory update.

    The update comes from `summarizer` (the summarizer call that wrote it)
    or from `self_write` (the inner text of the answering call's
    `<MEMORY_UPDATE>` block, or `NONE`), never from both. `calls` are the
    turn's earlier model calls (the answering call, summarizer attempts
    that were retried), recorded in order before the update. Every call is
    the `llm_called` event the application observed, recorded unchanged.
    Every summarizer attempt is validated (`gate.validation`); one that
    fails is recorded as rejected, and when the update itself fails, no
    summary is written for the turn.
    """

    plan: TurnPlan
    summarizer: LlmCalled | None = None
    self_write: str | None = None
    calls: tuple[LlmCalled, ...] = ()
    #: The answering call's `<MEMORY_UPDATE>` block that summary validation refused (the summarizer then
    #: wrote the update): recorded as a `summary_rejected` event.
    rejected_self_write: str | None = None


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
