"""Group commit: appends join one open transaction until `commit_group`; a failure rolls the group back whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.events import TurnRecorded

A, B = StreamKey("live", "three_layer", "a"), StreamKey("live", "three_layer", "b")


def turn(n: int) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r{n:04d}", text=f"note {n}", agent="ok")


def test_grouped_appends_become_durable_in_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Ledger(path) as ledger:
        ledger.group_commits = True
        ledger.append(A, [turn(1)], expected_version=0)
        ledger.append(B, [turn(1)], expected_version=0)
        ledger.append(A, [turn(2)], expected_version=1)
        assert (ledger.last_seq, ledger.durable_seq, ledger.stream_version(A)) == (3, 0, 2)
        assert ledger.commit_group() == 3 and ledger.durable_seq == 3
        assert ledger.groups_committed == 1
        assert ledger.commit_group() == 3 and ledger.groups_committed == 1  # nothing open: nothing committed
    with Ledger(path, read_only=True) as again:
        assert again.last_seq == 3 and again.verify().ok


def failing_on(n: int) -> Any:
    def hook(conn: Any, recorded: Any) -> None:
        if recorded[-1].seq == n:
            raise OSError("disk full")
    return hook


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "control-one-commit-each"])
def test_a_failed_append_rolls_back_its_whole_group(tmp_path: Path, grouped: bool) -> None:
    told: list[int] = []
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.group_commits = grouped
        ledger.after_abort = lambda: told.append(ledger.last_seq)
        ledger.append(A, [turn(1)], expected_version=0)
        with pytest.raises(OSError, match="disk full"):
            ledger.append(B, [turn(1)], expected_version=0, before_commit=failing_on(2))
        if grouped:  # the earlier append of the group went with it, and the memory of the ledger says so
            assert (ledger.last_seq, ledger.stream_version(A), ledger.groups_aborted, told) == (0, 0, 1, [0])
            ledger.append(A, [turn(1)], expected_version=0)
        else:
            assert (ledger.last_seq, ledger.stream_version(A), ledger.groups_aborted, told) == (1, 1, 0, [])
        ledger.append(B, [turn(1)], expected_version=0)
        ledger.commit_group()
        assert ledger.last_seq == 2 and ledger.verify().ok


def test_close_commits_an_open_group(tmp_path: Path) -> None:
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.group_commits = True
        ledger.append(A, [turn(1)], expected_version=0)
    with Ledger(tmp_path / "ledger.duckdb", read_only=True) as again:
        assert again.last_seq == 1


def test_a_crash_before_the_commit_keeps_nothing_of_the_group(tmp_path: Path) -> None:
    """Why the service answers only after `commit_group`: what is appended is not yet durable."""
    path = tmp_path / "ledger.duckdb"
    script = textwrap.dedent(f"""
        import os
        from ledgermem.ledger.store import Ledger, StreamKey
        from ledgermem.projections.events import TurnRecorded
        ledger = Ledger({str(path)!r})
        stream = StreamKey("live", "three_layer", "a")
        ledger.append(stream, [TurnRecorded(turn=1, record_id="r0001", text="x", agent="ok")], expected_version=0)
        ledger.group_commits = True
        ledger.append(stream, [TurnRecorded(turn=2, record_id="r0002", text="y", agent="ok")], expected_version=1)
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    with Ledger(path, read_only=True) as again:
        assert again.last_seq == 1 and again.verify().ok


def test_a_groups_rows_wait_for_one_insert_and_every_read_sees_them(tmp_path: Path) -> None:
    """Inside a group the rows of its appends are held back (one insert per table when it commits), yet
    anything that reads the connection first sees every one of them."""
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.group_commits = True
        ledger.append(A, [turn(1)], expected_version=0)
        ledger.append(B, [turn(1), turn(2)], expected_version=0)
        assert sum(len(rows) for _, rows in ledger._deferred.values()) == 3 + 2  # 3 events, 2 stream rows
        assert ledger.conn.execute("SELECT count(*) FROM events").fetchone() == (3,)  # the read wrote them first
        assert ledger._deferred == {}
        ledger.append(A, [turn(2)], expected_version=1)
        assert [e.event.turn for e in ledger.read(stream=A)] == [1, 2]  # `read` too
        ledger.append(A, [turn(3)], expected_version=2)
        assert ledger._deferred  # held until the commit
        ledger.commit_group()
        assert ledger._deferred == {} and ledger.verify().ok
    with Ledger(tmp_path / "ledger.duckdb", read_only=True) as again:
        assert again.last_seq == 5 and again.stream_version(A) == 3 and again.verify().ok


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "control-outside-a-group"])
def test_rows_held_back_go_with_a_rolled_back_group(tmp_path: Path, grouped: bool) -> None:
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.conn.execute("CREATE TABLE notes (seq BIGINT NOT NULL, text VARCHAR)")
        ledger.group_commits = grouped

        def note(conn: Any, recorded: Any) -> None:
            ledger.insert_rows("notes", (("seq", "BIGINT"), ("text", "VARCHAR")), [[recorded[-1].seq, "n"]])

        ledger.append(A, [turn(1)], expected_version=0, before_commit=note)
        assert bool(ledger._deferred) is grouped  # outside a group a row is inserted at once
        with pytest.raises(OSError, match="disk full"):
            ledger.append(B, [turn(1)], expected_version=0, before_commit=failing_on(2))
        notes = ledger.conn.execute("SELECT seq FROM notes").fetchall()
        assert notes == ([] if grouped else [(1,)])  # the group's held-back row went with the group


def test_a_held_back_row_that_cannot_be_inserted_rolls_the_group_back(tmp_path: Path) -> None:
    """A statement that fails when the held-back rows are written fails the commit: nothing of the group stays."""
    told: list[int] = []
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        ledger.conn.execute("CREATE TABLE notes (seq BIGINT NOT NULL)")
        ledger.group_commits = True
        ledger.after_abort = lambda: told.append(1)
        ledger.append(A, [turn(1)], expected_version=0)
        ledger.insert_rows("notes", (("seq", "BIGINT"),), [[None]])  # NOT NULL: refused when written
        with pytest.raises(Exception, match="NOT NULL"):
            ledger.commit_group()
        assert (ledger.last_seq, ledger.stream_version(A), ledger.groups_aborted, told) == (0, 0, 1, [1])
        assert ledger.conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
