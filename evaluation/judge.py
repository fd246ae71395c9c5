"""Judges: normalised string match, and an LLM judge with its own backend and cost line.

The string judge (`memory.matching.judge_string`) credits the gold only as
the answer's value: the answer, normalised and stripped of its frame (the
question's own words, "it's", "your X is", 是, politeness), must be the gold;
a hedge, a negated gold, several candidate values or an unrelated sentence
around the gold are wrong. Its rules are in `memory.matching`'s docstring and
docs/judging.md. The LLM judge asks its own backend (purpose `judge`, counted
apart in the metrics) and records the call; a verdict it cannot read falls
back to the string judge, and the method says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.events import Event
from memory.answering import call_backend
from memory.backends import Backend, Message
from memory.matching import contains_value, judge_string, normalise

__all__ = ["JUDGES", "LlmJudge", "StringJudge", "contains_value", "judge_messages", "judge_string", "normalise"]

JUDGES = ("string", "llm")

JUDGE_SYSTEM = """You grade answers against a gold value. Reply with one word: CORRECT if the answer
gives the gold value as its answer to the question (paraphrase, another spelling of the same value and extra
words are fine), WRONG otherwise (a different or older value, a partial value, no answer, a hedged or negated
answer, several candidate values, or the gold merely mentioned in a sentence that does not answer the
question)."""

_VERDICT = re.compile(r"\b(CORRECT|WRONG|INCORRECT)\b", re.IGNORECASE)


def judge_messages(question: str, gold: str, answer: str) -> list[Message]:
    body = f"QUESTION: {question}\nGOLD: {gold}\nANSWER: {answer}"
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": body}]


@dataclass(frozen=True, slots=True)
class Verdict:
    correct: bool
    method: str
    events: tuple[Event, ...] = ()


class StringJudge:
    name = "string"

    def judge(self, *, question: str, gold: str, answer: str, turn: int, probe_id: str) -> Verdict:
        return Verdict(judge_string(gold, answer, question), "string")


class LlmJudge:
    name = "llm"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def judge(self, *, question: str, gold: str, answer: str, turn: int, probe_id: str) -> Verdict:
        messages: Sequence[Message] = judge_messages(question, gold, answer)
        text, event = call_backend(self.backend, messages, purpose="judge", turn=turn, probe_id=probe_id)
        m = _VERDICT.search(text)
        if m is None:
            return Verdict(judge_string(gold, answer, question), "string (llm verdict unreadable)", (event,))
        return Verdict(m.group(1).upper() == "CORRECT", "llm", (event,))
