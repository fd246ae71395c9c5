"""`Ledger.append(keys=...)`: the key of each event handed over as data, one per event, in order."""

from __future__ import annotations

import pytest

from ledgermem.ledger.errors import LedgerError
from ledgermem.projections.events import EpisodeStarted, TurnRecorded
from ledgermem.ledger.keys import FieldKeys, KeyStore
from ledgermem.ledger.store import Ledger, StreamKey

STREAM = StreamKey("run", "three_layer", "ep")


def turn(n: int) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r{n:04d}", text=f"my desk is {n}", agent="ok")


def test_each_event_is_sealed_under_its_own_key_or_stored_in_clear() -> None:
    ledger = Ledger(":memory:", keys=KeyStore())
    recorded = ledger.append(STREAM, [EpisodeStarted(config={}), turn(1), turn(2), turn(3)], expected_version=0,
                             keys=["never-made", "k#turn:1", None, FieldKeys("k#turn:3", {"agent": "k#reply:3"})])
    sealed = ledger.sealed_keys(STREAM)
    assert [sealed.get(r.seq, set()) for r in recorded] == [set(), {"k#turn:1"}, set(), {"k#turn:3", "k#reply:3"}]
    assert "never-made" not in ledger.keys  # type: ignore[operator]  # an event with no personal field seals nothing
    assert [r.event for r in ledger.read(stream=STREAM)] == [r.event for r in recorded]  # read back in clear


def test_a_list_of_keys_that_does_not_match_the_events_is_refused() -> None:
    """Must-fail control: keys are positional, so a short or long list is an error, never a shifted seal."""
    ledger = Ledger(":memory:", keys=KeyStore())
    for keys in (["k1"], ["k1", "k1", "k1"]):
        with pytest.raises(LedgerError, match=rf"names {len(keys)} key\(s\) for 2 event\(s\)"):
            ledger.append(STREAM, [turn(1), turn(2)], expected_version=0, keys=keys)
    assert ledger.last_seq == 0 and len(ledger.keys or ()) == 0  # nothing written, no key made
    ledger.append(STREAM, [turn(1), turn(2)], expected_version=0, keys=["k1", "k1"])
    assert ledger.sealed_keys(STREAM) == {1: {"k1"}, 2: {"k1"}}
