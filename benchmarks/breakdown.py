"""Time per SQL statement of a library call, by handing it a connection that times what it executes.

cProfile sees a DuckDB call as the Python function that made it; this says
which statement the time went to, and how much went to fetching rows into
Python.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
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

    def sql(self, sql: str, params: Any = None, **kwargs: Any) -> Any:
        """A relation whose Arrow export is timed: DuckDB runs the query's blocking part (a sort) there."""
        return _Relation(self._conn.sql(sql, params=params, **kwargs), self, self._label(sql, params))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _Relation:
    def __init__(self, relation: Any, owner: TimingConnection, label: str) -> None:
        self._relation, self._owner, self._label = relation, owner, label

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._relation, name)
        if not name.startswith("to_arrow"):
            return attr

        def export(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self._owner.add(self._label, time.perf_counter() - started)
        return export


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
    lines.append(f"| outside the timed statements (rows streamed on, into Python or another database; glue) "
                 f"| {total - listed:.3f} | {(total - listed) / total:.0%} |")
    lines.append(f"| **total** | {total:.3f} | 100% |")
    return "\n".join(lines)


def _operators(node: dict[str, Any], out: dict[str, float]) -> None:
    """Operator time by kind; each table scan by its table (DuckDB's JSON profile, 1.x and 2.x spellings)."""
    kind = str(node.get("operator_type") or node.get("type") or "")
    seconds = node.get("operator_timing", node.get("timing"))
    if kind == "TABLE_SCAN":
        table = str((node.get("extra_info") or {}).get("Table", "?")).split(".")[-1].strip('"')
        label = f"scan {table} ({node.get('rows_scanned', '?')} rows read)"
    else:
        label = kind.lower().replace("_", " ")
    if kind and seconds is not None:
        out[label] = out.get(label, 0.0) + float(seconds)
    for child in node.get("children", []):
        _operators(child, out)


def planning_and_operators(call: Callable[[duckdb.DuckDBPyConnection], Any], conn: duckdb.DuckDBPyConnection,
                           *, repeat: int = 20) -> str:
    """For a call that runs one statement: median time DuckDB spent planning it and in each operator.

    DuckDB's own profiler (JSON) says what a statement-level timing cannot: how much of one statement is
    binding and optimising, and which table scans cost what.
    """
    rows: dict[str, list[float]] = {}
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        out = f"{folder}/profile.json"
        for _ in range(repeat):
            conn.execute("SET enable_profiling = 'json'")
            conn.execute(f"SET profiling_output = '{out}'")
            started = time.perf_counter()
            call(conn)
            walls.append(time.perf_counter() - started)
            conn.execute("SET enable_profiling = 'no_output'")
            doc = json.loads(Path(out).read_text(encoding="utf-8"))
            found: dict[str, float] = {
                "planning: binding": float(doc["planner"]["total_time"]),
                "planning: optimiser": float(doc["optimizer"]["total_time"]),
                "planning: physical plan": float(doc["physical_planner"]["total_time"]),
            }
            for child in doc.get("children", []) or doc.get("operator", []):
                _operators(child, found)
            found["whole statement (DuckDB's own total)"] = float(doc["query"]["total_time"])
            for label, seconds in found.items():
                rows.setdefault(label, []).append(seconds)
        conn.execute("RESET enable_profiling")
    wall = statistics.median(walls)
    lines = ["| part (median of the runs) | ms | share of the call |", "|---|---:|---:|"]
    for label, values in sorted(rows.items(), key=lambda kv: -statistics.median(kv[1])):
        ms = statistics.median(values) * 1000
        if ms >= 0.01:
            lines.append(f"| {label} | {ms:.2f} | {ms / 1000 / wall:.0%} |")
    lines.append(f"| **the call, as Python sees it** | {wall * 1000:.2f} | 100% |")
    return "\n".join(lines)
