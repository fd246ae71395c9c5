"""Time per SQL statement of a library call, by handing it a connection that times what it executes.

cProfile sees a DuckDB call as the Python function that made it; this says
which statement the time went to, and how much went to fetching rows into
Python.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import duckdb

_CREATE = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(\w+)\s+([\w.\"]+)", re.IGNORECASE)
_FETCH = ("fetchall", "fetchone", "fetchmany")


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--")).strip()


class _Result:
    """A result whose fetches are timed into the owner's `fetch` step."""

    def __init__(self, result: duckdb.DuckDBPyConnection, owner: TimingConnection) -> None:
        self._result, self._owner = result, owner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._result, name)
        if name not in _FETCH:
            return attr

        def fetch(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self._owner.add("fetch rows into Python", time.perf_counter() - started)
        return fetch


class TimingConnection:
    """Delegates to a DuckDB connection; `steps` sums the seconds per statement label.

    SELECT statements are named, in order, from `select_names`; CREATE
    statements by what they create; anything else by its first word.
    """

    def __init__(self, conn: duckdb.DuckDBPyConnection, select_names: Sequence[str] = ()) -> None:
        self._conn = conn
        self._names = list(select_names)
        self._selects = 0
        self.steps: dict[str, float] = {}

    def add(self, label: str, seconds: float) -> None:
        self.steps[label] = self.steps.get(label, 0.0) + seconds

    def _label(self, sql: str, params: Any) -> str:
        text = _strip_comments(sql)
        created = _CREATE.match(text)
        if created:
            return f"create {created.group(1).lower()} {created.group(2)}"
        if isinstance(params, dict) and isinstance(params.get("table"), str):
            return f"query {params['table']}"  # the SQL rebuild names the table it is producing
        first = text.split(None, 1)[0].upper() if text else "?"
        if first in ("SELECT", "WITH"):
            i = self._selects
            self._selects += 1
            if i < len(self._names):
                return f"query {self._names[i]}"
            return "query `" + " ".join(text.split())[:48] + "…`"
        return first.lower()

    def execute(self, sql: str, params: Any = None) -> Any:
        label = self._label(sql, params)
        started = time.perf_counter()
        result = self._conn.execute(sql, params) if params is not None else self._conn.execute(sql)
        self.add(label, time.perf_counter() - started)
        return _Result(result, self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def breakdown(call: Callable[[Any], Any], conn: duckdb.DuckDBPyConnection, select_names: Sequence[str] = (),
              *, repeat: int = 1) -> str:
    """Run `call(timing_connection)` `repeat` times; a Markdown table of seconds per statement, largest first."""
    timing = TimingConnection(conn, select_names)
    started = time.perf_counter()
    for _ in range(repeat):
        timing._selects = 0
        call(timing)
    total = time.perf_counter() - started
    listed = sum(timing.steps.values())
    rows = sorted(timing.steps.items(), key=lambda kv: kv[1], reverse=True)
    lines = ["| step | seconds | share |", "|---|---:|---:|"]
    lines += [f"| {label} | {s:.3f} | {s / total:.0%} |" for label, s in rows]
    lines.append(f"| Python outside the statements (rows into dicts, glue) | {total - listed:.3f} | {(total - listed) / total:.0%} |")
    lines.append(f"| **total** | {total:.3f} | 100% |")
    return "\n".join(lines)
