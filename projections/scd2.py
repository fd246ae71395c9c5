"""SCD-2 read models: every version of every row, with the interval it was valid.

`snapshot(state)` is the current row of every key of every table (pure).
`Projector` folds events through `evolve` and turns consecutive snapshots
into versions: a key that appears opens a version, a key whose attributes
change closes its version and opens the next, a key that disappears is
closed. History is only ever closed, never edited.

Vocabulary (dbt snapshots): `version_id` = hash(key, seq), `valid_from_seq`,
`valid_to_seq` (NULL while current), and the same interval in event time,
`valid_from_turn`, `valid_to_turn`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ledgermem.ledger.store import RecordedEvent, StreamKey
from ledgermem.projections.errors import EvolveError
from ledgermem.projections.state import EpisodeEvent, EpisodeState, evolve

Key = tuple[Any, ...]
Attrs = tuple[Any, ...]

_FACTS = pa.list_(pa.struct([("slot", pa.string()), ("value", pa.string())]))
_STR_LIST = pa.list_(pa.string())


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    key: tuple[tuple[str, pa.DataType], ...]
    attrs: tuple[tuple[str, pa.DataType], ...]


STREAM_COLS = tuple((name, pa.string()) for name in StreamKey.COLUMNS)
SCD_COLS = (
    ("version_id", pa.string()),
    ("valid_from_seq", pa.int64()),
    ("valid_to_seq", pa.int64()),
    ("valid_from_turn", pa.int64()),
    ("valid_to_turn", pa.int64()),
)

TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "summary_versions",
        (("summary_id", pa.string()),),
        (
            ("created_turn", pa.int64()), ("text", pa.string()), ("facts", _FACTS),
            ("overrides", _STR_LIST), ("raw_ids", _STR_LIST), ("status", pa.string()),
            ("archive_reason", pa.string()), ("superseded_by", _STR_LIST), ("index_id", pa.string()),
            ("inferences", _FACTS), ("merged_from", _STR_LIST),
        ),
    ),
    TableSpec(
        "fact_versions",
        (("slot", pa.string()),),
        (("value", pa.string()), ("summary_id", pa.string()), ("erased", pa.bool_())),
    ),
    TableSpec(
        "index_versions",
        (("index_id", pa.string()),),
        (
            ("created_turn", pa.int64()), ("title", pa.string()), ("members", _STR_LIST),
            ("level", pa.int64()), ("live_members", pa.int64()), ("folded_into", pa.string()),
        ),
    ),
    TableSpec(
        "raw_records",
        (("record_id", pa.string()),),
        (
            ("turn", pa.int64()), ("occurred_at", pa.string()), ("user_text", pa.string()),
            ("agent_text", pa.string()), ("source", pa.string()), ("remember", pa.bool_()),
        ),
    ),
    TableSpec("window_versions", (("record_id", pa.string()),), (("turn", pa.int64()),)),
    TableSpec(
        "pin_versions",
        (("pin_id", pa.string()),),
        (
            ("kind", pa.string()), ("created_turn", pa.int64()), ("text", pa.string()), ("origin", pa.string()),
            ("record_id", pa.string()), ("summary_id", pa.string()), ("reinjected", pa.int64()),
            ("shown", pa.bool_()),
        ),
    ),
)
TABLE_NAMES = tuple(t.name for t in TABLES)


def arrow_schema(spec: TableSpec) -> pa.Schema:
    return pa.schema([*STREAM_COLS, *spec.key, *spec.attrs, *SCD_COLS])


def order_keys(spec: TableSpec) -> list[str]:
    """The order of a table's rows (stream, key, then versions in seq order), in the fold and in SQL."""
    return [*(n for n, _ in STREAM_COLS), *(n for n, _ in spec.key), "valid_from_seq"]


def snapshot(state: EpisodeState) -> dict[str, dict[Key, Attrs]]:
    """Current row of every key of every table, as plain tuples. Pure."""
    summaries = {
        (s.summary_id,): (
            s.turn, s.text, tuple(s.facts), s.overrides, s.raw_ids, s.status,
            s.archive_reason, s.superseded_by, s.index_id, tuple(s.inferences), s.merged_from,
        )
        for s in state.summaries.values()
    }
    facts: dict[Key, Attrs] = {(slot,): (value, sid, False) for slot, (value, sid) in state.current_values().items()}
    facts.update({(slot,): (None, None, True) for slot in state.erased_without_value()})
    # A title's live members are the summaries still indexed under it, through the titles folded under it.
    indexes = {
        (e.index_id,): (
            e.turn, e.title, e.members, e.level, sum(s.status == "indexed" for s in state.index_summaries(e)),
            e.folded_into,
        )
        for e in state.indexes.values()
    }
    raw = {(r.record_id,): (r.turn, r.occurred_at, r.user, r.agent, r.source, r.remember) for r in state.raw.values()}
    window = {(rid,): (state.raw[rid].turn,) for rid in state.window}
    pins = {
        (p.pin_id,): (p.kind, p.turn, p.text, p.origin, p.record_id, p.summary_id, p.reinjected, p.shown)
        for p in state.pins.values()
    }
    return {
        "summary_versions": summaries, "fact_versions": facts, "index_versions": indexes,
        "raw_records": raw, "window_versions": window, "pin_versions": pins,
    }


def version_id(stream: tuple[str, str, str], table: str, key: Key, seq: int) -> str:
    material = "\x1f".join([*stream, table, *map(str, key), str(seq)])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:20]


@dataclass(slots=True)
class Delta:
    """What one event changed: versions opened, and versions closed (id, seq, turn)."""

    opened: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    closed: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)

    def merge(self, other: Delta) -> None:
        for t, rows in other.opened.items():
            self.opened.setdefault(t, []).extend(rows)
        for t, closes in other.closed.items():
            self.closed.setdefault(t, []).extend(closes)

    def __bool__(self) -> bool:
        return bool(self.opened or self.closed)


class Projector:
    """Folds one stream's events into its state and its SCD-2 versions."""

    def __init__(self, stream: tuple[str, str, str], *, keep_history: bool = False) -> None:
        self.stream = stream
        self.state = EpisodeState()
        self.last_seq = 0
        self._current = snapshot(self.state)
        self._open: dict[str, dict[Key, dict[str, Any]]] = {t: {} for t in TABLE_NAMES}
        self.history: dict[str, list[dict[str, Any]]] | None = {t: [] for t in TABLE_NAMES} if keep_history else None

    def apply(self, seq: int, event: EpisodeEvent) -> Delta:
        before = self.state
        try:
            self.state = evolve(before, event)
        except EvolveError as exc:
            raise EvolveError(f"seq {seq}: {exc}") from exc
        self.last_seq = seq
        if self.state is before:
            return Delta()
        after = snapshot(self.state)
        delta = Delta()
        for spec in TABLES:
            self._diff(spec, self._current[spec.name], after[spec.name], seq, event.turn, delta)
        self._current = after
        return delta

    def apply_all(self, recorded: Iterable[RecordedEvent]) -> Delta:
        total = Delta()
        for r in recorded:
            total.merge(self.apply(r.seq, r.event))  # type: ignore[arg-type]
        return total

    def _diff(
        self, spec: TableSpec, old: dict[Key, Attrs], new: dict[Key, Attrs], seq: int, turn: int, delta: Delta
    ) -> None:
        opened = self._open[spec.name]
        for key, attrs in old.items():
            if new.get(key) != attrs:
                row = opened.pop(key)
                row["valid_to_seq"], row["valid_to_turn"] = seq, turn
                delta.closed.setdefault(spec.name, []).append((row["version_id"], seq, turn))
        for key, attrs in new.items():
            if old.get(key) != attrs:
                row = self._row(spec, key, attrs, seq, turn)
                opened[key] = row
                delta.opened.setdefault(spec.name, []).append(row)
                if self.history is not None:
                    self.history[spec.name].append(row)

    def _row(self, spec: TableSpec, key: Key, attrs: Attrs, seq: int, turn: int) -> dict[str, Any]:
        row: dict[str, Any] = dict(zip((n for n, _ in STREAM_COLS), self.stream))
        row.update(zip((n for n, _ in spec.key), key))
        for (name, _), value in zip(spec.attrs, attrs):
            row[name] = _cell(name, value)
        row.update(
            version_id=version_id(self.stream, spec.name, key, seq),
            valid_from_seq=seq, valid_to_seq=None, valid_from_turn=turn, valid_to_turn=None,
        )
        return row


def _cell(name: str, value: Any) -> Any:
    if name in ("facts", "inferences"):
        return [{"slot": k, "value": v} for k, v in value]
    return list(value) if isinstance(value, tuple) else value
