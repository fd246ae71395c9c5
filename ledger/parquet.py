"""Parquet exports of the ledger: a dataset other tools read as-is, and a read-only ledger over it.

Layout of an export directory::

    <dir>/_ledger.json                                   the manifest
    <dir>/run_id=<run>/system=<system>/part-<n>.parquet  zstd, rows in seq order

Partition values are percent-encoded (DuckDB, Polars and pyarrow decode
them). The run-level stream has system "", which a Hive path cannot hold,
so it is written as `system=__run__` and read back as "". The files hold
every other column of the `events` table with its exact Arrow type; the two
partition columns live only in the path, as Hive readers expect.

Sealed values are copied as the ciphertext the ledger stores; keys are never
exported. A directory may hold runs of several ledgers (one run per ledger
is how the runner writes them). The manifest records, per run, which ledger
(hash chain) it came from, its row count, last seq and hash, stream
versions and files, so a reader can tell a complete export from a damaged
one. A `ParquetLedger` opens the runs of one ledger; when they are only part
of that ledger, `verify()` checks what a part allows: each row's own hash,
the links between consecutive seqs, stream versions and the manifest's
anchors.

An import writes the new ledger into a hidden file beside its target and
renames it in once it verifies, all under a marker (`.<name>.importing`)
locked for as long as the import runs. A killed import leaves the marker
unlocked: the next import into that file removes what it left and finishes
it (`import_into`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ledgermem.ledger.errors import LedgerCorrupt, LedgerError, LedgerLocked, LedgerNotFound
from ledgermem.ledger.blocks import HAS_BLOCKS_SQL, referenced_blobs
from ledgermem.ledger.keys import KeyStore
from ledgermem.ledger.chain import VerifyReport, check_chain
from ledgermem.ledger.schema import GENESIS_HASH, blobs_arrow_schema, blobs_ddl, events_arrow_schema, events_ddl
from ledgermem.ledger.store import FORMAT_VERSION, Ledger, StreamKey

BLOBS_FILE = "blobs.parquet"
MANIFEST = "_ledger.json"
EXPORT_FORMAT = "ledgermem-parquet"
EXPORT_VERSION = 1
RUN_SYSTEM = "__run__"  # partition value of the run-level stream (system "")
PARTITION_COLUMNS = ("run_id", "system")
ROWS_PER_FILE = 1_000_000
_BATCH_ROWS = 65_536  # one row group per batch: small enough to prune by seq

_STREAMS_TYPES = (pa.int64(), pa.string(), pa.string(), pa.string(), pa.int64())  # DuckDB casts to the DDL's
_STREAMS_DDL = (
    "CREATE TABLE streams (stream_no INTEGER NOT NULL, run_id VARCHAR NOT NULL, "
    "system VARCHAR NOT NULL, episode_id VARCHAR NOT NULL, version BIGINT NOT NULL)"
)


def file_schema() -> pa.Schema:
    """The schema of every Parquet file: the events table without the partition columns."""
    schema = events_arrow_schema()
    for name in PARTITION_COLUMNS:
        schema = schema.remove(schema.get_field_index(name))
    return schema


def run_dir(run_id: str) -> str:
    """`run_id=<run>`: a run's folder, relative to the export root."""
    return f"run_id={quote(run_id, safe='')}"


def partition_dir(run_id: str, system: str) -> str:
    """`run_id=<run>/system=<system>`, relative to the export root."""
    return f"{run_dir(run_id)}/system={quote(system, safe='') if system else RUN_SYSTEM}"


# -- manifest ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunEntry:
    """What one run's export holds; `chain` names its ledger by the hash of that ledger's seq 1."""

    chain: str
    events: int
    first_seq: int
    last_seq: int
    last_hash: str
    streams: list[tuple[int, str, str, int]]  # (stream_no, system, episode_id, declared version)
    files: dict[str, int]  # path relative to the root -> rows
    exported_at: str
    #: The run's blocks' bytes (`blobs` rows its events reference): path relative to the root -> rows.
    blobs: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChainEntry:
    """The source ledger as it was at the latest export of one of its runs."""

    events: int
    last_seq: int
    last_hash: str


@dataclass(slots=True)
class Manifest:
    """The `_ledger.json` of an export directory."""

    ledger_format: str = FORMAT_VERSION
    runs: dict[str, RunEntry] = field(default_factory=dict)
    chains: dict[str, ChainEntry] = field(default_factory=dict)

    def to_json(self) -> str:
        only = next(iter(self.chains.values())) if len(self.chains) == 1 else None
        doc = {
            "format": EXPORT_FORMAT,
            "format_version": EXPORT_VERSION,
            "ledger_format": self.ledger_format,
            "events": sum(r.events for r in self.runs.values()),
            # A single ledger has one last event; runs of several ledgers do not.
            "last_seq": only.last_seq if only else None,
            "last_hash": only.last_hash if only else None,
            "run_ids": sorted(self.runs),
            "runs": {k: asdict(v) for k, v in sorted(self.runs.items())},
            "chains": {k: asdict(v) for k, v in sorted(self.chains.items())},
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def load(cls, root: Path) -> Manifest:
        path = root / MANIFEST
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise LedgerNotFound(f"{path}: no manifest; {root} is not a Parquet export of a ledger") from exc
        except (OSError, ValueError) as exc:
            raise LedgerCorrupt(f"{path}: unreadable manifest: {exc}") from exc
        _check_header(doc, path)
        try:
            runs = {k: _run_entry(v) for k, v in doc["runs"].items()}
            chains = {k: ChainEntry(**v) for k, v in doc["chains"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerCorrupt(f"{path}: malformed manifest: {exc!r}") from exc
        orphans = sorted(r for r, e in runs.items() if e.chain not in chains)
        if orphans:
            raise LedgerCorrupt(f"{path}: run(s) {', '.join(orphans)} name a ledger the manifest does not list")
        return cls(str(doc["ledger_format"]), runs, chains)

    def note_chain(self, snapshot: tuple[str, ChainEntry] | None) -> None:
        """Record the source ledger's extent; forget ledgers whose runs have all been replaced."""
        if snapshot is not None:
            self.chains[snapshot[0]] = snapshot[1]
        used = {r.chain for r in self.runs.values()}
        self.chains = {k: v for k, v in self.chains.items() if k in used}

    def save(self, root: Path) -> None:
        fresh = root / f".{MANIFEST}.{uuid.uuid4().hex}"
        fresh.write_text(self.to_json(), encoding="utf-8")
        os.replace(fresh, root / MANIFEST)  # readers see the old manifest or the new, never half


def _check_header(doc: Any, path: Path) -> None:
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise LedgerCorrupt(f"{path}: not a ledgermem Parquet manifest")
    version = doc.get("format_version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise LedgerCorrupt(f"{path}: export format {version!r}; this code reads up to {EXPORT_VERSION}")
    if str(doc.get("ledger_format")) != FORMAT_VERSION:
        raise LedgerCorrupt(
            f"{path}: rows of ledger format {doc.get('ledger_format')!r}; this code reads format {FORMAT_VERSION}"
        )


def _run_entry(raw: dict[str, Any]) -> RunEntry:
    streams = [(int(n), str(s), str(e), int(v)) for n, s, e, v in raw.pop("streams")]
    return RunEntry(streams=streams, **raw)


# -- export ------------------------------------------------------------------------------


def export(
    ledger: Ledger,
    to: str | os.PathLike[str],
    *,
    run_id: str | None = None,
    overwrite: bool = False,
    rows_per_file: int = ROWS_PER_FILE,
) -> list[Path]:
    """Write the ledger's events (or one run's) to a Parquet dataset at `to`; returns the files written.

    A run already in `to` is replaced only with `overwrite=True`; other runs
    there are kept. Sealed values stay sealed: keys are not exported.
    """
    if rows_per_file < 1:
        raise LedgerError(f"{to}: rows_per_file must be at least 1, not {rows_per_file}")
    root = Path(to)
    runs = _runs_to_export(ledger, run_id)
    manifest = _manifest_for_writing(root)
    _check_free(root, manifest, runs, overwrite)
    ledger.sync_streams()  # the file's `streams` table says what the manifest will
    snapshot = _chain_of(ledger)
    staging = root / f".staging-{uuid.uuid4().hex}"
    replaced = root / f".replaced-{uuid.uuid4().hex}"
    try:
        if snapshot is not None:  # else there are no runs
            chain, upto = snapshot[0], snapshot[1].last_seq
            for run in runs:
                manifest.runs[run] = _write_run(ledger, staging, run, chain, upto, rows_per_file)
        _swap_in(root, staging, replaced, runs)
        manifest.note_chain(snapshot)
        manifest.save(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
    return sorted(root / f for run in runs for f in manifest.runs[run].files)


def _manifest_for_writing(root: Path) -> Manifest:
    if (root / MANIFEST).exists():
        return Manifest.load(root)
    if root.exists() and any(root.iterdir()):
        raise LedgerError(f"{root}: not empty and has no {MANIFEST}; export into an empty or new directory")
    root.mkdir(parents=True, exist_ok=True)
    return Manifest()


def _runs_to_export(ledger: Ledger, run_id: str | None) -> list[str]:
    runs = [str(r[0]) for r in ledger.conn.execute("SELECT DISTINCT run_id FROM events ORDER BY 1").fetchall()]
    if run_id is not None and run_id not in runs:
        raise LedgerNotFound(f"{ledger.path}: no events of run {run_id!r}; runs here: {', '.join(runs) or 'none'}")
    chosen = runs if run_id is None else [run_id]
    if any(not r for r in chosen):
        raise LedgerError(f"{ledger.path}: events with an empty run_id cannot be partitioned by run")
    if ledger.conn.execute("SELECT 1 FROM events WHERE system = ? LIMIT 1", [RUN_SYSTEM]).fetchone():
        raise LedgerError(f"{ledger.path}: a system named {RUN_SYSTEM!r} collides with the run stream's partition")
    return chosen


def _check_free(root: Path, manifest: Manifest, runs: list[str], overwrite: bool) -> None:
    if overwrite:
        return
    taken = [r for r in runs if r in manifest.runs or (root / run_dir(r)).exists()]
    if taken:
        raise LedgerError(
            f"{root}: already holds an export of run(s) {', '.join(taken)}; pass overwrite=True to replace them"
        )


def _chain_of(ledger: Ledger) -> tuple[str, ChainEntry] | None:
    """The source ledger's identity (hash of its first event) and its extent right now."""
    row = ledger.conn.execute(
        "SELECT arg_min(hash, seq), count(*), max(seq), arg_max(hash, seq) FROM events"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return str(row[0]), ChainEntry(int(row[1]), int(row[2]), str(row[3]))


def _write_run(ledger: Ledger, staging: Path, run: str, chain: str, upto: int, rows_per_file: int) -> RunEntry:
    """One run's partitions, rows up to seq `upto` only: later rows belong to the next export."""
    files: dict[str, int] = {}
    systems = ledger.conn.execute(
        "SELECT DISTINCT system FROM events WHERE run_id = ? AND seq <= ? ORDER BY 1", [run, upto]
    ).fetchall()
    for (system,) in systems:
        folder = partition_dir(run, str(system))
        parts = _Parts(staging / folder, rows_per_file)
        try:
            for batch in _batches(ledger, run, str(system), upto):
                parts.write(batch)
        finally:
            parts.close()
        files.update((f"{folder}/{name}", rows) for name, rows in parts.written)
    count, first, last, last_hash = ledger.conn.execute(
        "SELECT count(*), min(seq), max(seq), arg_max(hash, seq) FROM events WHERE run_id = ? AND seq <= ?",
        [run, upto],
    ).fetchone() or (0, 0, 0, "")
    streams = [(no, k.system, k.episode_id, v) for no, k, v in ledger.stream_rows(run)]
    return RunEntry(
        chain=chain, events=int(count), first_seq=int(first), last_seq=int(last), last_hash=str(last_hash),
        streams=[(int(n), str(s), str(e), int(v)) for n, s, e, v in streams], files=files,
        exported_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        blobs=_write_blobs(ledger, staging, run, upto),
    )


def _write_blobs(ledger: Ledger, staging: Path, run: str, upto: int) -> dict[str, int]:
    """The `blobs` rows the run's events reference, as `<run>/blobs.parquet` (none: no file)."""
    wanted: set[str] = set()
    for (payload,) in ledger.conn.execute(
        f"SELECT payload FROM events WHERE run_id = ? AND seq <= ? AND {HAS_BLOCKS_SQL}", [run, upto]
    ).fetchall():
        wanted |= referenced_blobs(payload)
    if not wanted or "blobs" not in {t[0] for t in ledger.conn.execute("SHOW TABLES").fetchall()}:
        return {}
    rows = ledger.conn.execute(
        "SELECT sha256, key_id, size, data FROM blobs WHERE list_contains(?, sha256) ORDER BY sha256, key_id",
        [sorted(wanted)],
    ).fetchall()
    schema = blobs_arrow_schema()
    table = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
    name = f"{run_dir(run)}/{BLOBS_FILE}"
    (staging / name).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, staging / name)
    return {name: table.num_rows}


def _batches(ledger: Ledger, run: str, system: str, upto: int) -> Iterator[pa.RecordBatch]:
    columns = ", ".join(file_schema().names)
    sql = f"SELECT {columns} FROM events WHERE run_id = ? AND system = ? AND seq <= ? ORDER BY seq"
    yield from ledger.conn.sql(sql, params=[run, system, upto]).to_arrow_reader(_BATCH_ROWS)


class _Parts:
    """Writes a partition's rows into part-0, part-1, ... of at most `limit` rows each."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder, self.limit, self.schema = folder, limit, file_schema()
        self.written: list[tuple[str, int]] = []
        self._writer: Any = None

    def write(self, batch: pa.RecordBatch) -> None:
        # DuckDB names list items differently and marks every column nullable; the files carry the ledger's schema.
        table = pa.Table.from_batches([batch]).cast(self.schema)
        while table.num_rows:
            if self._writer is None or self.written[-1][1] == self.limit:
                self._next_file()
            name, rows = self.written[-1]
            take = min(self.limit - rows, table.num_rows)
            self._writer.write_table(table.slice(0, take))
            self.written[-1] = (name, rows + take)
            table = table.slice(take)

    def _next_file(self) -> None:
        self.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.written.append((f"part-{len(self.written)}.parquet", 0))
        self._writer = pq.ParquetWriter(self.folder / self.written[-1][0], self.schema, compression="zstd")

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _swap_in(root: Path, staging: Path, replaced: Path, runs: list[str]) -> None:
    """Move each run's new folder into place, moving an old one aside first."""
    for run in runs:
        name = run_dir(run)
        target, fresh = root / name, staging / name
        if target.exists():
            replaced.mkdir(exist_ok=True)
            os.replace(target, replaced / name)
        if fresh.exists():
            os.replace(fresh, target)


# -- reading -----------------------------------------------------------------------------


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _select_sql(files: list[Path]) -> str:
    """A SELECT giving the events table's columns, in its order, from the files."""
    names = events_arrow_schema().names
    system = f"CASE \"system\" WHEN '{RUN_SYSTEM}' THEN '' ELSE \"system\" END AS \"system\""
    columns = ", ".join(system if n == "system" else f'"{n}"' for n in names)
    listing = ", ".join(_sql_text(str(f)) for f in files)
    return (
        f"SELECT {columns} FROM read_parquet([{listing}], hive_partitioning = true, "
        "hive_types = {'run_id': VARCHAR, 'system': VARCHAR}, hive_types_autocast = false)"
    )


#: More stretches than this and one sort is cheaper than a statement per stretch.
_MAX_STRETCHES = 64


def _inserts_in_seq_order(files: list[Path]) -> list[str]:
    """Statements that copy the files' rows into `events` in seq order.

    An export writes each file in seq order, so the rows in seq order are a
    few stretches, each a run of consecutive rows of one file (a run's
    stream of start and finish events sits around its systems' events).
    Inserting the stretches one after another stores the rows in seq order
    without sorting the whole table; DuckDB keeps a scan's order when it
    inserts. Files out of order, unreadable, or interleaved in many
    stretches get one `INSERT ... ORDER BY seq`, and DuckDB reports what it
    cannot read.
    """
    if not files:
        return []
    stretches = _stretches(files)
    if stretches is None:
        return [f"INSERT INTO events {_select_sql(files)} ORDER BY seq"]
    return [
        f"INSERT INTO events {_select_sql([files[i]])} WHERE seq BETWEEN {first} AND {last}"
        for i, first, last in stretches
    ]


def _stretches(files: list[Path]) -> list[tuple[int, int, int]] | None:
    """(file index, first seq, last seq) of each stretch of the rows in seq order; None: sort them instead."""
    try:
        seqs = [pq.read_table(f, columns=["seq"]).column(0).to_numpy() for f in files]
    except (OSError, pa.ArrowException):
        return None
    if any(len(s) and not (np.diff(s) > 0).all() for s in seqs):
        return None
    every = np.concatenate(seqs)
    owner = np.concatenate([np.full(len(s), i) for i, s in enumerate(seqs)])
    order = np.argsort(every, kind="stable")
    every, owner = every[order], owner[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    if len(starts) > _MAX_STRETCHES:
        return None
    ends = np.r_[starts[1:] - 1, len(every) - 1]
    return [(int(owner[a]), int(every[a]), int(every[b])) for a, b in zip(starts, ends)]


def _pick_runs(manifest: Manifest, run_id: str | None, where: str) -> dict[str, RunEntry]:
    """The runs a ParquetLedger opens: all of them, or `run_id`; always of a single ledger."""
    if run_id is not None:
        if run_id not in manifest.runs:
            known = ", ".join(sorted(manifest.runs)) or "none"
            raise LedgerNotFound(f"{where}: no run {run_id!r}; runs here: {known}")
        return {run_id: manifest.runs[run_id]}
    chains = {e.chain for e in manifest.runs.values()}
    if len(chains) > 1:
        raise LedgerError(
            f"{where}: holds runs of {len(chains)} different ledgers ({', '.join(sorted(manifest.runs))}); "
            "open one with run_id="
        )
    return dict(manifest.runs)


def _checked_files(root: Path, runs: dict[str, RunEntry]) -> list[Path]:
    """Absolute paths of the runs' files, each present and of the export's schema."""
    expected = file_schema()
    files: list[Path] = []
    for entry in runs.values():
        for name in sorted(entry.files):
            path = (root / name).resolve()
            try:
                schema = pq.read_schema(path)
            except (OSError, pa.ArrowException) as exc:
                raise LedgerCorrupt(f"{path}: listed in {MANIFEST} but unreadable: {exc}") from exc
            if not schema.remove_metadata().equals(expected):
                raise LedgerCorrupt(f"{path}: columns differ from the ledger's: {schema}")
            files.append(path)
    return files


def _stream_table(runs: dict[str, RunEntry], root: Path) -> pa.Table:
    """The runs' streams as the manifest declares them, ordered by stream_no."""
    rows = [(no, run, s, e, v) for run, entry in runs.items() for no, s, e, v in entry.streams]
    try:
        columns = [pa.array(column, type) for column, type in zip(zip(*rows), _STREAMS_TYPES)] if rows else [
            pa.array([], type) for type in _STREAMS_TYPES]
    except (OverflowError, pa.ArrowException) as exc:
        raise LedgerCorrupt(f"{root / MANIFEST}: malformed manifest: {exc!r}") from exc
    table = pa.table(columns, names=["stream_no", "run_id", "system", "episode_id", "version"])
    return table.sort_by("stream_no")


def _blob_table(runs: dict[str, RunEntry], root: Path) -> pa.Table:
    """The runs' block bytes, each file checked against the manifest; the first row of each (sha256, key_id)."""
    tables: list[pa.Table] = []
    for entry in runs.values():
        for name in sorted(entry.blobs):
            path = root / name
            try:
                table = pq.read_table(path)
            except (OSError, pa.ArrowException) as exc:
                raise LedgerCorrupt(f"{path}: listed in {MANIFEST} but unreadable: {exc}") from exc
            if not table.schema.remove_metadata().equals(blobs_arrow_schema()):
                raise LedgerCorrupt(f"{path}: columns differ from the blobs table's: {table.schema}")
            if table.num_rows != entry.blobs[name]:
                raise LedgerCorrupt(f"{path}: {table.num_rows} rows, {MANIFEST} lists {entry.blobs[name]}")
            tables.append(table.cast(blobs_arrow_schema()))
    if not tables:
        return blobs_arrow_schema().empty_table()
    every = pa.concat_tables(tables)
    keys = every.select(["sha256", "key_id"]).append_column("n", pa.array(np.arange(every.num_rows)))
    first = keys.group_by(["sha256", "key_id"], use_threads=False).aggregate([("n", "min")]).column("n_min")
    return every.take(first).sort_by([("sha256", "ascending"), ("key_id", "ascending")])


def _load_tables(conn: duckdb.DuckDBPyConnection, streams: pa.Table, blobs: pa.Table, ledger_format: str) -> None:
    """The tables a `ParquetLedger`'s database holds besides `events`."""
    conn.execute(_STREAMS_DDL)
    _insert_rows(conn, "streams", streams)  # one statement: a row-at-a-time insert costs a millisecond a stream
    conn.execute("CREATE TABLE ledger_meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)")
    conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", [ledger_format])
    conn.execute(blobs_ddl())
    _insert_rows(conn, "blobs", blobs)


class ParquetLedger(Ledger):
    """A read-only ledger over a Parquet export: same reads, same `verify()`, an `events` view in `conn`."""

    def __init__(
        self, path: str | os.PathLike[str], keys: KeyStore | None = None, *, run_id: str | None = None,
        events: bool = True,
    ) -> None:
        """`events=False` leaves out the `events` view (an import reads the files itself): `open_events()`
        adds it. Everything else (manifest, file schemas, streams, blobs) is read and checked either way."""
        self.path, self.read_only, self.keys = str(path), True, keys
        self._clock = lambda: datetime.now(timezone.utc).replace(tzinfo=None)
        root = Path(path)
        self.manifest = Manifest.load(root)
        self.runs = _pick_runs(self.manifest, run_id, self.path)
        self.files = _checked_files(root, self.runs)
        self._streams = {
            StreamKey(run, s, e): (no, v) for run, entry in self.runs.items() for no, s, e, v in entry.streams
        }
        self._last_seq: int = 0
        self._last_hash: str = GENESIS_HASH
        self._has_events = False
        #: The export's `streams` and `blobs` tables, read and checked here whether or not a DuckDB
        #: database is ever made of them (an import copies them into its new ledger as they are).
        self.stream_table = _stream_table(self.runs, root)
        self.blob_table = _blob_table(self.runs, root)
        self._conn: duckdb.DuckDBPyConnection | None = None
        if events:
            try:
                self.open_events()
            except BaseException:
                self.close_database()
                raise

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The in-memory database over the export, made on first use: an import needs none."""
        if self._conn is None:
            conn = duckdb.connect(":memory:")
            try:
                _load_tables(conn, self.stream_table, self.blob_table, self.manifest.ledger_format)
            except duckdb.Error as exc:
                conn.close()
                raise LedgerCorrupt(f"{self.path}: the Parquet files cannot be read: {exc}") from exc
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    @conn.setter
    def conn(self, value: duckdb.DuckDBPyConnection) -> None:
        self._conn = value

    def close_database(self) -> None:
        """Close the in-memory database, if one was made."""
        if self._conn is not None:
            self._conn.close()

    def close(self) -> None:
        try:
            self.close_database()
        finally:
            if self.keys is not None:
                self.keys.close()

    def open_events(self) -> None:
        """The `events` view over the files (a table, empty, when there are none) and the last event."""
        if self._has_events:
            return
        try:
            if self.files:
                self.conn.execute(f"CREATE VIEW events AS {self.select_sql}")
            else:
                self.conn.execute(events_ddl())
            tail = self.conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        except duckdb.Error as exc:
            raise LedgerCorrupt(f"{self.path}: the Parquet files cannot be read: {exc}") from exc
        self._has_events = True
        self._last_seq = int(tail[0]) if tail else 0
        self._last_hash = str(tail[1]) if tail else GENESIS_HASH

    @property
    def select_sql(self) -> str:
        """The SELECT behind the `events` view: the events table's columns read from the files."""
        return _select_sql(self.files)

    @property
    def complete(self) -> bool:
        """Whether the open runs are the whole of their ledger as last exported."""
        chains = {e.chain for e in self.runs.values()}
        if len(chains) != 1:
            return not self.runs
        chain = chains.pop()
        same_chain = {r for r, e in self.manifest.runs.items() if e.chain == chain}
        held = sum(e.events for e in self.runs.values())
        return same_chain == set(self.runs) and held == self.manifest.chains[chain].events

    def __enter__(self) -> ParquetLedger:
        return self

    def open_keys(self) -> KeyStore:
        if self.keys is None:
            raise LedgerNotFound(f"{self.path}: a Parquet export holds no keys; pass keys=KeyStore(...)")
        return self.keys

    def verify(self) -> VerifyReport:
        """The hash chain (whole, or what a part of a ledger allows), then the manifest's counts and anchors."""
        report = super().verify() if self.complete else self._verify_part()
        if not report.ok:
            return report
        return self._anchor_problem(report.events, self.conn) or self._file_problem(report.events) or report

    def verify_copy(self, copy: Ledger) -> VerifyReport:
        """`verify()` of this (complete) export, read from `copy`, a ledger holding exactly its rows and streams.

        An import checks the file it wrote rather than the Parquet files it
        read: the files are read once, and the copy is stored in seq order,
        the order the chain is walked in (the files are in partition order).
        Only the files' row counts are read from the export itself.
        """
        report = copy.verify()
        if not report.ok:
            return report
        return self._anchor_problem(report.events, copy.conn) or self._file_problem(report.events) or report

    def _verify_part(self) -> VerifyReport:
        """Runs that are part of a ledger: other runs' seqs are missing, so only adjacent seqs are linked."""
        walk = check_chain(self.conn, part=True)
        if walk.broken is not None:
            return walk.broken
        n, versions = walk.rows, walk.versions
        for stream, (no, version) in sorted(self._streams.items()):
            if versions.get(no, 0) != version:
                return VerifyReport(
                    False, n, None,
                    f"stream {stream} is recorded at version {version} but its events end at {versions.get(no, 0)}",
                )
        fault = self.check_blobs()
        return VerifyReport(True, n) if fault is None else VerifyReport(False, n, None, fault)

    def _anchor_problem(self, n: int, conn: duckdb.DuckDBPyConnection) -> VerifyReport | None:
        for run, entry in sorted(self.runs.items()):
            count, last, last_hash = conn.execute(
                "SELECT count(*), max(seq), arg_max(hash, seq) FROM events WHERE run_id = ?", [run]
            ).fetchone() or (0, None, None)
            if (count, last, last_hash) != (entry.events, entry.last_seq, entry.last_hash):
                return VerifyReport(
                    False, n, _first_off_anchor(last, entry.last_seq),
                    f"run {run}: {MANIFEST} lists {entry.events} events ending at seq {entry.last_seq} "
                    f"({entry.last_hash[:12]}), the files hold {count} ending at seq {last} "
                    f"({str(last_hash)[:12]})",
                )
        return None

    def _file_problem(self, n: int) -> VerifyReport | None:
        root = Path(self.path)
        for entry in self.runs.values():
            for name, rows in sorted(entry.files.items()):
                try:
                    actual = pq.read_metadata(root / name).num_rows
                except (OSError, pa.ArrowException) as exc:
                    raise LedgerCorrupt(f"{root / name}: listed in {MANIFEST} but unreadable: {exc}") from exc
                if actual != rows:
                    return VerifyReport(False, n, None, f"{root / name}: {actual} rows, {MANIFEST} lists {rows}")
        return None


def _first_off_anchor(last: int | None, anchored: int) -> int:
    """The seq a manifest anchor mismatch points at: the anchor itself, or where the files end early."""
    if last is None or last < anchored:
        return (last or 0) + 1
    return anchored + 1 if last > anchored else anchored


# -- import and open ---------------------------------------------------------------------


def import_dataset(
    from_: str | os.PathLike[str], into: str | os.PathLike[str], *, run_id: str | None = None
) -> Ledger:
    """A new DuckDB ledger file at `into` with exactly the exported rows; refuses an existing file.

    The export must hold the whole of one ledger (select it with `run_id`
    when the directory holds several) and must verify. Keys are not part of
    an export: copy the key store beside the new file to read sealed values.
    `import_into` does the same, also builds what is derived from the new
    ledger, and says what it recovered from an interrupted import.
    """
    return import_into(from_, into, run_id=run_id).ledger


@dataclass(frozen=True, slots=True)
class Imported:
    """What `import_into` did: the new ledger (open for writing) and what it found of an interrupted import."""

    ledger: Ledger
    removed: tuple[Path, ...] = ()  # partial files an interrupted import left behind, now deleted
    finished: bool = False  # the target was the complete ledger of an interrupted import: kept, derived files redone


def import_into(
    from_: str | os.PathLike[str],
    into: str | os.PathLike[str],
    *,
    run_id: str | None = None,
    derive: Callable[[Ledger], None] | None = None,
) -> Imported:
    """`import_dataset`, holding `into`'s import marker until `derive(ledger)` (the projections) has run.

    An import killed before it finished leaves its marker behind; the next
    import into the same file removes the partial files it left and, if the
    dead import had already put a complete ledger in place (the ledger is
    renamed in only once it verifies), keeps that ledger when it holds the
    same events as the export and runs `derive` again. Any other existing
    file is refused, as before.
    """
    target = Path(into)
    with ImportMarker(target) as marker:
        removed = remove_partial_imports(target)
        # An interrupted import's ledger stays marked as such until an import finishes it or it is moved away.
        marker.keep = marker.left_over and target.exists()
        finished = _place_ledger(from_, target, run_id, left_over=marker.left_over)
        marker.keep = True  # from here on a failure leaves a ledger whose derived files may be missing
        ledger = Ledger(target)
        try:
            if derive is not None:
                derive(ledger)
        except BaseException:
            ledger.close()
            raise
        marker.keep = False
    return Imported(ledger, removed, finished)


def _place_ledger(from_: str | os.PathLike[str], target: Path, run_id: str | None, *, left_over: bool) -> bool:
    """Write the new ledger at `target`; True when an interrupted import's complete copy is there already."""
    with ParquetLedger(from_, run_id=run_id, events=False) as source:
        if not source.complete:
            raise LedgerError(
                f"{from_}: runs {', '.join(sorted(source.runs))} are only part of their ledger; "
                "import needs every run of it"
            )
        if target.exists():
            if not left_over:
                raise LedgerError(f"{target}: already exists; import into a new file")
            source.open_events()
            _check_same_events(target, source, from_)
            return True
        rest = _Rest(source.stream_table, source.blob_table)

        def check(copy: Ledger) -> None:
            report = source.verify_copy(copy)
            if not report.ok:
                raise LedgerCorrupt(f"{from_}: seq {report.first_broken_seq}: {report.reason}; nothing imported")

        _write_new_ledger(target, _inserts_in_seq_order(source.files), rest, check, from_)
    return False


def _check_same_events(target: Path, source: ParquetLedger, from_: str | os.PathLike[str]) -> None:
    """An interrupted import's ledger is kept only if it ends where the export ends (same seq, same hash)."""
    with Ledger(target, read_only=True, create=False) as existing:
        mine = (existing.last_seq, existing._last_hash)
    theirs = (source._last_seq, source._last_hash)
    if mine != theirs:
        raise LedgerError(
            f"{target}: left by an interrupted import, but it ends at seq {mine[0]} ({mine[1][:12]}) and "
            f"{from_} at seq {theirs[0]} ({theirs[1][:12]}); move it away to import again"
        )


def _write_new_ledger(
    target: Path, inserts: list[str], rest: _Rest, check: Callable[[Ledger], None],
    from_: str | os.PathLike[str],
) -> None:
    """Build the file beside `target`, `check` it, and rename it in, so a failed import leaves nothing behind."""
    partial = target.with_name(f".{target.name}{_PARTIAL}{uuid.uuid4().hex}")
    try:
        with Ledger(partial) as ledger:
            ledger.conn.begin()
            try:
                for insert in inserts:
                    ledger.conn.execute(insert)
                rest.write(ledger.conn)
            except duckdb.Error as exc:  # what opening the export reported when it read the files itself
                raise LedgerCorrupt(f"{from_}: the Parquet files cannot be read: {exc}") from exc
            ledger.conn.commit()
            check(ledger)
            ledger.conn.execute("CHECKPOINT")
        os.replace(partial, target)
    finally:
        for leftover in (partial, Path(f"{partial}.wal")):
            leftover.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class _Rest:
    """What an import copies besides the events: the streams and blobs tables, as Arrow tables."""

    streams: pa.Table
    blobs: pa.Table

    def write(self, conn: duckdb.DuckDBPyConnection) -> None:
        _insert_rows(conn, "streams", self.streams)
        _insert_rows(conn, "blobs", self.blobs)


def _insert_rows(conn: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """One statement for all the rows: a row-at-a-time insert costs about a millisecond a row."""
    if rows.num_rows:
        conn.register("_rows", rows)
        try:
            conn.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
        finally:
            conn.unregister("_rows")


# -- interrupted imports -----------------------------------------------------------------

_PARTIAL = ".importing-"  # `.<name>.importing-<hex>`: the ledger an import is writing, renamed in when done


def import_marker_path(target: str | os.PathLike[str]) -> Path:
    """`.<name>.importing` beside `target`: present while an import into it runs, or after one died."""
    path = Path(target)
    return path.with_name(f".{path.name}.importing")


def partial_imports(target: str | os.PathLike[str]) -> list[Path]:
    """The files imports into `target` write before renaming (and their write-ahead logs)."""
    path = Path(target)
    if not path.parent.is_dir():
        return []
    prefix = f".{path.name}{_PARTIAL}"
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(prefix))


def remove_partial_imports(target: str | os.PathLike[str]) -> tuple[Path, ...]:
    """Delete what dead imports into `target` left; call only holding its `ImportMarker`."""
    removed = tuple(partial_imports(target))
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


class ImportMarker:
    """The marker of an import into `target`, held with an exclusive lock while the import runs.

    The lock dies with its process (a `kill -9` included), so a marker that
    can be locked was left by an import that did not finish: `left_over`
    says so. Every import holds it from before its first file until after
    its last, so while it is held no partial file of another import can be
    in progress. Leaving the `with` removes the marker, unless `keep` is
    set (the import died in all but name: its ledger is in place, what is
    derived from it may not be).
    """

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.target = Path(target)
        self.path = import_marker_path(target)
        self.left_over = False
        self.keep = False
        self._fd: int | None = None

    def __enter__(self) -> ImportMarker:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:
                try:
                    fd = os.open(self.path, os.O_RDWR)
                except FileNotFoundError:
                    continue  # its import just finished and removed it
                created = False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                os.close(fd)
                raise LedgerLocked(
                    f"{self.target}: another import into it is running ({holder or 'starting'}); "
                    "wait for it to finish"
                ) from None
            if self._same_file(fd):
                break
            os.close(fd)  # we locked a marker its import removed as we opened it: take the new one
        self._fd, self.left_over = fd, not created
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} since {datetime.now(timezone.utc).isoformat(timespec='seconds')}".encode())
        return self

    def _same_file(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def __exit__(self, *exc: object) -> None:
        if self._fd is None:
            return
        if not self.keep:
            self.path.unlink(missing_ok=True)  # before the lock goes, so no one locks a marker about to vanish
        os.close(self._fd)
        self._fd = None


def open_ledger(
    path: str | os.PathLike[str], *, read_only: bool = True, keys: str | os.PathLike[str] | None = None
) -> Ledger:
    """A `Ledger` for a DuckDB file, a `ParquetLedger` for an export directory.

    `keys` is the key store's path. Without it a DuckDB file uses the store
    beside it (if any); an export directory gets none, because nothing ties
    a directory to the run folder it may sit in.
    """
    where = Path(path)
    store = _key_store(keys, read_only)
    try:
        if where.is_dir():
            if not (where / MANIFEST).is_file():
                raise LedgerNotFound(f"{where}: a directory without {MANIFEST}, not a Parquet export of a ledger")
            if not read_only:
                raise LedgerLocked(f"{where}: a Parquet export is read-only; import_dataset() it to append")
            return ParquetLedger(where, keys=store)
        return Ledger(where, read_only=read_only, create=False, keys=store)
    except BaseException:
        if store is not None:
            store.close()
        raise


def _key_store(keys: str | os.PathLike[str] | None, read_only: bool) -> KeyStore | None:
    if keys is None:
        return None
    if not Path(keys).is_file():
        # An empty store would make every sealed value read as erased.
        raise LedgerNotFound(f"{keys}: no key store here")
    return KeyStore(keys, read_only=read_only)
