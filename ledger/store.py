"""The append-only store: one DuckDB file (or memory), one writer.

Design follows the measured facts in SPEC §8: all events of one turn go in
one transaction as one statement (`ledger.batch`); there is no per-row primary key (an
idempotent re-append is recognised from the stream's version high-water mark
and the event ids stored at those versions); every stream has an integer
`stream_no` beside its string ids so row groups prune; the hash chain is
computed once, at write time, over the canonical bytes.

The API has `append` and `read`; it has no update and no delete.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import duckdb

from ledgermem.ledger import batch
from ledgermem.ledger.chain import VerifyReport as VerifyReport  # re-exported: where callers have always found it
from ledgermem.ledger.chain import check_chain
from ledgermem.ledger.errors import ConcurrencyConflict, LedgerCorrupt, LedgerError, LedgerLocked, LedgerNotFound
from ledgermem.ledger.events import EVENT_TYPES, TYPED_COLUMNS, Event
from ledgermem.ledger.blocks import BLOCKS_FIELD, HAS_BLOCKS_SQL, is_sha256, referenced_blobs
from ledgermem.ledger.keys import SEALED, FieldKeys, KeyStore, SealWith, key_path
from ledgermem.ledger.schema import (
    EVENT_COLUMNS,
    GENESIS_HASH,
    blobs_ddl,
    canonical_bytes,
    chain_hash,
    decode,
    encode,
    event_id_for,
    events_ddl,
    sealable_columns,
)

FORMAT_VERSION = "1"
_EVENT_TYPES = tuple((name, t) for name, t, _ in EVENT_COLUMNS)
_STREAM_TYPES = (("stream_no", "INTEGER"), ("run_id", "VARCHAR"), ("system", "VARCHAR"), ("episode_id", "VARCHAR"),
                 ("version", "BIGINT"))


@dataclass(frozen=True, slots=True, order=True)
class StreamKey:
    """Which stream an event belongs to: the ledger's one type of stream id.

    To the ledger the three parts are an opaque identity, compared whole;
    `run_id` also partitions (`read(run_id=...)`, a Parquet export's
    folders). What a `system` or an `episode_id` is belongs to the packages
    that write streams: a run's own stream has neither, a memory's episode
    has both.
    """

    run_id: str
    system: str = ""
    episode_id: str = ""

    #: The columns that hold a stream's identity, in this order, wherever a table has one per row.
    COLUMNS: ClassVar[tuple[str, str, str]] = ("run_id", "system", "episode_id")

    def __str__(self) -> str:
        return "/".join(p for p in (self.run_id, self.system, self.episode_id) if p)

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.run_id, self.system, self.episode_id)


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """The envelope: an event as the ledger holds it, with its position, time of recording and hash.

    The ledger fills in everything but `event`, whose class a package
    registered (`ledger.events`); the type name and schema version stored
    with it are the class's.
    """

    seq: int
    event_id: str
    stream: StreamKey
    stream_version: int
    recorded_at: datetime
    event: Event
    prev_hash: str
    hash: str

    @property
    def event_type(self) -> str:
        return type(self.event).event_type

    @property
    def schema_version(self) -> int:
        return type(self.event).schema_version


@dataclass(frozen=True, slots=True)
class BlobRead:
    """A block's bytes as the ledger can give them: `state` is ok, erased, sealed (no key store) or missing."""

    sha256: str
    state: str
    data: bytes | None = None


_ENVELOPE = re.compile(r"enc1:([^\"\s]+):[A-Za-z0-9+/=]+")
BeforeCommit = Callable[[duckdb.DuckDBPyConnection, tuple[RecordedEvent, ...]], None]


def _seal_choice(event: Event, choice: SealWith) -> SealWith:
    """The key an event is sealed under: none for a type without personal fields, whatever was named."""
    return choice if type(event).PERSONAL else None


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive_utc(ts: datetime) -> datetime:
    """The TIMESTAMP column holds naive UTC; hash exactly what it will give back."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def connect_read_only(path: str, alias: str) -> duckdb.DuckDBPyConnection:
    """A database of its own that reads the file `path` (attached read-only as `alias`) under its own names.

    `duckdb.connect(path)` gives every connection to one file in a process
    the same database: a second reader would find the first one's
    attachments, functions and sealed settings (`memory.sandbox.lock_down`),
    and a Python function registered by a reader that has closed. Here each
    reader has an in-memory database of its own, with a view per table of
    the file under the table's name, so its cursors see the same names.
    DuckDB lets many databases attach one file read-only.
    """
    conn = duckdb.connect(":memory:")
    try:
        quoted = path.replace("'", "''")  # ATTACH takes no parameters
        conn.execute(f"ATTACH '{quoted}' AS {alias} (READ_ONLY)")
        names = conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' "
                             "UNION SELECT view_name FROM duckdb_views() WHERE database_name = ? "
                             "AND schema_name = 'main' AND NOT internal", [alias, alias]).fetchall()
        for (name,) in names:
            ident = '"' + name.replace('"', '""') + '"'
            conn.execute(f"CREATE VIEW main.{ident} AS SELECT * FROM {alias}.main.{ident}")
    except BaseException:
        conn.close()
        raise
    return conn


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        if read_only and path != ":memory:":
            return connect_read_only(path, "ledger")
        return duckdb.connect(path, read_only=read_only)
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise LedgerLocked(
                f"{path}: the ledger is open for writing in another process "
                "(DuckDB allows one writer per file); wait for it to finish or read its Parquet export"
            ) from exc
        raise LedgerCorrupt(f"{path}: cannot be opened as a DuckDB ledger: {text.splitlines()[0]}") from exc
    except duckdb.Error as exc:
        raise LedgerCorrupt(f"{path}: cannot be opened as a DuckDB ledger: {str(exc).splitlines()[0]}") from exc


def _finish_results(conn: duckdb.DuckDBPyConnection) -> None:
    finish = getattr(conn, "complete", None)  # DuckDB >= 2 refuses new work while a result is half-fetched
    if finish is not None:
        finish()


@dataclass(frozen=True, slots=True)
class _GroupStart:
    """Where the ledger stood when a group's transaction began: what a rollback restores."""

    last_seq: int
    last_hash: str
    streams: dict[StreamKey, tuple[int, int]]
    synced: dict[int, int]
    last_shredded: int | None


class Ledger:
    """An append-only event ledger in DuckDB. Open one writer per file."""

    # The seq of the last `key_shredded` event: read once, then kept by `append` (this is the only writer).
    _last_shredded: int | None = None
    # Group commit (`group_commits`): the open transaction's starting point, None when none is open.
    _group: _GroupStart | None = None
    group_commits: bool = False
    groups_aborted: int = 0
    groups_committed: int = 0
    after_abort: Callable[[], object] | None = None  # told when a group is rolled back (what it folded is gone)

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        read_only: bool = False,
        create: bool = True,
        clock: Callable[[], datetime] = _utcnow,
        keys: KeyStore | None = None,
    ) -> None:
        self.path = str(path)
        self.read_only = read_only
        self._clock = clock
        if keys is None and self.path != ":memory:" and Path(key_path(self.path)).exists():
            keys = KeyStore(key_path(self.path), read_only=read_only)
        self.keys = keys
        if self.path != ":memory:" and not Path(self.path).exists():
            if read_only or not create:
                raise LedgerNotFound(f"{self.path}: no ledger file here")
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = _connect(self.path, read_only)
        # Rows an open group holds back (table -> columns and rows): inserted in one statement per table when
        # the group commits or anything reads the connection (`conn`), so a read still sees every append.
        self._deferred: dict[str, tuple[batch.Columns, list[Any]]] = {}
        if not read_only and not self._tables():  # only an empty database becomes a ledger
            self._create_tables()
        self._check_is_ledger()
        if not read_only:  # a ledger written before blocks existed gets its (empty) blob table
            self.conn.execute(blobs_ddl())
        self._streams: dict[StreamKey, tuple[int, int]] = {}
        # What the `streams` table holds, by stream_no: its versions are written by `sync_streams` (on close,
        # before an export), not by every append, so after a crash they may lag behind the events.
        self._synced: dict[int, int] = {}
        for no, run, system, episode, version in self.conn.execute(
            "SELECT stream_no, run_id, system, episode_id, version FROM streams"
        ).fetchall():
            self._streams[StreamKey(run, system, episode)] = (no, version)
            self._synced[no] = version
        self._catch_up_streams()
        tail = self.conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        self._last_seq: int = int(tail[0]) if tail else 0
        self._last_hash: str = str(tail[1]) if tail else GENESIS_HASH
        if not read_only:
            self.sync_streams()  # a table left behind by a crash is brought up to its events at once

    # -- lifecycle -------------------------------------------------------------

    def _create_tables(self) -> None:
        self.conn.execute(events_ddl())
        self.conn.execute(blobs_ddl())
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS streams (stream_no INTEGER NOT NULL, run_id VARCHAR NOT NULL, "
            "system VARCHAR NOT NULL, episode_id VARCHAR NOT NULL, version BIGINT NOT NULL)"
        )
        self.conn.execute("CREATE TABLE IF NOT EXISTS ledger_meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)")
        if not self.conn.execute("SELECT 1 FROM ledger_meta WHERE key = 'format'").fetchone():
            self.conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", [FORMAT_VERSION])

    def _tables(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}

    def _check_is_ledger(self) -> None:
        missing = {"events", "streams", "ledger_meta"} - self._tables()
        if missing:
            self.conn.close()
            raise LedgerCorrupt(f"{self.path}: not a ledgermem ledger (missing tables: {', '.join(sorted(missing))})")

    def _catch_up_streams(self) -> None:
        """Each stream's version from its events where the `streams` table is behind them: the events are what
        a stream holds, the table a copy of their high-water marks written now and then (`sync_streams`). A
        table ahead of the events keeps its version, so `verify` reports the events that are missing."""
        ends = self.conn.execute("SELECT stream_no, max(stream_version) FROM events GROUP BY stream_no").fetchall()
        ahead = {int(no): int(end) for no, end in ends}
        for stream, (no, version) in self._streams.items():
            if ahead.get(no, 0) > version:
                self._streams[stream] = (no, ahead[no])

    def sync_streams(self) -> None:
        """Write every stream's version into the `streams` table, in one transaction (nothing when it is current).

        `append` keeps the versions in the process and writes a stream's row
        only when the stream is new, so a turn's transaction is its events'
        insert alone; the table is brought up to date here, on `close` and
        before an export. An open group is committed first.
        """
        if self.read_only:
            return
        stale = sorted((no, v) for no, v in self._streams.values() if self._synced.get(no) != v)
        if not stale:
            return
        if self._group is not None:
            self.commit_group()
        _finish_results(self.conn)
        self.conn.begin()
        try:
            self.conn.execute(
                "UPDATE streams SET version = s.version FROM (SELECT unnest(?::INTEGER[]) AS stream_no, "
                "unnest(?::BIGINT[]) AS version) AS s WHERE streams.stream_no = s.stream_no",
                [[no for no, _ in stale], [v for _, v in stale]],
            )
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise
        self._synced.update(stale)

    def close(self) -> None:
        try:
            if self._group is not None:
                self.commit_group()
            self.sync_streams()
        finally:
            self.conn.close()
            if self.keys is not None:
                self.keys.close()

    def open_keys(self) -> KeyStore:
        """The key store beside this ledger, created if there is none yet."""
        if self.keys is None:
            self.keys = KeyStore(key_path(self.path), read_only=self.read_only)
        return self.keys

    def unseal(self, value: str) -> str:
        """A sealed value's plaintext; `[erased]` if its key was shredded, `[sealed]` without a key store."""
        return self.keys.open(value) if self.keys is not None else SEALED

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def stream_version(self, stream: StreamKey) -> int:
        return self._streams.get(stream, (0, 0))[1]

    def streams(self, run_id: str | None = None) -> list[tuple[StreamKey, int]]:
        keys = sorted(k for k in self._streams if run_id is None or k.run_id == run_id)
        return [(k, self._streams[k][1]) for k in keys]

    def stream_rows(self, run_id: str | None = None) -> list[tuple[int, StreamKey, int]]:
        """(stream_no, stream, version) of every stream (or one run's), by stream_no: the `streams` table's rows
        as they stand after this writer's appends, whether or not `sync_streams` has written them yet."""
        return sorted((no, k, v) for k, (no, v) in self._streams.items() if run_id is None or k.run_id == run_id)

    def append(
        self,
        stream: StreamKey,
        events: Sequence[Event],
        *,
        expected_version: int,
        before_commit: BeforeCommit | None = None,
        keys: Sequence[SealWith] | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> tuple[RecordedEvent, ...]:
        """Append `events` to `stream` in one transaction.

        `blobs` holds the bytes (by sha256) of the blocks the events
        reference; they are stored in the `blobs` table in the same
        transaction, sealed under the key that seals the event's blocks.

        Re-appending exactly the events already stored after
        `expected_version` is a no-op that returns them: a writer that
        crashed before seeing its commit acknowledged can simply retry
        (for sealed events the ciphertext differs on every attempt, so a
        retry of those is reported as a conflict instead).

        `keys` names, event by event and in order, the key that seals each
        event's personal fields: a key id, a key per field (`FieldKeys`),
        or None (stored in clear); without `keys` every event is stored in
        clear. Keys are made durable before the events are written.
        """
        if self.read_only:
            raise LedgerLocked(f"{self.path}: opened read-only; cannot append")
        if not events:
            return ()
        if keys is not None and len(keys) != len(events):
            raise LedgerError(f"{self.path}: append to {stream} names {len(keys)} key(s) for {len(events)} event(s); "
                              "give one per event (None: stored in clear)")
        plan = [_seal_choice(e, k) for e, k in zip(events, keys)] if keys is not None else [None] * len(events)
        stream_no, current = self._streams.get(stream, (len(self._streams) + 1, 0))
        self._ensure_keys(plan)
        encoded = [self._encode(e, choice) for e, choice in zip(events, plan)]
        ids = [event_id_for(stream.as_tuple(), expected_version + i + 1, enc) for i, enc in enumerate(encoded)]
        if expected_version != current:
            return self._retry_or_conflict(stream, stream_no, expected_version, current, ids)
        recorded_at = _naive_utc(self._clock())
        rows, recorded = self._rows(stream, stream_no, expected_version, encoded, ids, events, recorded_at)
        blob_rows = self._blob_rows(events, plan, blobs or {})
        grouped = self.group_commits
        if grouped and self._group is None:
            self._group = _GroupStart(self._last_seq, self._last_hash, dict(self._streams), dict(self._synced),
                                      self._last_shredded)
            _finish_results(self._db)
            self._db.begin()
        elif not grouped:
            self.conn.begin()
        else:
            _finish_results(self._db)  # a read left half-fetched inside the open group
        try:
            if blob_rows:
                self.conn.executemany("INSERT INTO blobs VALUES (?, ?, ?, ?)", blob_rows)
            self.insert_rows("events", _EVENT_TYPES, rows)
            if current == 0:  # a new stream's row; its version is written again only by `sync_streams`
                self.insert_rows("streams", _STREAM_TYPES, [[stream_no, *stream.as_tuple(), len(events)]])
            if before_commit is not None:
                before_commit(self._db if grouped else self.conn, recorded)
            if not grouped:
                self.conn.commit()
        except BaseException:
            if grouped:
                if self._group is not None:
                    self._abort_group()
            else:
                self.conn.rollback()
            raise
        self._streams[stream] = (stream_no, expected_version + len(events))
        if current == 0:
            self._synced[stream_no] = len(events)
        self._last_seq, self._last_hash = recorded[-1].seq, recorded[-1].hash
        shredded = [r.seq for r in recorded if type(r.event).SHREDS_KEYS]
        if shredded and self._last_shredded is not None:
            self._last_shredded = shredded[-1]
        return recorded

    # -- the connection and the rows a group holds back ------------------------------------------

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The ledger's DuckDB connection, every row of an open group in its tables (they are written first)."""
        if self._deferred:
            self._flush_deferred()
        return self._db

    @conn.setter
    def conn(self, value: duckdb.DuckDBPyConnection) -> None:
        self._deferred.clear()
        self._db = value

    def insert_rows(self, table: str, columns: batch.Columns,
                    rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]]) -> None:
        """Insert rows (every column of `table`, in order) in the current write.

        Inside a group (`group_commits`) they are held back and inserted
        with the group's other rows of `table` in one statement, when the
        group commits or anything reads `conn` first: DuckDB's cost of a
        statement, not of a row, is what a turn's few rows pay. A statement
        that fails there rolls the whole group back, as a failed append does.
        Outside a group they are inserted now.
        """
        if not rows:
            return
        if self._group is None:
            batch.insert(self._db, table, columns, rows)
            return
        held = self._deferred.get(table)
        if held is None:
            held = self._deferred[table] = (columns, [])
        elif held[0] != columns:
            raise LedgerError(f"{self.path}: rows for {table} held back with other columns")
        held[1].extend(rows)

    def _flush_deferred(self) -> None:
        held, self._deferred = self._deferred, {}
        if not held:
            return
        try:
            _finish_results(self._db)
            for table, (columns, rows) in held.items():
                batch.insert(self._db, table, columns, rows)
        except BaseException:
            if self._group is not None:
                self._abort_group()
            raise

    # -- group commit ------------------------------------------------------------------

    @property
    def durable_seq(self) -> int:
        """The last seq a crash would keep: `last_seq`, less what an open group has not committed yet."""
        return self._group.last_seq if self._group is not None else self._last_seq

    def commit_group(self) -> int:
        """Make every append of the open group durable in one commit; returns `durable_seq`.

        With `group_commits` set (a server that owns the ledger), `append`
        writes into one open transaction that this commits: many turns, one
        durable commit. A failed commit rolls the whole group back (the
        appends since the last commit are gone, `groups_aborted` counts it)
        and raises.
        """
        if self._group is None:
            return self._last_seq
        try:
            _finish_results(self._db)
            self._flush_deferred()
            self._db.commit()
        except BaseException:
            if self._group is not None:  # (a failed write of the held-back rows has rolled it back already)
                self._abort_group()
            raise
        self._group = None
        self.groups_committed += 1
        return self._last_seq

    def _abort_group(self) -> None:
        start, self._group = self._group, None
        assert start is not None
        self._deferred.clear()
        try:
            self._db.rollback()
        finally:
            self._last_seq, self._last_hash = start.last_seq, start.last_hash
            self._streams, self._synced, self._last_shredded = start.streams, start.synced, start.last_shredded
            self.groups_aborted += 1
            if self.after_abort is not None:
                self.after_abort()

    def last_shredded_seq(self) -> int:
        """The seq of the ledger's last event that destroyed keys (`SHREDS_KEYS`; 0: none); queried once, then kept
        in step by `append`. Only the registered event types are known: with none that shreds, it is 0 (not kept)."""
        if self._last_shredded is None:
            types = sorted(name for name, cls in EVENT_TYPES.items() if cls.SHREDS_KEYS)
            if not types:
                return 0
            marks = ", ".join("?" for _ in types)
            row = self.conn.execute(f"SELECT max(seq) FROM events WHERE event_type IN ({marks})", types).fetchone()
            self._last_shredded = int(row[0]) if row and row[0] is not None else 0
        return self._last_shredded

    def _ensure_keys(self, plan: Sequence[SealWith]) -> None:
        """Make every key the events name in one key-file transaction: a turn that opens two series (its raw
        key and its turn key) makes them, and the ids made ahead of both, with one commit."""
        wanted = [k for c in plan if c is not None for k in (FieldKeys(c) if isinstance(c, str) else c).key_ids()]
        if wanted and self.keys is not None:
            self.keys.ensure(wanted)

    def _encode(self, event: Event, choice: SealWith) -> Any:
        if choice is None:
            return encode(event)
        if self.keys is None:
            raise LedgerError(f"{self.path}: sealing {event.event_type} needs a key store; none is open")
        plan = FieldKeys(choice) if isinstance(choice, str) else choice
        self.keys.ensure(plan.key_ids())
        keys = self.keys

        def sealer(key_id: str | None) -> Callable[[str], str]:
            chosen = key_id if key_id is not None else plan.default
            return lambda value: keys.seal(chosen, value)

        own = {name: sealer(c) if isinstance(c, str) else tuple(sealer(k) for k in c)
               for name, c in plan.fields.items()}
        return encode(event, seal=sealer(plan.default), seal_fields=own)

    @staticmethod
    def _blob_key(choice: SealWith) -> str | None:
        """The key that seals an event's blocks (as `_encode` chooses it), None when stored in clear."""
        if choice is None or isinstance(choice, str):
            return choice
        own = choice.fields.get(BLOCKS_FIELD)
        return own if isinstance(own, str) else choice.default

    def _blob_rows(
        self, events: Sequence[Event], plan: Sequence[SealWith], blobs: Mapping[str, bytes],
    ) -> list[list[Any]]:
        rows: list[list[Any]] = []
        planned: set[tuple[str, str | None]] = set()
        for event, choice in zip(events, plan):
            refs = getattr(event, BLOCKS_FIELD, ())
            key_id = self._blob_key(choice) if refs else None
            for ref in refs:
                sha = ref.get("sha256")
                if sha is None or (sha, key_id) in planned or self._has_blob(sha, key_id):
                    continue
                data = blobs.get(sha)
                if data is None:
                    raise LedgerError(f"{self.path}: {event.event_type} at turn {event.turn} references block "
                                      f"{sha} but its bytes were not given")
                if hashlib.sha256(data).hexdigest() != sha or len(data) != ref.get("size"):
                    raise LedgerError(f"{self.path}: the bytes given for block {sha} do not have that hash and size")
                stored = data if key_id is None else self._require_keys().seal_bytes(key_id, data, sha)
                rows.append([sha, key_id, len(data), stored])
                planned.add((sha, key_id))
        return rows

    def _require_keys(self) -> KeyStore:
        if self.keys is None:
            raise LedgerError(f"{self.path}: sealing a block needs a key store; none is open")
        return self.keys

    def _has_blob(self, sha: str, key_id: str | None) -> bool:
        sql = "SELECT 1 FROM blobs WHERE sha256 = ? AND key_id IS NOT DISTINCT FROM ? LIMIT 1"
        return self.conn.execute(sql, [sha, key_id]).fetchone() is not None

    def _rows(
        self,
        stream: StreamKey,
        stream_no: int,
        base_version: int,
        encoded: list[Any],
        ids: list[str],
        events: Sequence[Event],
        recorded_at: datetime,
    ) -> tuple[list[dict[str, Any]], tuple[RecordedEvent, ...]]:
        rows: list[dict[str, Any]] = []
        recorded: list[RecordedEvent] = []
        seq, prev = self._last_seq, self._last_hash
        for enc, eid, event in zip(encoded, ids, events):
            seq += 1
            row: dict[str, Any] = {
                "seq": seq,
                "event_id": eid,
                "stream_no": stream_no,
                "run_id": stream.run_id,
                "system": stream.system,
                "episode_id": stream.episode_id,
                "stream_version": base_version + len(rows) + 1,
                "event_type": enc.event_type,
                "schema_version": enc.schema_version,
                "recorded_at": recorded_at,
                **enc.columns,
                "payload": enc.payload,
                "prev_hash": prev,
            }
            row["hash"] = chain_hash(prev, canonical_bytes(row))
            rows.append(row)
            recorded.append(
                RecordedEvent(seq, eid, stream, row["stream_version"], recorded_at, event, prev, row["hash"])
            )
            prev = row["hash"]
        return rows, tuple(recorded)

    def _retry_or_conflict(
        self, stream: StreamKey, stream_no: int, expected: int, current: int, ids: list[str]
    ) -> tuple[RecordedEvent, ...]:
        if expected < current:
            stored = list(
                self.read(stream=stream, from_version=expected + 1, to_version=expected + len(ids))
            )
            if [r.event_id for r in stored] == ids:
                return tuple(stored)
            detail = "different events are stored at those versions"
        else:
            detail = "the expected version is ahead of the stream"
        raise ConcurrencyConflict(str(stream), expected, current, detail)

    # -- reading -------------------------------------------------------------------

    def read(
        self,
        *,
        stream: StreamKey | None = None,
        run_id: str | None = None,
        from_seq: int = 1,
        to_seq: int | None = None,
        from_version: int | None = None,
        to_version: int | None = None,
        event_types: Sequence[str] | None = None,
    ) -> Iterator[RecordedEvent]:
        """Events in seq order, filtered by stream, run, seq or version range, type."""
        where: list[str] = ["seq >= ?"]
        params: list[Any] = [from_seq]
        if to_seq is not None:
            where.append("seq <= ?")
            params.append(to_seq)
        if stream is not None:
            if stream not in self._streams:
                return
            where.append("stream_no = ?")
            params.append(self._streams[stream][0])
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if from_version is not None:
            where.append("stream_version >= ?")
            params.append(from_version)
        if to_version is not None:
            where.append("stream_version <= ?")
            params.append(to_version)
        if event_types:
            where.append("list_contains(?, event_type)")
            params.append(list(event_types))
        sql = f"SELECT * FROM events WHERE {' AND '.join(where)} ORDER BY seq"
        for row in _iter_rows(self.conn.execute(sql, params)):
            yield _recorded(row, self.unseal)

    def sealed_keys(self, stream: StreamKey) -> dict[int, set[str]]:
        """seq -> the key ids its sealed values name (read from the ciphertext, no key needed)."""
        return {seq: {key_id for key_id, _ in found} for seq, found in self.sealed_values(stream).items()}

    def sealed_values(self, stream: StreamKey) -> dict[int, list[tuple[str, str]]]:
        """seq -> (key id, envelope) of each sealed value it holds: one event may seal its fields under several keys."""
        if stream not in self._streams:
            return {}
        out: dict[int, list[tuple[str, str]]] = {}
        sql = f"SELECT seq, {', '.join(sealable_columns())} FROM events WHERE stream_no = ? ORDER BY seq"
        for seq, *cells in self.conn.execute(sql, [self._streams[stream][0]]).fetchall():
            found = [(m.group(1), m.group(0)) for c in cells if c for m in _ENVELOPE.finditer(c)]
            if found:
                out[seq] = found
        return out

    # -- blobs ----------------------------------------------------------------------

    def get_blob(self, sha256: str, key_ids: Collection[str | None] | None = None) -> BlobRead:
        """A block's bytes by content hash, opened with the key store; `key_ids` limits the rows tried.

        The bytes come back only when they hash to `sha256`. A row whose key
        was shredded is `erased`; a sealed row read without a key store is
        `sealed`; no row at all is `missing`.
        """
        if not is_sha256(sha256):
            raise ValueError(f"block id {sha256!r} is not a sha256 (64 lower-case hex digits)")
        if "blobs" not in self._tables():
            return BlobRead(sha256, "missing")
        rows = self.conn.execute("SELECT key_id, data FROM blobs WHERE sha256 = ? ORDER BY key_id NULLS FIRST",
                                 [sha256]).fetchall()
        states = []
        for key_id, data in rows:
            if key_ids is not None and key_id not in key_ids:
                continue
            if key_id is None:
                plain: bytes | None = bytes(data)
            elif self.keys is None:
                states.append("sealed")
                continue
            else:
                plain = self.keys.open_bytes(key_id, bytes(data), sha256)
            if plain is None:
                states.append("erased")
            elif hashlib.sha256(plain).hexdigest() == sha256:
                return BlobRead(sha256, "ok", plain)
        return BlobRead(sha256, "sealed" if "sealed" in states else "erased" if states else "missing")

    def check_blobs(self) -> str | None:
        """The first fault of the blob table, or None: every readable blob hashes to its id, and every
        block an event references with a hash has a row. A row whose key was shredded is not a fault."""
        if "blobs" not in self._tables():
            return None
        for sha, key_id, size, data in self.conn.execute(
            "SELECT sha256, key_id, size, data FROM blobs ORDER BY sha256, key_id NULLS FIRST"
        ).fetchall():
            where = f"blobs row {sha}" + (f" (key {key_id})" if key_id else "")
            if key_id is None:
                plain: bytes | None = bytes(data)
            elif self.keys is None:
                continue
            else:
                try:
                    plain = self.keys.open_bytes(key_id, bytes(data), sha)
                except ValueError:
                    return f"{where}: its sealed bytes do not authenticate (altered)"
            if plain is not None and (hashlib.sha256(plain).hexdigest() != sha or len(plain) != size):
                return f"{where}: its bytes do not hash to its sha256 (altered)"
        stored = {r[0] for r in self.conn.execute("SELECT DISTINCT sha256 FROM blobs").fetchall()}
        for seq, payload in self.conn.execute(
            f"SELECT seq, payload FROM events WHERE {HAS_BLOCKS_SQL} ORDER BY seq"
        ).fetchall():
            for sha in sorted(referenced_blobs(payload) - stored):
                return f"seq {seq}: block {sha} has no row in the blobs table"
        return None

    def verify(self) -> VerifyReport:
        """Recompute the hash chain and check seq and stream-version contiguity.

        The report names the first row, in seq order, that breaks the chain
        (see `ledger.chain`), or a stream whose declared version its events
        do not reach: declared by the `streams` table, or by this writer's
        appends since the table was last written (`sync_streams`).
        """
        walk = check_chain(self.conn)
        if walk.broken is not None:
            return walk.broken
        n, expected_seq, versions = walk.rows, walk.last_seq + 1, walk.versions
        declared = dict(self.conn.execute("SELECT stream_no, version FROM streams").fetchall())
        for no, version in self._streams.values():
            declared[no] = max(version, declared.get(no, 0))
        for stream_no, version in sorted(declared.items()):
            if versions.get(stream_no, 0) != version:
                return VerifyReport(
                    False, n, expected_seq,
                    f"stream {stream_no} is recorded at version {version} but its events end at "
                    f"{versions.get(stream_no, 0)}: events after seq {expected_seq - 1} are missing",
                )
        fault = self.check_blobs()
        if fault is not None:
            return VerifyReport(False, n, None, fault)
        return VerifyReport(True, n)


def _iter_rows(result: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    names = [d[0] for d in result.description or ()]
    while True:
        chunk = result.fetchmany(2048)
        if not chunk:
            return
        for values in chunk:
            yield dict(zip(names, values))


def _recorded(row: dict[str, Any], unseal: Callable[[str], str]) -> RecordedEvent:
    columns = {c: row.get(c) for c in TYPED_COLUMNS}
    event = decode(row["seq"], row["event_type"], row["schema_version"], columns, row["payload"], unseal)
    stream = StreamKey(row["run_id"], row["system"], row["episode_id"])
    return RecordedEvent(
        row["seq"], row["event_id"], stream, row["stream_version"], row["recorded_at"], event,
        row["prev_hash"], row["hash"],
    )
