"""The `heuristic` backend: offline, deterministic, rule-based, zh and en.

It validates the pipeline; it is not a model. It reads only the prompt
text, through the markers of the prompt contract, exactly as a model would:

* summarizer calls: detect facts in the new turn's user message with the
  lexical detector; override the chain summaries whose every slot it
  restates; answer NONE when there is no fact.
* answer calls: find the slot the question names (exact substring of a
  slot seen in the memory); a question about the value *before* a change
  asks `get_predecessor_summary` and answers from its result; any other
  question answers from CURRENT_VALUES.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gate.lexicon import detect_facts
from gate.summary_format import format_summary, parse_facts
from memory.backends import Completion, Message
from projections.tokens import count_tokens

_NEW_TURN = re.compile(r"<NEW_TURN[^>]*>\s*USER:(.*?)\nAGENT:", re.DOTALL)
_CHAIN_LINE = re.compile(r"^- (s\d+) .*?\[FACTS: (.*?)\]", re.MULTILINE)
_CURRENT = re.compile(r"<CURRENT_VALUES>\n(.*?)\n</CURRENT_VALUES>", re.DOTALL)
_QUESTION = re.compile(r"QUESTION:\s*(.*)", re.DOTALL)
_BEFORE = (
    re.compile(r"before (?:it|they|that)? ?(?:was |were )?(?:changed|updated|moved|switched) to (.+?)[?？.]?\s*$", re.I),
    re.compile(r"在?(?:改成|改为|换成|改到)了?(.+?)之前"),
)
_TOOL_VALUE = re.compile(r"\[TOOL RESULT get_predecessor_summary\]\nfact_key=.*?; value=(.*?); from")
UNKNOWN = "I don't know."


class HeuristicBackend:
    name = "heuristic"
    model = "heuristic-v1"

    def __init__(self, *, tokenizer: str) -> None:
        self.tokenizer = tokenizer

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        prompt = "\n".join(m["content"] for m in messages)
        text = self._summarize(prompt) if purpose == "summarize" else self._answer(messages)
        usage = {
            "prompt_tokens": count_tokens(prompt, self.tokenizer),
            "completion_tokens": count_tokens(text, self.tokenizer),
        }
        return Completion(text=text, usage=usage)

    # -- summarizer ----------------------------------------------------------------

    def _summarize(self, prompt: str) -> str:
        m = _NEW_TURN.search(prompt)
        if not m:
            return "NONE"
        user = " ".join(m.group(1).split())
        facts = tuple(dict((f.slot, f.value) for f in detect_facts(user)).items())
        if not facts:
            return "NONE"
        slots = {k for k, _ in facts}
        overrides = tuple(
            sid for sid, body in _CHAIN_LINE.findall(prompt.split("<NEW_TURN")[0])
            if (old := {k for k, _ in parse_facts(body)}) and old <= slots
        )
        return format_summary(user, facts, overrides)

    # -- answerer ------------------------------------------------------------------

    def _answer(self, messages: Sequence[Message]) -> str:
        first = next((m["content"] for m in messages if "QUESTION:" in m["content"]), "")
        q = _QUESTION.search(first)
        question = q.group(1).strip() if q else ""
        known = self._known_values(first)
        slot = _slot_in(question, list(known))
        if slot is None:
            return UNKNOWN
        before = next((m.group(1).strip() for p in _BEFORE if (m := p.search(question))), None)
        if before is None:
            return known[slot]
        results = [_TOOL_VALUE.search(m["content"]) for m in messages]
        found = [r.group(1) for r in results if r]
        if found:
            return found[-1]
        if any("[TOOL RESULT get_predecessor_summary]" in m["content"] for m in messages):
            return UNKNOWN  # the tool was asked and had nothing: do not guess
        return f'get_predecessor_summary(fact_key="{slot}", exclude_value="{before}")'

    @staticmethod
    def _known_values(memory: str) -> dict[str, str]:
        """Slot -> newest value shown: chain facts first, CURRENT_VALUES last (it wins)."""
        known: dict[str, str] = {}
        for _, body in _CHAIN_LINE.findall(memory):
            known.update(parse_facts(body))
        m = _CURRENT.search(memory)
        if m:
            known.update(parse_facts(m.group(1).replace("\n", ";")))
        return known


def _slot_in(question: str, slots: list[str]) -> str | None:
    """The longest known slot named verbatim in the question (case-insensitive)."""
    q = question.lower()
    hits = [s for s in slots if s and s.lower() in q]
    return max(hits, key=len) if hits else None
