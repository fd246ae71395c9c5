"""Exact-id tools and the tool-call parser."""

from __future__ import annotations

import pytest

from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.toolcalls import ToolCall, parse_tool_calls
from ledgermem.memory.tools import run_tool
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.events import ToolCalled
from ledgermem.projections.tokens import ESTIMATOR


@pytest.mark.parametrize(
    "text, expected",
    [
        ('get_raw_record(reference_id="r0003")', [ToolCall("get_raw_record", {"reference_id": "r0003"})]),
        ("get_raw_record(reference_id=r0003)", [ToolCall("get_raw_record", {"reference_id": "r0003"})]),
        ("get_archived_summary(summary_id: 's0002')", [ToolCall("get_archived_summary", {"summary_id": "s0002"})]),
        ('I will look. get_predecessor_summary(fact_key="office floor", exclude_value="7F")',
         [ToolCall("get_predecessor_summary", {"fact_key": "office floor", "exclude_value": "7F"})]),
        ('{"name": "expand_index", "arguments": {"index_id": "i0001"}}',
         [ToolCall("expand_index", {"index_id": "i0001"})]),
        ('{"tool": "get_raw_record", "args": {"ref": "r0001"}}', [ToolCall("get_raw_record", {"reference_id": "r0001"})]),
        ("The answer is 7F.", []),
    ],
)
def test_parse_tool_call_forms(text: str, expected: list[ToolCall]) -> None:
    assert list(parse_tool_calls(text).calls) == expected


def test_echoed_tool_results_are_not_new_calls() -> None:
    text = '[TOOL RESULT get_raw_record]\nget_raw_record(reference_id="r0001") said hello\n[/TOOL RESULT]\nThe answer is hello.'
    parsed = parse_tool_calls(text)
    assert parsed.calls == () and parsed.unparsable == ()


def test_unparsable_call_is_reported() -> None:
    assert parse_tool_calls("get_raw_record(???)").unparsable


def _memory(script: list[str]) -> Memory:
    it = iter(script)
    return Memory(Ledger(":memory:"), StreamKey("r", "s", "e"),
                  ScriptedBackend(lambda m, p: next(it, "NONE")), config=MemoryConfig(tokenizer=ESTIMATOR))


def _chain(*values: str) -> Memory:
    responses = [f"floor is {v}\n[FACTS: floor={v}]\n[OVERRIDES: {f's{i:04d}' if i else 'none'}]"
                 for i, v in enumerate(values)]
    m = _memory(responses)
    for v in values:
        m.add_turn(f"my floor is {v}", "ok")
    return m


def test_get_archived_summary_walks_superseded_by_to_the_current_value() -> None:
    m = _chain("3F", "7F", "9F")
    result = m.tool("get_archived_summary", {"summary_id": "s0001"})
    assert result.ok
    assert "superseded by s0002" in result.text and "superseded by s0003" in result.text
    assert result.text.splitlines()[-1] == "current: [FACTS: floor=9F] from s0003"


@pytest.mark.parametrize(
    "values, exclude, expected",
    [
        (("3F", "7F", "9F"), "9F", "7F"),
        (("3F", "7F", "9F"), "7F", "3F"),
        (("A", "B", "A"), "A", "B"),  # revert: the newest change to A
        (("A", "B", "A"), "B", "A"),
    ],
)
def test_get_predecessor_summary(values: tuple[str, ...], exclude: str, expected: str) -> None:
    result = _chain(*values).tool("get_predecessor_summary", {"fact_key": "floor", "exclude_value": exclude})
    assert result.ok and f"value={expected};" in result.text


@pytest.mark.parametrize(
    "values, exclude, expected",
    [
        (("Blue Door", "Red Door", "Green Door"), "Red Door at some point", "Blue Door"),  # names a recorded value
        (("3F", "7F", "9F"), "the 7F one", "3F"),
        (("A", "A B", "C"), "A B back then", "A"),  # the longest recorded value it holds: "A B", not "A"
        (("3F", "7F", "9F"), "17F", "9F"),  # control: 7F does not stand in 17F as a whole token: the newest value
        (("Hall 3", "Hall 4, Bay 12", "Hall 5"), "Hall 4", "Hall 3"),  # the one recorded value it stands in
        (("Bay 1, Hall 4", "Hall 4, Bay 12", "Hall 5"), "Hall 4", "Hall 5"),  # control: it stands in two: not one
        (("3F", "7F", "9F"), "nothing like it", "9F"),  # control: no recorded value in it
    ],
)
def test_an_exclude_value_that_names_a_recorded_value_in_more_words_is_that_value(
        values: tuple[str, ...], exclude: str, expected: str) -> None:
    result = _chain(*values).tool("get_predecessor_summary", {"fact_key": "floor", "exclude_value": exclude})
    assert result.ok and f"value={expected};" in result.text, result.text


def test_get_raw_record_is_complete_and_exact() -> None:
    m = _chain("3F")
    r = m.tool("get_raw_record", {"reference_id": "r0001"})
    assert r.ok and "USER: my floor is 3F" in r.text and "AGENT: ok" in r.text
    assert not m.tool("get_raw_record", {"reference_id": "r00"}).ok  # exact ids only, no prefix matching


@pytest.mark.parametrize(
    "name, args, fragment",
    [
        ("get_archived_summary", {"summary_id": "s0404"}, "no summary"),
        ("expand_index", {"index_id": "i0001"}, "no index"),
        ("get_predecessor_summary", {"fact_key": "nope", "exclude_value": "x"}, "no summary records"),
        ("get_raw_record", {}, "missing argument"),
        ("delete_everything", {}, "unknown tool"),
    ],
)
def test_tool_failures_are_results_not_exceptions(name: str, args: dict[str, str], fragment: str) -> None:
    result = run_tool(_chain("3F").state, name, args)
    assert not result.ok and fragment in result.text


def _heuristic_memory() -> Memory:
    from ledgermem.memory.heuristic import HeuristicBackend

    return Memory(Ledger(":memory:"), StreamKey("r", "s", "e"), HeuristicBackend(tokenizer=ESTIMATOR),
                  config=MemoryConfig(tokenizer=ESTIMATOR))


@pytest.mark.parametrize("first", ["Copper Fox is what the locker hint says, I guess",  # not read as a fact
                                   "thanks, that's all"],  # never said before the update
                         ids=["first-statement-unread", "never-stated"])
def test_the_value_an_update_replaced_is_read_from_its_raw_record(first: str) -> None:
    """Nothing on record before the new value: the answer comes from the update's own words, read by exact id."""
    m = _heuristic_memory()
    m.add_turn(first, "ok")
    m.add_turn("my locker hint is no longer Copper Fox, it's Silver Owl now", "noted")
    for i in range(4):
        m.add_turn(f"thanks again {i}", "sure")
    answer = m.answer("what was my locker hint before Silver Owl?")
    assert answer.text == "Copper Fox"
    calls = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert [c.tool for c in calls] == ["get_predecessor_summary", "get_raw_record"]
    assert not calls[0].ok and calls[1].args == {"reference_id": "r0002"}


def test_control_an_update_that_names_no_old_value_is_not_answered() -> None:
    m = _heuristic_memory()
    m.add_turn("my locker hint is Silver Owl now", "noted")
    assert m.answer("what was my locker hint before Silver Owl?").text == "I don't know."
