"""Verifying the chain in bulk: DuckDB spells the canonical bytes, Python hashes; the verdicts of a row-by-row walk.

The store contract (test_store_contract.py) checks what `verify` reports for
each kind of damage; these check the bulk machinery under it: the SQL
spelling of a row against `canonical_bytes`, rows the SQL cannot vouch for,
ledgers not stored in seq order, and more doubts than one read-back holds.
"""

from __future__ import annotations

import math
from datetime import datetime

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.ledger.chain import CHANGED, check_chain
from ledgermem.ledger.events import Event
from ledgermem.projections.events import LlmCalled, SummaryCreated, TurnRecorded
from ledgermem.ledger.schema import canonical_bytes, canonical_sql, chain_hash
from ledgermem.ledger.store import Ledger, StreamKey
from tests.ledger.test_schema import SAMPLE_EVENTS

A = StreamKey("run", "sys", "ep-a")
B = StreamKey("run", "sys", "ep-b")
FIXED = datetime(2024, 5, 1, 12, 0, 0, 5)

# DuckDB writes these JSON escapes with upper-case hex, Python with lower-case: rows holding them are
# the ones the SQL spelling cannot vouch for.
AWKWARD = "tab\t bell\x07 unit\x1f esc\x1b nul\x00 del\x7f line\u2028 é 中文 🙂 \"quoted\" back\\slash"


def _rows(ledger: Ledger) -> list[dict[str, object]]:
    result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, r)) for r in result.fetchall()]


def _sql_spelling(ledger: Ledger) -> list[str]:
    return [r[0] for r in ledger.conn.execute(f"SELECT {canonical_sql()} FROM events ORDER BY seq").fetchall()]


def _turn(n: int, text: str = "hello") -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r{n:05d}", text=text, agent=f"reply {n}")


def test_the_sql_spelling_is_canonical_bytes_for_every_kind_of_event() -> None:
    ledger = Ledger(":memory:", clock=lambda: FIXED)
    for i, event in enumerate(SAMPLE_EVENTS):
        ledger.append(StreamKey("run", "sys", f"ep{i}"), [event], expected_version=0)
    assert [s.encode() for s in _sql_spelling(ledger)] == [canonical_bytes(r) for r in _rows(ledger)]


@given(st.text(), st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**6, 10**6)))
def test_the_sql_spelling_agrees_but_for_the_case_of_hex_escapes(text: str, latency: float | int | None) -> None:
    """Where the spellings differ it is only in escapes the row holds: never a value spelled as another."""
    ledger = Ledger(":memory:")
    ledger.append(A, [LlmCalled(purpose="p", backend="b", model="m", prompt_hash="h", text=text,
                                latency_ms=latency)], expected_version=0)
    (row,) = _rows(ledger)
    (sql,) = _sql_spelling(ledger)
    python = canonical_bytes(row).decode()
    if sql != python:
        escapes = {f"\\u{ord(c):04x}" for c in text if ord(c) < 0x20 and c not in "\b\f\n\r\t"}
        assert escapes and sql.lower() == python.lower()


def test_a_row_the_sql_cannot_vouch_for_is_checked_by_canonical_bytes() -> None:
    ledger = Ledger(":memory:")
    ledger.append(A, [_turn(1, AWKWARD), _turn(2)], expected_version=0)
    ledger.append(A, [LlmCalled(purpose="p", backend="b", model="m", prompt_hash="h", text="t",
                                latency_ms=math.nan)], expected_version=2)
    sql, python = _sql_spelling(ledger), [canonical_bytes(r).decode() for r in _rows(ledger)]
    assert sql[0] != python[0] and sql[2] != python[2] and sql[1] == python[1]
    assert ledger.verify().ok
    ledger.conn.execute("UPDATE events SET text = replace(text, 'bell', 'ball') WHERE seq = 1")
    report = ledger.verify()
    assert (report.ok, report.first_broken_seq, report.events, report.reason) == (False, 1, 1, CHANGED)


def test_more_doubts_than_one_read_back_are_all_checked() -> None:
    ledger = Ledger(":memory:")
    ledger.append(A, [_turn(n, f"{AWKWARD} {n}") for n in range(1, 5001)], expected_version=0)
    assert ledger.verify().ok
    ledger.conn.execute("UPDATE events SET payload = replace(payload, 'reply', 'Reply') WHERE seq = 4321")
    report = ledger.verify()
    assert (report.ok, report.first_broken_seq, report.reason) == (False, 4321, CHANGED)


def _shuffled(ledger: Ledger) -> None:
    """Store the same rows out of seq order, as a copy made without ORDER BY might."""
    ledger.conn.execute("CREATE TEMP TABLE copy AS SELECT * FROM events")
    ledger.conn.execute("DELETE FROM events")
    ledger.conn.execute("INSERT INTO events SELECT * FROM copy ORDER BY hash")
    ledger.conn.execute("DROP TABLE copy")


def _interleaved() -> Ledger:
    ledger = Ledger(":memory:")
    for n in range(1, 40):
        stream = A if n % 3 else B
        ledger.append(stream, [_turn(n)], expected_version=ledger.stream_version(stream))
    return ledger


def test_a_ledger_stored_out_of_seq_order_verifies_in_seq_order() -> None:
    ledger = _interleaved()
    _shuffled(ledger)
    assert [r["seq"] for r in _rows(ledger)] == list(range(1, 40))  # ORDER BY sees them in order...
    stored = [r[0] for r in ledger.conn.execute("SELECT seq FROM events").fetchall()]
    assert stored != sorted(stored)  # ...storage does not
    report = ledger.verify()
    assert report.ok and report.events == 39


@pytest.mark.parametrize("damage, seq, words", [
    ("DELETE FROM events WHERE seq = 17", 18, "gap"),
    ("INSERT INTO events SELECT * FROM events WHERE seq = 9", 9, "repeat"),
    ("UPDATE events SET stream_version = stream_version + 1 WHERE seq = 30", 30, "the stored hash"),
    ("UPDATE events SET prev_hash = 'x' WHERE seq = 12", 12, "prev_hash"),
])
def test_damage_to_a_ledger_out_of_seq_order_is_reported_at_its_seq(damage: str, seq: int, words: str) -> None:
    ordered, shuffled = _interleaved(), _interleaved()
    for ledger in (ordered, shuffled):
        ledger.conn.execute(damage)
    _shuffled(shuffled)
    expected = ordered.verify()
    assert (expected.ok, expected.first_broken_seq) == (False, seq) and words in expected.reason
    assert shuffled.verify() == expected


def test_a_repeat_stored_after_a_changed_row_is_still_reported_first() -> None:
    """In storage order the changed row comes first; in seq order the repeat of seq 3 does."""
    ledger = _interleaved()
    ledger.conn.execute("UPDATE events SET text = 'changed' WHERE seq = 20")
    ledger.conn.execute("INSERT INTO events SELECT * FROM events WHERE seq = 3")
    report = ledger.verify()
    assert (report.ok, report.first_broken_seq) == (False, 3) and "repeat" in report.reason


def test_verify_is_not_blocked_by_a_result_left_open_on_the_connection() -> None:
    ledger = _interleaved()
    pending = ledger.conn.execute("SELECT * FROM events")
    assert pending.fetchone() is not None
    with pytest.raises(duckdb.Error):
        ledger.conn.sql("SELECT 1").fetchall()  # what an open result does to a relation on this connection
    assert ledger.verify().ok


def test_the_walk_reports_each_streams_last_version() -> None:
    ledger = _interleaved()
    walk = check_chain(ledger.conn)
    assert walk.broken is None and walk.rows == 39 and walk.last_seq == 39
    assert walk.versions == {1: ledger.stream_version(A), 2: ledger.stream_version(B)}
    assert walk.last_hash == chain_hash(_rows(ledger)[-1]["prev_hash"], canonical_bytes(_rows(ledger)[-1]))


def test_summary_facts_and_ids_lists_spell_alike() -> None:
    ledger = Ledger(":memory:")
    events: list[Event] = [
        SummaryCreated(turn=1, summary_id="s1", text=AWKWARD, facts=(("k", "v\x1f"), ("x", "")), overrides=(),
                       raw_ids=("r1", "r\"2")),
        SummaryCreated(turn=2, summary_id="s2", text="plain", facts=(), overrides=("s1",), raw_ids=()),
    ]
    ledger.append(A, events, expected_version=0)
    assert ledger.verify().ok
    ledger.conn.execute("UPDATE events SET ids = ['r1', 'r2'] WHERE seq = 1")
    assert ledger.verify().first_broken_seq == 1
