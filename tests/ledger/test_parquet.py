"""Parquet exports: the Hive layout other tools read, exact round trips, a read-only ledger over the files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from ledgermem.ledger.errors import LedgerCorrupt, LedgerError, LedgerLocked, LedgerNotFound
from ledgermem.projections.events import ProbeAsked, TurnRecorded
from ledgermem.ledger.keys import SEALED, KeyStore, key_path
from ledgermem.ledger.parquet import (
    MANIFEST,
    RUN_SYSTEM,
    ParquetLedger,
    export,
    file_schema,
    import_dataset,
    open_ledger,
)
from ledgermem.ledger.schema import events_arrow_schema
from ledgermem.ledger.store import Ledger, StreamKey
from tests.ledger.test_schema import SAMPLE_EVENTS
from tests.ledger.test_store_contract import A1, A2, B1, RUN, StepClock, all_rows, populate

SECRET = "the-distinctive-plaintext-7f3c91e2a4b8d6f0-which-must-never-reach-an-exported-file"
SEALED_STREAM = StreamKey("run-1", "ledgermem", "ep-sealed")
SAMPLES = StreamKey("run-2", "full_context", "ep-samples")

QUERIES = (
    "SELECT run_id, system, count(*) FROM events GROUP BY ALL ORDER BY ALL",
    "SELECT seq, record_id, text FROM events WHERE event_type = 'turn_recorded' ORDER BY seq",
    "SELECT event_type, max(seq), min(recorded_at) FROM events GROUP BY event_type ORDER BY event_type",
    "SELECT seq, ids, latency_ms FROM events WHERE ids IS NOT NULL OR latency_ms IS NOT NULL ORDER BY seq",
    "SELECT * FROM events WHERE run_id = 'run-1' AND system = '' ORDER BY seq",
    "SELECT * FROM streams ORDER BY stream_no",
    "SELECT * FROM ledger_meta",
)


def sealed_turn(n: int) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r-sealed-{n}", text=f"{SECRET} #{n}", agent=f"reply {n}")


def fill(ledger: Ledger, *, seal: bool = True) -> None:
    """Four interleaved streams in two runs, every event type, and a stream of sealed turns."""
    populate(ledger)
    key = "k1" if seal else None
    ledger.append(SEALED_STREAM, [sealed_turn(1), sealed_turn(2)], expected_version=0, keys=[key, key])
    ledger.append(SAMPLES, list(SAMPLE_EVENTS), expected_version=0)
    ledger.append(SEALED_STREAM, [sealed_turn(3)], expected_version=2, keys=[key])


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Ledger]:
    """A filled ledger file, reopened read-only so its key store can be opened a second time."""
    path = tmp_path / "run" / "ledger.duckdb"
    path.parent.mkdir()
    with Ledger(path, clock=StepClock(), keys=KeyStore(key_path(path))) as ledger:
        fill(ledger)
    with Ledger(path, read_only=True) as ledger:
        yield ledger


@pytest.fixture
def exported(source: Ledger, tmp_path: Path) -> Path:
    export(source, tmp_path / "export")
    return tmp_path / "export"


@pytest.fixture
def keys(source: Ledger) -> KeyStore:
    return KeyStore(key_path(source.path), read_only=True)


def scalar(conn: duckdb.DuckDBPyConnection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


def parquet_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


# --- layout -----------------------------------------------------------------------------


def test_export_writes_the_hive_layout_in_zstd(source: Ledger, tmp_path: Path) -> None:
    written = export(source, tmp_path / "export")
    rel = sorted(str(p.relative_to(tmp_path / "export")) for p in written)
    assert rel == [
        f"run_id=run-1/system={RUN_SYSTEM}/part-0.parquet",
        "run_id=run-1/system=full_context/part-0.parquet",
        "run_id=run-1/system=ledgermem/part-0.parquet",
        "run_id=run-2/system=full_context/part-0.parquet",
        "run_id=run-2/system=ledgermem/part-0.parquet",
    ]
    assert written == parquet_files(tmp_path / "export")
    for path in written:
        meta = pq.read_metadata(path)
        codecs = {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups)
                  for c in range(meta.num_columns)}
        assert codecs == {"ZSTD"}, path
        assert pq.read_schema(path).remove_metadata().equals(file_schema())
        seqs = pq.read_table(path, columns=["seq"]).column("seq").to_pylist()
        assert seqs == sorted(seqs) and seqs


def test_file_schema_is_the_events_schema_without_partition_columns() -> None:
    full = events_arrow_schema()
    assert file_schema().names == [n for n in full.names if n not in ("run_id", "system")]
    assert all(file_schema().field(n).equals(full.field(n)) for n in file_schema().names)


def test_manifest_anchors_the_export(source: Ledger, exported: Path) -> None:
    import json

    doc = json.loads((exported / MANIFEST).read_text(encoding="utf-8"))
    assert doc["format"] == "ledgermem-parquet" and doc["format_version"] == 1
    assert doc["events"] == scalar(source.conn, "SELECT count(*) FROM events")
    assert doc["last_seq"] == source.last_seq
    assert doc["last_hash"] == scalar(source.conn, "SELECT hash FROM events ORDER BY seq DESC LIMIT 1")
    assert doc["run_ids"] == ["run-1", "run-2"]
    assert sum(sum(r["files"].values()) for r in doc["runs"].values()) == doc["events"]


def test_rows_per_file_splits_a_partition_into_ordered_parts(source: Ledger, tmp_path: Path) -> None:
    written = export(source, tmp_path / "export", rows_per_file=4)
    samples = [p for p in written if "run_id=run-2/system=full_context" in str(p)]
    assert len(samples) == -(-len(SAMPLE_EVENTS) // 4)  # one part per 4 sample events, the last one short
    seqs = [s for p in samples for s in pq.read_table(p, columns=["seq"]).column("seq").to_pylist()]
    assert seqs == sorted(seqs) and len(seqs) == len(SAMPLE_EVENTS)
    with ParquetLedger(tmp_path / "export") as copy:
        assert all_rows(copy) == all_rows(source)
        assert copy.verify().ok
    with pytest.raises(LedgerError, match="rows_per_file"):
        export(source, tmp_path / "other", rows_per_file=0)


# --- other readers ----------------------------------------------------------------------


def test_pyarrow_duckdb_and_polars_read_the_export_as_is(source: Ledger, exported: Path) -> None:
    total = scalar(source.conn, "SELECT count(*) FROM events")
    per_run = source.conn.execute("SELECT run_id, count(*) FROM events GROUP BY 1 ORDER BY 1").fetchall()

    table = ds.dataset(exported, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == total
    assert {"run_id", "system"} <= set(table.column_names)

    glob = f"{exported}/**/*.parquet"
    with duckdb.connect() as conn:
        sql = f"SELECT run_id, count(*) FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY 1 ORDER BY 1"
        assert conn.execute(sql).fetchall() == per_run

    frame = pl.scan_parquet(glob, hive_partitioning=True).collect()
    assert frame.height == total
    assert sorted(frame.get_column("system").unique().to_list()) == [RUN_SYSTEM, "full_context", "ledgermem"]


# --- import -----------------------------------------------------------------------------


def test_import_round_trips_every_row_exactly(source: Ledger, exported: Path, tmp_path: Path) -> None:
    with import_dataset(exported, tmp_path / "copy.duckdb") as copy:
        assert all_rows(copy) == all_rows(source)
        for sql in ("DESCRIBE events", "SELECT * FROM streams ORDER BY stream_no", "SELECT * FROM ledger_meta"):
            assert copy.conn.execute(sql).fetchall() == source.conn.execute(sql).fetchall()
        assert copy.verify() == source.verify()
        assert copy.verify().ok
        assert copy.streams() == source.streams() and copy.last_seq == source.last_seq
        # The chain continues where the source left off.
        copy.append(B1, [ProbeAsked(probe_id="p-9", probe_type="t", slot=None, text="q", gold="g")],
                    expected_version=source.stream_version(B1))
        assert copy.verify().ok and copy.last_seq == source.last_seq + 1


def test_import_refuses_an_existing_file(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    target.write_bytes(b"something else")
    with pytest.raises(LedgerError, match="already exists"):
        import_dataset(exported, target)
    assert target.read_bytes() == b"something else"


def test_import_refuses_a_tampered_export(exported: Path, tmp_path: Path) -> None:
    seq = tamper(exported, "run_id=run-2/system=full_context/part-0.parquet")
    with pytest.raises(LedgerCorrupt, match=f"seq {seq}:"):
        import_dataset(exported, tmp_path / "copy.duckdb")
    assert not list(tmp_path.glob("*copy.duckdb*"))


def _swap_seqs(table: pa.Table) -> pa.Table:
    """Two neighbouring rows' seqs exchanged: each row keeps its hash, which no longer covers its seq."""
    seqs = table.column("seq").to_pylist()
    i = len(seqs) // 2
    seqs[i], seqs[i + 1] = seqs[i + 1], seqs[i]
    return table.set_column(table.schema.get_field_index("seq"), table.schema.field("seq"), pa.array(seqs, pa.int64()))


def _repeat_a_row(table: pa.Table) -> pa.Table:
    """A row stored twice, the copy right after the original: the file stays in seq order."""
    i = table.num_rows // 2
    return pa.concat_tables([table.slice(0, i + 1), table.slice(i, 1), table.slice(i + 1)])


DAMAGE = {
    "a changed payload": lambda t: t,  # done by `tamper`
    "swapped seqs": _swap_seqs,
    "a repeated row": _repeat_a_row,
    "the last row dropped": lambda t: t.slice(0, t.num_rows - 1),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_import_refuses_exactly_what_verify_refuses(exported: Path, tmp_path: Path, damage: str) -> None:
    """The import walks the copy it wrote; its refusal is `verify()`'s of the export, word for word."""
    path = exported / "run_id=run-2/system=full_context/part-0.parquet"
    if damage == "a changed payload":
        tamper(exported, "run_id=run-2/system=full_context/part-0.parquet")
    else:
        pq.write_table(DAMAGE[damage](pq.read_table(path)), path, compression="zstd")
    with ParquetLedger(exported) as copy:
        report = copy.verify()
    assert not report.ok
    with pytest.raises(LedgerCorrupt) as refused:
        import_dataset(exported, tmp_path / "copy.duckdb")
    assert str(refused.value) == f"{exported}: seq {report.first_broken_seq}: {report.reason}; nothing imported"
    assert not list(tmp_path.glob("*copy.duckdb*"))


def test_import_stores_the_rows_in_seq_order_whatever_the_files_order(
    source: Ledger, exported: Path, tmp_path: Path
) -> None:
    """Rows of a file in reverse order still form the chain: the copy holds them sorted, as a ledger stores them."""
    path = exported / "run_id=run-1/system=ledgermem/part-0.parquet"
    table = pq.read_table(path)
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), path, compression="zstd")
    with import_dataset(exported, tmp_path / "copy.duckdb") as copy:
        stored = [r[0] for r in copy.conn.execute("SELECT seq FROM events").fetchall()]  # storage order
        assert stored == list(range(1, source.last_seq + 1))
        assert all_rows(copy) == all_rows(source) and copy.verify().ok


def test_import_refuses_a_file_duckdb_cannot_read(exported: Path, tmp_path: Path) -> None:
    """Its footer reads (opening the export checks schemas), its pages do not: one line, nothing left behind."""
    path = exported / "run_id=run-2/system=full_context/part-0.parquet"
    data = bytearray(path.read_bytes())
    data[4:len(data) // 2] = bytes(len(data) // 2 - 4)  # the column chunks zeroed; magic and footer intact
    path.write_bytes(bytes(data))
    assert pq.read_schema(path) == pq.read_schema(exported / "run_id=run-1/system=ledgermem/part-0.parquet")
    with pytest.raises(LedgerCorrupt, match=f"^{exported}: the Parquet files cannot be read: "):
        import_dataset(exported, tmp_path / "copy.duckdb")
    assert not list(tmp_path.glob("*copy.duckdb*"))


def test_a_parquet_ledger_without_its_events_view_opens_it_on_demand(source: Ledger, exported: Path) -> None:
    with ParquetLedger(exported, events=False) as lazy:
        assert lazy.conn.execute("SELECT count(*) FROM streams").fetchone() == (len(source.streams()),)
        with pytest.raises(duckdb.CatalogException):
            lazy.conn.execute("SELECT 1 FROM events")  # control: the view is not there yet
        lazy.open_events()
        assert lazy.last_seq == source.last_seq and all_rows(lazy) == all_rows(source)
        assert lazy.streams() == source.streams()


# --- ParquetLedger ----------------------------------------------------------------------


def test_parquet_ledger_reads_like_the_source(source: Ledger, exported: Path, keys: KeyStore) -> None:
    with ParquetLedger(exported, keys=keys) as copy:
        assert list(copy.read()) == list(source.read())
        assert copy.streams() == source.streams()
        assert copy.streams("run-2") == source.streams("run-2")
        assert copy.last_seq == source.last_seq
        assert copy.verify() == source.verify() and copy.verify().ok
        filters: list[dict[str, Any]] = [
            {"stream": A1}, {"stream": A2, "from_version": 1, "to_version": 1}, {"run_id": "run-1"},
            {"from_seq": 5, "to_seq": 12}, {"event_types": ["turn_recorded", "probe_judged"]},
            {"stream": StreamKey("run-9")},
        ]
        for kwargs in filters:
            assert list(copy.read(**kwargs)) == list(source.read(**kwargs)), kwargs
        for stream in (RUN, A1, B1, SEALED_STREAM, StreamKey("nope")):
            assert copy.stream_version(stream) == source.stream_version(stream)
            assert copy.sealed_keys(stream) == source.sealed_keys(stream)
        assert copy.sealed_keys(SEALED_STREAM)  # there is something to compare


def test_sql_through_conn_gives_the_same_answers(source: Ledger, exported: Path) -> None:
    with ParquetLedger(exported) as copy:
        for sql in QUERIES:
            assert copy.conn.execute(sql).fetchall() == source.conn.execute(sql).fetchall(), sql
        columns = "SELECT column_name, column_type FROM (DESCRIBE events)"
        assert copy.conn.execute(columns).fetchall() == source.conn.execute(columns).fetchall()


def test_parquet_ledger_is_read_only(exported: Path) -> None:
    with ParquetLedger(exported) as copy:
        with pytest.raises(LedgerLocked, match="read-only"):
            copy.append(A1, [sealed_turn(9)], expected_version=copy.stream_version(A1))
        with pytest.raises(LedgerNotFound, match="no keys"):
            copy.open_keys()


def tamper(root: Path, name: str) -> int:
    """Change one row's payload in a file, in place; returns its seq."""
    path = root / name
    table = pq.read_table(path)
    seqs = table.column("seq").to_pylist()
    victim = len(seqs) // 2
    payload = table.column("payload").to_pylist()
    payload[victim] = payload[victim].replace("}", ',"forged":true}', 1)
    index = table.schema.get_field_index("payload")
    table = table.set_column(index, table.schema.field(index), pa.array(payload, pa.string()))
    pq.write_table(table, path, compression="zstd")
    return int(seqs[victim])


def test_verify_reports_the_seq_of_a_tampered_row(exported: Path, tmp_path: Path) -> None:
    copy_dir = tmp_path / "tampered"
    shutil.copytree(exported, copy_dir)
    seq = tamper(copy_dir, "run_id=run-2/system=full_context/part-0.parquet")
    with ParquetLedger(copy_dir) as copy:
        report = copy.verify()
    assert not report.ok and report.first_broken_seq == seq
    assert "stored hash does not match" in report.reason
    with ParquetLedger(exported) as untouched:
        assert untouched.verify().ok


def test_verify_notices_rows_dropped_from_the_end(source: Ledger, exported: Path) -> None:
    path = exported / "run_id=run-1/system=ledgermem/part-0.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 1), path, compression="zstd")
    with ParquetLedger(exported) as copy:
        report = copy.verify()
    assert not report.ok
    assert report.first_broken_seq == source.last_seq  # the sealed stream's last turn is the ledger's last event


def test_import_reports_what_verify_reports(source: Ledger, exported: Path, tmp_path: Path) -> None:
    """The import checks the copy it wrote; it must refuse exactly what `verify()` of the export refuses."""
    path = exported / "run_id=run-1/system=ledgermem/part-0.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 1), path, compression="zstd")
    with ParquetLedger(exported) as copy:
        report = copy.verify()
    assert not report.ok
    with pytest.raises(LedgerCorrupt, match=f"seq {report.first_broken_seq}: ") as refused:
        import_dataset(exported, tmp_path / "copy.duckdb")
    assert report.reason in str(refused.value)
    assert not list(tmp_path.glob("*copy.duckdb*"))


def test_a_missing_file_is_named_on_open(exported: Path) -> None:
    victim = exported / "run_id=run-1/system=full_context/part-0.parquet"
    victim.unlink()
    with pytest.raises(LedgerCorrupt, match="part-0.parquet"):
        ParquetLedger(exported)


# --- sealed values ------------------------------------------------------------------------


def every_string_cell(root: Path) -> Iterator[str]:
    for path in parquet_files(root):
        for column in pq.read_table(path).columns:
            for value in column.to_pylist():
                cells = value if isinstance(value, list) else [value]
                yield from (c for c in cells if isinstance(c, str))


def test_sealed_plaintext_never_reaches_the_export(exported: Path, keys: KeyStore) -> None:
    for path in [*parquet_files(exported), exported / MANIFEST]:
        assert SECRET.encode() not in path.read_bytes(), path
    assert not any(SECRET in cell for cell in every_string_cell(exported))
    assert not list(exported.rglob("*keys*"))

    with ParquetLedger(exported) as locked:
        texts = [r.event.text for r in locked.read(stream=SEALED_STREAM) if isinstance(r.event, TurnRecorded)]
    assert texts == [SEALED] * 3
    with ParquetLedger(exported, keys=keys) as opened:
        texts = [r.event.text for r in opened.read(stream=SEALED_STREAM) if isinstance(r.event, TurnRecorded)]
    assert texts == [f"{SECRET} #{n}" for n in (1, 2, 3)]


def test_the_plaintext_check_finds_unsealed_values(tmp_path: Path) -> None:
    """Control: the same check does see the value when it was stored in clear."""
    with Ledger(tmp_path / "clear.duckdb", clock=StepClock()) as ledger:
        fill(ledger, seal=False)
        export(ledger, tmp_path / "export")
    assert any(SECRET in cell for cell in every_string_cell(tmp_path / "export"))


# --- writing into an existing export --------------------------------------------------------


def test_exporting_a_run_twice_needs_overwrite(source: Ledger, exported: Path) -> None:
    before = (exported / MANIFEST).read_text(encoding="utf-8")
    with pytest.raises(LedgerError, match="run-1, run-2.*overwrite=True"):
        export(source, exported)
    with pytest.raises(LedgerError, match="run-2"):
        export(source, exported, run_id="run-2")
    assert (exported / MANIFEST).read_text(encoding="utf-8") == before

    source.close()
    with Ledger(source.path) as writer:
        writer.append(A2, [sealed_turn(4)], expected_version=writer.stream_version(A2), keys=["k1"])
        export(writer, exported, run_id="run-2", overwrite=True)
        rows = all_rows(writer)
    with ParquetLedger(exported) as copy:
        assert all_rows(copy) == rows and len(rows) == copy.last_seq
        assert copy.complete and copy.verify().ok
    assert not [p for p in exported.iterdir() if p.name.startswith(".")]


def test_export_refuses_a_directory_that_is_not_an_export(source: Ledger, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("mine")
    with pytest.raises(LedgerError, match="not empty"):
        export(source, tmp_path / "elsewhere")


def test_export_of_an_unknown_run(source: Ledger, tmp_path: Path) -> None:
    with pytest.raises(LedgerNotFound, match="run-9.*run-1, run-2"):
        export(source, tmp_path / "export", run_id="run-9")


def test_one_run_of_a_ledger_verifies_as_a_part(source: Ledger, tmp_path: Path) -> None:
    export(source, tmp_path / "part", run_id="run-2")
    with ParquetLedger(tmp_path / "part") as part:
        assert not part.complete
        assert list(part.read()) == list(source.read(run_id="run-2"))
        assert part.streams() == source.streams("run-2")
        assert part.verify().ok
    seq = tamper(tmp_path / "part", "run_id=run-2/system=full_context/part-0.parquet")
    with ParquetLedger(tmp_path / "part") as part:
        report = part.verify()
    assert not report.ok and report.first_broken_seq == seq
    with pytest.raises(LedgerError, match="only part of their ledger"):
        import_dataset(tmp_path / "part", tmp_path / "copy.duckdb")


def test_runs_of_separate_ledgers_share_one_export(tmp_path: Path) -> None:
    """The runner writes one ledger per run; their exports go into one dataset."""
    sources = {}
    for run in ("2024-05-01 smoke/a", "2024-05-02"):
        path = tmp_path / "runs" / run.replace("/", "_") / "ledger.duckdb"
        with Ledger(path, clock=StepClock()) as ledger:
            ledger.append(StreamKey(run), [SAMPLE_EVENTS[0]], expected_version=0)
            ledger.append(StreamKey(run, "three_layer", "ep-1"), list(SAMPLE_EVENTS[2:6]), expected_version=0)
            export(ledger, tmp_path / "warehouse")
            sources[run] = all_rows(ledger)

    glob = f"{tmp_path / 'warehouse'}/**/*.parquet"
    assert pl.scan_parquet(glob, hive_partitioning=True).collect().height == 10
    with pytest.raises(LedgerError, match="2 different ledgers"):
        ParquetLedger(tmp_path / "warehouse")
    for run, rows in sources.items():
        with ParquetLedger(tmp_path / "warehouse", run_id=run) as one:
            assert all_rows(one) == rows and one.verify().ok and one.complete
        with import_dataset(tmp_path / "warehouse", tmp_path / f"{len(run)}.duckdb", run_id=run) as copy:
            assert all_rows(copy) == rows


def test_an_empty_ledger_exports_and_reopens(tmp_path: Path) -> None:
    with Ledger(tmp_path / "empty.duckdb") as ledger:
        assert export(ledger, tmp_path / "export") == []
    with ParquetLedger(tmp_path / "export") as copy:
        assert copy.last_seq == 0 and list(copy.read()) == [] and copy.verify().ok


# --- open_ledger ------------------------------------------------------------------------


def test_open_ledger_picks_the_backend(source: Ledger, exported: Path) -> None:
    path, rows = Path(source.path), all_rows(source)
    source.close()
    with open_ledger(path) as ledger:
        assert type(ledger) is Ledger and ledger.read_only
        assert ledger.keys is not None  # found beside the file
        assert all_rows(ledger) == rows
    with open_ledger(exported) as copy:
        assert isinstance(copy, ParquetLedger) and copy.keys is None
        assert all_rows(copy) == rows
    with open_ledger(exported, keys=key_path(path)) as copy:
        texts = [r.event.text for r in copy.read(stream=SEALED_STREAM) if isinstance(r.event, TurnRecorded)]
        assert texts[0] == f"{SECRET} #1"


def test_open_ledger_refusals(source: Ledger, exported: Path, tmp_path: Path) -> None:
    with pytest.raises(LedgerLocked, match="read-only"):
        open_ledger(exported, read_only=False)
    with pytest.raises(LedgerNotFound, match="no key store"):
        open_ledger(exported, keys=tmp_path / "missing.keys.duckdb")
    with pytest.raises(LedgerNotFound):
        open_ledger(tmp_path / "nothing.duckdb")
    (tmp_path / "plain").mkdir()
    with pytest.raises(LedgerNotFound, match=MANIFEST):
        open_ledger(tmp_path / "plain")


def test_a_stream_version_beyond_64_bits_is_a_malformed_manifest(exported: Path) -> None:
    doc = json.loads((exported / MANIFEST).read_text(encoding="utf-8"))
    doc["runs"]["run-1"]["streams"][0][3] = 2**70
    (exported / MANIFEST).write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(LedgerCorrupt, match=f"{MANIFEST}: malformed manifest"):
        ParquetLedger(exported)
