"""The ledger store contract, run against every backend.

`LedgerContract` holds the tests; a concrete class supplies a `make_ledger`
factory fixture. `TestLedgerContract` runs them against an in-memory ledger
and a DuckDB file ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ledgermem.ledger.errors import ConcurrencyConflict
from ledgermem.ledger.events import Event
from ledgermem.projections.events import LlmCalled, ProbeAsked, ProbeJudged, SummaryCreated, TurnRecorded, WindowEvicted
from ledgermem.ledger.schema import GENESIS_HASH, canonical_bytes, chain_hash
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from tests.ledger.test_schema import SAMPLE_EVENTS

FIXED = datetime(2024, 5, 1, 12, 0, 0, 123456)

RUN = StreamKey("run-1")
A1 = StreamKey("run-1", "ledgermem", "ep-1")
B1 = StreamKey("run-1", "full_context", "ep-1")
A2 = StreamKey("run-2", "ledgermem", "ep-1")

MakeLedger = Callable[..., Ledger]


class StepClock:
    """A deterministic clock: each call returns the next instant, one second apart."""

    def __init__(self, start: datetime = FIXED, step: timedelta = timedelta(seconds=1)) -> None:
        self.next, self.step = start, step
        self.returned: list[datetime] = []

    def __call__(self) -> datetime:
        now = self.next
        self.next += self.step
        self.returned.append(now)
        return now


def turn(n: int, text: str = "") -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r-{n:04d}", text=text or f"user message {n}", agent=f"reply {n}")


def turn_batch(n: int) -> list[Event]:
    """What one dialogue turn writes: the record, the model call, the summary."""
    return [
        turn(n),
        LlmCalled(turn=n, purpose="summarise", backend="stub", model="m", prompt_hash=f"h{n}", text=f"S{n}",
                  latency_ms=10.5),
        SummaryCreated(turn=n, summary_id=f"s-{n:04d}", text=f"summary {n}", facts=(("slot", f"v{n}"),),
                       overrides=(), raw_ids=(f"r-{n:04d}",)),
    ]


def count_rows(ledger: Ledger) -> int:
    row = ledger.conn.execute("SELECT count(*) FROM events").fetchone()
    assert row is not None
    return int(row[0])


def all_rows(ledger: Ledger) -> list[dict[str, Any]]:
    result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, values)) for values in result.fetchall()]


def rechain(ledger: Ledger) -> None:
    """Recompute every prev_hash and hash, as someone covering up an edit would."""
    prev = GENESIS_HASH
    for row in all_rows(ledger):
        digest = chain_hash(prev, canonical_bytes(row))
        ledger.conn.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", [prev, digest, row["seq"]])
        prev = digest


def populate(ledger: Ledger) -> dict[StreamKey, list[Event]]:
    """Interleaved appends to four streams in two runs; returns what each stream got."""
    appended: dict[StreamKey, list[Event]] = {RUN: [], A1: [], B1: [], A2: []}

    def add(stream: StreamKey, events: list[Event]) -> None:
        ledger.append(stream, events, expected_version=len(appended[stream]))
        appended[stream].extend(events)

    add(RUN, [SAMPLE_EVENTS[0]])
    add(A1, turn_batch(1))
    add(B1, [turn(1)])
    add(A2, [turn(1, "another run")])
    add(A1, turn_batch(2))
    add(B1, [turn(2), WindowEvicted(turn=2, record_id="r-0001")])
    add(A1, [ProbeAsked(turn=3, probe_id="p-1", probe_type="current_value", slot="slot", text="q?", gold="v2"),
             ProbeJudged(turn=3, probe_id="p-1", correct=True, method="exact", value="v2")])
    add(RUN, [SAMPLE_EVENTS[1]])
    return appended


class LedgerContract:
    """Behaviour every ledger backend must have. Subclasses provide `make_ledger`."""

    @pytest.fixture
    def ledger(self, make_ledger: MakeLedger) -> Ledger:
        return make_ledger(clock=StepClock())

    # -- positions -------------------------------------------------------------------

    def test_fresh_ledger_is_empty_and_verifies(self, ledger: Ledger) -> None:
        assert ledger.last_seq == 0
        assert ledger.streams() == []
        assert ledger.stream_version(A1) == 0
        assert list(ledger.read()) == []
        report = ledger.verify()
        assert report.ok and report.events == 0 and report.first_broken_seq is None

    def test_seq_is_global_and_contiguous_across_streams(self, ledger: Ledger) -> None:
        seqs: list[int] = []
        seqs += [r.seq for r in ledger.append(A1, turn_batch(1), expected_version=0)]
        seqs += [r.seq for r in ledger.append(B1, [turn(1)], expected_version=0)]
        seqs += [r.seq for r in ledger.append(A1, [turn(2)], expected_version=3)]
        seqs += [r.seq for r in ledger.append(A2, turn_batch(1), expected_version=0)]
        assert seqs == list(range(1, 9))
        assert [r.seq for r in ledger.read()] == list(range(1, 9))
        assert ledger.last_seq == 8

    def test_stream_version_is_contiguous_per_stream(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        for stream, events in appended.items():
            versions = [r.stream_version for r in ledger.read(stream=stream)]
            assert versions == list(range(1, len(events) + 1)), stream
            assert ledger.stream_version(stream) == len(events)
        assert ledger.streams() == sorted((s, len(e)) for s, e in appended.items())
        assert ledger.streams(run_id="run-2") == [(A2, 1)]

    def test_batch_records_are_chained_in_order(self, ledger: Ledger) -> None:
        first = ledger.append(A1, turn_batch(1), expected_version=0)
        second = ledger.append(B1, turn_batch(1), expected_version=0)
        records = first + second
        assert records[0].prev_hash == GENESIS_HASH
        for before, after in zip(records, records[1:]):
            assert after.prev_hash == before.hash
        assert len({r.hash for r in records}) == len(records)
        assert [r.stream_version for r in second] == [1, 2, 3]
        assert all(r.stream == B1 for r in second)

    def test_empty_append_is_a_no_op(self, ledger: Ledger) -> None:
        ledger.append(A1, [turn(1)], expected_version=0)
        assert ledger.append(A1, [], expected_version=1) == ()
        assert ledger.append(B1, [], expected_version=0) == ()
        assert count_rows(ledger) == 1
        assert ledger.streams() == [(A1, 1)]

    # -- transactions ----------------------------------------------------------------

    def test_failed_before_commit_leaves_nothing_of_the_batch(self, ledger: Ledger) -> None:
        ledger.append(A1, turn_batch(1), expected_version=0)
        ledger.append(B1, [turn(1)], expected_version=0)
        before = list(ledger.read())
        seen: list[tuple[int, ...]] = []

        class Boom(RuntimeError):
            pass

        def explode(conn: duckdb.DuckDBPyConnection, recorded: tuple[RecordedEvent, ...]) -> None:
            seen.append(tuple(r.seq for r in recorded))
            # Inside the transaction the batch is already written...
            row = conn.execute("SELECT count(*) FROM events").fetchone()
            assert row is not None and row[0] == 7
            raise Boom("projection failed")

        with pytest.raises(Boom):
            ledger.append(A1, turn_batch(2), expected_version=3, before_commit=explode)
        assert seen == [(5, 6, 7)]
        # ...and after the rollback none of it is.
        assert list(ledger.read()) == before
        assert count_rows(ledger) == 4
        assert ledger.last_seq == 4
        assert ledger.stream_version(A1) == 3
        assert ledger.streams() == [(B1, 1), (A1, 3)]
        assert ledger.verify().ok

        retried = ledger.append(A1, turn_batch(2), expected_version=3)
        assert [r.seq for r in retried] == [5, 6, 7]
        assert [r.stream_version for r in retried] == [4, 5, 6]
        assert retried[0].prev_hash == before[-1].hash
        after = ledger.append(B1, [turn(2)], expected_version=1)
        assert [r.seq for r in after] == [8]
        report = ledger.verify()
        assert report.ok and report.events == 8

    def test_failed_before_commit_on_a_new_stream_creates_no_stream(self, ledger: Ledger) -> None:
        ledger.append(A1, [turn(1)], expected_version=0)

        def explode(conn: duckdb.DuckDBPyConnection, recorded: tuple[RecordedEvent, ...]) -> None:
            raise ValueError("no")

        with pytest.raises(ValueError, match="no"):
            ledger.append(B1, turn_batch(1), expected_version=0, before_commit=explode)
        assert ledger.stream_version(B1) == 0
        assert ledger.streams() == [(A1, 1)]
        assert list(ledger.read(stream=B1)) == []

        records = ledger.append(B1, turn_batch(1), expected_version=0)
        assert [(r.seq, r.stream_version) for r in records] == [(2, 1), (3, 2), (4, 3)]
        assert [r.event for r in ledger.read(stream=B1)] == turn_batch(1)
        assert ledger.verify().ok

    def test_before_commit_writes_share_the_batch_transaction(self, ledger: Ledger) -> None:
        ledger.conn.execute("CREATE TABLE side (seq BIGINT)")

        def project(conn: duckdb.DuckDBPyConnection, recorded: tuple[RecordedEvent, ...]) -> None:
            conn.executemany("INSERT INTO side VALUES (?)", [[r.seq] for r in recorded])

        def project_then_fail(conn: duckdb.DuckDBPyConnection, recorded: tuple[RecordedEvent, ...]) -> None:
            project(conn, recorded)
            raise KeyError("late failure")

        ledger.append(A1, turn_batch(1), expected_version=0, before_commit=project)
        with pytest.raises(KeyError):
            ledger.append(A1, turn_batch(2), expected_version=3, before_commit=project_then_fail)
        side = [r[0] for r in ledger.conn.execute("SELECT seq FROM side ORDER BY seq").fetchall()]
        assert side == [1, 2, 3]
        assert count_rows(ledger) == 3

    # -- idempotency and conflicts -----------------------------------------------------

    def test_reappending_the_same_batch_is_a_no_op(self, ledger: Ledger) -> None:
        first = ledger.append(A1, turn_batch(1), expected_version=0)
        ledger.append(B1, [turn(1)], expected_version=0)
        second = ledger.append(A1, turn_batch(2), expected_version=3)
        rows, last_seq, last_hash = count_rows(ledger), ledger.last_seq, all_rows(ledger)[-1]["hash"]

        again_first = ledger.append(A1, turn_batch(1), expected_version=0)
        again_second = ledger.append(A1, turn_batch(2), expected_version=3)
        assert again_first == first
        assert again_second == second
        assert [r.seq for r in again_first] == [1, 2, 3]
        assert [r.event_id for r in again_second] == [r.event_id for r in second]
        assert count_rows(ledger) == rows
        assert ledger.last_seq == last_seq
        assert ledger.stream_version(A1) == 6
        # The chain did not move: the next append still follows the real tail.
        nxt = ledger.append(B1, [turn(2)], expected_version=1)
        assert nxt[0].seq == last_seq + 1 and nxt[0].prev_hash == last_hash
        assert ledger.verify().ok

    def test_different_batch_at_an_old_version_conflicts(self, ledger: Ledger) -> None:
        ledger.append(A1, turn_batch(1), expected_version=0)
        rows = count_rows(ledger)
        for events in ([turn(1, "a different message")], turn_batch(1)[:2] + [turn(9)], turn_batch(1) + [turn(2)]):
            with pytest.raises(ConcurrencyConflict) as info:
                ledger.append(A1, events, expected_version=0)
            assert info.value.expected == 0 and info.value.actual == 3
            assert str(A1) in str(info.value)
        with pytest.raises(ConcurrencyConflict):
            ledger.append(A1, [turn(2)], expected_version=1)  # version 2 holds a different event
        assert count_rows(ledger) == rows
        assert ledger.stream_version(A1) == 3
        assert ledger.verify().ok

    def test_expected_version_ahead_conflicts(self, ledger: Ledger) -> None:
        ledger.append(A1, [turn(1)], expected_version=0)
        with pytest.raises(ConcurrencyConflict, match="ahead") as info:
            ledger.append(A1, [turn(2)], expected_version=2)
        assert (info.value.expected, info.value.actual) == (2, 1)
        with pytest.raises(ConcurrencyConflict) as info_new:
            ledger.append(B1, [turn(1)], expected_version=1)
        assert (info_new.value.expected, info_new.value.actual) == (1, 0)
        assert count_rows(ledger) == 1
        assert ledger.streams() == [(A1, 1)]

    # -- reading ----------------------------------------------------------------------

    def test_read_returns_the_appended_events_unchanged(self, ledger: Ledger) -> None:
        recorded: list[RecordedEvent] = []
        for i, event in enumerate(SAMPLE_EVENTS):
            recorded += ledger.append(A1, [event], expected_version=i)
        read = list(ledger.read())
        assert [r.event for r in read] == list(SAMPLE_EVENTS)
        assert read == recorded
        assert ledger.verify().ok

    def test_read_by_stream(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        for stream, events in appended.items():
            records = list(ledger.read(stream=stream))
            assert [r.event for r in records] == events
            assert {r.stream for r in records} == {stream}
        assert list(ledger.read(stream=StreamKey("run-1", "ledgermem", "ep-404"))) == []

    def test_read_by_run_id(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        run1 = list(ledger.read(run_id="run-1"))
        assert {r.stream for r in run1} == {RUN, A1, B1}
        assert len(run1) == sum(len(appended[s]) for s in (RUN, A1, B1))
        assert [r.seq for r in run1] == sorted(r.seq for r in run1)
        assert [r.event for r in ledger.read(run_id="run-2")] == appended[A2]
        assert list(ledger.read(run_id="run-404")) == []

    def test_read_by_seq_range(self, ledger: Ledger) -> None:
        populate(ledger)
        everything = list(ledger.read())
        assert [r.seq for r in ledger.read(from_seq=3, to_seq=6)] == [3, 4, 5, 6]
        assert list(ledger.read(from_seq=3, to_seq=6)) == everything[2:6]
        assert [r.seq for r in ledger.read(from_seq=ledger.last_seq)] == [ledger.last_seq]
        assert [r.seq for r in ledger.read(to_seq=2)] == [1, 2]
        assert list(ledger.read(from_seq=ledger.last_seq + 1)) == []

    def test_read_by_version_range(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        records = list(ledger.read(stream=A1, from_version=2, to_version=5))
        assert [r.stream_version for r in records] == [2, 3, 4, 5]
        assert [r.event for r in records] == appended[A1][1:5]
        assert [r.stream_version for r in ledger.read(stream=A1, from_version=7)] == [7, 8]
        assert [r.stream_version for r in ledger.read(stream=B1, to_version=1)] == [1]

    def test_read_by_event_types(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        turns = list(ledger.read(event_types=["turn_recorded"]))
        assert all(isinstance(r.event, TurnRecorded) for r in turns)
        expected = sum(isinstance(e, TurnRecorded) for events in appended.values() for e in events)
        assert len(turns) == expected
        mixed = list(ledger.read(stream=A1, event_types=("probe_asked", "summary_created")))
        assert [type(r.event).event_type for r in mixed] == ["summary_created", "summary_created", "probe_asked"]
        assert list(ledger.read(event_types=["no_such_type"])) == []

    def test_read_filters_combine(self, ledger: Ledger) -> None:
        populate(ledger)
        records = list(ledger.read(run_id="run-1", from_seq=5, event_types=["turn_recorded"]))
        assert records and all(r.seq >= 5 and r.stream.run_id == "run-1" for r in records)
        assert all(isinstance(r.event, TurnRecorded) for r in records)
        assert [r.seq for r in records] == [
            r.seq for r in ledger.read(run_id="run-1") if r.seq >= 5 and isinstance(r.event, TurnRecorded)
        ]

    # -- verification --------------------------------------------------------------------

    def test_verify_ok_with_several_streams(self, ledger: Ledger) -> None:
        appended = populate(ledger)
        report = ledger.verify()
        assert report.ok
        assert report.events == sum(len(e) for e in appended.values()) == ledger.last_seq
        assert report.first_broken_seq is None and report.reason == ""

    @pytest.mark.parametrize("position", ["first", "middle", "last"])
    def test_verify_catches_a_one_character_payload_change(self, ledger: Ledger, position: str) -> None:
        populate(ledger)
        k = {"first": 1, "middle": ledger.last_seq // 2, "last": ledger.last_seq}[position]
        row = ledger.conn.execute("SELECT payload FROM events WHERE seq = ?", [k]).fetchone()
        assert row is not None
        payload: str = row[0]
        i = max(payload.rfind(c) for c in "0123456789abcdefghijklmnopqrstuvwxyz")
        assert i > 0, payload
        changed = payload[:i] + ("X" if payload[i] != "X" else "Y") + payload[i + 1:]
        assert len(changed) == len(payload) and changed != payload
        ledger.conn.execute("UPDATE events SET payload = ? WHERE seq = ?", [changed, k])
        report = ledger.verify()
        assert not report.ok
        assert report.first_broken_seq == k
        assert report.events == k
        assert "changed" in report.reason

    def test_verify_catches_a_typed_column_change(self, ledger: Ledger) -> None:
        populate(ledger)
        ledger.conn.execute("UPDATE events SET text = text || '!' WHERE seq = 4")
        report = ledger.verify()
        assert (report.ok, report.first_broken_seq) == (False, 4)

    def test_verify_catches_a_tampered_prev_hash(self, ledger: Ledger) -> None:
        populate(ledger)
        ledger.conn.execute("UPDATE events SET prev_hash = ? WHERE seq = 5", ["f" * 64])
        report = ledger.verify()
        assert (report.ok, report.first_broken_seq) == (False, 5)
        assert "prev_hash" in report.reason

    def test_verify_catches_a_tampered_hash(self, ledger: Ledger) -> None:
        populate(ledger)
        ledger.conn.execute("UPDATE events SET hash = ? WHERE seq = 3", ["e" * 64])
        report = ledger.verify()
        assert (report.ok, report.first_broken_seq) == (False, 3)

    @pytest.mark.parametrize("cover_up", [False, True], ids=["raw", "rechained"])
    def test_verify_catches_a_deleted_row(self, ledger: Ledger, cover_up: bool) -> None:
        populate(ledger)
        ledger.conn.execute("DELETE FROM events WHERE seq = 4")
        if cover_up:
            rechain(ledger)
        report = ledger.verify()
        assert not report.ok
        assert report.first_broken_seq == 5  # the first row after the gap
        if cover_up:
            assert "gap" in report.reason

    def test_verify_catches_a_deleted_newest_row(self, ledger: Ledger) -> None:
        populate(ledger)
        last = ledger.last_seq
        ledger.conn.execute("DELETE FROM events WHERE seq = ?", [last])
        report = ledger.verify()
        assert (report.ok, report.first_broken_seq) == (False, last)
        assert "missing" in report.reason

    @pytest.mark.parametrize("cover_up", [False, True], ids=["raw", "rechained"])
    def test_verify_catches_a_changed_stream_version(self, ledger: Ledger, cover_up: bool) -> None:
        populate(ledger)
        row = ledger.conn.execute("SELECT stream_version FROM events WHERE seq = 6").fetchone()
        assert row is not None
        ledger.conn.execute("UPDATE events SET stream_version = ? WHERE seq = 6", [row[0] + 1])
        if cover_up:
            rechain(ledger)
        report = ledger.verify()
        assert (report.ok, report.first_broken_seq) == (False, 6)
        if cover_up:
            assert "stream_version" in report.reason

    def test_rechaining_an_untouched_ledger_changes_nothing(self, ledger: Ledger) -> None:
        """Control for the cover-up tests: `rechain` alone does not break the chain."""
        populate(ledger)
        before = [r["hash"] for r in all_rows(ledger)]
        rechain(ledger)
        assert [r["hash"] for r in all_rows(ledger)] == before
        assert ledger.verify().ok

    # -- time and identity ------------------------------------------------------------------

    def test_recorded_at_comes_from_the_injected_clock(self, make_ledger: MakeLedger) -> None:
        clock = StepClock(datetime(2030, 1, 2, 3, 4, 5, 678901), timedelta(minutes=5))
        ledger = make_ledger(clock=clock)
        first = ledger.append(A1, turn_batch(1), expected_version=0)
        second = ledger.append(B1, [turn(1)], expected_version=0)
        assert clock.returned == [datetime(2030, 1, 2, 3, 4, 5, 678901), datetime(2030, 1, 2, 3, 9, 5, 678901)]
        assert {r.recorded_at for r in first} == {clock.returned[0]}  # one instant per batch
        assert [r.recorded_at for r in second] == [clock.returned[1]]
        assert [r.recorded_at for r in ledger.read()] == [clock.returned[0]] * 3 + [clock.returned[1]]
        assert ledger.verify().ok

    def test_event_ids_and_hashes_are_deterministic(self, make_ledger: MakeLedger) -> None:
        one = make_ledger(clock=lambda: FIXED)
        two = make_ledger(clock=lambda: FIXED)
        populate(one)
        populate(two)
        rows_one, rows_two = all_rows(one), all_rows(two)
        assert [r["event_id"] for r in rows_one] == [r["event_id"] for r in rows_two]
        assert [r["hash"] for r in rows_one] == [r["hash"] for r in rows_two]
        assert len({r["event_id"] for r in rows_one}) == len(rows_one)
        assert one.verify().ok and two.verify().ok

    def test_event_ids_ignore_the_clock_but_hashes_do_not(self, make_ledger: MakeLedger) -> None:
        one = make_ledger(clock=lambda: FIXED)
        two = make_ledger(clock=lambda: FIXED + timedelta(microseconds=1))
        populate(one)
        populate(two)
        rows_one, rows_two = all_rows(one), all_rows(two)
        assert [r["event_id"] for r in rows_one] == [r["event_id"] for r in rows_two]
        assert all(a["hash"] != b["hash"] for a, b in zip(rows_one, rows_two))

    def test_event_id_depends_on_stream_and_version(self, ledger: Ledger) -> None:
        a = ledger.append(A1, [turn(1)], expected_version=0)[0]
        b = ledger.append(B1, [turn(1)], expected_version=0)[0]
        c = ledger.append(A1, [turn(1)], expected_version=1)[0]
        assert len({a.event_id, b.event_id, c.event_id}) == 3

    # -- known defects ----------------------------------------------------------------------
    def test_verify_ok_when_a_float_field_is_given_an_int(self, ledger: Ledger) -> None:
        ledger.append(
            A1,
            [LlmCalled(purpose="answer", backend="stub", model="m", prompt_hash="h", text="t", latency_ms=12)],
            expected_version=0,
        )
        assert ledger.verify().ok
    def test_verify_ok_with_a_timezone_aware_clock(self, make_ledger: MakeLedger) -> None:
        ledger = make_ledger(clock=lambda: datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc))
        ledger.append(A1, turn_batch(1), expected_version=0)
        assert ledger.verify().ok


class TestLedgerContract(LedgerContract):
    """The contract against an in-memory ledger and a DuckDB file ledger."""

    @pytest.fixture(params=["memory", "file"])
    def make_ledger(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeLedger]:
        opened: list[Ledger] = []

        def make(**kwargs: Any) -> Ledger:
            if request.param == "memory":
                ledger = Ledger(":memory:", **kwargs)
            else:
                name = "l.duckdb" if not opened else f"l{len(opened)}.duckdb"
                ledger = Ledger(tmp_path / name, **kwargs)
                assert (tmp_path / name).exists()
            opened.append(ledger)
            return ledger

        yield make
        for ledger in opened:
            ledger.close()
