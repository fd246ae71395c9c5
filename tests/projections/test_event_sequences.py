"""Arbitrary raw event sequences through `evolve`, the SCD-2 projector and the projection store.

Three families of sequences:

    valid     what `evolve` accepts and the memory could have written: ids tracked, EpisodeStarted
              first or absent, fresh summary/record/index/pin ids, overrides and archivals (capacity
              merges) that never leave a slot without any holder, folds over top-level titles, pins
              and re-injections of existing pins, turns that are not remembered, erasures that erase
              every fact of a shredded summary, shred the evidence of every summary citing an erased
              record, and redact the titles over it and the pins taken from it
    lenient   anything `evolve` accepts: a second EpisodeStarted mid-stream, colliding ids, overrides
              and archivals of archived or newest holders, folds of any titles (under a fresh id),
              pins written again, key_shredded without fact_erased, missing records, titles and pins
    invalid   a valid prefix, then an event naming a summary, title or pin that does not exist

A valid sequence folds, its SCD-2 history passes `check_scd2`, I1/I3/I5 hold, and the materialised
store equals the fold. For a lenient one the history is still exactly the fold as of every seq; only
the "no gap" rule of `check_scd2` may fail, when a key leaves the snapshot and comes back. An
invalid one raises `EvolveError` naming the id. Rows that cannot be decoded name their seq.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledgermem.gate.invariants import check_i1, check_i3, check_i5, check_scd2
from ledgermem.ledger.errors import LedgermemError, MalformedEvent, UnknownEventType
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    ContextRendered,
    EpisodeStarted,
    FactErased,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    LlmCalled,
    MergeRejected,
    OverrideRejected,
    PagedIn,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    ToolCalled,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import EvolveError
from ledgermem.projections.materialise import History, LiveProjection, ProjectionStore
from ledgermem.projections.scd2 import TABLES, Projector, snapshot
from ledgermem.projections.state import EpisodeEvent, EpisodeState, evolve, fold
from ledgermem.projections.tokens import ESTIMATOR

STREAM = StreamKey("run-seq", "three_layer", "ep-0")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, chain_budget=60, index_group_size=2).to_dict()
SLOTS = ("floor", "team", "city", "楼层")
VALUES = ("3F", "7F", "12", "north wing", "七楼")
MAX_EVENTS = 30
MISSING = "s9999"

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
facts_of = st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), max_size=3,
                    unique_by=lambda f: f[0]).map(tuple)


def recorded(events: Sequence[Event], first_seq: int = 1) -> list[RecordedEvent]:
    at = datetime(2024, 1, 1)
    return [
        RecordedEvent(first_seq + i, f"e{first_seq + i}", STREAM, first_seq + i, at, e, "", "")
        for i, e in enumerate(events)
    ]


# --- generators ------------------------------------------------------------------------------


class _Builder:
    """Appends events and keeps the folded state, so the next event can name what exists."""

    def __init__(self) -> None:
        self.events: list[EpisodeEvent] = []
        self.state = EpisodeState()
        self.turn = 0
        self.records = 0
        self.summaries = 0
        self.indexes = 0
        self.pins = 0
        self.erased = False

    def add(self, event: EpisodeEvent) -> None:
        self.state = evolve(self.state, event)
        self.events.append(event)

    def readable_records(self) -> list[str]:
        return sorted(r.record_id for r in self.state.raw.values() if r.user != ERASED)

    def overridable(self, state: EpisodeState | None = None) -> list[str]:
        """Live summaries whose archiving leaves every slot they hold with another live holder."""
        s = self.state if state is None else state
        out = []
        for old in s.summaries.values():
            if not old.live:
                continue
            safe = all(
                any(o.live and o.summary_id != old.summary_id and (k, v2) in o.facts and v2 != ERASED
                    for o in s.summaries.values() for _, v2 in o.facts)
                or any(k2 == k and v2 == ERASED for o in s.summaries.values() for k2, v2 in o.facts)
                for k, v in old.facts if v != ERASED
            )
            if safe:
                out.append(old.summary_id)
        return out

    def titles_over(self, summaries: set[str]) -> list[str]:
        """Every title over one of `summaries`, directly or through the titles folded under it."""
        found = {e.index_id for e in self.state.indexes.values() if set(e.members) & summaries}
        while True:
            more = {e.index_id for e in self.state.indexes.values() if set(e.members) & found} - found
            if not more:
                return sorted(found)
            found |= more

    def closure(self, chosen: set[str]) -> tuple[set[str], set[str]]:
        """Summaries to shred with `chosen`, and their records: every summary citing a shredded record goes too."""
        s = self.state
        summaries, records = set(chosen), set()
        while True:
            records = {r for sid in summaries for r in s.summaries[sid].raw_ids}
            more = {x.summary_id for x in s.summaries.values() if set(x.raw_ids) & records}
            if more <= summaries:
                return summaries, records
            summaries |= more


def _noop(draw: st.DrawFn, turn: int) -> EpisodeEvent:
    """Events recorded for audit only: the memory does not change."""
    kind = draw(st.sampled_from(["llm", "context", "tool", "merged", "merge rejected", "compaction",
                                 "summary rejected", "summary skipped"]))
    if kind == "summary rejected":
        return SummaryRejected(turn=turn, purpose=draw(st.sampled_from(["summarize", "self_write"])),
                               attempt=draw(st.integers(0, 3)), reasons=("markup", "unknown_id"))
    if kind == "summary skipped":
        return SummarySkipped(turn=turn, record_id=f"r{turn:04d}", attempts=2, reasons=("repetition",))
    if kind == "llm":
        return LlmCalled(turn=turn, purpose="summarize", backend="b", model="m", prompt_hash="h", text=draw(texts))
    if kind == "context":
        return ContextRendered(turn=turn, purpose="answer", item_ids=("r0001",), parts={}, budget=10, tokens=1)
    if kind == "merged":
        return CapacityMerged(turn=turn, summary_id="s0001", merged_from=("s0002",), tokens_before=9, tokens_after=5)
    if kind == "merge rejected":
        return MergeRejected(turn=turn, merged_from=("s0001", "s0002"), reason="minimum gain")
    if kind == "compaction":
        return CompactionChecked(turn=turn, strategy="index", created=0, rejected=0, stopped="no candidates",
                                 tokens_before=9, tokens_after=9, constraints_checked=1,
                                 constraints_missing=("p0001",), open_loops_before=0, open_loops_after=0)
    return ToolCalled(turn=turn, probe_id="p", tool="get_raw_record", args={"reference_id": "r0001"}, ok=False,
                      text=draw(texts))


@st.composite
def sequences(draw: st.DrawFn, *, family: str = "valid", erasure: bool = True) -> list[EpisodeEvent]:
    lenient = family == "lenient"
    b = _Builder()
    if draw(st.integers(0, 4)) > 0:  # EpisodeStarted first, or (sometimes) not at all
        b.add(EpisodeStarted(turn=0, config=CONFIG, lang=draw(st.sampled_from([None, "en", "zh"]))))
    for _ in range(draw(st.integers(0, MAX_EVENTS))):
        s = b.state
        kinds = ["turn", "turn", "summary", "summary", "noop"]
        if s.window:
            kinds.append("evict")
        if b.overridable():
            kinds += ["override", "archive"]
        if sum(x.summary_id in b.overridable() for x in s.active_chain()) >= 2:
            kinds.append("merge")
        if sum(x.status == "active" for x in s.summaries.values()) >= 2:
            kinds.append("index")
        if len(s.top_indexes()) >= 2:
            kinds.append("fold")
        kinds.append("pin")
        if s.pins:
            kinds.append("reinject")
        if erasure and any(not x.redacted for x in s.summaries.values()):
            kinds.append("erase")
        if s.summaries:
            kinds.append("rejected")
        if s.summaries or s.raw:
            kinds.append("page in")
        if lenient:
            kinds += ["restart", "collide", "shred bare", "evict missing"]
            kinds += ["record again"] if s.raw else []
            kinds += ["override any", "index any", "archive any"] if s.summaries else []
            kinds += ["fold any"] if any(e.folded_into is None for e in s.indexes.values()) else []
            kinds += ["pin again"] if s.pins else []
        kind = draw(st.sampled_from(kinds))
        _step(draw, b, kind)
    return b.events


def _step(draw: st.DrawFn, b: _Builder, kind: str) -> None:
    s = b.state
    if kind == "turn":
        # Turns mostly increase; sometimes repeat or go back (evolve takes event time as given).
        b.turn = b.turn + 1 if draw(st.integers(0, 3)) else draw(st.integers(0, max(b.turn, 1)))
        b.records += 1
        remember = draw(st.integers(0, 3)) > 0  # now and then a source whose turns are kept as raw records only
        b.add(TurnRecorded(turn=b.turn, record_id=f"r{b.records:04d}", text=draw(texts), agent=draw(texts),
                           remember=remember, gated="" if remember else "source policy"))
    elif kind == "record again":
        rid = draw(st.sampled_from(sorted(s.raw)))
        b.add(TurnRecorded(turn=b.turn, record_id=rid, text=draw(texts), agent=draw(texts),
                           remember=draw(st.booleans())))
    elif kind in ("summary", "collide"):
        if kind == "collide":
            sid = draw(st.sampled_from(sorted(s.summaries) or ["s0001"]))
        else:
            b.summaries += 1
            sid = f"s{b.summaries:04d}"
            while sid in s.summaries:  # after a restart in a lenient sequence
                b.summaries += 1
                sid = f"s{b.summaries:04d}"
        readable = b.readable_records()
        raw_ids = tuple(draw(st.lists(st.sampled_from(readable), max_size=2, unique=True))) if readable else ()
        b.add(SummaryCreated(turn=b.turn, summary_id=sid, text=draw(texts), facts=draw(facts_of), overrides=(),
                             raw_ids=raw_ids, truncated=draw(st.booleans()), inferences=draw(facts_of)))
    elif kind == "merge":
        # As a capacity merge writes it: the merged summary, then its members archived. A member is
        # merged only if archiving it (after the ones before it) leaves every slot it holds a holder.
        candidates = [x.summary_id for x in s.active_chain() if x.summary_id in b.overridable()]
        drawn = draw(st.lists(st.sampled_from(candidates), min_size=2, max_size=3, unique=True))
        b.summaries += 1
        sid = f"s{b.summaries:04d}"
        archived: list[SummaryArchived] = []
        after = s
        for m in drawn:
            if m in b.overridable(after):
                archived.append(SummaryArchived(turn=b.turn, summary_id=m, reason="merged", superseded_by=(sid,)))
                after = evolve(after, archived[-1])
        members = tuple(a.summary_id for a in archived)
        raw_ids = tuple(dict.fromkeys(r for m in members for r in s.summaries[m].raw_ids))
        b.add(SummaryCreated(turn=b.turn, summary_id=sid, text=draw(texts), facts=(), overrides=(), raw_ids=raw_ids,
                             written_by="merge", merged_from=members))
        for a in archived:
            b.add(a)
        b.add(CapacityMerged(turn=b.turn, summary_id=sid, merged_from=members, tokens_before=9, tokens_after=5))
    elif kind in ("archive", "archive any"):
        pool = b.overridable() if kind == "archive" else sorted(s.summaries)
        b.add(SummaryArchived(turn=b.turn, summary_id=draw(st.sampled_from(pool)),
                              reason=draw(st.sampled_from(["merged", "capacity"])),
                              superseded_by=tuple(draw(st.lists(st.sampled_from(sorted(s.summaries)), max_size=2)))))
    elif kind in ("fold", "fold any"):
        # evolve refuses to fold a title twice (or list it twice): "fold any" takes any title not yet folded,
        # covering something or not.
        pool = ([e.index_id for e in s.top_indexes()] if kind == "fold"
                else sorted(i for i, e in s.indexes.items() if e.folded_into is None))
        members = draw(st.lists(st.sampled_from(pool), min_size=min(2, len(pool)), max_size=3, unique=True))
        b.indexes += 1
        iid = f"i{b.indexes:04d}"
        while iid in s.indexes:  # after a restart in a lenient sequence
            b.indexes += 1
            iid = f"i{b.indexes:04d}"
        level = 1 + max(s.indexes[m].level for m in members)
        b.add(IndexFolded(turn=b.turn, index_id=iid, members=tuple(members), text=draw(texts), span="turn 1",
                          level=level))
    elif kind in ("pin", "pin again"):
        if kind == "pin again":
            pid = draw(st.sampled_from(sorted(s.pins)))
        else:
            b.pins += 1
            pid = f"p{b.pins:04d}"
            while pid in s.pins:
                b.pins += 1
                pid = f"p{b.pins:04d}"
        origin = draw(st.sampled_from(["declared", "summary", "detected"]))
        record_id = draw(st.sampled_from(sorted(s.raw))) if s.raw and origin != "declared" else None
        summary_id = draw(st.sampled_from(sorted(s.summaries))) if s.summaries and origin == "summary" else None
        text = draw(texts)
        b.add(ConstraintPinned(turn=b.turn, pin_id=pid, kind=draw(st.sampled_from(["constraint", "open_loop"])),
                               text=text, origin=origin, record_id=record_id, summary_id=summary_id, anchors=(text,)))
    elif kind == "reinject":
        b.add(ConstraintReinjected(turn=b.turn, pin_id=draw(st.sampled_from(sorted(s.pins))), reason="missing"))
    elif kind in ("override", "override any"):
        pool = b.overridable() if kind == "override" else sorted(s.summaries)
        old = draw(st.sampled_from(pool))
        by = draw(st.sampled_from(sorted(s.summaries)))
        b.add(SummaryOverridden(turn=b.turn, summary_id=old, superseded_by=(by,)))
    elif kind in ("index", "index any"):
        pool = sorted(x.summary_id for x in s.summaries.values() if kind == "index any" or x.status == "active")
        members = draw(st.lists(st.sampled_from(pool), min_size=min(2, len(pool)), max_size=3, unique=True))
        if kind == "index" or not s.indexes or draw(st.booleans()):
            b.indexes += 1
            iid = f"i{b.indexes:04d}"
        else:
            iid = draw(st.sampled_from(sorted(s.indexes)))  # an index id used twice
        b.add(IndexCreated(turn=b.turn, index_id=iid, members=tuple(members), text=draw(texts), span="turn 1"))
    elif kind == "evict":
        b.add(WindowEvicted(turn=b.turn, record_id=draw(st.sampled_from(s.window))))
    elif kind == "evict missing":
        b.add(WindowEvicted(turn=b.turn, record_id="r9999"))
    elif kind == "page in":  # render-time state: the tables must not change, the fold must take it
        item = draw(st.sampled_from([*sorted(s.summaries), *sorted(s.raw)]))
        until = b.turn + draw(st.integers(1, 3))
        b.add(PagedIn(turn=b.turn, until_turn=until, **{"summary_id" if item in s.summaries else "record_id": item}))
    elif kind == "rejected":
        b.add(OverrideRejected(turn=b.turn, summary_id=draw(st.sampled_from(sorted(s.summaries))),
                               rejected=(MISSING,), reason="not in the chain"))
    elif kind == "noop":
        b.add(_noop(draw, b.turn))
    elif kind == "erase":
        candidates = sorted(x.summary_id for x in s.summaries.values() if not x.redacted)
        chosen = set(draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True)))
        summaries, records = b.closure(chosen)
        for sid in sorted(summaries):
            for k, v in s.summaries[sid].facts:
                if v != ERASED:
                    b.add(FactErased(turn=b.turn, summary_id=sid, slot=k, legal_basis="GDPR Art. 17",
                                     collateral=sid not in chosen))
        named = sorted(records) + (["r9999"] if draw(st.booleans()) else [])  # a missing record is ignored
        indexes = b.titles_over(summaries)
        pins = sorted(p.pin_id for p in s.pins.values() if p.record_id in records or p.summary_id in summaries)
        b.add(KeyShredded(turn=b.turn, key_ids=tuple(f"k:{r}" for r in named), legal_basis="GDPR Art. 17",
                          request="test", records=tuple(named), summaries=tuple(sorted(summaries)),
                          indexes=tuple(indexes + (["i9999"] if draw(st.booleans()) else [])),
                          pins=tuple(pins + (["p9999"] if draw(st.booleans()) else []))))
        b.erased = True
    elif kind == "shred bare":
        named = draw(st.lists(st.sampled_from(sorted(s.summaries) or ["s0001"]), max_size=2, unique=True))
        named = [n for n in named if n in s.summaries]
        shredded: list[str] = draw(st.lists(st.sampled_from([*sorted(s.raw), "r9999"]), max_size=2, unique=True))
        pins: list[str] = draw(st.lists(st.sampled_from([*sorted(s.pins), "p9999"]), max_size=2, unique=True))
        b.add(KeyShredded(turn=b.turn, key_ids=("k",), legal_basis="x", request="test", records=tuple(shredded),
                          summaries=tuple(named), pins=tuple(pins)))
    elif kind == "restart":
        b.add(EpisodeStarted(turn=b.turn, config=CONFIG))
    else:  # pragma: no cover - every kind above is handled
        raise AssertionError(kind)


@st.composite
def invalid_sequences(draw: st.DrawFn) -> tuple[list[EpisodeEvent], int, str]:
    """A valid prefix, one event naming a summary, title or pin that does not exist, then anything."""
    prefix = draw(sequences())
    state = fold(prefix)
    kind = draw(st.sampled_from(["override", "archive", "index", "fact erased", "key shredded", "fold", "reinject"]))
    taken = state.indexes if kind == "fold" else state.pins if kind == "reinject" else state.summaries
    missing = draw(st.one_of(st.just(MISSING), st.from_regex(r"[sip][0-9]{1,5}", fullmatch=True),
                             texts.filter(bool)).filter(lambda x: x not in taken))
    existing = sorted(taken)
    others = draw(st.lists(st.sampled_from(existing), max_size=2, unique=True)) if existing else []
    position = draw(st.integers(0, len(others)))
    named = tuple(others[:position] + [missing] + others[position:])
    bad: EpisodeEvent
    if kind == "override":
        bad = SummaryOverridden(turn=state.turn, summary_id=missing, superseded_by=tuple(existing[:1]))
    elif kind == "archive":
        bad = SummaryArchived(turn=state.turn, summary_id=missing, reason="merged", superseded_by=tuple(existing[:1]))
    elif kind == "index":
        bad = IndexCreated(turn=state.turn, index_id="i0999", members=named, text="t", span="turn 1")
    elif kind == "fold":
        bad = IndexFolded(turn=state.turn, index_id="i0999", members=named, text="t", span="turn 1")
    elif kind == "reinject":
        bad = ConstraintReinjected(turn=state.turn, pin_id=missing, reason="missing")
    elif kind == "fact erased":
        bad = FactErased(turn=state.turn, summary_id=missing, slot="floor", legal_basis="GDPR Art. 17")
    else:
        bad = KeyShredded(turn=state.turn, key_ids=("k",), legal_basis="GDPR Art. 17", request="test",
                          records=("r9999",), summaries=named)
    tail = [TurnRecorded(turn=state.turn + 1, record_id="r8888", text="after", agent="ok")]
    return [*prefix, bad, *tail], len(prefix) + 1, missing


# --- helpers ---------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return tuple((d["slot"], d["value"]) if isinstance(d, dict) else d for d in value)
    return value


def _open_rows(rows_by_table: History, seq: int | None = None) -> dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """Each table's rows valid at `seq` (default: the open ones), as key -> attributes."""
    out: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = {}
    for spec in TABLES:
        found: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for row in rows_by_table[spec.name]:
            valid = (row["valid_to_seq"] is None if seq is None else
                     row["valid_from_seq"] <= seq and (row["valid_to_seq"] is None or seq < row["valid_to_seq"]))
            if valid:
                key = tuple(row[n] for n, _ in spec.key)
                assert key not in found, (spec.name, key, "two versions valid at once")
                found[key] = tuple(_cell(row[n]) for n, _ in spec.attrs)
        out[spec.name] = found
    return out


def _project(events: list[EpisodeEvent]) -> Projector:
    p = Projector(STREAM.as_tuple(), keep_history=True)
    p.apply_all(recorded(events))
    return p


def _history_equals_the_fold_at_every_seq(events: list[EpisodeEvent], history: History) -> None:
    state = EpisodeState()
    for seq, e in enumerate(events, 1):
        state = evolve(state, e)
        assert _open_rows(history, seq) == snapshot(state), f"history as of seq {seq} is not the fold"


def _store_equals_the_fold(events: list[EpisodeEvent], state: EpisodeState, cuts: list[int]) -> None:
    """Write the events in batches through LiveProjection; the store's open rows are the fold."""
    rec = recorded(events)
    bounds = sorted({0, len(rec), *(c for c in cuts if 0 < c < len(rec))})
    with ProjectionStore() as store:
        live = LiveProjection(STREAM, [], store)
        for lo, hi in itertools.pairwise(bounds):
            live.apply(rec[lo:hi])
        tables = store.read_tables()
        assert _open_rows(tables) == snapshot(state)
        assert store.last_seq(STREAM) == (rec[-1].seq if rec else 0)
        full = _project(events).history
        assert full is not None
        for spec in TABLES:  # every version, not just the open ones
            names = [n for n, _ in spec.key]

            def order(row: dict[str, Any], names: list[str] = names) -> tuple[Any, ...]:
                return (*(str(row[n]) for n in names), row["valid_from_seq"])

            assert sorted(map(_comparable, tables[spec.name]), key=order) == sorted(
                map(_comparable, full[spec.name]), key=order), spec.name
    # Catch-up: a store that saw only the first batch is brought level on open.
    if len(bounds) > 2:
        with ProjectionStore() as behind:
            LiveProjection(STREAM, [], behind).apply(rec[: bounds[1]])
            LiveProjection(STREAM, rec, behind)
            assert _open_rows(behind.read_tables()) == snapshot(state)
            assert behind.last_seq(STREAM) == rec[-1].seq


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _cell(v) for k, v in row.items()}


# --- valid sequences -----------------------------------------------------------------------------


@given(events=sequences(), cuts=st.lists(st.integers(0, MAX_EVENTS + 2), max_size=3))
def test_valid_sequences_fold_and_their_projections_are_well_formed(events: list[EpisodeEvent],
                                                                    cuts: list[int]) -> None:
    for kind in sorted({type(e).event_type for e in events}):
        event(f"contains {kind}")
    state = fold(events)
    p = _project(events)
    assert p.state == state
    assert p.history is not None
    assert check_scd2(p.history) == []
    _history_equals_the_fold_at_every_seq(events, p.history)
    _store_equals_the_fold(events, state, cuts)
    rec = recorded(events)
    seq = len(rec)
    name = str(STREAM)
    assert check_i1(name, rec, state) == []
    assert check_i3(name, seq, state) == []
    assert check_i5(name, seq, state, None) == []


@given(events=sequences(erasure=False))
def test_without_erasure_every_fact_and_its_evidence_survive(events: list[EpisodeEvent]) -> None:
    state = fold(events)
    rec = recorded(events)
    assert check_i1(str(STREAM), rec, state) == []
    assert check_i3(str(STREAM), len(rec), state) == []
    for e in events:
        if isinstance(e, SummaryCreated):
            assert state.summaries[e.summary_id].facts == e.facts
            assert all(state.raw[r].user != ERASED for r in e.raw_ids)
    # Every slot ever stated keeps a current value: valid overrides never orphan a slot.
    stated = {k for e in events if isinstance(e, SummaryCreated) for k, _ in e.facts}
    started_at = max((i for i, e in enumerate(events) if isinstance(e, EpisodeStarted)), default=-1)
    assert stated == set(state.current_values()) or started_at > 0


@given(events=sequences())
def test_a_missing_record_in_key_shredded_is_ignored_not_invented(events: list[EpisodeEvent]) -> None:
    state = fold(events)
    assert "r9999" not in state.raw
    assert "i9999" not in state.indexes


# --- lenient sequences ---------------------------------------------------------------------------


@given(events=sequences(family="lenient"), cuts=st.lists(st.integers(0, MAX_EVENTS + 2), max_size=3))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_sequence_evolve_accepts_projects_to_exactly_its_fold(events: list[EpisodeEvent],
                                                                  cuts: list[int]) -> None:
    state = fold(events)
    p = _project(events)
    assert p.state == state
    assert p.history is not None
    # A key may leave the snapshot and come back (a restart, a colliding id, an orphaned slot):
    # that is a gap, which `check_scd2` reports; nothing else may be wrong with the history.
    violations = check_scd2(p.history)
    other = [v for v in violations if not v.message.endswith("gap between versions")]
    assert other == []
    event("a key left and came back (gap)" if violations else "no gap")
    _history_equals_the_fold_at_every_seq(events, p.history)
    _store_equals_the_fold(events, state, cuts)


def test_a_key_that_leaves_and_comes_back_is_a_gap_in_check_scd2() -> None:
    """Why the lenient property tolerates gaps: a colliding summary id can take a slot's only value away."""
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        SummaryCreated(turn=1, summary_id="s0001", text="a", facts=(("floor", "3F"),), overrides=(), raw_ids=()),
        SummaryCreated(turn=2, summary_id="s0001", text="b", facts=(("team", "5"),), overrides=(), raw_ids=()),
        SummaryCreated(turn=3, summary_id="s0002", text="c", facts=(("floor", "7F"),), overrides=(), raw_ids=()),
    ]
    p = _project(events)
    assert p.history is not None
    assert [v.message for v in check_scd2(p.history)] == ["fact_versions: gap between versions"]
    _history_equals_the_fold_at_every_seq(events, p.history)


# --- invalid sequences -----------------------------------------------------------------------------


@given(case=invalid_sequences())
def test_an_event_naming_a_missing_summary_is_refused_by_name(case: tuple[list[EpisodeEvent], int, str]) -> None:
    events, bad_seq, missing = case
    with pytest.raises(EvolveError) as folded:
        fold(events)
    assert repr(missing) in str(folded.value)
    assert isinstance(folded.value, LedgermemError)
    with pytest.raises(EvolveError) as projected:
        Projector(STREAM.as_tuple()).apply_all(recorded(events))
    assert repr(missing) in str(projected.value) and f"seq {bad_seq}" in str(projected.value)
    # A batch that does not apply writes nothing to the store.
    rec = recorded(events)
    with ProjectionStore() as store:
        live = LiveProjection(STREAM, rec[: bad_seq - 1], store)
        before = store.read_tables()
        with pytest.raises(EvolveError):
            live.apply(rec[bad_seq - 1:])
        assert store.read_tables() == before
        assert store.last_seq(STREAM) == bad_seq - 1


def test_an_evolve_error_while_projecting_names_the_seq() -> None:
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        TurnRecorded(turn=1, record_id="r0001", text="hi", agent="ok"),
        SummaryOverridden(turn=1, summary_id="s0042", superseded_by=()),
    ]
    with pytest.raises(EvolveError) as err:
        Projector(STREAM.as_tuple()).apply_all(recorded(events, first_seq=17))
    assert "'s0042'" in str(err.value)
    assert "seq 19" in str(err.value)


# --- rows that cannot be decoded -------------------------------------------------------------------

_FILE_LEDGER = settings(max_examples=min(settings().max_examples, 25), deadline=None,
                        suppress_health_check=[HealthCheck.too_slow])


def _file_ledger_with(events: list[EpisodeEvent], directory: str) -> Ledger:
    ledger = Ledger(Path(directory) / "ledger.duckdb")
    ledger.append(STREAM, list(events), expected_version=0)
    return ledger


@_FILE_LEDGER
@given(events=sequences().filter(bool), data=st.data())
def test_an_unknown_event_type_is_refused_naming_its_seq(events: list[EpisodeEvent], data: st.DataObject) -> None:
    k = data.draw(st.integers(1, len(events)), label="seq")
    bogus = data.draw(st.sampled_from(["bogus", "summary_deleted", "", "Turn_Recorded"]), label="event_type")
    with tempfile.TemporaryDirectory() as d:
        ledger = _file_ledger_with(events, d)
        try:
            ledger.conn.execute("UPDATE events SET event_type = ? WHERE seq = ?", [bogus, k])
            with pytest.raises(UnknownEventType) as err:
                list(ledger.read())
            assert f"seq {k}" in str(err.value) and err.value.seq == k
            assert repr(bogus) in str(err.value)
            # Only that row is unreadable.
            assert [r.seq for r in ledger.read(from_seq=k + 1)] == list(range(k + 1, len(events) + 1))
        finally:
            ledger.close()


@_FILE_LEDGER
@given(events=sequences().filter(bool), data=st.data())
def test_a_payload_that_is_not_a_json_object_is_refused_naming_its_seq(events: list[EpisodeEvent],
                                                                      data: st.DataObject) -> None:
    k = data.draw(st.integers(1, len(events)), label="seq")
    payload = data.draw(st.sampled_from(["{not json", "", "[1, 2]", '"a string"', "null", "42", '{"a": ']),
                        label="payload")
    with tempfile.TemporaryDirectory() as d:
        ledger = _file_ledger_with(events, d)
        try:
            ledger.conn.execute("UPDATE events SET payload = ? WHERE seq = ?", [payload, k])
            with pytest.raises(MalformedEvent) as err:
                list(ledger.read())
            assert f"seq {k}" in str(err.value) and err.value.seq == k
            assert [r.seq for r in ledger.read(to_seq=k - 1)] == list(range(1, k))
        finally:
            ledger.close()


def test_a_payload_missing_a_required_field_is_refused_naming_its_seq(tmp_path: Path) -> None:
    events: list[EpisodeEvent] = [EpisodeStarted(config=CONFIG),
                                  TurnRecorded(turn=1, record_id="r0001", text="hi", agent="ok")]
    with _file_ledger_with(events, str(tmp_path)) as ledger:
        ledger.conn.execute("UPDATE events SET payload = ? WHERE seq = 2", [json.dumps({"source": None})])
        with pytest.raises(MalformedEvent, match=r"seq 2: turn_recorded does not fit its schema"):
            list(ledger.read())
