"""The SQL sandbox every connection to a run's data goes through.

`ledgermem sql`, the notebook helpers and the service all open a run with
`memory.runs.open_run`, which attaches the run's files and then calls
`lock_down` on the connection. Two fences, each enough on its own for the
attacks they name:

1. The database itself (DuckDB's settings, not a string filter): once the
   run's files are attached, `enable_external_access` is turned off, so no
   file but the attached databases (and, for a Parquet export, exactly the
   export's files listed in `allowed_paths`) can be opened, written, listed
   or attached, and no extension installed or loaded; `lock_configuration`
   then refuses every `SET`/`RESET`/`PRAGMA` that would turn it back on.
2. The statement (`read_only`): a query is parsed by DuckDB's own parser
   and must be exactly one read statement — `SELECT`, `WITH`, `FROM`,
   `VALUES`, `TABLE`, `DESCRIBE`, `SHOW`, `SUMMARIZE`, or `EXPLAIN` of one of
   those. `ATTACH`, `DETACH`, `COPY`, `EXPORT`/`IMPORT DATABASE`, `SET`,
   `RESET`, `USE`, `PRAGMA`, `CALL`, `CREATE` (temporary objects too),
   `INSERT`/`UPDATE`/`DELETE`, `INSTALL`/`LOAD`, transactions and several
   statements at once are refused with one line naming the statement.

What it does not do: it does not hide anything *inside* the run (every table
and the raw ledger bytes of the attached files stay readable, that is the
point), it bounds neither time nor memory of a query, and Python code in the
same process (a notebook cell) can always open files by other means. DuckDB's
allow-list does not tell reading from writing: an export's own Parquet files
(and the in-memory tables an export is folded into) are kept from a `COPY` or
an `INSERT` by the statement check alone, so code that runs SQL it did not
write must pass it through `read_only` (or `execute`) as `ledgermem sql` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from ledgermem.memory.errors import SqlRefused

#: Shown after every refusal: what a query on a run may be.
ALLOWED = ("a query on a run is one read-only SELECT (WITH, DESCRIBE, SHOW, EXPLAIN too), run in a sandbox "
           "that opens no file outside the run")

# What each kind of statement would do, after the statement's own first word: "COPY reads or writes files".
_WHY: dict[str, str] = {
    "ATTACH": "opens another database",
    "DETACH": "changes the databases attached",
    "COPY": "reads or writes files",
    "COPY_DATABASE": "writes a database",
    "EXPORT": "writes files",
    "PRAGMA": ("changes settings, reads or writes files (PRAGMA, IMPORT DATABASE, COPY FROM DATABASE); for a "
               "table's columns use DESCRIBE <table> or SELECT * FROM pragma_table_info('<table>')"),
    "SET": "changes settings",
    "VARIABLE_SET": "changes settings",
    "CREATE": "makes tables, views, macros or secrets (temporary ones too)",
    "CREATE_FUNC": "defines functions",
    "INSERT": "changes data",
    "UPDATE": "changes data",
    "DELETE": "changes data",
    "MERGE_INTO": "changes data",
    "ALTER": "changes the schema",
    "DROP": "removes objects",
    "LOAD": "adds extensions",
    "EXTENSION": "adds extensions",
    "CALL": "runs a procedure; call a table function as SELECT * FROM f()",
    "TRANSACTION": "is transaction control, not a query",
    "VACUUM": "rewrites storage",
    "ANALYZE": "rewrites statistics",
    "PREPARE": "defines statements",
    "EXECUTE": "runs prepared statements",
    "MULTI": "runs several statements (PIVOT outside a SELECT); write it inside a SELECT",
}

# Leading whitespace and comments, then EXPLAIN [ANALYZE] [(options)]: what follows must itself be a read.
_LEAD = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_EXPLAIN = re.compile(r"explain\s+(?:analy[sz]e\s+)?(?:\((?:[^()']|'[^']*')*\)\s*)?", re.IGNORECASE)


def lock_down(conn: duckdb.DuckDBPyConnection, *, files: Iterable[str | Path] = ()) -> None:
    """Seal `conn`'s database: no file but those attached and `files`, no extension, no setting changed after.

    Call it after the run's files are attached and its functions registered:
    from here on the connection (and every cursor of it, and every other
    connection of this process to the same database) can read what is
    attached and nothing else on the machine, and cannot undo this. The
    `files` are read by views (a Parquet export's `events`) and stay readable.
    """
    paths = [str(Path(f).resolve()) for f in files]
    if paths:
        listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
        conn.execute(f"SET allowed_paths = [{listing}]")  # SET takes no parameters
    for setting in ("autoinstall_known_extensions", "autoload_known_extensions", "python_enable_replacements",
                    "enable_external_access"):
        conn.execute(f"SET {setting} = false")
    conn.execute("SET lock_configuration = true")


def is_locked(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether `lock_down` (or the same settings) applies to `conn`'s database."""
    row = conn.execute("SELECT current_setting('enable_external_access'), "
                       "current_setting('lock_configuration')").fetchone()
    return row is not None and row[0] is False and row[1] is True


def read_only(sql: str) -> str:
    """`sql` if it is one read-only statement; else `SqlRefused` naming what it is (a syntax error raises DuckDB's)."""
    statements = duckdb.extract_statements(sql)
    if len(statements) != 1:
        found = "no statement" if not statements else f"{len(statements)} statements"
        raise SqlRefused(f"refused: {found} in the query; {ALLOWED}")
    statement = statements[0]
    kind = statement.type.name
    if kind == "SELECT":
        return sql
    if kind == "EXPLAIN":
        text = statement.query
        lead = _LEAD.match(text)
        explain = _EXPLAIN.match(text, lead.end() if lead else 0)
        inner = duckdb.extract_statements(text[explain.end():]) if explain else []
        if len(inner) == 1 and inner[0].type.name == "SELECT":
            return sql
        raise SqlRefused(f"refused: EXPLAIN of anything but a SELECT (EXPLAIN ANALYZE runs it); {ALLOWED}")
    lead = _LEAD.match(statement.query)
    word = re.match(r"[A-Za-z_]+", statement.query[lead.end() if lead else 0:])
    verb = word.group(0).upper() if word else kind
    why = _WHY.get(kind, f"is a {kind} statement, not a read")
    raise SqlRefused(f"refused: {verb} {why}; {ALLOWED}")


def execute(conn: duckdb.DuckDBPyConnection, sql: str,
            params: Any = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of one read-only query on a locked-down connection.

    What the sandbox stops raises `SqlRefused`; any other database error (a
    syntax error, an unknown table) is DuckDB's own.
    """
    if not is_locked(conn):
        raise SqlRefused("refused: this connection is not sandboxed (open the run with open_run)")
    checked = read_only(sql)
    try:
        result = conn.execute(checked, params)
        names = [d[0] for d in result.description or ()]
        return names, result.fetchall()
    except duckdb.PermissionException as exc:
        raise SqlRefused(f"refused: {_first_line(exc)}; {ALLOWED}") from exc
    except duckdb.InvalidInputException as exc:
        if "configuration has been locked" not in str(exc):
            raise
        raise SqlRefused(f"refused: {_first_line(exc)}; {ALLOWED}") from exc


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
