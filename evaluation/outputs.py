"""Files derived from a run's ledger: `metrics.csv`, `probe_predictions.csv`.

They are written from the ledger, never accumulated during the run, so
however many systems ran and however often the files are rewritten they
hold each row once.
"""

from __future__ import annotations

import csv
from pathlib import Path

from evaluation.metrics import compute_metrics, outcomes_from_ledger
from evaluation.replay import pick_run
from ledger.store import Ledger


def write_outputs(path: Path) -> list[Path]:
    with Ledger(path, read_only=True) as ledger:
        rid = pick_run(ledger, None)
        outcomes = outcomes_from_ledger(ledger, rid)
    metrics = compute_metrics(outcomes)
    folder = Path(path).parent
    metrics_csv, probes_csv = folder / "metrics.csv", folder / "probe_predictions.csv"
    columns = sorted({k for row in metrics.values() for k in row})
    with metrics_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", *columns])
        for system, row in metrics.items():
            writer.writerow([system, *("" if row.get(c) is None else row[c] for c in columns)])
    with probes_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", "episode_id", "probe_id", "type", "slot", "question", "gold", "answer",
                         "correct", "tool_calls", "tool_ok"])
        for o in outcomes:
            for p in o.probes:
                writer.writerow([o.system, o.episode_id, p.probe_id, p.probe_type, p.slot or "", p.question,
                                 p.gold, p.answer, int(p.correct), p.tool_calls, p.tool_ok])
    return [metrics_csv, probes_csv]
