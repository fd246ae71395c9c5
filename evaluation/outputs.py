"""Files derived from a run's ledger, written next to it.

* `metrics.csv`: one row per system (accuracies with bootstrap CIs, diagnostics, costs); a benchmark
  category (a probe type outside the built-in ones) adds `Acc[<type>]`, `Acc[<type>]_lo`,
  `Acc[<type>]_hi` and `N[<type>]`, and a run with such types or with probes the offline backend
  cannot answer adds `Answerable_Acc` (with CI), `Answerable_N` and `Needs_Model_N`.
* `metrics.csv`: one row per system (accuracies with bootstrap CIs, diagnostics, costs, recorded LLM
  latencies): everything in it follows from the ledger's events, so a run replayed with `--replay-llm`
  writes the same bytes.
* `timing.csv`: one row per system, the machine's wall time per turn and per probe (from the commits'
  `recorded_at`): it measures the machine that ran the run, so it is kept apart from the metrics.
* `predictions.csv`: one row per (system, episode).
* `probe_predictions.csv`: one row per probe answered, with where its gold value was (and, for a
  poisoning probe, its planted value, whether the answer surfaced it and whether the system wrote it),
  and `offline_answerable` (0: the run's `heuristic` backend cannot answer it by design; see
  `evaluation.metrics.offline_answerable`).
* `episode_logs.jsonl`: one JSON object per (system, episode): sizes, counters, probes.
* `run_metadata.json`: the run's configuration, versions, dataset and extent.
* `slot_aliases.csv`: one row per `slot_alias_suspected` event: a new slot name the gate suspected of
  naming an attribute the episode already had (slot names only, never values).

They are computed from the ledger, never accumulated during the run, so
however many systems ran, however often the run was resumed and the files
rewritten, they hold each row once.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ledgermem.evaluation.metrics import ACCURACIES, EpisodeOutcome, compute_metrics, outcomes_from_ledger
from ledgermem.evaluation.replay import pick_run
from ledgermem.projections.events import SlotAliasSuspected
from ledgermem.evaluation.events import RunFinished, RunStarted
from ledgermem.ledger.store import Ledger

METRICS_FIRST = ("episodes", "turns", "probes")
PROBE_COLUMNS = ("system", "episode_id", "probe_id", "type", "slot", "question", "gold", "answer", "correct",
                 "judge", "tool_calls", "tool_ok", "tools_tried", "where", "distance", "rendered_tokens", "evidence",
                 "evidence_retained", "evidence_reachable", "evidence_in_prompt", "store_events", "poison",
                 "poison_surfaced", "poison_written", "offline_answerable")
EPISODE_COLUMNS = ("system", "episode_id", "turns", "probes", "correct", "accuracy", "Current_Fact_Acc",
                   "History_Fact_Acc", "Memory_Point_Acc", "avg_rendered_tokens", "avg_chain_tokens", "llm_calls",
                   "wall_ms")
FILES = ("metrics.csv", "predictions.csv", "probe_predictions.csv", "episode_logs.jsonl", "run_metadata.json",
         "timing.csv")
SLOT_ALIASES = "slot_aliases.csv"
SLOT_ALIAS_COLUMNS = ("system", "episode_id", "turn", "summary_id", "slot", "existing", "rule")
#: Machine time: written to timing.csv, not metrics.csv.
WALL_COLUMNS = ("wall_ms_per_turn", "wall_ms_per_probe")


def _cell(value: Any) -> Any:
    return "" if value is None else value


def _flag(value: bool | None) -> Any:
    return "" if value is None else int(value)


def _acc(o: EpisodeOutcome, kind: str | None = None) -> float | None:
    hits = [p.correct for p in o.probes if kind is None or p.probe_type == kind]
    return round(sum(hits) / len(hits), 4) if hits else None


def _avg(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def episode_row(o: EpisodeOutcome) -> dict[str, Any]:
    chain = [t.chain_text_tokens for t in o.turns if t.chain_text_tokens is not None]
    return {
        "system": o.system, "episode_id": o.episode_id, "turns": len(o.turns), "probes": len(o.probes),
        "correct": sum(p.correct for p in o.probes), "accuracy": _acc(o),
        "Current_Fact_Acc": _acc(o, "current_fact"), "History_Fact_Acc": _acc(o, "history_fact"),
        "Memory_Point_Acc": _acc(o, "memory_point"),
        "avg_rendered_tokens": _avg([t.rendered_tokens for t in o.turns]), "avg_chain_tokens": _avg(chain),
        "llm_calls": sum(v for k, v in o.counts.items() if k.startswith("llm_calls_")),
        "wall_ms": round(sum(o.turn_ms) + sum(o.probe_ms), 3),
    }


def write_outputs(path: Path, run_id: str | None = None, folder: Path | None = None) -> list[Path]:
    """Derive every output file of the run in ledger `path` (into `folder`, by default beside it); their paths."""
    with Ledger(path, read_only=True) as ledger:
        rid = pick_run(ledger, run_id)
        outcomes = sorted(outcomes_from_ledger(ledger, rid), key=lambda o: (o.system, o.episode_id))
        # Only the run's own two events are needed: reading (and decoding) every event of the run to pick
        # them out costs about 8 MiB of peak memory in the default run.
        run_events = [r for r in ledger.read(run_id=rid, event_types=[RunStarted.event_type, RunFinished.event_type])
                      if not r.stream.episode_id]
        extent = {"events": sum(n for s, n in ledger.streams(rid)), "last_seq": ledger.last_seq}
        suspected = [(r.stream, r.event) for r in ledger.read(run_id=rid, event_types=["slot_alias_suspected"])]
    metrics = compute_metrics(outcomes)
    folder = Path(path).parent if folder is None else Path(folder)
    written = [folder / name for name in FILES]
    metrics_csv, predictions_csv, probes_csv, logs_jsonl, meta_json, timing_csv = written

    columns = [*METRICS_FIRST,
               *sorted({k for row in metrics.values() for k in row} - set(METRICS_FIRST) - set(WALL_COLUMNS))]
    with metrics_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", *columns])
        for system, row in metrics.items():
            writer.writerow([system, *(_cell(row.get(c)) for c in columns)])
    with timing_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", *WALL_COLUMNS])
        for system, row in metrics.items():
            writer.writerow([system, *(_cell(row.get(c)) for c in WALL_COLUMNS)])

    with predictions_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(EPISODE_COLUMNS)
        for o in outcomes:
            row = episode_row(o)
            writer.writerow([_cell(row[c]) for c in EPISODE_COLUMNS])

    with probes_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(PROBE_COLUMNS)
        for o in outcomes:
            for p in o.probes:
                writer.writerow([o.system, o.episode_id, p.probe_id, p.probe_type, p.slot or "", p.question, p.gold,
                                 p.answer, int(p.correct), p.judge, p.tool_calls, p.tool_ok, p.tools_tried, p.where,
                                 _cell(p.distance), p.rendered_tokens, " ".join(p.evidence), p.evidence_retained,
                                 p.evidence_reachable, p.evidence_in_prompt, p.store_events, _cell(p.poison),
                                 _flag(p.poison_surfaced), _flag(p.poison_written), int(p.offline_answerable)])

    with logs_jsonl.open("w", encoding="utf-8") as fh:
        for o in outcomes:
            log = {
                **episode_row(o),
                "counts": dict(sorted(o.counts.items())),
                "rendered_tokens_by_turn": [t.rendered_tokens for t in o.turns],
                "chain_tokens_by_turn": [t.chain_text_tokens for t in o.turns],
                "probes": [{"probe_id": p.probe_id, "type": p.probe_type, "slot": p.slot, "question": p.question,
                            "gold": p.gold, "answer": p.answer, "correct": p.correct, "judge": p.judge,
                            "tools_tried": p.tools_tried, "where": p.where, "distance": p.distance,
                            **({"poison": p.poison, "poison_surfaced": p.poison_surfaced,
                                "poison_written": p.poison_written} if p.poison is not None else {})}
                           for p in o.probes],
            }
            fh.write(json.dumps(log, ensure_ascii=False, sort_keys=True) + "\n")

    started = next((r for r in run_events if isinstance(r.event, RunStarted)), None)
    finished = next((r for r in run_events if isinstance(r.event, RunFinished)), None)
    meta: dict[str, Any] = {"run_id": rid, "ledger": Path(path).name, "complete": finished is not None, **extent}
    if started is not None:
        assert isinstance(started.event, RunStarted)
        meta |= {"systems": list(started.event.systems), "config": started.event.config,
                 "versions": started.event.versions, "dataset": started.event.dataset,
                 "started_at": started.recorded_at.isoformat()}
    if finished is not None:
        meta["finished_at"] = finished.recorded_at.isoformat()
    meta["accuracy_columns"] = list(ACCURACIES.values())
    meta_json.write_text(json.dumps(meta, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    aliases_csv = folder / SLOT_ALIASES
    with aliases_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(SLOT_ALIAS_COLUMNS)
        for stream, e in suspected:
            if isinstance(e, SlotAliasSuspected):
                writer.writerow([stream.system, stream.episode_id, e.turn, e.summary_id, e.slot, e.existing, e.rule])
    return [*written, aliases_csv]
