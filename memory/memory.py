"""`Memory`: the application around the pure core.

    command -> LLM -> decide -> append (one transaction per turn) -> evolve

The impure edge lives here: the clock (latency), the LLM call, the ledger
append. The state is only ever changed by evolving the events that were
committed, so the live state and a replay of the ledger cannot drift.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from dataclasses import dataclass, replace

from gate.commands import LlmCall, RecordTurn, StartEpisode
from gate.decide import decide
from gate.erasure import Erase, answer_key, index_key, turn_key, values_to_erase
from gate.errors import InvariantViolation
from gate.invariants import check_i1, check_i2, check_i3, check_i5
from ledger.events import ContextRendered, Event, IndexCreated, LlmCalled, ToolCalled
from ledger.keys import key_path
from ledger.store import Ledger, RecordedEvent, StreamKey
from memory.erasure import ErasureReceipt, mentions, personal_texts, receipt, scan
from memory.backends import Backend, Message, make_backend, prompt_hash
from memory.prompts import answer_messages, summarizer_messages, tool_result_message
from memory.toolcalls import parse_tool_calls
from memory.tools import ToolResult, run_tool
from projections.config import MemoryConfig
from projections.materialise import LiveProjection, ProjectionStore, last_erasure_seq, projection_path
from projections.render import Rendered, render
from projections.state import EpisodeState
from projections.tokens import default_tokenizer


KeyFor = Callable[[Event], str | None]


@dataclass(frozen=True, slots=True)
class Answer:
    """A visible answer and the events that record how it was reached (not yet appended)."""

    text: str
    events: tuple[Event, ...]
    tool_calls: int
    llm_calls: int
    rendered: Rendered


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
    ) -> ErasureReceipt:
        """Erase by slot (one value or all), raw record, or the whole data subject; returns the receipt.

        The keys of everything derived from the erased items are destroyed,
        the projection file is rebuilt into a new file, and the residue scan
        looks for the values everywhere they could survive, including the
        Parquet `exports` named (their rows, read with the remaining keys).
        """
        self._finish_shredding()  # a retry after an interrupted erasure completes it
        request = Erase(legal_basis=legal_basis, key_prefix=self.key_prefix, slot=slot, value=value,
                        record_id=record_id, subject=subject)
        decide(self.state, request)  # refuse a bad request before scanning anything
        values = values_to_erase(self.state, request)
        mentions = self._mentions(values)
        events = decide(self.state, replace(request, mentions=tuple(sorted(mentions))))
        recorded = self._commit(events, check=False)
        self._finish_shredding()
        if self.strict:
            self.check(recorded)
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
        started = time.perf_counter()
        completion = self.backend.complete(messages, purpose=purpose)
        latency = round((time.perf_counter() - started) * 1000, 3)
        event = LlmCalled(
            turn=turn, purpose=purpose, backend=self.backend.name, model=self.backend.model,
            prompt_hash=prompt_hash(messages), text=completion.text, usage=dict(completion.usage),
            latency_ms=latency, retries=completion.retries, error=completion.error, probe_id=probe_id,
        )
        return _Call(completion.text, event)

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
        turn = self.state.turn
        rendered = self.render(budget)
        events: list[Event] = [
            ContextRendered(turn=turn, purpose="answer", item_ids=rendered.item_ids, parts=rendered.manifest(),
                            budget=rendered.budget, tokens=rendered.tokens, probe_id=probe_id)
        ]
        messages = answer_messages(rendered, question, tools=self.tools)
        tool_calls = 0
        for iteration in range(self.max_tool_iterations + 1):
            call = self._call(messages, purpose="answer", turn=turn, probe_id=probe_id)
            events.append(call.event)
            parsed = parse_tool_calls(call.completion_text) if self.tools else None
            if parsed is None or (not parsed.calls and not parsed.unparsable):
                break
            if iteration == self.max_tool_iterations:
                break  # out of tool iterations: this response is the answer
            messages.append({"role": "assistant", "content": call.completion_text})
            for bad in parsed.unparsable:
                events.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool="?", args={}, ok=False,
                                         text=f"could not parse a tool call: {bad}", parsed=False))
                messages.append(tool_result_message("?", f"could not parse: {bad}"))
            for tc in parsed.calls:
                result = self.tool(tc.name, tc.args)
                tool_calls += 1
                events.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool=tc.name, args=tc.args,
                                         ok=result.ok, text=result.text))
                messages.append(tool_result_message(tc.name, result.text))
        llm_calls = sum(isinstance(e, LlmCalled) for e in events)
        return Answer(call.completion_text.strip(), tuple(events), tool_calls, llm_calls, rendered)

    def ask(self, question: str, *, budget: int | None = None) -> Answer:
        """Answer and record how: the live-agent entry point."""
        answer = self.answer(question, budget=budget)
        self.commit(answer.events)
        return answer
