"""The runs a server answers for, and how each is opened for one request.

`Catalog(target)` serves a ledger file, a run folder, a runs directory
(every `*/ledger.duckdb` in it, looked up again on each listing, so new
runs appear), a Parquet export directory, or a run id under `runs_dir`.

A DuckDB ledger is opened read-only for a request and kept open for the
next one until it has been idle for `hold` seconds (opening costs tens of
milliseconds), so the server keeps a writer out for at most that long after
its last request. A ledger that its writer holds open cannot be opened by
another process at all, not even read-only (SPEC §8); such a run is served
from a snapshot: the ledger file
and its write-ahead log are copied into a private temporary directory and
opened there (DuckDB replays the log up to the last whole commit), and the
projections are folded from the copy into a new file beside it. A snapshot
is taken again when the ledger's files change, at most every `refresh`
seconds. The key store is never copied (a copy would outlive an erasure),
so a live run's sealed values read as `[sealed]` until its writer closes
it. A Parquet export is opened (its projections folded) once, and again
only when its manifest changes.
"""

from __future__ import annotations

import contextvars
import copy
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ledgermem.memory.runs import LEDGER_FILE, open_run, resolve_run
from ledgermem.service.errors import Closing, RunBusy, SnapshotFailed, TimedOut, UnknownRun
from ledgermem.ledger.errors import LedgerLocked, LedgermemError
from ledgermem.ledger.store import Ledger
from ledgermem.projections.errors import ProjectionsBehind
from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild_file

Signature = tuple[tuple[int, int], ...]
#: Joins a run id and the folder of its ledger in the id of a run whose id another ledger served also holds.
QUALIFIER = "@"
#: Cursor pairs kept per open run for the next requests.
POOL = 8


@dataclass(frozen=True, slots=True)
class Source:
    path: Path  # a ledger file, or a Parquet export directory
    kind: str  # "duckdb" | "parquet"


@dataclass(frozen=True, slots=True)
class RunView:
    """One run opened for one request: its ledger (whose connection also sees the projection tables)."""

    run_id: str
    source: Source
    ledger: Ledger
    projections: ProjectionStore
    live: bool  # its writer holds it: this is a snapshot

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        return self.ledger.conn


def signature(path: Path) -> Signature:
    out = []
    for p in (path, Path(str(path) + ".wal")):
        try:
            st = p.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append((-1, -1))
    return tuple(out)


class Deadline:
    """The time limit of one request: once it passes, every cursor the request queries through is interrupted.

    DuckDB stops a running query when its connection is interrupted; work in
    Python between queries is not stopped, so the cursors are interrupted
    again every `REPEAT` seconds until the request ends, and the catalog
    refuses to open a run for it.
    """

    REPEAT = 0.02

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._timer.cancel()

    def _expire(self) -> None:
        self.expired = True
        while True:
            with self._lock:
                for cursor in self._cursors:
                    try:
                        cursor.interrupt()
                    except duckdb.Error:
                        pass
            if self._done.wait(self.REPEAT):
                return

    @contextmanager
    def watch(self, *cursors: duckdb.DuckDBPyConnection) -> Iterator[None]:
        self.check()
        with self._lock:
            self._cursors.extend(cursors)
        try:
            yield
        finally:
            with self._lock:
                for cursor in cursors:
                    self._cursors.remove(cursor)

    def check(self) -> None:
        if self.expired:
            raise TimedOut(f"the request ran past its time limit of {self.seconds:g} s and was stopped")


#: The deadline of the request the current thread answers (None: no limit).
DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("ledgermem_deadline", default=None)


@dataclass(slots=True)
class _Snapshot:
    folder: Path
    ledger: Path
    signature: Signature
    taken: float


class Snapshots:
    """Private copies of ledgers that their writers hold open."""

    def __init__(self, refresh: float) -> None:
        self.refresh = refresh
        self._root: Path | None = None  # made when the first snapshot is taken
        self._taken: dict[Path, _Snapshot] = {}

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="ledgermem-serve-"))  # mode 0700
            # Removed by close(), and at the latest when the process exits: copies never outlive the server.
            weakref.finalize(self, shutil.rmtree, self._root, True)
        return self._root

    def ledger_for(self, source: Path) -> Path:
        """The path of a current enough copy of `source`."""
        sig = signature(source)
        old = self._taken.get(source)
        if old is not None and (old.signature == sig or time.monotonic() - old.taken < self.refresh):
            return old.ledger
        fresh = self._take(source, sig)
        self._taken[source] = fresh
        if old is not None:
            shutil.rmtree(old.folder, ignore_errors=True)
        return fresh.ledger

    def _take(self, source: Path, sig: Signature) -> _Snapshot:
        problem: Exception | None = None
        for _ in range(3):  # a copy taken while a log entry was half written may not open: take it again
            folder = Path(tempfile.mkdtemp(dir=self.root))
            copy = folder / source.name
            try:
                shutil.copyfile(source, copy)
                wal = Path(str(source) + ".wal")
                if wal.exists():
                    shutil.copyfile(wal, Path(str(copy) + ".wal"))
                with Ledger(copy, create=False) as ledger:
                    rebuild_file(ledger, projection_path(copy))
                return _Snapshot(folder, copy, sig, time.monotonic())
            except (LedgermemError, duckdb.Error, OSError) as exc:
                problem = exc
                shutil.rmtree(folder, ignore_errors=True)
        raise SnapshotFailed(f"{source}: the ledger is being written by another process and a snapshot of it "
                             f"could not be opened ({problem}); try again")

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self._taken.clear()


def _manifest(folder: Path) -> Path:
    """An export's manifest file; ledger.parquet (pyarrow.parquet with it) is loaded on first use, not by `run`."""
    from ledgermem.ledger.parquet import MANIFEST

    return folder / MANIFEST


def _is_export(path: Path) -> bool:
    return path.is_dir() and _manifest(path).is_file()


@dataclass(slots=True)
class _Held:
    """A run's files opened read-only and kept for the next request, until idle for `hold` seconds."""

    stack: ExitStack
    ledger: Ledger
    projections: ProjectionStore
    live: bool
    opened: Path  # the file opened: the ledger itself, or a snapshot of it
    used: float
    users: int = 0
    sig: Signature = ()  # an export's manifest when it was opened
    pool: list[tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]] = field(default_factory=list)
    search_path: str = ""
    retired: bool = False  # replaced or dropped while in use: closed when its last request ends

    def cursors(self) -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
        """A new (ledger, projections) cursor pair for one request, set up as `open_run` set up the connection."""
        ledger = self.ledger.conn.cursor()
        try:
            if self.search_path:  # a session setting: a cursor does not inherit it
                quoted = self.search_path.replace("'", "''")
                ledger.execute(f"SET search_path = '{quoted}'")
            same = self.projections.conn is self.ledger.conn
            return ledger, ledger if same else self.projections.conn.cursor()
        except BaseException:
            ledger.close()
            raise

    def close(self) -> None:
        for pair in self.pool:
            _close_pair(pair)
        self.pool.clear()
        self.stack.close()


def _close_pair(pair: tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]) -> None:
    for cursor in {id(c): c for c in pair}.values():
        cursor.close()


class Catalog:
    """The sources of the runs served, and `open(run_id)` for a request.

    Opening a DuckDB file costs tens of milliseconds, so a run opened for a
    request is kept open for the next one, and closed once no request has
    used it for `hold` seconds: a writer that wants the file waits at most
    that long after the last request (0 closes it after every request).
    """

    def __init__(self, target: str | os.PathLike[str], *, runs_dir: Path = Path("runs"), keys: Path | None = None,
                 refresh: float = 1.0, hold: float = 1.0) -> None:
        path = Path(target)
        if path.is_dir() and not _is_export(path) and not (path / LEDGER_FILE).is_file():
            self._folder: Path | None = path  # a runs directory: looked up again on every listing
            if not any(path.glob(f"*/{LEDGER_FILE}")) and not any(p for p in path.iterdir() if _is_export(p)):
                raise UnknownRun(f"{path}: no runs here (no */{LEDGER_FILE}, no Parquet export)")
            self._fixed: list[Source] = []
        else:
            self._folder = None
            resolved = resolve_run(str(target), runs_dir)
            self._fixed = [Source(resolved, "parquet" if _is_export(resolved) else "duckdb")]
        self.keys, self.hold = keys, hold
        self.snapshots = Snapshots(refresh)
        self._held: dict[Path, _Held] = {}
        self._run_ids: dict[Path, tuple[Signature, list[str]]] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # a request ended, or a write did
        self._writing: set[Path] = set()
        self._closed = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="ledgermem-catalog-reaper", daemon=True)
        self._reaper.start()

    @property
    def description(self) -> str:
        return str(self._folder) if self._folder is not None else str(self._fixed[0].path)

    def sources(self) -> list[Source]:
        if self._folder is None:
            return list(self._fixed)
        found = [Source(p, "duckdb") for p in sorted(self._folder.glob(f"*/{LEDGER_FILE}"))]
        found += [Source(p, "parquet") for p in sorted(self._folder.iterdir()) if _is_export(p)]
        return found

    def run_ids(self, source: Source) -> list[str]:
        """The runs a source holds (every run id with a stream), remembered while its files do not change."""
        sig = signature(_manifest(source.path) if source.kind == "parquet" else source.path)
        known = self._run_ids.get(source.path)
        if known is not None and known[0] == sig:
            return known[1]
        with self._use(source) as held:
            ids = sorted({s.run_id for s, _ in held.ledger.streams()})
        self._run_ids[source.path] = (sig, ids)
        return ids

    def folder_of(self, source: Source) -> str:
        """The name of the folder that holds a source: the run folder of a ledger, an export's own folder."""
        return source.path.name if source.kind == "parquet" else source.path.parent.name

    def shown_path(self, source: Source) -> str:
        """A source's path as shown to clients: relative to the folder served, never absolute."""
        if self._folder is not None:
            return source.path.relative_to(self._folder).as_posix()
        return source.path.name

    def scrub(self, text: str) -> str:
        """A message as shown to clients: paths relative to the folder served, a snapshot's folder unnamed."""
        base = self._folder if self._folder is not None else self._fixed[0].path.parent
        places = {str(base.resolve()) + os.sep: "", str(base) + os.sep: ""}
        if self.snapshots._root is not None:
            places[str(self.snapshots._root)] = "<snapshot>"
        for place in sorted(places, key=len, reverse=True):
            if place not in ("", os.sep, "." + os.sep):
                text = text.replace(place, places[place])
        return text

    def served(self) -> list[tuple[str, str, Source]]:
        """(id served, run id recorded in the ledger, source) of every run, in listing order.

        A run id held by one source is served as itself. When ledgers in the
        folder hold the same run id (an imported copy beside the original,
        say), the one in the folder named after the run keeps the plain id
        and each other is served as `<run id>@<folder>`; that qualified id
        is accepted for every run, so a link to a copy stays valid.
        """
        pairs = [(rid, source) for source in self.sources() for rid in self.run_ids(source)]
        count: dict[str, int] = {}
        for rid, _ in pairs:
            count[rid] = count.get(rid, 0) + 1
        out = []
        for rid, source in pairs:
            plain = count[rid] == 1 or self.folder_of(source) == rid
            out.append((rid if plain else f"{rid}{QUALIFIER}{self.folder_of(source)}", rid, source))
        return out

    def resolve(self, run_id: str) -> tuple[Source, str]:
        """The source of a served run id and the run id recorded in it."""
        served = self.served()
        for sid, rid, source in served:
            if sid == run_id:
                return source, rid
        for _, rid, source in served:
            if f"{rid}{QUALIFIER}{self.folder_of(source)}" == run_id:
                return source, rid
        listed = ", ".join(sid for sid, _, _ in served[:20]) + (" ..." if len(served) > 20 else "")
        raise UnknownRun(f"unknown run {run_id!r}; runs served: {listed or 'none'}")

    def locate(self, run_id: str) -> Source:
        return self.resolve(run_id)[0]

    @contextmanager
    def open(self, run_id: str) -> Iterator[RunView]:
        """The run for one request, with cursors of its own: requests on other threads query at the same time."""
        source, recorded = self.resolve(run_id)
        deadline = DEADLINE.get()
        if deadline is not None:
            deadline.check()
        with self._use(source) as held:
            with self._lock:
                pair = held.pool.pop() if held.pool else None
            if pair is None:
                pair = held.cursors()  # outside the lock: a cursor is set up with a query of its own
            ledger, projections = copy.copy(held.ledger), copy.copy(held.projections)
            ledger.conn, projections.conn = pair
            try:
                with deadline.watch(*{id(c): c for c in pair}.values()) if deadline else nullcontext():
                    yield RunView(recorded, source, ledger, projections, held.live)
            finally:
                with self._lock:
                    if held.retired or len(held.pool) >= POOL:
                        _close_pair(pair)
                    else:
                        held.pool.append(pair)

    @contextmanager
    def _use(self, source: Source) -> Iterator[_Held]:
        with self._lock:
            held = self._acquire(source)
            held.users += 1
        try:
            yield held
        finally:
            with self._lock:
                held.users -= 1
                held.used = time.monotonic()
                self._changed.notify_all()
                if held.retired and held.users == 0:
                    held.close()
                elif self.hold <= 0 and source.kind == "duckdb" and held.users == 0:
                    self._drop(source.path)

    def _acquire(self, source: Source) -> _Held:
        if self._closed.is_set():  # a request still in flight when the server closed opens nothing again
            raise Closing("the server is shutting down")
        while source.path in self._writing:  # the fact intake writes it: wait for the write to end
            self._changed.wait()
        held = self._held.get(source.path)
        if source.kind == "parquet":  # kept while its manifest is the same: folding its projections is costly
            sig = signature(_manifest(source.path))
            if held is None or held.sig != sig:
                self._drop(source.path)
                held = self._held[source.path] = self._open(source.path, live=False, keys=self.keys)
                held.sig = sig
            return held
        if held is not None and not held.live:
            return held  # we hold it read-only: no writer can have changed it since
        try:
            if not Path(projection_path(source.path)).exists():
                raise FileNotFoundError(projection_path(source.path))
            fresh = self._open(source.path, live=False)
        except (LedgerLocked, FileNotFoundError, ProjectionsBehind) as exc:  # served from a private, whole copy
            live = isinstance(exc, LedgerLocked)
            snapshot = self.snapshots.ledger_for(source.path)
            if held is not None and held.opened == snapshot:
                return held
            fresh = self._open(snapshot, live=live)
        if held is not None:
            self._drop(source.path)
        self._held[source.path] = fresh
        return fresh

    def _open(self, path: Path, *, live: bool, keys: Path | None = None) -> _Held:
        stack = ExitStack()
        try:
            ledger, projections = stack.enter_context(open_run(path, keys=keys))
        except BaseException:
            stack.close()
            raise
        found = ledger.conn.execute("SELECT current_setting('search_path')").fetchone()
        return _Held(stack, ledger, projections, live, path, time.monotonic(),
                     search_path=str(found[0]) if found and found[0] else "")

    def _drop(self, path: Path) -> None:
        """Forget a run opened; its files are closed now, or when the last request using them ends."""
        held = self._held.pop(path, None)
        if held is not None:
            held.retired = True
            if held.users == 0:
                held.close()

    def _reap(self) -> None:
        while not self._closed.wait(0.25):
            with self._lock:
                now = time.monotonic()
                for path, held in list(self._held.items()):
                    if held.users == 0 and now - held.used > self.hold and not held.opened.is_dir():
                        self._drop(path)

    @contextmanager
    def open_for_writing(self, run_id: str) -> Iterator[tuple[Ledger, ProjectionStore]]:
        """The run's ledger and projections opened for writing (the fact intake); refused while another writes.

        Requests for this run wait while it is written; the ones already
        reading it finish first (our own read-only hold would keep the
        writer out). Other runs are answered meanwhile.
        """
        source = self.locate(run_id)
        if source.kind == "parquet":
            raise RunBusy(f"run {run_id!r} is served from a Parquet export, which is read-only")
        with self._changed:
            while source.path in self._writing:
                self._changed.wait()
            self._writing.add(source.path)
            held = self._held.get(source.path)
            self._drop(source.path)
            while held is not None and held.users > 0:
                self._changed.wait()
        try:
            try:
                ledger = Ledger(source.path, create=False)
            except LedgerLocked as exc:
                raise RunBusy(f"run {run_id!r} is being written by another process; try again when it has "
                              f"finished ({exc})") from exc
            try:
                with ProjectionStore(projection_path(source.path)) as projections:
                    yield ledger, projections
            finally:
                ledger.close()
            self._run_ids.pop(source.path, None)
        finally:
            with self._changed:
                self._writing.discard(source.path)
                self._changed.notify_all()

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            for path in list(self._held):
                self._drop(path)
        self.snapshots.close()
