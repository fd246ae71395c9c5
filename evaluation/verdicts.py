"""ok / WARN / FAIL verdicts on a run's main metrics, from thresholds.

A threshold names a column of `metrics.csv`, which way is better, and two
bounds. For a metric where higher is better a value at or above `ok` is
``ok``, at or above `warn` is ``WARN``, and anything lower is ``FAIL``; for a
metric where lower is better the comparisons turn round. A missing value
(`n/a`: the metric does not apply to the system) gets no verdict.

`Extraction_Recall` (invariant I4: of the facts the user's turns held, the
share a summary captured) is measured from the ledger by `extraction_recall`;
the other metrics are columns of `metrics.csv`.

The defaults follow the memory-evaluation design's own report, which marks
recall 0.91 ok, 0.58 and 0.61 FAIL, staleness 0.00 ok, 18 of 20 constraints
surviving FAIL and a write precision of 0.41 WARN, and says that any
non-zero staleness is a broken update path and any fall in open loops across
a compaction a red flag. Where the design gives no figure the default is the
project's, and `source` says so. A JSON or TOML file changes them
(`load_thresholds`): per metric, `ok`, `warn` and (for a column with no
default) `better`; `false` switches a verdict off.

A thresholds file that cannot be read, or a bad entry, raises
`evaluation.errors.ThresholdError` naming the file and the key.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ledgermem.evaluation.errors import ThresholdError

OK, WARN, FAIL = "ok", "WARN", "FAIL"
Better = Literal["higher", "lower"]
#: Rounding in metrics.csv must not turn a value on a bound into the wrong side of it.
EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Threshold:
    metric: str
    better: Better
    ok: float
    warn: float
    source: str

    def judge(self, value: float | None) -> str | None:
        """`ok`, `WARN` or `FAIL` for `value`; None when there is no value (or it is not a number)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        if self.better == "higher":
            return OK if value >= self.ok - EPSILON else WARN if value >= self.warn - EPSILON else FAIL
        return OK if value <= self.ok + EPSILON else WARN if value <= self.warn + EPSILON else FAIL

    def describe(self) -> str:
        sign = "≥" if self.better == "higher" else "≤"
        if self.ok == self.warn:
            return f"ok {sign} {self.ok:g}, else FAIL"
        return f"ok {sign} {self.ok:g}, WARN {sign} {self.warn:g}, else FAIL"


#: I4's extraction recall, pooled over a system's streams; from the ledger (`extraction_recall`), not metrics.csv.
EXTRACTION = "Extraction_Recall"
_SEED_RECALL = "seed 003, memory evaluation (recall 0.91 ok; 0.58 and 0.61 FAIL)"
DEFAULT_THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("Current_Fact_Acc", "higher", 0.90, 0.70, _SEED_RECALL),
    Threshold("History_Fact_Acc", "higher", 0.90, 0.70, _SEED_RECALL),
    Threshold("Memory_Point_Acc", "higher", 0.90, 0.70, _SEED_RECALL),
    Threshold("Staleness_Rate", "lower", 0.0, 0.0, "seed 003 (non-zero staleness: the update path is broken, P0)"),
    Threshold("Constraint_Survival", "higher", 1.0, 1.0, "seed 003 (strict pass/fail per constraint; 18/20 FAIL)"),
    Threshold("Open_Loop_Survival", "higher", 1.0, 1.0, "seed 002 (a fall in open loops is a red flag)"),
    Threshold("Pin_Survival", "higher", 1.0, 1.0, "seed 002 (pinned constraints and open loops never compressed)"),
    Threshold("Open_Loop_Drops", "lower", 0.0, 0.0, "seed 002 (a fall in open loops is a red flag)"),
    Threshold("Write_Precision", "higher", 0.70, 0.40, "seed 003 (0.41 WARN); bounds: project default"),
    Threshold("Poison_Written", "lower", 0.0, 0.0, "seed 003 (poison that cannot reach the store is contained)"),
    Threshold("Poison_Surfaced", "lower", 0.0, 0.10, "project default"),
    Threshold("Tool_Call_Success_Rate", "higher", 0.95, 0.80, "project default"),
    Threshold(EXTRACTION, "higher", 0.95, 0.80, "project default (the fact grammar's recall target, 0.95)"),
)
#: The metrics.csv columns the defaults read (the report reads them when they are there).
COLUMNS = tuple(t.metric for t in DEFAULT_THRESHOLDS)

Metrics = Mapping[str, Mapping[str, float | None]]


def verdicts(metrics: Metrics, thresholds: Sequence[Threshold] = DEFAULT_THRESHOLDS
             ) -> dict[str, dict[str, str | None]]:
    """{system: {metric: verdict or None}} for every threshold."""
    return {system: {t.metric: t.judge(row.get(t.metric)) for t in thresholds} for system, row in metrics.items()}


def worst(marks: Mapping[str, str | None]) -> str | None:
    """The worst verdict among `marks` (None when none applies)."""
    given = [m for m in marks.values() if m is not None]
    return next((m for m in (FAIL, WARN, OK) if m in given), None)


def shown(metrics: Metrics, thresholds: Sequence[Threshold]) -> list[Threshold]:
    """The thresholds whose metric has a value for at least one system."""
    return [t for t in thresholds if any(row.get(t.metric) is not None for row in metrics.values())]


def extraction_recall(ledger: Any) -> dict[str, dict[str, float | None]]:
    """{system: {"Extraction_Recall": captured / compared}} over the streams that promise I4, measured as
    `ledgermem audit` measures it (`gate.extraction`); the baselines promise none and get no value."""
    from ledgermem.gate.extraction import gold_of, measure_extraction
    from ledgermem.projections.state import EpisodeState, evolve

    totals: dict[str, list[int]] = {}
    for stream, _ in ledger.streams(None):
        if not stream.episode_id:
            continue
        events = list(ledger.read(stream=stream))
        state = EpisodeState()
        for recorded in events:
            state = evolve(state, recorded.event)
        if state.config.system != "three_layer":
            continue
        found = measure_extraction(state, gold_of(r.event for r in events))
        pair = totals.setdefault(stream.system, [0, 0])
        pair[0] += found.captured
        pair[1] += found.compared
    return {system: {EXTRACTION: round(hit / n, 4) if n else None} for system, (hit, n) in totals.items()}


def load_thresholds(path: str | Path, base: Sequence[Threshold] = DEFAULT_THRESHOLDS) -> tuple[Threshold, ...]:
    """`base` changed by the JSON (`.json`) or TOML (any other name) file at `path`.

    The file maps a metric to ``{"ok": .., "warn": .., "better": "higher" | "lower"}`` (each key optional for a
    metric with a default; `better` and both bounds required for a new one) or to ``false`` (no verdict).
    """
    where = str(path)
    document = _read(Path(path))
    if not isinstance(document, dict):
        raise ThresholdError(f"{where}: expected a table of metrics at the top level, got {type(document).__name__}")
    out = {t.metric: t for t in base}
    for metric, entry in document.items():
        if entry is False:
            out.pop(metric, None)
            continue
        if not isinstance(entry, dict):
            raise ThresholdError(f"{where}: {metric}: expected a table with ok/warn/better, or false; got {entry!r}")
        out[metric] = _entry(where, metric, entry, out.get(metric))
    return tuple(out.values())


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ThresholdError(f"{path}: cannot read the thresholds file ({exc.strerror or exc})") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ThresholdError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if sys.version_info < (3, 11):
        raise ThresholdError(f"{path}: TOML needs Python 3.11 or later; write the thresholds as .json")
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThresholdError(f"{path}: invalid TOML: {exc}") from None


def _entry(where: str, metric: str, entry: dict[str, Any], default: Threshold | None) -> Threshold:
    unknown = sorted(set(entry) - {"ok", "warn", "better"})
    if unknown:
        raise ThresholdError(f"{where}: {metric}: unknown key(s) {unknown}; known: ok, warn, better")
    if default is None and not {"ok", "warn", "better"} <= set(entry):
        raise ThresholdError(f"{where}: {metric}: a metric with no default needs ok, warn and better")
    better = entry.get("better", default.better if default else None)
    if better not in ("higher", "lower"):
        raise ThresholdError(f"{where}: {metric}.better={better!r}: expected 'higher' or 'lower'")
    bounds = {}
    for key in ("ok", "warn"):
        value = entry.get(key, getattr(default, key, None))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ThresholdError(f"{where}: {metric}.{key}={value!r}: expected a finite number")
        bounds[key] = float(value)
    if (bounds["ok"] < bounds["warn"]) if better == "higher" else (bounds["ok"] > bounds["warn"]):
        order = ">=" if better == "higher" else "<="
        raise ThresholdError(f"{where}: {metric}: ok ({bounds['ok']:g}) must be {order} warn ({bounds['warn']:g}) "
                             f"when {better} is better")
    changed = Threshold(metric, better, bounds["ok"], bounds["warn"], f"{where}")
    return changed if default is None else replace(default, better=better, ok=bounds["ok"], warn=bounds["warn"],
                                                   source=where)


def console_table(metrics: Metrics, thresholds: Sequence[Threshold] = DEFAULT_THRESHOLDS, title: str = "verdicts"
                  ) -> Any:
    """The verdicts as a `rich` table for the terminal: one row per metric (with its rule), one column per
    system, and a last row with each system's worst verdict."""
    from rich.table import Table

    used = shown(metrics, thresholds)
    marks = verdicts(metrics, used)
    style = {OK: "green", WARN: "yellow", FAIL: "bold red"}

    def cell(mark: str | None, value: float | None) -> str:
        return "n/a" if mark is None or value is None else f"[{style[mark]}]{mark}[/] {value:.3g}"

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("rule")
    for system in marks:
        table.add_column(system, justify="right")
    for t in used:
        table.add_row(t.metric, t.describe(), *(cell(marks[s][t.metric], metrics[s].get(t.metric)) for s in marks))
    overall = [worst(marks[s]) for s in marks]
    table.add_row("overall", "worst of the above", *(f"[{style[m]}]{m}[/]" if m else "n/a" for m in overall))
    return table
