"""Retention policies of a live folder and their application to a stream.

The policies are declared in `retention.json` of the live folder (written by
`ledgermem live retention set`, read again at every application, so a change
needs no restart), one per namespace:

    {"policies": [{"namespace": "acme", "raw_turns": 20, "fact_ttl_seconds": 2592000}]}

A stream follows the policy of the longest namespace that covers its address
(by segments: `acme` covers `acme/user-42/s1`, not `acme-corp/...`). Applying
reads the clock and the time each turn was recorded, lets
`gate.retention.decide_retention` decide (pure, `now` an argument), commits
its events through the stream's `Memory` as one attributed write (operation
`retention`), and reopens the memory, which destroys the shredded keys and
rebuilds the projection file as an erasure does. It runs when a token with
the erase scope asks (`POST /api/memory/retention/apply`), or on a schedule
inside the server (`ledgermem live serve --retention-every 1h`,
`RetentionSchedule`), whose writes are attributed to `SCHEDULE_TOKEN_ID`. The values that expired are
held in memory only to scan for residue afterwards (`memory.erasure`), never
written.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.retention import (ApplyRetention, RetentionPolicy, decide_retention, expiring_turns,
                                      whole_turns)
from ledgermem.projections.events import FactExpired, RetentionApplied
from ledgermem.ledger.keys import ERASED
from ledgermem.memory.erasure import mentions, raw_keys_of, scan_detail
from ledgermem.projections.state import record_id_for
from ledgermem.service.errors import BadRequest, ServeError
from ledgermem.service.live import LiveStore, Write, stream_key
from ledgermem.service.tokens import Token, split_address

POLICY_FILE = "retention.json"
#: The token id the server's own retention schedule records on its writes (no secret stands behind it).
SCHEDULE_TOKEN_ID = "server:retention-schedule"


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class RetentionPolicies:
    """The policies of one live folder, read from and written to its `retention.json`."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / POLICY_FILE

    def load(self) -> dict[str, RetentionPolicy]:
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ServeError(f"{self.path.name}: not readable JSON ({exc}); fix it or set the policies again with "
                             "`ledgermem live retention set`") from None
        if not isinstance(data, dict) or not isinstance(data.get("policies"), list):
            raise ServeError(f"{self.path.name}: expected {{\"policies\": [...]}}")
        out = {}
        for n, item in enumerate(data["policies"]):
            if not isinstance(item, dict):
                raise ServeError(f"{self.path.name}: policy {n} is not an object")
            try:
                policy = RetentionPolicy.from_dict(item)
                split_address(policy.namespace, parameter="namespace", least=1)
            except (CommandRejected, BadRequest) as exc:
                raise ServeError(f"{self.path.name}: policy {n}: {exc}") from None
            out[policy.namespace] = policy
        return out

    def save(self, policies: dict[str, RetentionPolicy]) -> None:
        text = json.dumps({"policies": [p.as_dict() for _, p in sorted(policies.items())]}, indent=2) + "\n"
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)  # never a half-written file

    def set(self, policy: RetentionPolicy) -> None:
        split_address(policy.namespace, parameter="namespace", least=1)
        if policy.raw_turns is None and policy.fact_ttl_seconds is None:
            raise BadRequest(f"retention of {policy.namespace!r}: give raw turns to keep, a fact expiry, or both "
                             "(`live retention clear` removes a policy)", "namespace")
        self.save({**self.load(), policy.namespace: policy})

    def clear(self, namespace: str) -> bool:
        policies = self.load()
        found = policies.pop(namespace, None)
        if found is not None:
            self.save(policies)
        return found is not None

    def policy_for(self, address: tuple[str, ...]) -> RetentionPolicy | None:
        """The policy of the longest namespace covering `address` (None: keep everything)."""
        covering = [p for ns, p in self.load().items() if address[: len(ns.split("/"))] == tuple(ns.split("/"))]
        return max(covering, key=lambda p: len(p.namespace.split("/")), default=None)


def apply_retention(store: LiveStore, address: tuple[str, ...], token: Token,
                    clock: Callable[[], datetime] = _utcnow) -> dict[str, Any]:
    """Apply the stream's policy now: the events it wrote, what expired, and the residue scan of the expired values.

    The caller holds the stream's lock and the store's (`LiveStore.holding`).
    """
    name = "/".join(address)
    policy = RetentionPolicies(store.folder).policy_for(address)
    if policy is None:
        return {"stream": name, "policy": None, "applied": False, "expired_turns": [], "events": []}
    memory = store.memory(address, token)
    key = stream_key(address)
    times = {}
    for r in store.ledger.read(stream=key, event_types=["turn_recorded"]):
        times.setdefault(r.event.turn, r.recorded_at)
    now = clock()
    command = ApplyRetention(policy=policy, now=now, turn_times=times, key_prefix=memory.key_prefix,
                             raw_keys=raw_keys_of(store.ledger, key))
    state = memory.state
    values = _expiring_values(state, command)
    try:
        events = decide_retention(state, command)
    except CommandRejected as exc:
        raise BadRequest(str(exc), "stream") from None
    if not events:
        return {"stream": name, "policy": policy.as_dict(), "applied": False, "at": now.isoformat() + "Z",
                "expired_turns": [], "events": []}
    with store.writing(Write(name, "retention", token.token_id)):
        recorded = memory.commit(events)
        memory = store.reopen(address, token)  # destroys the shredded keys, rebuilds the projections
    applied = next(e for e in events if isinstance(e, RetentionApplied))
    residue, shared, short = scan_detail(store.ledger, key, store.projections, memory.render().text, values)
    return {"stream": name, "policy": policy.as_dict(), "applied": True, "at": now.isoformat() + "Z",
            "version": memory.version, "first_seq": recorded[0].seq, "last_seq": recorded[-1].seq,
            "expired_turns": list(applied.turns), "rules": list(applied.rules), "records": list(applied.records),
            "summaries": list(applied.summaries), "keys_shredded": list(applied.key_ids),
            "facts": [{"summary_id": e.summary_id, "slot": e.slot, "rule": e.rule} for e in events
                      if isinstance(e, FactExpired)],
            "kept_pinned": list(applied.kept_pinned), "events": [r.event.event_type for r in recorded],
            "residue": residue, "not_byte_scanned": short, "shared_elsewhere": list(shared),
            "clean": not any(residue.values())}


def _expiring_values(state: Any, command: ApplyRetention) -> set[str]:
    """The plaintext that is about to expire, for the residue scan only: the raw text of every expiring turn,
    and the fact values of the turns that expire whole. The raw text of a turn whose summary is kept is not
    looked for where that summary (or another kept item) repeats it word for word: that copy is kept memory."""
    expiring = expiring_turns(state, command)
    whole = whole_turns(command, expiring)
    values = {v for s in state.summaries.values() if s.turn in whole for _, v in s.facts}
    kept = [text for s in state.summaries.values() if s.turn not in whole
            for text in (s.text, *(v for _, v in s.facts))]
    kept += [p.text for p in state.pins.values()] + [e.title for e in state.indexes.values()]
    for turn in expiring:
        record = state.raw.get(record_id_for(turn))
        if record is not None and (turn in whole or not mentions("\n".join(kept), {record.user})):
            values |= {record.user}
    return {v for v in values if v and v != ERASED}


def apply_everywhere(store: LiveStore, clock: Callable[[], datetime] = _utcnow) -> list[dict[str, Any]]:
    """Apply the policy of every stream a policy covers, one stream at a time; the applications that wrote.

    Each stream is applied holding its lock and the store's, as a request
    would, and is durable (`LiveStore.sync`) before the next one starts.
    """
    policies = RetentionPolicies(store.folder)
    token = Token(SCHEDULE_TOKEN_ID, namespace="", scopes=frozenset({"erase"}), created_at="")
    with store.holding(None):
        addresses = [tuple(entry["stream"].split("/")) for entry in store.streams(())]
    applied = []
    for address in addresses:
        if policies.policy_for(address) is None:
            continue
        with store.holding(address):
            started = store.begin()
            result = apply_retention(store, address, token, clock)
            mark = store.mark(started)
        store.sync(mark)
        if result["applied"]:
            applied.append(result)
    return applied


class RetentionSchedule:
    """The server's timer: `apply_everywhere` every `every` seconds until `stop` (a thread of its own).

    A failed round is reported on stderr and the next round runs as planned:
    the policies file may be fixed meanwhile.
    """

    def __init__(self, store: LiveStore, every: float, *, clock: Callable[[], datetime] = _utcnow) -> None:
        if every <= 0:
            raise ServeError(f"retention schedule: every must be a positive number of seconds, got {every!r}")
        self.store, self.every, self.clock = store, every, clock
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retention-schedule", daemon=True)

    def start(self) -> RetentionSchedule:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                applied = apply_everywhere(self.store, self.clock)
            except Exception as exc:  # noqa: BLE001 - one failed round never stops the schedule
                print(f"retention schedule: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            else:
                if applied:
                    turns = sum(len(a["expired_turns"]) for a in applied)
                    print(f"retention schedule: {turns} turn(s) expired in {len(applied)} stream(s)",
                          file=sys.stderr, flush=True)
            self.rounds += 1
