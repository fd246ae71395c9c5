"""The `streams` table's versions: written on close (`sync_streams`), not by every append; the events decide.

A turn's transaction is its events' insert (a new stream adds its row once).
After a crash the table may lag behind the events; every open takes each
stream's version from its events where the table is behind, and a writer
brings the table up to date at once. A table ahead of the events (the newest
events gone) is still reported by `verify`.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from ledgermem.ledger.errors import ConcurrencyConflict
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.events import TurnRecorded

A, B = StreamKey("run", "three_layer", "a"), StreamKey("run", "three_layer", "b")


def turn(n: int) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r{n:04d}", text=f"note {n}", agent="ok")


def table(path: Path) -> dict[str, int]:
    conn = duckdb.connect(str(path), read_only=True)
    try:
        return dict(conn.execute("SELECT episode_id, version FROM streams").fetchall())
    finally:
        conn.close()


def crashed_writer(path: Path, turns: int) -> None:
    """A process that appends `turns` turns to A (one commit each) and one to B, then dies without closing."""
    script = textwrap.dedent(f"""
        import os
        from ledgermem.ledger.store import Ledger, StreamKey
        from ledgermem.projections.events import TurnRecorded
        ledger = Ledger({str(path)!r})
        a, b = StreamKey("run", "three_layer", "a"), StreamKey("run", "three_layer", "b")
        for n in range(1, {turns} + 1):
            ledger.append(a, [TurnRecorded(turn=n, record_id=f"r{{n:04d}}", text="x", agent="ok")],
                          expected_version=n - 1)
        ledger.append(b, [TurnRecorded(turn=1, record_id="r0001", text="y", agent="ok")], expected_version=0)
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_appends_leave_the_table_alone_until_close(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Ledger(path) as ledger:
        ledger.append(A, [turn(1), turn(2)], expected_version=0)
        ledger.append(A, [turn(3)], expected_version=2)
        ledger.append(B, [turn(1)], expected_version=0)
        rows = dict(ledger.conn.execute("SELECT episode_id, version FROM streams").fetchall())
        assert rows == {"a": 2, "b": 1}  # A's row was written when the stream began, not by its later append
        assert ledger.streams() == [(A, 3), (B, 1)] and ledger.verify().ok
    assert table(path) == {"a": 3, "b": 1}


def test_a_crashed_writers_streams_are_read_from_their_events(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    crashed_writer(path, turns=5)
    assert table(path) == {"a": 1, "b": 1}  # what the crash left: A's row as the stream began
    with Ledger(path, read_only=True) as reader:
        assert reader.streams() == [(A, 5), (B, 1)] and reader.verify().ok
    with Ledger(path) as writer:
        assert table_of(writer) == {"a": 5, "b": 1}  # the writer brought the table up to date on opening
        with pytest.raises(ConcurrencyConflict):
            writer.append(A, [turn(6)], expected_version=1)  # the table's stale version is no expected version
        writer.append(A, [turn(6)], expected_version=5)
        assert writer.verify().ok
    assert table(path) == {"a": 6, "b": 1}


def table_of(ledger: Ledger) -> dict[str, int]:
    return dict(ledger.conn.execute("SELECT episode_id, version FROM streams").fetchall())


@pytest.mark.parametrize("crashed", [False, True], ids=["closed", "crashed"])
def test_control_newest_events_removed_are_still_reported(tmp_path: Path, crashed: bool) -> None:
    """Must-fail control of the catch-up: a table ahead of the events keeps its version, so verify says so."""
    path = tmp_path / "ledger.duckdb"
    if crashed:
        crashed_writer(path, turns=5)
        Ledger(path).close()  # brings the table up to the events (A at 5)
    else:
        with Ledger(path) as ledger:
            for n in range(1, 6):
                ledger.append(A, [turn(n)], expected_version=n - 1)
            ledger.append(B, [turn(1)], expected_version=0)
    conn = duckdb.connect(str(path))
    conn.execute("DELETE FROM events WHERE seq > 4")  # the newest two: A's fifth turn and B's first
    conn.close()
    with Ledger(path, read_only=True) as reader:
        report = reader.verify()
        assert not report.ok and "recorded at version 5 but its events end at 4" in report.reason
        assert reader.stream_version(A) == 5
