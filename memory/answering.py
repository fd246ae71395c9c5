"""The one tool loop (`converse`), shared by every memory system and both kinds of call.

A model call may ask for tools; their results go back into the
conversation until the model answers without one, or the iterations run
out. A system without tools runs the same loop: a call it asks for is
recorded and answered with "no tools", so a tool-call text never becomes
the answer by accident. A tool that raises is a failed call: recorded,
its error the result the model sees. A probe's answer
(`answer_with_tools`) and a live turn's reply (`Memory.respond`, whose
response may carry a `<MEMORY_UPDATE>` block that is not read for tool
calls) both run it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ledgermem.ledger.events import Event
from ledgermem.projections.events import ContextRendered, LlmCalled, ToolCalled
from ledgermem.memory.backends import Backend, Completion, Message, identity, prompt_hash
from ledgermem.memory.prompts import answer_messages, tool_result_message
from ledgermem.memory.prune import PRUNED_KEY
from ledgermem.memory.toolcalls import parse_tool_calls
from ledgermem.memory.tools import ToolResult
from ledgermem.projections.render import Rendered

ToolRunner = Callable[[str, dict[str, str]], ToolResult]
#: One tool call run by the loop: its result, and the events it records besides its `tool_called`.
ToolStep = Callable[[str, dict[str, str]], tuple[ToolResult, tuple[Event, ...]]]
NO_TOOLS = "this memory has no tools; answer from the memory shown"


@dataclass(frozen=True, slots=True)
class Answer:
    """A visible answer and the events that record how it was reached (not yet appended)."""

    text: str
    events: tuple[Event, ...]
    tool_calls: int
    llm_calls: int
    rendered: Rendered


def call_backend(
    backend: Backend, messages: Sequence[Message], *, purpose: str, turn: int, probe_id: str | None = None
) -> tuple[str, LlmCalled]:
    """One model call, timed, as the `llm_called` event that records it."""
    started = time.perf_counter()
    completion = backend.complete(messages, purpose=purpose)
    latency = round((time.perf_counter() - started) * 1000, 3)
    return completion.text, llm_called(backend, messages, completion, purpose=purpose, turn=turn,
                                       probe_id=probe_id, latency_ms=latency)


def with_pruned(event: LlmCalled, lines: int) -> LlmCalled:
    """The event of a summarizer call whose prompt left `lines` repeated lines out, counted in its usage."""
    return replace(event, usage={**event.usage, PRUNED_KEY: lines}) if lines else event


def llm_called(
    backend: Backend, messages: Sequence[Message], completion: Completion, *, purpose: str, turn: int,
    probe_id: str | None, latency_ms: float,
) -> LlmCalled:
    """The `llm_called` event of a finished call; a latency the backend reports (a replay's) beats ours."""
    name, model = identity(backend, purpose)
    return LlmCalled(
        turn=turn, purpose=purpose, backend=name, model=model,
        prompt_hash=prompt_hash(messages), text=completion.text, usage=dict(completion.usage),
        latency_ms=completion.latency_ms if completion.latency_ms is not None else latency_ms,
        retries=completion.retries, error=completion.error, probe_id=probe_id, attempts=completion.attempts,
    )


def answer_with_tools(
    backend: Backend,
    rendered: Rendered,
    question: str,
    *,
    turn: int,
    tools: ToolRunner | None,
    max_iterations: int,
    probe_id: str | None = None,
    today: str | None = None,
    disagreements: Sequence[str] = (),
) -> Answer:
    """Render -> ask -> (tool calls -> results)* -> answer; every step is an event.

    `disagreements`: lines naming the slots whose sources disagree, shown as data in the memory block.
    """
    context = ContextRendered(turn=turn, purpose="answer", item_ids=rendered.item_ids, parts=rendered.manifest(),
                              budget=rendered.budget, tokens=rendered.tokens, probe_id=probe_id)
    messages = answer_messages(rendered, question, tools=tools is not None, today=today, disagreements=disagreements)
    talk = converse(backend, messages, purpose="answer", turn=turn, probe_id=probe_id, max_iterations=max_iterations,
                    tools=None if tools is None else _reading(tools))
    return Answer(talk.text.strip(), (context, *talk.events()), talk.tool_calls, len(talk.calls), rendered)


def _reading(tools: ToolRunner) -> ToolStep:
    """A tool runner that only reads, as a step of the loop: its result and nothing more to record."""
    return lambda name, args: (tools(name, args), ())


@dataclass(frozen=True, slots=True)
class Conversation:
    """What one run of the tool loop said and did (nothing appended yet)."""

    text: str  # the last response as written (blocks included); "" when the iterations ran out still asking
    calls: tuple[LlmCalled, ...]
    tool_events: tuple[tuple[Event, ...], ...]  # per call that asked for tools: its `tool_called` events and theirs
    tool_calls: int  # tool calls the system ran (one answered "no tools" is recorded, not counted)

    def events(self) -> tuple[Event, ...]:
        """Every call followed by the tool calls it asked for, in order."""
        return tuple(after_their_calls(self.calls, self.tool_events))


def after_their_calls(events: Sequence[Event], tool_events: Sequence[tuple[Event, ...]]) -> list[Event]:
    """Each call's tool calls placed right after the `llm_called` event that asked for them."""
    pending = list(tool_events)
    out: list[Event] = []
    for e in events:
        out.append(e)
        if isinstance(e, LlmCalled) and pending:
            out += pending.pop(0)
    return out


def converse(
    backend: Backend,
    messages: list[Message],
    *,
    purpose: str,
    turn: int,
    tools: ToolStep | None,
    max_iterations: int,
    probe_id: str | None = None,
    visible: Callable[[str], str] | None = None,
) -> Conversation:
    """The one tool loop: call -> (tool calls -> results)* -> the response that asks for none.

    `tools`: runs one tool call, giving its result and any events it
    records besides its `tool_called` (a live turn's page-in); None for a
    system without tools, whose calls are all answered `NO_TOOLS`. A tool
    that raises is a failed call like any other: recorded, and its error
    is the result the model sees. `visible`: the part of a response tool
    calls are read from (a live turn's `<MEMORY_UPDATE>` block is not
    arguments); the whole response when None. `messages` grows with the
    conversation.
    """
    calls: list[LlmCalled] = []
    tool_events: list[tuple[Event, ...]] = []
    ran = 0
    for iteration in range(max_iterations + 1):
        text, event = call_backend(backend, messages, purpose=purpose, turn=turn, probe_id=probe_id)
        calls.append(event)
        parsed = parse_tool_calls(visible(text) if visible is not None else text)
        if not parsed.calls and not parsed.unparsable:
            return Conversation(text, tuple(calls), tuple(tool_events), ran)
        if iteration == max_iterations:
            break
        messages.append({"role": "assistant", "content": text})
        asked: list[Event] = []
        for bad in parsed.unparsable:
            asked.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool="?", args={}, ok=False,
                                    text=f"could not parse a tool call: {bad}", parsed=False))
            messages.append(tool_result_message("?", f"could not parse: {bad}"))
        for tc in parsed.calls:
            result, recorded = _run(tools, tc.name, tc.args)
            ran += tools is not None
            asked.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool=tc.name, args=tc.args, ok=result.ok,
                                    text=result.text))
            asked += recorded
            messages.append(tool_result_message(tc.name, result.text))
        tool_events.append(tuple(asked))
    # Out of tool iterations and still asking for tools: no answer, never the call text.
    return Conversation("", tuple(calls), tuple(tool_events), ran)


def _run(tools: ToolStep | None, name: str, args: dict[str, str]) -> tuple[ToolResult, tuple[Event, ...]]:
    if tools is None:
        return ToolResult(False, NO_TOOLS), ()
    try:
        return tools(name, args)
    except Exception as exc:  # a tool that fails is a failed call, recorded, never a crash
        return ToolResult(False, f"{name} raised {type(exc).__name__}: {exc}"), ()
