"""The three baselines this memory is compared with, event-sourced like it.

Every baseline shares the LLM, the answer contract and the tool loop with
`three_layer`; they differ only in what they remember:

* `full_context`: every raw turn, rendered newest first until the context
  budget is full (oldest-first truncation). No summaries, no tools.
* `naive_chain`: a sliding window of raw turns plus an append-only chain of
  summaries from the same summarizer contract; overrides are ignored and the
  oldest summaries are deleted once the chain passes its budget. No archive,
  no tools.
* `memgpt_style`: a sliding window plus one rolling summary; each turn that
  leaves the window is folded into a new rolling summary by the summarizer,
  and the evicted text and the previous summary are deleted. No tools.

Their state changes are events too (`baseline_written`, `baseline_dropped`,
and the shared `turn_recorded` / `window_evicted` / `llm_called`), so a
baseline's run replays from the ledger exactly like this memory's. What a
baseline deleted stays in the ledger for the audit; the baseline itself can
no longer read it, which is what the diagnostics call "raw only".

`decide_*` and `evolve` are pure; `BaselineMemory` is the impure shell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ledgermem.evaluation.errors import BaselineError
from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.decide import decide
from ledgermem.gate.erasure import answer_key, turn_key
from ledgermem.gate.summary_format import parse_summary
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeStarted, Fact, LlmCalled, TurnRecorded, WindowEvicted
from ledgermem.evaluation.events import BaselineDropped, BaselineWritten
from ledgermem.ledger.blocks import Block, blob_map, with_captions
from ledgermem.ledger.keys import ERASED, SealWith, key_path
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.answering import Answer, answer_with_tools, call_backend, with_pruned
from ledgermem.memory.erasure import answer_keys
from ledgermem.memory.backends import Backend
from ledgermem.memory.factory import make_backend
from ledgermem.memory.prompts import (
    chain_summarizer_messages, rolling_pruned_lines, rolling_summary_messages, summarizer_pruned_lines,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import LiveProjection, ProjectionStore, projection_path
from ledgermem.projections.render import Item as RenderItem
from ledgermem.projections.render import Part, Rendered, facts_tag, turn_line
from ledgermem.projections.state import RawRecord, record_id_for
from ledgermem.projections.tokens import count_tokens, default_tokenizer, truncate_to_tokens

BASELINES: tuple[str, ...] = ("full_context", "memgpt_style", "naive_chain")


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One thing a baseline remembers besides raw turns: a summary, or the rolling summary."""

    item_id: str
    turn: int
    text: str
    facts: tuple[Fact, ...]
    raw_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BaselineState:
    kind: str = ""
    config: MemoryConfig = field(default_factory=MemoryConfig)
    started: bool = False
    turn: int = 0
    raw: dict[str, RawRecord] = field(default_factory=dict)  # the raw turns the system can still read
    window: tuple[str, ...] = ()
    items: tuple[MemoryItem, ...] = ()
    written: int = 0  # items ever written (ids are numbered from it)

    def next_item_id(self) -> str:
        prefix = "m" if self.kind == "memgpt_style" else "n"
        return f"{prefix}{self.written + 1:04d}"


def evolve(state: BaselineState, event: Event) -> BaselineState:
    """The baseline's state after `event`. Pure; events it does not use leave it unchanged."""
    match event:
        case EpisodeStarted():
            config = MemoryConfig.from_dict(event.config)
            return BaselineState(kind=config.system, config=config, started=True)
        case TurnRecorded():
            rec = RawRecord(record_id=event.record_id, turn=event.turn, occurred_at=event.occurred_at,
                            user=event.text, agent=event.agent, source=event.source, blocks=event.blocks)
            return replace(state, turn=event.turn, raw={**state.raw, rec.record_id: rec},
                           window=(*state.window, rec.record_id))
        case WindowEvicted():
            return replace(state, window=tuple(r for r in state.window if r != event.record_id))
        case BaselineWritten():
            # An item is dated by the newest turn it covers (a rolling summary lags the window).
            covered = [state.raw[r].turn for r in event.raw_ids if r in state.raw]
            item = MemoryItem(event.summary_id, max(covered, default=event.turn), event.text, event.facts,
                              event.raw_ids)
            return replace(state, items=(*state.items, item), written=state.written + 1)
        case BaselineDropped():
            gone = set(event.dropped)
            return replace(state, items=tuple(i for i in state.items if i.item_id not in gone),
                           raw={k: v for k, v in state.raw.items() if k not in gone})
        case _:
            return state


def fold(events: Iterable[Event], state: BaselineState | None = None) -> BaselineState:
    s = state or BaselineState()
    for e in events:
        s = evolve(s, e)
    return s


# -- rendering ------------------------------------------------------------------------


def item_line(item: MemoryItem, kind: str) -> str:
    if kind == "memgpt_style":
        return f"- {item.item_id} (turns 1-{item.turn}) {item.text} {facts_tag(item.facts)}"
    raw = ", ".join(item.raw_ids)
    return f"- {item.item_id} (turn {item.turn}; raw {raw}) {item.text} {facts_tag(item.facts)}"


def _raw_items(state: BaselineState, ids: Iterable[str]) -> list[RenderItem]:
    tok = state.config.tokenizer
    out = []
    for rid in ids:
        r = state.raw.get(rid)
        if r is None or r.user == ERASED:
            continue
        text = turn_line(rid, r.turn, with_captions(r.user, r.blocks), with_captions(r.agent, r.blocks, "agent"))
        out.append(RenderItem(rid, text, count_tokens(text, tok)))
    return out


def chain_tokens(state: BaselineState) -> int:
    """What a naive chain's budget is measured on: its rendered summary lines."""
    return sum(count_tokens(item_line(i, state.kind), state.config.tokenizer) for i in state.items)


def chain_text_tokens(state: BaselineState) -> int | None:
    """Avg_Active_Chain_Tokens counts summary text only; a full-context memory has no chain."""
    if state.kind == "full_context":
        return None
    return sum(count_tokens(i.text, state.config.tokenizer) for i in state.items)


def render(state: BaselineState, budget: int | None = None) -> Rendered:
    """What the baseline shows the model, newest first within `budget` (oldest items are cut)."""
    tok = state.config.tokenizer
    limit = state.config.context_budget if budget is None else budget
    if state.kind == "full_context":
        kept: list[RenderItem] = []
        used = 0
        for item in reversed(_raw_items(state, sorted(state.raw, key=lambda r: state.raw[r].turn))):
            if used + item.tokens > limit:
                break
            kept.append(item)
            used += item.tokens
        return Rendered((Part("dialogue", tuple(reversed(kept))),), limit, tok)
    window: list[RenderItem] = []
    used = 0
    for item in reversed(_raw_items(state, state.window)):  # a window over the budget loses its oldest turns
        if used + item.tokens > limit and window:
            break
        window.insert(0, item)
        used += item.tokens
    name = "rolling" if state.kind == "memgpt_style" else "summaries"
    shown: list[RenderItem] = []
    for item in reversed(state.items):
        line = item_line(item, state.kind)
        n = count_tokens(line, tok)
        if used + n > limit and shown:
            break
        if used + n > limit:  # the newest item always keeps its head
            line = truncate_to_tokens(line, max(limit - used - 1, 1), tok) + "…"
            n = count_tokens(line, tok)
        shown.append(RenderItem(item.item_id, line, n))
        used += n
    return Rendered((Part("window", tuple(window)), Part(name, tuple(reversed(shown)))), limit, tok)


# -- deciding -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineTurn:
    """Record one turn; `summarizer` is the call the shell made (None when the kind needs none)."""

    turn: int
    user: str
    agent: str
    occurred_at: str | None = None
    source: str | None = None
    summarizer: LlmCalled | None = None
    blocks: tuple[dict[str, Any], ...] = ()  # block references (`ledger.blocks`)


def to_evict(state: BaselineState) -> tuple[str, ...]:
    """Raw records that leave the window when the next turn arrives (none for full context)."""
    if state.kind == "full_context":
        return ()
    overflow = len(state.window) + 1 - state.config.window_turns
    return state.window[: max(overflow, 0)]


def needs_summarizer(state: BaselineState) -> bool:
    if state.kind == "naive_chain":
        return True
    return state.kind == "memgpt_style" and bool(to_evict(state))


def _bounded(state: BaselineState, text: str, limit: int) -> tuple[str, bool]:
    tok = state.config.tokenizer
    if count_tokens(text, tok) <= limit:
        return text, False
    return truncate_to_tokens(text, limit, tok), True


def decide_turn(state: BaselineState, cmd: BaselineTurn) -> tuple[Event, ...]:
    """The events of one turn for this baseline. Pure."""
    if not state.started:
        raise BaselineError(f"turn {cmd.turn}: the episode has not started")
    if cmd.turn <= state.turn:
        raise BaselineError(f"turn {cmd.turn}: turns must increase; the last was {state.turn}")
    rid = record_id_for(cmd.turn)
    events: list[Event] = [TurnRecorded(turn=cmd.turn, occurred_at=cmd.occurred_at, record_id=rid,
                                        text=cmd.user, agent=cmd.agent, source=cmd.source, blocks=cmd.blocks)]
    evicted = to_evict(state)
    events += [WindowEvicted(turn=cmd.turn, record_id=r) for r in evicted]
    if state.kind == "full_context":
        return tuple(events)
    if cmd.summarizer is not None:
        events.append(cmd.summarizer)
    draft = parse_summary(cmd.summarizer.text) if cmd.summarizer is not None else None
    if state.kind == "naive_chain":
        if evicted:
            events.append(BaselineDropped(turn=cmd.turn, dropped=evicted, reason="evicted"))
        if draft is not None:
            text, cut = _bounded(state, draft.text, state.config.summary_max_tokens)
            events.append(BaselineWritten(turn=cmd.turn, summary_id=state.next_item_id(), text=text,
                                          facts=draft.facts, raw_ids=(rid,), truncated=cut))
        after = fold(events, state)
        drop: list[str] = []
        newest = after.items[-1].item_id if draft is not None else None
        tokens = chain_tokens(after)
        for item in after.items:
            if tokens <= state.config.chain_budget:
                break
            if item.item_id == newest:
                continue
            drop.append(item.item_id)
            tokens -= count_tokens(item_line(item, state.kind), state.config.tokenizer)
        if drop:
            events.append(BaselineDropped(turn=cmd.turn, dropped=tuple(drop), reason="budget"))
        return tuple(events)
    # memgpt_style: the evicted turns are folded into a new rolling summary, then deleted with the old one.
    if evicted:
        old = tuple(i.item_id for i in state.items)
        if draft is not None:
            text, cut = _bounded(state, draft.text, state.config.chain_budget)
            events.append(BaselineWritten(turn=cmd.turn, summary_id=state.next_item_id(), text=text,
                                          facts=draft.facts, raw_ids=evicted, truncated=cut))
        else:
            old = ()  # the summarizer gave nothing usable: keep the old summary, the turns are lost anyway
        events.append(BaselineDropped(turn=cmd.turn, dropped=(*old, *evicted), reason="rolled"))
    return tuple(events)


def summarizer_messages(state: BaselineState, *, turn: int, user: str, agent: str) -> list[dict[str, str]]:
    """The prompt of this turn's summarizer call (only when `needs_summarizer`)."""
    cfg = state.config
    if state.kind == "naive_chain":
        lines = [item_line(i, state.kind) for i in state.items]
        return chain_summarizer_messages(lines, turn=turn, user=user, agent=agent,
                                         cap=cfg.summarizer_input_tokens, tokenizer=cfg.tokenizer)
    previous = "\n".join(f"{i.text} {facts_tag(i.facts)}" for i in state.items) or "(empty)"
    evicted = _evicted_lines(state)
    first = state.raw[to_evict(state)[0]].turn if evicted else turn
    last = state.raw[to_evict(state)[-1]].turn if evicted else turn
    return rolling_summary_messages(previous, evicted, first_turn=first, last_turn=last,
                                    max_tokens=cfg.chain_budget)


def _evicted_lines(state: BaselineState) -> list[str]:
    return [turn_line(r, state.raw[r].turn, with_captions(state.raw[r].user, state.raw[r].blocks),
                      with_captions(state.raw[r].agent, state.raw[r].blocks, "agent"))
            for r in to_evict(state) if r in state.raw]


def summarizer_pruned(state: BaselineState, *, user: str, agent: str) -> int:
    """How many repeated lines this turn's summarizer prompt leaves out (recorded with the call)."""
    if state.kind == "naive_chain":
        return summarizer_pruned_lines(user, agent)
    return rolling_pruned_lines(_evicted_lines(state))


# -- the impure shell -----------------------------------------------------------------

class BaselineMemory:
    """One baseline's episode in one ledger stream; opening a stream with events resumes it."""

    def __init__(
        self,
        ledger: Ledger,
        stream: StreamKey,
        backend: Backend | str = "heuristic",
        *,
        kind: str,
        config: MemoryConfig | None = None,
        lang: str | None = None,
        max_tool_iterations: int = 4,
        projections: ProjectionStore | None = None,
    ) -> None:
        if kind not in BASELINES:
            raise BaselineError(f"unknown baseline {kind!r}; baselines: {', '.join(BASELINES)}")
        self.ledger, self.stream, self.kind = ledger, stream, kind
        self.max_tool_iterations = max_tool_iterations
        self.projections = projections or ProjectionStore(projection_path(ledger.path))
        self.key_prefix = str(stream)
        if (config or MemoryConfig()).personal_data or Path(key_path(ledger.path)).exists():
            ledger.open_keys()
        history = list(ledger.read(stream=stream))
        self._projection = LiveProjection(stream, history, self.projections)
        self.state = fold(r.event for r in history)
        if not self.state.started:
            config = replace(config or MemoryConfig(), system=kind)
            if config.tokenizer == "auto":
                config = replace(config, tokenizer=default_tokenizer())
            self._commit(decide(self._projection.projector.state, StartEpisode(config=config, lang=lang)))
        elif self.state.kind != kind:
            raise BaselineError(f"{stream} holds a {self.state.kind!r} memory, not {kind!r}")
        tokenizer = self.state.config.tokenizer
        self.backend = make_backend(backend, tokenizer=tokenizer) if isinstance(backend, str) else backend

    @property
    def version(self) -> int:
        return self.ledger.stream_version(self.stream)

    def _commit(self, events: Sequence[Event], keys: Sequence[SealWith] | None = None,
                blobs: dict[str, bytes] | None = None) -> tuple[RecordedEvent, ...]:
        if keys is None and self.state.config.personal_data:
            keys = [turn_key(self.key_prefix, e.turn) for e in events]
        recorded = self.ledger.append(self.stream, list(events), expected_version=self.version,
                                      keys=keys, blobs=blobs)
        self.state = fold((r.event for r in recorded), self.state)
        try:
            self._projection.apply(recorded)
        except BaseException:
            self._projection = LiveProjection(self.stream, self.ledger.read(stream=self.stream), self.projections)
            raise
        return recorded

    def commit(self, events: Sequence[Event]) -> tuple[RecordedEvent, ...]:
        """Append the events of one answer (one transaction, one key)."""
        if not self.state.config.personal_data:
            return self._commit(events)
        answer = answer_key(self.key_prefix, self.version + 1)
        return self._commit(events, answer_keys(self.ledger, self.stream, self.key_prefix, answer, events))

    def add_turn(
        self, user: str, agent: str, *, occurred_at: str | None = None, source: str | None = None,
        blocks: Sequence[Block] = (),
    ) -> tuple[RecordedEvent, ...]:
        turn = self.state.turn + 1
        refs = tuple(b.ref() for b in blocks)
        call = None
        if needs_summarizer(self.state):
            messages = summarizer_messages(self.state, turn=turn, user=with_captions(user, refs),
                                           agent=with_captions(agent, refs, "agent"))
            _, call = call_backend(self.backend, messages, purpose="summarize", turn=turn)
            call = with_pruned(call, summarizer_pruned(self.state, user=user, agent=agent))
        cmd = BaselineTurn(turn=turn, user=user, agent=agent, occurred_at=occurred_at, source=source,
                           summarizer=call, blocks=refs)
        return self._commit(decide_turn(self.state, cmd), blobs=blob_map(blocks))

    def render(self, budget: int | None = None) -> Rendered:
        return render(self.state, budget)

    def answer(self, question: str, *, probe_id: str | None = None, budget: int | None = None,
               today: str | None = None) -> Answer:
        """The same answer contract and loop as `three_layer`, with no tools and no tool manual."""
        return answer_with_tools(self.backend, self.render(budget), question, turn=self.state.turn, tools=None,
                                 max_iterations=self.max_tool_iterations, probe_id=probe_id, today=today)
