"""Metrics of a run, computed the same way from a live run and from its ledger.

An `EpisodeOutcome` is everything a metric needs about one episode of one
system. The runner builds it from the objects it holds; `outcomes_from_ledger`
builds it from the events alone. `compute_metrics` is one function over
either, so a replay that reproduces the outcomes reproduces the metrics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from ledger.events import (
    IndexCreated,
    LlmCalled,
    OverrideRejected,
    ProbeAnswered,
    ProbeAsked,
    ProbeJudged,
    SummaryCreated,
    SummaryOverridden,
    ToolCalled,
)
from ledger.store import Ledger, RecordedEvent
from projections.render import chain_text_tokens, render
from projections.state import EpisodeState, evolve


@dataclass(frozen=True, slots=True)
class TurnStats:
    turn: int
    chain_text_tokens: int
    rendered_tokens: int


def turn_stats(state: EpisodeState) -> TurnStats:
    return TurnStats(state.turn, chain_text_tokens(state), render(state).tokens)


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    probe_id: str
    probe_type: str
    slot: str | None
    question: str
    gold: str
    answer: str
    correct: bool
    tool_calls: int
    tool_ok: int


@dataclass(slots=True)
class EpisodeOutcome:
    system: str
    episode_id: str
    turns: list[TurnStats] = field(default_factory=list)
    probes: list[ProbeOutcome] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def count(self, recorded: Iterable[Any]) -> None:
        """Accumulate counters from events (the live runner passes what it committed)."""
        for e in recorded:
            key = _COUNTED.get(type(e))
            if key:
                self.counts[key] += len(e.rejected) if isinstance(e, OverrideRejected) else 1
            if isinstance(e, LlmCalled):
                self.counts[f"llm_calls_{e.purpose}"] += 1
                self.counts[f"prompt_tokens_{e.purpose}"] += int(e.usage.get("prompt_tokens", 0))
                self.counts[f"completion_tokens_{e.purpose}"] += int(e.usage.get("completion_tokens", 0))


_COUNTED = {
    SummaryCreated: "summaries_created",
    SummaryOverridden: "overrides_applied",
    OverrideRejected: "override_ids_rejected",
    IndexCreated: "indexes_created",
}


def _acc(probes: Sequence[ProbeOutcome], kind: str) -> tuple[float | None, int]:
    hits = [p.correct for p in probes if p.probe_type == kind]
    return (round(sum(hits) / len(hits), 4) if hits else None), len(hits)


def _mean(values: list[float]) -> float | None:
    return round(fmean(values), 2) if values else None


def compute_metrics(outcomes: Sequence[EpisodeOutcome]) -> dict[str, dict[str, Any]]:
    """One row of metrics per system."""
    by_system: dict[str, list[EpisodeOutcome]] = defaultdict(list)
    for o in sorted(outcomes, key=lambda o: (o.system, o.episode_id)):  # order-independent sums
        by_system[o.system].append(o)
    table: dict[str, dict[str, Any]] = {}
    for system, eps in sorted(by_system.items()):
        probes = [p for o in eps for p in o.probes]
        cur, cur_n = _acc(probes, "current_fact")
        his, his_n = _acc(probes, "history_fact")
        counts: dict[str, int] = defaultdict(int)
        for o in eps:
            for k, v in o.counts.items():
                counts[k] += v
        calls = sum(p.tool_calls for p in probes)
        turns = sum(len(o.turns) for o in eps)
        table[system] = {
            "episodes": len(eps),
            "turns": turns,
            "probes": len(probes),
            "Current_Fact_Acc": cur,
            "Current_Fact_N": cur_n,
            "History_Fact_Acc": his,
            "History_Fact_N": his_n,
            "Avg_Active_Chain_Tokens": _mean([_mean([t.chain_text_tokens for t in o.turns]) or 0.0 for o in eps]),
            "Avg_Rendered_Context_Tokens": _mean([_mean([t.rendered_tokens for t in o.turns]) or 0.0 for o in eps]),
            "Tool_Call_Success_Rate": round(sum(p.tool_ok for p in probes) / calls, 4) if calls else None,
            "tool_calls": calls,
            "summaries_created": counts["summaries_created"],
            "overrides_applied": counts["overrides_applied"],
            "override_ids_rejected": counts["override_ids_rejected"],
            "indexes_created": counts["indexes_created"],
            "summarizer_calls_per_turn": round(counts["llm_calls_summarize"] / turns, 4) if turns else None,
            "answer_calls_per_probe": round(counts["llm_calls_answer"] / len(probes), 4) if probes else None,
            "prompt_tokens_summarize": counts["prompt_tokens_summarize"],
            "prompt_tokens_answer": counts["prompt_tokens_answer"],
            "completion_tokens_summarize": counts["completion_tokens_summarize"],
            "completion_tokens_answer": counts["completion_tokens_answer"],
        }
    return table


def outcome_from_events(system: str, episode_id: str, recorded: Iterable[RecordedEvent]) -> EpisodeOutcome:
    """Fold one episode stream into its outcome, with no LLM and no live objects."""
    out = EpisodeOutcome(system, episode_id)
    state = EpisodeState()
    events = [r.event for r in recorded]
    asked: dict[str, ProbeAsked] = {}
    answered: dict[str, ProbeAnswered] = {}
    tools: dict[str, list[ToolCalled]] = defaultdict(list)
    for i, e in enumerate(events):
        state = evolve(state, e)  # type: ignore[arg-type]
        nxt = events[i + 1] if i + 1 < len(events) else None
        if state.turn >= 1 and _turn_ends(e, nxt) and (not out.turns or out.turns[-1].turn != state.turn):
            out.turns.append(turn_stats(state))
        if isinstance(e, ProbeAsked):
            asked[e.probe_id] = e
        elif isinstance(e, ProbeAnswered):
            answered[e.probe_id] = e
        elif isinstance(e, ToolCalled):
            tools[e.probe_id].append(e)
        elif isinstance(e, ProbeJudged):
            out.probes.append(probe_outcome(asked[e.probe_id], answered[e.probe_id], tools[e.probe_id], e))
    out.count(events)
    return out


def _turn_ends(event: Any, nxt: Any) -> bool:
    from ledger.events import TurnRecorded

    return nxt is None or isinstance(nxt, (TurnRecorded, ProbeAsked)) or nxt.turn != event.turn


def probe_outcome(asked: ProbeAsked, answered: ProbeAnswered, tools: list[ToolCalled], judged: ProbeJudged) -> ProbeOutcome:
    return ProbeOutcome(
        probe_id=asked.probe_id, probe_type=asked.probe_type, slot=asked.slot, question=asked.text,
        gold=asked.gold, answer=answered.text, correct=judged.correct, tool_calls=len(tools),
        tool_ok=sum(t.ok for t in tools),
    )


def outcomes_from_ledger(ledger: Ledger, run_id: str) -> list[EpisodeOutcome]:
    return [
        outcome_from_events(stream.system, stream.episode_id, ledger.read(stream=stream))
        for stream, _ in ledger.streams(run_id)
        if stream.episode_id
    ]
