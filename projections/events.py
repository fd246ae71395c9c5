"""The memory's events: what the three-layer memory records, and the episode's gold it answers to.

Registered with the ledger (`ledger.events.register`) when this module is
imported, which `ledgermem.projections` does on import: every reader that
folds or decides on these events imports `projections` already, so the
fold, the gate and the memory shell can decode a stream without knowing the
harness. They live here, at the layer that folds them, because `evolve`
matches on them and `projections` may import nothing but the ledger; the
gate, which decides them, and the memory shell, which records them, import
them from here.

`episode_gold`, `probe_asked` and `probe_judged` are written by whoever
drives the memory (the harness, the service) but hold the data subject's
values that the gate's erasure policy seals under the turn that stated them
(`gate.erasure.gold_keys`) and that invariant I4 compares extraction with
(`gate.extraction`): the memory's own code reads them, so they are declared
with its events. The run's own events, answers and the baselines' memories
are the harness's (`evaluation.events`).

Names are past tense: something that happened, never a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ledgermem.ledger.events import Event, register

Fact = tuple[str, str]  # (slot, value)


# --- episode stream: memory --------------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeStarted(Event):
    """An episode's memory was created with this configuration.

    The configuration lives in the log so that `evolve` and `decide` never
    need one from outside.
    """

    event_type: ClassVar[str] = "episode_started"
    config: dict[str, Any]
    lang: str | None = None


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecorded(Event):
    """A raw record: one dialogue turn, complete, with its original time."""

    event_type: ClassVar[str] = "turn_recorded"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "agent", "blocks")
    #: Fields left out of the payload while they hold their default, so events written before them hash alike.
    SPARSE: ClassVar[tuple[str, ...]] = ("blocks",)
    record_id: str
    text: str  # the user's message
    agent: str
    source: str | None = None
    #: False when a source policy says this source's turns are not remembered: kept as a raw record,
    #: never shown in the window, never summarised.
    remember: bool = True
    #: Why no summary was asked for this turn ("" when one was): the gate level's or the source policy's verdict.
    gated: str = ""
    #: Multimodal blocks (`ledger.blocks`): references {sha256, mime, size, source, caption, side}; the bytes are
    #: in the ledger's `blobs` table under their sha256. Caption and source are sealed with the turn's text.
    blocks: tuple[dict[str, Any], ...] = ()


@register
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
    # Each HTTP attempt of the call, in order: {"status", "error", "latency_ms"} (and "wait_s" before a retry);
    # empty for an offline backend. Ledgers written before the field existed decode with the default.
    attempts: tuple[dict[str, Any], ...] = ()


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryCreated(Event):
    """A summary entered the active chain.

    `written_by` says whose text it is: the separate summarizer call, or the
    answering call itself (`self`, a `<MEMORY_UPDATE>` block). Ledgers
    written before the field existed decode with the default.
    """

    event_type: ClassVar[str] = "summary_created"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "facts", "inferences")
    IDS: ClassVar[str | None] = "raw_ids"
    summary_id: str
    text: str
    facts: tuple[Fact, ...]
    overrides: tuple[str, ...]
    raw_ids: tuple[str, ...]
    truncated: bool = False
    written_by: str = "summarizer"
    #: Claims the summarizer made that the raw turn does not ground: kept, never rendered as authoritative.
    inferences: tuple[Fact, ...] = ()
    #: The summaries a capacity merge rewrote into this one (empty for a summary of a turn).
    merged_from: tuple[str, ...] = ()
    #: (as written, as stored) for each slot the gate stored under another name (`gate.attributes`).
    renamed_slots: tuple[tuple[str, str], ...] = ()


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryOverridden(Event):
    """An older summary left the chain for the archive, replaced by a newer one."""

    event_type: ClassVar[str] = "summary_overridden"
    IDS: ClassVar[str | None] = "superseded_by"
    summary_id: str
    superseded_by: tuple[str, ...]


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class OverrideRejected(Event):
    """An override the summarizer asked for that was not applied."""

    event_type: ClassVar[str] = "override_rejected"
    IDS: ClassVar[str | None] = "rejected"
    summary_id: str | None  # the summary that asked for it (None if none was written)
    rejected: tuple[str, ...]
    reason: str


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRejected(Event):
    """A memory update that did not pass summary validation (`gate/validation.py`); none of it was stored.

    `purpose`: `summarize` (a summarizer response) or `self_write` (a
    `<MEMORY_UPDATE>` block); `attempt` counts the turn's summarizer calls
    from 1 (0 for a self-write); `reasons` are the validation's codes. The
    response itself is in the `llm_called` event before it.
    """

    event_type: ClassVar[str] = "summary_rejected"
    IDS: ClassVar[str | None] = "reasons"
    purpose: str
    attempt: int
    reasons: tuple[str, ...]


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SummarySkipped(Event):
    """Every memory update of the turn was rejected: the raw record is all the memory keeps of it.

    The fallback after the specific retry; `attempts` counts the rejected
    updates and `reasons` joins their codes.
    """

    event_type: ClassVar[str] = "summary_skipped"
    IDS: ClassVar[str | None] = "reasons"
    record_id: str
    attempts: int
    reasons: tuple[str, ...]


@register
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


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFolded(Event):
    """Titles were folded under a higher-level title because the titles themselves passed their budget.

    `members` are index ids; the folded titles stay readable by id (`expand_index`).
    """

    event_type: ClassVar[str] = "index_folded"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text",)
    IDS: ClassVar[str | None] = "members"
    index_id: str
    members: tuple[str, ...]
    text: str
    span: str = ""
    level: int = 2
    tokens_before: int = 0
    tokens_after: int = 0


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryArchived(Event):
    """A summary left the chain for the archive for a reason other than an override (a capacity merge)."""

    event_type: ClassVar[str] = "summary_archived"
    IDS: ClassVar[str | None] = "superseded_by"
    summary_id: str
    reason: str
    superseded_by: tuple[str, ...] = ()


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityMerged(Event):
    """Capacity, `merge` strategy: early non-conflicting summaries were rewritten into `summary_id`."""

    event_type: ClassVar[str] = "capacity_merged"
    IDS: ClassVar[str | None] = "merged_from"
    summary_id: str
    merged_from: tuple[str, ...]
    tokens_before: int
    tokens_after: int


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class MergeRejected(Event):
    """A capacity merge that was not applied (too small a gain, or nothing could be merged), counted."""

    event_type: ClassVar[str] = "merge_rejected"
    IDS: ClassVar[str | None] = "merged_from"
    merged_from: tuple[str, ...]
    reason: str
    tokens_before: int = 0
    tokens_after: int = 0


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionChecked(Event):
    """The report of one compaction pass: what it did, why it stopped, and the survival checks after it.

    `constraints_missing` lists the pins the rendered prompt no longer
    showed (each re-injected by a `constraint_reinjected` event);
    `open_loops_before`/`after` count the open loops the prompt showed
    before and after the pass. A drop is a red flag, not a feature.
    """

    event_type: ClassVar[str] = "compaction_checked"
    IDS: ClassVar[str | None] = "constraints_missing"
    strategy: str
    created: int  # titles, folds or merges applied
    rejected: int  # refused by the cost gate or the minimum gain
    stopped: str  # "under low water" | "per-turn cap" | "no token progress" | "no candidates" | ...
    tokens_before: int
    tokens_after: int
    constraints_checked: int
    constraints_missing: tuple[str, ...]
    open_loops_before: int
    open_loops_after: int


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ConstraintPinned(Event):
    """A hard constraint or an open loop joined the pinned block, which is never compressed.

    `origin`: `declared` (by the application), `summary` (the summarizer's
    CONSTRAINTS/OPEN section), `detected` (the lexical detector in the
    user's own words: watched, and shown once a survival check finds it
    missing from the prompt).
    """

    event_type: ClassVar[str] = "constraint_pinned"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "anchors")
    pin_id: str
    kind: str  # "constraint" | "open_loop"
    text: str  # verbatim
    origin: str
    record_id: str | None = None
    summary_id: str | None = None
    anchors: tuple[str, ...] = ()  # exact strings whose presence in the prompt shows the pin survived


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ConstraintReinjected(Event):
    """A survival check found a pin missing from the rendered prompt; it is shown verbatim from now on."""

    event_type: ClassVar[str] = "constraint_reinjected"
    pin_id: str
    reason: str


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class WindowEvicted(Event):
    """A raw record left the sliding window (it stays in the raw records)."""

    event_type: ClassVar[str] = "window_evicted"
    record_id: str


@register
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


@register
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


# --- episode stream: gold the memory answers to ------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeGold(Event):
    """The dataset's annotations for this episode: planted facts and evidence the metrics and I4 judge against.

    `evidence` lists the records the dataset names as holding an answer
    (LoCoMo evidence dia_ids, LongMemEval `has_answer` turns, a seed
    probe's `evidence`), mapped onto this episode's record ids; ledgers
    written before the field existed decode with none.
    """

    event_type: ClassVar[str] = "episode_gold"
    PERSONAL: ClassVar[tuple[str, ...]] = ("facts",)
    facts: tuple[Fact, ...]  # (slot, value) as planted, in dialogue order
    fact_turns: tuple[int, ...]  # the turn each planted fact was stated in
    source: str = ""
    evidence: tuple[str, ...] = ()  # record ids, in dialogue order


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAsked(Event):
    """A question put to the memory after ingestion, with its gold answer."""

    event_type: ClassVar[str] = "probe_asked"
    PERSONAL: ClassVar[tuple[str, ...]] = ("text", "gold", "poison")
    probe_id: str
    probe_type: str
    slot: str | None
    text: str  # the question
    gold: str
    evidence: tuple[str, ...] = ()  # record ids the dataset names as evidence, if any
    #: A poisoning probe's planted false value: the metrics count how often it surfaces and is written back.
    poison: str | None = None
    #: When the dataset says the question is asked (LongMemEval's question_date); the answer prompt says so.
    asked_at: str | None = None


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeJudged(Event):
    """Whether the answer matched the gold value, and how that was decided."""

    event_type: ClassVar[str] = "probe_judged"
    PERSONAL: ClassVar[tuple[str, ...]] = ("value",)
    probe_id: str
    correct: bool
    method: str
    value: str  # the gold value judged against


# --- episode stream: erasure -------------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class FactErased(Event):
    """One fact observation was erased (the value itself is never written here)."""

    event_type: ClassVar[str] = "fact_erased"
    summary_id: str
    slot: str
    legal_basis: str
    collateral: bool = False  # erased because it shared a summary with an erased fact


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class KeyShredded(Event):
    """Keys were destroyed; everything sealed under them is unreadable from now on."""

    event_type: ClassVar[str] = "key_shredded"
    IDS: ClassVar[str | None] = "key_ids"
    SHREDS_KEYS: ClassVar[bool] = True
    key_ids: tuple[str, ...]
    legal_basis: str
    request: str
    records: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()


# --- episode stream: retention -----------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class FactExpired(Event):
    """A fact expired under a retention policy (`rule`: fact_ttl or raw_turns); the erasure events follow it.

    Never the value: the slot, the summary, the policy and when the fact was stated and expired.
    """

    event_type: ClassVar[str] = "fact_expired"
    summary_id: str
    slot: str
    rule: str
    policy: dict[str, Any]
    stated_at: str | None
    applied_at: str


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionApplied(Event):
    """A retention policy was applied at `applied_at`: the turns it expired (each by its rule) and the keys shredded."""

    event_type: ClassVar[str] = "retention_applied"
    IDS: ClassVar[str | None] = "key_ids"
    policy: dict[str, Any]
    applied_at: str
    key_ids: tuple[str, ...]
    turns: tuple[int, ...]
    rules: tuple[str, ...]
    records: tuple[str, ...] = ()
    summaries: tuple[str, ...] = ()
    facts: int = 0
    kept_pinned: tuple[int, ...] = ()


# --- episode stream: page-in -------------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class PagedIn(Event):
    """An archived summary or a raw record was brought back into the prompt for the next turns (page-in).

    Exactly one of `summary_id` and `record_id` names the item. It is shown
    at its original turn, marked as paged in, in the prompts rendered while
    the stream's last turn is before `until_turn` (turn + the configured
    `page_in_turns`); `turn` is the turn it was paged in at. Paging in an
    item again restarts its turns.
    """

    event_type: ClassVar[str] = "paged_in"
    until_turn: int
    summary_id: str | None = None
    record_id: str | None = None

    @property
    def item_id(self) -> str:
        return self.summary_id or self.record_id or ""


# --- episode stream: slot names ----------------------------------------------------------


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class SlotAliasSuspected(Event):
    """A summary wrote a slot name the attribute table does not know that looks like one the episode has.

    Stored as written, never merged by the gate: `rule` says why it looks
    alike ("reordered", "contains", "generic affix"); a dataset's
    `attributes` mapping settles it.
    """

    event_type: ClassVar[str] = "slot_alias_suspected"
    summary_id: str
    slot: str  # the new name
    existing: str  # the slot the episode already had
    rule: str


#: The memory's event classes, in the order above: what `projections.state.evolve` folds.
MEMORY_EVENTS: tuple[type[Event], ...] = (
    EpisodeStarted,
    TurnRecorded,
    LlmCalled,
    SummaryCreated,
    SummaryOverridden,
    OverrideRejected,
    SummaryRejected,
    SummarySkipped,
    IndexCreated,
    IndexFolded,
    SummaryArchived,
    CapacityMerged,
    MergeRejected,
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    WindowEvicted,
    ContextRendered,
    ToolCalled,
    EpisodeGold,
    ProbeAsked,
    ProbeJudged,
    FactErased,
    KeyShredded,
    FactExpired,
    RetentionApplied,
    PagedIn,
    SlotAliasSuspected,
)
