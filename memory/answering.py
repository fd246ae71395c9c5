"""The answer contract's tool loop, shared by every memory system.

A model call may ask for tools; their results go back into the
conversation until the model answers without one, or the iterations run
out. A system without tools runs the same loop: a call it asks for is
recorded and answered with "no tools", so a tool-call text never becomes
the answer by accident.
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
    events: list[Event] = [
        ContextRendered(turn=turn, purpose="answer", item_ids=rendered.item_ids, parts=rendered.manifest(),
                        budget=rendered.budget, tokens=rendered.tokens, probe_id=probe_id)
    ]
    messages = answer_messages(rendered, question, tools=tools is not None, today=today, disagreements=disagreements)
    tool_calls = 0
    text = ""
    for iteration in range(max_iterations + 1):
        text, event = call_backend(backend, messages, purpose="answer", turn=turn, probe_id=probe_id)
        events.append(event)
        parsed = parse_tool_calls(text)
        if not parsed.calls and not parsed.unparsable:
            break
        if iteration == max_iterations:
            text = ""  # out of tool iterations and still asking for tools: no answer, never the call text
            break
        messages.append({"role": "assistant", "content": text})
        for bad in parsed.unparsable:
            events.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool="?", args={}, ok=False,
                                     text=f"could not parse a tool call: {bad}", parsed=False))
            messages.append(tool_result_message("?", f"could not parse: {bad}"))
        for tc in parsed.calls:
            if tools is None:
                result = ToolResult(False, NO_TOOLS)
            else:
                try:
                    result = tools(tc.name, tc.args)
                except Exception as exc:  # a tool that fails is a failed call, recorded, never a crash
                    result = ToolResult(False, f"{tc.name} raised {type(exc).__name__}: {exc}")
                tool_calls += 1
            events.append(ToolCalled(turn=turn, probe_id=probe_id or "", tool=tc.name, args=tc.args,
                                     ok=result.ok, text=result.text))
            messages.append(tool_result_message(tc.name, result.text))
    llm_calls = sum(isinstance(e, LlmCalled) for e in events)
    return Answer(text.strip(), tuple(events), tool_calls, llm_calls, rendered)
