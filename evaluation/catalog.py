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

import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from evaluation.runner import LEDGER_FILE, open_run, resolve_run
from ledger.errors import LedgerLocked, LedgermemError
from ledger.parquet import MANIFEST
from ledger.store import Ledger
from projections.errors import ProjectionsBehind
from projections.materialise import ProjectionStore, projection_path, rebuild_file

Signature = tuple[tuple[int, int], ...]


class CatalogError(LedgermemError):
    """A run cannot be found or opened; `status` is the HTTP status it answers with."""

    status = 500


class UnknownRun(CatalogError, LookupError):
    """No run of that id among the runs served."""

    status = 404


class RunBusy(CatalogError):
    """The run cannot be written now (its writer holds it) or at all (an export)."""

    status = 409


class SnapshotFailed(CatalogError):
    """A run being written could not be copied into a snapshot that opens."""

    status = 503


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


def _is_export(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


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
        sig = signature(source.path / MANIFEST if source.kind == "parquet" else source.path)
        known = self._run_ids.get(source.path)
        if known is not None and known[0] == sig:
            return known[1]
        with self._use(source) as held:
            ids = sorted({s.run_id for s, _ in held.ledger.streams()})
        self._run_ids[source.path] = (sig, ids)
        return ids

    def locate(self, run_id: str) -> Source:
        holders = [s for s in self.sources() if run_id in self.run_ids(s)]
        if not holders:
            known = sorted({r for s in self.sources() for r in self.run_ids(s)})
            listed = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
            raise UnknownRun(f"unknown run {run_id!r}; runs served: {listed or 'none'}")
        return holders[0]

    @contextmanager
    def open(self, run_id: str) -> Iterator[RunView]:
        source = self.locate(run_id)
        with self._use(source) as held:
            yield RunView(run_id, source, held.ledger, held.projections, held.live)

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
                if self.hold <= 0 and source.kind == "duckdb" and held.users == 0:
                    self._drop(source.path)

    def _acquire(self, source: Source) -> _Held:
        held = self._held.get(source.path)
        if source.kind == "parquet":  # kept while its manifest is the same: folding its projections is costly
            sig = signature(source.path / MANIFEST)
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
            copy = self.snapshots.ledger_for(source.path)
            if held is not None and held.opened == copy:
                return held
            fresh = self._open(copy, live=live)
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
        return _Held(stack, ledger, projections, live, path, time.monotonic())

    def _drop(self, path: Path) -> None:
        held = self._held.pop(path, None)
        if held is not None:
            held.stack.close()

    def _reap(self) -> None:
        while not self._closed.wait(0.25):
            with self._lock:
                now = time.monotonic()
                for path, held in list(self._held.items()):
                    if held.users == 0 and now - held.used > self.hold and not held.opened.is_dir():
                        self._drop(path)

    @contextmanager
    def open_for_writing(self, run_id: str) -> Iterator[tuple[Ledger, ProjectionStore]]:
        """The run's ledger and projections opened for writing (the fact intake); refused while another writes."""
        source = self.locate(run_id)
        if source.kind == "parquet":
            raise RunBusy(f"run {run_id!r} is served from a Parquet export, which is read-only")
        with self._lock:
            self._drop(source.path)  # our own read-only hold would keep the writer out
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

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            for path in list(self._held):
                self._drop(path)
        self.snapshots.close()
