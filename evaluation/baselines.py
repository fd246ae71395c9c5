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

Each baseline is a decider (`FULL_CONTEXT`, `MEMGPT_STYLE`, `NAIVE_CHAIN`):
its own `decide`, the shared pure `evolve` and `render`. `BaselineMemory`
is the one episode shell (`memory.shell`) running one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ledgermem.evaluation.errors import BaselineError
from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.decide import decide
from ledgermem.gate.summary_format import parse_summary
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeStarted, Fact, LlmCalled, TurnRecorded, WindowEvicted
from ledgermem.evaluation.events import BaselineDropped, BaselineWritten
from ledgermem.ledger.blocks import Block, blob_map, with_captions
from ledgermem.ledger.compat import assert_never
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.answering import call_backend, with_pruned
from ledgermem.memory.backends import Backend
from ledgermem.memory.prompts import (
    chain_summarizer_messages, rolling_pruned_lines, rolling_summary_messages, summarizer_pruned_lines,
)
from ledgermem.memory.shell import Decider, EpisodeShell
from ledgermem.memory.three_layer import THREE_LAYER
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore
from ledgermem.projections.render import Item as RenderItem
from ledgermem.projections.render import Part, Rendered, facts_tag, turn_line
from ledgermem.projections.state import EpisodeState, RawRecord, record_id_for
from ledgermem.projections.tokens import count_tokens, truncate_to_tokens

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


def _recorded(state: BaselineState, cmd: BaselineTurn) -> tuple[list[Event], tuple[str, ...]]:
    """What every baseline records of a turn: the raw turn, the window's evictions; and the evicted ids."""
    if not state.started:
        raise BaselineError(f"turn {cmd.turn}: the episode has not started")
    if cmd.turn <= state.turn:
        raise BaselineError(f"turn {cmd.turn}: turns must increase; the last was {state.turn}")
    events: list[Event] = [TurnRecorded(turn=cmd.turn, occurred_at=cmd.occurred_at, record_id=record_id_for(cmd.turn),
                                        text=cmd.user, agent=cmd.agent, source=cmd.source, blocks=cmd.blocks)]
    evicted = to_evict(state)
    events += [WindowEvicted(turn=cmd.turn, record_id=r) for r in evicted]
    return events, evicted


def decide_full_context(state: BaselineState, cmd: BaselineTurn) -> tuple[Event, ...]:
    """`full_context` remembers every raw turn and writes nothing else. Pure."""
    events, _ = _recorded(state, cmd)
    return tuple(events)


def decide_naive_chain(state: BaselineState, cmd: BaselineTurn) -> tuple[Event, ...]:
    """`naive_chain`: the window's evictions dropped, the summary appended, the oldest dropped past budget. Pure."""
    events, evicted = _recorded(state, cmd)
    if cmd.summarizer is not None:
        events.append(cmd.summarizer)
    draft = parse_summary(cmd.summarizer.text) if cmd.summarizer is not None else None
    if evicted:
        events.append(BaselineDropped(turn=cmd.turn, dropped=evicted, reason="evicted"))
    if draft is not None:
        text, cut = _bounded(state, draft.text, state.config.summary_max_tokens)
        events.append(BaselineWritten(turn=cmd.turn, summary_id=state.next_item_id(), text=text,
                                      facts=draft.facts, raw_ids=(record_id_for(cmd.turn),), truncated=cut))
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


def decide_memgpt_style(state: BaselineState, cmd: BaselineTurn) -> tuple[Event, ...]:
    """`memgpt_style`: the evicted turns folded into a new rolling summary, then deleted with the old one. Pure."""
    events, evicted = _recorded(state, cmd)
    if cmd.summarizer is not None:
        events.append(cmd.summarizer)
    draft = parse_summary(cmd.summarizer.text) if cmd.summarizer is not None else None
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


_DECIDE_TURN: dict[str, Callable[[BaselineState, BaselineTurn], tuple[Event, ...]]] = {
    "full_context": decide_full_context, "memgpt_style": decide_memgpt_style, "naive_chain": decide_naive_chain,
}


def decide_turn(state: BaselineState, cmd: BaselineTurn) -> tuple[Event, ...]:
    """The events of one turn for the baseline the state is. Pure."""
    _recorded(state, cmd)  # an episode that has not started has no kind yet
    if state.kind not in _DECIDE_TURN:
        raise BaselineError(f"turn {cmd.turn}: a {state.kind!r} state is no baseline's; baselines: {', '.join(BASELINES)}")
    return _DECIDE_TURN[state.kind](state, cmd)


BaselineCommand = StartEpisode | BaselineTurn


@dataclass(frozen=True, slots=True)
class Baseline:
    """One baseline as a decider: its own turn decision over the shared state, `evolve` and `render`."""

    system: str
    projected = False  # its state is its own fold, not the projection store's

    def initial(self) -> BaselineState:
        return BaselineState()

    def decide(self, state: BaselineState, command: BaselineCommand) -> tuple[Event, ...]:
        match command:
            case StartEpisode():
                if state.started:
                    raise BaselineError(f"{self.system}: the episode has already started")
                return decide(EpisodeState(), command)  # the episode starts as every system's does
            case BaselineTurn():
                if state.started and state.kind != self.system:
                    raise BaselineError(f"turn {command.turn}: a {state.kind!r} state is not {self.system!r}")
                return _DECIDE_TURN[self.system](state, command)
            case _:
                assert_never(command)

    def evolve(self, state: BaselineState, event: Event) -> BaselineState:
        return evolve(state, event)

    def render(self, state: BaselineState, budget: int | None = None) -> Rendered:
        return render(state, budget)

    def configure(self, config: MemoryConfig) -> MemoryConfig:
        return replace(config, system=self.system)

    def disagreements(self, state: BaselineState) -> Sequence[str]:
        return ()  # a baseline shows no disagreement lines

    def departed_summary(self, state: BaselineState, record_id: str, slot: str) -> str | None:
        return None  # a baseline is asked about what it forgot by the raw record's id


FULL_CONTEXT, MEMGPT_STYLE, NAIVE_CHAIN = Baseline("full_context"), Baseline("memgpt_style"), Baseline("naive_chain")
DECIDERS: dict[str, Baseline] = {d.system: d for d in (FULL_CONTEXT, MEMGPT_STYLE, NAIVE_CHAIN)}


def decider_for(system: str) -> Decider[Any]:
    """The decider of one of the four systems, by the name its streams record (`episode_started`'s config)."""
    if system == THREE_LAYER.system:
        return THREE_LAYER
    if system not in DECIDERS:
        raise BaselineError(f"unknown system {system!r}; systems: {THREE_LAYER.system}, {', '.join(BASELINES)}")
    return DECIDERS[system]


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


# -- the shell ------------------------------------------------------------------------


class BaselineMemory(EpisodeShell[BaselineState]):
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
        self.kind = kind
        super().__init__(ledger, stream, DECIDERS[kind], backend, config=config, lang=lang,
                         max_tool_iterations=max_tool_iterations, projections=projections)

    def _opened(self) -> None:
        if self.state.kind != self.kind:
            raise BaselineError(f"{self.stream} holds a {self.state.kind!r} memory, not {self.kind!r}")

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
        return self._commit(self.decider.decide(self.state, cmd), blobs=blob_map(blocks))
