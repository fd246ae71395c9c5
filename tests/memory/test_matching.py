"""The string judge credits the gold only as the answer's value; containment stays for the diagnostics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.memory.matching import contains_value, judge_answer, judge_string

FLOOR_NOW = "What is my office floor now?"
FLOOR_BEFORE = "What was my office floor before it changed to 7F?"

RIGHT = [
    ("7F", "7F", FLOOR_NOW),
    ("7F", "7 F", FLOOR_NOW),
    ("7F", "Your office floor is 7F.", FLOOR_NOW),
    ("7F", "It's 7F, not 3F.", FLOOR_NOW),
    ("7F", "It's 7F now; it used to be 3F.", FLOOR_NOW),
    ("7F", "Your office is on the 7th floor.", FLOOR_NOW),
    ("3F", "It was 3F before it changed.", FLOOR_BEFORE),
    ("3F", "Before it changed to 7F, your office floor was 3F.", FLOOR_BEFORE),
    ("2pm", "2 p.m.", "What is my meeting time now?"),
    ("2pm", "14:00", "What is my meeting time now?"),
    ("4:30pm", "It's at 4:30 PM.", "What is my meeting time now?"),
    ("sushi", "Sushi! Let me know if you need anything else.", "What is my favorite food?"),
    ("7楼", "现在是7楼", "我现在的工位是什么？"),
    ("7楼", "你的工位是7楼。", "我现在的工位是什么？"),
    ("7楼", "我的工位是七楼。", "我现在的工位是什么？"),
    ("7楼", "７楼", "我现在的工位是什么？"),
    ("下午2点", "下午两点", "我现在的会议时间是什么？"),
    ("6人", "团队有6个人。", "我现在的团队人数是什么？"),
    ("3楼", "原来是3楼，后来改成了7楼。", "我的工位在改成7楼之前是什么？"),
]

WRONG = [
    ("sushi", "The weather today was sushi.", "What is my favorite food?"),
    ("sushi", "I don't like sushi.", "What is my favorite food?"),
    ("7F", "I don't know whether it is 7F.", FLOOR_NOW),
    ("7F", "Not 7F.", FLOOR_NOW),
    ("7F", "7F? I'm not sure", FLOOR_NOW),
    ("7F", "either 3F or 7F", FLOOR_NOW),
    ("7F", "3F, 7F, 12F", FLOOR_NOW),
    ("7F", "It was 7F before, now it's 12F.", FLOOR_NOW),
    ("7F", "17F", FLOOR_NOW),
    ("7F", "I think it's 7F.", FLOOR_NOW),
    ("7F", "I don't know.", FLOOR_NOW),
    ("Alice Chen", "Alice", "What is my manager name now?"),
    ("4:30pm", "4:30", "What is my meeting time now?"),
    ("7楼", "今天天气是7楼。", "我现在的工位是什么？"),
    ("7楼", "不是7楼。", "我现在的工位是什么？"),
    ("7楼", "可能是7楼", "我现在的工位是什么？"),
    ("7楼", "3楼还是7楼", "我现在的工位是什么？"),
    ("7楼", "以前是7楼，现在是12楼。", "我现在的工位是什么？"),
    ("7楼", "17楼", "我现在的工位是什么？"),
    ("王丽", "王丽丽", "我现在的经理是谁？"),
]


@pytest.mark.parametrize(("gold", "answer", "question"), RIGHT)
def test_the_gold_stated_as_the_answer_is_right(gold: str, answer: str, question: str) -> None:
    verdict = judge_answer(gold, answer, question)
    assert verdict.correct, verdict.rule


@pytest.mark.parametrize(("gold", "answer", "question"), WRONG)
def test_the_gold_merely_inside_the_answer_is_wrong(gold: str, answer: str, question: str) -> None:
    verdict = judge_answer(gold, answer, question)
    assert not verdict.correct, verdict.rule


def test_every_verdict_names_its_rule() -> None:
    assert judge_answer("sushi", "The weather today was sushi.", "What is my favorite food?").rule == (
        "content besides the gold in clause 1 (weather today)")
    assert judge_answer("7F", "Not 7F.", FLOOR_NOW).rule == "the gold is negated (not)"
    assert judge_answer("7F", "Maybe 7F", FLOOR_NOW).rule == "hedged (maybe)"
    assert judge_answer("7F", "", FLOOR_NOW).rule == "the gold is not in the answer"
    assert judge_answer("", "7F", FLOOR_NOW).rule == "empty gold"


def test_without_the_question_the_slot_words_are_content() -> None:
    assert judge_string("7F", "Your office floor is 7F.", FLOOR_NOW)
    assert not judge_string("7F", "Your office floor is 7F.")
    assert judge_string("7F", "It's 7F.")


def test_containment_is_kept_for_the_diagnostics() -> None:
    assert contains_value("sushi", "The weather today was sushi.")
    assert contains_value("3楼", "我的工位是3楼。") and not contains_value("3楼", "13楼")
    assert not contains_value("3F", "13F")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_synthetic_gold_values_judge_themselves_and_nothing_else_of_their_slot(lang: str) -> None:
    """The heuristic answerer answers with bare values: each must be right for itself, wrong for the others."""
    ds = generate_synthetic(n_episodes=4, turns=40, seed=11, langs=(lang,))
    for episode in ds.episodes:
        golds = {p.answer for p in episode.probes}
        for probe in episode.probes:
            assert judge_string(probe.answer, probe.answer, probe.question), (probe.question, probe.answer)
            for other in golds - {probe.answer}:
                assert not judge_string(probe.answer, other, probe.question), (probe.question, probe.answer, other)
            assert not judge_string(probe.answer, "I don't know.", probe.question)


_PIECES = st.sampled_from(["7F", "7", "f", " ", ",", ".", "?", "not", "maybe", "it's", "十", "十十", "两", "七",
                           "楼", "点", "下午", ":", "30", "pm", "p.m.", "$", "floor", "th", "第", "不", "吧", "'s",
                           "但是", "(", ")", " - ", "twenty", "-", "three", "个", "人"])


@settings(max_examples=300, deadline=None)
@given(gold=st.lists(_PIECES, max_size=6).map("".join), answer=st.one_of(st.text(max_size=40),
       st.lists(_PIECES, max_size=12).map("".join)), question=st.text(max_size=30))
def test_the_judge_never_raises_and_an_answer_equal_to_the_gold_is_right(gold: str, answer: str,
                                                                        question: str) -> None:
    """A model's answer is untrusted input: any text gets a verdict and a rule, never an exception."""
    verdict = judge_answer(gold, answer, question)
    assert isinstance(verdict.correct, bool) and verdict.rule
    if judge_answer(gold, gold).rule != "empty gold":
        assert judge_string(gold, gold, question)
