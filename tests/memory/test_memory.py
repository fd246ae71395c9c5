"""The Memory facade: turns, answers, tool loop, resume, crash safety."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgermem.projections.events import ContextRendered, LlmCalled, ToolCalled
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.factory import make_backend
from ledgermem.memory.errors import UnknownBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import fold
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR)
STREAM = StreamKey("run", "three_layer", "ep")

DIALOGUE_EN = [
    ("My office floor is 3F.", "Noted."),
    ("Nice weather today.", "Indeed."),
    ("My meeting time is 9am.", "Noted."),
    ("My office floor changed to 7F.", "Noted."),
    ("My office floor is now 12F.", "Noted."),
]
DIALOGUE_ZH = [("我的工位是3楼。", "好的。"), ("今天天气不错。", "是的。"), ("我的工位改成了7楼。", "好的。")]


def heuristic_memory(ledger: Ledger, stream: StreamKey = STREAM) -> Memory:
    return Memory(ledger, stream, HeuristicBackend(tokenizer=ESTIMATOR), config=CONFIG)


def test_heuristic_memory_answers_current_and_history_questions_en() -> None:
    m = heuristic_memory(Ledger(":memory:"))
    for user, agent in DIALOGUE_EN:
        m.add_turn(user, agent)
    assert m.state.current_values()["office floor"][0] == "12F"
    assert m.ask("What is my office floor now?").text == "12F"
    # Both values are in the window: answered from what is shown, newest change first.
    history = m.ask("What was my office floor before it changed to 12F?")
    assert history.text == "7F" and history.tool_calls == 0
    # 3F left the window and its summary was overridden: only the archive has it, through a tool.
    older = m.ask("What was my office floor before it changed to 7F?")
    assert older.text == "3F" and older.tool_calls == 1


def test_heuristic_memory_answers_in_chinese() -> None:
    m = heuristic_memory(Ledger(":memory:"))
    for user, agent in DIALOGUE_ZH:
        m.add_turn(user, agent)
    assert m.ask("我现在的工位是什么？").text == "7楼"
    assert m.ask("我的工位在改成7楼之前是什么？").text == "3楼"


def test_ask_records_the_context_manifest_llm_calls_and_tool_calls() -> None:
    ledger = Ledger(":memory:")
    m = heuristic_memory(ledger)
    for user, agent in DIALOGUE_EN:
        m.add_turn(user, agent)
    before = ledger.last_seq
    m.ask("What was my office floor before it changed to 7F?")
    events = [r.event for r in ledger.read(from_seq=before + 1)]
    manifest = next(e for e in events if isinstance(e, ContextRendered))
    assert "slot:office floor" in manifest.item_ids and manifest.tokens == sum(
        p["tokens"] for p in manifest.parts.values())
    assert [e.purpose for e in events if isinstance(e, LlmCalled)] == ["answer", "answer"]
    assert [e.tool for e in events if isinstance(e, ToolCalled)] == ["get_predecessor_summary"]


def test_tool_loop_is_bounded() -> None:
    m = Memory(Ledger(":memory:"), STREAM,
               ScriptedBackend(lambda msgs, p: 'get_raw_record(reference_id="r0001")' if p == "answer" else "NONE"),
               config=CONFIG, max_tool_iterations=3)
    m.add_turn("hello", "hi")
    answer = m.ask("what did I say?")
    assert answer.llm_calls == 4 and answer.tool_calls == 3


def test_baseline_style_memory_gets_no_tool_loop() -> None:
    backend = ScriptedBackend(lambda msgs, p: 'get_raw_record(reference_id="r0001")' if p == "answer" else "NONE")
    m = Memory(Ledger(":memory:"), STREAM, backend, config=CONFIG, tools=False)
    m.add_turn("hello", "hi")
    answer = m.ask("q")
    assert "get_raw_record(" not in backend.calls[-1][1][0]["content"]  # no tool manual in the prompt
    # A model that asks for tools anyway is told there are none; its call text never becomes the answer.
    attempts = [e for e in answer.events if e.event_type == "tool_called"]
    assert answer.tool_calls == 0 and answer.llm_calls == m.max_tool_iterations + 1
    assert attempts and all(not e.ok and "no tools" in e.text for e in attempts)
    assert answer.text == ""


def test_a_system_without_tools_keeps_a_plain_answer() -> None:
    backend = ScriptedBackend(lambda msgs, p: "Lisbon" if p == "answer" else "NONE")
    m = Memory(Ledger(":memory:"), STREAM, backend, config=CONFIG, tools=False)
    m.add_turn("hello", "hi")
    answer = m.ask("q")
    assert answer.text == "Lisbon" and answer.llm_calls == 1 and answer.tool_calls == 0


def test_resume_from_the_ledger_continues_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    with Ledger(path) as ledger:
        m = heuristic_memory(ledger)
        for user, agent in DIALOGUE_EN[:3]:
            m.add_turn(user, agent)
    with Ledger(path) as ledger:
        m = heuristic_memory(ledger)  # reopens the stream: no second episode_started
        assert m.state.turn == 3
        for user, agent in DIALOGUE_EN[3:]:
            m.add_turn(user, agent)
        assert m.state == fold([r.event for r in ledger.read(stream=STREAM)])
        assert sum(r.event.event_type == "episode_started" for r in ledger.read(stream=STREAM)) == 1
        assert ledger.verify().ok


def test_a_turn_that_fails_mid_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger:
        m = heuristic_memory(ledger)
        m.add_turn(*DIALOGUE_EN[0])
        seq, state = ledger.last_seq, m.state

        def crash(conn: object, recorded: object) -> None:
            raise RuntimeError("power cut")

        with pytest.raises(RuntimeError):
            ledger.append(STREAM, [next(iter(ledger.read(stream=STREAM))).event], expected_version=m.version,
                          before_commit=crash)
        assert ledger.last_seq == seq and m.state == state
        assert ledger.conn.execute("SELECT count(*) FROM events").fetchone()[0] == seq
        m.add_turn(*DIALOGUE_EN[1])
        assert ledger.verify().ok


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(UnknownBackend, match="nope"):
        make_backend("nope", tokenizer=ESTIMATOR)
