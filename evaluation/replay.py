"""Replay: rebuild every projection and every metric from the ledger alone.

No LLM is called: every response the run depended on is in its
`llm_called` events, and every judgement in `probe_judged`. The replay
folds each stream from scratch, compares the result row for row with the
materialised tables, recomputes the metrics and compares them with what
the live run recorded in `run_finished`.

A run's ledger may grow after the run: the service's fact intake records a
user's statement as a new turn (its summarizer call included), an erasure
shreds a key. Those events are recorded inputs like any other: the
projections are replayed through them, and the metrics are recomputed from
the events up to the `run_finished` whose figures they are compared with,
so a later turn is reported (`later_turns`), not taken for a divergence.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from dataclasses import dataclass
from typing import Any

import duckdb

from ledgermem.memory.errors import RunNotFound
from ledgermem.evaluation.metrics import EpisodeOutcome, answered_offline, compute_metrics, outcome_from_events, without_timing
from ledgermem.projections.events import TurnRecorded
from ledgermem.evaluation.events import RunFinished, RunStarted
from ledgermem.ledger.store import Ledger
from ledgermem.ledger.schema import sealable_columns
from ledgermem.projections.materialise import ProjectionStore, rebuild
from ledgermem.projections.sql_rebuild import rebuild_sql


@dataclass(frozen=True, slots=True)
class TableCheck:
    table: str
    live_rows: int
    replayed_rows: int
    equal: bool
    first_difference: str = ""


@dataclass(frozen=True, slots=True)
class ReplayReport:
    run_id: str
    tables: tuple[TableCheck, ...]
    metrics: dict[str, dict[str, Any]]
    recorded_metrics: dict[str, dict[str, Any]] | None
    erasures: int = 0
    metrics_seq: int | None = None  # metrics recomputed from the events up to this seq (the run_finished)
    later_turns: dict[str, int] | None = None  # turns recorded after it, by source ("intake", ...)
    harness: bool = True  # False: a ledger no harness run wrote (the live service's): no metrics were recorded

    @property
    def projections_identical(self) -> bool:
        return all(t.equal for t in self.tables)

    @property
    def metrics_identical(self) -> bool:
        """Every metric the live run recorded is recomputed to the same value.

        A metric this version computes and the recorded run did not know
        (`added_metrics`) is no difference: a run keeps replaying after new
        columns are added to the metrics.
        """
        if self.recorded_metrics is None:
            return False
        now = without_timing(self.metrics)
        if set(now) != set(self.recorded_metrics):
            return False
        return all({k: now[s].get(k, _ABSENT) for k in row} == row for s, row in self.recorded_metrics.items())

    @property
    def added_metrics(self) -> list[str]:
        """Metrics recomputed now that the recorded run did not record (columns added since it ran)."""
        if self.recorded_metrics is None:
            return []
        now = without_timing(self.metrics)
        return sorted({k for s, row in self.recorded_metrics.items() for k in now.get(s, {}) if k not in row})

    @property
    def identical(self) -> bool:
        """Projections always; metrics only while nothing was erased (erased text changes token counts) and
        only for a harness run (a live ledger records no metrics to compare with)."""
        return self.projections_identical and (self.metrics_identical or self.erasures > 0 or not self.harness)


_ABSENT = object()  # a recorded metric the replay did not compute: never equal to a value
_ENVELOPE = re.compile(r"enc1:[^\"\s]+:[A-Za-z0-9+/=]+")


def plaintext_events(ledger: Ledger) -> str:
    """A view of `events` with sealed values opened, for the SQL engine; `events` itself when nothing is sealed.

    Opening a value needs its key, so this is the one per-row Python step: a
    UDF over the columns that can hold sealed values (`sealable_columns`).
    """
    typed = [c for c in sealable_columns() if c != "payload"]
    found = " OR ".join([*(f"starts_with({c}, 'enc1:')" for c in typed), "contains(payload, '\"enc1:')"])
    if ledger.keys is None or not ledger.conn.execute(f"SELECT 1 FROM events WHERE {found} LIMIT 1").fetchall():
        return "events"

    def open_text(value: str) -> str:
        return ledger.unseal(value) if value.startswith("enc1:") else value

    def open_json(payload: str) -> str:
        return _ENVELOPE.sub(lambda m: json.dumps(ledger.unseal(m.group(0)), ensure_ascii=False)[1:-1], payload)

    for name, fn in (("ledgermem_open_text", open_text), ("ledgermem_open_json", open_json)):
        try:
            ledger.conn.remove_function(name)
        except duckdb.Error:
            pass
        ledger.conn.create_function(name, fn, ["VARCHAR"], "VARCHAR")
    columns = [d[0] for d in ledger.conn.execute("SELECT * FROM events LIMIT 0").description or ()]
    select = ", ".join(
        f"ledgermem_open_text({c}) AS {c}" if c in typed
        else "ledgermem_open_json(payload) AS payload" if c == "payload" else c
        for c in columns
    )
    ledger.conn.execute(f"CREATE OR REPLACE TEMP VIEW events_plaintext AS SELECT {select} FROM events")
    return "events_plaintext"


def run_ids(ledger: Ledger) -> list[str]:
    return [r.stream.run_id for r in ledger.read(event_types=["run_started"])]


def pick_run(ledger: Ledger, run_id: str | None) -> str:
    """The run to replay: the one the ledger holds (or `run_id`). A ledger no harness run wrote (the live
    service's) has streams but no `run_started`: its streams' one run id is the run."""
    ids = run_ids(ledger) or sorted({stream.run_id for stream, _ in ledger.streams()})
    if run_id is None:
        if len(ids) != 1:
            raise RunNotFound(f"{ledger.path}: holds {len(ids)} runs ({', '.join(ids)}); name one")
        return ids[0]
    if run_id not in ids:
        raise RunNotFound(f"{ledger.path}: no run {run_id!r}; it holds: {', '.join(ids) or 'none'}")
    return run_id


def _first_difference(live: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> str:
    for i, (a, b) in enumerate(zip(live, replayed)):
        if a != b:
            cols = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            return f"row {i}: columns {', '.join(cols)} differ"
    return f"{len(live)} live rows vs {len(replayed)} replayed rows"


ENGINES = ("python", "sql")


def replay(ledger: Ledger, projections: ProjectionStore, run_id: str | None = None,
           engine: str = "python") -> ReplayReport:
    """Rebuild with the Python fold (`python`) or the vectorised DuckDB SQL (`sql`) and compare."""
    rid = pick_run(ledger, run_id)
    replayed = rebuild(ledger, rid) if engine == "python" else rebuild_sql(ledger.conn, plaintext_events(ledger), rid)
    live = projections.read_tables(rid)
    checks = tuple(
        TableCheck(name, len(live[name]), len(rows), live[name] == rows,
                   "" if live[name] == rows else _first_difference(live[name], rows))
        for name, rows in replayed.items()
    )
    stream = _run_stream(ledger, rid)
    finished = [] if stream is None else list(ledger.read(stream=stream, event_types=["run_finished"]))
    last = finished[-1] if finished and isinstance(finished[-1].event, RunFinished) else None
    upto = last.seq if last is not None else None
    metrics = compute_metrics(outcomes_up_to(ledger, rid, upto))
    recorded = last.event.metrics if last is not None and isinstance(last.event, RunFinished) else None
    erasures = sum(1 for _ in ledger.read(run_id=rid, event_types=["key_shredded"]))
    return ReplayReport(rid, checks, metrics, recorded, erasures, upto, later_turns(ledger, rid, upto),
                        harness=stream is not None)


def outcomes_up_to(ledger: Ledger, run_id: str, upto: int | None) -> list[EpisodeOutcome]:
    """Each episode's outcome folded from its events up to seq `upto` (all of them when None)."""
    started = next((r.event for r in ledger.read(run_id=run_id, event_types=["run_started"])), None)
    offline = isinstance(started, RunStarted) and answered_offline(started.config)
    out: list[EpisodeOutcome] = []
    for stream, _ in ledger.streams(run_id):
        if not stream.episode_id:
            continue
        events = ledger.read(stream=stream, to_seq=upto)
        first = next(events, None)
        if first is not None:  # an episode begun after the run finished (by the intake) has no recorded figures
            out.append(outcome_from_events(stream.system, stream.episode_id, chain([first], events), offline=offline))
    return out


def later_turns(ledger: Ledger, run_id: str, upto: int | None) -> dict[str, int]:
    """Turns recorded in the run after seq `upto`, counted by their source ("" when none was given)."""
    if upto is None:
        return {}
    counts: dict[str, int] = {}
    for r in ledger.read(run_id=run_id, from_seq=upto + 1, event_types=["turn_recorded"]):
        if isinstance(r.event, TurnRecorded):
            source = r.event.source or ""
            counts[source] = counts.get(source, 0) + 1
    return dict(sorted(counts.items()))


def _run_stream(ledger: Ledger, run_id: str) -> Any:
    """The run's own stream (where `run_started` is), None for a ledger no harness run wrote."""
    return next((r.stream for r in ledger.read(run_id=run_id, event_types=["run_started"])
                 if isinstance(r.event, RunStarted)), None)
