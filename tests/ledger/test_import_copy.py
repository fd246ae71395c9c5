"""How an import copies an export: rows in seq order without a sort, the chain walked a batch at a time.

test_parquet.py checks what an import accepts and refuses; these check the
machinery under it: the stretches the rows are copied in (and the sort
taken instead when the files do not allow them), the walk's whole-batch
path against its row-by-row path, and the export's tables read without a
database.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ledgermem.ledger import chain, parquet
from ledgermem.ledger.chain import ChainWalk, check_chain
from ledgermem.ledger.parquet import MANIFEST, ParquetLedger, RunEntry, import_dataset
from ledgermem.ledger.schema import blobs_arrow_schema
from ledgermem.ledger.store import Ledger
from ledgermem.projections.events import TurnRecorded
from ledgermem.ledger.store import StreamKey
from tests.ledger.test_parquet import exported, parquet_files, source  # noqa: F401  (fixtures)
from tests.ledger.test_store_contract import all_rows

__all__ = ["exported", "source"]


def stored_seqs(ledger: Ledger) -> list[int]:
    return [r[0] for r in ledger.conn.execute("SELECT seq FROM events").fetchall()]  # storage order


def expected_stretches(ledger: Ledger) -> int:
    """Runs of consecutive seqs in one partition (run, system): what the copy is made of."""
    parts = [r for r in ledger.conn.execute("SELECT run_id, system FROM events ORDER BY seq").fetchall()]
    return sum(1 for i, part in enumerate(parts) if i == 0 or part != parts[i - 1])


# --- rows in seq order ------------------------------------------------------------------


def test_files_in_seq_order_are_copied_stretch_by_stretch(source: Ledger, exported: Path, tmp_path: Path) -> None:
    with ParquetLedger(exported, events=False) as export:
        inserts = parquet._inserts_in_seq_order(export.files)
    assert len(inserts) == expected_stretches(source) > len(parquet_files(exported))  # the partitions interleave
    assert not any("ORDER BY" in sql for sql in inserts)
    with import_dataset(exported, tmp_path / "copy.duckdb") as copy:
        assert stored_seqs(copy) == list(range(1, source.last_seq + 1))
        assert all_rows(copy) == all_rows(source) and copy.verify().ok


def test_a_file_out_of_seq_order_gets_one_sort(source: Ledger, exported: Path, tmp_path: Path) -> None:
    """Control: stretches of a file whose rows are not in order would store the copy out of order."""
    path = exported / "run_id=run-1/system=ledgermem/part-0.parquet"
    table = pq.read_table(path)
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), path, compression="zstd")
    with ParquetLedger(exported, events=False) as export:
        assert parquet._stretches(export.files) is None
        assert [sql.endswith("ORDER BY seq") for sql in parquet._inserts_in_seq_order(export.files)] == [True]
    with import_dataset(exported, tmp_path / "copy.duckdb") as copy:
        assert stored_seqs(copy) == list(range(1, source.last_seq + 1))


def test_too_many_stretches_get_one_sort(
    source: Ledger, exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet, "_MAX_STRETCHES", expected_stretches(source) - 1)
    with ParquetLedger(exported, events=False) as export:
        assert len(parquet._inserts_in_seq_order(export.files)) == 1
    with import_dataset(exported, tmp_path / "copy.duckdb") as copy:
        assert stored_seqs(copy) == list(range(1, source.last_seq + 1))
        assert all_rows(copy) == all_rows(source)


def test_a_stretch_is_exactly_its_files_rows(tmp_path: Path) -> None:
    """Seqs shared by two files (a damaged export) stay in both stretches: the walk then finds the repeat."""
    for name, seqs in (("a", [1, 2, 5, 6]), ("b", [3, 4, 5, 7])):
        pq.write_table(pa.table({"seq": pa.array(seqs, pa.int64())}), tmp_path / f"{name}.parquet")
    files = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    assert parquet._stretches(files) == [(0, 1, 2), (1, 3, 4), (0, 5, 5), (1, 5, 5), (0, 6, 6), (1, 7, 7)]


# --- the walk ---------------------------------------------------------------------------


def interleaved(n: int = 60) -> Ledger:
    ledger = Ledger(":memory:")
    a, b = StreamKey("run", "sys", "ep-a"), StreamKey("run", "sys", "ep-b")
    for i in range(1, n + 1):
        stream = a if i % 3 else b
        ledger.append(stream, [TurnRecorded(turn=i, record_id=f"r{i:04d}", text=f"turn {i}", agent="ok")],
                      expected_version=ledger.stream_version(stream))
    return ledger


DAMAGE = [
    # The same digest in capitals, and the next row linked to it: equal as bytes decoded from hex, not as stored.
    "UPDATE events SET hash = upper(hash) WHERE seq = 20; UPDATE events SET prev_hash = upper(prev_hash) WHERE seq = 21",
    "UPDATE events SET prev_hash = upper(prev_hash) WHERE seq = 21",
    "UPDATE events SET hash = hash || '0' WHERE seq = 33",
    "UPDATE events SET prev_hash = substr(prev_hash, 2) || '0' WHERE seq = 7",
    "UPDATE events SET stream_version = stream_version + 1 WHERE seq = 44",
    "UPDATE events SET text = 'changed' WHERE seq = 50",
    "DELETE FROM events WHERE seq = 12",
    "INSERT INTO events SELECT * FROM events WHERE seq = 9",
]


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("batch", [1, 7, 8192])
def test_the_whole_batch_path_reports_what_the_row_by_row_walk_reports(
    damage: str, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = interleaved()
    assert check_chain(ledger.conn).broken is None
    ledger.conn.execute(damage)
    monkeypatch.setattr(chain, "_BATCH_ROWS", batch)
    monkeypatch.setattr(chain, "_ARROW_FROM_ROWS", 0)  # Arrow batches however small the ledger
    fast = check_chain(ledger.conn)
    monkeypatch.setattr(ChainWalk, "_accept", lambda self, batch, seqs: False)
    slow = check_chain(ledger.conn)
    assert fast.broken is not None and fast.broken == slow.broken
    assert (fast.rows, fast.last_seq, fast.versions) == (slow.rows, slow.last_seq, slow.versions)


@pytest.mark.parametrize("batch", [1, 7, 8192])
def test_a_sound_ledger_is_taken_a_whole_batch_at_a_time(batch: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = interleaved()
    monkeypatch.setattr(chain, "_BATCH_ROWS", batch)
    monkeypatch.setattr(chain, "_ARROW_FROM_ROWS", 0)
    monkeypatch.setattr(ChainWalk, "_feed_rows", lambda *a, **k: pytest.fail("a row-by-row walk"))
    walk = check_chain(ledger.conn)
    assert walk.broken is None and walk.rows == 60 and walk.last_hash == ledger.conn.execute(
        "SELECT hash FROM events WHERE seq = 60").fetchone()[0]


@pytest.mark.parametrize("damage", [None, *DAMAGE])
@pytest.mark.parametrize("batch", [1, 7, 8192])
def test_a_small_ledger_walked_as_python_rows_gets_the_arrow_walks_report(
    damage: str | None, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = interleaved()
    if damage is not None:
        ledger.conn.execute(damage)
    monkeypatch.setattr(chain, "_BATCH_ROWS", batch)
    monkeypatch.setattr(ChainWalk, "feed", lambda *a, **k: pytest.fail("an Arrow batch for a small ledger"))
    rows = check_chain(ledger.conn)
    monkeypatch.undo()
    monkeypatch.setattr(chain, "_BATCH_ROWS", batch)
    monkeypatch.setattr(chain, "_ARROW_FROM_ROWS", 0)
    arrow = check_chain(ledger.conn)
    assert (rows.broken is None) == (damage is None)
    assert (rows.broken, rows.rows, rows.last_seq, rows.last_hash, rows.versions) == (
        arrow.broken, arrow.rows, arrow.last_seq, arrow.last_hash, arrow.versions)


def test_hex_runs_are_only_of_64_character_values() -> None:
    good = "ab" * 32
    assert chain._hex_run(pa.array([good, good])) == (good * 2).encode()
    assert chain._hex_run(pa.array([good, good]).slice(1)) == good.encode()
    for bad in ([good, None], [good, good[:-1]], [good, good + "0"], [good[:-1] + "é"]):
        assert chain._hex_run(pa.array(bad)) is None, bad
    assert chain._hex_run(pa.array([good], pa.large_string())) is None


# --- the export's tables ----------------------------------------------------------------


def test_an_export_opened_for_an_import_makes_no_database(exported: Path) -> None:
    with ParquetLedger(exported, events=False) as export:
        assert export._conn is None and export.stream_table.num_rows == len(export._streams)
        assert export.conn.execute("SELECT count(*) FROM streams").fetchone() == (export.stream_table.num_rows,)


def blob_rows(sha: str, key: str | None, data: bytes) -> pa.Table:
    return pa.table([pa.array([sha]), pa.array([key], pa.string()), pa.array([len(data)], pa.int64()),
                     pa.array([data], pa.binary())], schema=blobs_arrow_schema())


def test_a_block_in_two_runs_is_one_row_the_first_runs(tmp_path: Path) -> None:
    files = {"run_id=a/blobs.parquet": [("b" * 64, None, b"1"), ("a" * 64, "k", b"2")],
             "run_id=b/blobs.parquet": [("b" * 64, None, b"other"), ("a" * 64, None, b"3"), ("a" * 64, "k", b"4")]}
    runs = {}
    for name, rows in files.items():
        (tmp_path / name).parent.mkdir()
        pq.write_table(pa.concat_tables([blob_rows(*r) for r in rows]), tmp_path / name)
        runs[name] = RunEntry("c", 0, 0, 0, "", [], {}, "", {name: len(rows)})
    table = parquet._blob_table(runs, tmp_path)
    assert [(r["sha256"], r["key_id"], r["data"]) for r in table.to_pylist()] == [
        ("a" * 64, "k", b"2"), ("a" * 64, None, b"3"), ("b" * 64, None, b"1")]
    runs["run_id=b/blobs.parquet"] = RunEntry("c", 0, 0, 0, "", [], {}, "", {"run_id=b/blobs.parquet": 2})
    with pytest.raises(parquet.LedgerCorrupt, match=f"3 rows, {MANIFEST} lists 2"):
        parquet._blob_table(runs, tmp_path)
