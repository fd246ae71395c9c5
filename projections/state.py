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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar, get_args

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
_T = TypeVar("_T")


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


def _slot_writer(cls: type[Any], names: tuple[str, ...], *, copied: bool) -> Callable[..., Any]:
    """A function that makes a `cls` by writing its slots, as `__init__` or `dataclasses.replace` would.

    Its arguments are the values of `names`, in that order; with `copied`,
    a first argument is the instance every other field is copied from, and
    without it `names` must be every field. A frozen dataclass's own
    `__init__` sets each field through `object.__setattr__` and `replace`
    gathers its fields first: `evolve` makes one state per event that changes
    anything, and this costs a fraction of either. Only for a slotted dataclass
    with no `__post_init__` (checked here), whose fields are its slots.
    """
    slots: tuple[str, ...] = cls.__slots__
    if hasattr(cls, "__post_init__") or {f.name for f in fields(cls)} != set(slots):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass without __post_init__: build it with __init__")
    unknown = sorted(set(names) - set(slots))
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    if not copied and set(names) != set(slots):
        raise TypeError(f"{cls.__name__} needs every field: {sorted(set(slots) - set(names))} missing")
    # Arguments `v_<field>` (and `src`), globals `g_...`, one local `obj`: no field name can make two collide.
    params = ", ".join([*(["src"] if copied else []), *(f"v_{n}" for n in names)])
    name = f"{'copy' if copied else 'new'}_{cls.__name__}"  # what a profile shows
    lines = [f"def {name}({params}):", "    obj = g_new(g_cls)"]
    lines += [f"    g_put_{n}(obj, v_{n})" if n in names else f"    g_put_{n}(obj, src.{n})" for n in slots]
    lines.append("    return obj")
    scope: dict[str, Any] = {"g_new": object.__new__, "g_cls": cls}
    scope.update({f"g_put_{n}": getattr(cls, n).__set__ for n in slots})
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the class's own slot names, as dataclasses does
    made: Callable[..., Any] = scope[name]
    return made


#: `_replaced`'s writers per class and changed fields (in the order given), made on first use.
_COPIERS: dict[tuple[type[Any], tuple[str, ...]], Callable[..., Any]] = {}


def _replaced(obj: _T, **changes: Any) -> _T:
    """`dataclasses.replace` for the state and its parts (slotted, frozen), at a fraction of its cost."""
    key = (type(obj), tuple(changes))
    copy = _COPIERS.get(key)
    if copy is None:
        copy = _COPIERS.setdefault(key, _slot_writer(key[0], key[1], copied=True))
    made: _T = copy(obj, *changes.values())
    return made


#: A new state with some fields changed: `evolve` makes one per event that changes anything.
_changed = _replaced


_RAW_FIELDS = ("record_id", "turn", "occurred_at", "user", "agent", "source", "remember", "blocks")
_new_raw_record: Callable[..., RawRecord] = _slot_writer(RawRecord, _RAW_FIELDS, copied=False)
# The copies the two events of every turn make, written once (no keyword arguments gathered per event).
_after_turn: Callable[..., EpisodeState] = _slot_writer(EpisodeState, ("turn", "raw", "window", "paged_in"),
                                                        copied=True)
_after_eviction: Callable[..., EpisodeState] = _slot_writer(EpisodeState, ("window",), copied=True)


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
    for those. Every event of the memory's own has its step in `_STEPS`,
    found by the event's class (a subclass takes its base's step).
    """
    step = _STEPS.get(type(event))
    if step is None:
        step = step_of(type(event))
    return step(state, event)


def step_of(kind: type[Event]) -> Callable[[EpisodeState, Any], EpisodeState]:
    """The function `evolve` applies to an event of class `kind`: `evolve(s, e) == step_of(type(e))(s, e)`.

    Its own step for one of the memory's events, its nearest base's for a
    subclass of one, and for an event of another package one that returns
    the state unchanged. Pure, as `evolve` is.
    """
    found = _STEPS.get(kind)
    if found is not None:
        return found
    for base in kind.__mro__:
        found = _STEPS.get(base)
        if found is not None:
            return found
    return _unchanged


def _unchanged(state: EpisodeState, event: Event) -> EpisodeState:
    """Recorded for audit and metrics (or by another package); the memory itself does not change."""
    return state


def changes_nothing(kind: type[Event]) -> bool:
    """Whether `evolve` returns the state it is given for every event of class `kind`."""
    return step_of(kind) is _unchanged


def _started(state: EpisodeState, event: EpisodeStarted) -> EpisodeState:
    return EpisodeState(config=MemoryConfig.from_dict(event.config), started=True)


def _raw_record_of(event: TurnRecorded) -> RawRecord:
    return _new_raw_record(event.record_id, event.turn, event.occurred_at, event.text, event.agent, event.source,
                           event.remember, event.blocks)


def _expires_page_in(state: EpisodeState, turn: int) -> bool:
    """Whether a turn recorded at `turn` ends an item's page-in (expiry by turn, no clock)."""
    paged = state.paged_in
    return bool(paged) and any(p.until_turn <= turn for p in paged.values())


def _turn_recorded(state: EpisodeState, event: TurnRecorded) -> EpisodeState:
    rid = event.record_id
    window = (*state.window, rid) if event.remember else state.window
    paged = state.paged_in
    if _expires_page_in(state, event.turn):
        paged = {k: p for k, p in paged.items() if p.until_turn > event.turn}
    return _after_turn(state, event.turn, {**state.raw, rid: _raw_record_of(event)}, window, paged)


def _window_evicted(state: EpisodeState, event: WindowEvicted) -> EpisodeState:
    window, rid = state.window, event.record_id
    if window and window[0] == rid and rid not in window[1:]:
        return _after_eviction(state, window[1:])  # the oldest leaves: the commonest eviction, in one slice
    return _after_eviction(state, tuple(r for r in window if r != rid))


class TurnDraft:
    """Turns recorded and records evicted, applied in place to a copy of a state's raw records and window.

    `evolve` makes a new state per event (a copy of the raw records per
    turn). A fold that needs the state only between runs of these two
    events (`Projector.replay`, a rebuild) applies a run here, in a dict
    and a list of its own, and makes the state once at its end (`settle`):
    the same state `evolve` gives event by event (`_turn_recorded`,
    `_window_evicted`; the projector's tests compare them on every
    sequence). A turn that ends a page-in is left to `evolve` (`record`
    returns None). `evolve` itself stays pure; the draft's dict and list
    are nobody else's until `settle` gives them to the new state.
    """

    __slots__ = ("base", "turn", "raw", "window")

    def __init__(self, base: EpisodeState) -> None:
        self.base = base
        self.turn = base.turn
        self.raw: dict[str, RawRecord] = dict(base.raw)
        self.window: list[str] = list(base.window)

    def record(self, event: TurnRecorded) -> RawRecord | None:
        """Apply a turn recorded and return its raw record; None (nothing applied) if it ends a page-in."""
        paged = self.base.paged_in
        if paged and any(p.until_turn <= event.turn for p in paged.values()):  # as `_expires_page_in`
            return None
        rec = self.raw[event.record_id] = _new_raw_record(
            event.record_id, event.turn, event.occurred_at, event.text, event.agent, event.source, event.remember,
            event.blocks)  # as `_raw_record_of`
        if event.remember:
            self.window.append(event.record_id)
        self.turn = event.turn
        return rec

    def evict(self, record_id: str) -> None:
        window = self.window
        if window and window[0] == record_id and record_id not in window[1:]:
            del window[0]
        else:
            window[:] = [r for r in window if r != record_id]

    def settle(self) -> EpisodeState:
        """The state after the draft's events; the draft is spent (its dict now belongs to the state)."""
        return _after_turn(self.base, self.turn, self.raw, tuple(self.window), self.base.paged_in)


def _summary_created(state: EpisodeState, event: SummaryCreated) -> EpisodeState:
    new = Summary(
        summary_id=event.summary_id, turn=event.turn, text=event.text, facts=event.facts,
        overrides=event.overrides, raw_ids=event.raw_ids, truncated=event.truncated,
        inferences=event.inferences, merged_from=event.merged_from,
    )
    return _changed(state, summaries={**state.summaries, new.summary_id: new})


def _summary_archived(state: EpisodeState, event: SummaryArchived) -> EpisodeState:
    old = _need(state, event.summary_id, event)
    moved = _replaced(old, status="archived", archive_reason=event.reason, superseded_by=event.superseded_by,
                    index_id=None)
    return _changed(state, summaries={**state.summaries, old.summary_id: moved})


def _summary_overridden(state: EpisodeState, event: SummaryOverridden) -> EpisodeState:
    old = _need(state, event.summary_id, event)
    moved = _replaced(old, status="archived", archive_reason="overridden", superseded_by=event.superseded_by)
    return _changed(state, summaries={**state.summaries, old.summary_id: moved})


def _override_rejected(state: EpisodeState, event: OverrideRejected) -> EpisodeState:
    return _changed(state, overrides_rejected=state.overrides_rejected + len(event.rejected))


def _index_created(state: EpisodeState, event: IndexCreated) -> EpisodeState:
    entry = IndexEntry(
        index_id=event.index_id, turn=event.turn, members=event.members, title=event.text, span=event.span,
        level=event.level,
    )
    summaries = dict(state.summaries)
    for sid in event.members:
        summaries[sid] = _replaced(_need(state, sid, event), status="indexed", index_id=event.index_id)
    return _changed(state, summaries=summaries, indexes={**state.indexes, entry.index_id: entry})


def _index_folded(state: EpisodeState, event: IndexFolded) -> EpisodeState:
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
        indexes[iid] = _replaced(child, folded_into=event.index_id)
    indexes[entry.index_id] = entry
    return _changed(state, indexes=indexes)


def _constraint_pinned(state: EpisodeState, event: ConstraintPinned) -> EpisodeState:
    pin = Pin(pin_id=event.pin_id, turn=event.turn, kind=event.kind, text=event.text, origin=event.origin,
              record_id=event.record_id, summary_id=event.summary_id, anchors=event.anchors)
    return _changed(state, pins={**state.pins, pin.pin_id: pin})


def _constraint_reinjected(state: EpisodeState, event: ConstraintReinjected) -> EpisodeState:
    known = state.pins.get(event.pin_id)
    if known is None:
        raise EvolveError(f"constraint_reinjected at turn {event.turn} names unknown pin {event.pin_id!r}")
    return _changed(state, pins={**state.pins, known.pin_id: _replaced(known, reinjected=known.reinjected + 1)})


def _fact_erased(state: EpisodeState, event: FactErased) -> EpisodeState:
    old = _need(state, event.summary_id, event)
    facts = tuple((k, ERASED if k == event.slot else v) for k, v in old.facts)
    return _changed(state, summaries={**state.summaries, old.summary_id: _replaced(old, facts=facts)})


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
            raw[rid] = _replaced(raw[rid], user=ERASED, agent=ERASED, blocks=tuple(
                {**b, "caption": ERASED, "source": None if b.get("source") is None else ERASED}
                for b in raw[rid].blocks))
    summaries = dict(state.summaries)
    for sid in event.summaries:
        s = _need(state, sid, event)
        summaries[sid] = _replaced(s, text=ERASED, facts=tuple((k, ERASED) for k, _ in s.facts),
                                 inferences=tuple((k, ERASED) for k, _ in s.inferences))
    indexes = {i: _replaced(e, title=ERASED) if i in event.indexes else e for i, e in state.indexes.items()}
    pins = {p: _replaced(x, text=ERASED, anchors=()) if p in event.pins else x for p, x in state.pins.items()}
    return _changed(state, raw=raw, summaries=summaries, indexes=indexes, pins=pins,
                    shredded_keys=(*state.shredded_keys, *event.key_ids))


def fold(events: Iterable[Event], state: EpisodeState | None = None) -> EpisodeState:
    s = state or EpisodeState()
    for e in events:
        s = evolve(s, e)
    return s


#: The step of each of the memory's events (`EpisodeEvent`, every one of them: checked below).
_STEPS: dict[type[Event], Callable[[EpisodeState, Any], EpisodeState]] = {
    EpisodeStarted: _started,
    TurnRecorded: _turn_recorded,
    WindowEvicted: _window_evicted,
    SummaryCreated: _summary_created,
    SummaryArchived: _summary_archived,
    SummaryOverridden: _summary_overridden,
    OverrideRejected: _override_rejected,
    IndexCreated: _index_created,
    IndexFolded: _index_folded,
    ConstraintPinned: _constraint_pinned,
    ConstraintReinjected: _constraint_reinjected,
    FactErased: _fact_erased,
    KeyShredded: _shred,
    PagedIn: _page_in,
    # Recorded for audit and metrics; the memory itself does not change.
    LlmCalled: _unchanged, ContextRendered: _unchanged, ProbeAsked: _unchanged, ProbeJudged: _unchanged,
    ToolCalled: _unchanged, EpisodeGold: _unchanged, CapacityMerged: _unchanged, MergeRejected: _unchanged,
    CompactionChecked: _unchanged, SummaryRejected: _unchanged, SummarySkipped: _unchanged,
    FactExpired: _unchanged, RetentionApplied: _unchanged,
    SlotAliasSuspected: _unchanged,  # for analysts (`anomalies`, the report): the gate stored the slot as written
}


def _check_steps(steps: Mapping[type[Event], object]) -> None:
    """`evolve` has a step for every class of `EpisodeEvent` and for no other (checked on import)."""
    odd = sorted(c.__name__ for c in steps.keys() ^ set(get_args(EpisodeEvent)))
    if odd:
        raise TypeError(f"evolve's steps and EpisodeEvent differ in {odd}: add the step, or the class to EpisodeEvent")


_check_steps(_STEPS)
