"""`Memory`: the application around the pure core.

    command -> LLM -> decide -> append (one transaction per turn) -> evolve

The impure edge lives here: the clock (latency), the LLM call, the ledger
append. The state is only ever changed by evolving the events that were
committed, so the live state and a replay of the ledger cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from dataclasses import dataclass, replace

from gate.commands import LlmCall, RecordTurn, StartEpisode
from gate.decide import decide
from gate.erasure import Erase, answer_key, index_key, turn_key, values_to_erase
from gate.errors import InvariantViolation
from gate.invariants import check_i1, check_i2, check_i3, check_i5
from ledger.events import Event, IndexCreated, LlmCalled
from ledger.keys import key_path
from ledger.store import Ledger, RecordedEvent, StreamKey
from memory.erasure import ErasureReceipt, mentions, personal_texts, receipt, scan
from memory.answering import Answer, answer_with_tools, call_backend
from memory.backends import Backend, Message, make_backend
from memory.prompts import summarizer_messages
from memory.tools import ToolResult, run_tool
from projections.config import MemoryConfig
from projections.materialise import LiveProjection, ProjectionStore, last_erasure_seq, projection_path
from projections.render import Rendered, render
from projections.state import EpisodeState
from projections.tokens import default_tokenizer


KeyFor = Callable[[Event], str | None]


@dataclass(frozen=True, slots=True)
class _Call:
    completion_text: str
    event: LlmCalled


class Memory:
    """One episode's memory in one ledger stream.

    Opening a stream that already has events resumes it from the ledger.
    """

    def __init__(
        self,
        ledger: Ledger,
        stream: StreamKey,
        backend: Backend | str = "heuristic",
        *,
        config: MemoryConfig | None = None,
        lang: str | None = None,
        tools: bool = True,
        max_tool_iterations: int = 4,
        projections: ProjectionStore | None = None,
        strict: bool = False,
    ) -> None:
        self.ledger, self.stream, self.strict = ledger, stream, strict
        self.tools, self.max_tool_iterations = tools, max_tool_iterations
        self.projections = projections or ProjectionStore(projection_path(ledger.path))
        self.key_prefix = str(stream)
        if (config or MemoryConfig()).personal_data or Path(key_path(ledger.path)).exists():
            ledger.open_keys()
        self._projection = LiveProjection(stream, ledger.read(stream=stream), self.projections)
        if not self.state.started:
            config = config or MemoryConfig()
            if config.tokenizer == "auto":
                config = replace(config, tokenizer=default_tokenizer())
            self._commit(decide(self.state, StartEpisode(config=config, lang=lang)))
        self._finish_shredding()
        # A resumed episode keeps the tokenizer it was recorded with.
        tokenizer = self.state.config.tokenizer
        self.backend = make_backend(backend, tokenizer=tokenizer) if isinstance(backend, str) else backend

    @property
    def state(self) -> EpisodeState:
        return self._projection.projector.state

    @property
    def version(self) -> int:
        return self.ledger.stream_version(self.stream)

    def _turn_key(self, event: Event) -> str | None:
        if not self.state.config.personal_data:
            return None
        if isinstance(event, IndexCreated):
            return index_key(self.key_prefix, event.index_id)
        return turn_key(self.key_prefix, event.turn)

    def _commit(
        self, events: Sequence[Event], key_for: KeyFor | None = None, *, check: bool = True
    ) -> tuple[RecordedEvent, ...]:
        self._finish_shredding()  # an erasure interrupted earlier in this process is completed first
        recorded = self.ledger.append(self.stream, list(events), expected_version=self.version,
                                      key_for=key_for or self._turn_key)
        try:
            self._projection.apply(recorded)
        except BaseException:
            # The ledger has the events, the projection file may not: refold and catch up from the
            # ledger, so that the next commit starts from what is actually stored.
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)
            raise
        if self.strict and check:
            self.check(recorded)
        return recorded

    def check(self, recorded: Sequence[RecordedEvent] = ()) -> None:
        """Strict mode: the state invariants after a commit; raises on the first violation.

        I1 is checked for the summaries this commit wrote (the whole history
        is `audit`'s job), I2, I3 and I5 for the whole state.
        """
        state, name = self.state, str(self.stream)
        seq = recorded[-1].seq if recorded else self.ledger.last_seq
        violations = [
            *check_i1(name, list(recorded), state),
            *check_i2(name, seq, state, render(state)),
            *check_i3(name, seq, state),
            *check_i5(name, seq, state, self.ledger.keys),
        ]
        if violations:
            v = violations[0]
            raise InvariantViolation(v.invariant, v.seq, v.ids, v.message)

    def commit(self, events: Sequence[Event]) -> tuple[RecordedEvent, ...]:
        """Append the events of one answer (one transaction, one key) and evolve the live projection."""
        key = answer_key(self.key_prefix, self.version + 1) if self.state.config.personal_data else None
        return self._commit(events, key_for=lambda e: key)

    # -- erasure ---------------------------------------------------------------------

    def erase(
        self, *, legal_basis: str, slot: str | None = None, value: str | None = None,
        record_id: str | None = None, subject: bool = False, exports: Sequence[Path] = (),
        also: Iterable[str] = (), scan_residue: bool = True,
    ) -> ErasureReceipt:
        """Erase by slot (one value or all), raw record, or the whole data subject; returns the receipt.

        The keys of everything derived from the erased items are destroyed,
        the projection file is rebuilt into a new file, and the residue scan
        looks for the values everywhere they could survive, including the
        Parquet `exports` named (their rows, read with the remaining keys).
        `also` adds values found in another stream of the same subject (a
        baseline's copy of the dialogue is erased by the values its
        three_layer stream names); `scan_residue=False` leaves the scan to
        the caller that erases several streams.
        """
        self._finish_shredding()  # a retry after an interrupted erasure completes it
        request = Erase(legal_basis=legal_basis, key_prefix=self.key_prefix, slot=slot, value=value,
                        record_id=record_id, subject=subject)
        extra = set(also)
        if not extra:
            decide(self.state, request)  # refuse a bad request before scanning anything
        values = values_to_erase(self.state, request) | extra
        mentions = self._mentions(values)
        events = decide(self.state, replace(request, mentions=tuple(sorted(mentions))))
        recorded = self._commit(events, check=False)
        self._finish_shredding()
        if self.strict:
            self.check(recorded)
        if not scan_residue:
            return receipt(events, {}, (), 0)
        residue, places, short = scan(self.ledger, self.stream, self.projections, self.render().text, values,
                                      exports)
        return receipt(events, residue, places, short)

    def _mentions(self, values: set[str]) -> set[str]:
        """Keys of every event of this stream whose plaintext contains a value being erased."""
        sealed = self.ledger.sealed_keys(self.stream)
        found: set[str] = set()
        for r in self.ledger.read(stream=self.stream):
            if any(mentions(t, values) for t in personal_texts(r.event)):
                found |= sealed.get(r.seq, set())
        return found

    def _finish_shredding(self) -> None:
        """Destroy the keys that `key_shredded` events name, rebuild the projections, refold.

        Idempotent: after a crash between the event and the key file's
        rewrite, reopening the memory completes the erasure.
        """
        keys = self.ledger.keys
        pending = [k for k in self.state.shredded_keys if keys is not None and k in keys]
        if pending:
            assert keys is not None
            keys.shred(pending)
        if pending or last_erasure_seq(self.ledger) > self.projections.erasure_mark():
            self.projections.rebuild_from(self.ledger)
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)

    # -- writing -------------------------------------------------------------------

    def _call(self, messages: list[Message], *, purpose: str, turn: int, probe_id: str | None = None) -> _Call:
        text, event = call_backend(self.backend, messages, purpose=purpose, turn=turn, probe_id=probe_id)
        return _Call(text, event)

    def add_turn(
        self, user: str, agent: str, *, occurred_at: str | None = None, source: str | None = None
    ) -> tuple[RecordedEvent, ...]:
        """Record one dialogue turn, summarise it, keep the chain in budget: one transaction."""
        turn = self.state.turn + 1
        call = self._call(summarizer_messages(self.state, turn=turn, user=user, agent=agent),
                          purpose="summarize", turn=turn)
        e = call.event
        summarizer = LlmCall(
            purpose=e.purpose, backend=e.backend, model=e.model, prompt_hash=e.prompt_hash, response=e.text,
            usage=e.usage, latency_ms=e.latency_ms, retries=e.retries, error=e.error,
        )
        command = RecordTurn(turn=turn, user=user, agent=agent, occurred_at=occurred_at, source=source,
                             summarizer=summarizer)
        return self._commit(decide(self.state, command))

    # -- reading -------------------------------------------------------------------

    def render(self, budget: int | None = None) -> Rendered:
        return render(self.state, budget)

    def tool(self, name: str, args: dict[str, str]) -> ToolResult:
        return run_tool(self.state, name, args)

    def answer(self, question: str, *, probe_id: str | None = None, budget: int | None = None) -> Answer:
        """Answer with the tool loop; returns the answer and its events without appending them."""
        return answer_with_tools(
            self.backend, self.render(budget), question, turn=self.state.turn,
            tools=self.tool if self.tools else None, max_iterations=self.max_tool_iterations, probe_id=probe_id,
        )

    def ask(self, question: str, *, budget: int | None = None) -> Answer:
        """Answer and record how: the live-agent entry point."""
        answer = self.answer(question, budget=budget)
        self.commit(answer.events)
        return answer
