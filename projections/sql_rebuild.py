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

The SCD-2 versioning is written once, here, from the tables' specs
(`projections.scd2.TABLES`, the same key columns the fold versions by):
each file's queries compute a table's state after every event that touches
a key, and the two macros `{{ versions(table, states) }}` (the events at
which the state changes, each with the next one: where a version opens and
closes) and `{{ rows(table, versions) }}` (the table's rows: stream, key,
attributes, `version_id` and validity interval, in the fold's order) are
rendered into the text by `scd2_versions` and `scd2_rows`. A table whose
window also gives each touch the state before it and after the next touch
(`{{ next_touch }}` there) uses `{{ versions(table, states, previous=..,
following=..) }}` (`scd2_settled_versions`), which needs no further window
for nearly all of its keys.

The windows sort narrow rows: where a state holds texts, the window
carries the seq of the event that wrote them and the texts are joined to
the versions afterwards.

The rows of the result never pass through Python on the way: each
projection's final query streams, as Arrow, into a DuckDB database that
belongs to the result (`SqlHistory`), and rows become dicts only when a
caller reads them. Ten million events give millions of projection rows;
as Python dicts they took most of a replay's time and nearly all of its
memory.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, overload

import duckdb

from ledgermem.ledger.events import event_class
from ledgermem.ledger.keys import ERASED, PREFIX
from ledgermem.ledger.store import Ledger
from ledgermem.projections.errors import ProjectionError
from ledgermem.projections.scd2 import STREAM_COLS, TABLES, TableSpec, order_keys

if TYPE_CHECKING:
    import pyarrow as pa  # its readers and tables come from DuckDB, which loads pyarrow when asked for one

History = dict[str, list[dict[str, Any]]]
_BATCH_ROWS = 65_536


class ProjectionRows(Sequence[dict[str, Any]]):
    """One projection's rows, in `materialise.rebuild`'s order, kept in the result's DuckDB database.

    A sequence of dicts that are made only as they are read (`iter`,
    indexing); equal to a list of dicts holding the same rows in the same
    order. `arrow()` and `batches()` give the rows as Arrow, and the table
    is `history.conn`'s table of the same name, for SQL.
    """

    def __init__(self, database: _Database, name: str, rows: int) -> None:
        self._database, self.name, self._rows = database, name, rows

    def __len__(self) -> int:
        return self._rows

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        return self._database.conn.cursor()  # each reader its own: several may be open at once

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self._cursor() as cur:
            # A scan gives the rows in the order they were inserted (the result's database keeps
            # DuckDB's default `preserve_insertion_order`), which is the final query's ORDER BY.
            result = cur.execute(f'SELECT * FROM "{self.name}"')
            names = [d[0] for d in result.description or ()]
            while chunk := result.fetchmany(_BATCH_ROWS):
                yield from (dict(zip(names, row)) for row in chunk)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        position = index + self._rows if index < 0 else index
        if not 0 <= position < self._rows:
            raise IndexError(f"{self.name}: row {index} of {self._rows}")
        with self._cursor() as cur:
            result = cur.execute(f'SELECT * FROM "{self.name}" LIMIT 1 OFFSET ?', [position])
            names = [d[0] for d in result.description or ()]
            return dict(zip(names, result.fetchall()[0]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which do not hash

    def batches(self, rows: int = _BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        with self._cursor() as cur:
            yield from cur.sql(f'SELECT * FROM "{self.name}"').to_arrow_reader(rows)

    def arrow(self) -> pa.Table:
        with self._cursor() as cur:
            return cur.sql(f'SELECT * FROM "{self.name}"').to_arrow_table()

    def __repr__(self) -> str:
        return f"<ProjectionRows {self.name}: {self._rows} rows>"


class _Database:
    """The in-memory DuckDB database of one result, and the folder it spills to; gone with its last user."""

    def __init__(self, memory_limit: str | None) -> None:
        self.spill = tempfile.mkdtemp(prefix="ledgermem-rebuild-")
        config: dict[str, str | bool | int | float | list[str]] = {"temp_directory": self.spill}
        if memory_limit is not None:
            config["memory_limit"] = f"{_kib(memory_limit)}KiB"
        self.conn = duckdb.connect(":memory:", config=config)
        self.close = weakref.finalize(self, _discard, self.conn, self.spill)


class SqlHistory(Mapping[str, ProjectionRows]):
    """What `rebuild_sql` returns: every projection's history, in a DuckDB database of its own.

    The rows never become Python objects unless read, so a rebuild of a
    large ledger holds them in DuckDB's storage (which spills to disk past
    its memory limit), not in the interpreter. The database lives as long
    as this object or any of its `ProjectionRows` does, or until `close()`;
    `conn` is its connection, in which each projection is a table of its name.
    """

    def __init__(self, memory_limit: str | None = None) -> None:
        self._database = _Database(memory_limit)
        self._tables: dict[str, ProjectionRows] = {}

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        return self._database.conn

    @property
    def _spill(self) -> str:
        return self._database.spill

    def _receive(self, name: str, rows: pa.RecordBatchReader) -> None:
        """Store a projection's rows as they stream in, in their order."""
        try:
            self.conn.register("_rb_incoming", rows)
            self.conn.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _rb_incoming')
        finally:
            self.conn.unregister("_rb_incoming")
            rows.close()
        count = self.conn.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]
        self._tables[name] = ProjectionRows(self._database, name, int(count))

    def __getitem__(self, name: str) -> ProjectionRows:
        return self._tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def rows(self) -> int:
        """Rows in all projections together."""
        return sum(len(t) for t in self._tables.values())

    def close(self) -> None:
        self._database.close()

    def __enter__(self) -> SqlHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _discard(conn: duckdb.DuckDBPyConnection, folder: str) -> None:
    conn.close()
    shutil.rmtree(folder, ignore_errors=True)


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
    "pin_versions": "rebuild_pins.sql",
}
_TEMP_TABLES = ("_rb_fact_iv", "_rb_summary", "_rb_epochs", "_rb_streams", "_rb_ev")
_SOURCE_VIEW = "_rb_source"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


_SPECS = {spec.name: spec for spec in TABLES}
_MACRO = re.compile(
    r"\{\{\s*(?:(versions|rows)\((\w+),\s*(\w+)(?:,\s*previous=(\w+))?(?:,\s*following=(\w+))?\)|(next_touch))\s*\}\}"
)
#: `{{ next_touch }}`: in a window named `k` over a key's touches, where the next touch is.
NEXT_TOUCH = "lead(seq) OVER k AS lead_seq, lead(turn) OVER k AS lead_turn"


def scd2_versions(spec: TableSpec, states: str, previous: str | None = None) -> str:
    """The rows of `states` at which a key's state changes, each with where the next change is.

    `states` has one row per event that touched a key: `sk` (the stream's
    number), `epoch`, the spec's key columns, `seq`, `turn` and `a`, the key's
    attributes after the event as a struct of the spec's attribute columns
    (NULL: the key is absent). A row opens a version where `a` differs from
    the state before it, which is the previous row's `a` unless `previous`
    names a column of `states` that holds it (or is `NULL`: every row of
    `states` opens a version, the caller having kept only those; a NULL `a`
    then still closes the version before it); `next_seq` and `next_turn`
    are where the following version opens (NULL: none does in the epoch).
    """
    window = f"WINDOW k AS (PARTITION BY {', '.join(['sk', 'epoch', *(n for n, _ in spec.key)])} ORDER BY seq)"
    before = "lag(a) OVER k" if previous is None else previous
    opens = "true" if before == "NULL" else f"a IS DISTINCT FROM {before}"
    inner = f"SELECT *, {opens} AS _opens FROM {states}" + (f" {window}" if previous is None else "")
    return (
        "SELECT * EXCLUDE (_opens), lead(seq) OVER k AS next_seq, lead(turn) OVER k AS next_turn\n"
        f"FROM ({inner})\nWHERE _opens\n{window}"
    )


def scd2_rows(spec: TableSpec, versions: str) -> str:
    """A table's rows from `scd2_versions`' rows, as the fold writes them and in its order.

    A version is valid from its own event to the next version's, or else to
    the end of its epoch (the next `episode_started`, or open while current);
    a NULL state is no row. `version_id` is `scd2.version_id` computed in SQL.
    """
    stream = [f"st.{name}" for name, _ in STREAM_COLS]
    keys = [f"v.{name}" for name, _ in spec.key]
    attrs = [f"v.a.{name} AS {name}" for name, _ in spec.attrs]
    return (
        f"SELECT {', '.join([*stream, *keys, *attrs])},\n"
        f"       left(sha256(concat_ws(chr(31), {', '.join([*stream, '$table', *keys])},\n"
        "                             CAST(v.seq AS VARCHAR))), 20) AS version_id,\n"
        "       v.seq AS valid_from_seq,\n"
        "       CASE WHEN v.next_seq IS NULL THEN ep.end_seq ELSE v.next_seq END AS valid_to_seq,\n"
        "       v.turn AS valid_from_turn,\n"
        "       CASE WHEN v.next_seq IS NULL THEN ep.end_turn ELSE v.next_turn END AS valid_to_turn\n"
        f"FROM {versions} v\n"
        "JOIN _rb_streams st USING (sk)\n"
        "JOIN _rb_epochs ep USING (sk, epoch)\n"
        "WHERE v.a IS NOT NULL\n"
        f"ORDER BY {', '.join(order_keys(spec))}"
    )


def scd2_settled_versions(spec: TableSpec, states: str, previous: str, following: str) -> str:
    """`scd2_versions`' rows from `states` that already know their neighbours, mostly without a window.

    `states` has, besides `scd2_versions`' columns, the state before the
    row (`previous`), the state after the next touch of the key
    (`following`) and where that touch is (`lead_seq`, `lead_turn`, from
    `{{ next_touch }}` in the window that computed the states). A version
    that opens at a row closes at the next touch when that touch changes
    the state again, which is nearly always; only the keys where a touch
    that changes nothing follows one that opens a version take
    `scd2_versions` over their opening rows.
    """
    keys = ", ".join(["sk", "epoch", *(n for n, _ in spec.key)])
    opening = (
        f"SELECT * EXCLUDE ({previous}, {following}), "
        f"lead_seq IS NULL OR {following} IS DISTINCT FROM a AS _settled\n"
        f"FROM {states}\nWHERE a IS DISTINCT FROM {previous}"
    )
    unsettled = f"SELECT * FROM _opening WHERE ({keys}) IN (SELECT ({keys}) FROM _opening WHERE NOT _settled)"
    return (
        f"WITH _opening AS MATERIALIZED (\n{opening}\n)\n"
        "SELECT * EXCLUDE (lead_seq, lead_turn, _settled), lead_seq AS next_seq, lead_turn AS next_turn\n"
        "FROM _opening WHERE _settled\n"
        "UNION ALL BY NAME\n"
        "SELECT * EXCLUDE (lead_seq, lead_turn, _settled)\n"
        f"FROM ({scd2_versions(spec, f'({unsettled})', 'NULL')})\nWHERE NOT _settled"
    )


def _render(match: re.Match[str]) -> str:
    macro, table, relation, previous, following, next_touch = match.groups()
    if next_touch:
        return NEXT_TOUCH
    spec = _SPECS[table]
    if macro == "rows":
        return scd2_rows(spec, relation)
    if following is not None:
        if previous is None or previous == "NULL":
            raise ValueError(f"versions({table}, {relation}): following= needs previous= naming a column")
        return scd2_settled_versions(spec, relation, previous, following)
    return scd2_versions(spec, relation, previous)


@cache
def _blocks(filename: str) -> dict[str, str]:
    text = resources.files("ledgermem.projections").joinpath(filename).read_text(encoding="utf-8")
    parts = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    blocks = {name: _MACRO.sub(_render, body.strip().rstrip(";")) for name, body in zip(parts[1::2], parts[2::2])}
    for name, sql in blocks.items():
        if "{{" in sql:
            raise ValueError(
                f"{filename}: block {name}: a macro other than versions(table, states), rows(table, versions) "
                "or next_touch"
            )
    return blocks


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
        cls = event_class(event_type)
        if cls is None:
            continue  # not an event of the memory (those are registered with this package): the SQL reads none
        current = cls.schema_version
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


def _set_memory_limit(conn: duckdb.DuckDBPyConnection, kib: int) -> str:
    """Set DuckDB's memory limit (the database's, not only this connection's); returns the one it replaced."""
    before = str(conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    conn.execute(f"SET memory_limit = '{kib}KiB'")  # SET takes no parameters; an int cannot inject
    return before


def rebuild_sql(
    conn: duckdb.DuckDBPyConnection, events: str = "events", run_id: str | None = None, *,
    memory_limit: str | None = None,
) -> SqlHistory:
    """Every projection's full history from the events in `events`, as `materialise.rebuild` returns it.

    `events` names a table or view with the ledger's `events` columns and
    plaintext values. The result stays in DuckDB (see `SqlHistory`): it
    compares equal to `materialise.rebuild`'s lists of dicts, row for row,
    and gives its rows as dicts only when they are read. `memory_limit`
    (a DuckDB size such as "1GiB") bounds DuckDB's memory while the
    rebuild runs: three quarters for the SQL on `conn`'s database, a
    quarter for the result's; past them DuckDB spills to its temporary
    directory. `conn`'s own limit is put back afterwards.
    """
    total = None if memory_limit is None else _kib(memory_limit)
    history = SqlHistory(None if total is None else f"{max(1, total // _RESULT_SHARE)}KiB")
    replaced = None if total is None else _set_memory_limit(conn, total - total // _RESULT_SHARE)
    try:
        with _staged(conn, events, run_id):
            for spec in TABLES:
                history._receive(spec.name, _output(conn, spec.name))
    except BaseException:
        history.close()
        raise
    finally:
        if replaced is not None:
            conn.execute("SET memory_limit = " + _quoted_size(replaced))
    return history


def _output(conn: duckdb.DuckDBPyConnection, table: str) -> pa.RecordBatchReader:
    """A projection's final query, streamed as Arrow batches in its order."""
    sql = _blocks(_OUTPUTS[table])[table]
    wanted = set(re.findall(r"\$(\w+)", sql))
    params = {k: v for k, v in {"erased": ERASED, "table": table}.items() if k in wanted}
    return conn.sql(sql, params=params).to_arrow_reader(_BATCH_ROWS)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B\s*", re.IGNORECASE)
_RESULT_SHARE = 4  # the result's database gets a quarter of a memory limit: it only appends, then is read


def _quoted_size(setting: str) -> str:
    """A memory limit as `current_setting` gave it, checked and quoted for SET."""
    _kib(setting)
    return f"'{setting.strip()}'"


def _kib(limit: str) -> int:
    """A DuckDB size ('512MB', '2GiB': powers of 1000, or of 1024 with an 'i') in KiB."""
    match = _SIZE.fullmatch(limit)
    if match is None:
        raise ValueError(f"memory_limit={limit!r}: expected a size such as '512MB' or '2GiB'")
    number, unit, binary = match.groups()
    power = "KMGT".index(unit.upper()) + 1 if unit else 0
    return max(1, int(float(number) * (1024 if binary else 1000) ** power // 1024))


def rebuild_sql_ledger(ledger: Ledger, run_id: str | None = None, *, memory_limit: str | None = None) -> SqlHistory:
    """`rebuild_sql` over a ledger's own `events` table, whose values must be stored in clear."""
    # Ciphertext would come out as the projections' values; a sealing run seals every turn's text.
    if ledger.conn.execute(_blocks("rebuild_stage.sql")["sealed"], {"prefix": PREFIX, "run_id": run_id}).fetchone():
        raise ProjectionError(
            f"{ledger.path}: holds sealed values; pass rebuild_sql a view of the events with them decrypted"
        )
    return rebuild_sql(ledger.conn, "events", run_id, memory_limit=memory_limit)
