"""A turn planned once: the plan holds the cleaned words and the admission, `decide` takes them as given."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ledgermem.gate.commands import RecordTurn, Turn
from ledgermem.gate.decide import decide
from ledgermem.gate.erasure import index_key, merge_key, raw_key, turn_key
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.plan import plan_turn, review, seal_keys
from ledgermem.projections.events import (
    EpisodeStarted,
    IndexCreated,
    LlmCalled,
    SummaryCreated,
    SummaryRejected,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called

SUMMARY = "The office is on 3F.\n[FACTS: office floor=3F]\n[OVERRIDES: none]"
POLICIES = {"web": {"remember": False}, "tool": {"strip": [r"\x1b\[[0-9;]*m"]}}


def started(**cfg: object) -> EpisodeState:
    config = MemoryConfig(tokenizer=ESTIMATOR, **cfg)  # type: ignore[arg-type]
    return fold([EpisodeStarted(config=config.to_dict())])


def test_the_plan_holds_the_cleaned_words_and_the_admission() -> None:
    s = started(gate_level="pattern", source_policies=POLICIES)
    plan = plan_turn(s, Turn(turn=1, user="\x1b[31mMy office floor is 3F.\x1b[0m", agent="\x1b[1mNoted.\x1b[0m",
                             source="tool"))
    assert (plan.user, plan.agent, plan.grounds) == ("My office floor is 3F.", "Noted.", "My office floor is 3F. Noted.")
    assert plan.remember and plan.gated == "" and plan.summarize
    assert plan.turn.user.startswith("\x1b[31m")  # the turn as it happened is kept for the raw record
    small_talk = plan_turn(s, Turn(turn=1, user="hello there", agent="hi"))
    assert small_talk.gated.startswith("pattern:") and not small_talk.summarize
    web = plan_turn(s, Turn(turn=1, user="My office floor is 3F.", agent="ok", source="web"))
    assert not web.remember and "not remembered" in web.gated


def test_the_plan_sees_the_blocks_captions() -> None:
    block = {"mime": "image/png", "sha256": "0" * 64, "size": 1, "caption": "a red door", "side": "user"}
    plan = plan_turn(started(), Turn(turn=1, user="look", agent="nice", blocks=(block,)))
    assert "a red door" in plan.user and plan.turn.user == "look"


def test_decide_takes_the_plans_admission_as_given() -> None:
    """`decide` never asks the admission rule again: a verdict put in the plan is the one recorded."""
    s = started(gate_level="pattern")
    admitted = plan_turn(s, Turn(turn=1, user="My office floor is 3F.", agent="Noted."))
    forged = replace(admitted, gated="a verdict only the plan holds")
    [recorded] = [e for e in decide(s, RecordTurn(plan=forged)) if isinstance(e, TurnRecorded)]
    assert recorded.gated == "a verdict only the plan holds"
    small_talk = plan_turn(s, Turn(turn=1, user="hello there", agent="hi"))
    assert small_talk.gated
    opened = replace(small_talk, gated="")  # the rule would gate it; the plan admits it, so it is summarised
    events = decide(s, RecordTurn(plan=opened, summarizer=called("Greetings.\n[FACTS: none]\n[OVERRIDES: none]", 1)))
    assert next(e for e in events if isinstance(e, TurnRecorded)).gated == ""
    with pytest.raises(CommandRejected, match="gate does not admit"):  # must-fail: a gated plan with a call
        decide(s, RecordTurn(plan=small_talk, summarizer=called(SUMMARY, 1)))


def test_the_observed_calls_are_recorded_unchanged() -> None:
    s = started(window_turns=1)
    retried = LlmCalled(turn=1, purpose="summarize", backend="b", model="m", prompt_hash="h1", text="USER: x\nAGENT: y",
                        usage={"prompt_tokens": 9, "completion_tokens": 2}, latency_ms=1.5)
    final = LlmCalled(turn=1, purpose="summarize", backend="b", model="m", prompt_hash="h2", text=SUMMARY,
                      usage={"prompt_tokens": 11}, latency_ms=2.25, retries=1,
                      attempts=({"status": 500, "error": "busy", "latency_ms": 1.0}, {"status": 200, "latency_ms": 1.25}))
    plan = plan_turn(s, Turn(turn=1, user="My office floor is 3F.", agent="Noted."))
    events = decide(s, RecordTurn(plan=plan, summarizer=final, calls=(retried,)))
    assert [type(e) for e in events[:4]] == [TurnRecorded, LlmCalled, SummaryRejected, LlmCalled]
    assert events[1] is retried and events[3] is final
    assert isinstance(events[4], SummaryCreated)


def test_a_call_of_another_turn_or_of_a_probe_is_refused() -> None:
    """Must-fail controls: recorded unchanged, a call must already be this turn's."""
    s = started()
    plan = plan_turn(s, Turn(turn=1, user="My office floor is 3F.", agent="Noted."))
    assert decide(s, RecordTurn(plan=plan, summarizer=called(SUMMARY, 1)))
    with pytest.raises(CommandRejected, match="recorded for turn 2"):
        decide(s, RecordTurn(plan=plan, summarizer=called(SUMMARY, 2)))
    with pytest.raises(CommandRejected, match="recorded for turn 0"):
        decide(s, RecordTurn(plan=plan, summarizer=called(SUMMARY, 1), calls=(called("NONE", 0, "respond"),)))
    with pytest.raises(CommandRejected, match="probe 'q1'"):
        decide(s, RecordTurn(plan=plan, summarizer=replace(called(SUMMARY, 1), probe_id="q1")))


def test_review_is_the_gates_reading_of_a_response() -> None:
    s = started()
    plan = plan_turn(s, Turn(turn=1, user="My office floor is 3F.", agent="Noted."))
    assert review(s, plan, SUMMARY) == review(s, plan, "NONE") == review(s, plan, "")
    assert not review(s, plan, SUMMARY).reasons and not review(s, plan, SUMMARY).tagless
    tagless = review(s, plan, "The office is on 3F.\n[FACTS: office floor=3F]")
    assert tagless.tagless and not tagless.reasons
    echo = review(s, plan, "USER: My office floor is 3F.\nAGENT: Noted.\n[FACTS: office floor=3F]\n[OVERRIDES: none]")
    assert "turn_echo" in echo.reasons and not echo.tagless and "turn" in echo.feedback


def test_seal_keys_name_each_events_key() -> None:
    events = [
        TurnRecorded(turn=4, record_id="r0004", text="t", agent="a"),
        WindowEvicted(turn=4, record_id="r0001"),
        SummaryCreated(turn=4, summary_id="s0009", text="t", facts=(), overrides=(), raw_ids=("r0004",)),
        SummaryCreated(turn=4, summary_id="s0010", text="t", facts=(), overrides=(), raw_ids=(),
                       merged_from=("s0001", "s0002")),
        IndexCreated(turn=4, index_id="i0002", members=("s0001",), text="t", span="turn 1-3"),
    ]
    assert seal_keys("p", events) == [raw_key("p", 4), turn_key("p", 4), turn_key("p", 4), merge_key("p", "s0010"),
                                      index_key("p", "i0002")]
