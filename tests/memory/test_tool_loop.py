"""The one tool loop (`memory.answering.converse`): a probe's answer and a live turn's reply both run it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ledgermem.gate.summary_format import split_memory_update
from ledgermem.ledger.events import Event
from ledgermem.projections.events import ContextRendered, LlmCalled, PagedIn, ToolCalled
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory import memory as memory_module
from ledgermem.memory.answering import NO_TOOLS, converse
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.tools import ToolResult
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)
ASK = 'get_raw_record(reference_id="r0001")'
SUMMARY = "The user's office is on 3F.\n[FACTS: office floor=3F]\n[OVERRIDES: none]"
RAISED = "get_raw_record raised RuntimeError: disk gone"


def block(inner: str) -> str:
    return f"<MEMORY_UPDATE>\n{inner}\n</MEMORY_UPDATE>"


def seen_or_ask(messages: Sequence[Message], *, tail: str = "") -> str:
    """Ask for a tool first; once a tool result is the last message, say what it was."""
    last = messages[-1]["content"]
    if last.startswith("[TOOL RESULT"):
        return f"seen: {last.splitlines()[1]}{tail}"
    return ASK


def scripted() -> ScriptedBackend:
    def reply(messages: Sequence[Message], purpose: str) -> str:
        if purpose == "respond":
            return seen_or_ask(messages, tail=f"\n{block(SUMMARY)}")
        if purpose == "answer":
            return seen_or_ask(messages)
        return SUMMARY

    return ScriptedBackend(reply)


@pytest.fixture()
def raising_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> ToolResult:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(memory_module, "run_tool", broken)


def tool_called(events: Sequence[Event]) -> list[ToolCalled]:
    return [e for e in events if isinstance(e, ToolCalled)]


# -- a raising tool, reached both ways --------------------------------------------------------------


def test_a_raising_tool_in_an_answer_is_a_failed_call_the_model_sees(raising_tools: None) -> None:
    m = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", "ep"), scripted(), config=CONFIG)
    m.add_turn("My office floor is 3F.", "Noted.")
    answer = m.answer("Which floor?", probe_id="p1")
    assert answer.text == f"seen: {RAISED}"
    assert [e.event_type for e in answer.events] == ["context_rendered", "llm_called", "tool_called", "llm_called"]
    [call] = tool_called(answer.events)
    assert (call.tool, call.ok, call.text, call.probe_id) == ("get_raw_record", False, RAISED, "p1")
    assert answer.tool_calls == 1 and answer.llm_calls == 2
    m.commit(answer.events)  # recorded like any other answer


def test_a_raising_tool_in_a_live_turn_is_a_failed_call_the_model_sees(raising_tools: None) -> None:
    m = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", "ep"), scripted(), config=CONFIG)
    reply = m.respond("My office floor is 3F.")
    events = [r.event for r in reply.recorded]
    assert reply.text == f"seen: {RAISED}" and reply.self_written  # the turn goes on and is committed
    [call] = tool_called(events)
    assert (call.tool, call.ok, call.text, call.turn) == ("get_raw_record", False, RAISED, 1)
    kinds = [e.event_type for e in events if isinstance(e, (LlmCalled, ToolCalled))]
    assert kinds == ["llm_called", "tool_called", "llm_called"]  # the tool call right after the call that asked
    assert m.state.turn == 1 and m.version == len(list(m.ledger.read(stream=m.stream)))


def test_without_the_fault_both_ways_run_the_tool() -> None:
    """Control: the same script with working tools gets the tool's real result, both ways."""
    m = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", "ep"), scripted(), config=CONFIG)
    reply = m.respond("My office floor is 3F.")
    assert reply.text.startswith("seen: ") and RAISED not in reply.text
    answer = m.answer("Which floor?")
    [call] = tool_called(answer.events)
    assert call.ok and answer.text == f"seen: {call.text.splitlines()[0]}"


# -- the loop itself --------------------------------------------------------------------------------


def backend_of(*responses: str) -> ScriptedBackend:
    return ScriptedBackend(list(responses))


def test_the_memory_update_hook_keeps_a_blocks_text_out_of_the_tool_calls() -> None:
    """A `<MEMORY_UPDATE>` block that looks like a tool call is not one when the hook strips it."""
    text = f"Done.\n{block(ASK)}"
    ran: list[str] = []

    def step(name: str, args: dict[str, str]) -> tuple[ToolResult, tuple[Event, ...]]:
        ran.append(name)
        return ToolResult(True, "r0001: hello"), ()

    hooked = converse(backend_of(text), [{"role": "user", "content": "hi"}], purpose="respond", turn=1, tools=step,
                      max_iterations=2, visible=lambda t: split_memory_update(t).visible)
    assert hooked.text == text and len(hooked.calls) == 1 and ran == [] and hooked.tool_events == ()
    plain = converse(backend_of(text, "Done."), [{"role": "user", "content": "hi"}], purpose="respond", turn=1,
                     tools=step, max_iterations=2)
    assert ran == ["get_raw_record"] and plain.text == "Done." and plain.tool_calls == 1


def test_what_a_step_records_follows_its_tool_call_and_every_call_its_tools() -> None:
    paged = PagedIn(turn=3, summary_id="s0001", until_turn=5)

    def step(name: str, args: dict[str, str]) -> tuple[ToolResult, tuple[Event, ...]]:
        return ToolResult(True, "paged in"), (paged,)

    talk = converse(backend_of('page_in(item_id="s0001")', "ok"), [{"role": "user", "content": "hi"}],
                    purpose="respond", turn=3, tools=step, max_iterations=4)
    assert [e.event_type for e in talk.events()] == ["llm_called", "tool_called", "paged_in", "llm_called"]
    assert talk.events()[2] is paged and talk.text == "ok"


def test_no_tools_answers_every_call_no_tools_uncounted_and_running_out_gives_no_text() -> None:
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    talk = converse(backend_of(ASK, ASK, ASK), messages, purpose="answer", turn=0, tools=None, max_iterations=2,
                    probe_id="p9")
    assert talk.text == "" and len(talk.calls) == 3 and talk.tool_calls == 0
    assert [(e.ok, e.text, e.probe_id) for e in tool_called(talk.events())] == [(False, NO_TOOLS, "p9")] * 2
    assert messages[-1]["content"].startswith("[TOOL RESULT get_raw_record]")  # the model saw both refusals
    assert not any(isinstance(e, ContextRendered) for e in talk.events())  # the caller records its own context
