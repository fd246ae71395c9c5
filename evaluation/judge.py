"""Judges: normalised string match, and an LLM judge with its own backend and cost line.

The string judge (`memory.matching.judge_string`) NFKC-normalises and
lowercases both sides and looks for the gold value as a whole token of the
answer. The LLM judge asks its own backend (purpose `judge`, counted apart
in the metrics) and records the call; a verdict it cannot read falls back
to the string judge, and the method says so.

Unanswerable questions are scored the benchmarks' way. A probe of a type in
`ABSTENTION_TYPES` (LoCoMo category 5, adversarial, whose gold is "Not
mentioned in the conversation"; LongMemEval's `_abs` questions) is answered
correctly by an abstention (`memory.matching.ABSTENTIONS`: "I don't know",
"not mentioned", "no information", "无法确定", "没有提到", ...) and wrongly by
anything else, above all by the tempting distractor the dataset offers
(`Probe.distractor`, LoCoMo's `adversarial_answer`), even inside an
abstention. The string judge applies that rule (method `abstention`); the LLM
judge is given it in its prompt, with the distractor.

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

from ledgermem.ledger.events import Event
from ledgermem.memory.answering import call_backend
from ledgermem.memory.backends import Backend, Message
from ledgermem.memory.matching import ABSTENTIONS, abstains, contains_value, judge_abstention, judge_string, normalise

__all__ = ["ABSTENTIONS", "ABSTENTION_TYPES", "JUDGES", "LlmJudge", "StringJudge", "abstains", "contains_value",
           "expects_abstention", "judge_abstention", "judge_messages", "judge_string", "normalise"]

JUDGES = ("string", "llm")
#: Probe types whose question has no answer in the dialogue: an abstention is the correct answer.
ABSTENTION_TYPES = frozenset({"locomo_cat5", "lme_abstention"})

JUDGE_SYSTEM = """You grade answers against a gold value. Reply with one word: CORRECT if the answer
gives the gold value as its answer to the question (paraphrase, another spelling of the same value and extra
words are fine), WRONG otherwise (a different or older value, a partial value, no answer, a hedged or negated
answer, several candidate values, or the gold merely mentioned in a sentence that does not answer the
question)."""

ABSTENTION_JUDGE_SYSTEM = """You grade answers to a question the conversation cannot answer (a false premise or
information never given; GOLD says why). Reply with one word: CORRECT if the answer declines to answer (it says
it does not know, that this was not mentioned, or that there is no such information), WRONG if it gives an
answer, above all the DISTRACTOR, even next to a refusal."""

_VERDICT = re.compile(r"\b(CORRECT|WRONG|INCORRECT)\b", re.IGNORECASE)


def expects_abstention(probe_type: str) -> bool:
    return probe_type in ABSTENTION_TYPES


def judge_messages(question: str, gold: str, answer: str, *, probe_type: str = "",
                   distractor: str | None = None) -> list[Message]:
    if expects_abstention(probe_type):
        body = (f"QUESTION: {question}\nEXPECTED: abstention\nGOLD: {gold}\nDISTRACTOR: {distractor or '(none)'}\n"
                f"ANSWER: {answer}")
        return [{"role": "system", "content": ABSTENTION_JUDGE_SYSTEM}, {"role": "user", "content": body}]
    body = f"QUESTION: {question}\nGOLD: {gold}\nANSWER: {answer}"
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": body}]


def _by_string(gold: str, answer: str, probe_type: str, distractor: str | None, question: str = "") -> tuple[bool, str]:
    if expects_abstention(probe_type):
        return judge_abstention(answer, distractor), "abstention"
    return judge_string(gold, answer, question), "string"


@dataclass(frozen=True, slots=True)
class Verdict:
    correct: bool
    method: str
    events: tuple[Event, ...] = ()


class StringJudge:
    name = "string"

    def judge(self, *, question: str, gold: str, answer: str, turn: int, probe_id: str, probe_type: str = "",
              distractor: str | None = None) -> Verdict:
        return Verdict(*_by_string(gold, answer, probe_type, distractor, question))


class LlmJudge:
    name = "llm"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def judge(self, *, question: str, gold: str, answer: str, turn: int, probe_id: str, probe_type: str = "",
              distractor: str | None = None) -> Verdict:
        messages: Sequence[Message] = judge_messages(question, gold, answer, probe_type=probe_type,
                                                     distractor=distractor)
        text, event = call_backend(self.backend, messages, purpose="judge", turn=turn, probe_id=probe_id)
        m = _VERDICT.search(text)
        if m is None:
            correct, method = _by_string(gold, answer, probe_type, distractor, question)
            return Verdict(correct, f"{method} (llm verdict unreadable)", (event,))
        return Verdict(m.group(1).upper() == "CORRECT", "llm", (event,))
