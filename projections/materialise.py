"""Materialised SCD-2 tables in DuckDB, kept in step with the ledger.

Each append of a turn writes that turn's deltas in the same transaction as
its events, and records the last seq applied, so the tables and the ledger
can never disagree after a crash. `rebuild` folds a ledger from scratch
into fresh history (used by replay and to check the live tables).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb
import pyarrow as pa

from ledger.store import Ledger, RecordedEvent, StreamKey
from projections.scd2 import TABLES, Delta, Projector, TableSpec, arrow_schema

_DUCK = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.bool_(): "BOOLEAN",
    pa.list_(pa.string()): "VARCHAR[]",
    pa.list_(pa.struct([("slot", pa.string()), ("value", pa.string())])): "STRUCT(slot VARCHAR, value VARCHAR)[]",
}


def table_ddl(spec: TableSpec) -> str:
    cols = ", ".join(f"{f.name} {_DUCK[f.type]}" for f in arrow_schema(spec))
    return f"CREATE TABLE IF NOT EXISTS {spec.name} ({cols})"


def create_tables(conn: duckdb.DuckDBPyConnection) -> None:
    for spec in TABLES:
        conn.execute(table_ddl(spec))
    conn.execute(
        "CREATE TABLE IF NOT EXISTS projection_state (run_id VARCHAR, system VARCHAR, episode_id VARCHAR, "
        "last_seq BIGINT)"
    )


def write_delta(conn: duckdb.DuckDBPyConnection, stream: StreamKey, delta: Delta, last_seq: int) -> None:
    """Close and open versions, and move the stream's high-water mark; inside the caller's transaction."""
    for spec in TABLES:
        closes = delta.closed.get(spec.name)
        if closes:
            conn.executemany(
                f"UPDATE {spec.name} SET valid_to_seq = ?, valid_to_turn = ? WHERE version_id = ?",
                [[seq, turn, vid] for vid, seq, turn in closes],
            )
        rows = delta.opened.get(spec.name)
        if rows:
            batch = pa.Table.from_pylist(rows, schema=arrow_schema(spec))
            conn.register("_proj_batch", batch)
            conn.execute(f"INSERT INTO {spec.name} SELECT * FROM _proj_batch")
            conn.unregister("_proj_batch")
    key = list(stream.as_tuple())
    conn.execute("DELETE FROM projection_state WHERE run_id = ? AND system = ? AND episode_id = ?", key)
    conn.execute("INSERT INTO projection_state VALUES (?, ?, ?, ?)", [*key, last_seq])


class LiveProjection:
    """A stream's projector whose deltas are written with each append."""

    def __init__(self, stream: StreamKey, history: Iterable[RecordedEvent] = ()) -> None:
        self.stream = stream
        self.projector = Projector(stream.as_tuple())
        self.projector.apply_all(history)

    def before_commit(self, conn: duckdb.DuckDBPyConnection, recorded: tuple[RecordedEvent, ...]) -> None:
        delta = self.projector.apply_all(recorded)
        write_delta(conn, self.stream, delta, self.projector.last_seq)


def rebuild(ledger: Ledger, run_id: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every projection's full history, folded from the ledger alone."""
    out: dict[str, list[dict[str, Any]]] = {spec.name: [] for spec in TABLES}
    for stream, _ in ledger.streams(run_id):
        if not stream.episode_id:
            continue
        projector = Projector(stream.as_tuple(), keep_history=True)
        projector.apply_all(ledger.read(stream=stream))
        assert projector.history is not None
        for name, rows in projector.history.items():
            out[name].extend(rows)
    return {name: sorted(rows, key=_order(name)) for name, rows in out.items()}


def _order(name: str) -> Any:
    spec = next(s for s in TABLES if s.name == name)
    keys = ["run_id", "system", "episode_id", *(n for n, _ in spec.key), "valid_from_seq"]
    return lambda row: tuple(row[k] for k in keys)


def read_tables(conn: duckdb.DuckDBPyConnection, run_id: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The materialised tables, in the same order as `rebuild` returns them."""
    out = {}
    for spec in TABLES:
        keys = ", ".join(["run_id", "system", "episode_id", *(n for n, _ in spec.key), "valid_from_seq"])
        where, params = ("WHERE run_id = ?", [run_id]) if run_id else ("", [])
        result = conn.execute(f"SELECT * FROM {spec.name} {where} ORDER BY {keys}", params)
        names = [d[0] for d in result.description or ()]
        out[spec.name] = [dict(zip(names, row)) for row in result.fetchall()]
    return out
