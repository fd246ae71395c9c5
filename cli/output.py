"""How every command prints a result: JSON for machines (`--json`), rich tables for people.

`emit` is the one way a command hands back its result; `rows_table` turns
a list of rows into a table; `metrics_table` and `category_table` are the
run's headline tables (`run`, `replay`, `merge`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click
from rich.table import Table

from ledgermem.cli.main import out
from ledgermem.evaluation.metrics import category_types

__all__ = ["category_table", "emit", "json_text", "metrics_table", "rows_table"]

METRIC_COLUMNS = (
    ("Current_Fact_Acc", "CurAcc"),
    ("History_Fact_Acc", "HisAcc"),
    ("Memory_Point_Acc", "MemPt"),
    ("Constraint_Survival", "Constr"),
    ("Open_Loop_Survival", "OpenLoop"),
    ("Staleness_Rate", "Stale"),
    ("Avg_Active_Chain_Tokens", "ChainTok"),
    ("Avg_Rendered_Context_Tokens", "CtxTok"),
    ("Tool_Call_Success_Rate", "ToolOK"),
    ("probes", "Probes"),
)
#: Shown (before Probes) when a run has benchmark categories or probes the offline backend cannot answer:
#: accuracy on the answerable probes, how many need a model, and what the memory kept of the evidence.
LABELLED_COLUMNS = (
    ("Answerable_Acc", "Answerable"),
    ("Needs_Model_N", "NeedsModel"),
    ("Evidence_Retained_Rate", "EvKept"),
    ("Evidence_Reachable_Rate", "EvReach"),
    ("Evidence_In_Prompt_Rate", "EvPrompt"),
)


def json_text(data: Any, *, indent: int | None = 2, ascii_only: bool = False) -> str:
    """`data` as JSON text; values JSON has no type for (datetimes, paths) as their text."""
    return json.dumps(data, ensure_ascii=ascii_only, indent=indent, default=str)


def emit(data: Any, *, as_json: bool, human: Callable[[], None] | None = None, title: str | None = None,
         columns: Sequence[str] | None = None, indent: int | None = 2, ascii_only: bool = False) -> None:
    """Print a command's result: `data` as JSON with `as_json`, else `human()`, else `data` (rows) as a table."""
    if as_json:
        click.echo(json_text(data, indent=indent, ascii_only=ascii_only))
    elif human is not None:
        human()
    else:
        out.print(rows_table(data, title=title, columns=columns))


def rows_table(rows: Sequence[Mapping[str, Any] | Sequence[Any]], *, title: str | None = None,
               columns: Sequence[str] | None = None) -> Table:
    """One column per key of the first row (or per name in `columns`); None reads NULL."""
    if columns is None:
        first = rows[0] if rows else None
        columns = [str(c) for c in first] if isinstance(first, Mapping) else ["(no rows)"]
    table = Table(title=title or None)
    for col in columns:
        table.add_column(str(col))
    for row in rows:
        values = row.values() if isinstance(row, Mapping) else row
        table.add_row(*("NULL" if v is None else str(v) for v in values))
    return table


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _with_ci(row: dict[str, Any], key: str) -> str:
    if row.get(key) is not None and row.get(f"{key}_lo") is not None:
        lo, hi = (f"{row[key + e]:.2f}".removeprefix("0") for e in ("_lo", "_hi"))
        return f"{row[key]:.2f} [{lo},{hi}]"
    return _fmt(row.get(key))


def metrics_table(metrics: dict[str, dict[str, Any]], title: str) -> Table:
    """The run's headline; a column that is `n/a` for every system is left out."""
    columns = list(METRIC_COLUMNS)
    if any("Needs_Model_N" in row for row in metrics.values()):
        columns[-1:-1] = LABELLED_COLUMNS
    columns = [(key, label) for key, label in columns if any(row.get(key) is not None for row in metrics.values())]
    table = Table(title=title)
    table.add_column("system")
    for _, label in columns:
        table.add_column(label, justify="right")
    for system, row in metrics.items():
        table.add_row(system, *(_with_ci(row, key) for key, _ in columns))
    return table


def category_table(metrics: dict[str, dict[str, Any]], title: str) -> Table | None:
    """Accuracy per benchmark category (`Acc[<type>]`, n in the header); None when the run has none."""
    types = list(dict.fromkeys(t for row in metrics.values() for t in category_types(row)))
    if not types:
        return None
    table = Table(title=title)
    table.add_column("system")
    for t in types:
        ns = {row.get(f"N[{t}]") for row in metrics.values()}
        table.add_column(f"{t} (n={ns.pop()})" if len(ns) == 1 else t, justify="right")
    for system, row in metrics.items():
        table.add_row(system, *(_with_ci(row, f"Acc[{t}]") for t in types))
    return table
