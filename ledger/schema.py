"""The `events` table, and the codec between its rows and registered event classes.

The columns are declared once here with their DuckDB types: the envelope,
the typed columns (`TYPED_COLUMN_TYPES`, fixed here whatever event types are
registered, so every process makes the same table) and the trailer.
`events_ddl()` is the DuckDB DDL made from them and `events_arrow_schema()`
the Arrow schema (for Parquet and bulk paths; it imports pyarrow on first
use, so appending and reading a ledger load no Arrow); `encode`/`decode`
turn an event into a row and back, by the type name the class registered
(`ledger.events.register`); `canonical_bytes` is what the hash chain hashes.
A golden file in the tests pins the schema so a change to it is a reviewed
diff.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from ledgermem.ledger.blocks import PUBLIC_KEYS as _BLOCK_PUBLIC
from ledgermem.ledger.errors import InvalidEvent, MalformedEvent, UnknownEventType
from ledgermem.ledger.events import TYPED_COLUMNS, Event, event_class, is_registered

if TYPE_CHECKING:
    import pyarrow as pa

GENESIS_HASH = "0" * 64

#: A column's type, spelled as DuckDB spells it; the Arrow type follows from it (`arrow_type`).
SqlType = str

#: Envelope columns (not event fields), in column order: (name, type, nullable).
ENVELOPE: tuple[tuple[str, SqlType, bool], ...] = (
    ("seq", "BIGINT", False),
    ("event_id", "VARCHAR", False),
    ("stream_no", "INTEGER", False),
    ("run_id", "VARCHAR", False),
    ("system", "VARCHAR", False),
    ("episode_id", "VARCHAR", False),
    ("stream_version", "BIGINT", False),
    ("event_type", "VARCHAR", False),
    ("schema_version", "SMALLINT", False),
    ("recorded_at", "TIMESTAMP", False),
)
TRAILER: tuple[tuple[str, SqlType, bool], ...] = (
    ("payload", "VARCHAR", False),
    ("prev_hash", "VARCHAR", False),
    ("hash", "VARCHAR", False),
)

_SCALARS: dict[Any, SqlType] = {
    int: "BIGINT",
    str: "VARCHAR",
    float: "DOUBLE",
    bool: "BOOLEAN",
}


def arrow_type(sql_type: SqlType) -> pa.DataType:
    """The Arrow type of a column of this DuckDB type (imports pyarrow)."""
    import pyarrow as pa

    if sql_type.endswith("[]"):
        return pa.list_(arrow_type(sql_type[:-2]))
    if sql_type.startswith("STRUCT(") and sql_type.endswith(")"):
        members = [m.strip().split(" ", 1) for m in sql_type[len("STRUCT("):-1].split(",")]
        return pa.struct([(name, arrow_type(t)) for name, t in members])
    scalars = {
        "BIGINT": pa.int64(), "INTEGER": pa.int32(), "SMALLINT": pa.int16(), "VARCHAR": pa.string(),
        "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"), "BLOB": pa.binary(),
    }
    return scalars[sql_type]


def _column_type(hint: Any, where: str) -> SqlType:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _column_type(args[0], where)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _column_type(args[0], where) + "[]"
    if hint in _SCALARS:
        return _SCALARS[hint]
    raise TypeError(f"{where}: type {hint!r} cannot be a typed column")


#: The type of each typed column. An event field stored in one must have exactly this type.
TYPED_COLUMN_TYPES: dict[str, SqlType] = {
    "turn": "BIGINT",
    "occurred_at": "VARCHAR",
    "summary_id": "VARCHAR",
    "record_id": "VARCHAR",
    "index_id": "VARCHAR",
    "probe_id": "VARCHAR",
    "slot": "VARCHAR",
    "value": "VARCHAR",
    "ids": "VARCHAR[]",
    "text": "VARCHAR",
    "latency_ms": "DOUBLE",
}
assert tuple(TYPED_COLUMN_TYPES) == TYPED_COLUMNS

_HINTS: dict[type[Event], dict[str, Any]] = {}


def _hints(cls: type[Event]) -> dict[str, Any]:
    """The class's field types, checked once against the typed columns its fields go to."""
    if cls not in _HINTS:
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            col = _column_of(cls, f.name)
            if col is None:
                continue
            where = f"{cls.__name__}.{f.name}"
            try:
                t = _column_type(hints[f.name], where)
            except TypeError as exc:
                raise InvalidEvent(str(exc)) from exc
            if t != TYPED_COLUMN_TYPES[col]:
                raise InvalidEvent(f"{where} is {t} but goes to the typed column {col!r}, "
                                   f"which is {TYPED_COLUMN_TYPES[col]}")
        _HINTS[cls] = hints
    return _HINTS[cls]


def _column_of(cls: type[Event], name: str) -> str | None:
    if name == cls.IDS:
        return "ids"
    return name if name in TYPED_COLUMNS else None


def sealable_columns() -> tuple[str, ...]:
    """The columns of `events` that can hold a sealed value: every string typed column, and `payload`.

    The one list the scans for sealed values (key ids, the plaintext view)
    use. It follows from the fixed column types, not from which packages
    registered their events in this process, so a scan never misses a column
    because the event class that writes to it was not imported.
    """
    return (*(c for c in TYPED_COLUMNS if TYPED_COLUMN_TYPES[c] == "VARCHAR"), "payload")


#: Every column of `events`, in order: (name, type, nullable).
EVENT_COLUMNS: tuple[tuple[str, SqlType, bool], ...] = (
    *ENVELOPE, *((c, TYPED_COLUMN_TYPES[c], True) for c in TYPED_COLUMNS), *TRAILER,
)


@cache
def events_arrow_schema() -> pa.Schema:
    """Envelope + typed columns + trailer, as Arrow (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t), nullable=nl) for n, t, nl in EVENT_COLUMNS])


def events_ddl(table: str = "events") -> str:
    """CREATE TABLE for the ledger, from its columns. No primary key: see SPEC §8."""
    cols = ",\n  ".join(f"{n} {t}{'' if nl else ' NOT NULL'}" for n, t, nl in EVENT_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n  {cols}\n)"


#: The `blobs` table: a block's bytes by content hash, per key (sealed under it) or in clear (key_id null).
BLOBS_COLUMNS: tuple[tuple[str, SqlType, bool], ...] = (
    ("sha256", "VARCHAR", False),
    ("key_id", "VARCHAR", True),
    ("size", "BIGINT", False),
    ("data", "BLOB", False),
)


@cache
def blobs_arrow_schema() -> pa.Schema:
    """The `blobs` table as Arrow (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t), nullable=nl) for n, t, nl in BLOBS_COLUMNS])


def blobs_ddl(table: str = "blobs") -> str:
    return (f"CREATE TABLE IF NOT EXISTS {table} (sha256 VARCHAR NOT NULL, key_id VARCHAR, "
            "size BIGINT NOT NULL, data BLOB NOT NULL)")


def canonical_json(value: Any) -> str:
    """The one JSON spelling used for payloads and hashing."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _thaw(value: Any, hint: Any) -> Any:
    """JSON lists back to the tuples the dataclass declares."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _thaw(value, inner[0]) if len(inner) == 1 else value
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_thaw(v, args[0]) for v in value)
        return tuple(_thaw(v, a) for v, a in zip(value, args))
    return value


@dataclass(frozen=True, slots=True)
class EncodedEvent:
    """An event split into typed columns and a canonical payload."""

    event_type: str
    schema_version: int
    columns: dict[str, Any]
    payload: str


Transform = typing.Callable[[str], str]


def _map_leaves(value: Any, fn: Transform) -> Any:
    """Apply `fn` to a personal field's values: a string, the values of (slot, value) pairs, a dict's values."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, (tuple, list)):
        items = [_map_pair(item, fn) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        # A block reference's hash, type and size address its bytes: they stay readable (`ledger.blocks`).
        public = _BLOCK_PUBLIC if "sha256" in value and "mime" in value else frozenset()
        return {k: v if k in public else _map_leaves(v, fn) for k, v in value.items()}
    return value


def _map_pair(item: Any, fn: Transform) -> Any:
    if isinstance(item, (tuple, list)) and len(item) == 2:
        pair = (item[0], _map_leaves(item[1], fn))  # (slot, value): the slot name stays readable
        return pair if isinstance(item, tuple) else list(pair)
    return _map_leaves(item, fn)


def encode(event: Event, seal: Transform | None = None,
           seal_fields: typing.Mapping[str, Transform | tuple[Transform, ...]] | None = None) -> EncodedEvent:
    """Split an event into typed columns and payload; `seal` encrypts its personal fields.

    `seal_fields` overrides `seal` for some fields: one transform for the
    field, or one per item of a sequence field.
    """
    cls = type(event)
    if not is_registered(cls):
        raise InvalidEvent(f"{cls.__name__} is not a registered event type")
    columns: dict[str, Any] = dict.fromkeys(TYPED_COLUMNS)
    body: dict[str, Any] = {}
    for name, col, personal, sparse, to_float in _layout(cls):
        value = getattr(event, name)
        own = seal_fields.get(name) if seal_fields and personal else None
        if isinstance(own, tuple) and isinstance(value, (tuple, list)):
            items = [_map_pair(item, fn) for item, fn in zip(value, own, strict=True)]
            value = tuple(items) if isinstance(value, tuple) else items
        elif own is not None and not isinstance(own, tuple):
            value = _map_leaves(value, own)
        elif seal is not None and personal:
            value = _map_leaves(value, seal)
        if col is None and sparse and not value:
            continue  # absent while empty: events from before the field existed keep their bytes
        if col is None:
            body[name] = _jsonable(value)
        elif to_float and isinstance(value, int) and not isinstance(value, bool):
            columns[col] = float(value)  # hash what the DOUBLE column will give back
        else:
            columns[col] = list(value) if isinstance(value, tuple) else value
    try:
        payload = canonical_json(body)
    except (TypeError, ValueError) as exc:
        raise InvalidEvent(f"{cls.event_type}: a field cannot be stored as JSON: {exc}") from exc
    return EncodedEvent(cls.event_type, cls.schema_version, columns, payload)


def _is_float_column(col: str) -> bool:
    return TYPED_COLUMN_TYPES.get(col) == "DOUBLE"


_LAYOUTS: dict[type[Event], tuple[tuple[str, str | None, bool, bool, bool], ...]] = {}


def _layout(cls: type[Event]) -> tuple[tuple[str, str | None, bool, bool, bool], ...]:
    """Per field of a registered class, in order: (name, typed column or None, personal, sparse, goes to a
    DOUBLE column). Worked out once per class (its types checked by `_hints`), not for every event encoded."""
    found = _LAYOUTS.get(cls)
    if found is None:
        _hints(cls)
        found = tuple(
            (f.name, col, f.name in cls.PERSONAL, f.name in cls.SPARSE, col is not None and _is_float_column(col))
            for f in fields(cls) for col in (_column_of(cls, f.name),)
        )
        _LAYOUTS[cls] = found
    return found


def decode(
    seq: int, event_type: str, schema_version: int, columns: dict[str, Any], payload: str,
    unseal: Transform | None = None,
) -> Event:
    """A stored row back into its event; `unseal` opens sealed values; errors name the seq."""
    cls = event_class(event_type)
    if cls is None:
        raise UnknownEventType(seq, event_type)
    if schema_version > cls.schema_version:
        raise MalformedEvent(
            seq, f"{event_type} has schema_version {schema_version}, newer than this code ({cls.schema_version})"
        )
    try:
        body = json.loads(payload)
    except (TypeError, ValueError) as exc:
        raise MalformedEvent(seq, f"payload of {event_type} is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise MalformedEvent(seq, f"payload of {event_type} is {type(body).__name__}, expected an object")
    body = upcast(cls, schema_version, body)
    kwargs: dict[str, Any] = {}
    hints = _hints(cls)
    for f in fields(cls):
        col = _column_of(cls, f.name)
        if col is not None:
            raw = columns.get(col)
        elif f.name in body:
            raw = body[f.name]
        else:
            continue  # a default applies
        if f.name in cls.PERSONAL and unseal is not None:
            try:
                raw = _map_leaves(raw, lambda v: unseal(v) if v.startswith("enc1:") else v)
            except ValueError as exc:
                raise MalformedEvent(seq, f"{event_type}.{f.name}: {exc}") from exc
        kwargs[f.name] = _thaw(raw, hints[f.name])
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise MalformedEvent(seq, f"{event_type} does not fit its schema: {exc}") from exc


#: (event_type, from_version) -> function upgrading a payload one version.
UPCASTERS: dict[tuple[str, int], typing.Callable[[dict[str, Any]], dict[str, Any]]] = {}


def upcast(cls: type[Event], version: int, body: dict[str, Any]) -> dict[str, Any]:
    """Apply upcasters until the payload is at the current version of `cls`."""
    current = cls.schema_version
    while version < current:
        body = UPCASTERS[(cls.event_type, version)](body)
        version += 1
    return body


def canonical_bytes(row: dict[str, Any]) -> bytes:
    """The exact bytes the hash chain covers: every column but the two hashes."""
    recorded = row["recorded_at"]
    values = [row[name] if name != "recorded_at" else _iso(recorded) for name in _hashed_columns()]
    return canonical_json(values).encode("utf-8")


@cache
def _hashed_columns() -> tuple[str, ...]:
    return tuple(name for name, _, _ in EVENT_COLUMNS if name not in ("prev_hash", "hash"))


def _iso(ts: datetime | str) -> str:
    return ts if isinstance(ts, str) else ts.isoformat(timespec="microseconds")


#: Marks a value the SQL spelling cannot vouch for: never valid JSON, so never equal to `canonical_bytes`.
_UNSURE = "'?'"


def _sql_element(name: str, t: SqlType, nullable: bool) -> str:
    col = f'"{name}"'
    if t in ("BIGINT", "INTEGER", "SMALLINT"):
        text = f"CAST({col} AS VARCHAR)"
    elif t == "BOOLEAN":
        text = f"CASE WHEN {col} THEN 'true' ELSE 'false' END"
    elif t in ("VARCHAR", "VARCHAR[]"):
        text = f"to_json({col})"
    elif t == "DOUBLE":
        # DuckDB prints a double as its shortest round-trip decimal, as Python's repr does; the
        # guard makes sure the text could only have come from this value.
        text = (f"CASE WHEN CAST(CAST({col} AS VARCHAR) AS DOUBLE) = {col} "
                f"THEN CAST({col} AS VARCHAR) ELSE {_UNSURE} END")
    elif t == "TIMESTAMP":
        text = f"strftime({col}, '\"%Y-%m-%dT%H:%M:%S.%f\"')"
    else:
        raise TypeError(f"column {name!r}: no SQL spelling of canonical JSON for {t}")
    return f"CASE WHEN {col} IS NULL THEN 'null' ELSE {text} END" if nullable else text


@cache
def canonical_sql() -> str:
    """A DuckDB expression over a row of `events` giving `canonical_bytes(row)` as text, for bulk checks.

    Made from the columns, so it follows the columns wherever they go.
    On the rows the ledger writes it spells exactly what `canonical_bytes`
    spells. Where DuckDB's spelling can differ from Python's (a control
    character escaped with upper-case hex, a NaN, a double that does not
    print back to itself) it gives other text, never the same text for
    another row: every element is JSON that decodes to its column's value,
    or is not JSON at all. So a stored hash equal to the SHA-256 of this
    text proves the row is what was hashed; a hash that differs proves
    nothing and is checked again with `canonical_bytes`.
    """
    parts = ", ',', ".join(_sql_element(n, t, nl) for n, t, nl in EVENT_COLUMNS if n not in ("prev_hash", "hash"))
    return f"concat('[', {parts}, ']')"


def chain_hash(prev_hash: str, canonical: bytes) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + b"\n" + canonical).hexdigest()


#: System-time columns: they describe when and how fast, not what happened.
SYSTEM_TIME_COLUMNS = frozenset({"latency_ms"})
_ATTEMPT_TIME = frozenset({"latency_ms", "wait_s"})


def event_id_for(stream: tuple[str, str, str], version: int, encoded: EncodedEvent) -> str:
    """Deterministic idempotency key: same event at the same place, same id.

    System-time columns are left out, so two runs of the same data give the
    same ids and a retried append is recognised whatever its latency was.
    """
    columns = {k: v for k, v in encoded.columns.items() if k not in SYSTEM_TIME_COLUMNS}
    payload = encoded.payload
    if '"attempts":[{' in payload:  # an LLM call's attempts carry their timing too
        data = json.loads(payload)
        data["attempts"] = [{k: v for k, v in a.items() if k not in _ATTEMPT_TIME} for a in data["attempts"]]
        payload = canonical_json(data)
    material = canonical_json([*stream, version, encoded.event_type, columns, payload])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]
