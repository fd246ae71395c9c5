"""PostgreSQL DDL for the ledger and its projections, derived from the same schemas.

For teams that load an export into PostgreSQL: the types follow the Arrow
schemas the DuckDB tables are made from, so the two never drift apart.
"""

from __future__ import annotations

import pyarrow as pa

from ledgermem.ledger.schema import events_arrow_schema
from ledgermem.projections.scd2 import TABLES, arrow_schema

_PG = {
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.int16(): "SMALLINT",
    pa.string(): "TEXT",
    pa.float64(): "DOUBLE PRECISION",
    pa.bool_(): "BOOLEAN",
    pa.timestamp("us"): "TIMESTAMP",
    pa.list_(pa.string()): "TEXT[]",
}


def _pg_type(t: pa.DataType) -> str:
    if t in _PG:
        return _PG[t]
    if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
        return "JSONB"  # (slot, value) pairs: JSONB keeps them queryable without a composite type
    raise TypeError(f"no PostgreSQL type for {t}")


def _table(name: str, schema: pa.Schema) -> str:
    cols = ",\n  ".join(f"{f.name} {_pg_type(f.type)}{'' if f.nullable else ' NOT NULL'}" for f in schema)
    return f"CREATE TABLE IF NOT EXISTS {name} (\n  {cols}\n);"


def postgres_ddl() -> str:
    parts = [_table("events", events_arrow_schema())]
    parts += [_table(spec.name, arrow_schema(spec)) for spec in TABLES]
    parts.append("CREATE INDEX IF NOT EXISTS events_stream ON events (run_id, system, episode_id, stream_version);")
    parts += [
        f"CREATE INDEX IF NOT EXISTS {spec.name}_asof ON {spec.name} (run_id, system, episode_id, valid_from_seq);"
        for spec in TABLES
    ]
    return "\n\n".join(parts) + "\n"
