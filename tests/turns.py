"""Building a turn's command as the application does: the gate's plan, then the observed calls."""

from __future__ import annotations

from typing import Any

from ledgermem.gate.commands import RecordTurn, Turn
from ledgermem.gate.plan import plan_turn
from ledgermem.projections.events import LlmCalled
from ledgermem.projections.state import EpisodeState


def called(response: str, turn: int, purpose: str = "summarize", *, backend: str = "scripted", model: str = "m",
           prompt_hash: str = "h") -> LlmCalled:
    """A model call of `turn` as the application observed it: the `llm_called` event recorded unchanged."""
    return LlmCalled(turn=turn, purpose=purpose, backend=backend, model=model, prompt_hash=prompt_hash, text=response)


def record_turn(state: EpisodeState, *, turn: int, user: str, agent: str, occurred_at: str | None = None,
                source: str | None = None, blocks: tuple[dict[str, Any], ...] = (), **update: Any) -> RecordTurn:
    """`RecordTurn` for the turn planned against `state`; `update` holds summarizer, calls, self_write, ..."""
    plan = plan_turn(state, Turn(turn=turn, user=user, agent=agent, occurred_at=occurred_at, source=source,
                                 blocks=blocks))
    return RecordTurn(plan=plan, **update)
