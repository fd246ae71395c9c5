"""Retention as a decision: given a stream's state, a policy and the time now, which turns expire.

A policy keeps the raw text of the newest `raw_turns` turns and expires a
fact `fact_ttl_seconds` after the turn that stated it; a turn holding a
pinned constraint never expires. The unit that expires is a turn's key.
A turn has two (`gate.erasure`): its raw key seals its raw text (the
record, the reply and the tool calls of the conversation), its turn key
the memory derived from it (the summarizer's response, the summary and its
facts). `raw_turns` shreds the raw key only: the record reads as erased,
the summary and its facts stay readable, and nothing is said of them.
`fact_ttl` shreds both keys and erases the turn's facts (and every capacity
merge and index title over its summary), so the projections and a replay
show them erased. A turn whose raw record the ledger shows sealed under its
turn key (a ledger written before the raw key existed; `raw_keys` is read
from the ledger, a turn missing from it has both its keys named) cannot
lose its raw text alone: `raw_turns` expires it whole, and its facts are
erased as collateral and say so. What differs from an erasure is the
reason, carried by the events: each expired fact gets a `fact_expired`
naming the policy and the rule that expired it, the erasure's legal basis
is the policy, and a `retention_applied` closes the application with the
policy, `now`, the keys shredded and everything it expired.

Pure: `now` and the time each turn was recorded are arguments; the
application reads the clock and the ledger. An empty tuple: nothing expired.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ledgermem.gate.erasure import index_key, merge_key, raw_record_keys, turn_key
from ledgermem.gate.errors import CommandRejected
from ledgermem.ledger.events import Event
from ledgermem.projections.events import FactErased, FactExpired, KeyShredded, RetentionApplied
from ledgermem.ledger.keys import ERASED
from ledgermem.projections.state import EpisodeState, record_id_for

_DURATION = re.compile(r"(\d+)([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
#: Pins of these kinds are never expired, nor is anything else sealed under their turn's key.
PROTECTED_KINDS = ("constraint",)


def parse_duration(text: str, name: str = "duration") -> int:
    """`90s`, `15m`, `12h`, `30d`, `2w` or a combination (`1d12h`) as seconds; anything else is refused."""
    compact = text.strip().lower()
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise CommandRejected(f"{name}: {text!r} is not a duration like 90s, 15m, 12h, 30d, 2w or 1d12h")
    seconds = sum(int(n) * _UNIT[u] for n, u in parts)
    if seconds <= 0:
        raise CommandRejected(f"{name}: {text!r} is not a positive duration")
    return seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionPolicy:
    """What a namespace keeps: `raw_turns` newest turns of raw text; facts for `fact_ttl_seconds` (None: forever)."""

    namespace: str
    raw_turns: int | None = None
    fact_ttl_seconds: int | None = None

    def __post_init__(self) -> None:
        if self.raw_turns is not None and self.raw_turns < 1:
            raise CommandRejected(f"retention of {self.namespace!r}: raw_turns must be at least 1, got "
                                  f"{self.raw_turns!r}")
        if self.fact_ttl_seconds is not None and self.fact_ttl_seconds < 1:
            raise CommandRejected(f"retention of {self.namespace!r}: fact_ttl_seconds must be at least 1, got "
                                  f"{self.fact_ttl_seconds!r}")

    def describe(self) -> str:
        rules = []
        if self.raw_turns is not None:
            rules.append(f"keep the raw text of the newest {self.raw_turns} turns")
        if self.fact_ttl_seconds is not None:
            rules.append(f"expire facts {self.fact_ttl_seconds}s after the turn that stated them")
        return f"retention policy of {self.namespace!r}: " + ("; ".join(rules) or "keep everything") + \
            "; pinned constraints never expire"

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "raw_turns": self.raw_turns, "fact_ttl_seconds": self.fact_ttl_seconds}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetentionPolicy:
        unknown = set(data) - {"namespace", "raw_turns", "fact_ttl_seconds"}
        if unknown:
            raise CommandRejected(f"retention policy: unknown fields {sorted(unknown)}")
        for name in ("raw_turns", "fact_ttl_seconds"):
            value = data.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise CommandRejected(f"retention policy of {data.get('namespace')!r}: {name} must be an integer "
                                      f"or null, got {value!r}")
        namespace = data.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise CommandRejected(f"retention policy: namespace must be a non-empty string, got {namespace!r}")
        return cls(namespace=namespace, raw_turns=data.get("raw_turns"), fact_ttl_seconds=data.get("fact_ttl_seconds"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyRetention:
    """Apply `policy` at `now` (naive UTC); `turn_times` holds when each turn was recorded (naive UTC),
    `raw_keys` the keys the ledger records as sealing each turn's raw record (`gate.erasure.raw_record_keys`)."""

    policy: RetentionPolicy
    now: datetime
    turn_times: Mapping[int, datetime]
    key_prefix: str
    raw_keys: Mapping[int, Sequence[str]] = field(default_factory=dict)


def protected_turns(state: EpisodeState) -> set[int]:
    """Turns holding a pinned constraint: never expired."""
    return {p.turn for p in state.pins.values() if p.kind in PROTECTED_KINDS}


def expiring_turns(state: EpisodeState, cmd: ApplyRetention) -> dict[int, str]:
    """Turn -> the rule that expires it (`raw_turns` or `fact_ttl`), pinned turns left out."""
    found: dict[int, str] = {}
    policy = cmd.policy
    if policy.fact_ttl_seconds is not None:
        cutoff = cmd.now - timedelta(seconds=policy.fact_ttl_seconds)
        for s in state.summaries.values():
            stated = cmd.turn_times.get(s.turn)
            if (not s.merged_from and stated is not None and stated <= cutoff
                    and any(v != ERASED for _, v in s.facts)):
                found[s.turn] = "fact_ttl"
    if policy.raw_turns is not None:
        newest = max((r.turn for r in state.raw.values()), default=0)
        for r in state.raw.values():
            if r.turn <= newest - policy.raw_turns and r.user != ERASED and r.turn not in found:
                found[r.turn] = "raw_turns"
    shredded = set(state.shredded_keys)
    for turn in protected_turns(state):
        found.pop(turn, None)
    for turn, rule in list(found.items()):
        # Already expired: the turn key (everything of the turn), or for raw_turns a key of its raw record.
        gone = turn_key(cmd.key_prefix, turn) in shredded or (
            rule == "raw_turns" and any(k in shredded for k in raw_record_keys(cmd.key_prefix, turn, cmd.raw_keys)))
        if gone:
            del found[turn]
    return found


def whole_turns(cmd: ApplyRetention, expiring: Mapping[int, str]) -> set[int]:
    """The expiring turns whose facts go with them: `fact_ttl`, and a raw expiry of a raw record sealed under
    its turn key (where the raw text cannot go alone)."""
    return {t for t, rule in expiring.items()
            if rule == "fact_ttl" or turn_key(cmd.key_prefix, t) in raw_record_keys(cmd.key_prefix, t, cmd.raw_keys)}


def decide_retention(state: EpisodeState, cmd: ApplyRetention) -> tuple[Event, ...]:
    """`fact_expired` per fact, the erasure's `fact_erased`s and `key_shredded`, then `retention_applied`."""
    if not state.config.personal_data:
        raise CommandRejected("retention: this stream declared that it holds no personal data, so its values were "
                              "stored in clear and cannot be crypto-shredded")
    expiring = expiring_turns(state, cmd)
    if not expiring:
        return ()
    prefix, basis, policy = cmd.key_prefix, cmd.policy.describe(), cmd.policy.as_dict()
    whole = whole_turns(cmd, expiring)
    by_turn = {s.summary_id for s in state.summaries.values() if s.turn in whole and not s.merged_from}
    # A capacity merge derives from its members and is sealed under its own key: it goes when a member does.
    merged = {s.summary_id for s in state.summaries.values() if s.merged_from and set(s.merged_from) & by_turn}
    summaries = sorted(by_turn | merged)
    indexes = sorted(_titles_over(state, set(summaries)))
    pins = sorted(p.pin_id for p in state.pins.values() if p.turn in whole)  # open loops, never constraints
    records = sorted(record_id_for(t) for t in expiring if record_id_for(t) in state.raw)
    shredded = set(state.shredded_keys)
    raw = {k for t in expiring for k in raw_record_keys(prefix, t, cmd.raw_keys)}
    keys = sorted(({turn_key(prefix, t) for t in whole} | raw | {index_key(prefix, i) for i in indexes}
                   | {merge_key(prefix, m) for m in merged}) - shredded)
    facts = [(sid, k) for sid in summaries for k, v in state.summaries[sid].facts if v != ERASED]
    events: list[Event] = []
    for sid, slot in facts:
        rule = expiring.get(state.summaries[sid].turn, "fact_ttl")
        stated = cmd.turn_times.get(state.summaries[sid].turn)
        events.append(FactExpired(turn=state.turn, summary_id=sid, slot=slot, rule=rule, policy=policy,
                                  stated_at=stated.isoformat() + "Z" if stated is not None else None,
                                  applied_at=cmd.now.isoformat() + "Z"))
    events += [FactErased(turn=state.turn, summary_id=sid, slot=slot, legal_basis=basis,
                          collateral=expiring.get(state.summaries[sid].turn) == "raw_turns")
               for sid, slot in facts]
    turns = ", ".join(f"{t} ({expiring[t]})" for t in sorted(expiring))
    events.append(KeyShredded(turn=state.turn, key_ids=tuple(keys), legal_basis=basis,
                              request=f"retention: turns {turns}", records=tuple(records),
                              summaries=tuple(summaries), indexes=tuple(indexes), pins=tuple(pins)))
    events.append(RetentionApplied(turn=state.turn, policy=policy, applied_at=cmd.now.isoformat() + "Z",
                                   key_ids=tuple(keys), turns=tuple(sorted(expiring)),
                                   rules=tuple(expiring[t] for t in sorted(expiring)), records=tuple(records),
                                   summaries=tuple(summaries), facts=len(facts),
                                   kept_pinned=tuple(sorted(protected_turns(state)))))
    return tuple(events)


def _titles_over(state: EpisodeState, summaries: set[str]) -> set[str]:
    """Every index title over an expired summary, directly or through the titles folded under it."""
    found = {e.index_id for e in state.indexes.values() if set(e.members) & summaries}
    while True:
        more = {e.index_id for e in state.indexes.values() if set(e.members) & found} - found
        if not more:
            return found
        found |= more
