"""Summary validation: each reason on the response that earns it, and no reason on a summary that is one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.gate.commands import StartEpisode, Turn
from ledgermem.gate.decide import decide
from ledgermem.gate.plan import plan_turn, reasons_against
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.summary_format import format_summary
from ledgermem.gate.validation import REASONS, describe, validate_summary
from ledgermem.projections.events import LlmCalled, SummaryCreated, SummaryRejected, SummarySkipped
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.prompts import summarizer_messages
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn

CONFIG = MemoryConfig(tokenizer=ESTIMATOR)
USER, AGENT = "My meeting time is 9am; ticket s0042 is open.", "Noted, 9am."


def llm(response: str, turn: int = 2) -> LlmCalled:
    return called(response, turn)


def state_with_one_summary() -> EpisodeState:
    s = fold(list(decide(EpisodeState(), StartEpisode(config=CONFIG))))
    first = "The team has six people.\n[FACTS: team size=6]\n[OVERRIDES: none]"
    return fold(list(decide(s, record_turn(s, turn=1, user="My team size is 6.", agent="ok",
                                           summarizer=llm(first, 1)))), s)


def reasons(response: str, state: EpisodeState | None = None) -> tuple[str, ...]:
    return validate_summary(state or state_with_one_summary(), response, turn=2, user=USER, agent=AGENT)


@pytest.mark.parametrize("response, reason", [
    ("<NEW_TURN turn=2>\nthe meeting is at 9am\n</NEW_TURN>", "markup"),
    ("The meeting is at 9am. </ACTIVE_CHAIN>", "markup"),
    ("<OVERRIDES: none> the meeting is at 9am", "markup"),
    ("the meeting is at 9am\n<CURRENT_VALUES>\nmeeting time=9am", "markup"),
    ("[TOOL RESULT get_raw_record]\nr0001 [turn 1]", "markup"),
    ("USER: something else\nAGENT: fine", "turn_echo"),
    (f"Summary of it.\nuser: {USER}", "turn_echo"),
    ("The constraint was:\n- USER: My home city has changed to Osaka.", "turn_echo"),
    ("User: my office floor is 3F\n[FACTS: office floor=3F]", "turn_echo"),
    (f"So: {USER} and then {AGENT}", "turn_echo"),
    ("- s0001 (turn 1; raw r0001) The team has six people. [FACTS: team size=6]", "chain_echo"),
    ("the meeting (turn 2; raw r0002) is at 9am", "chain_echo"),
    ("- i0001 [INDEX turn 1-4; 2 live of 2] team size=6", "chain_echo"),
    ("[r0001 turn 1] USER: My team size is 6. | AGENT: ok", "chain_echo"),
    ("OPEN: <unfinished task or unanswered request, in the user's words>; ...", "placeholder"),
    ("DECISIONS: keep the 9am slot; ...", "placeholder"),
    ("The meeting is at 9am.\n[FACTS: slot=value; slot2=value2]", "placeholder"),
    ("the meeting is at <value>", "placeholder"),
    ("As agreed in s001, the meeting is at 9am.", "unknown_id"),
    ("As agreed in s0999, the meeting is at 9am.", "unknown_id"),
    ("Under title i0042 the meeting is at 9am.", "unknown_id"),
    ("Pinned as p0077: the meeting is at 9am.", "unknown_id"),
    ("As said in S0012, the meeting is at 9am.", "unknown_id"),
    ("The meeting is at 9am (see raw r01).", "unknown_raw_ref"),
    ("The meeting is at 9am, stated in r0999.", "unknown_raw_ref"),
    ("the meeting is at 9am\n" * 3, "repetition"),
    ("the meeting is at nine " * 30, "repetition"),
    ("\x00\x01 meeting 9am", "garbage"),
    ("meeting \ufffd\ufffd 9am", "garbage"),
    ("!?;:,.=- ... !!", "garbage"),
    (" ".join(f"w{i}x" for i in range(3000)), "too_long"),
])
def test_each_reason_on_the_response_that_earns_it(response: str, reason: str) -> None:
    got = reasons(response)
    assert reason in got, (reason, got)
    assert set(got) <= set(REASONS)


@pytest.mark.parametrize("response", [
    "The meeting is at 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]",
    "DECISIONS: meet at 9am — the user asked | OPEN: ticket s0042 is open\n[FACTS: meeting time=9am]\n"
    "[OVERRIDES: s0001]",
    "The meeting moved; s0001 no longer holds.\n[FACTS: meeting time=9am; team size=6]\n[OVERRIDES: s3, s0999]",
    "CONSTRAINTS: never book before 8am; hotel at least four stars\n[FACTS: meeting time=9am]\n[OVERRIDES: none]",
    "会议改到上午九点。\n[FACTS: 会议时间=上午九点]\n[OVERRIDES: none]",
    "User said: my office floor is 3F\n[FACTS: office floor=3F]",
    "Use a <div> for the layout; the raw file is r0001 and r0002.\n[FACTS: layout=div]\n[OVERRIDES: none]",
    "The user talked about their week",
    "meeting time=9am\n[FACTS: meeting time=9am]\n[OVERRIDES: none]",
    "Moved the meeting (turns out 9am suits) and kept p95 latency under 2s.",
    "DECISIONS: no raw rice, no raw milk — the user's diet",
])
def test_a_summary_that_is_one_passes(response: str) -> None:
    assert reasons(response) == ()


_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)
_phrases = st.lists(_words, min_size=1, max_size=6, unique=True).map(" ".join)
_facts = st.lists(st.tuples(_phrases, st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1,
                                              max_size=8)), max_size=4, unique_by=lambda f: f[0])


@given(note=st.one_of(st.just(""), _phrases), facts=_facts,
       sections=st.lists(st.tuples(st.sampled_from(["DECISIONS", "OPEN", "ERRORS", "CONSTRAINTS"]),
                                   st.lists(_phrases, min_size=1, max_size=3, unique=True).map(tuple)),
                         max_size=4, unique_by=lambda s: s[0]),
       overrides=st.lists(st.sampled_from(["s0001", "s0002", "s9"]), max_size=2, unique=True))
def test_no_false_rejection_of_the_contracts_own_spelling(note: str, facts: list[tuple[str, str]],
                                                          sections: list[tuple[str, tuple[str, ...]]],
                                                          overrides: list[str]) -> None:
    response = format_summary(note, tuple(facts), tuple(overrides), tuple(sections))
    assert reasons(response) == (), response


def test_the_heuristic_backend_is_never_rejected_on_the_synthetic_data() -> None:
    from ledgermem.datasets.synthetic import generate_synthetic
    from ledgermem.ledger.store import Ledger, StreamKey
    from ledgermem.memory.memory import Memory

    for i, episode in enumerate(generate_synthetic(n_episodes=2, turns=30).episodes):
        mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", f"e{i}"), HeuristicBackend(tokenizer=ESTIMATOR),
                     config=CONFIG)
        for t in episode.turns:
            mem.add_turn(t.user, t.agent)
        for t in episode.turns[:6]:
            mem.respond(t.user)
        events = [r.event for r in mem.ledger.read(stream=mem.stream)]
        assert not [e for e in events if isinstance(e, (SummaryRejected, SummarySkipped))]
        assert [e for e in events if isinstance(e, SummaryCreated)]


def test_describe_names_every_reason_for_the_retry_prompt() -> None:
    assert describe(("markup", "unknown_id")) == f"{REASONS['markup']}; {REASONS['unknown_id']}"
    assert "markup" in describe(("markup",))


def test_none_and_empty_responses_are_never_refused() -> None:
    s = state_with_one_summary()
    plan = plan_turn(s, Turn(turn=2, user=USER, agent=AGENT))
    for response in ("NONE", " none\n", "", "[FACTS: none]\n[OVERRIDES: s0001]"):
        assert reasons_against(s, plan, response) == ()


# -- decide: a rejected update never becomes memory -------------------------------------------------


def test_decide_rejects_the_update_and_keeps_the_raw_record_only() -> None:
    s = state_with_one_summary()
    bad = "<NEW_TURN turn=2>\nUSER: x\n[FACTS: meeting time=9am]\n[OVERRIDES: s0001]"
    events = decide(s, record_turn(s, turn=2, user=USER, agent=AGENT, summarizer=llm(bad), calls=(llm(bad),)))
    rejected = [e for e in events if isinstance(e, SummaryRejected)]
    assert [(e.attempt, e.purpose) for e in rejected] == [(1, "summarize"), (2, "summarize")]
    [skipped] = [e for e in events if isinstance(e, SummarySkipped)]
    assert skipped.record_id == "r0002" and skipped.attempts == 2 and "markup" in skipped.reasons
    after = fold(list(events), s)
    assert after.current_values() == {"team size": ("6", "s0001")} and after.summaries["s0001"].live
    assert "r0002" in after.raw


def test_decide_records_a_rejected_attempt_and_keeps_the_good_retry() -> None:
    s = state_with_one_summary()
    bad, good = "- s001 (turn 2; raw r01) junk", "The meeting is at 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    events = decide(s, record_turn(s, turn=2, user=USER, agent=AGENT, summarizer=llm(good), calls=(llm(bad),)))
    assert [type(e).__name__ for e in events[:4]] == ["TurnRecorded", "LlmCalled", "SummaryRejected", "LlmCalled"]
    assert not [e for e in events if isinstance(e, SummarySkipped)]
    assert fold(list(events), s).current_values()["meeting time"] == ("9am", "s0002")


def test_decide_refuses_a_self_write_that_fails_validation() -> None:
    s = state_with_one_summary()
    with pytest.raises(CommandRejected, match="summary validation"):
        decide(s, record_turn(s, turn=2, user=USER, agent=AGENT,
                              self_write="<MEMORY>\n[FACTS: a=b]\n[OVERRIDES: none]"))


def test_the_summarizer_prompt_itself_is_rejected_as_a_summary() -> None:
    """The must-fail case by construction: the exact prompt a model would echo."""
    s = state_with_one_summary()
    body = summarizer_messages(s, turn=2, user=USER, agent=AGENT)[1]["content"]
    assert {"markup", "turn_echo", "chain_echo"} <= set(reasons(body, s))


def test_a_rejected_self_write_is_recorded_after_the_reply_that_carried_it() -> None:
    s = state_with_one_summary()
    block = "<MEMORY>\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    respond = called(f"Noted.\n<MEMORY_UPDATE>\n{block}\n</MEMORY_UPDATE>", 2, "respond")
    good = "The meeting is at 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    events = decide(s, record_turn(s, turn=2, user=USER, agent="Noted.", calls=(respond,), summarizer=llm(good),
                                     rejected_self_write=block))
    kinds = [type(e).__name__ for e in events]
    at = kinds.index("SummaryRejected")
    assert kinds[at - 1] == "LlmCalled" and events[at - 1].purpose == "respond"  # type: ignore[attr-defined]
    assert events[at].purpose == "self_write" and "markup" in events[at].reasons  # type: ignore[attr-defined]
    assert "SummaryCreated" in kinds and "SummarySkipped" not in kinds
    with pytest.raises(CommandRejected, match="passes summary validation"):
        decide(s, record_turn(s, turn=2, user=USER, agent="Noted.", calls=(respond,), summarizer=llm(good),
                                rejected_self_write=good))
    with pytest.raises(CommandRejected, match="replaced by a summarizer call"):
        decide(s, record_turn(s, turn=2, user=USER, agent="Noted.", calls=(respond,), rejected_self_write=block))
