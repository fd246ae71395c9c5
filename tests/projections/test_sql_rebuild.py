"""The set-based SQL rebuild equals the fold, row for row: property, golden replays, scale."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate.commands import PinConstraint, StartEpisode
from ledgermem.gate.decide import Command, decide
from ledgermem.gate.erasure import Erase
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.lexicon import detect_facts
from ledgermem.evaluation.replay import plaintext_events
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    EpisodeStarted,
    FactErased,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    MergeRejected,
    OverrideRejected,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.evaluation.events import RunStarted
from ledgermem.ledger.keys import ERASED, PREFIX
from ledgermem.ledger.keys import KeyStore
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import EvolveError, ProjectionError
from ledgermem.projections.materialise import rebuild
from ledgermem.projections.sql_rebuild import rebuild_sql, rebuild_sql_ledger
from ledgermem.projections.state import EpisodeState, evolve, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.projections import golden
from tests.turns import called, record_turn
from tests.projections.test_event_sequences import STREAM, sequences

SLOTS = ("floor", "team", "city")
VALUES = ("A", "B", "C", "[erased]")  # few values so that A -> B -> A happens; "[erased]" as a written value


OPEN_ITEMS = ("call the bank", "book a room")
COMMITMENTS = ("remind me to call the bank", "budget must never exceed 500")


def _response(facts: list[tuple[str, str]], overrides: list[str] | None, open_item: str | None = None) -> str:
    text = "note " + " ".join(f"{k} {v}" for k, v in facts)
    sections = f"\nOPEN: {open_item}" if open_item else ""
    body = "\n[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]" if facts else ""
    tag = "" if overrides is None else "\n[OVERRIDES: " + (", ".join(overrides) or "none") + "]"
    return text + sections + body + tag


responses = st.one_of(
    st.just("NONE"),
    st.just("garbage without any tags {{{"),
    st.builds(
        _response,
        st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), max_size=3),
        st.none() | st.lists(st.integers(1, 14).map(lambda n: f"s{n:04d}"), max_size=3),
        st.none() | st.sampled_from(OPEN_ITEMS),
    ),
)


@dataclass(frozen=True)
class Turn:
    response: str | None  # None: a turn with no summarizer call
    grounded: bool = True  # the user's words state the response's values, so provenance keeps them as facts
    said: str | None = None  # a constraint or open loop in the user's words, pinned by the detector
    source: str | None = None  # "tool" is a source whose turns are not remembered


@dataclass(frozen=True)
class EraseSlot:
    slot: str
    value: str | None


@dataclass(frozen=True)
class EraseRecord:
    pick: int  # which existing record, modulo how many there are


@dataclass(frozen=True)
class EraseSubject:
    pass


@dataclass(frozen=True)
class Pin:
    kind: str
    text: str


@dataclass(frozen=True)
class Burst:
    """Several grounded one-fact turns in a row, without overrides: capacity pressure (titles, folds, merges)."""

    size: int
    offset: int

    def turns(self) -> list[Turn]:
        facts = [(SLOTS[(self.offset + k) % len(SLOTS)], VALUES[(self.offset + 2 * k) % 3]) for k in range(self.size)]
        return [Turn(_response([f], [])) for f in facts]


Step = Turn | EraseSlot | EraseRecord | EraseSubject | Pin | Burst

turns_drawn = st.builds(Turn, responses, grounded=st.booleans(), said=st.none() | st.sampled_from(COMMITMENTS),
                        source=st.none() | st.just("tool"))
steps = st.one_of(  # turns and bursts of turns more often than erasures, so there is something to erase and compact
    st.builds(Turn, st.none() | responses),
    st.builds(Turn, responses),
    turns_drawn,
    st.builds(EraseSlot, st.sampled_from(SLOTS), st.none() | st.sampled_from(VALUES)),
    st.builds(EraseRecord, st.integers(0, 20)),
    st.builds(EraseSubject),
    st.builds(Pin, st.sampled_from(("constraint", "open_loop")), st.sampled_from(("no meetings on Friday", "ship v2"))),
    st.builds(Burst, st.integers(4, 8), st.integers(0, 5)),
    st.builds(Burst, st.integers(4, 8), st.integers(0, 5)),
)
configs = st.builds(
    lambda window, budget, strategy, fold_share, min_gain: MemoryConfig(
        window_turns=window, chain_budget=budget, index_group_size=2, tokenizer=ESTIMATOR, personal_data=True,
        chain_strategy=strategy, index_fold_share=fold_share, merge_min_gain=min_gain,
        source_policies={"tool": {"remember": False}},
    ),
    st.integers(1, 3),
    st.sampled_from([30, 45, 60, 400]),
    st.sampled_from(["index", "merge"]),
    st.sampled_from([0.2, 0.5]),
    st.sampled_from([0.05, 0.15, 0.6]),
)


@dataclass
class Episode:
    """One stream driven by `decide`, appended to the ledger as it goes."""

    key: StreamKey
    state: EpisodeState = field(default_factory=EpisodeState)

    def run(self, ledger: Ledger, command: Command) -> None:
        try:
            events = decide(self.state, command)
        except CommandRejected:
            return  # e.g. an erasure with nothing to erase: no events, like the application
        if events:
            ledger.append(self.key, list(events), expected_version=ledger.stream_version(self.key))
            self.state = fold(list(events), self.state)

    def command(self, step: Turn | EraseSlot | EraseRecord | EraseSubject | Pin) -> Command | None:
        if isinstance(step, Turn):
            n = self.state.turn + 1
            call = None
            if step.response is not None and step.source is None:  # the tool's turns are never summarised
                call = called(step.response, n, model="script", prompt_hash=f"h{n}")
            user = " ".join(x for x in (f"user says {n}", step.response if step.grounded else None, step.said) if x)
            return record_turn(self.state, turn=n, user=user, agent="ok", occurred_at=f"2024-01-01T00:{n:02d}:00",
                               summarizer=call, source=step.source)
        if isinstance(step, Pin):
            return PinConstraint(kind=step.kind, text=step.text)
        basis = "test erasure"
        if isinstance(step, EraseSlot):
            return Erase(legal_basis=basis, key_prefix="x", slot=step.slot, value=step.value)
        if isinstance(step, EraseRecord):
            records = sorted(self.state.raw)
            return Erase(legal_basis=basis, key_prefix="x", record_id=records[step.pick % len(records)]) \
                if records else None
        return Erase(legal_basis=basis, key_prefix="x", subject=True)


def _stream(i: int) -> StreamKey:
    return StreamKey(f"run{i % 2}", "three_layer" if i < 2 else "other", f"ep{i}")


def build_ledger(cfgs: list[MemoryConfig], script: list[tuple[int, Step]]) -> Ledger:
    """Streams started in order, then the steps interleaved across them as drawn."""
    ledger = Ledger(":memory:")
    ledger.append(StreamKey("run0"), [RunStarted(systems=("three_layer",), config={}, versions={}, dataset={})],
                  expected_version=0)
    episodes = [Episode(_stream(i)) for i in range(len(cfgs))]
    for episode, cfg in zip(episodes, cfgs):
        episode.run(ledger, StartEpisode(config=cfg))
    for which, step in script:
        episode = episodes[which % len(episodes)]
        for one in step.turns() if isinstance(step, Burst) else [step]:
            command = episode.command(one)
            if command is not None:
                episode.run(ledger, command)
    return ledger


@given(
    st.lists(configs, min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), steps), min_size=1, max_size=40),
)
def test_sql_rebuild_equals_the_fold(cfgs: list[MemoryConfig], script: list[tuple[int, Step]]) -> None:
    ledger = build_ledger(cfgs, script)
    for (kind,) in ledger.conn.execute("SELECT DISTINCT event_type FROM events ORDER BY 1").fetchall():
        event(f"contains {kind}")
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)
    assert rebuild_sql_ledger(ledger, run_id="run1") == rebuild(ledger, run_id="run1")


# --- beyond decide: any sequence `evolve` accepts ------------------------------------------
# Rewritten ids, a second episode_started, duplicate members, shreds of things not there yet:
# `decide` never writes these, but the fold defines them, so the SQL must agree there too.

RIDS, SIDS, IIDS, PIDS = ("r1", "r2", "r3"), ("s1", "s2", "s3"), ("i1", "i2", "i3", "i4"), ("p1", "p2")
small_text = st.sampled_from(("t", "u", "[erased]"))
fact_lists = st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), max_size=3).map(tuple)
turns = st.integers(0, 4)


def _ids(pool: tuple[str, ...], min_size: int = 0) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(pool), min_size=min_size, max_size=3).map(tuple)


raw_events = st.one_of(
    st.builds(EpisodeStarted, turn=turns, config=st.just(MemoryConfig(tokenizer=ESTIMATOR).to_dict())),
    st.builds(TurnRecorded, turn=turns, record_id=st.sampled_from(RIDS), text=small_text, agent=small_text,
              occurred_at=st.none() | st.just("2024-01-01"), source=st.none() | st.just("chat"),
              remember=st.booleans()),
    st.builds(WindowEvicted, turn=turns, record_id=st.sampled_from(RIDS)),
    st.builds(SummaryCreated, turn=turns, summary_id=st.sampled_from(SIDS), text=small_text, facts=fact_lists,
              overrides=_ids(SIDS), raw_ids=_ids(RIDS), truncated=st.booleans(), inferences=fact_lists,
              merged_from=_ids(SIDS)),
    st.builds(SummaryOverridden, turn=turns, summary_id=st.sampled_from(SIDS), superseded_by=_ids(SIDS)),
    st.builds(SummaryArchived, turn=turns, summary_id=st.sampled_from(SIDS), reason=st.sampled_from(("merged", "x")),
              superseded_by=_ids(SIDS)),
    st.builds(IndexCreated, turn=turns, index_id=st.sampled_from(IIDS), members=_ids(SIDS, 1), text=small_text,
              level=st.integers(1, 2)),
    st.builds(IndexFolded, turn=turns, index_id=st.sampled_from(IIDS), members=_ids(IIDS), text=small_text,
              level=st.integers(2, 3)),
    st.builds(FactErased, turn=turns, summary_id=st.sampled_from(SIDS), slot=st.sampled_from(SLOTS),
              legal_basis=st.just("b")),
    st.builds(KeyShredded, turn=turns, key_ids=st.just(("k",)), legal_basis=st.just("b"), request=st.just("r"),
              records=_ids(RIDS), summaries=_ids(SIDS), indexes=_ids(IIDS), pins=_ids(PIDS)),
    st.builds(OverrideRejected, turn=turns, summary_id=st.none() | st.sampled_from(SIDS), rejected=_ids(SIDS),
              reason=st.just("not in the chain")),
    st.builds(SummaryRejected, turn=turns, purpose=st.sampled_from(("summarize", "self_write")),
              attempt=st.integers(0, 3), reasons=st.lists(st.sampled_from(("markup", "unknown_id")), max_size=2)
              .map(tuple)),
    st.builds(SummarySkipped, turn=turns, record_id=st.sampled_from(RIDS), attempts=st.integers(1, 3),
              reasons=st.just(("repetition",))),
    st.builds(ConstraintPinned, turn=turns, pin_id=st.sampled_from(PIDS), kind=st.sampled_from(("constraint", "open_loop")),
              text=small_text, origin=st.sampled_from(("declared", "summary", "detected")),
              record_id=st.none() | st.sampled_from(RIDS), summary_id=st.none() | st.sampled_from(SIDS)),
    st.builds(ConstraintReinjected, turn=turns, pin_id=st.sampled_from(PIDS), reason=st.just("missing")),
    st.builds(CapacityMerged, turn=turns, summary_id=st.sampled_from(SIDS), merged_from=_ids(SIDS),
              tokens_before=st.just(9), tokens_after=st.just(5)),
    st.builds(MergeRejected, turn=turns, merged_from=_ids(SIDS), reason=st.just("minimum gain")),
    st.builds(CompactionChecked, turn=turns, strategy=st.just("index"), created=st.just(0), rejected=st.just(0),
              stopped=st.just("no candidates"), tokens_before=st.just(0), tokens_after=st.just(0),
              constraints_checked=st.just(0), constraints_missing=_ids(PIDS), open_loops_before=st.just(0),
              open_loops_after=st.just(0)),
)


def _acyclic(state: EpisodeState, event: Event) -> bool:
    """A fold under a fresh id over titles that exist; an id folded under itself has no state to project."""
    return not isinstance(event, IndexFolded) or (
        event.index_id not in state.indexes and event.index_id not in event.members)


@given(st.lists(st.tuples(st.integers(0, 1), raw_events), min_size=1, max_size=40))
def test_sql_rebuild_equals_the_fold_for_any_sequence_evolve_accepts(script: list[tuple[int, Any]]) -> None:
    ledger, states = Ledger(":memory:"), [EpisodeState(), EpisodeState()]
    for which, e in script:
        if not _acyclic(states[which], e):
            continue
        try:
            after = evolve(states[which], e)
        except EvolveError:
            continue  # it names a summary, title or pin that is not there: the fold would refuse the stream
        states[which] = after
        stream = _stream(which)
        ledger.append(stream, [e], expected_version=ledger.stream_version(stream))
        event(f"contains {e.event_type}")
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)


@given(st.sampled_from(["valid", "lenient"]).flatmap(lambda family: sequences(family=family)))
def test_sql_rebuild_equals_the_fold_for_the_event_sequence_families(events: list[Any]) -> None:
    """The state-aware generators of test_event_sequences reach folds, merges and pins far more often."""
    for kind in sorted({e.event_type for e in events}):
        event(f"contains {kind}")
    ledger = Ledger(":memory:")
    if events:
        ledger.append(STREAM, events, expected_version=0)
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)


def test_a_title_folded_twice_and_rewritten_counts_its_members_through_every_level() -> None:
    """Folds of folds, and a folded title written again under its id."""
    stream = _stream(0)
    events: list[Event] = [
        EpisodeStarted(config=MemoryConfig(tokenizer=ESTIMATOR).to_dict()),
        *(SummaryCreated(turn=1, summary_id=s, text="t", facts=(), overrides=(), raw_ids=()) for s in SIDS),
        IndexCreated(turn=2, index_id="i1", members=("s1", "s2"), text="one"),
        IndexCreated(turn=2, index_id="i2", members=("s3",), text="two"),
        IndexFolded(turn=3, index_id="i3", members=("i1", "i2"), text="fold"),
        IndexFolded(turn=3, index_id="i4", members=("i3",), text="fold of a fold", level=3),
        SummaryOverridden(turn=4, summary_id="s1", superseded_by=("s3",)),
        IndexCreated(turn=5, index_id="i1", members=("s3",), text="one again"),
        SummaryArchived(turn=6, summary_id="s3", reason="merged", superseded_by=("s2",)),
        KeyShredded(turn=7, key_ids=("k",), legal_basis="b", request="r", indexes=("i3",)),
    ]
    ledger = Ledger(":memory:")
    ledger.append(stream, events, expected_version=0)
    folded = rebuild(ledger)
    assert rebuild_sql_ledger(ledger) == folded
    live = {(r["index_id"], r["valid_from_seq"]): (r["live_members"], r["folded_into"], r["title"])
            for r in folded["index_versions"]}
    assert live[("i3", 7)] == (3, None, "fold")  # s1 and s2 through i1, s3 through i2
    assert live[("i3", 8)] == (3, "i4", "fold")
    assert live[("i4", 8)] == (3, None, "fold of a fold")
    assert live[("i4", 9)][0] == live[("i3", 9)][0] == 2  # s1 overridden
    assert live[("i1", 10)] == (1, None, "one again")  # written again: a new title, no longer folded
    assert live[("i3", 11)][0] == live[("i4", 11)][0] == live[("i2", 11)][0] == 0  # s3 archived
    assert live[("i3", 12)] == (0, "i4", ERASED)


# --- the source can be any relation with the events' columns -----------------------------


def _small_ledger() -> Ledger:
    return build_ledger(
        [MemoryConfig(window_turns=2, chain_budget=45, index_group_size=2, tokenizer=ESTIMATOR)],
        [(0, Turn(_response([("floor", "A")], []))), (0, Turn(_response([("floor", "B")], ["s0001"]))),
         (0, EraseSlot("floor", "B")), (0, Turn("NONE"))],
    )


def test_source_may_be_a_view_and_names_are_quoted() -> None:
    ledger = _small_ledger()
    ledger.conn.execute("CREATE TEMP VIEW plain_events AS SELECT * FROM events")
    assert rebuild_sql(ledger.conn, "plain_events") == rebuild(ledger)
    assert rebuild_sql(ledger.conn, "main.events") == rebuild(ledger)
    with pytest.raises(ValueError, match="table or view name"):
        rebuild_sql(ledger.conn, "events; DROP TABLE events")


def test_payloads_of_another_schema_version_are_refused() -> None:
    ledger = _small_ledger()
    ledger.conn.execute("CREATE TEMP VIEW old_events AS SELECT * REPLACE (CAST(0 AS SMALLINT) AS schema_version) "
                        "FROM events")
    with pytest.raises(ProjectionError, match="schema version 0"):
        rebuild_sql(ledger.conn, "old_events")


def test_a_ledger_with_sealed_values_is_refused() -> None:
    ledger = Ledger(":memory:", keys=KeyStore())
    stream = StreamKey("run0", "three_layer", "ep0")
    ledger.append(stream, [TurnRecorded(turn=1, record_id="r0001", text="secret", agent="ok")], expected_version=0,
                  keys=["k#turn:1"])
    with pytest.raises(ProjectionError, match="sealed values"):
        rebuild_sql_ledger(ledger)


def test_sealed_inferences_and_pin_text_are_read_through_the_decrypting_view() -> None:
    """Inferences are sealed in the payload like facts, a pin's text in the text column like a turn's."""
    ledger = Ledger(":memory:", keys=KeyStore())
    stream = StreamKey("run0", "three_layer", "ep0")
    ledger.append(stream, [
        EpisodeStarted(config=MemoryConfig(tokenizer=ESTIMATOR, personal_data=True).to_dict()),
        TurnRecorded(turn=1, record_id="r0001", text="my floor is 3F, never book Mondays", agent="ok"),
        SummaryCreated(turn=1, summary_id="s0001", text="floor 3F", facts=(("floor", "3F"),), overrides=(),
                       raw_ids=("r0001",), inferences=(("mood", "calm"),)),
        ConstraintPinned(turn=1, pin_id="p0001", kind="constraint", text="never book Mondays", origin="detected",
                         record_id="r0001", anchors=("never book Mondays",)),
        ConstraintReinjected(turn=1, pin_id="p0001", reason="not in the rendered prompt"),
    ], expected_version=0, keys=["k#turn:1"] * 5)
    stored = {t: (text, payload) for t, text, payload in ledger.conn.execute(
        "SELECT event_type, text, payload FROM events").fetchall()}
    assert "calm" not in stored["summary_created"][1] and f'"mood","{PREFIX}' in stored["summary_created"][1]
    assert stored["constraint_pinned"][0].startswith(PREFIX)

    opened = rebuild_sql(ledger.conn, plaintext_events(ledger))
    assert opened == rebuild(ledger)
    assert [r["inferences"] for r in opened["summary_versions"]] == [[{"slot": "mood", "value": "calm"}]]
    assert [(r["text"], r["reinjected"], r["shown"]) for r in opened["pin_versions"]] == [
        ("never book Mondays", 0, False), ("never book Mondays", 1, True)]

    assert ledger.keys is not None
    ledger.keys.shred(["k#turn:1"])
    ledger.append(stream, [KeyShredded(turn=2, key_ids=("k#turn:1",), legal_basis="b", request="r",
                                       records=("r0001",), summaries=("s0001",), pins=("p0001",))],
                  expected_version=5)
    shredded = rebuild_sql(ledger.conn, plaintext_events(ledger))
    assert shredded == rebuild(ledger)
    # Every version, not only the current one: the values are unreadable in the whole history.
    assert {r["text"] for r in shredded["pin_versions"]} == {ERASED}
    assert {f["value"] for r in shredded["summary_versions"] for f in r["inferences"]} == {ERASED}


def _strip_payloads(ledger: Ledger, fields: tuple[str, ...]) -> int:
    """Remove fields from the stored payloads, as a ledger written before they existed holds them."""
    changed = 0
    for seq, payload in ledger.conn.execute("SELECT seq, payload FROM events ORDER BY seq").fetchall():
        body = json.loads(payload)
        kept = {k: v for k, v in body.items() if k not in fields}
        if kept != body:
            ledger.conn.execute("UPDATE events SET payload = ? WHERE seq = ?", [json.dumps(kept), seq])
            changed += 1
    return changed


def test_payloads_without_the_newer_fields_read_as_their_defaults() -> None:
    ledger = golden.ledger_from(golden.events_path("capacity_index_titles"))
    expected = rebuild(ledger)
    assert _strip_payloads(ledger, ("remember", "gated", "inferences", "merged_from", "pins", "level")) > 10
    assert rebuild(ledger) == expected  # the fold decodes them to the event classes' defaults
    assert rebuild_sql_ledger(ledger) == expected
    assert {r["remember"] for r in expected["raw_records"]} == {True}
    assert {(len(r["inferences"]), len(r["merged_from"])) for r in expected["summary_versions"]} == {(0, 0)}


def test_leaves_no_temporary_objects_behind() -> None:
    ledger = _small_ledger()
    before = ledger.conn.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()
    rebuild_sql_ledger(ledger)
    after = ledger.conn.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()
    views = ledger.conn.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal").fetchone()
    assert before == after and views == (0,)


def test_an_empty_ledger_has_empty_tables() -> None:
    assert rebuild_sql_ledger(Ledger(":memory:")) == rebuild(Ledger(":memory:"))


# --- golden replays -------------------------------------------------------------------------


@pytest.mark.parametrize("case", golden.cases())
def test_golden_replay(case: str) -> None:
    ledger = golden.ledger_from(golden.events_path(case))
    if os.environ.get(golden.REGEN_ENV) == "1":
        golden.write_expected(case, rebuild(ledger))
        pytest.fail(f"regenerated; re-run without {golden.REGEN_ENV}")
    expected = golden.read_expected(case)
    assert rebuild(ledger) == expected, "the fold no longer gives the reviewed projections"
    assert rebuild_sql_ledger(ledger) == expected


def test_golden_cases_cover_what_they_promise() -> None:
    names = set(golden.cases())
    assert len(names) >= 4
    kinds: set[str] = set()
    for case in names:
        kinds |= {e.event_type for _, e in golden.load_events(golden.events_path(case))}
    assert {"summary_overridden", "override_rejected", "index_created", "fact_erased", "key_shredded",
            "window_evicted", "summary_archived", "capacity_merged", "merge_rejected", "index_folded",
            "constraint_pinned", "constraint_reinjected", "compaction_checked"} <= kinds
    expected = {case: golden.read_expected(case) for case in names}
    registry = [r for tables in expected.values() for r in tables["fact_versions"]]
    assert any(r["erased"] for r in registry), "no slot with every value erased"

    def rows(table: str) -> list[dict[str, Any]]:
        return [r for tables in expected.values() for r in tables[table]]

    merged = [r for r in rows("summary_versions") if r["merged_from"]]
    assert any(r["status"] == "archived" and r["archive_reason"] == "merged" for r in rows("summary_versions"))
    assert any(len(r["merged_from"]) >= 2 for r in merged), "no capacity merge"
    folded = [r for r in rows("index_versions") if r["folded_into"] is not None]
    assert folded, "no title folded under another"
    counts: dict[tuple[str, str], set[int]] = {}
    for r in rows("index_versions"):
        if r["level"] >= 2:
            counts.setdefault((r["episode_id"], r["index_id"]), set()).add(r["live_members"])
    assert any(len(c) > 1 for c in counts.values()), "no fold whose live members changed"
    pins = rows("pin_versions")
    assert any(not r["shown"] for r in pins) and any(r["reinjected"] > 0 and r["shown"] for r in pins)
    assert any(r["text"] == ERASED for r in pins), "no pin redacted by an erasure"
    assert any(f["value"] == ERASED for r in rows("summary_versions") for f in r["inferences"])
    assert any(not r["remember"] for r in rows("raw_records"))


# --- scale ------------------------------------------------------------------------------------


def _heuristic_response(state: EpisodeState, user: str, *, overrides: bool) -> str:
    """What the heuristic summarizer would answer: detected facts, overriding the summaries it restates.

    Without overrides, restated summaries stay in the chain without the newest value, so capacity
    puts titles over them.
    """
    facts = list(dict((f.slot, f.value) for f in detect_facts(user)).items())
    if not facts:
        return "NONE"
    slots = {k for k, _ in facts}
    restated = [s.summary_id for s in state.active_chain() if s.facts and {k for k, _ in s.facts} <= slots]
    return _response(facts, restated if overrides else [])


def synthetic_ledger(path: Path, episodes: int, turns: int) -> Ledger:
    """A ledger of synthetic episodes driven through `decide`.

    Every other episode's summarizer overrides what it restates; every third episode erases a slot.
    """
    ledger = Ledger(path)
    cfg = MemoryConfig(window_turns=4, chain_budget=60, index_group_size=2, tokenizer=ESTIMATOR)
    for n, ep in enumerate(generate_synthetic(n_episodes=episodes, turns=turns, seed=11).episodes):
        episode = Episode(StreamKey("scale", "three_layer", ep.episode_id))
        episode.run(ledger, StartEpisode(config=cfg, lang=ep.lang))
        for t in ep.turns:
            turn = episode.state.turn + 1
            call = called(_heuristic_response(episode.state, t.user, overrides=n % 2 == 0), turn,
                          backend="heuristic", model="h")
            episode.run(ledger, record_turn(episode.state, turn=turn, user=t.user, agent=t.agent,
                                            occurred_at=t.occurred_at, summarizer=call))
            if n % 3 == 0 and episode.state.turn == turns // 2 and ep.facts:
                episode.run(ledger, Erase(legal_basis="scale", key_prefix="x", slot=ep.facts[0][0]))
    return ledger


def replicate(path: Path, copies: int) -> None:
    """Copy every stream `copies` times under new run ids, interleaving the copies' seqs."""
    conn = duckdb.connect(str(path))
    streams = conn.execute("SELECT max(stream_no) FROM streams").fetchone()
    assert streams is not None
    conn.execute("CREATE TABLE copies AS SELECT range AS k FROM range(?)", [copies])
    conn.execute("CREATE TABLE base AS SELECT * FROM events")
    conn.execute("DELETE FROM events")
    conn.execute(
        "INSERT INTO events SELECT * EXCLUDE (k) REPLACE (seq * $n + k AS seq, stream_no + k * $s AS stream_no, "
        "run_id || '-' || k AS run_id) FROM base, copies",
        {"n": copies, "s": streams[0]},
    )
    conn.execute("CREATE TABLE base_streams AS SELECT * FROM streams")
    conn.execute("DELETE FROM streams")
    conn.execute(
        "INSERT INTO streams SELECT * EXCLUDE (k) REPLACE (stream_no + k * $s AS stream_no, "
        "run_id || '-' || k AS run_id) FROM base_streams, copies",
        {"s": streams[0]},
    )
    conn.execute("DROP TABLE base; DROP TABLE base_streams; DROP TABLE copies")
    conn.close()


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "deep", reason="deep profile: HYPOTHESIS_PROFILE=deep")
def test_sql_rebuild_equals_the_fold_at_scale(tmp_path: Path) -> None:
    path = tmp_path / "scale.duckdb"
    synthetic_ledger(path, episodes=24, turns=40).close()
    base = Ledger(path, read_only=True)
    per_copy = base.last_seq
    base.close()
    replicate(path, max(1, 200_000 // per_copy))
    with Ledger(path) as ledger:
        started = time.perf_counter()
        by_sql = rebuild_sql_ledger(ledger)
        sql_s = time.perf_counter() - started
        started = time.perf_counter()
        by_fold = rebuild(ledger)
        fold_s = time.perf_counter() - started
        events = ledger.conn.execute("SELECT count(*) FROM events").fetchone()
    print(f"\n{events} events: sql {sql_s:.1f}s, fold {fold_s:.1f}s")
    assert by_sql == by_fold
    assert sum(len(rows) for rows in by_sql.values()) > 0
