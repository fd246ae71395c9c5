"""Summary truncations: recorded on every written item, counted per system in the metrics."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ledgermem.datasets.model import Episode, Turn
from ledgermem.evaluation.metrics import compute_metrics, outcome_from_events
from ledgermem.evaluation.runner import SYSTEMS, RunOptions, open_memory, run_episode
from ledgermem.projections.events import SummaryCreated
from ledgermem.evaluation.events import BaselineWritten
from ledgermem.ledger.store import Ledger
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore
from ledgermem.projections.tokens import ESTIMATOR

LONG = " ".join(["the user keeps a detailed note about the office and the move"] * 4)
EPISODE = Episode(episode_id="ep", turns=tuple(Turn(user=f"My office floor is {n}F.", agent="Noted.")
                                               for n in range(1, 7)), facts=(), probes=(), lang="en")


def _summaries(messages: Sequence[Message], purpose: str) -> str:
    floor = [c for c in "123456" if f"is {c}F" in str(messages[-1]["content"])]
    return f"{LONG}\n[FACTS: office floor={floor[-1] if floor else 1}F]\n[OVERRIDES: none]"


def _metrics(system: str, summary_max_tokens: int) -> tuple[dict[str, object], int, int]:
    opts = RunOptions(run_id="t", systems=(system,), memory=MemoryConfig(
        tokenizer=ESTIMATOR, personal_data=False, summary_max_tokens=summary_max_tokens,
        chain_budget=max(60, summary_max_tokens)))  # a rolling summary is cut at the chain's budget
    with Ledger(":memory:") as ledger, ProjectionStore(":memory:") as projections:
        memory = open_memory(ledger, projections, opts, system, EPISODE, ScriptedBackend(_summaries))
        run_episode(memory, system, EPISODE, lambda what, n: None, memory_points=0)
        events = [r.event for r in ledger.read(stream=memory.stream)]
        written = [e for e in events if isinstance(e, (SummaryCreated, BaselineWritten))]
        row = compute_metrics([outcome_from_events(system, "ep", ledger.read(stream=memory.stream))])[system]
    return row, sum(e.truncated for e in written), len(written)


@pytest.mark.parametrize("system", [s for s in SYSTEMS if s != "full_context"])
def test_truncations_are_counted_with_their_rate(system: str) -> None:
    row, truncated, written = _metrics(system, summary_max_tokens=8)
    assert truncated > 0 and written > 0
    assert row["summary_truncations"] == truncated
    assert row["Summary_Truncation_Rate"] == round(truncated / written, 4)
    # the control: a cap the summaries fit under truncates nothing, and the metric says so
    row, truncated, written = _metrics(system, summary_max_tokens=400)
    assert truncated == 0 and written > 0
    assert row["summary_truncations"] == 0 and row["Summary_Truncation_Rate"] == 0.0


def test_a_system_that_writes_nothing_has_no_rate() -> None:
    row, truncated, written = _metrics("full_context", summary_max_tokens=8)
    assert written == 0 and row["summary_truncations"] == 0 and row["Summary_Truncation_Rate"] is None


def test_registry_tokens_are_a_metric_of_the_layered_memory_only() -> None:
    row, _, _ = _metrics("three_layer", summary_max_tokens=400)
    assert row["Avg_Registry_Tokens"] is not None and 0 < row["Avg_Registry_Tokens"] < row["Avg_Rendered_Context_Tokens"]
    assert _metrics("naive_chain", summary_max_tokens=400)[0]["Avg_Registry_Tokens"] is None
