"""Retention as a pure decision: given a stream's state, a policy and now, the events that expire turns.

`raw_turns` shreds the raw key of a turn only: the record reads as erased, the summary and its facts
stay readable. Where the ledger shows a raw record sealed under its turn key (written before the raw
key existed) the turn expires whole and its facts go as collateral: the must-fail control of the first.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledgermem.gate import erasure as erasure_module
from ledgermem.gate import retention as retention_module
from ledgermem.gate.erasure import raw_key, turn_key
from ledgermem.gate.invariants import check_i3
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.retention import ApplyRetention, RetentionPolicy, decide_retention, parse_duration
from ledgermem.projections.events import (
    FactErased, FactExpired, KeyShredded, LlmCalled, RetentionApplied, SummaryCreated, TurnRecorded,
)
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.erasure import raw_keys_of
from ledgermem.memory.memory import Memory
from ledgermem.projections.state import EpisodeState, fold

STREAM = StreamKey("live", "three_layer", "acme:u:s")
T0 = datetime(2026, 11, 1, 9, 0, 0)
SCRIPT = [  # one turn an hour from T0; turn 2 is pinned
    ("My desk is A1.", "desk A1\n[FACTS: desk=A1]\n[OVERRIDES: none]"),
    ("My budget is 500 euros.", "budget 500 euros\n[FACTS: budget=500 euros]\n[OVERRIDES: none]"),
    ("I live in Lyon.", "lives in Lyon\n[FACTS: city=Lyon]\n[OVERRIDES: none]"),
    ("My team size is 6.", "team of six\n[FACTS: team=6]\n[OVERRIDES: none]"),
]
TIMES = {n + 1: T0 + timedelta(hours=n) for n in range(len(SCRIPT))}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    responses = iter(r for _, r in SCRIPT)
    m = Memory(Ledger(tmp_path / "l.duckdb"), STREAM, ScriptedBackend(lambda msgs, p: next(responses, "NONE")))
    for n, (user, _) in enumerate(SCRIPT):
        m.add_turn(user, "Noted.")
        if n == 1:
            m.pin("Budget must stay under 500 euros.")
    return m


def command(policy: RetentionPolicy, now: datetime, memory: Memory | None = None) -> ApplyRetention:
    """The command the service gives: with the keys the ledger records as sealing each raw record."""
    raw = raw_keys_of(memory.ledger, STREAM) if memory is not None else {}
    return ApplyRetention(policy=policy, now=now, turn_times=TIMES, key_prefix=str(STREAM), raw_keys=raw)


def applied_and_reopened(memory: Memory, events: tuple[Any, ...]) -> Memory:
    """Commit the events as the service does and reopen the memory, which destroys the shredded keys."""
    memory.commit(events)
    return Memory(memory.ledger, STREAM, "heuristic")


def texts(memory: Memory, kind: type) -> dict[int, str]:
    return {r.event.turn: r.event.text for r in memory.ledger.read(stream=STREAM) if isinstance(r.event, kind)}


def expired_turns(events: tuple[Any, ...]) -> tuple[int, ...]:
    applied = [e for e in events if isinstance(e, RetentionApplied)]
    return applied[0].turns if applied else ()


def test_keep_n_raw_turns_expires_only_the_raw_text_and_keeps_summaries_and_facts(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1)
    assert raw_keys_of(memory.ledger, STREAM)[1] == (raw_key(str(STREAM), 1),)  # what the ledger records
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=1), memory))
    assert expired_turns(events) == (1, 3)  # turn 2 holds a pinned constraint; turn 4 is the newest
    assert [type(e) for e in events] == [KeyShredded, RetentionApplied]  # no fact expired, none erased
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    assert shredded.key_ids == (raw_key(str(STREAM), 1), raw_key(str(STREAM), 3))  # never a turn key
    assert shredded.records == ("r0001", "r0003") and shredded.summaries == () and shredded.pins == ()
    assert "retention policy of 'acme'" in shredded.legal_basis
    applied = next(e for e in events if isinstance(e, RetentionApplied))
    assert applied.key_ids == shredded.key_ids and applied.rules == ("raw_turns", "raw_turns") and applied.facts == 0
    after = fold(list(events), memory.state)
    assert after.raw["r0001"].user == ERASED and after.raw["r0004"].user == SCRIPT[3][0]
    assert after.current_values()["desk"][0] == "A1" and after.current_values()["city"][0] == "Lyon"
    assert check_i3(str(STREAM), 0, after) == []  # a fact whose record's raw text expired is not a violation
    # Control: the record erased with its turn key while its fact survives (an erasure that forgot the fact) is.
    forgot = KeyShredded(turn=4, key_ids=(turn_key(str(STREAM), 1),), legal_basis="b", request="r", records=("r0001",))
    assert [v.ids for v in check_i3(str(STREAM), 0, fold([forgot], memory.state))] == [("s0001", "r0001")]
    # In the ledger: the records of turns 1 and 3 read as erased, the summaries written from them do not.
    reopened = applied_and_reopened(memory, events)
    records, summaries = texts(reopened, TurnRecorded), texts(reopened, SummaryCreated)
    assert records[1] == ERASED and records[3] == ERASED and records[4] == SCRIPT[3][0]
    assert summaries[1].startswith("desk A1") and summaries[3].startswith("lives in Lyon")
    assert reopened.state.current_values()["desk"][0] == "A1" and reopened.state.raw["r0003"].user == ERASED
    assert reopened.ledger.keys is not None and raw_key(str(STREAM), 1) not in reopened.ledger.keys
    assert turn_key(str(STREAM), 1) in reopened.ledger.keys
    # Applying it again finds nothing: the raw text of those turns is already gone.
    assert decide_retention(reopened.state, command(policy, T0 + timedelta(days=2), reopened)) == ()


def test_control_raw_text_sealed_under_the_turn_key_loses_the_facts_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a ledger written before the raw key: every value of a turn under its turn key.
    monkeypatch.setattr(erasure_module, "RAW_EVENTS", ())
    monkeypatch.setattr(erasure_module, "RAW_PURPOSES", ())
    responses = iter(r for _, r in SCRIPT)
    old = Memory(Ledger(tmp_path / "old.duckdb"), STREAM, ScriptedBackend(lambda msgs, p: next(responses, "NONE")))
    for user, _ in SCRIPT:
        old.add_turn(user, "Noted.")
    assert raw_keys_of(old.ledger, STREAM)[1] == (turn_key(str(STREAM), 1),)
    events = decide_retention(old.state, command(RetentionPolicy(namespace="acme", raw_turns=1),
                                                 T0 + timedelta(days=1), old))
    assert expired_turns(events) == (1, 2, 3)
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    assert turn_key(str(STREAM), 1) in shredded.key_ids  # the only key that reaches the raw text
    assert {e.slot for e in events if isinstance(e, FactExpired)} == {"desk", "budget", "city"}
    assert all(e.collateral for e in events if isinstance(e, FactErased))
    after = fold(list(events), old.state)
    assert "desk" not in after.current_values() and after.raw["r0001"].user == ERASED  # what the test above catches
    reopened = applied_and_reopened(old, events)
    assert texts(reopened, SummaryCreated)[1] == ERASED and texts(reopened, TurnRecorded)[1] == ERASED


def test_a_turn_the_decision_is_not_told_about_expires_whole(memory: Memory) -> None:
    # Without the ledger's record of the keys, no raw text may be left readable: both keys go, and the facts.
    events = decide_retention(memory.state, command(RetentionPolicy(namespace="acme", raw_turns=1),
                                                    T0 + timedelta(days=1)))
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    assert {raw_key(str(STREAM), 1), turn_key(str(STREAM), 1)} <= set(shredded.key_ids)
    assert all(e.collateral for e in events if isinstance(e, FactErased)) and shredded.summaries


def test_facts_expire_later_with_both_keys_of_a_turn_whose_raw_text_already_expired(memory: Memory) -> None:
    raw_only = decide_retention(memory.state, command(RetentionPolicy(namespace="acme", raw_turns=1),
                                                      T0 + timedelta(days=1), memory))
    reopened = applied_and_reopened(memory, raw_only)
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=60)
    events = decide_retention(reopened.state, command(policy, T0 + timedelta(days=2), reopened))
    assert expired_turns(events) == (1, 3, 4)
    assert {e.rule for e in events if isinstance(e, FactExpired)} == {"fact_ttl"}
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    prefix = str(STREAM)
    # The raw keys of turns 1 and 3 were destroyed already: named once, by the first application.
    assert set(shredded.key_ids) == {turn_key(prefix, 1), turn_key(prefix, 3), turn_key(prefix, 4), raw_key(prefix, 4)}
    after = fold(list(events), reopened.state)
    assert "desk" not in after.current_values() and "budget" in after.current_values()


def test_a_live_turns_reply_goes_with_its_raw_text_and_its_summarizer_response_stays(tmp_path: Path) -> None:
    def model(messages: Any, purpose: str) -> str:
        return "Noted, desk A1." if purpose == "respond" else "desk A1\n[FACTS: desk=A1]\n[OVERRIDES: none]"

    m = Memory(Ledger(tmp_path / "l.duckdb"), STREAM, ScriptedBackend(model))
    m.respond("My desk is A1.")
    m.respond("Lovely weather.")
    prefix, sealed = str(STREAM), m.ledger.sealed_keys(STREAM)
    keys = {(r.event.event_type, getattr(r.event, "purpose", None)): sealed.get(r.seq)
            for r in m.ledger.read(stream=STREAM) if r.event.turn == 1}
    assert keys[("turn_recorded", None)] == keys[("llm_called", "respond")] == {raw_key(prefix, 1)}
    assert keys[("llm_called", "summarize")] == keys[("summary_created", None)] == {turn_key(prefix, 1)}
    events = decide_retention(m.state, ApplyRetention(policy=RetentionPolicy(namespace="acme", raw_turns=1),
                                                      now=T0, turn_times=TIMES, key_prefix=prefix,
                                                      raw_keys=raw_keys_of(m.ledger, STREAM)))
    reopened = applied_and_reopened(m, events)
    calls = {r.event.purpose: r.event.text for r in reopened.ledger.read(stream=STREAM, event_types=["llm_called"])
             if isinstance(r.event, LlmCalled) and r.event.turn == 1}
    assert calls == {"respond": ERASED, "summarize": "desk A1\n[FACTS: desk=A1]\n[OVERRIDES: none]"}
    assert reopened.state.current_values()["desk"][0] == "A1"


def test_facts_expire_after_their_duration_and_now_is_an_argument(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", fact_ttl_seconds=parse_duration("90m"))
    # 90 minutes after turn 1 and half an hour before turn 2 is 90 minutes old: only turn 1 expires.
    assert expired_turns(decide_retention(memory.state, command(policy, T0 + timedelta(minutes=90)))) == (1,)
    assert expired_turns(decide_retention(memory.state, command(policy, T0 + timedelta(minutes=89)))) == ()
    late = decide_retention(memory.state, command(policy, T0 + timedelta(hours=5), memory))
    assert expired_turns(late) == (1, 3, 4)  # never turn 2, whatever the time
    assert {e.rule for e in late if isinstance(e, FactExpired)} == {"fact_ttl"}
    assert not any(e.collateral for e in late if isinstance(e, FactErased))
    # Pure: the same state, policy and time give the same events.
    assert late == decide_retention(memory.state, command(policy, T0 + timedelta(hours=5), memory))
    shredded = next(e for e in late if isinstance(e, KeyShredded))
    assert {turn_key(str(STREAM), 1), raw_key(str(STREAM), 1)} <= set(shredded.key_ids)  # both keys of the turn


def test_an_applied_policy_finds_nothing_more_to_expire(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=60)
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=2), memory))
    assert expired_turns(events) == (1, 3, 4)
    assert decide_retention(fold(list(events), memory.state), command(policy, T0 + timedelta(days=3), memory)) == ()


def test_pinned_constraints_are_never_expired(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=1)
    after = fold(list(decide_retention(memory.state, command(policy, T0 + timedelta(days=365), memory))), memory.state)
    pin = next(p for p in after.pins.values() if p.kind == "constraint")
    assert pin.text == "Budget must stay under 500 euros." and after.raw["r0002"].user == SCRIPT[1][0]


def test_must_fail_control_without_the_pin_protection_the_pinned_turn_expires(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention_module, "PROTECTED_KINDS", ())
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=1)
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=365), memory))
    assert 2 in expired_turns(events)
    after = fold(list(events), memory.state)
    assert after.raw["r0002"].user == ERASED  # the check above would have caught this


def test_bad_policies_and_streams_in_clear_are_refused() -> None:
    with pytest.raises(CommandRejected, match="raw_turns must be at least 1"):
        RetentionPolicy(namespace="acme", raw_turns=0)
    with pytest.raises(CommandRejected, match="not a duration"):
        parse_duration("30 days")
    assert parse_duration("1d12h") == 129600
    with pytest.raises(CommandRejected, match="fact_ttl_seconds must be an integer"):
        RetentionPolicy.from_dict({"namespace": "acme", "fact_ttl_seconds": "30d"})
    clear = EpisodeState()
    clear = EpisodeState(config=type(clear.config)(personal_data=False), started=True)
    with pytest.raises(CommandRejected, match="no personal data"):
        decide_retention(clear, command(RetentionPolicy(namespace="acme", raw_turns=1), T0))
