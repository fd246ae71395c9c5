"""SCD-2 read models: every version of every row, with the interval it was valid.

`snapshot(state)` is the current row of every key of every table (pure).
`Projector` folds events through `evolve` and versions what each event
changed: a key that appears opens a version, a key whose attributes change
closes its version and opens the next, a key that disappears is closed.
The keys it compares are read off the event (`touched`; for the two events
of every turn, by the projector itself, which also applies those two in
place, `TurnDraft`), so its history is the diff of consecutive snapshots at
the cost of the rows that changed. History is only ever closed, never
edited.

Vocabulary (dbt snapshots): `version_id` = hash(key, seq), `valid_from_seq`,
`valid_to_seq` (NULL while current), and the same interval in event time,
`valid_from_turn`, `valid_to_turn`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledgermem.projections.events import (
    ConstraintPinned,
    ConstraintReinjected,
    FactErased,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    OverrideRejected,
    PagedIn,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.schema import SqlType, arrow_type
from ledgermem.ledger.store import RecordedEvent, StreamKey
from ledgermem.projections.errors import EvolveError
from ledgermem.projections.state import (
    EpisodeEvent, EpisodeState, IndexEntry, Pin, RawRecord, Summary, TurnDraft, changes_nothing, step_of,
)

if TYPE_CHECKING:
    import pyarrow as pa

Key = tuple[Any, ...]
Attrs = tuple[Any, ...]

_FACTS = "STRUCT(slot VARCHAR, value VARCHAR)[]"
_STR_LIST = "VARCHAR[]"


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    key: tuple[tuple[str, SqlType], ...]
    attrs: tuple[tuple[str, SqlType], ...]


STREAM_COLS = tuple((name, "VARCHAR") for name in StreamKey.COLUMNS)
SCD_COLS = (
    ("version_id", "VARCHAR"),
    ("valid_from_seq", "BIGINT"),
    ("valid_to_seq", "BIGINT"),
    ("valid_from_turn", "BIGINT"),
    ("valid_to_turn", "BIGINT"),
)

TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "summary_versions",
        (("summary_id", "VARCHAR"),),
        (
            ("created_turn", "BIGINT"), ("text", "VARCHAR"), ("facts", _FACTS),
            ("overrides", _STR_LIST), ("raw_ids", _STR_LIST), ("status", "VARCHAR"),
            ("archive_reason", "VARCHAR"), ("superseded_by", _STR_LIST), ("index_id", "VARCHAR"),
            ("inferences", _FACTS), ("merged_from", _STR_LIST),
        ),
    ),
    TableSpec(
        "fact_versions",
        (("slot", "VARCHAR"),),
        (("value", "VARCHAR"), ("summary_id", "VARCHAR"), ("erased", "BOOLEAN")),
    ),
    TableSpec(
        "index_versions",
        (("index_id", "VARCHAR"),),
        (
            ("created_turn", "BIGINT"), ("title", "VARCHAR"), ("members", _STR_LIST),
            ("level", "BIGINT"), ("live_members", "BIGINT"), ("folded_into", "VARCHAR"),
        ),
    ),
    TableSpec(
        "raw_records",
        (("record_id", "VARCHAR"),),
        (
            ("turn", "BIGINT"), ("occurred_at", "VARCHAR"), ("user_text", "VARCHAR"),
            ("agent_text", "VARCHAR"), ("source", "VARCHAR"), ("remember", "BOOLEAN"),
        ),
    ),
    TableSpec("window_versions", (("record_id", "VARCHAR"),), (("turn", "BIGINT"),)),
    TableSpec(
        "pin_versions",
        (("pin_id", "VARCHAR"),),
        (
            ("kind", "VARCHAR"), ("created_turn", "BIGINT"), ("text", "VARCHAR"), ("origin", "VARCHAR"),
            ("record_id", "VARCHAR"), ("summary_id", "VARCHAR"), ("reinjected", "BIGINT"),
            ("shown", "BOOLEAN"),
        ),
    ),
)
TABLE_NAMES = tuple(t.name for t in TABLES)


def columns(spec: TableSpec) -> tuple[tuple[str, SqlType], ...]:
    """(name, DuckDB type) of every column of the table, in order."""
    return (*STREAM_COLS, *spec.key, *spec.attrs, *SCD_COLS)


def column_names(spec: TableSpec) -> list[str]:
    return [name for name, _ in columns(spec)]


def arrow_schema(spec: TableSpec) -> pa.Schema:
    """The table's columns as Arrow (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([(name, arrow_type(t)) for name, t in columns(spec)])


def order_keys(spec: TableSpec) -> list[str]:
    """The order of a table's rows (stream, key, then versions in seq order), in the fold and in SQL."""
    return [*(n for n, _ in STREAM_COLS), *(n for n, _ in spec.key), "valid_from_seq"]


def _summary_attrs(s: Summary) -> Attrs:
    return (
        s.turn, s.text, tuple(s.facts), s.overrides, s.raw_ids, s.status,
        s.archive_reason, s.superseded_by, s.index_id, tuple(s.inferences), s.merged_from,
    )


def _index_attrs(state: EpisodeState, e: IndexEntry) -> Attrs:
    # A title's live members are the summaries still indexed under it, through the titles folded under it.
    live = sum(s.status == "indexed" for s in state.index_summaries(e))
    return (e.turn, e.title, e.members, e.level, live, e.folded_into)


def _raw_attrs(r: RawRecord) -> Attrs:
    return (r.turn, r.occurred_at, r.user, r.agent, r.source, r.remember)


def _pin_attrs(p: Pin) -> Attrs:
    return (p.kind, p.turn, p.text, p.origin, p.record_id, p.summary_id, p.reinjected, p.shown)


def snapshot_table(state: EpisodeState, table: str) -> dict[Key, Attrs]:
    """Current row of every key of one table, as plain tuples. Pure."""
    match table:
        case "summary_versions":
            return {(s.summary_id,): _summary_attrs(s) for s in state.summaries.values()}
        case "fact_versions":
            facts: dict[Key, Attrs] = {
                (slot,): (value, sid, False) for slot, (value, sid) in state.current_values().items()
            }
            facts.update({(slot,): (None, None, True) for slot in state.erased_without_value()})
            return facts
        case "index_versions":
            return {(e.index_id,): _index_attrs(state, e) for e in state.indexes.values()}
        case "raw_records":
            return {(r.record_id,): _raw_attrs(r) for r in state.raw.values()}
        case "window_versions":
            return {(rid,): (state.raw[rid].turn,) for rid in state.window}
        case "pin_versions":
            return {(p.pin_id,): _pin_attrs(p) for p in state.pins.values()}
    raise KeyError(table)


def snapshot(state: EpisodeState) -> dict[str, dict[Key, Attrs]]:
    """Current row of every key of every table, as plain tuples. Pure."""
    return {name: snapshot_table(state, name) for name in TABLE_NAMES}


def _newest_first(summaries: Mapping[str, Summary]) -> Iterator[Summary]:
    values = summaries.values()
    if type(values) is _DICT_VALUES:  # a dict's values are reversible; any other mapping's are listed first
        return reversed(values)  # type: ignore[call-overload, no-any-return]
    return reversed(list(values))


_DICT_VALUES: type[Any] = type({}.values())


def _fact_row(state: EpisodeState, slot: str) -> Attrs | None:
    """One slot's registry row, as `snapshot` has it: the newest surviving value, else erased, else none."""
    erased = False
    for s in _newest_first(state.summaries):
        for k, v in reversed(s.facts):
            if k == slot:
                if v != ERASED:
                    return (v, s.summary_id, False)
                erased = True
    return (None, None, True) if erased else None


def _summary_row(state: EpisodeState, k: Any) -> Attrs | None:
    s = state.summaries.get(k)
    return None if s is None else _summary_attrs(s)


def _index_row(state: EpisodeState, k: Any) -> Attrs | None:
    e = state.indexes.get(k)
    return None if e is None else _index_attrs(state, e)


def _raw_row(state: EpisodeState, k: Any) -> Attrs | None:
    r = state.raw.get(k)
    return None if r is None else _raw_attrs(r)


def _window_row(state: EpisodeState, k: Any) -> Attrs | None:
    return (state.raw[k].turn,) if k in state.window else None


def _pin_row(state: EpisodeState, k: Any) -> Attrs | None:
    p = state.pins.get(k)
    return None if p is None else _pin_attrs(p)


_ROW_OF: dict[str, Callable[[EpisodeState, Any], Attrs | None]] = {
    "summary_versions": _summary_row, "fact_versions": _fact_row, "index_versions": _index_row,
    "raw_records": _raw_row, "window_versions": _window_row, "pin_versions": _pin_row,
}


def row_of(state: EpisodeState, table: str, key: Key) -> Attrs | None:
    """The current row of one key of one table (None: no such row); `snapshot(state)[table].get(key)`."""
    (k,) = key
    return _ROW_OF[table](state, k)


#: Keys an event may have changed, per table; `EVERY_KEY` compares the table's whole snapshot.
Touched = dict[str, Iterable[Key] | None]
EVERY_KEY = None


def _slots(*summaries: Summary | None) -> list[Key]:
    return [(slot,) for s in summaries if s is not None for slot, _ in s.facts]


def touched(before: EpisodeState, after: EpisodeState, event: EpisodeEvent) -> Touched:
    """The rows `event` can have changed, read off the event: the projector compares only these.

    Everything else is shared, unchanged, between `before` and `after`
    (`evolve` copies only what it changes). A title's live-member count
    depends on the status of every summary under it, so an event that
    moves a summary into an index, or an indexed one out, compares every
    title; an event this table does not know compares every table.
    """
    match event:
        case TurnRecorded():
            rid = [(event.record_id,)]
            return {"raw_records": rid, "window_versions": rid}
        case WindowEvicted():
            return {"window_versions": [(event.record_id,)]}
        case SummaryCreated():
            old = before.summaries.get(event.summary_id)
            out: Touched = {"summary_versions": [(event.summary_id,)],
                            "fact_versions": _slots(old, after.summaries[event.summary_id])}
            if old is not None:  # an id written again may leave the titles it was under
                out["index_versions"] = EVERY_KEY
            return out
        case SummaryArchived() | SummaryOverridden():
            # Only a summary that was indexed counts in a title's live members: archiving any other changes
            # no title.
            if before.summaries[event.summary_id].status != "indexed":
                return {"summary_versions": [(event.summary_id,)]}
            return {"summary_versions": [(event.summary_id,)], "index_versions": EVERY_KEY}
        case IndexCreated():
            return {"summary_versions": [(m,) for m in event.members], "index_versions": EVERY_KEY}
        case IndexFolded():
            # The new title and the titles folded under it (their `folded_into`); no summary changes status.
            return {"index_versions": [(event.index_id,), *((m,) for m in event.members)]}
        case ConstraintPinned() | ConstraintReinjected():
            return {"pin_versions": [(event.pin_id,)]}
        case FactErased():
            return {"summary_versions": [(event.summary_id,)], "fact_versions": [(event.slot,)]}
        case KeyShredded():
            return {
                "raw_records": [(r,) for r in event.records],
                "summary_versions": [(s,) for s in event.summaries],
                "fact_versions": _slots(*(after.summaries.get(s) for s in event.summaries)),
                "index_versions": [(i,) for i in event.indexes],
                "pin_versions": [(p,) for p in event.pins],
            }
        case OverrideRejected() | PagedIn():
            return {}  # a counter and render-time working memory: no table holds them
        case _:
            return {name: EVERY_KEY for name in TABLE_NAMES}


def version_id(stream: tuple[str, str, str], table: str, key: Key, seq: int) -> str:
    material = "\x1f".join([*stream, table, *map(str, key), str(seq)])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:20]


@dataclass(slots=True)
class Delta:
    """What one event changed: versions opened, and versions closed (id, seq, turn)."""

    opened: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    closed: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)

    def merge(self, other: Delta) -> None:
        for t, rows in other.opened.items():
            self.opened.setdefault(t, []).extend(rows)
        for t, closes in other.closed.items():
            self.closed.setdefault(t, []).extend(closes)

    def __bool__(self) -> bool:
        return bool(self.opened or self.closed)


class _Table:
    """One table's open versions in a projector, and what makes the row of its next version."""

    __slots__ = ("name", "current", "rows", "prefix", "make", "history")

    def __init__(self, name: str, stream: tuple[str, str, str], history: list[dict[str, Any]] | None) -> None:
        self.name = name
        self.current: dict[Key, Attrs] = {}  # per key: the open version's attributes, as `snapshot` has them
        self.rows: dict[Key, dict[str, Any]] = {}  # per key: the open version's row
        self.prefix = "\x1f".join([*stream, name, ""])  # `version_id`'s material before the key, made once
        self.make = _ROW_MAKERS[name]
        self.history = history


class Projector:
    """Folds one stream's events into its state and its SCD-2 versions.

    Each event costs what it changes. An event that changes nothing is only
    counted. The two events of every turn (a turn recorded, a record leaving
    the window) version their rows straight from the event
    (`_version_turn`); every other event versions the rows `touched` names.
    Either way a row is compared with its open version only (a version
    closes and the next opens when the row differs). The result is the diff
    of consecutive snapshots (`snapshot`), which the tests check at every
    seq. `apply` and `apply_all` make a new state per event, through
    `evolve`, so the state can be read between any two events; `replay`
    applies runs of turns and evictions in place to a `TurnDraft` and makes
    the state only when another kind of event comes and when it returns.
    """

    def __init__(self, stream: tuple[str, str, str], *, keep_history: bool = False) -> None:
        self.stream = stream
        self.state = EpisodeState()
        self.last_seq = 0
        self.history: dict[str, list[dict[str, Any]]] | None = {t: [] for t in TABLE_NAMES} if keep_history else None
        self._tables = {t: _Table(t, stream, None if self.history is None else self.history[t]) for t in TABLE_NAMES}
        self._raw, self._window = self._tables["raw_records"], self._tables["window_versions"]

    def apply(self, seq: int, event: EpisodeEvent) -> Delta:
        delta = Delta()
        self._apply(seq, event, delta)
        return delta

    def apply_all(self, recorded: Iterable[RecordedEvent]) -> Delta:
        total = Delta()
        for r in recorded:
            self._apply(r.seq, r.event, total)  # type: ignore[arg-type]
        return total

    def replay(self, recorded: Iterable[RecordedEvent]) -> None:
        """`apply_all` for a fold that keeps its history and needs no delta (a rebuild).

        Turns and evictions go to a draft of the state (`TurnDraft`), which
        becomes the state before any other event that changes it, and when
        the replay returns (or fails): `state` is then `evolve`'s, as after
        `apply_all`.
        """
        draft: TurnDraft | None = None
        try:
            for r in recorded:
                seq, event = r.seq, r.event
                plan = _PLANS.get(type(event))
                if plan is None:
                    plan = _plan_of(type(event))
                step, versions, in_place = plan
                if in_place is not None:
                    if draft is None:
                        draft = TurnDraft(self.state)
                    if in_place(self, draft, seq, event):
                        self.last_seq = seq
                        continue
                if step is None:  # `evolve` changes nothing for this class
                    self.last_seq = seq
                    continue
                if draft is not None:
                    self.state, draft = draft.settle(), None
                self._step(seq, event, step, versions, None)  # type: ignore[arg-type]
        finally:
            if draft is not None:
                self.state = draft.settle()

    def _apply(self, seq: int, event: EpisodeEvent, delta: Delta | None) -> None:
        plan = _PLANS.get(type(event))
        if plan is None:
            plan = _plan_of(type(event))
        step, versions, _ = plan
        if step is None:  # `evolve` changes nothing for this class
            self.last_seq = seq
            return
        self._step(seq, event, step, versions, delta)

    def _step(self, seq: int, event: EpisodeEvent, step: _Step, versions: _Versions, delta: Delta | None) -> None:
        before = self.state
        try:
            state = step(before, event)  # `evolve(before, event)`, its step found once per event class
        except EvolveError as exc:
            raise EvolveError(f"seq {seq}: {exc}") from exc
        self.last_seq = seq
        if state is not before:
            self.state = state
            versions(self, before, event, seq, delta)

    def _versions_touched(self, before: EpisodeState, event: EpisodeEvent, seq: int, delta: Delta | None) -> None:
        """Version the rows `touched` names (a whole table where it names `EVERY_KEY`)."""
        state, turn, put = self.state, event.turn, self._put
        for table, keys in touched(before, state, event).items():
            t = self._tables[table]
            if keys is EVERY_KEY:
                new = snapshot_table(state, table)
                for key in [k for k in t.current if k not in new]:
                    put(t, key, None, seq, turn, delta)
                for key, attrs in new.items():
                    put(t, key, attrs, seq, turn, delta)
            else:
                row = _ROW_OF[table]
                for key in keys:
                    put(t, key, row(state, key[0]), seq, turn, delta)

    def _versions_of_turn(self, before: EpisodeState, event: TurnRecorded, seq: int, delta: Delta | None) -> None:
        rid, state = event.record_id, self.state
        self._version_turn(state.raw[rid], event.remember or rid in state.window, seq, event.turn, delta)

    def _versions_of_eviction(self, before: EpisodeState, event: WindowEvicted, seq: int, delta: Delta | None) -> None:
        """An eviction changes one window row (`touched` says the same)."""
        rid = event.record_id
        self._put(self._window, (rid,), _window_row(self.state, rid), seq, event.turn, delta)

    def _record_turn(self, draft: TurnDraft, seq: int, event: TurnRecorded) -> bool:
        """A turn recorded, in place; False (nothing done) for a turn that ends a page-in: `evolve` takes it."""
        rec = draft.record(event)
        if rec is None:
            return False
        self._version_turn(rec, event.remember or event.record_id in draft.window, seq, event.turn, None)
        return True

    def _evict(self, draft: TurnDraft, seq: int, event: WindowEvicted) -> bool:
        """A record leaving the window, in place: no longer in the window, its row closes."""
        draft.evict(event.record_id)
        self._put(self._window, (event.record_id,), None, seq, event.turn, None)
        return True

    def _version_turn(self, rec: RawRecord, in_window: bool, seq: int, turn: int, delta: Delta | None) -> None:
        """A turn recorded changes its raw record and its window row, nothing else (`touched` says the same)."""
        rid, raw, window = rec.record_id, self._raw, self._window
        key = (rid,)
        attrs = _raw_attrs(rec)
        if not in_window or key in raw.current or key in window.current:  # not remembered, or an id written again
            self._put(raw, key, attrs, seq, turn, delta)
            self._put(window, key, (rec.turn,) if in_window else None, seq, turn, delta)
            return
        # The common case, `_put` written out for its two new keys: a new raw record, a new window row.
        stream, tail = self.stream, f"{rid}\x1f{seq}"
        raw_row = raw.make(stream, key, attrs, _sha256(f"{raw.prefix}{tail}".encode("utf-8")).hexdigest()[:20],
                           seq, turn)
        window_attrs = (rec.turn,)
        window_row = window.make(stream, key, window_attrs,
                                 _sha256(f"{window.prefix}{tail}".encode("utf-8")).hexdigest()[:20], seq, turn)
        raw.current[key], raw.rows[key] = attrs, raw_row
        window.current[key], window.rows[key] = window_attrs, window_row
        if delta is not None:
            delta.opened.setdefault(raw.name, []).append(raw_row)
            delta.opened.setdefault(window.name, []).append(window_row)
        if raw.history is not None and window.history is not None:
            raw.history.append(raw_row)
            window.history.append(window_row)

    def _put(self, t: _Table, key: Key, attrs: Attrs | None, seq: int, turn: int, delta: Delta | None) -> None:
        """Make `attrs` the row of `key` from `seq` on (None: no row): close its open version and open the next,
        unless the row is unchanged."""
        current = t.current
        if key in current:
            if current[key] == attrs:
                return
            closing = t.rows.pop(key)
            closing["valid_to_seq"], closing["valid_to_turn"] = seq, turn
            del current[key]
            if delta is not None:
                delta.closed.setdefault(t.name, []).append((closing["version_id"], seq, turn))
        if attrs is None:
            return
        if len(key) == 1:
            material = f"{t.prefix}{key[0]}\x1f{seq}"
        else:
            material = "\x1f".join([*self.stream, t.name, *map(str, key), str(seq)])
        row = t.make(self.stream, key, attrs, _sha256(material.encode("utf-8")).hexdigest()[:20], seq, turn)
        current[key], t.rows[key] = attrs, row
        if delta is not None:
            delta.opened.setdefault(t.name, []).append(row)
        if t.history is not None:
            t.history.append(row)


_Step = Callable[[EpisodeState, Any], EpisodeState]
_Versions = Callable[[Projector, EpisodeState, Any, int, "Delta | None"], None]
_InPlace = Callable[[Projector, TurnDraft, int, Any], bool]
#: Events whose versions come straight from the event (any other's from `touched`), and how `replay` applies
#: them in place.
_OWN: dict[type[EpisodeEvent], tuple[_Versions, _InPlace]] = {
    TurnRecorded: (Projector._versions_of_turn, Projector._record_turn),
    WindowEvicted: (Projector._versions_of_eviction, Projector._evict),
}
#: Per event class: its step (`state.step_of`; None: it changes nothing), how its versions are found, and how
#: `replay` applies it in place (None: through its step); filled on first use.
_PLANS: dict[type[Any], tuple[_Step | None, _Versions, _InPlace | None]] = {}
_sha256 = hashlib.sha256


def _plan_of(kind: type[Any]) -> tuple[_Step | None, _Versions, _InPlace | None]:
    versions, in_place = _OWN.get(kind, (Projector._versions_touched, None))
    return _PLANS.setdefault(kind, (None if changes_nothing(kind) else step_of(kind), versions, in_place))


def _cell(name: str, kind: SqlType, value: str) -> str:
    """How a state value (the expression `value`) becomes its cell: facts as slot/value structs, tuples
    as lists, the rest as they are; decided once per column, written into the row maker."""
    if name in ("facts", "inferences"):
        return f"[{{'slot': _k, 'value': _v}} for _k, _v in {value}]"
    return f"(list({value}) if isinstance({value}, tuple) else {value})" if kind.endswith("[]") else value


def _row_maker(spec: TableSpec) -> Callable[[tuple[str, str, str], Key, Attrs, str, int, int], dict[str, Any]]:
    """The function that makes one new version's row of `spec`'s table, as one dict display in the schema's
    column order (less than half the cost of `dict(zip(columns, values))`); written once per table from its spec."""
    cells = [*(f"s[{i}]" for i in range(len(STREAM_COLS))), *(f"k[{i}]" for i in range(len(spec.key)))]
    cells += [_cell(name, kind, f"a[{i}]") for i, (name, kind) in enumerate(spec.attrs)]
    cells += ["vid", "seq", "None", "turn", "None"]
    names = column_names(spec)
    assert len(names) == len(cells) and names[-len(SCD_COLS):] == [n for n, _ in SCD_COLS]
    body = ", ".join(f"{name!r}: {cell}" for name, cell in zip(names, cells))
    scope: dict[str, Any] = {}
    name = f"{spec.name}_row"  # what a profile shows
    exec(f"def {name}(s, k, a, vid, seq, turn):\n    return {{{body}}}\n", scope)  # noqa: S102 - from the spec
    made: Callable[[tuple[str, str, str], Key, Attrs, str, int, int], dict[str, Any]] = scope[name]
    return made


_ROW_MAKERS = {spec.name: _row_maker(spec) for spec in TABLES}
