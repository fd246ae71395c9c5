"""Live turns: the answering call writes its own memory update, the summarizer stands in when it does not."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.decide import decide
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.summary_format import NONE_UPDATE, format_memory_update, split_memory_update
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    ContextRendered,
    LlmCalled,
    SummaryCreated,
    SummaryOverridden,
    ToolCalled,
    TurnRecorded,
)
from ledgermem.ledger.schema import decode, encode
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory, Reply, self_write_counts
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import rebuild
from ledgermem.projections.sql_rebuild import rebuild_sql_ledger
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn

CONFIG = MemoryConfig(tokenizer=ESTIMATOR)
STREAM = StreamKey("run", "three_layer", "ep")
SUMMARY = "The user's office is on 3F.\n[FACTS: office floor=3F]\n[OVERRIDES: none]"
FALLBACK = "Summarizer: the user said something.\n[FACTS: note=fallback]\n[OVERRIDES: none]"
TAGLESS = "The user's office is on 3F.\n[FACTS: office floor=3F]"


def block(inner: str) -> str:
    return f"<MEMORY_UPDATE>\n{inner}\n</MEMORY_UPDATE>"


def scripted(respond: str | Callable[[Sequence[Message]], str], summarize: Sequence[str] = (FALLBACK,),
             answer: str = "I don't know.") -> ScriptedBackend:
    """`respond` answers live turns; summarizer calls get `summarize` in order, the last one repeating."""
    summaries = list(summarize)

    def reply(messages: Sequence[Message], purpose: str) -> str:
        if purpose == "respond":
            return respond(messages) if callable(respond) else respond
        if purpose == "summarize":
            return summaries.pop(0) if len(summaries) > 1 else summaries[0]
        return answer

    return ScriptedBackend(reply)


def memory(backend: ScriptedBackend | HeuristicBackend, ledger: Ledger | None = None, **kwargs: Any) -> Memory:
    kwargs.setdefault("config", CONFIG)
    return Memory(ledger or Ledger(":memory:"), STREAM, backend, **kwargs)


def events_of(reply: Reply) -> list[Event]:
    return [r.event for r in reply.recorded]


def purposes(events: Sequence[Event]) -> list[str]:
    return [e.purpose for e in events if isinstance(e, LlmCalled)]


def created(events: Sequence[Event]) -> list[SummaryCreated]:
    return [e for e in events if isinstance(e, SummaryCreated)]


def recorded_turn(events: Sequence[Event]) -> TurnRecorded:
    return next(e for e in events if isinstance(e, TurnRecorded))


def stream_events(m: Memory) -> list[Event]:
    return [r.event for r in m.ledger.read(stream=STREAM)]


# -- one turn, one update ----------------------------------------------------------------


def test_a_valid_block_is_used_and_stripped_with_no_summarizer_call() -> None:
    backend = scripted(f"Sure, noted.\n\n{block(SUMMARY)}")
    m = memory(backend)
    reply = m.respond("My office floor is 3F.", occurred_at="2024-03-01T09:00:00+00:00", source="chat")
    events = events_of(reply)
    assert reply.text == "Sure, noted." and reply.self_written and not reply.fallback
    assert [p for p, _ in backend.calls] == ["respond"]
    assert purposes(events) == ["respond"]
    [summary] = created(events)
    assert summary.written_by == "self" and summary.facts == (("office floor", "3F"),)
    assert summary.text == "The user's office is on 3F." and summary.raw_ids == ("r0001",)
    turn = recorded_turn(events)
    assert (turn.text, turn.agent, turn.occurred_at, turn.source) == (
        "My office floor is 3F.", "Sure, noted.", "2024-03-01T09:00:00+00:00", "chat")
    # The full response, block included, is in the ledger: a replay needs no model.
    assert next(e for e in events if isinstance(e, LlmCalled)).text.endswith("</MEMORY_UPDATE>")
    assert m.state.current_values() == {"office floor": ("3F", "s0001")}


def test_the_respond_prompt_carries_the_rendered_memory_the_message_and_the_contract() -> None:
    backend = scripted(f"Noted.\n{block(SUMMARY)}")
    m = memory(backend)
    m.respond("My office floor is 3F.")
    rendered = m.render().text
    m.respond("And the weather?")
    _, messages = backend.calls[-1]
    system, user = messages[0]["content"], messages[-1]["content"]
    # The memory is data in the user's message, never in the system message; the user's words come after it.
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "<ACTIVE_CHAIN>" in rendered and f"<MEMORY>\n{rendered}\n</MEMORY>" in user
    assert rendered not in system and "<ACTIVE_CHAIN>" not in system
    assert "<MEMORY_UPDATE>NONE</MEMORY_UPDATE>" in system and "[OVERRIDES:" in system
    assert "get_archived_summary(" in system  # this memory has tools
    assert user.endswith("\n</MEMORY>\n\nMESSAGE: And the weather?")
    plain = scripted(f"Noted.\n{block(SUMMARY)}")
    memory(plain, tools=False).respond("hi")
    assert "get_archived_summary(" not in plain.calls[0][1][0]["content"]


def test_two_blocks_are_both_stripped_and_the_last_valid_one_is_used() -> None:
    later = "Office moved to 7F.\n[FACTS: office floor=7F]\n[OVERRIDES: none]"
    reply = memory(scripted(f"Before {block(SUMMARY)} middle {block(later)} after.")).respond("3F, then 7F")
    assert reply.text == "Before middle after."
    assert [s.facts for s in created(events_of(reply))] == [(("office floor", "7F"),)]
    # An unusable last block does not hide a usable earlier one.
    reply = memory(scripted(f"Ok. {block(SUMMARY)} {block('garbage, no tags')}")).respond("it is 3F")
    assert reply.text == "Ok." and reply.self_written
    assert [s.facts for s in created(events_of(reply))] == [(("office floor", "3F"),)]


def test_a_missing_block_falls_back_to_the_summarizer_and_is_counted() -> None:
    backend = scripted("Sure, noted.")
    m = memory(backend)
    reply = m.respond("My office floor is 3F.")
    events = events_of(reply)
    assert reply.fallback and not reply.self_written and reply.text == "Sure, noted."
    assert purposes(events) == ["respond", "summarize"]
    [summary] = created(events)
    assert summary.written_by == "summarizer"
    # The scripted summarizer claims a value the turn never states: kept, but as an inference.
    assert summary.facts == () and summary.inferences == (("note", "fallback"),)
    # The summarizer sees the turn as the user saw it.
    assert "AGENT: Sure, noted." in backend.calls[1][1][-1]["content"]
    counts = self_write_counts(stream_events(m))
    assert counts["self_write_fallbacks"] == 1 and counts["self_written_turns"] == 0


@pytest.mark.parametrize("inner", [TAGLESS, "", "[OVERRIDES: none]", "just prose"])
def test_a_block_without_an_overrides_tag_or_that_does_not_parse_falls_back(inner: str) -> None:
    reply = memory(scripted(f"Answer. {block(inner)}")).respond("My office floor is 3F.")
    events = events_of(reply)
    assert reply.fallback and reply.text == "Answer."
    assert purposes(events) == ["respond", "summarize"]
    assert [s.written_by for s in created(events)] == ["summarizer"]


def test_a_none_block_writes_no_summary_and_calls_no_summarizer() -> None:
    backend = scripted("Nice to hear.\n<memory_update> none </Memory_Update>")
    m = memory(backend)
    reply = m.respond("Nice weather today.")
    assert reply.text == "Nice to hear." and reply.self_written
    assert [p for p, _ in backend.calls] == ["respond"] and created(events_of(reply)) == []
    counts = self_write_counts(stream_events(m))
    assert counts == {"self_written_turns": 1, "self_written_summaries": 0, "self_write_fallbacks": 0,
                      "summarizer_format_retries": 0}


def test_an_unterminated_trailing_block_is_stripped_and_never_used() -> None:
    reply = memory(scripted(f"Here you go.\n<MEMORY_UPDATE>\n{SUMMARY}")).respond("My office floor is 3F.")
    assert reply.text == "Here you go." and reply.fallback
    assert [s.written_by for s in created(events_of(reply))] == ["summarizer"]


CASES = {
    "valid": (f"A {block(SUMMARY)}", "A", "self"),
    "none": (f"A {block('NONE')}", "A", None),
    "missing": ("A", "A", "summarizer"),
    "tagless": (f"A {block(TAGLESS)}", "A", "summarizer"),
    "two": (f"A {block(TAGLESS)} B {block(SUMMARY)}", "A B", "self"),
    "unterminated": (f"A <MEMORY_UPDATE>{SUMMARY}", "A", "summarizer"),
    "stray closer": ("A </MEMORY_UPDATE> B", "A B", "summarizer"),
    "only a block": (block(SUMMARY), "", "self"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_turn_has_exactly_one_update_and_a_clean_visible_answer(case: str) -> None:
    response, visible, written_by = CASES[case]
    m = memory(scripted(response))
    m.respond("My office floor is 3F.")
    reply = m.respond("My office floor is 3F.")
    events = events_of(reply)
    summarized = purposes(events).count("summarize")
    assert int(reply.self_written) + int(summarized > 0) == 1
    assert reply.fallback == (summarized > 0)
    assert [s.written_by for s in created(events)] == ([written_by] if written_by else [])
    assert reply.text == visible == recorded_turn(events).agent
    assert all("MEMORY_UPDATE" not in e.agent for e in stream_events(m) if isinstance(e, TurnRecorded))


# -- one transaction ---------------------------------------------------------------------


def test_all_events_of_a_turn_commit_together() -> None:
    m = memory(scripted("No block here.", summarize=[TAGLESS, SUMMARY]))
    before = m.version
    reply = m.respond("My office floor is 3F.")
    types = [r.event.event_type for r in reply.recorded]
    assert types == ["context_rendered", "turn_recorded", "llm_called", "llm_called", "llm_called",
                     "summary_created"]
    assert len({r.recorded_at for r in reply.recorded}) == 1
    assert [r.stream_version for r in reply.recorded] == list(range(before + 1, before + 1 + len(types)))
    assert {r.event.turn for r in reply.recorded} == {1}
    seqs = [r.seq for r in reply.recorded]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_a_turn_that_fails_inside_the_transaction_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(":memory:")
    m = memory(scripted(f"Noted. {block(SUMMARY)}"), ledger)
    m.respond("My office floor is 3F.")
    seq, version, state = ledger.last_seq, m.version, m.state
    append = ledger.append

    def power_cut(conn: object, recorded: object) -> None:
        raise RuntimeError("power cut")

    def failing(stream: StreamKey, events: Sequence[Event], **kwargs: object) -> object:
        return append(stream, events, **kwargs, before_commit=power_cut)

    monkeypatch.setattr(ledger, "append", failing)
    with pytest.raises(RuntimeError, match="power cut"):
        m.respond("My office floor changed to 7F.")
    assert ledger.last_seq == seq and m.version == version and m.state == state
    assert ledger.conn.execute("SELECT count(*) FROM events").fetchone() == (seq,)
    assert [r.event.turn for r in ledger.read(stream=STREAM)][-1] == 1
    monkeypatch.undo()
    reply = m.respond("My office floor changed to 7F.")  # the same turn again, now committed
    assert recorded_turn(events_of(reply)).turn == 2 and ledger.verify().ok


# -- the summarizer's format retry -------------------------------------------------------


def test_a_summary_without_the_overrides_tag_is_asked_for_once_more() -> None:
    first = "Office moved to 7F.\n[FACTS: office floor=7F]"
    second = "Office moved to 7F.\n[FACTS: office floor=7F]\n[OVERRIDES: s0001]"
    backend = scripted("unused", summarize=[SUMMARY, first, second])
    m = memory(backend)
    m.add_turn("My office floor is 3F.", "Noted.")
    events = [r.event for r in m.add_turn("My office floor changed to 7F.", "Noted.")]
    calls = [e for e in events if isinstance(e, LlmCalled)]
    assert [(c.purpose, c.text) for c in calls] == [("summarize", first), ("summarize", second)]
    assert events.index(calls[-1]) < events.index(created(events)[0])
    assert [e.summary_id for e in events if isinstance(e, SummaryOverridden)] == ["s0001"]
    # Same messages, plus a reminder of the format.
    (_, asked), (_, retried) = backend.calls[-2:]
    assert retried[: len(asked)] == asked and len(retried) == len(asked) + 1
    assert retried[-1]["role"] == "user" and "[OVERRIDES:" in retried[-1]["content"]
    assert self_write_counts(stream_events(m))["summarizer_format_retries"] == 1


def test_a_second_tagless_summary_is_decided_on_anyway_and_there_is_no_third_call() -> None:
    backend = scripted("unused", summarize=[SUMMARY, TAGLESS])
    m = memory(backend)
    m.add_turn("My office floor is 3F.", "Noted.")
    events = [r.event for r in m.add_turn("My office floor is 3F.", "Noted.")]
    assert purposes(events) == ["summarize", "summarize"]
    [summary] = created(events)
    assert summary.overrides == () and summary.facts == (("office floor", "3F"),)
    assert not any(isinstance(e, SummaryOverridden) for e in events)


def test_nothing_to_remember_or_a_tagged_summary_is_not_retried() -> None:
    m = memory(scripted("unused", summarize=["NONE"]))
    assert purposes([r.event for r in m.add_turn("hi", "hello")]) == ["summarize"]
    m = memory(scripted("unused", summarize=[SUMMARY]))
    assert purposes([r.event for r in m.add_turn("hi", "hello")]) == ["summarize"]


def test_the_respond_fallback_retries_the_summarizer_format_too() -> None:
    m = memory(scripted("No block.", summarize=[TAGLESS, SUMMARY]))
    reply = m.respond("My office floor is 3F.")
    assert purposes(events_of(reply)) == ["respond", "summarize", "summarize"]
    assert [s.written_by for s in created(events_of(reply))] == ["summarizer"]
    counts = self_write_counts(stream_events(m))
    assert counts["self_write_fallbacks"] == 1 and counts["summarizer_format_retries"] == 1


# -- the pure core -----------------------------------------------------------------------


def _started() -> EpisodeState:
    return fold(list(decide(EpisodeState(), StartEpisode(config=CONFIG))))


def _call(purpose: str, response: str) -> LlmCalled:
    return called(response, 1, purpose, backend="b")


def test_decide_records_the_calls_first_then_the_self_written_update() -> None:
    state = _started()
    respond = _call("respond", f"Ok. {block(SUMMARY)}")
    events = decide(state, record_turn(state, turn=1, user="u", agent="Ok.", self_write=SUMMARY,
                                       calls=(respond,)))
    assert [type(e) for e in events] == [TurnRecorded, LlmCalled, SummaryCreated]
    assert events[1] == LlmCalled(turn=1, purpose="respond", backend="b", model="m", prompt_hash="h",
                                  text=f"Ok. {block(SUMMARY)}")
    assert isinstance(events[2], SummaryCreated) and events[2].written_by == "self"
    assert decide(state, record_turn(state, turn=1, user="u", agent="a", self_write=NONE_UPDATE,
                                     calls=(respond,)))[1:] == (events[1],)


def test_decide_refuses_two_updates_and_an_unusable_self_write() -> None:
    state = _started()
    with pytest.raises(CommandRejected, match="one memory update"):
        decide(state, record_turn(state, turn=1, user="u", agent="a", self_write=SUMMARY,
                                  summarizer=_call("summarize", SUMMARY)))
    with pytest.raises(CommandRejected, match="OVERRIDES"):
        decide(state, record_turn(state, turn=1, user="u", agent="a", self_write=TAGLESS))


def test_a_summary_created_before_written_by_existed_decodes_as_the_summarizers() -> None:
    event = SummaryCreated(turn=1, summary_id="s0001", text="t", facts=(("a", "b"),), overrides=(), raw_ids=("r0001",))
    enc = encode(event)
    old_payload = enc.payload.replace(',"written_by":"summarizer"', "")
    assert "written_by" not in old_payload
    decoded = decode(1, enc.event_type, enc.schema_version, enc.columns, old_payload)
    assert decoded == event and isinstance(decoded, SummaryCreated) and decoded.written_by == "summarizer"


# -- the heuristic backend ---------------------------------------------------------------


def heuristic_memory(**kwargs: Any) -> Memory:
    return memory(HeuristicBackend(tokenizer=ESTIMATOR), **kwargs)


def test_heuristic_respond_round_trip_captures_facts_and_applies_overrides() -> None:
    m = heuristic_memory()
    first = m.respond("My office floor is 3F.")
    assert first.text == "Noted." and first.self_written
    assert [(s.facts, s.written_by) for s in created(events_of(first))] == [((("office floor", "3F"),), "self")]
    chat = m.respond("Nice weather today.")
    assert chat.self_written and created(events_of(chat)) == []
    update = m.respond("My office floor changed to 7F.")
    [summary] = created(events_of(update))
    assert summary.overrides == ("s0001",) and summary.written_by == "self"
    assert [e.summary_id for e in events_of(update) if isinstance(e, SummaryOverridden)] == ["s0001"]
    assert m.state.current_values()["office floor"][0] == "7F"
    assert m.ask("What is my office floor now?").text == "7F"
    question = m.respond("What is my office floor?")
    assert question.text == "7F" and question.self_written and created(events_of(question)) == []
    assert "summarize" not in purposes(stream_events(m))
    assert self_write_counts(stream_events(m))["self_written_turns"] == 4


def test_heuristic_respond_uses_the_tools_and_records_them_in_the_turn() -> None:
    m = heuristic_memory()
    for user in ["My office floor is 3F.", "My office floor changed to 7F.", "hello", "hello again", "more"]:
        m.respond(user)
    reply = m.respond("What was my office floor before it changed to 7F?")
    events = events_of(reply)
    assert reply.text == "3F" and reply.self_written
    kinds = [e.event_type for e in events if isinstance(e, (LlmCalled, ToolCalled))]
    assert kinds == ["llm_called", "tool_called", "llm_called"]
    tool = next(e for e in events if isinstance(e, ToolCalled))
    assert tool.tool == "get_predecessor_summary" and tool.ok and tool.turn == 6
    assert isinstance(events[0], ContextRendered) and events[0].purpose == "respond"
    no_tools = heuristic_memory(tools=False)
    for user in ["My office floor is 3F.", "My office floor changed to 7F.", "hello", "hello again", "more"]:
        no_tools.respond(user)
    assert no_tools.respond("What was my office floor before it changed to 7F?").text == "I don't know."


def test_a_reply_that_only_asks_for_tools_is_bounded_and_never_shown() -> None:
    m = memory(scripted(f'get_raw_record(reference_id="r0001") {block(SUMMARY)}'), max_tool_iterations=2)
    reply = m.respond("My office floor is 3F.")
    events = events_of(reply)
    assert reply.text == "" and reply.fallback and recorded_turn(events).agent == ""
    assert purposes(events) == ["respond", "respond", "respond", "summarize"]
    assert [e.ok for e in events if isinstance(e, ToolCalled)] == [False, False]  # no record r0001 yet


def test_heuristic_respond_in_chinese() -> None:
    m = heuristic_memory()
    m.respond("我的工位是3楼。")
    m.respond("我的工位改成了7楼。")
    assert m.state.current_values()["工位"][0] == "7楼"
    assert m.respond("我现在的工位是什么？").text == "7楼"


def test_heuristic_purposes_other_than_respond_are_unchanged() -> None:
    backend = HeuristicBackend(tokenizer=ESTIMATOR)
    prompt = [{"role": "user", "content": "<ACTIVE_CHAIN>\n\n</ACTIVE_CHAIN>\n<NEW_TURN turn=1>\n"
                                          "USER: My office floor is 3F.\nAGENT: ok\n</NEW_TURN>"}]
    assert backend.complete(prompt, purpose="summarize").text == "[FACTS: office floor=3F]\n[OVERRIDES: none]"
    assert "<MEMORY_UPDATE>" not in backend.complete(prompt, purpose="answer").text


def test_replaying_the_stream_gives_the_live_state() -> None:
    m = heuristic_memory(config=replace(CONFIG, window_turns=2, personal_data=False))
    m.respond("My office floor is 3F.")
    m.add_turn("My meeting time is 9am.", "Noted.")
    m.respond("My office floor changed to 7F.")
    m.respond("What was my office floor before it changed to 7F?")
    memory(scripted("no block", summarize=[TAGLESS, SUMMARY]), m.ledger).respond("hello")
    live = Memory(m.ledger, STREAM, HeuristicBackend(tokenizer=ESTIMATOR)).state
    assert live == fold(stream_events(m)) and live.turn == 5
    assert m.ledger.verify().ok
    # The SQL rebuild reads the new payload field's events as the fold does.
    assert rebuild_sql_ledger(m.ledger) == rebuild(m.ledger)


# -- stripping ---------------------------------------------------------------------------


def test_split_is_linear_on_huge_hostile_text() -> None:
    text = " " * 200_000 + "x" + "</MEMORY_UPDATE> " * 2000 + "<MEMORY_UPDATE>" * 2000
    started = time.perf_counter()
    split = split_memory_update(text)
    assert time.perf_counter() - started < 2
    assert split.visible == "x" and split.update is None


def test_a_heuristic_block_is_always_usable() -> None:
    assert split_memory_update(f"Noted.\n\n{format_memory_update(SUMMARY)}").update == SUMMARY
    assert split_memory_update(f"Noted.\n\n{format_memory_update(None)}").update == NONE_UPDATE


VALID_BLOCKS = st.sampled_from([
    block(SUMMARY), block("NONE"), block("Moved.\n[FACTS: office floor=7F]\n[OVERRIDES: s0001]"),
    "<memory_update>Pet is Rex. [FACTS: pet=Rex] [OVERRIDES: none]</MEMORY_UPDATE>",
])
INVALID_BLOCKS = st.sampled_from([block(TAGLESS), block(""), block("no tags at all"), "<MEMORY_UPDATE></MEMORY_UPDATE>"])
UNTERMINATED = st.sampled_from(["<MEMORY_UPDATE>", f"<MEMORY_UPDATE>\n{SUMMARY}", "< MEMORY_UPDATE >half"])
BLOCKS = st.one_of(
    st.tuples(st.just("valid"), VALID_BLOCKS),
    st.tuples(st.just("invalid"), INVALID_BLOCKS),
    st.tuples(st.just("unterminated"), UNTERMINATED),
)


@st.composite
def responses(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Arbitrary text with 0-3 blocks at random places; returns the text and the kinds of the blocks."""
    text = draw(st.text(max_size=60))
    inserted = draw(st.lists(BLOCKS, max_size=3))
    places = sorted(draw(st.lists(st.integers(0, len(text)), min_size=len(inserted), max_size=len(inserted))))
    pieces, start = [], 0
    for at, (_, body) in zip(places, inserted):
        pieces += [text[start:at], body]
        start = at
    return "".join([*pieces, text[start:]]), [kind for kind, _ in inserted]


@given(responses())
def test_the_visible_answer_never_shows_a_block_and_every_turn_has_one_update(case: tuple[str, list[str]]) -> None:
    text, kinds = case
    m = memory(scripted(text), tools=False)
    reply = m.respond("My office floor is 3F.")
    events = events_of(reply)
    assert "<MEMORY_UPDATE" not in reply.text.upper()
    assert "MEMORY_UPDATE" not in recorded_turn(events).agent.upper()
    summarized = purposes(events).count("summarize")
    assert int(reply.self_written) + int(summarized > 0) == 1
    written = [s.written_by for s in created(events)]
    assert written in ([], ["self"]) if reply.self_written else written == ["summarizer"]
    if "valid" in kinds:  # a usable block survives arbitrary text and invalid blocks around it
        assert reply.self_written
    if not kinds:
        assert reply.fallback
