"""`three_layer` as a decider: the gate's `decide`, the projections' `evolve` and `render`.

Pure like its parts; `Memory` (`memory.memory`) is the episode shell that runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledgermem.gate.decide import Command, decide
from ledgermem.ledger.events import Event
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.disagreements import disagreement_lines
from ledgermem.projections.render import Rendered, render
from ledgermem.projections.state import EpisodeState, evolve


class ThreeLayer:
    """The three-layer memory's decider; its state is the episode state the projection store folds."""

    system = "three_layer"
    projected = True

    def initial(self) -> EpisodeState:
        return EpisodeState()

    def decide(self, state: EpisodeState, command: Command) -> tuple[Event, ...]:
        return decide(state, command)

    def evolve(self, state: EpisodeState, event: Event) -> EpisodeState:
        return evolve(state, event)  # events of no episode leave it unchanged

    def render(self, state: EpisodeState, budget: int | None = None) -> Rendered:
        return render(state, budget)

    def configure(self, config: MemoryConfig) -> MemoryConfig:
        return config

    def disagreements(self, state: EpisodeState) -> Sequence[str]:
        return disagreement_lines(state)

    def departed_summary(self, state: EpisodeState, record_id: str, slot: str) -> str | None:
        """A summary of the record holding the slot that is no longer in the active chain (archived or indexed)."""
        return next((s.summary_id for s in state.summaries.values()
                     if record_id in s.raw_ids and slot in dict(s.facts) and s.status != "active"), None)


THREE_LAYER = ThreeLayer()
