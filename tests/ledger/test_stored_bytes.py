"""What the ledger stores for the golden replays, pinned: moving event classes between packages, or any
other refactoring, must leave every stored byte as it was (old ledgers open, hashes still verify)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from ledgermem.ledger.events import Event
from ledgermem.ledger.store import Ledger, StreamKey
from tests.projections import golden

#: Events, and the hash of the last row, of a ledger holding every golden case in order under a fixed clock.
#: The hash chain covers every column of every row (type name, typed columns, payload JSON, stream, times).
GOLDEN_EVENTS = 351
GOLDEN_HEAD = "297bd37d9cbfeb90cd8c7bd4e7679c756eed11844180873b5436d49564413e57"


def _head(events: list[tuple[StreamKey, Event]]) -> tuple[int, str]:
    now = [datetime(2024, 1, 1)]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    with Ledger(clock=clock) as ledger:
        for stream, event in events:
            ledger.append(stream, [event], expected_version=ledger.stream_version(stream))
        count, head = ledger.conn.execute("SELECT count(*), arg_max(hash, seq) FROM events").fetchone()
    return int(count), str(head)


def _golden() -> list[tuple[StreamKey, Event]]:
    return [pair for case in golden.cases() for pair in golden.load_events(golden.events_path(case))]


def test_the_golden_replays_are_stored_byte_for_byte_as_before() -> None:
    assert _head(_golden()) == (GOLDEN_EVENTS, GOLDEN_HEAD)


def test_control_one_changed_turn_changes_the_head() -> None:
    events = _golden()
    stream, first = events[0]
    events[0] = (stream, replace(first, turn=first.turn + 1))
    assert _head(events) != (GOLDEN_EVENTS, GOLDEN_HEAD)
