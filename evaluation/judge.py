"""Judges: normalised string match, and an LLM judge with its own backend and cost line.

The string judge (`memory.matching.judge_string`) NFKC-normalises and
lowercases both sides and looks for the gold value as a whole token of the
answer. The LLM judge asks its own backend (purpose `judge`, counted apart
in the metrics) and records the call; a verdict it cannot read falls back
to the string judge, and the method says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.events import Event
from memory.answering import call_backend
from memory.backends import Backend, Message
from memory.matching import judge_string, normalise

__all__ = ["JUDGES", "LlmJudge", "StringJudge", "judge_messages", "judge_string", "normalise"]

JUDGES = ("string", "llm")

JUDGE_SYSTEM = """You grade answers against a gold value. Reply with one word: CORRECT if the answer
states the gold value (paraphrase and extra words are fine), WRONG otherwise (a different or older value,
no answer, or several candidate values)."""

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
        return Verdict(judge_string(gold, answer), "string")


class LlmJudge:
    name = "llm"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def judge(self, *, question: str, gold: str, answer: str, turn: int, probe_id: str) -> Verdict:
        messages: Sequence[Message] = judge_messages(question, gold, answer)
        text, event = call_backend(self.backend, messages, purpose="judge", turn=turn, probe_id=probe_id)
        m = _VERDICT.search(text)
        if m is None:
            return Verdict(judge_string(gold, answer), "string (llm verdict unreadable)", (event,))
        return Verdict(m.group(1).upper() == "CORRECT", "llm", (event,))
