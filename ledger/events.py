"""The event catalogue: the single source of truth for what the ledger stores.

Every event is a small frozen record. Fields whose names are in
`TYPED_COLUMNS` are stored in typed columns that SQL can filter on; the
field named by a class's `IDS` goes to the `ids` list column; every other
field goes into the canonical JSON `payload`. The Arrow schema of the
`events` table is derived from these classes in `ledger/schema.py`.

Names are past tense: something that happened, never a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

#: Event fields that become typed columns of the `events` table, in column order.
TYPED_COLUMNS: tuple[str, ...] = (
    "turn",
    "occurred_at",
    "summary_id",
    "record_id",
    "index_id",
    "probe_id",
    "slot",
    "value",
    "ids",
    "text",
    "latency_ms",
)

Fact = tuple[str, str]  # (slot, value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of all events. `turn` is event time: the dialogue turn it belongs to."""

    event_type: ClassVar[str] = ""
    schema_version: ClassVar[int] = 1
    IDS: ClassVar[str | None] = None
    #: Fields holding a data subject's values: sealed when the stream holds personal data.
    PERSONAL: ClassVar[tuple[str, ...]] = ()

    turn: int = 0
    occurred_at: str | None = None


# --- run stream ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    """A run began: everything needed to reproduce it."""

    event_type: ClassVar[str] = "run_started"
    IDS: ClassVar[str | None] = "systems"
    systems: tuple[str, ...]
    config: dict[str, Any]
    versions: dict[str, Any]
    dataset: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(Event):
    """A run ended; `metrics` is what the live run measured, per system."""

    event_type: ClassVar[str] = "run_finished"
    metrics: dict[str, Any]


# --- episode stream: memory ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeStarted(Event):
    """An episode's memory was created with this configuration.

    The configuration lives in the log so that `evolve` and `decide` never
    need one from outside.
    """

    event_type: ClassVar[str] = "episode_started"
    config: dict[str, Any]
    lang: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecorded(Event):
    """A raw record: one dialogue turn, complete, with its original time."""

    event_type: ClassVar[str] = "turn_recorded"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "agent")
    record_id: str
    text: str  # the user's message
    agent: str
    source: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmCalled(Event):
    """One model call and its full response."""

    event_type: ClassVar[str] = "llm_called"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    purpose: str
    backend: str
    model: str
    prompt_hash: str
    text: str  # the full response
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float | None = None
    retries: int = 0
    error: str | None = None
    probe_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryCreated(Event):
    """A summary entered the active chain.

    `written_by` says whose text it is: the separate summarizer call, or the
    answering call itself (`self`, a `<MEMORY_UPDATE>` block). Ledgers
    written before the field existed decode with the default.
    """

    event_type: ClassVar[str] = "summary_created"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "facts")
    IDS: ClassVar[str | None] = "raw_ids"
    summary_id: str
    text: str
    facts: tuple[Fact, ...]
    overrides: tuple[str, ...]
    raw_ids: tuple[str, ...]
    truncated: bool = False
    written_by: str = "summarizer"


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryOverridden(Event):
    """An older summary left the chain for the archive, replaced by a newer one."""

    event_type: ClassVar[str] = "summary_overridden"
    IDS: ClassVar[str | None] = "superseded_by"
    summary_id: str
    superseded_by: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OverrideRejected(Event):
    """An override the summarizer asked for that was not applied."""

    event_type: ClassVar[str] = "override_rejected"
    IDS: ClassVar[str | None] = "rejected"
    summary_id: str | None  # the summary that asked for it (None if none was written)
    rejected: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexCreated(Event):
    """A title was put over a group of older summaries (capacity, `index` strategy)."""

    event_type: ClassVar[str] = "index_created"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    IDS: ClassVar[str | None] = "members"
    index_id: str
    members: tuple[str, ...]
    text: str  # the title as written
    span: str = ""  # "turn 5-8": the part of the title that never goes stale
    level: int = 1
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowEvicted(Event):
    """A raw record left the sliding window (it stays in the raw records)."""

    event_type: ClassVar[str] = "window_evicted"
    record_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRendered(Event):
    """The manifest of one prompt: which ids went in, and what each part cost."""

    event_type: ClassVar[str] = "context_rendered"
    IDS: ClassVar[str | None] = "item_ids"
    purpose: str
    item_ids: tuple[str, ...]
    parts: dict[str, Any]
    budget: int
    tokens: int
    probe_id: str | None = None


# --- episode stream: baseline memories ------------------------------------------


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


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineDropped(Event):
    """A baseline memory deleted items (oldest past its budget, or folded into a rolling summary).

    The ledger keeps what they were; the system itself can no longer read them.
    """

    event_type: ClassVar[str] = "baseline_dropped"
    IDS: ClassVar[str | None] = "dropped"
    dropped: tuple[str, ...]
    reason: str


# --- episode stream: evaluation -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeGold(Event):
    """The dataset's annotations for this episode: planted facts and evidence the metrics judge against."""

    event_type: ClassVar[str] = "episode_gold"
    PERSONAL: ClassVar[tuple[str, ...]] = ("facts",)
    facts: tuple[Fact, ...]  # (slot, value) as planted, in dialogue order
    fact_turns: tuple[int, ...]  # the turn each planted fact was stated in
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAsked(Event):
    """A question put to the memory after ingestion, with its gold answer."""

    event_type: ClassVar[str] = "probe_asked"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "gold")
    probe_id: str
    probe_type: str
    slot: str | None
    text: str  # the question
    gold: str
    evidence: tuple[str, ...] = ()  # record ids the dataset names as evidence, if any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCalled(Event):
    """An exact-id tool call made while answering a probe."""

    event_type: ClassVar[str] = "tool_called"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "args")
    probe_id: str
    tool: str
    args: dict[str, str]
    ok: bool
    text: str  # the result shown to the model, or the error
    parsed: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAnswered(Event):
    """The visible answer to a probe."""

    event_type: ClassVar[str] = "probe_answered"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    probe_id: str
    text: str
    tool_calls: int
    llm_calls: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeJudged(Event):
    """Whether the answer matched the gold value, and how that was decided."""

    event_type: ClassVar[str] = "probe_judged"
    PERSONAL: ClassVar[tuple[str, ...]] = ("value",)
    probe_id: str
    correct: bool
    method: str
    value: str  # the gold value judged against


# --- episode stream: erasure ---------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FactErased(Event):
    """One fact observation was erased (the value itself is never written here)."""

    event_type: ClassVar[str] = "fact_erased"
    summary_id: str
    slot: str
    legal_basis: str
    collateral: bool = False  # erased because it shared a summary with an erased fact


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyShredded(Event):
    """Keys were destroyed; everything sealed under them is unreadable from now on."""

    event_type: ClassVar[str] = "key_shredded"
    IDS: ClassVar[str | None] = "key_ids"
    key_ids: tuple[str, ...]
    legal_basis: str
    request: str
    records: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()


EVENT_TYPES: dict[str, type[Event]] = {
    cls.event_type: cls
    for cls in (
        RunStarted,
        RunFinished,
        EpisodeStarted,
        TurnRecorded,
        LlmCalled,
        SummaryCreated,
        SummaryOverridden,
        OverrideRejected,
        IndexCreated,
        WindowEvicted,
        ContextRendered,
        BaselineWritten,
        BaselineDropped,
        EpisodeGold,
        ProbeAsked,
        ToolCalled,
        ProbeAnswered,
        ProbeJudged,
        FactErased,
        KeyShredded,
    )
}
