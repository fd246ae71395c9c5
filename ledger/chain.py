"""Verifying the hash chain: every row's hash, the links between rows, contiguity.

The chain is written once, at append time, over `canonical_bytes(row)`
(ledger/schema.py). Re-serialising every row in Python to check it costs
ten times what hashing does (SPEC §8), so verification lets DuckDB spell
the canonical bytes of the whole table at once (`canonical_sql`) and
stream them as Arrow; Python only hashes them, and checks the links and
stream versions a batch at a time. A row whose stored hash does not match
DuckDB's spelling is not condemned on that evidence: it is read back and
checked with `canonical_bytes`, the spelling the chain was written with.
A small ledger (a run's own) is read as Python rows instead, each spelled by
`canonical_bytes` at once: the same checks, without Arrow and numpy.

The report is the one a row-by-row walk in seq order gives: the first row
that breaks the chain, and why. A ledger is stored in seq order, so the
walk first reads the rows as stored; anything out of the ordinary there
(a row out of order, a gap, a broken link) sends it back to the start in
seq order, where it can say which row is first.
"""

from __future__ import annotations

import binascii
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from importlib import resources
from typing import TYPE_CHECKING, Any

import duckdb

from ledgermem.ledger.schema import GENESIS_HASH, canonical_bytes, canonical_sql, chain_hash

if TYPE_CHECKING:
    import pyarrow as pa

# Rows per Arrow batch: a batch whose bytes stay in the CPU's cache is spelled and hashed faster
# (8k rows cost about 15% less CPU than 64k on a 100k-event ledger).
_BATCH_ROWS = 8192
_RECHECK_ROWS = 2048  # rows in doubt read back per statement
# A ledger of fewer rows is walked through Python rows, not Arrow batches: a run's own ledger (a few thousand
# rows) is checked in a fraction of a second either way, and its process then never loads pyarrow and numpy
# (about 35 MiB). Those rows are read whole and spelled by `canonical_bytes`, a few hundred at a time: DuckDB's
# spelling of a whole table (`canonical_sql`) leaves about 10 MiB more in its allocator than the plain scan.
_ARROW_FROM_ROWS = 100_000
_PYTHON_ROWS = 256

CHANGED = "the stored hash does not match the event's content: the row was changed after it was written"
UNLINKED = "prev_hash does not match the hash of the preceding event"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Result of recomputing the hash chain and the contiguity checks."""

    ok: bool
    events: int
    first_broken_seq: int | None = None
    reason: str = ""


@cache
def _queries() -> dict[str, str]:
    text = resources.files("ledgermem.ledger").joinpath("verify.sql").read_text(encoding="utf-8")
    blocks = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    return {
        name: body.strip().rstrip(";").replace("{canonical}", canonical_sql())
        for name, body in zip(blocks[1::2], blocks[2::2])
    }


class _NotInSeqOrder(Exception):
    """A walk in storage order met a row it cannot judge without reading in seq order."""


@dataclass(frozen=True, slots=True)
class _Row:
    """A row the walk could not accept at once, with what the rows before it said it should be."""

    position: int
    seq: int
    hash: str
    prev_hash: str
    stream_version: int
    last_seq: int  # of the row before it
    want_version: int
    linked: bool  # seq and prev_hash follow from the row before
    hash_ok: bool  # DuckDB's spelling hashes to the stored hash


@dataclass(slots=True)
class ChainWalk:
    """Where a walk along the chain stands: every row read so far agrees with it.

    `part`: the rows are runs of a ledger (a partial Parquet export), so seqs
    may skip and only adjacent seqs are linked.
    """

    part: bool = False
    rows: int = 0
    last_seq: int = 0
    last_hash: str = GENESIS_HASH
    versions: dict[int, int] = field(default_factory=dict)
    broken: VerifyReport | None = None

    def feed(self, batch: pa.RecordBatch, doubts: list[_Row], *, in_order: bool) -> _Row | None:
        """Take a batch of rows; hash doubts go to `doubts`; returns the row that stops the walk, if any."""
        if batch.num_rows == 0:
            return None
        seqs = batch.column(0).to_numpy()  # the batch's own numpy: Arrow loaded it
        if self._accept(batch, seqs):
            return None
        sha256 = hashlib.sha256
        digests = [sha256(m).hexdigest() for m in batch.column(5).to_pylist()]
        hashes: list[str] = batch.column(4).to_pylist()
        prevs: list[str] = batch.column(3).to_pylist()
        columns = zip(seqs.tolist(), batch.column(1).to_pylist(), batch.column(2).to_pylist(), prevs, hashes, digests)
        return self._feed_rows(columns, doubts, in_order=in_order)

    def feed_rows(self, names: list[str], rows: list[tuple[Any, ...]], doubts: list[_Row], *,
                  in_order: bool) -> _Row | None:
        """`feed` for whole rows of `events` fetched as Python tuples (`names`: their columns): each row's
        bytes are spelled by `canonical_bytes`, the spelling the chain was written with, and the checks are
        the same, row by row."""
        sha256 = hashlib.sha256

        def columns() -> Iterator[tuple[Any, ...]]:
            for values in rows:
                row = dict(zip(names, values))
                prev = row["prev_hash"]
                signed = (prev or "").encode("utf-8") + b"\n" + canonical_bytes(row)  # as `verify.sql` spells it
                yield row["seq"], row["stream_no"], row["stream_version"], prev, row["hash"], sha256(signed).hexdigest()

        return self._feed_rows(columns(), doubts, in_order=in_order)

    def _accept(self, batch: pa.RecordBatch, seqs: Any) -> bool:
        """Take the batch whole if every row holds: no Python object per row but the bytes it hashes.

        The hashes and prev_hashes are compared as the bytes Arrow holds them
        in, back to back, once every one of them is 64 characters long.
        """
        hashes, prevs = _hex_run(batch.column(4)), _hex_run(batch.column(3))
        if hashes is None or prevs is None:
            return False
        if binascii.hexlify(_digests(batch.column(5))) != hashes:
            return False
        if not self._linked(seqs, prevs, hashes):
            return False
        after = _versions_after(batch.column(1).to_numpy(), batch.column(2).to_numpy(), self.versions)
        if after is None:
            return False
        self.versions.update(after)
        self.rows += batch.num_rows
        self.last_seq, self.last_hash = int(seqs[-1]), hashes[-_HEX:].decode("ascii")
        return True

    def _linked(self, seqs: Any, prevs: bytes, hashes: bytes) -> bool:
        """Whether every seq follows and every link holds, for the batch as a whole (hashes as from `_hex_run`)."""
        import numpy as np

        steps = np.diff(seqs)
        first_linked = prevs[:_HEX] == self.last_hash.encode("utf-8")
        if not self.part:
            return bool(seqs[0] == self.last_seq + 1 and (steps == 1).all()
                        and first_linked and prevs[_HEX:] == hashes[:-_HEX])
        if not (seqs[0] > self.last_seq and (steps > 0).all()):
            return False
        if seqs[0] == self.last_seq + 1 and not first_linked:
            return False
        adjacent = steps == 1
        # Fixed-width items: equal as numpy strings means equal byte for byte.
        after = np.frombuffer(prevs, dtype=f"S{_HEX}")[1:][adjacent]
        before = np.frombuffer(hashes, dtype=f"S{_HEX}")[:-1][adjacent]
        return bool((after == before).all())

    def _feed_rows(self, rows: Iterator[tuple[Any, ...]], doubts: list[_Row], *, in_order: bool) -> _Row | None:
        known, part = self.versions, self.part
        last_seq, last_hash, n = self.last_seq, self.last_hash, self.rows
        try:
            for seq, stream, version, prev, digest, computed in rows:
                if part:
                    linked = seq > last_seq and (seq != last_seq + 1 or prev == last_hash)
                else:
                    linked = seq == last_seq + 1 and prev == last_hash
                want = known.get(stream, 0) + 1
                if not (linked and computed == digest and version == want):
                    row = _Row(n + 1, seq, digest, prev, version, last_seq, want, linked, computed == digest)
                    if not linked or version != want:
                        if not in_order:
                            raise _NotInSeqOrder
                        return row
                    doubts.append(row)
                known[stream] = version
                n, last_seq, last_hash = n + 1, seq, digest
            return None
        finally:
            self.last_seq, self.last_hash, self.rows = last_seq, last_hash, n


_HEX = 64  # characters in a SHA-256 hex digest


def _hex_run(column: pa.Array) -> bytes | None:
    """A string column's values back to back, if every one is present and `_HEX` bytes long; else None."""
    import numpy as np
    import pyarrow as pa

    if not pa.types.is_string(column.type) or column.null_count:
        return None
    _, offsets, data = column.buffers()
    if offsets is None or data is None:
        return None
    ends = np.frombuffer(offsets, dtype=np.int32, count=len(column) + 1, offset=column.offset * 4)
    if not (np.diff(ends) == _HEX).all():
        return None
    run: bytes = data.slice(int(ends[0]), int(ends[-1] - ends[0])).to_pybytes()
    return run


def _digests(column: pa.Array) -> bytes:
    """The SHA-256 digests of a binary column's values, back to back."""
    import numpy as np
    import pyarrow as pa

    sha256 = hashlib.sha256
    if not pa.types.is_binary(column.type) or column.null_count:
        return b"".join([sha256(m).digest() for m in column.to_pylist()])
    # Slices of Arrow's own buffer: a bytes object per row would copy every row once more.
    _, offsets, data = column.buffers()
    ends = np.frombuffer(offsets, dtype=np.int32, count=len(column) + 1, offset=column.offset * 4).tolist()
    values = memoryview(data if data is not None else b"")
    return b"".join([sha256(values[a:b]).digest() for a, b in zip(ends, ends[1:])])


def _versions_after(streams: Any, versions: Any, known: dict[int, int]) -> dict[int, int] | None:
    """Each stream's last version in the batch, if every version follows the one before it; else None."""
    import numpy as np

    order = np.argsort(streams, kind="stable")  # a stream's rows keep the batch's order
    s, v = streams[order], versions[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    steps = np.diff(v) == 1
    steps[starts[1:] - 1] = True  # where one stream ends and the next begins is no step
    if not steps.all():
        return None
    for stream, first in zip(s[starts].tolist(), v[starts].tolist()):
        if first != known.get(stream, 0) + 1:
            return None
    ends = np.r_[starts[1:] - 1, len(s) - 1]
    return dict(zip(s[ends].tolist(), v[ends].tolist()))


def check_chain(conn: duckdb.DuckDBPyConnection, *, part: bool = False) -> ChainWalk:
    """Walk the `events` of `conn`; `broken` says where the chain breaks, if it does.

    Reads through cursors of its own, so a result the caller left open on
    `conn` is neither disturbed nor in the way.
    """
    with conn.cursor() as reader, conn.cursor() as lookup:
        try:
            return _walk(reader, lookup, part, in_order=False)
        except _NotInSeqOrder:
            return _walk(reader, lookup, part, in_order=True)


def _walk(reader: duckdb.DuckDBPyConnection, lookup: duckdb.DuckDBPyConnection, part: bool, *,
          in_order: bool) -> ChainWalk:
    walk = ChainWalk(part)
    ((count,),) = reader.execute("SELECT count(*) FROM events").fetchall()
    if count < _ARROW_FROM_ROWS:
        result = reader.execute("SELECT * FROM events" + (" ORDER BY seq, hash" if in_order else ""))
        names = [d[0] for d in result.description or ()]
        try:
            return _walk_batches(walk, lookup, iter(lambda: result.fetchmany(_PYTHON_ROWS), []), part, in_order,
                                 partial(walk.feed_rows, names))
        finally:
            abort = getattr(result, "abort", None)  # DuckDB >= 2 refuses the next statement while rows are unread
            if abort is not None:
                abort()
    stream = reader.sql(_queries()["rows_in_seq_order" if in_order else "rows"]).to_arrow_reader(_BATCH_ROWS)
    try:
        return _walk_batches(walk, lookup, stream, part, in_order, walk.feed)
    finally:
        stream.close()  # frees the cursor


def _walk_batches(walk: ChainWalk, lookup: duckdb.DuckDBPyConnection, batches: Any, part: bool, in_order: bool,
                  feed: Any) -> ChainWalk:
    doubts: list[_Row] = []
    for batch in batches:
        stop = feed(batch, doubts, in_order=in_order)
        if doubts and (stop is not None or len(doubts) >= _RECHECK_ROWS):
            changed = _first_changed(lookup, doubts)
            doubts.clear()
            if changed is not None:
                walk.broken = _changed(changed, in_order)
                return walk
        if stop is not None:
            walk.broken = VerifyReport(False, stop.position, stop.seq, _reason(lookup, stop, part))
            return walk
    changed = _first_changed(lookup, doubts)
    if changed is not None:
        walk.broken = _changed(changed, in_order)
    return walk


def _changed(row: _Row, in_order: bool) -> VerifyReport:
    if not in_order:
        raise _NotInSeqOrder  # a repeat stored later would come first in seq order
    return VerifyReport(False, row.position, row.seq, CHANGED)


def _first_changed(lookup: duckdb.DuckDBPyConnection, doubts: list[_Row]) -> _Row | None:
    """The first row in doubt whose hash `canonical_bytes` does not reproduce."""
    for start in range(0, len(doubts), _RECHECK_ROWS):
        chunk = doubts[start:start + _RECHECK_ROWS]
        stored = _stored_rows(lookup, [r.seq for r in chunk])
        for row in chunk:
            if not _hash_holds(row, stored):
                return row
    return None


def _hash_holds(row: _Row, stored: dict[int, list[dict[str, Any]]]) -> bool:
    same = [r for r in stored.get(row.seq, []) if (r["hash"], r["prev_hash"]) == (row.hash, row.prev_hash)]
    return any(chain_hash(r["prev_hash"], canonical_bytes(r)) == r["hash"] for r in same)


def _stored_rows(lookup: duckdb.DuckDBPyConnection, seqs: list[int]) -> dict[int, list[dict[str, Any]]]:
    result = lookup.execute(
        "SELECT * FROM events WHERE seq BETWEEN ? AND ? AND list_contains(?, seq)", [min(seqs), max(seqs), seqs]
    )
    names = [d[0] for d in result.description or ()]
    out: dict[int, list[dict[str, Any]]] = {}
    for values in result.fetchall():
        row = dict(zip(names, values))
        out.setdefault(row["seq"], []).append(row)
    return out


def _reason(lookup: duckdb.DuckDBPyConnection, row: _Row, part: bool) -> str:
    """Why `row` breaks the chain, checked in the order a row-by-row walk checks."""
    if not row.linked:
        if part and row.seq <= row.last_seq:
            return f"seq {row.seq} follows seq {row.last_seq}: the sequence has a repeat"
        if not part and row.seq != row.last_seq + 1:
            return f"seq {row.seq} follows seq {row.last_seq}: the sequence has a gap or a repeat"
        return UNLINKED
    if not row.hash_ok and not _hash_holds(row, _stored_rows(lookup, [row.seq])):
        return CHANGED
    return f"stream_version {row.stream_version} where {row.want_version} was expected"
