"""One episode shell, generic over a decider: every memory system is a decider run by it.

    open stream -> fold -> (command -> decide -> append at the expected version -> evolve)* -> answer

A memory system is its pure core, a `Decider`: an initial state,
`decide(state, command) -> events`, `evolve(state, event) -> state`, and
what the model is shown of a state (`render`). `three_layer` is one
(`memory.three_layer`), the harness's baselines are three more
(`evaluation.baselines`). The shell is written once: it opens the stream
(resuming it from the ledger when it has events, starting the episode when
it has none), appends one transaction per command at the stream's expected
version, folds what was committed into the state and the projection store,
and answers through the one tool loop (`memory.answering`). The state only
ever changes by evolving committed events, so a live state and a replay of
the ledger cannot drift.

`MemorySystem` is what the harness drives: any shell, whatever its decider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.erasure import answer_key, seal_key
from ledgermem.ledger.blocks import Block
from ledgermem.ledger.events import Event
from ledgermem.ledger.keys import FieldKeys, SealWith, key_path
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.answering import Answer, ToolRunner, answer_with_tools
from ledgermem.memory.backends import Backend
from ledgermem.memory.erasure import answer_keys
from ledgermem.memory.factory import make_backend
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import LiveProjection, ProjectionStore, projection_path
from ledgermem.projections.render import Rendered
from ledgermem.projections.tokens import default_tokenizer




class SystemState(Protocol):
    """What the shell and the harness read of any system's state."""

    @property
    def started(self) -> bool: ...

    @property
    def turn(self) -> int: ...

    @property
    def config(self) -> MemoryConfig: ...


S = TypeVar("S", bound=SystemState)


class Decider(Protocol[S]):
    """A memory system's pure core: no clock, uuid, I/O or LLM call in any method.

    `decide` takes `StartEpisode` (the shell starts every episode with it)
    and the system's own commands. `projected`: the state is the episode
    state the projection store folds (`three_layer`'s), so the shell reads
    it there instead of folding every event twice.
    """

    @property
    def system(self) -> str: ...

    @property
    def projected(self) -> bool: ...

    def initial(self) -> S: ...

    def decide(self, state: S, command: Any) -> tuple[Event, ...]: ...

    def evolve(self, state: S, event: Event) -> S: ...

    def render(self, state: S, budget: int | None = None) -> Rendered: ...

    def configure(self, config: MemoryConfig) -> MemoryConfig:
        """The configuration a new episode of this system starts with."""
        ...

    def disagreements(self, state: S) -> Sequence[str]:
        """Lines naming the slots whose sources disagree, shown with the memory when answering."""
        ...

    def departed_summary(self, state: S, record_id: str, slot: str) -> str | None:
        """The id of a summary of `record_id` holding `slot` that has left the prompt (None: no such item)."""
        ...


class MemorySystem(Protocol):
    """What the harness drives: one episode of any memory system in one ledger stream."""

    ledger: Ledger
    stream: StreamKey
    backend: Backend

    @property
    def state(self) -> SystemState: ...

    def add_turn(self, user: str, agent: str, *, occurred_at: str | None = None, source: str | None = None,
                 blocks: Sequence[Block] = ()) -> tuple[RecordedEvent, ...]: ...

    def commit(self, events: Sequence[Event]) -> tuple[RecordedEvent, ...]: ...

    def render(self, budget: int | None = None) -> Rendered: ...

    def answer(self, question: str, *, probe_id: str | None = None, budget: int | None = None,
               today: str | None = None) -> Answer: ...

    def departed_summary(self, record_id: str, slot: str) -> str | None: ...


class EpisodeShell(Generic[S]):
    """One episode of the system `decider` is, in one ledger stream; opening a stream with events resumes it.

    Subclasses add the system's commands (`add_turn`, ...) and may hook
    `_opened` (after the stream is open, before the backend is made),
    `_turn_key` (the key a turn's personal values are sealed under) and
    `_answer_tools` (the exact-id tools an answer may call).
    """

    def __init__(
        self,
        ledger: Ledger,
        stream: StreamKey,
        decider: Decider[S],
        backend: Backend | str = "heuristic",
        *,
        config: MemoryConfig | None = None,
        lang: str | None = None,
        max_tool_iterations: int = 4,
        projections: ProjectionStore | None = None,
    ) -> None:
        self.ledger, self.stream, self.decider = ledger, stream, decider
        self.max_tool_iterations = max_tool_iterations
        self.projections = projections or ProjectionStore(projection_path(ledger.path))
        self.key_prefix = str(stream)
        if (config or MemoryConfig()).personal_data or Path(key_path(ledger.path)).exists():
            ledger.open_keys()
        history = list(ledger.read(stream=stream))
        self._version = history[-1].stream_version if history else 0  # what the state has folded
        self._projection = LiveProjection(stream, history, self.projections)
        self._state: S = decider.initial()
        if not decider.projected:
            self._state = self._folded(r.event for r in history)
        if not self.state.started:
            config = decider.configure(config or MemoryConfig())
            if config.tokenizer == "auto":
                config = replace(config, tokenizer=default_tokenizer())
            self._commit(decider.decide(self.state, StartEpisode(config=config, lang=lang)))
        self._opened()
        # A resumed episode keeps the tokenizer it was recorded with.
        tokenizer = self.state.config.tokenizer
        self.backend: Backend = make_backend(backend, tokenizer=tokenizer) if isinstance(backend, str) else backend

    @property
    def state(self) -> S:
        if self.decider.projected:
            return self._projection.projector.state  # type: ignore[return-value]
        return self._state

    @property
    def version(self) -> int:
        """The stream version the state has folded: the next commit is expected at exactly this version."""
        return self._version

    def _folded(self, events: Any) -> S:
        state = self._state
        for e in events:
            state = self.decider.evolve(state, e)
        return state

    def _opened(self) -> None:
        """Called once the stream is open (and started); nothing to do for most systems."""

    def _turn_key(self, event: Event) -> str | FieldKeys | None:
        """The key a turn's event is sealed under (the erasure policy's `seal_key`: the raw key for its raw
        text, the turn key for what is derived from it)."""
        return seal_key(self.key_prefix, event, personal_data=self.state.config.personal_data)

    def _commit(self, events: Sequence[Event], keys: Sequence[SealWith] | None = None, *,
                blobs: dict[str, bytes] | None = None) -> tuple[RecordedEvent, ...]:
        """Append one transaction at the stream's expected version, then fold it into the state and projections.

        A stream another writer appended to since this shell folded it is
        refused (`ConcurrencyConflict`): a command is never decided on a
        state that is not the stream's.
        """
        if keys is None:
            keys = [self._turn_key(e) if type(e).PERSONAL else None for e in events]
        recorded = self.ledger.append(self.stream, list(events), expected_version=self._version,
                                      keys=keys, blobs=blobs)
        if recorded:
            self._version = recorded[-1].stream_version
        if not self.decider.projected:
            self._state = self._folded(r.event for r in recorded)
        try:
            self._projection.apply(recorded)
        except BaseException:
            # The ledger has the events, the projection file may not: refold and catch up from the
            # ledger, so that the next commit starts from what is actually stored.
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)
            raise
        return recorded

    def commit(self, events: Sequence[Event]) -> tuple[RecordedEvent, ...]:
        """Append the events of one answer (one transaction, one key) and evolve the state."""
        if not self.state.config.personal_data:
            return self._commit(events, [None] * len(events))
        answer = answer_key(self.key_prefix, self.version + 1)
        return self._commit(events, answer_keys(self.ledger, self.stream, self.key_prefix, answer, events))

    # -- reading -------------------------------------------------------------------

    def render(self, budget: int | None = None) -> Rendered:
        return self.decider.render(self.state, budget)

    def _answer_tools(self) -> ToolRunner | None:
        """The tools an answer may call; None: the system has none (every call is answered "no tools")."""
        return None

    def answer(self, question: str, *, probe_id: str | None = None, budget: int | None = None,
               today: str | None = None) -> Answer:
        """Answer with the tool loop; returns the answer and its events without appending them."""
        return answer_with_tools(
            self.backend, self.render(budget), question, turn=self.state.turn, tools=self._answer_tools(),
            max_iterations=self.max_tool_iterations, probe_id=probe_id, today=today,
            disagreements=self.decider.disagreements(self.state),
        )

    def departed_summary(self, record_id: str, slot: str) -> str | None:
        """The id of a summary of `record_id` holding `slot` that has left the prompt, if the system keeps one."""
        return self.decider.departed_summary(self.state, record_id, slot)
