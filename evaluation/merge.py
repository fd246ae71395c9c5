"""Merging the shard ledgers of one run into the run's ledger.

A run spread over machines (`evaluation.cluster`) leaves one complete ledger
per shard: the run stream (`run_started`, `run_finished`) and the episode
streams of the shard's episodes. `merge_shards` first checks every shard:

* its hash chain and stream versions verify (a shard that fails is named);
* it holds one run, that run finished, and its run stream holds nothing else;
* its `run_started` (systems, configuration, versions, dataset) equals the
  first shard's: the shards are parts of one run;
* no episode stream is in two shards, and together they hold every system's
  every episode the run started with.

Then it writes one new ledger:

* every episode stream unchanged: its events, event ids, stream versions and
  `recorded_at` (the wall times of the metrics come from them);
* one run stream: the first shard's `run_started` and a new `run_finished`
  with the metrics of the merged run, computed from its events;
* a new global seq: `run_started`, then the episode streams by system (in
  the run's order), shard, and position in the shard; each stream's events
  in version order. Shards of contiguous episodes (how `evaluation.cluster`
  cuts them) give the order a one-process run writes;
* the hash chain computed anew over that order and verified before the file
  is put in place; the shards' key stores merged into the new ledger's.

Projections and derived files are rebuilt from the merged ledger.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ledgermem.evaluation.errors import EvaluationError, MergeRefused
from ledgermem.memory.errors import RunExists
from ledgermem.memory.names import validate_run_id
from ledgermem.evaluation.metrics import compute_metrics, outcomes_from_ledger, without_timing
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.ledger.checkpoint import checkpoint_path, sign_finished_run
from ledgermem.evaluation.events import RunFinished, RunStarted
from ledgermem.ledger.keys import KeyStore, key_path
from ledgermem.ledger.schema import GENESIS_HASH, canonical_bytes, canonical_json, chain_hash, events_arrow_schema
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.materialise import projection_path, rebuild_file

LEDGER_FILE = "ledger.duckdb"  # evaluation.runner.LEDGER_FILE: a shard is a run folder like any other
SHARDS_DIR = "shards"
_STARTED_FIELDS = ("systems", "config", "versions", "dataset")
_BATCH_ROWS = 10_000


def check_run_id(run_id: str) -> str:
    """A run id that names a folder (`memory.names.validate_run_id`)."""
    return validate_run_id(run_id)


def shard_folder(runs_dir: Path, run_id: str, index: int) -> Path:
    """`<runs_dir>/<run>/shards/<k>`: shard k's runs folder; its ledger is `<run>/ledger.duckdb` inside."""
    return Path(runs_dir) / run_id / SHARDS_DIR / str(index)


def shard_ledgers(runs_dir: Path, run_id: str) -> list[Path]:
    """The shard ledgers of a run under `runs_dir`, by shard number."""
    root = Path(runs_dir) / check_run_id(run_id) / SHARDS_DIR
    numbered = sorted((int(p.name), p) for p in root.glob("*") if p.is_dir() and p.name.isdigit())
    found = [p / run_id / LEDGER_FILE for _, p in numbered]
    if not found:
        raise MergeRefused(f"run {run_id!r}: no shards under {root} (expected {root}/<k>/{run_id}/{LEDGER_FILE})")
    return found


def shard_ledger_of(path: Path, run_id: str) -> Path:
    """A shard given on the command line: its ledger file, its run folder, or its shard folder."""
    for candidate in (path, path / LEDGER_FILE, path / run_id / LEDGER_FILE):
        if candidate.is_file():
            return candidate
    raise MergeRefused(f"shard {path}: no ledger file there (nor {LEDGER_FILE} or {run_id}/{LEDGER_FILE} inside)")


@dataclass(frozen=True, slots=True)
class _Stream:
    key: StreamKey
    stream_no: int  # in its shard
    version: int
    first_seq: int  # in its shard


@dataclass(frozen=True, slots=True)
class _Shard:
    index: int
    path: Path
    started: RunStarted
    started_seq: int
    streams: tuple[_Stream, ...]  # episode streams
    keys: dict[str, bytes]

    @property
    def name(self) -> str:
        return f"shard {self.index} ({self.path})"


@dataclass(frozen=True, slots=True)
class MergeResult:
    run_id: str
    ledger_path: Path
    shards: int
    events: int
    streams: int
    metrics: dict[str, dict[str, Any]]
    checkpoint: str = ""  # what signing the merged ledger's head did (`ledger.checkpoint.sign_finished_run`)


def _read_shard(index: int, path: Path) -> tuple[str, _Shard]:
    """A shard that verifies and holds one finished run; its run id and what the merge needs of it."""
    where = f"shard {index} ({path})"
    if not path.is_file():
        raise MergeRefused(f"{where}: no ledger file")
    with Ledger(path, read_only=True, create=False) as ledger:
        report = ledger.verify()
        if not report.ok:
            raise MergeRefused(f"{where} does not verify: seq {report.first_broken_seq}: {report.reason}; "
                               "nothing merged")
        started = list(ledger.read(event_types=["run_started"]))
        if len(started) != 1:
            raise MergeRefused(f"{where}: holds {len(started)} runs; a shard holds exactly one")
        first = started[0]
        run_id = first.stream.run_id
        run_events = [r.event.event_type for r in ledger.read(stream=first.stream)]
        if "run_finished" not in run_events:
            raise MergeRefused(f"{where}: run {run_id!r} has not finished (no run_finished); run the same "
                               "command again to finish it, then merge")
        extra = sorted(set(run_events) - {"run_started", "run_finished"})
        if extra:
            raise MergeRefused(f"{where}: the run stream holds {', '.join(extra)}; a merge keeps only run_started")
        foreign = sorted({str(k) for k, _ in ledger.streams() if k.run_id != run_id})
        if foreign:
            raise MergeRefused(f"{where}: streams of another run ({', '.join(foreign[:3])}) beside run {run_id!r}")
        firsts = dict(ledger.conn.execute("SELECT stream_no, min(seq) FROM events GROUP BY stream_no").fetchall())
        streams = tuple(_Stream(key, no, v, int(firsts.get(no, 0))) for no, key, v in ledger.stream_rows()
                        if key.episode_id)
        keys = ledger.keys.material() if ledger.keys is not None else {}
    assert isinstance(first.event, RunStarted)
    return run_id, _Shard(index, path, first.event, first.seq, streams, keys)


def _check_together(run_ids: list[str], shards: list[_Shard]) -> None:
    """One run, one configuration, each episode stream in one shard, every episode stream present."""
    base = shards[0]
    for run_id, shard in zip(run_ids[1:], shards[1:]):
        if run_id != run_ids[0]:
            raise MergeRefused(f"{shard.name} holds run {run_id!r}, {base.name} holds run {run_ids[0]!r}")
        differ = [f for f in _STARTED_FIELDS
                  if canonical_json(getattr(shard.started, f)) != canonical_json(getattr(base.started, f))]
        if differ:
            raise MergeRefused(f"{shard.name} was started with other {', '.join(differ)} than {base.name}; "
                               "the shards of one run share one configuration")
    owner: dict[StreamKey, int] = {}
    clashes: list[str] = []
    for shard in shards:
        for stream in shard.streams:
            if stream.key in owner:
                clashes.append(f"{stream.key} (shards {owner[stream.key]} and {shard.index})")
            owner.setdefault(stream.key, shard.index)
    if clashes:
        more = f" and {len(clashes) - 5} more" if len(clashes) > 5 else ""
        raise MergeRefused(f"stream(s) held by more than one shard: {', '.join(clashes[:5])}{more}; "
                           "each episode stream must come from exactly one shard")
    systems = base.started.systems
    episodes = int(base.started.dataset.get("episodes", 0))
    strangers = sorted({k.system for k in owner} - set(systems))
    if strangers:
        raise MergeRefused(f"streams of system(s) {', '.join(strangers)} that run {run_ids[0]!r} did not start")
    if len(owner) != len(systems) * episodes:
        raise MergeRefused(f"the shards hold {len(owner)} episode streams; run {run_ids[0]!r} started "
                           f"{len(systems)} system(s) x {episodes} episodes = {len(systems) * episodes}: "
                           "a shard is missing")


def merge_order(shards: Sequence[_Shard]) -> list[tuple[_Shard, _Stream]]:
    """Episode streams by system (the run's order), shard, then where they start in their shard."""
    systems = list(shards[0].started.systems)
    pairs = [(shard, stream) for shard in shards for stream in shard.streams]
    return sorted(pairs, key=lambda p: (systems.index(p[1].key.system), p[0].index, p[1].first_seq))


class _Writer:
    """Appends rows to a new ledger file with a fresh seq and hash chain, in batches."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self.conn, self.seq, self.prev = conn, 0, GENESIS_HASH
        self.rows: list[dict[str, Any]] = []
        self.streams: list[list[Any]] = []

    def stream(self, key: StreamKey, version: int, rows: list[dict[str, Any]]) -> None:
        stream_no = len(self.streams) + 1
        if [r["stream_version"] for r in rows] != list(range(1, version + 1)):
            raise MergeRefused(f"stream {key}: versions do not run 1..{version}")  # verify() has already said so
        for row in rows:
            self.seq += 1
            row.update(seq=self.seq, stream_no=stream_no, prev_hash=self.prev)
            row["hash"] = self.prev = chain_hash(self.prev, canonical_bytes(row))
            self.rows.append(row)
        self.streams.append([stream_no, *key.as_tuple(), version])
        if len(self.rows) >= _BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            import pyarrow as pa  # here, not at the top: `ledgermem run` imports this module and loads no Arrow

            self.conn.register("_merge_batch", pa.Table.from_pylist(self.rows, schema=events_arrow_schema()))
            self.conn.execute("INSERT INTO events SELECT * FROM _merge_batch")
            self.conn.unregister("_merge_batch")
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.conn.executemany("INSERT INTO streams VALUES (?, ?, ?, ?, ?)", self.streams)


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    result = conn.execute(sql, params)
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, values)) for values in result.fetchall()]


def _write_events(shards: list[_Shard], run_id: str, partial: Path) -> None:
    with Ledger(partial) as out:
        conn = out.conn
        for shard in shards:
            quoted = str(shard.path.resolve()).replace("'", "''")  # ATTACH takes no parameters
            conn.execute(f"ATTACH '{quoted}' AS shard{shard.index} (READ_ONLY)")
        conn.begin()
        writer = _Writer(conn)
        base = shards[0]
        writer.stream(StreamKey(run_id), 1, _rows(conn, f"SELECT * FROM shard{base.index}.events WHERE seq = ?",
                                                  [base.started_seq]))
        for shard, stream in merge_order(shards):
            rows = _rows(conn, f"SELECT * FROM shard{shard.index}.events WHERE stream_no = ? ORDER BY stream_version",
                         [stream.stream_no])
            writer.stream(stream.key, stream.version, rows)
        writer.close()
        for shard in shards:  # the bytes of the shards' blocks go with their events
            if conn.execute("SELECT 1 FROM duckdb_tables() WHERE database_name = ? AND table_name = 'blobs'",
                            [f"shard{shard.index}"]).fetchone():
                conn.execute(f"INSERT INTO blobs SELECT * FROM shard{shard.index}.blobs s WHERE NOT EXISTS (SELECT 1 "
                             "FROM blobs b WHERE b.sha256 = s.sha256 AND b.key_id IS NOT DISTINCT FROM s.key_id)")
        conn.commit()
        for shard in shards:
            conn.execute(f"DETACH shard{shard.index}")


def _write_keys(shards: list[_Shard], partial: Path) -> None:
    if not any(s.keys for s in shards):
        return
    store = KeyStore(key_path(partial))
    try:
        for shard in shards:
            store.adopt(shard.keys)
    finally:
        store.close()


def _finish(partial: Path, run_id: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """Append run_finished with the merged run's metrics; the new ledger must verify."""
    with Ledger(partial) as ledger:
        metrics = compute_metrics(outcomes_from_ledger(ledger, run_id))
        run_stream = StreamKey(run_id)
        ledger.append(run_stream, [RunFinished(metrics=without_timing(metrics))],
                      expected_version=ledger.stream_version(run_stream))
        report = ledger.verify()
        if not report.ok:
            raise EvaluationError(f"the merged ledger does not verify at seq {report.first_broken_seq}: "
                                  f"{report.reason}; nothing written")
        ledger.conn.execute("CHECKPOINT")
        return report.events, metrics


def merge_shards(shard_paths: Sequence[Path], target: Path, *, overwrite: bool = False) -> MergeResult:
    """Check the shard ledgers and merge them into a new ledger at `target` (a run's `ledger.duckdb`)."""
    if not shard_paths:
        raise MergeRefused("no shards to merge")
    read = [_read_shard(i, Path(p)) for i, p in enumerate(shard_paths)]
    run_ids, shards = [r for r, _ in read], [s for _, s in read]
    _check_together(run_ids, shards)
    run_id, target = run_ids[0], Path(target)
    if target.exists() and not overwrite:
        raise RunExists(f"{target}: a ledger is already there; pass --force to merge again")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.merging-{uuid.uuid4().hex}")
    leftovers = [partial, Path(key_path(partial))]
    try:
        _write_events(shards, run_id, partial)
        _write_keys(shards, partial)
        events, metrics = _finish(partial, run_id)
        if Path(key_path(partial)).exists():
            os.replace(key_path(partial), key_path(target))
        else:
            Path(key_path(target)).unlink(missing_ok=True)  # a merge over an earlier one with keys
        os.replace(partial, target)
    finally:
        for leftover in leftovers:
            for path in (leftover, Path(f"{leftover}.wal")):
                path.unlink(missing_ok=True)
    # The checkpoints of a ledger this merge replaced vouch for events that are gone with it (as `run --force`
    # removes the run folder); the merged ledger gets its own.
    checkpoint_path(target).unlink(missing_ok=True)
    with Ledger(target, read_only=True) as ledger:
        rebuild_file(ledger, projection_path(target))
        signed = sign_finished_run(ledger)
    write_outputs(target, run_id)
    return MergeResult(run_id, target, len(shards), events, sum(len(s.streams) for s in shards) + 1, metrics,
                       signed)
