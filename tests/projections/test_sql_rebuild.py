"""The set-based SQL rebuild equals the fold, row for row: property, golden replays, scale."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.synthetic import generate_synthetic
from gate.commands import LlmCall, RecordTurn, StartEpisode
from gate.decide import Command, decide
from gate.erasure import Erase
from gate.errors import CommandRejected
from gate.lexicon import detect_facts
from ledger.events import (
    EpisodeStarted,
    FactErased,
    IndexCreated,
    KeyShredded,
    OverrideRejected,
    RunStarted,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
    WindowEvicted,
)
from ledger.keys import KeyStore
from ledger.store import Ledger, StreamKey
from projections.config import MemoryConfig
from projections.errors import EvolveError, ProjectionError
from projections.materialise import rebuild
from projections.sql_rebuild import rebuild_sql, rebuild_sql_ledger
from projections.state import EpisodeState, evolve, fold
from projections.tokens import ESTIMATOR
from tests.projections import golden

SLOTS = ("floor", "team", "city")
VALUES = ("A", "B", "C", "[erased]")  # few values so that A -> B -> A happens; "[erased]" as a written value


def _response(facts: list[tuple[str, str]], overrides: list[str] | None) -> str:
    text = "note " + " ".join(f"{k} {v}" for k, v in facts)
    body = "\n[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]" if facts else ""
    tag = "" if overrides is None else "\n[OVERRIDES: " + (", ".join(overrides) or "none") + "]"
    return text + body + tag


responses = st.one_of(
    st.just("NONE"),
    st.just("garbage without any tags {{{"),
    st.builds(
        _response,
        st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), max_size=3),
        st.none() | st.lists(st.integers(1, 14).map(lambda n: f"s{n:04d}"), max_size=3),
    ),
)


@dataclass(frozen=True)
class Turn:
    response: str | None  # None: a turn with no summarizer call


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


Step = Turn | EraseSlot | EraseRecord | EraseSubject

steps = st.one_of(  # turns three times as often as each kind of erasure, so there is something to erase
    st.builds(Turn, st.none() | responses),
    st.builds(Turn, responses),
    st.builds(Turn, responses),
    st.builds(EraseSlot, st.sampled_from(SLOTS), st.none() | st.sampled_from(VALUES)),
    st.builds(EraseRecord, st.integers(0, 20)),
    st.builds(EraseSubject),
)
configs = st.builds(
    lambda window, budget: MemoryConfig(
        window_turns=window, chain_budget=budget, index_group_size=2, tokenizer=ESTIMATOR, personal_data=True
    ),
    st.integers(1, 3),
    st.sampled_from([30, 45, 60, 400]),
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

    def command(self, step: Step) -> Command | None:
        if isinstance(step, Turn):
            n = self.state.turn + 1
            call = None if step.response is None else LlmCall(
                purpose="summarize", backend="scripted", model="script", prompt_hash=f"h{n}", response=step.response
            )
            return RecordTurn(turn=n, user=f"user says {n}", agent="ok", occurred_at=f"2024-01-01T00:{n:02d}:00",
                              summarizer=call)
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
        command = episode.command(step)
        if command is not None:
            episode.run(ledger, command)
    return ledger


@given(
    st.lists(configs, min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), steps), min_size=1, max_size=40),
)
def test_sql_rebuild_equals_the_fold(cfgs: list[MemoryConfig], script: list[tuple[int, Step]]) -> None:
    ledger = build_ledger(cfgs, script)
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)
    assert rebuild_sql_ledger(ledger, run_id="run1") == rebuild(ledger, run_id="run1")


# --- beyond decide: any sequence `evolve` accepts ------------------------------------------
# Rewritten ids, a second episode_started, duplicate members, shreds of things not there yet:
# `decide` never writes these, but the fold defines them, so the SQL must agree there too.

RIDS, SIDS, IIDS = ("r1", "r2", "r3"), ("s1", "s2", "s3"), ("i1", "i2")
small_text = st.sampled_from(("t", "u", "[erased]"))
fact_lists = st.lists(st.tuples(st.sampled_from(SLOTS), st.sampled_from(VALUES)), max_size=3).map(tuple)
turns = st.integers(0, 4)


def _ids(pool: tuple[str, ...], min_size: int = 0) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(pool), min_size=min_size, max_size=3).map(tuple)


raw_events = st.one_of(
    st.builds(EpisodeStarted, turn=turns, config=st.just(MemoryConfig(tokenizer=ESTIMATOR).to_dict())),
    st.builds(TurnRecorded, turn=turns, record_id=st.sampled_from(RIDS), text=small_text, agent=small_text,
              occurred_at=st.none() | st.just("2024-01-01"), source=st.none() | st.just("chat")),
    st.builds(WindowEvicted, turn=turns, record_id=st.sampled_from(RIDS)),
    st.builds(SummaryCreated, turn=turns, summary_id=st.sampled_from(SIDS), text=small_text, facts=fact_lists,
              overrides=_ids(SIDS), raw_ids=_ids(RIDS), truncated=st.booleans()),
    st.builds(SummaryOverridden, turn=turns, summary_id=st.sampled_from(SIDS), superseded_by=_ids(SIDS)),
    st.builds(IndexCreated, turn=turns, index_id=st.sampled_from(IIDS), members=_ids(SIDS, 1), text=small_text,
              level=st.integers(1, 2)),
    st.builds(FactErased, turn=turns, summary_id=st.sampled_from(SIDS), slot=st.sampled_from(SLOTS),
              legal_basis=st.just("b")),
    st.builds(KeyShredded, turn=turns, key_ids=st.just(("k",)), legal_basis=st.just("b"), request=st.just("r"),
              records=_ids(RIDS), summaries=_ids(SIDS), indexes=_ids(IIDS)),
    st.builds(OverrideRejected, turn=turns, summary_id=st.none() | st.sampled_from(SIDS), rejected=_ids(SIDS),
              reason=st.just("not in the chain")),
)


@given(st.lists(st.tuples(st.integers(0, 1), raw_events), min_size=1, max_size=40))
def test_sql_rebuild_equals_the_fold_for_any_sequence_evolve_accepts(script: list[tuple[int, Any]]) -> None:
    ledger, states = Ledger(":memory:"), [EpisodeState(), EpisodeState()]
    for which, event in script:
        try:
            after = evolve(states[which], event)
        except EvolveError:
            continue  # it names a summary that is not there: the fold would refuse the stream
        states[which] = after
        stream = _stream(which)
        ledger.append(stream, [event], expected_version=ledger.stream_version(stream))
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)


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
                  key_for=lambda e: "k#turn:1")
    with pytest.raises(ProjectionError, match="sealed values"):
        rebuild_sql_ledger(ledger)


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
            "window_evicted"} <= kinds
    registry = [r for case in names for r in golden.read_expected(case)["fact_versions"]]
    assert any(r["erased"] for r in registry), "no slot with every value erased"


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
            call = LlmCall(purpose="summarize", backend="heuristic", model="h", prompt_hash="h",
                           response=_heuristic_response(episode.state, t.user, overrides=n % 2 == 0))
            episode.run(ledger, RecordTurn(turn=episode.state.turn + 1, user=t.user, agent=t.agent,
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
