"""`Memory`: the application around the pure core.

    command -> LLM -> decide -> append (one transaction per turn) -> evolve

Two ways to record a turn: `add_turn` when the agent's reply is given (a
dataset), with a summarizer call writing the memory update; `respond` when
the agent answers live, and the answering call may write the update itself
in a `<MEMORY_UPDATE>` block, the summarizer standing in when it does not.

The impure edge lives here: the clock (latency), the LLM call, the ledger
append. The state is only ever changed by evolving the events that were
committed, so the live state and a replay of the ledger cannot drift.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from dataclasses import dataclass, replace

from ledgermem.gate.commands import PageIn, PinConstraint, RecordTurn, Turn, TurnPlan
from ledgermem.gate.decide import decide
from ledgermem.gate.erasure import Erase, ErasurePlan, plan_erasure, raw_key, turn_key
from ledgermem.gate.errors import CommandRejected, InvariantViolation
from ledgermem.gate.invariants import check_i1, check_i2, check_i3, check_i5
from ledgermem.gate.plan import plan_turn, review, seal_keys
from ledgermem.gate.summary_format import split_memory_update
from ledgermem.ledger.blocks import Block, blob_map
from ledgermem.ledger.events import Event
from ledgermem.projections.events import ContextRendered, LlmCalled, PagedIn, SummaryCreated
from ledgermem.ledger.keys import SealWith
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.erasure import ErasureReceipt, append_erasure, receipt, scan_detail, shred, to_erase
from ledgermem.memory.cache import HotCache
from ledgermem.memory.answering import (
    Answer, ToolRunner, ToolStep, after_their_calls, call_backend, converse, with_pruned,
)
from ledgermem.memory.backends import Backend, Message
from ledgermem.memory.prompts import (
    respond_messages, summarizer_correction_messages, summarizer_messages, summarizer_pruned_lines,
    summarizer_retry_messages,
)
from ledgermem.memory.shell import EpisodeShell
from ledgermem.memory.three_layer import THREE_LAYER
from ledgermem.memory.tools import ToolResult, page_in_target, paged_in_result, run_tool
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.disagreements import disagreement_lines
from ledgermem.projections.materialise import LiveProjection, ProjectionStore
from ledgermem.projections.render import Rendered, render
from ledgermem.projections.state import EpisodeState, fold


@dataclass(frozen=True, slots=True)
class _Call:
    completion_text: str
    event: LlmCalled


@dataclass(frozen=True, slots=True)
class Reply:
    """A live turn: the answer the user sees and the events committed for it.

    `self_written`: the memory update came from the reply's own block;
    `fallback`: the block was missing or unusable and a summarizer call
    wrote the update. Exactly one of the two holds.
    """

    text: str
    recorded: tuple[RecordedEvent, ...]
    self_written: bool
    fallback: bool


@dataclass(frozen=True, slots=True)
class _Conversation:
    text: str  # the final response, blocks included; "" when the tool iterations ran out
    calls: tuple[LlmCalled, ...]
    tool_events: tuple[tuple[Event, ...], ...]  # per call, the tool calls it asked for (and their page-ins)




def self_write_counts(events: Iterable[Event]) -> dict[str, int]:
    """How each turn of one stream got its memory update, counted from the turn's `llm_called` events.

    A live turn has `respond` calls: with no `summarize` call its own block
    was used (a summary written by `self`, or NONE); with one, the block was
    missing or unusable. Two `summarize` calls in a turn are a format retry.
    """
    purposes: dict[int, list[str]] = defaultdict(list)
    written = 0
    for e in events:
        if isinstance(e, LlmCalled) and e.probe_id is None and e.error is None:  # a failed call wrote nothing
            purposes[e.turn].append(e.purpose)
        elif isinstance(e, SummaryCreated) and e.written_by == "self":
            written += 1
    turns = list(purposes.values())
    return {
        "self_written_turns": sum("respond" in p and "summarize" not in p for p in turns),
        "self_written_summaries": written,
        "self_write_fallbacks": sum("respond" in p and "summarize" in p for p in turns),
        "summarizer_format_retries": sum(p.count("summarize") >= 2 for p in turns),
    }


class Memory(EpisodeShell[EpisodeState]):
    """One episode's three-layer memory in one ledger stream: the episode shell around `three_layer`.

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
        cache: HotCache | None = None,
    ) -> None:
        self.strict = strict
        self.cache = cache  # a Redis hot cache of the rendered layers: written after each commit
        self.tools = tools
        super().__init__(ledger, stream, THREE_LAYER, backend, config=config, lang=lang,
                         max_tool_iterations=max_tool_iterations, projections=projections)

    def _opened(self) -> None:
        self._finish_shredding()

    def _commit(
        self, events: Sequence[Event], keys: Sequence[SealWith] | None = None, *, check: bool = True,
        blobs: dict[str, bytes] | None = None,
    ) -> tuple[RecordedEvent, ...]:
        """Append `events`, sealed under `keys` (one per event) or, by default, the gate's key of each."""
        self._finish_shredding()  # an erasure interrupted earlier in this process is completed first
        if keys is None and self.state.config.personal_data:
            keys = seal_keys(self.key_prefix, events)
        recorded = super()._commit(events, keys, blobs=blobs)
        if self.cache is not None and recorded:
            self.cache.store(self.stream, self.state, recorded[-1])
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

    # -- erasure ---------------------------------------------------------------------

    def erase(
        self, *, legal_basis: str, slot: str | None = None, value: str | None = None,
        record_id: str | None = None, subject: bool = False, exports: Sequence[Path] = (),
    ) -> ErasureReceipt:
        """Erase by slot (one value or all), by value, raw record, or the whole data subject; returns the receipt.

        A `value` without a `slot` is looked for (whole token, case-insensitive,
        whitespace-normalised) in every sealed field of the stream, so a value
        the fact grammar never extracted goes too: every key that sealed it is
        shredded with what derives from it.

        The keys of everything derived from the erased items are destroyed,
        the projection file is rebuilt into a new file, and the residue scan
        looks for the values everywhere they could survive, including the
        Parquet `exports` named (their rows, read with the remaining keys).
        What goes is decided by `gate.erasure.plan_erasure`; this only reads
        the stream for it and carries the plan out.
        """
        self._finish_shredding()  # a retry after an interrupted erasure completes it
        request = Erase(legal_basis=legal_basis, key_prefix=self.key_prefix, slot=slot, value=value,
                        record_id=record_id, subject=subject)
        plan = plan_erasure(request, [to_erase(self.ledger, self.stream, self.state)])
        events = self.carry_out(plan)
        values = set(plan.values)
        residue, shared, short = scan_detail(self.ledger, self.stream, self.projections, self.render().text,
                                             values, exports)
        if self.cache is not None:
            residue |= self.cache.residue(self.stream, values)
        return replace(receipt(events, residue, tuple(residue), short), streams=(str(self.stream),),
                       shared_elsewhere=shared)

    def carry_out(self, plan: ErasurePlan, copies: Sequence[StreamKey] = ()) -> tuple[Event, ...]:
        """Append an erasure decided for this stream and its `copies` (theirs first), destroy every key the
        plan names and rebuild the projection file once; returns this stream's events.

        The copies are other systems' streams of the same episode, appended
        to directly: they are not this memory's to fold.
        """
        for other in copies:
            append_erasure(self.ledger, other, plan)
        own = plan.events_of(str(self.stream))  # at the version this shell folded, like any command
        recorded = self.ledger.append(self.stream, list(own), expected_version=self._version) if own else ()
        if recorded:
            self._version = recorded[-1].stream_version
        try:
            self._projection.apply(recorded)
        except BaseException:
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)
            raise
        if self.cache is not None and recorded:
            self.cache.store(self.stream, self.state, recorded[-1])
        self._finish_shredding(plan.keys)
        if self.strict:
            self.check(recorded)
        return plan.events_of(self.key_prefix)

    def _finish_shredding(self, keys: Iterable[str] = ()) -> None:
        """Destroy the keys that `key_shredded` events name (and `keys`), rebuild the projections, refold.

        Idempotent: after a crash between the event and the key file's
        rewrite, reopening the memory completes the erasure.
        """
        if shred(self.ledger, self.projections, [*self.state.shredded_keys, *keys]):
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)

    # -- writing -------------------------------------------------------------------

    def _call(self, messages: list[Message], *, purpose: str, turn: int, probe_id: str | None = None) -> _Call:
        text, event = call_backend(self.backend, messages, purpose=purpose, turn=turn, probe_id=probe_id)
        return _Call(text, event)

    def add_turn(
        self, user: str, agent: str, *, occurred_at: str | None = None, source: str | None = None,
        blocks: Sequence[Block] = (),
    ) -> tuple[RecordedEvent, ...]:
        """Record one dialogue turn, summarise it, keep the chain in budget: one transaction.

        `blocks` (images and other typed content) are recorded by reference with the turn and their
        bytes stored in the ledger's blob table; the summarizer and the window see their captions.
        """
        plan = plan_turn(self.state, Turn(turn=self.state.turn + 1, user=user, agent=agent, occurred_at=occurred_at,
                                          source=source, blocks=tuple(b.ref() for b in blocks)))
        command = RecordTurn(plan=plan)
        if plan.summarize:
            summarizer, attempts = self._summarize(plan)
            command = replace(command, summarizer=summarizer, calls=attempts)
        return self._commit(decide(self.state, command), blobs=blob_map(blocks))

    def pin(self, text: str, *, kind: str = "constraint") -> tuple[RecordedEvent, ...]:
        """Declare a hard constraint (or an open loop, `kind="open_loop"`): pinned verbatim, never compressed."""
        return self._commit(decide(self.state, PinConstraint(kind=kind, text=text)))

    def respond(self, user: str, *, occurred_at: str | None = None, source: str | None = None) -> Reply:
        """Answer a live turn and record it with its one memory update: one transaction.

        One `respond` call sees the rendered memory and the user's message
        (tools only when this memory has them). Every `<MEMORY_UPDATE>` block
        is removed from the visible answer; the last usable one is the
        turn's update. Without one, the summarizer writes it from the
        visible answer.
        """
        turn = self.state.turn + 1
        rendered = self.render()
        context = ContextRendered(turn=turn, purpose="respond", item_ids=rendered.item_ids,
                                  parts=rendered.manifest(), budget=rendered.budget, tokens=rendered.tokens)
        talk = self._converse(rendered, user, turn)
        split = split_memory_update(talk.text)
        plan = plan_turn(self.state, Turn(turn=turn, user=user, agent=split.visible, occurred_at=occurred_at,
                                          source=source))
        update = split.update
        refused = update is not None and bool(review(self.state, plan, update).reasons)
        if not plan.summarize:
            command = RecordTurn(plan=plan, calls=talk.calls)  # the gate admits no memory update for this turn
        elif update is not None and not refused:
            command = RecordTurn(plan=plan, self_write=update, calls=talk.calls)
        else:
            summarizer, attempts = self._summarize(plan)
            command = RecordTurn(plan=plan, summarizer=summarizer, calls=(*talk.calls, *attempts),
                                 rejected_self_write=update if refused else None)
        events = after_their_calls(decide(self.state, command), talk.tool_events)
        recorded = self._commit([context, *events])
        self_written = update is not None and not refused and plan.summarize
        return Reply(split.visible, recorded, self_written=self_written,
                     fallback=not self_written and plan.summarize)

    def _summarize(self, plan: TurnPlan) -> tuple[LlmCalled, tuple[LlmCalled, ...]]:
        """The summarizer call to decide on, and the attempts before it that had to be retried.

        The prompt holds the plan's cleaned words. A response the gate's
        review refuses is asked for once more, the prompt naming what was
        wrong; a response that passes but has no `[OVERRIDES: ...]` tag once
        more with a reminder of the format. At most one retry of each kind:
        when the last response is refused too, `decide` keeps the turn as a
        raw record only (`summary_skipped`).
        """
        turn = plan.turn.turn
        messages = summarizer_messages(self.state, turn=turn, user=plan.user, agent=plan.agent)
        pruned = summarizer_pruned_lines(plan.user, plan.agent)
        calls: list[LlmCalled] = []
        reminded = corrected = False
        while True:
            call = with_pruned(self._call(messages, purpose="summarize", turn=turn).event, pruned)
            seen = review(self.state, plan, call.text)
            if seen.reasons and not corrected:
                corrected = True
                messages = summarizer_correction_messages(messages, seen.feedback)
            elif seen.tagless and not reminded:
                reminded = True
                messages = summarizer_retry_messages(messages)
            else:
                return call, tuple(calls)
            calls.append(call)

    def _converse(self, rendered: Rendered, user: str, turn: int) -> _Conversation:
        """The `respond` call, and the tool loop while it asks for tools; the final text is the reply."""
        messages = respond_messages(rendered, user, tools=self.tools, disagreements=disagreement_lines(self.state))
        talk = converse(self.backend, messages, purpose="respond", turn=turn, max_iterations=self.max_tool_iterations,
                        tools=self._respond_tool(turn) if self.tools else None,
                        # Tool calls are read from the visible part only: a block's FACTS are not arguments.
                        visible=lambda text: split_memory_update(text).visible)
        return _Conversation(talk.text, tuple(talk.calls), talk.tool_events)

    def _respond_tool(self, turn: int) -> ToolStep:
        """A live turn's tools: a page-in is recorded with this turn, right after the call that asked for it."""
        def step(name: str, args: dict[str, str]) -> tuple[ToolResult, tuple[Event, ...]]:
            if name == "page_in":
                return self._page_in_events(page_in_target(args), turn)
            return self.tool(name, args), ()
        return step

    # -- reading -------------------------------------------------------------------

    def render(self, budget: int | None = None) -> Rendered:
        if self.cache is not None and budget is None:
            return self.cache.rendered(self)
        return render(self.state, budget)

    def tool(self, name: str, args: dict[str, str]) -> ToolResult:
        """Run one tool now; `page_in` is committed at once (`page_in`), the others only read."""
        if name == "page_in":
            result, events = self._page_in_events(page_in_target(args), self.state.turn)
            if events:
                self._commit(events)
            return result
        return run_tool(self.state, name, args, blobs=self._read_blob)

    def page_in(self, item_id: str) -> tuple[RecordedEvent, ...]:
        """Bring an archived summary or a raw record back into the prompt for the next `page_in_turns` turns.

        It is shown at its original turn, marked as paged in, in its own part
        right after the window, within what the budget leaves; the manifest
        of every prompt lists it. An id that is not in this memory, erased,
        or already shown is refused (`CommandRejected`, naming why).
        """
        return self._commit(decide(self.state, PageIn(item_id=item_id, turn=self.state.turn)))

    def _page_in_events(self, item_id: str, turn: int) -> tuple[ToolResult, tuple[Event, ...]]:
        """A `page_in` call's result for the model and the events to record (none when refused)."""
        if not item_id:
            return ToolResult(False, "page_in: missing argument item_id"), ()
        try:
            events = decide(self.state, PageIn(item_id=item_id, turn=turn))
        except CommandRejected as exc:
            return ToolResult(False, str(exc)), ()
        paged = [e for e in events if isinstance(e, PagedIn)]  # what `decide` gives for a page-in
        return paged_in_result(fold(list(paged), self.state), item_id.strip()), events

    def _read_tool(self, name: str, args: dict[str, str]) -> ToolResult:
        return run_tool(self.state, name, args, blobs=self._read_blob)

    def _read_blob(self, sha256: str, turn: int) -> tuple[str, bytes | None]:
        """A block's bytes from the blob table, from the row sealed under its turn's keys only (the raw key;
        the turn key in a ledger written before raw text had a key of its own)."""
        keys: set[str | None] = ({raw_key(self.key_prefix, turn), turn_key(self.key_prefix, turn)}
                                 if self.state.config.personal_data else {None})
        found = self.ledger.get_blob(sha256, key_ids=keys)
        return found.state, found.data

    def _answer_tools(self) -> ToolRunner | None:
        # A question changes nothing in the memory: its tool loop reads only (no page-in).
        return self._read_tool if self.tools else None

    def ask(self, question: str, *, budget: int | None = None) -> Answer:
        """Answer and record how: the live-agent entry point."""
        answer = self.answer(question, budget=budget)
        self.commit(answer.events)
        return answer
