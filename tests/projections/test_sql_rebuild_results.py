"""What `rebuild_sql` returns: rows kept in a DuckDB database of the result's own, read as dicts or Arrow."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from ledgermem.ledger.store import Ledger
from ledgermem.projections.materialise import rebuild
from ledgermem.projections.scd2 import TABLE_NAMES
from ledgermem.projections.sql_rebuild import SqlHistory, rebuild_sql, rebuild_sql_ledger
from tests.projections import golden

CASE = "erasure_fallback"


@pytest.fixture
def ledger() -> Ledger:
    return golden.ledger_from(golden.events_path(CASE))


def test_rows_read_as_dicts_by_iteration_index_and_slice(ledger: Ledger) -> None:
    folded = rebuild(ledger)
    with rebuild_sql_ledger(ledger) as history:
        assert list(history) == list(TABLE_NAMES)
        for name, rows in history.items():
            assert len(rows) == len(folded[name])
            assert list(rows) == folded[name]
            if folded[name]:
                assert rows[0] == folded[name][0] and rows[-1] == folded[name][-1]
                assert rows[1:3] == folded[name][1:3]
        with pytest.raises(IndexError):
            history["raw_records"][len(folded["raw_records"])]


def test_equality_is_row_for_row_and_fails_on_one_changed_value(ledger: Ledger) -> None:
    folded = rebuild(ledger)
    history = rebuild_sql_ledger(ledger)
    assert history == folded and folded == history
    rows = [dict(r) for r in folded["raw_records"]]
    rows[-1]["user_text"] = rows[-1]["user_text"] + "!"
    assert history["raw_records"] != rows
    assert history["raw_records"] != rows[:-1]  # one row short
    assert history != {**folded, "raw_records": rows}


def test_arrow_batches_and_sql_see_the_same_rows(ledger: Ledger) -> None:
    history = rebuild_sql_ledger(ledger)
    for name, rows in history.items():
        table = rows.arrow()
        assert table.num_rows == len(rows) and table.to_pylist() == list(rows)
        assert sum(b.num_rows for b in rows.batches(2)) == len(rows)
        assert history.conn.execute(f"SELECT count(*) FROM {name}").fetchall() == [(len(rows),)]


def test_two_projections_can_be_read_at_once(ledger: Ledger) -> None:
    history = rebuild_sql_ledger(ledger)
    pairs = list(zip(history["raw_records"], history["window_versions"]))
    assert pairs and all(a["record_id"] and b["record_id"] for a, b in pairs)


def test_the_result_outlives_the_source_connection(ledger: Ledger) -> None:
    folded = rebuild(ledger)
    history = rebuild_sql(ledger.conn)
    ledger.close()
    assert history == folded


def test_close_removes_the_database_and_its_spill_folder(ledger: Ledger) -> None:
    history = rebuild_sql_ledger(ledger)
    folder = Path(history._spill)
    assert folder.is_dir()
    history.close()
    assert not folder.exists()
    with pytest.raises(duckdb.ConnectionException):
        history.conn.execute("SELECT 1")
    history.close()  # twice is fine


def test_a_dropped_result_leaves_no_folder_behind(ledger: Ledger) -> None:
    folder = Path(rebuild_sql_ledger(ledger)._spill)
    assert not folder.exists()


def test_memory_limit_bounds_the_rebuild_and_is_put_back(ledger: Ledger) -> None:
    ledger.conn.execute("SET memory_limit = '3GiB'")
    history = rebuild_sql_ledger(ledger, memory_limit="64MiB")
    assert history == rebuild(ledger)
    assert ledger.conn.execute("SELECT current_setting('memory_limit')").fetchall() == [("3.0 GiB",)]
    assert history.conn.execute("SELECT current_setting('memory_limit')").fetchall() == [("16.0 MiB",)]


@pytest.mark.parametrize("limit", ["lots", "1GB; DROP TABLE events", "-1GB"])
def test_a_memory_limit_that_is_not_a_size_is_refused_before_anything_runs(ledger: Ledger, limit: str) -> None:
    before = ledger.conn.execute("SELECT current_setting('memory_limit')").fetchall()
    with pytest.raises(ValueError, match="memory_limit"):
        rebuild_sql_ledger(ledger, memory_limit=limit)
    assert ledger.conn.execute("SELECT current_setting('memory_limit')").fetchall() == before
    assert ledger.conn.execute("SELECT count(*) FROM events").fetchall()[0][0] > 0


def test_an_empty_ledger_gives_empty_tables() -> None:
    history = rebuild_sql_ledger(Ledger(":memory:"))
    assert isinstance(history, SqlHistory)
    assert all(len(rows) == 0 and list(rows) == [] for rows in history.values())
    assert not os.listdir(history._spill)
