"""What one probe saw and did, folded from its episode's events: for the audit API and the run explorer.

For every probe: the context manifest of its prompt, the model calls and
tool calls it made in order (the retrieval path), its answer and verdict,
and where its gold value was when the prompt was rendered. `where` is the
same LLM-free diagnostic the metrics count (`evaluation.metrics`):
`prompt`, `one_hop` (one exact-id tool call away), `raw_only` (only in raw
turns this system can no longer read) or `gone`; the detail names the
items that hold the value in each place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ledgermem.evaluation import baselines
from ledgermem.evaluation.judge import contains_value
from ledgermem.evaluation.metrics import ProbeOutcome, outcome_from_events
from ledgermem.projections.events import (
    ContextRendered,
    EpisodeStarted,
    LlmCalled,
    ProbeAsked,
    ProbeJudged,
    ToolCalled,
    TurnRecorded,
)
from ledgermem.evaluation.events import ProbeAnswered
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import RecordedEvent
from ledgermem.memory.shell import Decider
from ledgermem.memory.three_layer import THREE_LAYER
from ledgermem.projections.render import Rendered
from ledgermem.projections.state import EpisodeState

_TOOL_FOR_STATUS = {"archived": "get_archived_summary", "indexed": "expand_index", "active": "get_archived_summary"}


def _row(outcome: ProbeOutcome, asked: RecordedEvent | None) -> dict[str, Any]:
    return {
        "probe_id": outcome.probe_id, "type": outcome.probe_type, "slot": outcome.slot,
        "question": outcome.question, "gold": outcome.gold, "answer": outcome.answer, "correct": outcome.correct,
        "judge": outcome.judge, "where": outcome.where, "distance": outcome.distance, "turn": outcome.turn,
        "seq": asked.seq if asked else None, "tool_calls": outcome.tool_calls, "tools_tried": outcome.tools_tried,
        "prompt_tokens": outcome.rendered_tokens,
    }


def probe_rows(system: str, episode: str, events: Sequence[RecordedEvent]) -> list[dict[str, Any]]:
    """Every judged probe of the stream, in the order asked."""
    asked = {r.event.probe_id: r for r in events if isinstance(r.event, ProbeAsked)}
    outcome = outcome_from_events(system, episode, events)
    return [_row(p, asked.get(p.probe_id)) for p in outcome.probes]


@dataclass(slots=True)
class _Fold:
    """The stream's memory (this one's or a baseline's) up to the probe's prompt."""

    kind: str = "three_layer"
    system: Decider[Any] = THREE_LAYER
    state: Any = field(default_factory=EpisodeState)  # the system's own state
    said: list[tuple[str, int, str]] = field(default_factory=list)  # (record id, turn, text) of every turn

    def apply(self, r: RecordedEvent) -> None:
        e = r.event
        if isinstance(e, EpisodeStarted):
            self.kind = str(e.config.get("system", "three_layer"))
            self.system = baselines.decider_for(self.kind)
            self.state = self.system.initial()
        if isinstance(e, TurnRecorded):
            self.said.append((e.record_id, e.turn, f"{e.text}\n{e.agent}"))
        self.state = self.system.evolve(self.state, e)

    def render(self, budget: int) -> Rendered:
        return self.system.render(self.state, budget)

    def locations(self, gold: str, rendered: Rendered) -> dict[str, list[dict[str, Any]]]:
        shown = [{"part": p.name, "id": i.item_id, "text": i.text}
                 for p in rendered.parts for i in p.items if contains_value(gold, i.text)]
        in_prompt = {s["id"] for s in shown}
        hops: list[dict[str, Any]] = []
        readable: set[str] = set()
        if self.kind == "three_layer":
            for s in self.state.summaries.values():
                if s.summary_id not in in_prompt and any(v != ERASED and contains_value(gold, v) for _, v in s.facts):
                    tool = _TOOL_FOR_STATUS[s.status]
                    target = s.index_id if s.status == "indexed" and s.index_id else s.summary_id
                    hops.append({"id": s.summary_id, "layer": s.status, "tool": f"{tool}({target})"})
            for r in self.state.raw.values():
                if r.user != ERASED:
                    readable.add(r.record_id)
                    if r.record_id not in in_prompt and contains_value(gold, f"{r.user}\n{r.agent}"):
                        hops.append({"id": r.record_id, "layer": "raw", "tool": f"get_raw_record({r.record_id})"})
        raw_only = [{"id": rid, "turn": turn} for rid, turn, text in self.said
                    if rid not in readable and rid not in in_prompt and contains_value(gold, text)]
        return {"in_prompt": shown, "one_hop": hops, "raw_only": raw_only}


def _step(r: RecordedEvent) -> dict[str, Any] | None:
    e = r.event
    if isinstance(e, LlmCalled):
        return {"step": "llm", "seq": r.seq, "purpose": e.purpose, "model": e.model, "response": e.text,
                "error": e.error}
    if isinstance(e, ToolCalled):
        return {"step": "tool", "seq": r.seq, "tool": e.tool, "args": dict(e.args), "ok": e.ok, "parsed": e.parsed,
                "result": e.text}
    if isinstance(e, ProbeAnswered):
        return {"step": "answer", "seq": r.seq, "text": e.text, "tool_calls": e.tool_calls}
    if isinstance(e, ProbeJudged):
        return {"step": "judged", "seq": r.seq, "correct": e.correct, "method": e.method}
    return None


def probe_detail(system: str, episode: str, events: Sequence[RecordedEvent], probe_id: str) -> dict[str, Any] | None:
    """The probe's manifest, retrieval path and gold locations; None if the stream never asked it."""
    fold = _Fold()
    context: RecordedEvent | None = None
    rendered: Rendered | None = None
    located: dict[str, list[dict[str, Any]]] = {}
    mine: list[RecordedEvent] = []
    asked: ProbeAsked | None = None
    for r in events:
        e = r.event
        if getattr(e, "probe_id", None) == probe_id:
            mine.append(r)
            if isinstance(e, ProbeAsked):
                asked = e
            if isinstance(e, ContextRendered) and context is None:
                context, rendered = r, fold.render(e.budget)
                located = fold.locations(asked.gold if asked else "", rendered) if asked else {}
        fold.apply(r)
    if asked is None:
        return None
    row = next((p for p in probe_rows(system, episode, events) if p["probe_id"] == probe_id), None)
    manifest = None
    if context is not None and isinstance(context.event, ContextRendered):
        c = context.event
        manifest = {"seq": context.seq, "turn": c.turn, "purpose": c.purpose, "budget": c.budget, "tokens": c.tokens,
                    "parts": c.parts, "item_ids": list(c.item_ids)}
    path = [{"step": "context", "seq": context.seq, "ids": manifest["item_ids"] if manifest else []}] if context else []
    path += [s for s in map(_step, mine) if s is not None]
    return {
        "probe_id": probe_id, "type": asked.probe_type, "slot": asked.slot, "question": asked.text,
        "gold": asked.gold, "evidence": list(asked.evidence), "turn": asked.turn,
        "outcome": row, "manifest": manifest,
        "prompt": [{"part": p.name, "items": [{"id": i.item_id, "text": i.text, "tokens": i.tokens} for i in p.items]}
                   for p in rendered.parts] if rendered else [],
        "tool_calls": [s for s in path if s["step"] == "tool"],
        "retrieval_path": path,
        "gold_location": {"where": row["where"] if row else "", **located},
    }
