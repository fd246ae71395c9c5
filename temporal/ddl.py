"""PostgreSQL DDL for the ledger and its projections, derived from the same schemas.

For teams that load an export into PostgreSQL: the types follow the column
types the DuckDB tables are made from, so the two never drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable

from ledgermem.ledger.schema import EVENT_COLUMNS, SqlType
from ledgermem.projections.scd2 import TABLES, columns

_PG = {
    "BIGINT": "BIGINT",
    "INTEGER": "INTEGER",
    "SMALLINT": "SMALLINT",
    "VARCHAR": "TEXT",
    "DOUBLE": "DOUBLE PRECISION",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "VARCHAR[]": "TEXT[]",
}


def _pg_type(t: SqlType) -> str:
    if t in _PG:
        return _PG[t]
    if t.startswith("STRUCT(") and t.endswith(")[]"):
        return "JSONB"  # (slot, value) pairs: JSONB keeps them queryable without a composite type
    raise TypeError(f"no PostgreSQL type for {t}")


def _table(name: str, cols: Iterable[tuple[str, SqlType, bool]]) -> str:
    spelled = ",\n  ".join(f"{n} {_pg_type(t)}{'' if nullable else ' NOT NULL'}" for n, t, nullable in cols)
    return f"CREATE TABLE IF NOT EXISTS {name} (\n  {spelled}\n);"


def postgres_ddl() -> str:
    parts = [_table("events", EVENT_COLUMNS)]
    parts += [_table(spec.name, ((n, t, True) for n, t in columns(spec))) for spec in TABLES]
    parts.append("CREATE INDEX IF NOT EXISTS events_stream ON events (run_id, system, episode_id, stream_version);")
    parts += [
        f"CREATE INDEX IF NOT EXISTS {spec.name}_asof ON {spec.name} (run_id, system, episode_id, valid_from_seq);"
        for spec in TABLES
    ]
    return "\n\n".join(parts) + "\n"
