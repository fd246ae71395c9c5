"""Behaviour only a ledger file has: reopening, bad files, the one-writer lock."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from ledgermem.ledger.errors import LedgerCorrupt, LedgerError, LedgerLocked, LedgerNotFound
from ledgermem.ledger.events import Event
from ledgermem.projections.events import TurnRecorded, WindowEvicted
from ledgermem.ledger.store import Ledger, StreamKey

REPO = Path(__file__).resolve().parents[2]
A1 = StreamKey("run-1", "ledgermem", "ep-1")
B1 = StreamKey("run-1", "full_context", "ep-1")

HOLD_OPEN = """
import sys
from ledgermem.ledger.store import Ledger
ledger = Ledger(sys.argv[1])
print("ready", ledger.last_seq, flush=True)
sys.stdin.readline()
ledger.close()
print("closed", flush=True)
"""


def turn(n: int) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r-{n}", text=f"message {n}", agent=f"reply {n}")


def clock_from(start: datetime) -> Callable[[], datetime]:
    state = {"now": start}

    def clock() -> datetime:
        now = state["now"]
        state["now"] = now + timedelta(seconds=1)
        return now

    return clock


def fill(path: Path) -> list[Event]:
    events: list[Event] = [turn(1), turn(2), WindowEvicted(turn=2, record_id="r-1")]
    with Ledger(path, clock=clock_from(datetime(2024, 1, 1))) as ledger:
        ledger.append(A1, events[:2], expected_version=0)
        ledger.append(B1, events[2:], expected_version=0)
    return events


def test_reopening_continues_seq_versions_and_chain(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "l.duckdb"
    with Ledger(path, clock=clock_from(datetime(2024, 1, 1))) as first:
        session1 = first.append(A1, [turn(1), turn(2)], expected_version=0)
        session1 += first.append(B1, [turn(1)], expected_version=0)
    assert path.exists()

    with Ledger(path, clock=clock_from(datetime(2024, 1, 2))) as second:
        assert second.last_seq == 3
        assert second.streams() == [(B1, 1), (A1, 2)]
        assert list(second.read()) == list(session1)
        # The first session's batch is recognised as already stored.
        assert second.append(A1, [turn(1), turn(2)], expected_version=0) == session1[:2]
        session2 = second.append(A1, [turn(3)], expected_version=2)
        session2 += second.append(B1, [turn(2)], expected_version=1)
        assert [(r.seq, r.stream_version) for r in session2] == [(4, 3), (5, 2)]
        assert session2[0].prev_hash == session1[-1].hash
        report = second.verify()
        assert report.ok and report.events == 5

    with Ledger(path, read_only=True) as reader:
        assert reader.verify().ok
        assert [r.seq for r in reader.read()] == [1, 2, 3, 4, 5]
        assert reader.stream_version(A1) == 3


@pytest.mark.parametrize("kwargs", [{"read_only": True}, {"create": False}], ids=["read_only", "no_create"])
def test_missing_file_is_not_found(tmp_path: Path, kwargs: dict[str, bool]) -> None:
    path = tmp_path / "nowhere" / "missing.duckdb"
    with pytest.raises(LedgerNotFound) as info:
        Ledger(path, **kwargs)
    assert str(path) in str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert not path.exists() and not path.parent.exists()


def test_non_ledger_duckdb_file_is_corrupt_when_read(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE prices (sku VARCHAR, cents INTEGER)")
        conn.execute("INSERT INTO prices VALUES ('a', 100)")
    with pytest.raises(LedgerCorrupt) as info:
        Ledger(path, read_only=True)
    message = str(info.value)
    assert str(path) in message
    assert "not a ledgermem ledger" in message
    assert "events" in message and "streams" in message and "ledger_meta" in message
def test_non_ledger_duckdb_file_is_corrupt_when_opened_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE prices (sku VARCHAR, cents INTEGER)")
    with pytest.raises(LedgerCorrupt):
        Ledger(path).close()


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
def test_garbage_file_is_refused_and_left_alone(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "garbage.duckdb"
    garbage = bytes(range(256)) * 64
    path.write_bytes(garbage)
    with pytest.raises(LedgerError) as info:
        Ledger(path, read_only=read_only)
    assert isinstance(info.value, LedgerCorrupt)
    assert str(path) in str(info.value)
    assert path.read_bytes() == garbage


def test_second_writer_is_locked_out(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    events = fill(path)
    with Ledger(path, read_only=True) as ledger:
        before = list(ledger.read())
    assert len(before) == len(events)

    with subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            line = proc.stdout.readline()
            assert line.split() == ["ready", str(len(events))], f"holder did not start: {line!r}"

            with pytest.raises(LedgerLocked) as info:
                Ledger(path)
            message = str(info.value)
            assert str(path) in message
            assert "open for writing in another process" in message
            assert "one writer per file" in message

            with pytest.raises(LedgerLocked):
                Ledger(path, read_only=True)
        finally:
            out, err = proc.communicate("release\n", timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == "closed"

    with Ledger(path) as ledger:
        report = ledger.verify()
        assert report.ok and report.events == len(events)
        assert list(ledger.read()) == before


def test_read_only_ledger_refuses_append(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    events = fill(path)
    with Ledger(path, read_only=True) as reader:
        with pytest.raises(LedgerLocked, match="read-only") as info:
            reader.append(A1, [turn(3)], expected_version=2)
        assert str(path) in str(info.value)
        assert reader.last_seq == len(events)
        assert reader.stream_version(A1) == 2
    with Ledger(path, read_only=True) as again:
        assert [r.event for r in again.read()] == events
        assert again.verify().ok
