"""Materialised SCD-2 tables in their own DuckDB file, kept in step with the ledger.

The projections live beside the ledger, not in it: they hold decrypted
values, and after an erasure the only way to get plaintext out of a DuckDB
file is to write a new file and delete the old one (SPEC §8). DuckDB cannot
write two database files in one transaction, so the ledger is committed
first and the projections after it (see below); each stream's high-water mark
(`projection_state.last_seq`) is written with its rows, and a projection
that is behind its ledger after a crash is caught up from the events on
open for writing. A read-only open checks the marks instead
(`require_current`): a file that is not a whole fold of its ledger (a fill
or a run interrupted, a fill still marked as started, an erasure it
predates) is refused, never served. `rebuild` folds a ledger from scratch
(replay, checks, erasure); `rebuild_file` writes a new file and renames it
in, so a fill killed half-way leaves the old file or none, never half.

The ledger is the truth and the marks make catching up exact, so a turn
does not commit to the projections at all: its versions wait in the
process (`write`) and go to the file in batches (`flush`), one transaction
for every stream pending, when `flush_rows` rows wait, on `close`, and
before anything reads the file (`conn` flushes first). A crash loses only
pending rows, which the marks show as behind and the next writer refolds.
A turn thus costs one durable commit, the ledger's.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import duckdb

from ledgermem.ledger import batch
from ledgermem.ledger.errors import LedgerCorrupt, LedgerLocked
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey, connect_read_only
from ledgermem.projections.errors import ProjectionsBehind
from ledgermem.projections.scd2 import TABLES, Delta, Projector, TableSpec, column_names, columns, order_keys

History = dict[str, list[dict[str, Any]]]
_ERASURE = "rebuilt_after_seq"  # projection_meta: the last `key_shredded` seq this file was rebuilt after
_FILLING = "filling_to_seq"  # projection_meta: set while `_fill` runs; a file that still has it is partial
_THE_STREAM = " AND ".join(f"{column} = ?" for column in StreamKey.COLUMNS)  # rows of one stream
FLUSH_ROWS = 2048  # versions a store keeps in the process before it writes them (a few hundred turns)
# Rows per row group of a projection file written whole (`rebuild_file`; DuckDB's default is 122,880). A rebuilt
# file holds each episode's rows together, and a point query of one episode (`temporal.as_of`) reads every row of
# each row group its key does not rule out: smaller groups read fewer rows. DuckDB takes the size from the attach,
# not from the file: a later writer's checkpoint merges the groups of the tables it changes back to its own size.
ROW_GROUP_SIZE = 16_384
_CLOSES = (("version_id", "VARCHAR"), ("valid_to_seq", "BIGINT"), ("valid_to_turn", "BIGINT"))
_MARKS = (("run_id", "VARCHAR"), ("system", "VARCHAR"), ("episode_id", "VARCHAR"), ("last_seq", "BIGINT"))


@dataclass
class _Pending:
    """One stream's versions not yet in the file: rows opened (closed already when that came later), closes of
    rows the file holds, and the seq they bring the stream to."""

    base: int  # the stream's mark in the file when these versions began to wait: they follow from it
    last_seq: int = 0
    opened: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # table -> version_id -> row
    closed: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)  # table -> version_id -> (seq, turn)
    rows: int = 0

    def add(self, delta: Delta, last_seq: int) -> int:
        """Take a delta in; returns how many rows it added."""
        before = self.rows
        for name, rows in delta.opened.items():
            opened = self.opened.setdefault(name, {})
            for row in rows:
                opened[row["version_id"]] = dict(row)  # a copy: the projector keeps its own rows
                self.rows += 1
        for name, closes in delta.closed.items():
            opened = self.opened.get(name, {})
            for vid, seq, turn in closes:
                mine = opened.get(vid)
                if mine is not None:
                    mine["valid_to_seq"], mine["valid_to_turn"] = seq, turn
                else:
                    self.closed.setdefault(name, {})[vid] = (seq, turn)
                    self.rows += 1
        self.last_seq = last_seq
        return self.rows - before


def table_ddl(spec: TableSpec) -> str:
    cols = ", ".join(f"{name} {t}" for name, t in columns(spec))
    return f"CREATE TABLE IF NOT EXISTS {spec.name} ({cols})"


def attach_options() -> str:
    """The options a projection file written whole is attached with (`ATTACH 'f' AS x (...)`)."""
    return f"ROW_GROUP_SIZE {ROW_GROUP_SIZE}"


def _connect_fresh(path: str) -> duckdb.DuckDBPyConnection:
    """A connection of its own that writes the file `path` with `attach_options` (the file is its default
    database: its tables resolve by name on this connection, though not on its cursors)."""
    conn = duckdb.connect(":memory:")
    try:
        quoted = path.replace("'", "''")  # ATTACH takes no parameters
        conn.execute(f"ATTACH '{quoted}' AS projection_file ({attach_options()})")
        conn.execute("USE projection_file")
    except BaseException:
        conn.close()
        raise
    return conn


def projection_path(ledger_path: str | os.PathLike[str]) -> str:
    """Where the projections of a ledger file live: `<stem>.projections.duckdb` beside it."""
    p = Path(ledger_path)
    return str(p.with_name(p.stem + ".projections.duckdb")) if str(ledger_path) != ":memory:" else ":memory:"


class ProjectionStore:
    """The SCD-2 tables of one ledger."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, read_only: bool = False,
                 flush_rows: int = FLUSH_ROWS, fresh: bool = False) -> None:
        """`fresh`: a new file written whole by this store alone (`rebuild_file`), in row groups of
        `ROW_GROUP_SIZE` rows; its connection's cursors do not see the tables by name."""
        self.path = str(path)
        self._init_pending(flush_rows)
        if read_only and self.path != ":memory:" and not Path(self.path).exists():
            raise LedgerCorrupt(
                f"{self.path}: no projection file; build it with `ledgermem repair` (the ledger's path or run id)"
            )
        try:
            if read_only and self.path != ":memory:":
                self._conn = connect_read_only(self.path, "projection_file")
            elif fresh and self.path != ":memory:":
                self._conn = _connect_fresh(self.path)
            else:
                self._conn = duckdb.connect(self.path, read_only=read_only)
        except duckdb.IOException as exc:
            raise LedgerLocked(f"{self.path}: the projections are open for writing in another process") from exc
        if not read_only:
            self._create()

    def _init_pending(self, flush_rows: int = FLUSH_ROWS) -> None:
        self.flush_rows = flush_rows
        self._pending: dict[StreamKey, _Pending] = {}
        self._pending_rows = 0
        self._erasure: int | None = None  # the erasure mark, read once per connection
        # Called before pending versions are written: a ledger with a commit group open makes it durable
        # first, so the file never holds a fold of events a crash could take back.
        self.before_flush: Callable[[], object] | None = None

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The file's connection, with every pending version written first: what it reads is current."""
        if self._pending:
            self.flush()
        return self._conn

    @conn.setter
    def conn(self, conn: duckdb.DuckDBPyConnection) -> None:
        self._conn = conn
        self._erasure = None

    @classmethod
    def over(cls, conn: duckdb.DuckDBPyConnection) -> ProjectionStore:
        """Projection tables inside an existing (in-memory) connection, e.g. beside a Parquet ledger's view."""
        store = cls.__new__(cls)
        store._init_pending()
        store.path, store.conn = ":memory:", conn
        store._create()
        return store

    def fill(self, ledger: Ledger) -> None:
        """Fold every stream of `ledger` into these (empty) tables."""
        _fill(self, ledger)

    def _create(self) -> None:
        for spec in TABLES:
            self._conn.execute(table_ddl(spec))
            have = [r[0] for r in self._conn.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND database_name = current_database() "
                "AND schema_name = current_schema() ORDER BY column_index", [spec.name]).fetchall()]
            want = column_names(spec)
            if have != want:
                raise LedgerCorrupt(
                    f"{self.path}: table {spec.name} has the columns of an older version ({len(have)} instead of "
                    f"{len(want)}); projections are derived from the ledger: rebuild this file with "
                    "`ledgermem replay RUN`"
                )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS projection_state (run_id VARCHAR, system VARCHAR, episode_id VARCHAR, "
            "last_seq BIGINT)"
        )
        # The seq of the last `key_shredded` this file was rebuilt after: a file older than an erasure
        # may still hold the erased plaintext and must be rebuilt (a crash can fall between the two).
        self._conn.execute("CREATE TABLE IF NOT EXISTS projection_meta (key VARCHAR, value BIGINT)")

    def erasure_mark(self) -> int:
        """The seq of the last erasure this file was rebuilt after; read once, then kept in the process."""
        if self._erasure is None:
            row = self._conn.execute("SELECT max(value) FROM projection_meta WHERE key = ?", [_ERASURE]).fetchall()
            self._erasure = int(row[0][0]) if row and row[0][0] is not None else 0
        return self._erasure

    def _set_erasure_mark(self, seq: int) -> None:
        self._conn.execute("DELETE FROM projection_meta WHERE key = ?", [_ERASURE])
        self._conn.execute("INSERT INTO projection_meta VALUES (?, ?)", [_ERASURE, seq])
        self._erasure = seq

    def close(self) -> None:
        """Write what is pending, then close; a store whose write fails is closed all the same (the marks
        show the file as behind, and the next writer catches it up from the ledger)."""
        try:
            if self._pending:
                self.flush()
        finally:
            self._conn.close()

    def __enter__(self) -> ProjectionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def behind(self, ledger: Ledger) -> str | None:
        """Why these tables are not a whole fold of `ledger` (None when they are); reads the marks only.

        Every stream with an episode must be marked as folded exactly to its
        last seq, no stream the ledger lacks may be marked, no fill may be
        marked as started and not finished, and the file must have been
        rebuilt after the ledger's last erasure.
        """
        try:
            marks = self._marks()
            meta = dict(self.conn.execute("SELECT key, max(value) FROM projection_meta GROUP BY key").fetchall())
        except duckdb.Error as exc:
            return f"not a projection file of this version ({str(exc).splitlines()[0]})"
        if meta.get(_FILLING) is not None:
            return f"a fill up to seq {meta[_FILLING]} was started and did not finish"
        ends = _stream_ends(ledger)
        off = sorted(k for k in ends.keys() | marks.keys() if ends.get(k) != marks.get(k))
        ahead = [k for k in off if marks.get(k, 0) > ends.get(k, 0)]
        if ahead:
            first = ahead[0]
            return (f"{len(ahead)} stream(s) folded past the ledger's last event (first: {'/'.join(first.as_tuple())} folded "
                    f"to seq {marks[first]}, the ledger ends it at seq {ends.get(first, 0)}): the ledger lost "
                    "events or was replaced since (`ledgermem verify --checkpoint`)")
        if off:
            first = off[0]
            return (f"{len(off)} of {len(ends)} stream(s) not folded to their last event (first: "
                    f"{'/'.join(first.as_tuple())} folded to seq {marks.get(first, 0)}, its last event is seq "
                    f"{ends.get(first, 0)})")
        erased = last_erasure_seq(ledger)
        if erased > int(meta.get(_ERASURE) or 0):
            return f"older than the erasure at seq {erased} (it may still hold erased values)"
        return None

    def catch_up(self, ledger: Ledger) -> str | None:
        """Make these (writable) tables a whole fold of `ledger`; returns what was wrong, None if nothing.

        Streams a crash left behind are refolded one by one, as a writer
        would on opening them; anything else (an unfinished fill, marks the
        ledger does not explain, an erasure the file predates) rebuilds the
        file.
        """
        why = self.behind(ledger)
        if why is None:
            return None
        marks, ends = self._marks(), _stream_ends(ledger)
        lagging = [k for k in ends if marks.get(k, 0) < ends[k]]
        only_lagging = (
            self.erasure_mark() >= last_erasure_seq(ledger)
            and not self.conn.execute("SELECT 1 FROM projection_meta WHERE key = ?", [_FILLING]).fetchall()
            and all(marks.get(k) == ends.get(k) for k in ends.keys() | marks.keys() if k not in lagging)
        )
        if not only_lagging:
            self.rebuild_from(ledger)
            return why
        for stream in lagging:
            projector = Projector(stream.as_tuple(), keep_history=True)
            projector.replay(ledger.read(stream=stream))
            assert projector.history is not None
            self.replace_stream(stream, projector.history, projector.last_seq)
        return why

    def _marks(self) -> dict[StreamKey, int]:
        return {StreamKey(r, s, e): int(n) for r, s, e, n in self.conn.execute(
            "SELECT run_id, system, episode_id, last_seq FROM projection_state").fetchall()}

    def _marks_in_file(self) -> dict[StreamKey, int]:
        """The marks as the file holds them, pending versions aside."""
        return {StreamKey(r, s, e): int(n) for r, s, e, n in self._conn.execute(
            "SELECT run_id, system, episode_id, last_seq FROM projection_state").fetchall()}

    def require_current(self, ledger: Ledger) -> None:
        """Refuse a projection file that is not a whole fold of `ledger`, naming the command that rebuilds it."""
        why = self.behind(ledger)
        if why is not None:
            raise ProjectionsBehind(
                f"{self.path}: partial projections, not served: {why}; rebuild them with "
                f"`ledgermem repair {ledger.path}`"
            )

    def last_seq(self, stream: StreamKey) -> int:
        """The seq this stream's versions reach, those still pending included."""
        pending = self._pending.get(stream)
        return pending.last_seq if pending is not None else self._stored_seq(stream)

    def _stored_seq(self, stream: StreamKey) -> int:
        row = self._conn.execute(
            f"SELECT last_seq FROM projection_state WHERE {_THE_STREAM}",
            list(stream.as_tuple()),
        ).fetchone()
        return int(row[0]) if row else 0

    def _insert(self, spec: TableSpec, rows: list[dict[str, Any]]) -> None:
        batch.insert(self._conn, spec.name, columns(spec), rows)

    def _set_last_seq(self, stream: StreamKey, last_seq: int) -> None:
        key = list(stream.as_tuple())
        self._conn.execute(f"DELETE FROM projection_state WHERE {_THE_STREAM}", key)
        self._conn.execute("INSERT INTO projection_state VALUES (?, ?, ?, ?)", [*key, last_seq])

    def write(self, stream: StreamKey, delta: Delta, last_seq: int) -> None:
        """Close and open versions and move the stream's high-water mark: kept in the process until `flush`,
        which writes them (and the mark) in one transaction."""
        pending = self._pending.get(stream)
        if pending is None:
            pending = self._pending[stream] = _Pending(base=self._stored_seq(stream))
        self._pending_rows += pending.add(delta, last_seq)
        if self._pending_rows >= self.flush_rows:
            self.flush()

    def pending_rows(self) -> int:
        """Versions (opened or closed) kept in the process, not yet in the file."""
        return self._pending_rows

    def flush(self) -> None:
        """Write every pending stream's versions and marks in one transaction.

        A failed write keeps them pending (the file is unchanged), so a
        later flush retries them all and never closes a row it did not insert.
        A stream whose mark in the file moved since its versions began to
        wait (another store of the same file caught it up from the ledger)
        has them dropped: the file already holds them, written once.
        """
        if not self._pending:
            return
        if self.before_flush is not None:
            self.before_flush()
        waiting, rows = self._pending, self._pending_rows
        self._pending, self._pending_rows = {}, 0
        conn = self._conn
        conn.begin()
        try:
            in_file = self._marks_in_file()
            pending = {k: p for k, p in waiting.items() if in_file.get(k, 0) == p.base}
            for spec in TABLES:
                self._insert(spec, [r for p in pending.values() for r in p.opened.get(spec.name, {}).values()])
                closes = [(vid, seq, turn) for p in pending.values()
                          for vid, (seq, turn) in p.closed.get(spec.name, {}).items()]
                if closes:
                    conn.execute(f"UPDATE {spec.name} SET valid_to_seq = c.valid_to_seq, "
                                 f"valid_to_turn = c.valid_to_turn FROM ({batch.unnest_sql(_CLOSES)}) c "
                                 f"WHERE {spec.name}.version_id = c.version_id", batch.params(_CLOSES, closes))
            if pending:
                marks = [(*k.as_tuple(), p.last_seq) for k, p in pending.items()]
                conn.execute(f"DELETE FROM projection_state s USING ({batch.unnest_sql(_MARKS)}) m WHERE "
                             + " AND ".join(f"s.{c} = m.{c}" for c in StreamKey.COLUMNS),
                             batch.params(_MARKS, marks))
                batch.insert(conn, "projection_state", _MARKS, marks)
            conn.commit()
        except BaseException:
            conn.rollback()
            self._pending, self._pending_rows = waiting, rows
            raise

    def forget_pending(self) -> None:
        """Forget every pending version: the ledger appends they fold were rolled back (`Ledger.commit_group`)."""
        self._drop_pending()

    def _drop_pending(self, stream: StreamKey | None = None) -> None:
        """Forget pending versions (of one stream, or all): what replaces them is folded from the ledger."""
        if stream is None:
            self._pending, self._pending_rows = {}, 0
        elif stream in self._pending:
            self._pending_rows -= self._pending.pop(stream).rows

    def replace_stream(self, stream: StreamKey, history: History, last_seq: int) -> None:
        """Swap in a stream's complete history (catch-up after a crash between the two commits)."""
        self._drop_pending(stream)
        self._conn.begin()
        try:
            for spec in TABLES:
                self._conn.execute(
                    f"DELETE FROM {spec.name} WHERE {_THE_STREAM}",
                    list(stream.as_tuple()),
                )
                self._insert(spec, history.get(spec.name, []))
            self._set_last_seq(stream, last_seq)
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise

    def rebuild_from(self, ledger: Ledger) -> None:
        """Replace every table with a fold of the ledger, in a new file (the old file is deleted).

        Pending versions are dropped unwritten: the fold covers every event they came from.
        """
        self._drop_pending()
        self._erasure = None
        if self.path == ":memory:":
            for spec in TABLES:
                self._conn.execute(f"DROP TABLE IF EXISTS {spec.name}")
            self._conn.execute("DROP TABLE IF EXISTS projection_state")
            self._conn.execute("DROP TABLE IF EXISTS projection_meta")
            self._create()
            _fill(self, ledger)
            return
        self._conn.close()
        rebuild_file(ledger, self.path)
        self.conn = duckdb.connect(self.path)

    def read_tables(self, run_id: str | None = None) -> History:
        """Every table, ordered like `rebuild` orders its rows."""
        out: History = {}
        for spec in TABLES:
            where, params = ("WHERE run_id = ?", [run_id]) if run_id else ("", [])
            result = self.conn.execute(
                f"SELECT * FROM {spec.name} {where} ORDER BY {', '.join(order_keys(spec))}", params
            )
            names = [d[0] for d in result.description or ()]
            out[spec.name] = [dict(zip(names, row)) for row in result.fetchall()]
        return out


class LiveProjection:
    """A stream's projector; its deltas go to the projection store after each ledger commit."""

    def __init__(self, stream: StreamKey, history: Iterable[RecordedEvent], store: ProjectionStore) -> None:
        self.stream, self.store = stream, store
        events = list(history)
        self.projector = Projector(stream.as_tuple())
        self.projector.apply_all(events)
        if store.last_seq(stream) < self.projector.last_seq:
            full = Projector(stream.as_tuple(), keep_history=True)
            full.replay(events)
            assert full.history is not None
            store.replace_stream(stream, full.history, full.last_seq)

    def apply(self, recorded: Iterable[RecordedEvent]) -> None:
        delta = self.projector.apply_all(recorded)
        self.store.write(self.stream, delta, self.projector.last_seq)


def rebuild(ledger: Ledger, run_id: str | None = None) -> History:
    """Every projection's full history, folded from the ledger alone."""
    return fold_history(
        (stream, ledger.read(stream=stream)) for stream, _ in ledger.streams(run_id) if stream.episode_id
    )


def fold_history(streams: Iterable[tuple[StreamKey, Iterable[RecordedEvent]]]) -> History:
    """Every projection's full history, folded from each episode stream's events (in seq order)."""
    folded: list[tuple[tuple[str, str, str], History]] = []
    # The fold makes rows that all live on: the cyclic collector, woken by every few hundred of them, would walk
    # them again and again and find nothing to free. It is paused for the fold (reference counting still frees).
    paused = gc.isenabled()
    gc.disable()
    try:
        for stream, events in streams:
            projector = Projector(stream.as_tuple(), keep_history=True)
            projector.replay(events)
            assert projector.history is not None
            folded.append((stream.as_tuple(), projector.history))
    finally:
        if paused:
            gc.enable()
    # `order_keys` order: streams in order, then each stream's rows by key; a stream's history is already
    # in seq order, and a stable sort by the key keeps it within each key.
    folded.sort(key=itemgetter(0))
    out: History = {spec.name: [] for spec in TABLES}
    for _, history in folded:
        for spec in TABLES:
            out[spec.name].extend(sorted(history[spec.name], key=itemgetter(*(n for n, _ in spec.key))))
    return out


def _stream_ends(ledger: Ledger) -> dict[StreamKey, int]:
    """The seq of each episode stream's last event."""
    return {StreamKey(r, s, e): int(n) for r, s, e, n in ledger.conn.execute(
        "SELECT s.run_id, s.system, s.episode_id, max(e.seq) FROM events e JOIN streams s USING (stream_no) "
        "WHERE s.episode_id <> '' GROUP BY ALL").fetchall()}


def last_erasure_seq(ledger: Ledger) -> int:
    """The seq of the ledger's last erasure (`key_shredded`), 0 if none; kept by the ledger, not queried per turn."""
    return ledger.last_shredded_seq()


def _fill(store: ProjectionStore, ledger: Ledger) -> None:
    # Marked as started first, unmarked last: a fill that dies between the two is seen as partial on open.
    store.conn.execute("INSERT INTO projection_meta VALUES (?, ?)", [_FILLING, ledger.last_seq])
    store._set_erasure_mark(last_erasure_seq(ledger))
    for stream, _ in ledger.streams():
        if not stream.episode_id:
            continue
        projector = Projector(stream.as_tuple(), keep_history=True)
        projector.replay(ledger.read(stream=stream))
        assert projector.history is not None
        store.replace_stream(stream, projector.history, projector.last_seq)
    store.conn.execute("DELETE FROM projection_meta WHERE key = ?", [_FILLING])


def rebuild_file(ledger: Ledger, path: str | os.PathLike[str]) -> None:
    """Write the projections of every stream into a new file, then put it in place of `path`.

    The old file is removed, not rewritten: with it goes any plaintext it held.
    """
    target = Path(path)
    fresh = target.with_name(target.name + ".rebuilding")
    for leftover in (fresh, Path(str(fresh) + ".wal")):
        leftover.unlink(missing_ok=True)
    with ProjectionStore(fresh, fresh=True) as store:
        _fill(store, ledger)
        store.conn.execute("CHECKPOINT")
    Path(str(target) + ".wal").unlink(missing_ok=True)
    os.replace(fresh, target)
