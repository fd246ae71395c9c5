"""The harness's events: a run's start and end, the visible answer to a probe, the baselines' memories.

Registered with the ledger (`ledger.events.register`) when this module is
imported, which `ledgermem.evaluation` does on import: whatever reads a run
the harness wrote (the runner, replay, metrics, the service, the CLI) has
imported the harness. The memory's own events, and the gold it answers to
(`episode_gold`, `probe_asked`, `probe_judged`), are in
`projections.events`; a new field of a run or an answer is a change here
and in the code that writes and reads it, nowhere else.

Names are past tense: something that happened, never a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ledgermem.ledger.events import Event, register
from ledgermem.projections.events import Fact

# --- run stream ---------------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    """A run began: everything needed to reproduce it."""

    event_type: ClassVar[str] = "run_started"
    IDS: ClassVar[str | None] = "systems"
    systems: tuple[str, ...]
    config: dict[str, Any]
    versions: dict[str, Any]
    dataset: dict[str, Any]


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(Event):
    """A run ended; `metrics` is what the live run measured, per system."""

    event_type: ClassVar[str] = "run_finished"
    metrics: dict[str, Any]


# --- episode stream: the answer to a probe ------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAnswered(Event):
    """The visible answer to a probe."""

    event_type: ClassVar[str] = "probe_answered"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    probe_id: str
    text: str
    tool_calls: int
    llm_calls: int


# --- episode stream: baseline memories -----------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineWritten(Event):
    """A baseline memory wrote one item: a naive-chain summary, or a new rolling summary."""

    event_type: ClassVar[str] = "baseline_written"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "facts")
    IDS: ClassVar[str | None] = "raw_ids"
    summary_id: str  # the item's id within its stream
    text: str
    facts: tuple[Fact, ...]
    raw_ids: tuple[str, ...]
    truncated: bool = False


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineDropped(Event):
    """A baseline memory deleted items (oldest past its budget, or folded into a rolling summary).

    The ledger keeps what they were; the system itself can no longer read them.
    """

    event_type: ClassVar[str] = "baseline_dropped"
    IDS: ClassVar[str | None] = "dropped"
    dropped: tuple[str, ...]
    reason: str


#: The harness's event classes.
HARNESS_EVENTS: tuple[type[Event], ...] = (RunStarted, RunFinished, ProbeAnswered, BaselineWritten, BaselineDropped)
