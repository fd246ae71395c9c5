"""Gate levels × datasets: one `three_layer` run per pair, one row per run.

The gate level decides which turns reach the summarizer; the sweep shows
what that costs and saves on each dataset, side by side: accuracy on
current and earlier values and on hard constraints, summarizer and LLM
calls per turn, rendered tokens per turn, and how many turns the gate kept
from the summarizer. Every number comes from the run's ledger (the same
`compute_metrics` as `ledgermem run`), so a sweep's runs can be reported,
replayed and audited like any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ledgermem.datasets.model import Dataset
from ledgermem.evaluation.errors import EvaluationError
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.projections.config import GATE_LEVELS

__all__ = ["COLUMNS", "SweepCase", "builtin_cases", "parse_levels", "sweep", "sweep_markdown"]

SYSTEM = "three_layer"  # gate levels and source policies are this memory's; the baselines have neither
#: (metric column, table header, format) in table order after `dataset` and `level`.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Current_Fact_Acc", "Current_Fact_Acc", "{:.3f}"),
    ("History_Fact_Acc", "History_Fact_Acc", "{:.3f}"),
    ("Constraint_Survival", "Constraint_Survival", "{:.3f}"),
    ("llm_calls_per_turn", "summarizer calls/turn", "{:.2f}"),
    ("llm_calls_per_turn_all", "LLM calls/turn", "{:.2f}"),
    ("Avg_Rendered_Context_Tokens", "rendered tokens/turn", "{:.1f}"),
)


@dataclass(frozen=True, slots=True)
class SweepCase:
    """One dataset of the sweep, the label its rows carry, and whether its values are sealed (erasable)."""

    label: str
    dataset: Dataset
    personal_data: bool = False


def builtin_cases(*, episodes: int, turns: int, seed: int, poison: bool = False) -> list[SweepCase]:
    """The built-in synthetic data, one dataset per language (zh, then en)."""
    return [
        SweepCase(f"synthetic-{lang}", generate_synthetic(n_episodes=episodes, turns=turns, seed=seed,
                                                          langs=(lang,), poison=poison))
        for lang in ("zh", "en")
    ]


def parse_levels(text: str) -> tuple[str, ...]:
    """A comma-separated list of gate levels, in the order given, without duplicates."""
    levels = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [level for level in levels if level not in GATE_LEVELS]
    if unknown or not levels:
        raise EvaluationError(f"--levels {text!r}: unknown gate level(s) {', '.join(unknown) or '(none given)'}; "
                              f"levels: {', '.join(GATE_LEVELS)}")
    return levels


def _slug(label: str) -> str:
    # Part of a run id (memory.names): a name of at most 128 characters, whatever the dataset's path.
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[-80:].strip("-") or "dataset"


def sweep(cases: Sequence[SweepCase], levels: Iterable[str], base: RunOptions,
          progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Run `three_layer` over every (dataset, level); rows in dataset order, then level order.

    Each run gets its own id under `base.runs_dir` (`sweep-<n>-<dataset>-<level>`), so a sweep
    given the same arguments again reads finished runs back from their ledgers.
    """
    rows = []
    levels = tuple(levels)
    for number, case in enumerate(cases, start=1):
        for level in levels:
            run_id = f"sweep-{number:02d}-{_slug(case.label)}-{level}"
            if progress is not None:
                progress(run_id)
            memory = replace(base.memory, gate_level=level, personal_data=case.personal_data)
            opts = replace(base, run_id=run_id, systems=(SYSTEM,), memory=memory)
            result = run(case.dataset, opts)
            if result.incomplete:  # a row from part of the episodes would pass for a whole one
                raise EvaluationError(f"sweep run {run_id!r}: {len(result.incomplete)} episode(s) stopped at a failed "
                                      f"LLM call (last error: {result.last_error}); run the same sweep again to "
                                      "redo them")
            write_outputs(result.ledger_path)  # the run folder holds what `ledgermem run` leaves, for `report`
            metrics = result.metrics[SYSTEM]
            rows.append({"dataset": case.label, "level": level, "run_id": run_id,
                         **{column: metrics.get(column) for column, _, _ in COLUMNS},
                         "Gated_Turns": metrics.get("Gated_Turns"), "turns": metrics.get("turns")})
    return rows


def _cell(value: Any, fmt: str) -> str:
    return "n/a" if value is None else fmt.format(value)


def sweep_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The sweep as a Markdown table; `gated turns` as gated/all turns."""
    head = ["dataset", "level", *(header for _, header, _ in COLUMNS), "gated turns"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in rows:
        gated = "n/a" if row["Gated_Turns"] is None else f"{row['Gated_Turns']}/{row['turns']}"
        cells = [row["dataset"], row["level"], *(_cell(row[c], fmt) for c, _, fmt in COLUMNS), gated]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
