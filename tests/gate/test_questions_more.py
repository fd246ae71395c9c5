"""Question shapes: "way back when" asks the first value; "变成A前一个" asks the value before A."""

from __future__ import annotations

import pytest

from ledgermem.gate.lexicon import QuestionIntent, parse_question

SLOTS = ["gym", "Wi-Fi密码"]
KNOWN = {"gym": ["PureGym"], "Wi-Fi密码": ["abc123"]}


@pytest.mark.parametrize(("question", "expected"), [
    ("way back when, what was my gym?", QuestionIntent(slot="gym", asks="original")),
    ("back in the day, which gym did I have?", QuestionIntent(slot="gym", asks="original")),
    ("我Wi-Fi密码变成home_88前一个是啥", QuestionIntent(slot="Wi-Fi密码", asks="before", anchor="home_88")),
    ("what did I switch my gym from?", QuestionIntent(slot="gym", asks="previous")),
    ("what gym did I mention first?", QuestionIntent(slot="gym", asks="original")),
    # controls: no value named before 前一个 is the previous one; a plain question is about now; "to" is the new one
    ("what did I change my gym to?", QuestionIntent(slot="gym", asks="current")),
    ("我Wi-Fi密码的前一个是啥", QuestionIntent(slot="Wi-Fi密码", asks="previous")),
    ("what's my gym these days?", QuestionIntent(slot="gym", asks="current")),
])
def test_question_shapes(question: str, expected: QuestionIntent) -> None:
    assert parse_question(question, SLOTS, KNOWN) == expected
