"""Questions about the past, as one query each: history, as-of, diff, blame, manifest, anomalies.

Every function takes a DuckDB connection in which the projection tables
(and, for `manifest`, the `events` table) resolve by name, as the CLI's
run connection does, and an `Episode` naming the stream. The SQL lives in
`temporal.sql` beside this module; values go in as parameters, and the only
identifiers ever substituted come from a fixed allow-list.

Bitemporal: `seq` is system time (the order things were recorded), `turn`
is event time (the dialogue turn they belong to). "As of turn T" is the
state after all of turn T's events. Wall-clock time is read through system
time: "as of 2026-11-01T09:00Z" is the state after the last of the
episode's events whose recorded time (`events.recorded_at`, naive UTC) is
not later (`seq_at_time`); before its first event that is the empty state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from typing import Any

import duckdb

from ledgermem.temporal.errors import TemporalError

LAYERS = ("pinned", "window", "registry", "index", "chain", "indexed", "archive")


@dataclass(frozen=True, slots=True)
class Episode:
    run_id: str
    system: str
    episode_id: str

    def params(self) -> dict[str, Any]:
        return {"run": self.run_id, "system": self.system, "episode": self.episode_id}


@cache
def queries() -> dict[str, str]:
    text = resources.files("ledgermem.temporal").joinpath("temporal.sql").read_text(encoding="utf-8")
    blocks = re.split(r"^-- name: (\w+)\s*$", text, flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(blocks[1::2], blocks[2::2])}


def install(conn: duckdb.DuckDBPyConnection) -> None:
    """Create the temporary macros `as_of_seq`, `as_of_turn` and `slot_history` on this connection."""
    for statement in queries()["install"].split(";"):
        if statement.strip():
            conn.execute(statement)


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    wanted = set(re.findall(r"\$(\w+)", sql))
    try:
        result = conn.execute(sql, {k: v for k, v in params.items() if k in wanted})
    except duckdb.CatalogException as exc:
        raise TemporalError(f"the connection does not see the run's tables: {str(exc).splitlines()[0]}") from exc
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, row)) for row in result.fetchall()]


def _query(name: str, **fmt: str) -> str:
    return queries()[name].format(**fmt) if fmt else queries()[name]


def instant(text: str, name: str = "--at") -> datetime:
    """An ISO 8601 time with a timezone (`2026-11-01T09:00Z`, `...+02:00`) as naive UTC, how the ledger records
    `recorded_at`; a time without a timezone is refused (it would mean a different instant on every machine)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TemporalError(f"{name}: {text!r} is not an ISO 8601 time, e.g. 2026-11-01T09:00Z") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise TemporalError(f"{name}: {text!r} has no timezone; add one, e.g. {text.strip()}Z for UTC")
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def seq_at_time(conn: duckdb.DuckDBPyConnection, ep: Episode, at: datetime) -> int:
    """The seq of the episode's last event recorded at or before `at` (0: none was): the system time that
    answers a wall-clock question. `at` is naive UTC (`instant`) or carries its timezone; `conn` sees `events`."""
    return time_position(conn, ep, at)["seq"]


def time_position(conn: duckdb.DuckDBPyConnection, ep: Episode, at: datetime) -> dict[str, int]:
    """`seq_at_time` with the turn of that event (0 and 0 before the episode's first event)."""
    if at.tzinfo is not None:
        at = at.astimezone(timezone.utc).replace(tzinfo=None)
    found = _rows(conn, _query("seq_at_time"), {**ep.params(), "at": at})[0]
    return {"seq": int(found["seq"] or 0), "turn": int(found["turn"] or 0)}


def fact_history(conn: duckdb.DuckDBPyConnection, ep: Episode, slot: str, *,
                 at: datetime | None = None) -> list[dict[str, Any]]:
    """Every value the slot had, with its seq and turn interval (NULL end = still current).

    With `at` (a wall-clock time), the history as it stood then: values recorded later are left out and a
    value that was current then has an open end again.
    """
    rows = _rows(conn, _query("fact_history"), {**ep.params(), "slot": slot})
    if at is None:
        return rows
    upto = seq_at_time(conn, ep, at)
    kept = [r for r in rows if r["valid_from_seq"] <= upto]
    for r in kept:
        if r["valid_to_seq"] is not None and r["valid_to_seq"] > upto:
            r["valid_to_seq"] = r["valid_to_turn"] = None
    return kept


def as_of(conn: duckdb.DuckDBPyConnection, ep: Episode, *, seq: int | None = None,
          turn: int | None = None, at: datetime | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every layer of the memory as of a seq (system time), a turn (event time) or a wall-clock time.

    One statement for all layers: planned, run and fetched once, and
    nothing is installed on the connection. Its rows come flat, tagged by
    layer; each layer's rows are put in the order of that layer's own query
    here, by the same keys. A time is turned into the seq of the last event
    recorded by then (`seq_at_time`).
    """
    if sum(x is not None for x in (seq, turn, at)) != 1:
        raise TemporalError("as_of: give exactly one of seq, turn or at")
    if at is not None:
        seq = seq_at_time(conn, ep, at)
    axis, point = ("seq", seq) if seq is not None else ("turn", turn)
    sql = _as_of_sql(axis)
    wanted = set(re.findall(r"\$(\w+)", sql))
    params = {k: v for k, v in {**ep.params(), "at": point}.items() if k in wanted}
    try:
        result = conn.execute(sql, params)
        names = [d[0] for d in result.description or ()]
        rows = result.fetchall()
    except duckdb.CatalogException as exc:
        raise TemporalError(f"the connection does not see the run's tables: {str(exc).splitlines()[0]}") from exc
    layers = _layers(names, rows)
    summaries = layers["summaries"]
    return {
        "pinned": layers["pinned"],
        "window": layers["window"],
        "registry": layers["registry"],
        "index": layers["index"],
        "chain": [s for s in summaries if s["status"] == "active"],
        "indexed": [s for s in summaries if s["status"] == "indexed"],
        "archive": [s for s in summaries if s["status"] == "archived"],
    }


#: Each layer's order in the `as_of` statement's rows: the ORDER BY of that layer's own query in `temporal.sql`.
_AS_OF_ORDER = {
    "pinned": ("pin_id",),
    "window": ("turn", "record_id"),
    "registry": ("slot",),
    "index": ("index_id",),
    "summaries": ("summary_id",),
}


@cache
def _as_of_columns() -> dict[str, tuple[str, ...]]:
    """Each layer's columns, in order, read off the `as_of` block (`SELECT 'layer' AS layer, a, w.b ... FROM`)."""
    found = re.findall(r"SELECT '(\w+)' AS layer,(.*?)\bFROM\b", queries()["as_of"], flags=re.DOTALL)
    return {layer: tuple(c.strip().rpartition(".")[2] for c in cols.split(",")) for layer, cols in found}


def _order_key(names: tuple[str, ...]) -> Any:
    """Sort key of rows by `names`, as DuckDB orders them by default: values ascending (strings by code point,
    which is how DuckDB's binary collation compares UTF-8), NULLs last."""
    def key(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        return tuple((row[n] is None, row[n] if row[n] is not None else 0) for n in names)
    return key


def _layers(names: list[str], rows: list[tuple[Any, ...]]) -> dict[str, list[dict[str, Any]]]:
    """The `as_of` statement's flat rows as each layer's own rows (its columns only), each layer in its order."""
    where = {name: i for i, name in enumerate(names)}
    picks = {layer: [(c, where[c]) for c in cols] for layer, cols in _as_of_columns().items()}
    out: dict[str, list[dict[str, Any]]] = {layer: [] for layer in picks}
    for row in rows:
        layer = row[0]
        out[layer].append({c: row[i] for c, i in picks[layer]})
    for layer, found in out.items():
        found.sort(key=_order_key(_AS_OF_ORDER[layer]))
    return out


#: The as-of filter on a projection table (its alias, if any, in `{t}`), by time axis: what the macros apply.
_AS_OF_FILTERS = {
    "seq": "{t}valid_from_seq <= $at AND $at < coalesce({t}valid_to_seq, 9223372036854775807)",
    "turn": "{t}valid_from_turn <= $at AND ({t}valid_to_turn IS NULL OR {t}valid_to_turn > $at)",
}


@cache
def _as_of_sql(axis: str) -> str:
    """The `as_of` block with the as-of filter of `axis` written out."""
    where = _AS_OF_FILTERS[axis]
    return queries()["as_of"].rstrip().rstrip(";").format(
        at=where.format(t=""), w_at=where.format(t="w."), r_at=where.format(t="r.")
    )


_KEYS = {"pinned": "pin_id", "window": "record_id", "registry": "slot", "index": "index_id", "chain": "summary_id",
         "indexed": "summary_id", "archive": "summary_id"}


def diff(conn: duckdb.DuckDBPyConnection, ep: Episode, seq_a: int, seq_b: int) -> dict[str, dict[str, list[Any]]]:
    """What entered and what left each layer between two seqs (a changed registry value counts as both)."""
    before, after = as_of(conn, ep, seq=seq_a), as_of(conn, ep, seq=seq_b)
    out: dict[str, dict[str, list[Any]]] = {}
    for layer in LAYERS:
        key = _KEYS[layer]
        old = {r[key]: r for r in before[layer]}
        new = {r[key]: r for r in after[layer]}
        entered = [new[k] for k in new if k not in old or (layer == "registry" and new[k] != old[k])]
        left = [old[k] for k in old if k not in new or (layer == "registry" and new[k] != old[k])]
        out[layer] = {"entered": entered, "left": left}
    return out


@dataclass(frozen=True, slots=True)
class Blame:
    """Where the current value of a slot came from."""

    slot: str
    value: str | None
    summary: dict[str, Any] | None  # the summary holding it now, with its status and index
    records: list[dict[str, Any]] = field(default_factory=list)  # the raw records it was written from
    overrode: list[dict[str, Any]] = field(default_factory=list)  # earlier values it replaced, newest first
    erased: bool = False


def blame(conn: duckdb.DuckDBPyConnection, ep: Episode, slot: str) -> Blame:
    """The turn, raw record and summary that produced a slot's current value, through overrides and titles."""
    history = fact_history(conn, ep, slot)
    if not history:
        raise TemporalError(f"blame: slot {slot!r} never had a value in {ep.run_id}/{ep.system}/{ep.episode_id}")
    current = history[-1]
    if current["valid_to_seq"] is not None or current["summary_id"] is None:
        return Blame(slot, None, None, erased=bool(current["erased"]))
    summary = _current_summary(conn, ep, current["summary_id"])
    records = [_record(conn, ep, rid) for rid in summary["raw_ids"]]
    overrode = [h for h in reversed(history[:-1]) if h["summary_id"] != current["summary_id"]]
    return Blame(slot, current["value"], summary, [r for r in records if r], overrode)


def _current_summary(conn: duckdb.DuckDBPyConnection, ep: Episode, summary_id: str) -> dict[str, Any]:
    rows = _rows(conn, "SELECT summary_id, status, archive_reason, index_id, created_turn, text, raw_ids, "
                       "superseded_by, overrides FROM summary_versions WHERE run_id = $run AND system = $system "
                       "AND episode_id = $episode AND summary_id = $sid AND valid_to_seq IS NULL",
                 {**ep.params(), "sid": summary_id})
    if not rows:
        raise TemporalError(f"blame: summary {summary_id} has no current version")
    return rows[0]


def _record(conn: duckdb.DuckDBPyConnection, ep: Episode, record_id: str) -> dict[str, Any] | None:
    rows = _rows(conn, "SELECT record_id, turn, occurred_at, user_text, agent_text FROM raw_records "
                       "WHERE run_id = $run AND system = $system AND episode_id = $episode "
                       "AND record_id = $rid AND valid_to_seq IS NULL", {**ep.params(), "rid": record_id})
    return rows[0] if rows else None


def manifest(conn: duckdb.DuckDBPyConnection, ep: Episode, *, probe_id: str | None = None,
             turn: int | None = None) -> list[dict[str, Any]]:
    """The exact ids (and token costs) the model saw in each prompt: "why did it believe X at turn N"."""
    return _rows(conn, _query("manifest"), {**ep.params(), "probe": probe_id, "turn": turn})


def anomalies(conn: duckdb.DuckDBPyConnection, ep: Episode) -> dict[str, list[dict[str, Any]]]:
    """Patterns worth a look: values that flip back (A→B→A), live summaries left stale by a missed override,
    and slot names the gate suspected of naming an attribute the episode already had.

    The last is read from the `events` table, as `manifest` is: on a connection that sees only the
    projection tables its key is absent (not an empty list, which would say none was suspected).
    """
    found = {name: _rows(conn, _query(f"anomaly_{name}"), ep.params()) for name in ("flip_flop", "stale_live")}
    if _sees(conn, "events"):
        found["slot_alias_suspected"] = _rows(conn, _query("anomaly_slot_alias_suspected"), ep.params())
    return found


def _sees(conn: duckdb.DuckDBPyConnection, table: str) -> bool:
    try:
        conn.execute(f"SELECT 1 FROM {table} LIMIT 0")  # `table` comes from the callers above, never from input
    except duckdb.CatalogException:
        return False
    return True
