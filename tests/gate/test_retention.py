"""Retention as a pure decision: given a stream's state, a policy and now, the events that expire turns."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledgermem.gate import retention as retention_module
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.retention import ApplyRetention, RetentionPolicy, decide_retention, parse_duration
from ledgermem.projections.events import FactErased, FactExpired, KeyShredded, RetentionApplied
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
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


def command(policy: RetentionPolicy, now: datetime) -> ApplyRetention:
    return ApplyRetention(policy=policy, now=now, turn_times=TIMES, key_prefix=str(STREAM))


def expired_turns(events: tuple[Any, ...]) -> tuple[int, ...]:
    applied = [e for e in events if isinstance(e, RetentionApplied)]
    return applied[0].turns if applied else ()


def test_keep_n_raw_turns_expires_the_older_ones_and_carries_the_policy(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1)
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=1)))
    assert expired_turns(events) == (1, 3)  # turn 2 holds a pinned constraint; turn 4 is the newest
    kinds = [type(e) for e in events]
    assert kinds == [FactExpired, FactExpired, FactErased, FactErased, KeyShredded, RetentionApplied]
    shredded = next(e for e in events if isinstance(e, KeyShredded))
    assert set(shredded.key_ids) >= {f"{STREAM}#turn:1", f"{STREAM}#turn:3"}
    assert f"{STREAM}#turn:2" not in shredded.key_ids and shredded.pins == ()
    assert shredded.records == ("r0001", "r0003") and "retention policy of 'acme'" in shredded.legal_basis
    expired = [e for e in events if isinstance(e, FactExpired)]
    assert {(e.slot, e.rule) for e in expired} == {("desk", "raw_turns"), ("city", "raw_turns")}
    assert all(e.policy == policy.as_dict() for e in expired)
    assert all(e.collateral for e in events if isinstance(e, FactErased))  # collateral of the raw expiry
    after = fold(list(events), memory.state)
    assert after.raw["r0001"].user == ERASED and after.raw["r0004"].user == SCRIPT[3][0]
    assert "desk" not in after.current_values() and after.current_values()["team"][0] == "6"


def test_facts_expire_after_their_duration_and_now_is_an_argument(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", fact_ttl_seconds=parse_duration("90m"))
    # 90 minutes after turn 1 and half an hour before turn 2 is 90 minutes old: only turn 1 expires.
    assert expired_turns(decide_retention(memory.state, command(policy, T0 + timedelta(minutes=90)))) == (1,)
    assert expired_turns(decide_retention(memory.state, command(policy, T0 + timedelta(minutes=89)))) == ()
    late = decide_retention(memory.state, command(policy, T0 + timedelta(hours=5)))
    assert expired_turns(late) == (1, 3, 4)  # never turn 2, whatever the time
    assert {e.rule for e in late if isinstance(e, FactExpired)} == {"fact_ttl"}
    assert not any(e.collateral for e in late if isinstance(e, FactErased))
    # Pure: the same state, policy and time give the same events.
    assert late == decide_retention(memory.state, command(policy, T0 + timedelta(hours=5)))


def test_an_applied_policy_finds_nothing_more_to_expire(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=60)
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=2)))
    assert expired_turns(events) == (1, 3, 4)
    assert decide_retention(fold(list(events), memory.state), command(policy, T0 + timedelta(days=3))) == ()


def test_pinned_constraints_are_never_expired(memory: Memory) -> None:
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=1)
    after = fold(list(decide_retention(memory.state, command(policy, T0 + timedelta(days=365)))), memory.state)
    pin = next(p for p in after.pins.values() if p.kind == "constraint")
    assert pin.text == "Budget must stay under 500 euros." and after.raw["r0002"].user == SCRIPT[1][0]


def test_must_fail_control_without_the_pin_protection_the_pinned_turn_expires(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention_module, "PROTECTED_KINDS", ())
    policy = RetentionPolicy(namespace="acme", raw_turns=1, fact_ttl_seconds=1)
    events = decide_retention(memory.state, command(policy, T0 + timedelta(days=365)))
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
