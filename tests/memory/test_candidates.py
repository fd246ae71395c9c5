"""Candidate tables of the exact-id tools: what a call could have returned, what it returned, and why.

Each tool builds its result from its `Choice`, so the table agrees with the tool by construction; the
controls break that (a choice naming an id that is not a candidate, a recorded result the memory does
not give) and the checks must catch it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ledgermem.ledger.blocks import Block
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory import tools
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.projections.events import ToolCalled
from ledgermem.memory.candidates import problems, table, tool_call_tables
from ledgermem.memory.memory import Memory
from ledgermem.memory.tools import Choice, choice_problems, choose, run_tool
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR)


def _memory(summaries: list[str], answers: list[str], config: MemoryConfig = CONFIG) -> Memory:
    said, asked = iter(summaries), iter(answers)
    backend = ScriptedBackend(lambda m, p: next(said, "NONE") if p == "summarize" else next(asked, "I don't know."))
    return Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "e"), backend, config=config)


def _chain(*values: str, answers: tuple[str, ...] = ()) -> Memory:
    """One summary per value of `floor`, each overriding the one before."""
    responses = [f"floor is {v}\n[FACTS: floor={v}]\n[OVERRIDES: {f's{i:04d}' if i else 'none'}]"
                 for i, v in enumerate(values)]
    m = _memory(responses, list(answers))
    for v in values:
        m.add_turn(f"my floor is {v}", "ok")
    return m


def _rows(choice: Choice) -> list[tuple[str, str, bool]]:
    return [(c.item_id, c.role.split(":")[0], c.chosen) for c in choice.candidates]


def test_the_predecessor_table_lists_every_summary_of_the_slot_with_its_role() -> None:
    m = _chain("3F", "7F", "7F", "9F")
    choice = choose(m.state, "get_predecessor_summary", {"fact_key": "floor", "exclude_value": "7F"})
    assert _rows(choice) == [("s0001", "earlier", True), ("s0002", "restated", False),
                             ("s0003", "anchor", False), ("s0004", "newer", False)]
    assert [c.value for c in choice.candidates] == ["3F", "7F", "7F", "9F"]
    assert choice.candidates[0].superseded_by == ("s0002",) and choice.chosen == ("s0001",)
    assert "newest earlier value different from '7F'" in choice.rule
    result = run_tool(m.state, "get_predecessor_summary", {"fact_key": "floor", "exclude_value": "7F"})
    assert result.ok and "value=3F; from s0001" in result.text  # the tool returns the chosen row
    assert choice_problems(choice) == []
    # A value the slot never had: the newest value is returned, and the rule says why.
    never = choose(m.state, "get_predecessor_summary", {"fact_key": "floor", "exclude_value": "1F"})
    assert never.chosen == ("s0004",) and "never a value" in never.rule
    none = choose(m.state, "get_predecessor_summary", {"fact_key": "floor", "exclude_value": "3F"})
    assert not none.ok and none.chosen == () and none.rule == "no earlier value of 'floor' than '3F'"


def test_the_archived_table_is_the_chain_walked_and_the_raw_table_the_record() -> None:
    m = _chain("3F", "7F", "9F")
    walked = choose(m.state, "get_archived_summary", {"summary_id": "s0001"})
    assert _rows(walked) == [("s0001", "asked for", True), ("s0002", "successor 1 (superseded_by)", True),
                             ("s0003", "successor 2 (superseded_by)", True)]
    assert [c.status for c in walked.candidates] == ["archived", "archived", "active"]
    assert "followed forward 2 time(s) to s0003" in walked.rule
    raw = choose(m.state, "get_raw_record", {"reference_id": "r0002"})
    assert raw.chosen == ("r0002",) and raw.candidates[0].turn == 2
    missing = choose(m.state, "get_raw_record", {"reference_id": "r0099"})
    assert not missing.ok and missing.candidates == () and missing.rule.startswith("no such id")
    assert run_tool(m.state, "get_raw_record", {"reference_id": "r0099"}).text == missing.rule


def test_the_index_table_is_its_members() -> None:
    desks = ["A1", "B2", "C3", "D4", "E5"]
    m = _memory([f"desk {d}\n[FACTS: desk={d}]\n[OVERRIDES: none]" for d in desks], [],
                replace(CONFIG, chain_budget=40, index_group_size=2))
    for d in desks:
        m.add_turn(f"My desk is {d}.", "ok")
    index_id, entry = next(iter(m.state.indexes.items()))
    choice = choose(m.state, "expand_index", {"index_id": index_id})
    assert choice.chosen == tuple(entry.members) == tuple(c.item_id for c in choice.candidates)
    assert all(c.chosen for c in choice.candidates) and choice_problems(choice) == []
    text = run_tool(m.state, "expand_index", {"index_id": index_id}).text
    assert all(member in text for member in entry.members)


def test_recorded_calls_get_their_table_from_the_memory_at_their_seq() -> None:
    m = _chain("3F", "7F", "9F", answers=('get_predecessor_summary(fact_key="floor", exclude_value="9F")',
                                          'get_raw_record(reference_id="r0009")', "It was 7F."))
    answer = m.ask("what was my floor before?")
    assert answer.text == "It was 7F."
    tables = tool_call_tables(m.ledger.read(stream=m.stream))
    assert [t["tool"] for t in tables] == ["get_predecessor_summary", "get_raw_record"]
    first, second = tables
    assert first["chosen"] == ["s0002"] and first["reproduced"] is True and first["ok"] is True
    assert [c["item_id"] for c in first["candidates"]] == ["s0001", "s0002", "s0003"]
    assert second["ok"] is False and second["candidates"] == [] and second["reproduced"] is True
    assert problems(tables) == []
    # Later turns do not change the table of an earlier call.
    m.add_turn("my floor is 11F", "ok")
    assert tool_call_tables(m.ledger.read(stream=m.stream)) == tables


def test_a_live_turns_calls_read_the_memory_before_the_turn() -> None:
    """`respond` records the turn's raw record before its tool calls; the calls saw the memory without it."""
    summaries = ["floor is 3F\n[FACTS: floor=3F]\n[OVERRIDES: none]"]
    replies = iter(['get_raw_record(reference_id="r0002")', "No such turn yet.\n<MEMORY_UPDATE>NONE</MEMORY_UPDATE>"])
    backend = ScriptedBackend(lambda msgs, p: summaries.pop(0) if p == "summarize" and summaries else
                              ("NONE" if p == "summarize" else next(replies)))
    m = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "e"), backend, config=CONFIG)
    m.add_turn("my floor is 3F", "ok")
    m.respond("what did I say in turn 2?")
    (call,) = tool_call_tables(m.ledger.read(stream=m.stream))
    assert call["ok"] is False and call["reproduced"] is True and "r0002" not in [c["item_id"] for c in call["candidates"]]


def test_a_block_and_a_page_in_get_tables_and_say_why_they_are_not_recomputed() -> None:
    data = b"\x89PNG not really"
    sha = hashlib.sha256(data).hexdigest()
    summaries = iter(["floor is 3F\n[FACTS: floor=3F]\n[OVERRIDES: none]",
                      "floor is 7F\n[FACTS: floor=7F]\n[OVERRIDES: s0001]"])
    replies = iter(['page_in(item_id="s0001")', "Done.\n<MEMORY_UPDATE>NONE</MEMORY_UPDATE>"])
    backend = ScriptedBackend(lambda msgs, p: next(summaries, "NONE") if p == "summarize" else next(replies))
    m = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "e"), backend,
               config=replace(CONFIG, personal_data=False))
    m.add_turn("my floor is 3F", "ok", blocks=(Block(mime="image/png", caption="the plan", data=data),
                                               Block(mime="image/png", source="b.png")))
    m.add_turn("my floor is 7F", "ok")
    m.respond("bring back my old floor")
    (paged,) = tool_call_tables(m.ledger.read(stream=m.stream))
    assert paged["tool"] == "page_in" and paged["ok"] and paged["chosen"] == ["s0001"]
    assert [c["status"] for c in paged["candidates"]] == ["archived"] and paged["problems"] == []
    assert paged["reproduced"] is None and "gate" in paged["not_recomputed"]

    # A block (read by id through `Memory.tool`, not the model's loop): every block is a candidate.
    choice = choose(m.state, "get_block", {"block_id": sha})
    assert [(c.item_id, c.chosen) for c in choice.candidates] == [(sha, True), ("r0001#2", False)]
    assert choice.chosen == (sha,) and choice_problems(choice) == []
    assert json.loads(m.tool("get_block", {"block_id": sha}).text)["block_id"] == sha
    call = ToolCalled(turn=2, probe_id="p", tool="get_block", args={"block_id": sha}, ok=True, text="{}")
    t = table(m.state, call, 99)
    assert t["reproduced"] is None and "blob table" in t["not_recomputed"] and t["problems"] == []


# -- must-fail controls ------------------------------------------------------------------------


def test_control_a_choice_returning_an_id_that_is_not_a_candidate_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _chain("3F", "7F", "9F", answers=('get_predecessor_summary(fact_key="floor", exclude_value="9F")', "7F"))
    real = tools.predecessor_choice

    def broken(*args: Any) -> Choice:
        return replace(real(*args), chosen=("s0042",))  # returns something it never considered

    monkeypatch.setattr(tools, "predecessor_choice", broken)
    found = choice_problems(broken(m.state, "floor", "9F"))
    assert found == ["get_predecessor_summary: returned 's0042', which is not among its candidates (s0001, s0002, "
                     "s0003)", "get_predecessor_summary: candidate 's0002' is marked chosen but was not returned"]
    m.ask("before?")
    assert any("s0042" in p for p in problems(tool_call_tables(m.ledger.read(stream=m.stream))))


def test_control_a_recorded_result_the_memory_does_not_give_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _chain("3F", "7F", "9F", answers=('get_predecessor_summary(fact_key="floor", exclude_value="9F")', "3F"))
    # The tool was broken when the call was recorded: it answered the oldest value instead.
    monkeypatch.setattr(tools, "get_predecessor_summary",
                        lambda state, key, value: tools.ToolResult(True, "fact_key=floor; value=3F; from s0001"))
    m.ask("before?")
    monkeypatch.undo()
    (table,) = tool_call_tables(m.ledger.read(stream=m.stream))
    assert table["reproduced"] is False and table["chosen"] == ["s0002"]
    assert problems([table]) == [f"seq {table['seq']}: get_predecessor_summary recorded a result the memory at "
                                 "that seq does not give"]


def test_an_erased_call_says_so_instead_of_reporting_a_mismatch(tmp_path: Path) -> None:
    m = _erasable(tmp_path)
    m.ask("what was my floor before?")
    (before,) = tool_call_tables(m.ledger.read(stream=m.stream))
    assert before["reproduced"] is True and before["chosen"] == ["s0001"]
    m.erase(legal_basis="GDPR art. 17", subject=True)
    (after,) = tool_call_tables(m.ledger.read(stream=m.stream))
    assert after["problems"] == [] and after["reproduced"] is None and after["candidates"] == []
    assert after["not_recomputed"] == "the recorded call was erased" and "erased" in after["rule"]


def _erasable(tmp_path: Path) -> Memory:
    """A memory on a ledger file with a key store (so an erasure shreds), two floors recorded."""
    said = iter(["floor is 3F\n[FACTS: floor=3F]\n[OVERRIDES: none]", "floor is 7F\n[FACTS: floor=7F]\n[OVERRIDES: s0001]"])
    asked = iter(['get_predecessor_summary(fact_key="floor", exclude_value="7F")', "It was 3F."])
    backend = ScriptedBackend(lambda msgs, p: next(said, "NONE") if p == "summarize" else next(asked, "I don't know."))
    m = Memory(Ledger(tmp_path / "l.duckdb"), StreamKey("r", "three_layer", "e"), backend,
               config=replace(CONFIG, personal_data=True))
    m.add_turn("my floor is 3F", "ok")
    m.add_turn("my floor is 7F", "ok")
    return m
