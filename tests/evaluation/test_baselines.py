"""The three baselines: the pure core (decide, evolve, fold, render) and the ledger-backed shell."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.evaluation.baselines import (
    BASELINES,
    BaselineError,
    BaselineMemory,
    BaselineState,
    BaselineTurn,
    chain_tokens,
    decide_turn,
    evolve,
    fold,
    needs_summarizer,
    render,
    summarizer_messages,
)
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeStarted, LlmCalled, ToolCalled, TurnRecorded, WindowEvicted
from ledgermem.evaluation.events import BaselineDropped, BaselineWritten
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.answering import NO_TOOLS, call_backend
from ledgermem.memory.backends import Backend, Message, ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.prompts import TOOL_MANUAL
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.state import record_id_for
from ledgermem.projections.tokens import ESTIMATOR, count_tokens

HEURISTIC = HeuristicBackend(tokenizer=ESTIMATOR)

DIALOGUE_EN = (
    ("My office floor is 3F.", "Noted."),
    ("Nice weather today.", "Indeed."),
    ("My meeting time is 9am.", "Noted."),
    ("My office floor changed to 7F.", "Noted."),
    ("My home city is Lisbon.", "Noted."),
    ("How was your weekend?", "Quiet."),
)
FACT_TURNS_EN = (1, 3, 4, 5)
DIALOGUE_ZH = (
    ("我的工位是3楼。", "好的。"),
    ("今天天气不错。", "是的。"),
    ("我的工位改成了7楼。", "好的。"),
    ("周末过得怎么样？", "还行。"),
)


def config(kind: str = "three_layer", **overrides: Any) -> MemoryConfig:
    return MemoryConfig(system=kind, tokenizer=ESTIMATOR, personal_data=False, **overrides)


def open_baseline(kind: str, backend: Backend = HEURISTIC, *, ledger: Ledger | None = None,
                  episode: str = "ep", **overrides: Any) -> BaselineMemory:
    return BaselineMemory(ledger or Ledger(":memory:"), StreamKey("run", kind, episode), backend, kind=kind,
                          config=config(**overrides))


def feed(m: BaselineMemory, dialogue: Sequence[tuple[str, str]]) -> None:
    for user, agent in dialogue:
        m.add_turn(user, agent)


def stream_events(m: BaselineMemory, *types: str) -> list[Event]:
    return [r.event for r in m.ledger.read(stream=m.stream, event_types=list(types) or None)]


def replayed(m: BaselineMemory) -> BaselineState:
    return fold(r.event for r in m.ledger.read(stream=m.stream))


def scripted(summary: Callable[[str], str], answer: str = "I don't know.") -> ScriptedBackend:
    """A backend whose summarizer reply is a function of the prompt's user message."""

    def reply(messages: Sequence[Message], purpose: str) -> str:
        return summary(messages[-1]["content"]) if purpose == "summarize" else answer

    return ScriptedBackend(reply)


def ids(*turns: int) -> tuple[str, ...]:
    return tuple(record_id_for(t) for t in turns)


# -- full_context ---------------------------------------------------------------------


def test_full_context_keeps_every_turn_and_never_calls_a_summarizer() -> None:
    backend = ScriptedBackend([])  # any call at all would raise: the script is empty
    m = open_baseline("full_context", backend, window_turns=2)
    feed(m, DIALOGUE_EN)
    assert backend.calls == []
    assert set(m.state.raw) == set(ids(1, 2, 3, 4, 5, 6)) and m.state.window == ids(1, 2, 3, 4, 5, 6)
    assert m.state.items == ()
    assert stream_events(m, "window_evicted", "llm_called", "baseline_written", "baseline_dropped") == []
    assert m.render().item_ids == ids(1, 2, 3, 4, 5, 6)


def test_full_context_render_cuts_the_oldest_lines_first() -> None:
    m = open_baseline("full_context")
    feed(m, DIALOGUE_EN)
    lines = m.render().part("dialogue").items
    assert [i.item_id for i in lines] == list(ids(1, 2, 3, 4, 5, 6))
    for budget in range(0, sum(i.tokens for i in lines) + 2):
        shown = m.render(budget)
        kept = len(shown.item_ids)
        assert shown.tokens <= budget and shown.budget == budget
        assert shown.item_ids == ids(*range(7 - kept, 7))  # a suffix: the newest lines
        if kept < len(lines):  # the next older line would not have fitted
            assert shown.tokens + lines[-kept - 1].tokens > budget


def test_full_context_small_context_budget_keeps_the_newest_turns_in_order() -> None:
    probe = open_baseline("full_context")
    feed(probe, DIALOGUE_EN)
    budget = probe.render().part("dialogue").tokens - 1  # one token short of everything
    m = open_baseline("full_context", context_budget=budget)
    feed(m, DIALOGUE_EN)
    shown = m.render()
    assert shown.budget == budget and shown.tokens <= budget
    assert shown.item_ids == ids(2, 3, 4, 5, 6)
    assert "3F" not in shown.text and shown.text.index("r0002") < shown.text.index("r0006")


# -- naive_chain ----------------------------------------------------------------------


def test_naive_chain_writes_one_item_per_fact_turn() -> None:
    m = open_baseline("naive_chain")
    feed(m, DIALOGUE_EN)
    written = [e for e in stream_events(m, "baseline_written") if isinstance(e, BaselineWritten)]
    assert [e.turn for e in written] == list(FACT_TURNS_EN)
    assert [e.raw_ids for e in written] == [ids(t) for t in FACT_TURNS_EN]
    assert [e.summary_id for e in written] == ["n0001", "n0002", "n0003", "n0004"]
    assert [i.item_id for i in m.state.items] == ["n0001", "n0002", "n0003", "n0004"]
    # Every turn asked the summarizer, fact or not.
    assert [e.turn for e in stream_events(m, "llm_called")] == [1, 2, 3, 4, 5, 6]


def test_naive_chain_ignores_the_summarizers_overrides() -> None:
    m = open_baseline("naive_chain")
    feed(m, DIALOGUE_EN)
    calls = [e for e in stream_events(m, "llm_called") if isinstance(e, LlmCalled)]
    assert "[OVERRIDES: n0001]" in calls[3].text  # the 7F turn asked to override the 3F item ...
    assert "n0001" in [i.item_id for i in m.state.items]  # ... and the chain kept it
    assert all(isinstance(e, BaselineDropped) and "n0001" not in e.dropped
               for e in stream_events(m, "baseline_dropped"))
    text = m.render().text
    assert "office floor=3F" in text and "office floor=7F" in text


def test_naive_chain_drops_the_oldest_items_past_its_budget() -> None:
    m = open_baseline("naive_chain", chain_budget=70)  # two items fit, three do not
    for user, agent in DIALOGUE_EN:
        m.add_turn(user, agent)
        assert chain_tokens(m.state) <= 70
    drops = [e for e in stream_events(m, "baseline_dropped") if isinstance(e, BaselineDropped)]
    assert [(e.turn, e.dropped) for e in drops if e.reason == "budget"] == [(4, ("n0001",)), (5, ("n0002",))]
    written_at = {e.turn: e.summary_id for e in stream_events(m, "baseline_written") if isinstance(e, BaselineWritten)}
    assert all(written_at.get(e.turn) not in e.dropped for e in drops)
    assert [i.item_id for i in m.state.items] == ["n0003", "n0004"]


def test_naive_chain_keeps_an_oversized_newest_item_only_for_its_own_turn() -> None:
    m = open_baseline("naive_chain", chain_budget=10)
    m.add_turn("My office floor is 3F.", "Noted.")
    assert [i.item_id for i in m.state.items] == ["n0001"] and chain_tokens(m.state) > 10
    m.add_turn("My meeting time is 9am.", "Noted.")
    assert [i.item_id for i in m.state.items] == ["n0002"]
    m.add_turn("Nice weather today.", "Indeed.")
    assert m.state.items == ()
    drops = [(e.turn, e.dropped) for e in stream_events(m, "baseline_dropped") if isinstance(e, BaselineDropped)
             and e.reason == "budget"]
    assert drops == [(2, ("n0001",)), (3, ("n0002",))]


def test_naive_chain_window_evicts_raw_records() -> None:
    m = open_baseline("naive_chain", window_turns=2)
    feed(m, DIALOGUE_EN)
    assert m.state.window == ids(5, 6) and set(m.state.raw) == set(ids(5, 6))
    evicted = [(e.turn, e.record_id) for e in stream_events(m, "window_evicted") if isinstance(e, WindowEvicted)]
    assert evicted == [(3, "r0001"), (4, "r0002"), (5, "r0003"), (6, "r0004")]
    drops = [(e.turn, e.dropped, e.reason) for e in stream_events(m, "baseline_dropped")
             if isinstance(e, BaselineDropped)]
    assert drops == [(t, (r,), "evicted") for t, r in evicted]
    assert "r0001" not in m.render().item_ids and "n0001" in m.render().item_ids


def test_naive_chain_live_state_equals_the_replay_of_its_ledger() -> None:
    m = open_baseline("naive_chain", window_turns=2, chain_budget=60)
    feed(m, DIALOGUE_EN)
    assert stream_events(m, "baseline_dropped")  # the replay has drops to reproduce
    assert m.state == replayed(m)
    assert render(replayed(m)) == m.render()


# -- memgpt_style ---------------------------------------------------------------------

ROLLED = "Rolling summary.\n[FACTS: office floor=3F]"


def test_memgpt_asks_no_summarizer_until_the_window_overflows() -> None:
    backend = scripted(lambda prompt: ROLLED)
    m = open_baseline("memgpt_style", backend, window_turns=3)
    feed(m, DIALOGUE_EN[:3])
    assert backend.calls == [] and stream_events(m, "llm_called") == []
    m.add_turn(*DIALOGUE_EN[3])
    assert [purpose for purpose, _ in backend.calls] == ["summarize"]
    prompt = backend.calls[0][1][-1]["content"]
    assert "<EVICTED_TURNS turns=1-1>" in prompt and "My office floor is 3F." in prompt


def test_memgpt_each_eviction_rolls_a_new_summary_and_deletes_the_old_one() -> None:
    m = open_baseline("memgpt_style", window_turns=2)
    feed(m, DIALOGUE_EN)
    written = [e for e in stream_events(m, "baseline_written") if isinstance(e, BaselineWritten)]
    assert [(e.turn, e.summary_id, e.raw_ids) for e in written] == [
        (3, "m0001", ("r0001",)), (4, "m0002", ("r0002",)), (5, "m0003", ("r0003",)), (6, "m0004", ("r0004",))]
    drops = [(e.turn, e.dropped, e.reason) for e in stream_events(m, "baseline_dropped")
             if isinstance(e, BaselineDropped)]
    assert drops == [(3, ("r0001",), "rolled"), (4, ("m0001", "r0002"), "rolled"),
                     (5, ("m0002", "r0003"), "rolled"), (6, ("m0003", "r0004"), "rolled")]
    assert [i.item_id for i in m.state.items] == ["m0004"]
    assert set(m.state.raw) == set(m.state.window) == set(ids(5, 6))


def test_memgpt_heuristic_rolling_summary_holds_only_the_newest_values() -> None:
    m = open_baseline("memgpt_style", window_turns=1)
    feed(m, DIALOGUE_EN)
    (item,) = m.state.items
    assert dict(item.facts) == {"office floor": "7F", "meeting time": "9am", "home city": "Lisbon"}
    assert "3F" not in m.render().text
    assert all("3F" not in r.user for r in m.state.raw.values())
    # The ledger keeps what the baseline deleted, for the audit.
    assert any(isinstance(e, TurnRecorded) and "3F" in e.text for e in stream_events(m, "turn_recorded"))


@pytest.mark.parametrize("unusable", ["NONE", "", "[FACTS: ]", "[OVERRIDES: none]"])
def test_memgpt_unusable_summary_keeps_the_old_one_and_still_drops_the_turn(unusable: str) -> None:
    replies = iter([ROLLED, unusable])
    m = open_baseline("memgpt_style", scripted(lambda prompt: next(replies)), window_turns=1)
    feed(m, DIALOGUE_EN[:3])
    assert [(i.item_id, i.facts) for i in m.state.items] == [("m0001", (("office floor", "3F"),))]
    drops = [(e.turn, e.dropped, e.reason) for e in stream_events(m, "baseline_dropped")
             if isinstance(e, BaselineDropped)]
    assert drops == [(2, ("r0001",), "rolled"), (3, ("r0002",), "rolled")]
    assert set(m.state.raw) == {"r0003"}
    assert m.state == replayed(m)


def test_memgpt_rolling_summary_is_bounded_by_the_chain_budget() -> None:
    long = " ".join(f"word{i}" for i in range(200)) + "\n[FACTS: office floor=3F]"
    m = open_baseline("memgpt_style", scripted(lambda prompt: long), window_turns=1, chain_budget=50)
    feed(m, DIALOGUE_EN[:2])
    (written,) = [e for e in stream_events(m, "baseline_written") if isinstance(e, BaselineWritten)]
    assert written.truncated and count_tokens(written.text, ESTIMATOR) <= 50
    assert written.text.startswith("word0 word1") and written.facts == (("office floor", "3F"),)
    short = open_baseline("memgpt_style", scripted(lambda prompt: ROLLED), window_turns=1, chain_budget=50)
    feed(short, DIALOGUE_EN[:2])
    assert [e.truncated for e in stream_events(short, "baseline_written") if isinstance(e, BaselineWritten)] == [False]


# -- answers --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", BASELINES)
@pytest.mark.parametrize(("dialogue", "question", "gold", "stale"), [
    (DIALOGUE_EN, "What is my office floor now?", "7F", "3F"),
    (DIALOGUE_ZH, "我现在的工位是什么？", "7楼", "3楼"),
])
def test_each_baseline_answers_a_current_value_it_shows(
    kind: str, dialogue: Sequence[tuple[str, str]], question: str, gold: str, stale: str
) -> None:
    m = open_baseline(kind, window_turns=1)
    feed(m, dialogue)
    assert gold in m.render().text
    answer = m.answer(question)
    assert answer.text == gold and answer.tool_calls == 0 and answer.llm_calls == 1
    assert stale != answer.text


@pytest.mark.parametrize("kind", BASELINES)
def test_a_baseline_prompt_has_no_tool_manual(kind: str) -> None:
    backend = scripted(lambda prompt: "NONE", answer="7F")
    m = open_baseline(kind, backend, window_turns=2)
    feed(m, DIALOGUE_EN)
    answer = m.answer("What is my office floor now?", probe_id="p1")
    purpose, messages = backend.calls[-1]
    assert purpose == "answer" and "QUESTION: What is my office floor now?" in messages[-1]["content"]
    assert all(TOOL_MANUAL not in msg["content"] and "get_raw_record(" not in msg["content"] for msg in messages)
    assert answer.text == "7F" and [e.event_type for e in answer.events] == ["context_rendered", "llm_called"]


@pytest.mark.parametrize("kind", BASELINES)
def test_a_model_insisting_on_tools_is_told_there_are_none_and_gives_no_answer(kind: str) -> None:
    backend = scripted(lambda prompt: "NONE", answer='get_raw_record(reference_id="r0001")')
    m = open_baseline(kind, backend, window_turns=2)
    feed(m, DIALOGUE_EN)
    answer = m.answer("What did I say first?", probe_id="p1")
    attempts = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert answer.text == "" and answer.tool_calls == 0 and answer.llm_calls == m.max_tool_iterations + 1
    assert len(attempts) == m.max_tool_iterations
    assert all(not e.ok and e.text == NO_TOOLS and "no tools" in e.text and e.probe_id == "p1" for e in attempts)
    m.commit(answer.events)
    assert sum(isinstance(e, ToolCalled) for e in stream_events(m)) == m.max_tool_iterations


@pytest.mark.parametrize("kind", BASELINES)
def test_a_reopened_baseline_resumes_from_its_stream(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "ledger.duckdb"
    stream = StreamKey("run", kind, "ep")
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as projections:
        m = BaselineMemory(ledger, stream, HEURISTIC, kind=kind, config=config(window_turns=2, chain_budget=60),
                           projections=projections)
        feed(m, DIALOGUE_EN[:3])
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as projections:
        m = BaselineMemory(ledger, stream, HEURISTIC, kind=kind, config=config(), projections=projections)
        assert m.state.turn == 3 and m.state.config.window_turns == 2  # the recorded config, not the new one
        feed(m, DIALOGUE_EN[3:])
        assert m.state.turn == len(DIALOGUE_EN)
        assert m.state == fold(r.event for r in ledger.read(stream=stream))
        assert sum(isinstance(r.event, EpisodeStarted) for r in ledger.read(stream=stream)) == 1
        assert ledger.verify().ok


def test_opening_a_stream_as_another_kind_is_refused() -> None:
    m = open_baseline("naive_chain")
    m.add_turn(*DIALOGUE_EN[0])
    version = m.version
    with pytest.raises(BaselineError, match="naive_chain"):
        BaselineMemory(m.ledger, m.stream, HEURISTIC, kind="memgpt_style", config=config())
    with pytest.raises(BaselineError, match="unknown baseline 'three_layer'"):
        BaselineMemory(m.ledger, m.stream, HEURISTIC, kind="three_layer", config=config())
    three = StreamKey("run", "three_layer", "ep")
    Memory(m.ledger, three, HEURISTIC, config=config()).add_turn(*DIALOGUE_EN[0])
    with pytest.raises(BaselineError, match="three_layer"):
        BaselineMemory(m.ledger, three, HEURISTIC, kind="full_context", config=config())
    assert m.version == version


# -- the pure core --------------------------------------------------------------------


def started(kind: str, **overrides: Any) -> BaselineState:
    return evolve(BaselineState(), EpisodeStarted(config=config(kind, **overrides).to_dict()))


def heuristic_turn(state: BaselineState, user: str, agent: str) -> BaselineTurn:
    """The command the shell would build, with the summarizer call made outside the core."""
    turn = state.turn + 1
    call = None
    if needs_summarizer(state):
        _, call = call_backend(HEURISTIC, summarizer_messages(state, turn=turn, user=user, agent=agent),
                               purpose="summarize", turn=turn)
    return BaselineTurn(turn=turn, user=user, agent=agent, summarizer=call)


def drive(kind: str, dialogue: Sequence[tuple[str, str]], **overrides: Any) -> BaselineState:
    state = started(kind, **overrides)
    for user, agent in dialogue:
        state = fold(decide_turn(state, heuristic_turn(state, user, agent)), state)
    return state


@pytest.mark.parametrize("kind", BASELINES)
def test_decide_turn_refuses_turns_out_of_order(kind: str) -> None:
    state = drive(kind, DIALOGUE_EN[:2])
    for turn in (0, 1, 2):
        with pytest.raises(BaselineError, match="turns must increase"):
            decide_turn(state, BaselineTurn(turn=turn, user="hi", agent="ok"))
    with pytest.raises(BaselineError, match="has not started"):
        decide_turn(BaselineState(), BaselineTurn(turn=1, user="hi", agent="ok"))
    assert decide_turn(state, BaselineTurn(turn=3, user="hi", agent="ok"))[0] == TurnRecorded(
        turn=3, record_id="r0003", text="hi", agent="ok")


@pytest.mark.parametrize("kind", BASELINES)
def test_decide_and_evolve_leave_their_inputs_unchanged(kind: str) -> None:
    state = drive(kind, DIALOGUE_EN[:4], window_turns=2, chain_budget=60)
    cmd = heuristic_turn(state, *DIALOGUE_EN[4])
    state_before, cmd_before = copy.deepcopy(state), copy.deepcopy(cmd)
    events = decide_turn(state, cmd)
    assert decide_turn(state, cmd) == events  # same input, same events
    after = state
    for e in events:
        e_before = copy.deepcopy(e)
        after = evolve(after, e)
        assert e == e_before
    assert state == state_before and cmd == cmd_before
    assert after != state and after.turn == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.turn = 9  # type: ignore[misc]


# -- property: live == replay, and each kind's shape --------------------------------

STATEMENTS = (
    "My office floor is 3F.",
    "My office floor changed to 7F.",
    "My office floor is now 12F.",
    "My meeting time is 9am.",
    "我的工位是3楼。",
    "我的工位改成了7楼。",
    "Nice weather today.",
    "How was your weekend?",
    "今天天气不错。",
)
_streams = itertools.count()


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Ledger, ProjectionStore]]:
    """One in-memory ledger for every example (a stream each): opening DuckDB is the slow part."""
    with Ledger(":memory:") as ledger, ProjectionStore(":memory:") as projections:
        yield ledger, projections


def check_shape(state: BaselineState, budget: int, window: int) -> None:
    if state.kind == "full_context":
        assert set(state.raw) == set(ids(*range(1, state.turn + 1))) and state.items == ()
        return
    assert len(state.window) <= window and set(state.raw) == set(state.window)
    if state.kind == "memgpt_style":
        assert len(state.items) <= 1
    else:
        assert chain_tokens(state) <= budget or (len(state.items) == 1 and state.items[0].turn == state.turn)


@given(
    kind=st.sampled_from(BASELINES),
    turns=st.lists(st.sampled_from(STATEMENTS), max_size=6),
    window=st.integers(min_value=1, max_value=3),
    budget=st.sampled_from([12, 40, 400]),
)
def test_live_state_equals_the_fold_of_the_ledger(
    shared: tuple[Ledger, ProjectionStore], kind: str, turns: list[str], window: int, budget: int
) -> None:
    ledger, projections = shared
    stream = StreamKey("prop", kind, f"ep{next(_streams)}")
    m = BaselineMemory(ledger, stream, HEURISTIC, kind=kind, projections=projections,
                       config=config(window_turns=window, chain_budget=budget))
    for user in turns:
        m.add_turn(user, "ok")
        check_shape(m.state, budget, window)
    assert m.state.turn == len(turns)
    assert m.state == fold(r.event for r in ledger.read(stream=stream))


def test_shape_check_catches_a_chain_over_budget() -> None:
    """Must-fail control: a chain kept whole past its budget breaks `check_shape`."""
    state = drive("naive_chain", DIALOGUE_EN, chain_budget=400)
    assert len(state.items) == 4
    with pytest.raises(AssertionError):
        check_shape(state, 40, 4)
    with pytest.raises(AssertionError):
        check_shape(dataclasses.replace(drive("memgpt_style", DIALOGUE_EN, window_turns=1),
                                        items=state.items), 400, 1)
