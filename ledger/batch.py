"""Many rows into DuckDB in one statement, by parameters: one list per column, no Arrow.

`unnest_sql(columns)` is a SELECT that turns one list parameter per column
into rows (DuckDB zips the lists of one SELECT position by position and casts
each to its column's type once); `insert` writes rows with it. An append and
a projection flush go this way, so a run loads neither pyarrow nor numpy
(about 35 MiB of resident memory). For a turn's few rows it costs less than
registering an Arrow table; for thousands about twice as much, still well
under a millisecond per hundred rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import duckdb

#: (name, DuckDB type) of each column, in table order; names and types come from the code, never from input.
Columns = tuple[tuple[str, str], ...]


@cache
def unnest_sql(columns: Columns) -> str:
    """`SELECT unnest(?::T[]) AS name, ...`: the rows whose columns are the parameters, in list order."""
    return "SELECT " + ", ".join(f'unnest(?::{t}[]) AS "{name}"' for name, t in columns)


def params(columns: Columns, rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The list parameter of each column: rows are mappings by column name or sequences in column order."""
    if rows and isinstance(rows[0], Mapping):
        return [[row[name] for row in rows] for name, _ in columns]  # type: ignore[call-overload]
    return [list(values) for values in zip(*rows)] if rows else [[] for _ in columns]


def insert(conn: duckdb.DuckDBPyConnection, table: str, columns: Columns,
           rows: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]]) -> None:
    """Insert `rows` (every column of `table`, in order) in one statement; nothing when there are none."""
    if rows:
        conn.execute(f"INSERT INTO {table} {unnest_sql(columns)}", params(columns, rows))
