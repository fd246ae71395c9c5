"""Episode state and the pure `evolve(state, event) -> state`.

The state holds what the memory *is* after a prefix of an episode's
events: raw records, summaries with their status, index entries and the
window. Everything else (the current-values registry, the rendered chain)
is derived from it by functions, never stored beside it.

`evolve` never mutates its input: it returns a new state sharing the
untouched parts. It reads no clock, no configuration from outside (the
configuration is in `episode_started`) and performs no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from ledgermem.ledger.compat import assert_never
from ledgermem.ledger.keys import ERASED

from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    ContextRendered,
    EpisodeGold,
    EpisodeStarted,
    Fact,
    FactErased,
    FactExpired,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    LlmCalled,
    MergeRejected,
    OverrideRejected,
    PagedIn,
    ProbeAsked,
    ProbeJudged,
    RetentionApplied,
    SlotAliasSuspected,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    ToolCalled,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import EvolveError

Status = Literal["active", "indexed", "archived"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RawRecord:
    record_id: str
    turn: int
    occurred_at: str | None
    user: str
    agent: str
    source: str | None
    remember: bool = True
    blocks: tuple[dict[str, Any], ...] = ()  # multimodal block references (`ledger.blocks`)


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    summary_id: str
    turn: int
    text: str
    facts: tuple[Fact, ...]
    overrides: tuple[str, ...]
    raw_ids: tuple[str, ...]
    status: Status = "active"
    archive_reason: str | None = None
    superseded_by: tuple[str, ...] = ()
    index_id: str | None = None
    truncated: bool = False
    inferences: tuple[Fact, ...] = ()
    merged_from: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.status != "archived"

    @property
    def redacted(self) -> bool:
        return self.text == ERASED


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexEntry:
    index_id: str
    turn: int
    members: tuple[str, ...]
    title: str
    span: str
    level: int
    folded_into: str | None = None  # the higher-level title this one was folded under


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """An item of the pinned block: a hard constraint or an open loop, verbatim, never compressed."""

    pin_id: str
    kind: str
    turn: int
    text: str
    origin: str
    record_id: str | None
    summary_id: str | None
    anchors: tuple[str, ...]
    reinjected: int = 0  # how many times a survival check had to put it back

    @property
    def shown(self) -> bool:
        """Detected pins are watched; they are shown once a survival check re-injects them."""
        return self.origin != "detected" or self.reinjected > 0

    @property
    def redacted(self) -> bool:
        return self.text == ERASED


@dataclass(frozen=True, slots=True, kw_only=True)
class PagedItem:
    """An archived summary or raw record the agent paged back in: shown while the last turn is before `until_turn`."""

    item_id: str
    turn: int  # the turn it was paged in at
    until_turn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeState:
    config: MemoryConfig = field(default_factory=MemoryConfig)
    started: bool = False
    turn: int = 0
    raw: Mapping[str, RawRecord] = field(default_factory=dict)
    summaries: Mapping[str, Summary] = field(default_factory=dict)
    indexes: Mapping[str, IndexEntry] = field(default_factory=dict)
    window: tuple[str, ...] = ()
    pins: Mapping[str, Pin] = field(default_factory=dict)
    overrides_rejected: int = 0
    shredded_keys: tuple[str, ...] = ()
    #: Items paged back in, oldest page-in first; render-time working memory, not a projection table.
    paged_in: Mapping[str, PagedItem] = field(default_factory=dict)

    # -- derived views (pure functions of the state) ---------------------------

    def live_summaries(self) -> list[Summary]:
        return [s for s in self.summaries.values() if s.live]

    def active_chain(self) -> list[Summary]:
        """Summaries in the chain proper: active and not under an index title."""
        return [s for s in self.summaries.values() if s.status == "active"]

    def current_values(self) -> dict[str, tuple[str, str]]:
        """The registry: slot -> (value, summary_id) of the newest surviving observation of the slot.

        Without erasures this is always a live summary: an override is only
        applied when the overriding summary restates every slot the old one
        held the newest value of, so an archived summary never holds a
        newest value. After an erasure the slot falls back to the newest
        value that survives, wherever it now lives. Erased values never count.
        """
        registry: dict[str, tuple[str, str]] = {}
        for s in self.summaries.values():  # insertion order is creation order
            for slot, value in s.facts:
                if value != ERASED:
                    registry[slot] = (value, s.summary_id)
        return registry

    def _erased_slots(self) -> set[str]:
        return {k for s in self.summaries.values() for k, v in s.facts if v == ERASED}

    def erased_without_value(self) -> set[str]:
        """Slots every value of which was erased: the registry shows nothing for them."""
        return self._erased_slots() - self.current_values().keys()

    def newest_holders(self) -> set[str]:
        """Ids of the summaries that hold the newest value of at least one slot."""
        return {sid for _, sid in self.current_values().values()}

    def paged_in_now(self) -> list[PagedItem]:
        """The paged-in items the next prompt shows (before the budget), oldest page-in first."""
        return [p for p in self.paged_in.values() if self.turn < p.until_turn]

    def next_summary_id(self) -> str:
        return f"s{len(self.summaries) + 1:04d}"

    def next_index_id(self) -> str:
        return f"i{len(self.indexes) + 1:04d}"

    def next_pin_id(self) -> str:
        return f"p{len(self.pins) + 1:04d}"

    def top_indexes(self) -> list[IndexEntry]:
        """Titles shown at the top level: not folded under another title, and still covering something."""
        return [e for e in self.indexes.values() if e.folded_into is None and self.index_covers(e)]

    def index_covers(self, entry: IndexEntry) -> bool:
        """A title covers something while one of its members is still under it (a summary or a folded title)."""
        for m in entry.members:
            if m in self.indexes:
                if self.indexes[m].folded_into == entry.index_id and self.index_covers(self.indexes[m]):
                    return True
            elif self.summaries[m].status == "indexed" and self.summaries[m].index_id == entry.index_id:
                return True
        return False

    def index_summaries(self, entry: IndexEntry) -> list[Summary]:
        """The summaries under a title, through the titles folded under it."""
        out: list[Summary] = []
        for m in entry.members:
            if m in self.indexes:
                out += self.index_summaries(self.indexes[m])
            else:
                out.append(self.summaries[m])
        return out


def _changed(state: EpisodeState, **changes: Any) -> EpisodeState:
    """`dataclasses.replace` for the state, at half its cost: `evolve` makes one per event that changes anything.

    The fields are copied slot by slot; `EpisodeState` has no `__post_init__` to run (checked below).
    """
    if not changes.keys() <= _STATE_FIELDS:
        raise TypeError(f"EpisodeState has no field {sorted(changes.keys() - _STATE_FIELDS)[0]!r}")
    new = object.__new__(EpisodeState)
    for name, put, get in _STATE_SLOTS:
        put(new, changes[name] if name in changes else get(state))
    return new


_STATE_SLOTS = tuple(
    (name, getattr(EpisodeState, name).__set__, getattr(EpisodeState, name).__get__)
    for name in EpisodeState.__slots__
)
_STATE_FIELDS = frozenset(EpisodeState.__slots__)
assert not hasattr(EpisodeState, "__post_init__") and {f.name for f in fields(EpisodeState)} == set(
    EpisodeState.__slots__), "EpisodeState changed shape: `_changed` copies its slots"


def record_id_for(turn: int) -> str:
    return f"r{turn:04d}"


#: The memory's events (`projections.events`), each of which `evolve` matches.
EpisodeEvent = (
    EpisodeStarted
    | TurnRecorded
    | LlmCalled
    | SummaryCreated
    | SummaryOverridden
    | OverrideRejected
    | SummaryRejected
    | SummarySkipped
    | IndexCreated
    | IndexFolded
    | SummaryArchived
    | CapacityMerged
    | MergeRejected
    | CompactionChecked
    | ConstraintPinned
    | ConstraintReinjected
    | WindowEvicted
    | ContextRendered
    | EpisodeGold
    | ProbeAsked
    | ToolCalled
    | ProbeJudged
    | FactErased
    | KeyShredded
    | FactExpired
    | RetentionApplied
    | PagedIn
    | SlotAliasSuspected
)


def _need(state: EpisodeState, summary_id: str, event: Event) -> Summary:
    found = state.summaries.get(summary_id)
    if found is None:
        raise EvolveError(f"{type(event).event_type} at turn {event.turn} names unknown summary {summary_id!r}")
    return found


def evolve(state: EpisodeState, event: Event) -> EpisodeState:
    """The state after `event`. Pure.

    An episode stream also holds what other packages record in it (the
    harness's answers, a baseline's own memory): the memory does not change
    for those. Every event of the memory's own is matched below.
    """
    if not isinstance(event, EpisodeEvent):
        return state
    match event:
        case EpisodeStarted():
            return EpisodeState(config=MemoryConfig.from_dict(event.config), started=True)
        case TurnRecorded():
            rec = RawRecord(
                record_id=event.record_id, turn=event.turn, occurred_at=event.occurred_at,
                user=event.text, agent=event.agent, source=event.source, remember=event.remember,
                blocks=event.blocks,
            )
            window = (*state.window, rec.record_id) if event.remember else state.window
            paged = state.paged_in
            if paged and any(p.until_turn <= event.turn for p in paged.values()):  # expiry by turn, no clock
                paged = {k: p for k, p in paged.items() if p.until_turn > event.turn}
            return _changed(state, turn=event.turn, raw={**state.raw, rec.record_id: rec}, window=window,
                            paged_in=paged)
        case WindowEvicted():
            return _changed(state, window=tuple(r for r in state.window if r != event.record_id))
        case (
            LlmCalled() | ContextRendered() | ProbeAsked() | ProbeJudged() | ToolCalled() | EpisodeGold()
            | CapacityMerged() | MergeRejected() | CompactionChecked() | SummaryRejected() | SummarySkipped()
            | FactExpired() | RetentionApplied()
        ):
            # Recorded for audit and metrics; the memory itself does not change. (Cases are disjoint
            # classes, so their order is only the order they are tried in: the commonest first.)
            return state
        case SummaryCreated():
            new = Summary(
                summary_id=event.summary_id, turn=event.turn, text=event.text, facts=event.facts,
                overrides=event.overrides, raw_ids=event.raw_ids, truncated=event.truncated,
                inferences=event.inferences, merged_from=event.merged_from,
            )
            return _changed(state, summaries={**state.summaries, new.summary_id: new})
        case SummaryArchived():
            old = _need(state, event.summary_id, event)
            moved = replace(old, status="archived", archive_reason=event.reason, superseded_by=event.superseded_by,
                            index_id=None)
            return _changed(state, summaries={**state.summaries, old.summary_id: moved})
        case SummaryOverridden():
            old = _need(state, event.summary_id, event)
            moved = replace(
                old, status="archived", archive_reason="overridden", superseded_by=event.superseded_by
            )
            return _changed(state, summaries={**state.summaries, old.summary_id: moved})
        case OverrideRejected():
            return _changed(state, overrides_rejected=state.overrides_rejected + len(event.rejected))
        case IndexCreated():
            entry = IndexEntry(
                index_id=event.index_id, turn=event.turn, members=event.members, title=event.text, span=event.span,
                level=event.level,
            )
            summaries = dict(state.summaries)
            for sid in event.members:
                summaries[sid] = replace(_need(state, sid, event), status="indexed", index_id=event.index_id)
            return _changed(state, summaries=summaries, indexes={**state.indexes, entry.index_id: entry})
        case IndexFolded():
            entry = IndexEntry(
                index_id=event.index_id, turn=event.turn, members=event.members, title=event.text, span=event.span,
                level=event.level,
            )
            if event.index_id in state.indexes:
                raise EvolveError(f"index_folded at turn {event.turn} reuses index id {event.index_id!r}")
            indexes = dict(state.indexes)
            for iid in event.members:
                child = indexes.get(iid)
                if child is None:
                    raise EvolveError(f"index_folded at turn {event.turn} names unknown index {iid!r}")
                if child.folded_into is not None:
                    raise EvolveError(f"index_folded at turn {event.turn}: index {iid!r} is already folded "
                                      f"under {child.folded_into!r}")
                indexes[iid] = replace(child, folded_into=event.index_id)
            indexes[entry.index_id] = entry
            return _changed(state, indexes=indexes)
        case ConstraintPinned():
            pin = Pin(pin_id=event.pin_id, turn=event.turn, kind=event.kind, text=event.text, origin=event.origin,
                      record_id=event.record_id, summary_id=event.summary_id, anchors=event.anchors)
            return _changed(state, pins={**state.pins, pin.pin_id: pin})
        case ConstraintReinjected():
            known = state.pins.get(event.pin_id)
            if known is None:
                raise EvolveError(f"constraint_reinjected at turn {event.turn} names unknown pin {event.pin_id!r}")
            return _changed(state, pins={**state.pins, known.pin_id: replace(known, reinjected=known.reinjected + 1)})
        case FactErased():
            old = _need(state, event.summary_id, event)
            facts = tuple((k, ERASED if k == event.slot else v) for k, v in old.facts)
            return _changed(state, summaries={**state.summaries, old.summary_id: replace(old, facts=facts)})
        case KeyShredded():
            return _shred(state, event)
        case PagedIn():
            return _page_in(state, event)
        case SlotAliasSuspected():
            return state  # for analysts (`anomalies`, the report): the gate stored the slot as written
        case _:
            assert_never(event)


def _page_in(state: EpisodeState, event: PagedIn) -> EpisodeState:
    if (event.summary_id is None) == (event.record_id is None):
        raise EvolveError(f"paged_in at turn {event.turn} must name exactly one summary or raw record")
    item = event.item_id
    if item not in (state.summaries if event.summary_id is not None else state.raw):
        what = "summary" if event.summary_id is not None else "raw record"
        raise EvolveError(f"paged_in at turn {event.turn} names unknown {what} {item!r}")
    # Paging in again restarts the item's turns and makes it the newest page-in.
    paged = {k: p for k, p in state.paged_in.items() if k != item}
    paged[item] = PagedItem(item_id=item, turn=event.turn, until_turn=event.until_turn)
    return _changed(state, paged_in=paged)


def _shred(state: EpisodeState, event: KeyShredded) -> EpisodeState:
    """What the destroyed keys sealed is unreadable: the live state shows what a replay will show."""
    raw = dict(state.raw)
    for rid in event.records:
        if rid in raw:
            raw[rid] = replace(raw[rid], user=ERASED, agent=ERASED, blocks=tuple(
                {**b, "caption": ERASED, "source": None if b.get("source") is None else ERASED}
                for b in raw[rid].blocks))
    summaries = dict(state.summaries)
    for sid in event.summaries:
        s = _need(state, sid, event)
        summaries[sid] = replace(s, text=ERASED, facts=tuple((k, ERASED) for k, _ in s.facts),
                                 inferences=tuple((k, ERASED) for k, _ in s.inferences))
    indexes = {i: replace(e, title=ERASED) if i in event.indexes else e for i, e in state.indexes.items()}
    pins = {p: replace(x, text=ERASED, anchors=()) if p in event.pins else x for p, x in state.pins.items()}
    return _changed(state, raw=raw, summaries=summaries, indexes=indexes, pins=pins,
                    shredded_keys=(*state.shredded_keys, *event.key_ids))


def fold(events: Iterable[Event], state: EpisodeState | None = None) -> EpisodeState:
    s = state or EpisodeState()
    for e in events:
        s = evolve(s, e)
    return s
