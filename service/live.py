"""The live memory store: streams of agents' memories in one ledger the server owns.

A stream is addressed `namespace/.../stream` (`acme/user-42/session-7`):
2 to 8 segments, each a name like a run id (`memory.names`). It is the
ledger stream `StreamKey("live", "three_layer", "acme:user-42:session-7")`
(segments never hold ':', so the mapping is one to one) and its turns are
recorded by the library's `Memory`, exactly as an application in the same
process would record them. The folder holds `ledger.duckdb` (with its key
store, so an erasure crypto-shreds), the projections, and `tokens.json`
(`service.tokens`).

Every append made for a request records, in the same transaction as its
events, a row of the `service_writes` table: the seqs it wrote, the stream,
the operation, the id of the token that asked (never its secret), and the
idempotency key of a turn with the hash of its request. A turn retried with
the same key answers what the first one recorded and writes nothing; the
same key with a different request is a conflict.

Concurrency: requests on one stream run one at a time (a lock per stream);
everything that reads or writes the ledger and the projections runs under
the store's lock, which a request gives up while it waits for the model
(`Unlocked`), so the model calls of many streams overlap while their
commits stay serial.

Group commit: the ledger's appends join one open transaction
(`Ledger.group_commits`), their rows held back and written with one insert
per table when it commits, and a request answers only once what it saw is
durable (`LiveStore.sync`). The first request to need a commit becomes
the leader: it waits until no other request is at work on a turn (at most
`GROUP_WAIT`), then commits every turn appended so far, by any stream, in
one durable commit, while the requests behind it wait for that commit. The
projection file is written in batches, always after the ledger commit that
holds what it folds. One client alone still pays one commit per turn; many
clients share them. A
failed commit rolls the group back: every request in it answers an error
(none is acknowledged), and the open memories are dropped and reopened
from the ledger.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ledgermem.ledger.errors import LedgerLocked
from ledgermem.ledger.events import Event
from ledgermem.ledger.keys import SealWith
from ledgermem.ledger.store import BeforeCommit, Ledger, RecordedEvent, StreamKey
from ledgermem.memory.backends import Backend, Completion, Message, identity
from ledgermem.memory.memory import Memory
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.service.errors import Conflict, NotFound, RolledBack, ServeError
from ledgermem.service.tokens import Token, TokenStore, split_address

RUN_ID, SYSTEM = "live", "three_layer"
LEDGER_FILE = "ledger.duckdb"
OPEN_MEMORIES = 256  # streams whose folded state stays in memory
GROUP_WAIT = 0.05  # seconds the leader of a commit waits at most for the requests at work to append theirs
#: The `service_writes` table: (name, type, nullable) of each column, in order.
WRITES: tuple[tuple[str, str, bool], ...] = (
    ("first_seq", "BIGINT", False), ("last_seq", "BIGINT", False), ("stream", "VARCHAR", False),
    ("operation", "VARCHAR", False), ("token_id", "VARCHAR", False), ("idempotency_key", "VARCHAR", True),
    ("request_sha256", "VARCHAR", True), ("turn", "BIGINT", True), ("recorded_at", "TIMESTAMP", False))
WRITES_DDL = ("CREATE TABLE IF NOT EXISTS service_writes ("
              + ", ".join(f"{n} {t}{'' if null else ' NOT NULL'}" for n, t, null in WRITES) + ")")
_WRITES_TYPES = tuple((n, t) for n, t, _ in WRITES)


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """What a request saw (the ledger's last seq), the abort count it began at, and what it appended."""

    seq: int
    started: int
    appended: tuple[tuple[int, str], ...]


def stream_key(address: tuple[str, ...]) -> StreamKey:
    return StreamKey(RUN_ID, SYSTEM, ":".join(address))


def address_of(stream: StreamKey) -> str:
    return stream.episode_id.replace(":", "/")


def request_hash(fields: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class Write:
    """Who is writing what: recorded with every append made while it is the store's current write."""

    address: str
    operation: str
    token_id: str
    idempotency_key: str | None = None
    request_sha256: str | None = None
    turn: int | None = None


class AttributedLedger(Ledger):
    """A ledger whose every append records the current `Write` in `service_writes`, in the same transaction.

    The current write is the calling thread's: a request that waits for its model lets another thread
    write for another request meanwhile, each append attributed to its own.
    """

    def __init__(self, path: str | Path, **options: Any) -> None:
        self._local = threading.local()
        # (stream, idempotency key) -> the first attribution row written with it: what `LiveStore.replayed`
        # answers from. Loaded from `service_writes` on first use, kept by `append`, dropped with a rolled-back
        # group (it may name writes the ledger no longer has).
        self._keyed: dict[tuple[str, str], tuple[int, int, int | None, str | None, str]] | None = None
        super().__init__(path, **options)

    def keyed(self) -> dict[tuple[str, str], tuple[int, int, int | None, str | None, str]]:
        """The first write of every (stream, idempotency key): (first_seq, last_seq, turn, request hash, token)."""
        if self._keyed is None:
            found: dict[tuple[str, str], tuple[int, int, int | None, str | None, str]] = {}
            for first, last, stream, key, turn, sha, token in self.conn.execute(
                    "SELECT first_seq, last_seq, stream, idempotency_key, turn, request_sha256, token_id "
                    "FROM service_writes WHERE idempotency_key IS NOT NULL ORDER BY first_seq").fetchall():
                found.setdefault((stream, key), (first, last, turn, sha, token))
            self._keyed = found
        return self._keyed

    def _abort_group(self) -> None:
        self._keyed = None
        super()._abort_group()

    @property
    def current(self) -> Write | None:
        return getattr(self._local, "write", None)

    @property
    def appended(self) -> list[tuple[int, str]]:
        """(seq, event id) of the last event of each append the calling thread's request made."""
        found: list[tuple[int, str]] | None = getattr(self._local, "appended", None)
        if found is None:
            found = self._local.appended = []
        return found

    def survives(self, appended: Sequence[tuple[int, str]]) -> bool:
        """Whether every one of these appends is still in the ledger (a rolled-back group took them if not)."""
        for seq, event_id in appended:
            row = self.conn.execute("SELECT event_id FROM events WHERE seq = ?", [seq]).fetchone() \
                if seq <= self.last_seq else None
            if row is None or row[0] != event_id:
                return False
        return True

    @current.setter
    def current(self, write: Write | None) -> None:
        self._local.write = write

    def append(self, stream: StreamKey, events: Sequence[Event], *, expected_version: int,
               before_commit: BeforeCommit | None = None,
               keys: Sequence[SealWith] | None = None,
               blobs: Mapping[str, bytes] | None = None) -> tuple[RecordedEvent, ...]:
        write = self.current
        if write is None:  # the service never writes without knowing for whom
            raise ServeError(f"an append to {stream} outside a request: nothing to attribute it to")

        def record(conn: Any, recorded: tuple[RecordedEvent, ...]) -> None:
            # joins the group's other rows: one insert for the many turns of a group commit
            self.insert_rows("service_writes", _WRITES_TYPES, [[
                recorded[0].seq, recorded[-1].seq, write.address, write.operation, write.token_id,
                write.idempotency_key, write.request_sha256, write.turn, recorded[-1].recorded_at]])
            if before_commit is not None:
                before_commit(conn, recorded)
            written.append(recorded)
            self.appended.append((recorded[-1].seq, recorded[-1].event_id))

        written: list[tuple[RecordedEvent, ...]] = []
        keyed = self.keyed() if write.idempotency_key is not None else None  # loaded before the write
        out = super().append(stream, events, expected_version=expected_version, before_commit=record,
                             keys=keys, blobs=blobs)
        if written and keyed is not None and write.idempotency_key is not None and self._keyed is keyed:
            first, last = written[0][0].seq, written[0][-1].seq
            keyed.setdefault((write.address, write.idempotency_key),
                             (first, last, write.turn, write.request_sha256, write.token_id))
        return out


class Unlocked:
    """A backend whose calls give up the store's lock while they wait for the model, and take it back after.

    The caller holds its stream's lock throughout, so no other request can touch the stream's memory
    meanwhile; other streams read and commit.
    """

    def __init__(self, inner: Backend, store: LiveStore) -> None:
        self.inner, self.store = inner, store
        self.name, self.model = inner.name, inner.model

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        self.store.lock.release()
        self.store.busy(-1)  # waiting for a model, it does not hold back the group's commit
        try:
            return self.inner.complete(messages, purpose=purpose)
        finally:
            self.store.busy(+1)
            self.store.lock.acquire()

    def identity(self, purpose: str) -> tuple[str, str]:
        return identity(self.inner, purpose)

    def __getattr__(self, name: str) -> Any:  # what else a backend offers (its tokenizer, say)
        return getattr(self.inner, name)


class LiveStore:
    """The ledger, the open memories and the tokens of one live folder; safe to call from many threads."""

    def __init__(self, folder: str | Path, *, backend: str | Callable[[], Backend] = "heuristic") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.backend = backend
        self.tokens = TokenStore(self.folder)
        try:
            self.ledger = AttributedLedger(self.folder / LEDGER_FILE)
        except (LedgerLocked, OSError) as exc:
            raise ServeError(f"cannot open the live ledger: {exc}; is another `ledgermem live serve` or `live mcp` "
                             "using this folder?") from None
        self.ledger.conn.execute(WRITES_DDL)
        self.ledger.group_commits = True
        self.ledger.after_abort = self._rolled_back
        # Written in batches (every `FLUSH_ROWS` versions, when a read needs them, on close), each time after
        # the ledger's group is committed: never ahead of it; behind it after a crash, caught up on open.
        self.projections = ProjectionStore(projection_path(self.ledger.path))
        self.projections.before_flush = self.ledger.commit_group
        self.lock = threading.Lock()  # the ledger, the projections, the open memories
        # Requests inside `holding` and not waiting for a model (the turns the next commit can still take), the
        # last seq a commit made durable, and whether a request is committing: all under `_quiet`.
        self._busy = 0
        self._durable_seq = self.ledger.durable_seq
        self._leading = False
        self._quiet = threading.Condition(threading.Lock())
        self._stream_locks: dict[StreamKey, threading.Lock] = {}
        self._stream_locks_lock = threading.Lock()
        self._memories: OrderedDict[StreamKey, Memory] = OrderedDict()

    def close(self) -> None:
        with self.lock:
            self._memories.clear()
            self.ledger.commit_group()
            self.projections.close()
            self.ledger.close()

    # -- group commit -------------------------------------------------------------------

    def begin(self) -> int:
        """A request starts (call it holding the store's lock): the abort count it starts from."""
        self.ledger.appended.clear()
        return self.ledger.groups_aborted

    def mark(self, started: int) -> Mark:
        """What a request has seen and written (call it holding the store's lock), for `sync`."""
        return Mark(self.ledger.last_seq, started, tuple(self.ledger.appended))

    def lost(self, started: int, appended: Sequence[tuple[int, str]] | None = None) -> bool:
        """Whether a group rolled back since the request began took any of its appends (holding the lock)."""
        if self.ledger.groups_aborted == started:
            return False
        return not self.ledger.survives(self.ledger.appended if appended is None else appended)

    def sync(self, mark: Mark) -> None:
        """Return once everything up to `mark` is durable, committing the open group if nobody else is.

        Call it without the store's lock. One request at a time leads: it
        waits (at most `GROUP_WAIT`) until no other request is at work on a
        turn, so theirs join the group, and commits; the others wait for the
        commit that covers their marks. Raises `RolledBack` when a group
        that held one of the request's appends was rolled back: it was not
        recorded.
        """
        while True:
            with self._quiet:
                if self._durable_seq >= mark.seq and self.ledger.groups_aborted == mark.started:
                    return
                if self._leading:
                    self._quiet.wait()
                    continue
                self._leading = True
                self._quiet.wait_for(lambda: self._busy == 0, timeout=GROUP_WAIT)
            durable = None
            try:
                with self.lock:
                    if self.lost(mark.started, mark.appended):
                        raise RolledBack()
                    if self.ledger.durable_seq < mark.seq:
                        self.ledger.commit_group()
                    durable = self.ledger.durable_seq
            finally:
                with self._quiet:
                    self._leading = False
                    if durable is not None:
                        self._durable_seq = max(self._durable_seq, durable)
                    self._quiet.notify_all()
            return

    def busy(self, change: int) -> None:
        """A request begins (+1) or ends (-1) work that appends: the leader of a commit waits for none to be left."""
        with self._quiet:
            self._busy += change
            if self._busy == 0:
                self._quiet.notify_all()

    def _rolled_back(self) -> None:
        """A commit group was rolled back (the ledger says so, holding the store's lock): the open memories and
        the pending projection rows hold turns the ledger no longer has."""
        self._memories.clear()
        self.projections.forget_pending()

    # -- streams ------------------------------------------------------------------

    def exists(self, address: tuple[str, ...]) -> bool:
        return self.ledger.stream_version(stream_key(address)) > 0

    def memory(self, address: tuple[str, ...], token: Token, *, create: bool = False) -> Memory:
        """The open memory of a stream; a new stream is started (an attributed write) only when `create`.

        Opening may write too (it completes an erasure a crash interrupted), so it is attributed as well. At
        most `OPEN_MEMORIES` stay open; the least recently used is reopened from the ledger when asked again.
        """
        key = stream_key(address)
        found = self._memories.get(key)
        if found is not None:
            self._memories.move_to_end(key)
            return found
        new = not self.exists(address)
        if new and not create:
            raise NotFound(f"no stream {'/'.join(address)!r} in this memory; record a turn to start it "
                           "(list_streams shows the streams a token can read)", "stream")
        backend = self.backend if isinstance(self.backend, str) else self.backend()
        with self.writing(Write("/".join(address), "start_stream" if new else "resume_stream", token.token_id)):
            found = Memory(self.ledger, key, backend, projections=self.projections)
        found.backend = Unlocked(found.backend, self)  # its model calls let other streams commit
        self._memories[key] = found
        while len(self._memories) > OPEN_MEMORIES:
            self._memories.popitem(last=False)
        return found

    def reopen(self, address: tuple[str, ...], token: Token) -> Memory:
        """The stream's memory opened again from the ledger: opening completes an erasure's key shredding."""
        self._memories.pop(stream_key(address), None)
        return self.memory(address, token)

    @contextmanager
    def holding(self, address: tuple[str, ...] | None) -> Iterator[None]:
        """The stream's lock (when the request names a stream), then the store's: always in this order."""
        self.busy(+1)
        try:
            if address is None:
                with self.lock:
                    yield
                return
            key = stream_key(address)
            with self._stream_locks_lock:
                stream_lock = self._stream_locks.setdefault(key, threading.Lock())
            with stream_lock, self.lock:
                yield
        finally:
            self.busy(-1)

    def streams(self, namespace: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for stream, version in self.ledger.streams(RUN_ID):
            address = tuple(address_of(stream).split("/"))
            if address[: len(namespace)] == namespace:
                out.append({"stream": "/".join(address), "version": version})
        return out

    # -- attribution and idempotency ------------------------------------------------------

    @contextmanager
    def writing(self, write: Write) -> Iterator[None]:
        before, self.ledger.current = self.ledger.current, write
        try:
            yield
        finally:
            self.ledger.current = before

    def replayed(self, address: str, key: str, fields: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a turn already recorded with this idempotency key wrote (None: none was); Conflict when the
        key was used for a different request."""
        row = self.ledger.keyed().get((address, key))
        if row is None:
            return None
        if row[3] != request_hash(fields):
            raise Conflict(f"idempotency key {key!r} of stream {address!r} was used for a different request "
                           f"(turn {row[2]}); use a new key for a new turn", "idempotency_key",
                           detail={"turn": row[2], "first_seq": row[0], "last_seq": row[1]})
        return {"turn": row[2], "first_seq": row[0], "last_seq": row[1], "token_id": row[4]}

    def writes(self, address: str | None = None) -> list[dict[str, Any]]:
        """The attribution rows, oldest first: which token wrote which seqs."""
        sql = "SELECT * FROM service_writes" + (" WHERE stream = ?" if address else "") + " ORDER BY first_seq"
        result = self.ledger.conn.execute(sql, [address] if address else [])
        names = [d[0] for d in result.description or ()]
        return [dict(zip(names, r)) for r in result.fetchall()]


__all__ = ["LEDGER_FILE", "AttributedLedger", "LiveStore", "Mark", "RolledBack", "Unlocked", "Write", "address_of", "request_hash", "split_address",
           "stream_key"]
