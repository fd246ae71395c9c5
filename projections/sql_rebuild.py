"""Every SCD-2 projection rebuilt from the events by set-based SQL, with no fold.

`rebuild_sql` gives exactly what `projections.materialise.rebuild` gives
(same rows, values, `version_id`s and order) but computes it in DuckDB:
each table's attributes after every event that touches a key are running
window aggregates over that key's events, a version starts where the
attributes differ from the previous event's (LAG) and ends at the next such
change (LEAD). Nothing iterates over events in Python, so it scales with
DuckDB rather than with the interpreter.

The registry (`fact_versions`) is the one part that is not a window over a
single key: the newest surviving value of a slot depends on every
observation of it. It is computed at each moment an observation of the slot
changed, by joining those moments to the observations valid then; the cost
grows with the square of the number of observations of one slot in one
episode (the fold's grows with the square of the episode's length).

The event source is any table or view with the ledger's `events` columns,
holding plaintext (for a sealed run, a decrypting view), for streams that
`evolve` accepts (the SQL does not re-check what the fold would refuse).
Intermediate results are temporary tables named `_rb_*` on the caller's
connection. The SQL lives in `rebuild_*.sql` beside this module; values
are parameters, and the only identifier substituted is the source's name,
quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import Any

import duckdb

from ledger.events import EVENT_TYPES
from ledger.keys import ERASED, PREFIX
from ledger.store import Ledger
from projections.errors import ProjectionError
from projections.scd2 import TABLES

History = dict[str, list[dict[str, Any]]]

#: Staging steps, in order: (file, block).
_STAGES: tuple[tuple[str, str], ...] = (
    ("rebuild_stage.sql", "streams"),
    ("rebuild_stage.sql", "events"),
    ("rebuild_stage.sql", "epochs"),
    ("rebuild_summaries.sql", "summary_states"),
    ("rebuild_facts.sql", "fact_intervals"),
)
#: Where each projection's final query lives.
_OUTPUTS: dict[str, str] = {
    "summary_versions": "rebuild_summaries.sql",
    "fact_versions": "rebuild_facts.sql",
    "index_versions": "rebuild_indexes.sql",
    "raw_records": "rebuild_records.sql",
    "window_versions": "rebuild_records.sql",
}
_TEMP_TABLES = ("_rb_fact_iv", "_rb_summary", "_rb_epochs", "_rb_streams", "_rb_ev")
_SOURCE_VIEW = "_rb_source"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


@cache
def _blocks(filename: str) -> dict[str, str]:
    text = resources.files("projections").joinpath(filename).read_text(encoding="utf-8")
    parts = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    return {name: body.strip().rstrip(";") for name, body in zip(parts[1::2], parts[2::2])}


def _quoted(name: str) -> str:
    """`name` or `schema.name` as a quoted identifier; anything else is refused."""
    parts = name.split(".")
    if not all(_IDENTIFIER.fullmatch(p) for p in parts):
        raise ValueError(f"events={name!r}: expected a table or view name like 'events' or 'main.events'")
    return ".".join(f'"{p}"' for p in parts)


def _execute(conn: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    # DuckDB refuses named parameters a statement does not use.
    wanted = set(re.findall(r"\$(\w+)", sql))
    return conn.execute(sql, {k: v for k, v in params.items() if k in wanted})


def _check_schema_versions(conn: duckdb.DuckDBPyConnection) -> None:
    # The SQL reads payloads as the event classes define them now; an older payload would need the
    # upcasters that `decode` applies, which exist only in Python.
    for event_type, version in conn.execute("SELECT DISTINCT event_type, schema_version FROM _rb_ev").fetchall():
        current = EVENT_TYPES[event_type].schema_version
        if version != current:
            raise ProjectionError(
                f"{event_type} events at schema version {version} (current: {current}): "
                "the SQL rebuild reads current payloads only; use projections.materialise.rebuild"
            )


@contextmanager
def _staged(conn: duckdb.DuckDBPyConnection, events: str, run_id: str | None) -> Iterator[None]:
    """The intermediate tables, as temporary tables of this connection, dropped afterwards."""
    # Temporary objects (not a cursor) because the source may itself be a temporary view or use
    # functions registered on this very connection, such as `decrypt`.
    params: dict[str, Any] = {"run_id": run_id, "erased": ERASED}
    try:
        conn.execute(f"CREATE OR REPLACE TEMP VIEW {_SOURCE_VIEW} AS SELECT * FROM {_quoted(events)}")
        for filename, block in _STAGES:
            _execute(conn, _blocks(filename)[block], params)
        _check_schema_versions(conn)
        yield
    finally:
        for table in _TEMP_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS temp.{table}")
        conn.execute(f"DROP VIEW IF EXISTS temp.{_SOURCE_VIEW}")


def _fetch(conn: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    result = _execute(conn, _blocks(_OUTPUTS[table])[table], {"erased": ERASED, "table": table})
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, row)) for row in result.fetchall()]


def rebuild_sql(
    conn: duckdb.DuckDBPyConnection, events: str = "events", run_id: str | None = None
) -> History:
    """Every projection's full history from the events in `events`, as `materialise.rebuild` returns it.

    `events` names a table or view with the ledger's `events` columns and plaintext values.
    """
    with _staged(conn, events, run_id):
        return {spec.name: _fetch(conn, spec.name) for spec in TABLES}


def rebuild_sql_ledger(ledger: Ledger, run_id: str | None = None) -> History:
    """`rebuild_sql` over a ledger's own `events` table, whose values must be stored in clear."""
    # Ciphertext would come out as the projections' values; a sealing run seals every turn's text.
    if ledger.conn.execute(_blocks("rebuild_stage.sql")["sealed"], {"prefix": PREFIX, "run_id": run_id}).fetchone():
        raise ProjectionError(
            f"{ledger.path}: holds sealed values; pass rebuild_sql a view of the events with them decrypted"
        )
    return rebuild_sql(ledger.conn, "events", run_id)
