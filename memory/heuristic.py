"""The `heuristic` backend: offline, deterministic, rule-based, zh and en.

It validates the pipeline; it is not a model. It reads only the prompt
text, through the markers of the prompt contract, exactly as a model would:

* summarizer calls: write the new turn as task-structured state: facts
  from the lexical detector, CONSTRAINTS and OPEN items verbatim from the
  commitment detector, DECISIONS and ERRORS from explicit markers; override
  the chain summaries whose every slot it restates; answer NONE when there
  is nothing of the kind. A rolling-summary call
  (`<EVICTED_TURNS>`) rewrites the summary's facts with the evicted turns'
  facts, newest winning: the older values are gone, as in any destructive
  summary.
* respond calls (a live turn): reply to the user's message (after the
  memory block, `MESSAGE: ...`), a question
  about a known slot answered as an answer call would, anything else with
  "Noted."; then append the `<MEMORY_UPDATE>` block the summarizer would
  have written for the message (facts detected in it, overrides of the
  shown chain summaries whose every slot it restates; NONE without a fact).
* answer calls: collect every (turn, slot, value) the memory shows (raw
  turns, summary lines, index titles), ordered by turn, so the newest
  statement wins and CURRENT_VALUES wins over all. A question about the
  value *before* a change answers from the shown history when it holds the
  change, else asks `get_predecessor_summary`; a question naming a summary
  or record id reads that item, else fetches it by id (in a live turn that
  offers `page_in`, by paging it in, so the next turns show it). Tools are only
  called when the prompt offers them; without them the answer is "I don't
  know." rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ledgermem.gate.commitments import detect_commitments
from ledgermem.gate.lexicon import detect_facts, is_question, parse_question
from ledgermem.gate.replaced import replaced_value
from ledgermem.gate.summary_format import format_memory_update, format_summary, parse_facts
from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.matching import judge_abstention, judge_string
from ledgermem.projections.tokens import count_tokens

_NEW_TURN = re.compile(r"<NEW_TURN[^>]*>\s*USER:(.*?)\nAGENT:", re.DOTALL)
_CHAIN_LINE = re.compile(r"^- ([a-z]\d+) .*?\[FACTS: (.*?)\]", re.MULTILINE)
_ACTIVE_CHAIN = re.compile(r"<ACTIVE_CHAIN>\n(.*?)\n</ACTIVE_CHAIN>", re.DOTALL)
_MEMORY = "<MEMORY>\n"
_MESSAGE = "\n</MEMORY>\n\nMESSAGE: "
_CURRENT = re.compile(r"<CURRENT_VALUES>\n(.*?)\n</CURRENT_VALUES>", re.DOTALL)
_QUESTION = re.compile(r"QUESTION:\s*(.*)", re.DOTALL)
# Shown memory, one observation source per line shape.
_TURN_LINE = re.compile(r"^\[(r\d+) turn (\d+)\] USER: (.*?) \| AGENT: ", re.MULTILINE)
_ITEM_LINE = re.compile(r"^- ([a-z]\d+) \(turns? (?:\d+-)?(\d+)(?:; raw ([^)]*))?\) .*?\[FACTS: (.*?)\]", re.MULTILINE)
_INDEX_LINE = re.compile(r"^- (i\d+) \[INDEX turn (\d+)-(\d+);[^\]]*\] (.*)$", re.MULTILINE)
_SUMMARY_ID = re.compile(r"(?<![A-Za-z0-9])([snm]\d{4})(?![0-9])")
_RECORD_ID = re.compile(r"(?<![A-Za-z0-9])(r\d{4})(?![0-9])")
_RESULT = re.compile(r"\[TOOL RESULT (\w+)\]\n(.*?)\n\[/TOOL RESULT\]", re.DOTALL)
_PREDECESSOR = re.compile(r"fact_key=.*?; value=(.*?); from")
_FIRST_FACTS = re.compile(r"\[FACTS: (.*?)\]")
_EARLIER = re.compile(r"^earlier values, oldest first: (.*)$", re.MULTILINE)
UNKNOWN = "I don't know."


@dataclass(frozen=True, slots=True)
class _Seen:
    turn: int
    slot: str
    value: str
    ids: tuple[str, ...]  # the item's id and any raw ids it names


def _raw_user(body: str) -> str:
    """The user's words in a `get_raw_record` result ("r0007 [turn 7]\\nUSER: …\\nAGENT: …")."""
    return next((line[len("USER: "):] for line in body.splitlines() if line.startswith("USER: ")), "")


def _observations(memory: str) -> list[_Seen]:
    """Every (turn, slot, value) the memory shows, oldest first (stable within a turn)."""
    seen: list[tuple[int, int, _Seen]] = []
    for m in _TURN_LINE.finditer(memory):
        for f in detect_facts(m.group(3)):
            seen.append((int(m.group(2)), m.start(), _Seen(int(m.group(2)), f.slot, f.value, (m.group(1),))))
    for m in _ITEM_LINE.finditer(memory):
        raw = tuple(r.strip() for r in (m.group(3) or "").split(",") if r.strip())
        for slot, value in parse_facts(m.group(4)):
            seen.append((int(m.group(2)), m.start(), _Seen(int(m.group(2)), slot, value, (m.group(1), *raw))))
    for m in _INDEX_LINE.finditer(memory):
        for slot, value in parse_facts(m.group(4)):
            seen.append((int(m.group(3)), m.start(), _Seen(int(m.group(3)), slot, value, (m.group(1),))))
    return [s for _, _, s in sorted(seen, key=lambda x: (x[0], x[1]))]


class HeuristicBackend:
    name = "heuristic"
    model = "heuristic-v1"

    def __init__(self, *, tokenizer: str) -> None:
        self.tokenizer = tokenizer

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        prompt = "\n".join(m["content"] for m in messages)
        if purpose == "summarize":
            text = self._summarize(prompt)
        elif purpose == "judge":
            text = self._judge(prompt)
        elif purpose == "respond":
            text = self._respond(messages)
        else:
            text = self._answer(messages)
        usage = {
            "prompt_tokens": count_tokens(prompt, self.tokenizer),
            "completion_tokens": count_tokens(text, self.tokenizer),
        }
        return Completion(text=text, usage=usage)

    # -- summarizer ----------------------------------------------------------------

    def _summarize(self, prompt: str) -> str:
        if "<EVICTED_TURNS" in prompt:
            return self._roll(prompt)
        m = _NEW_TURN.search(prompt)
        if not m:
            return "NONE"
        return _draft(m.group(1), prompt.split("<NEW_TURN")[0]) or "NONE"

    @staticmethod
    def _roll(prompt: str) -> str:
        """A rolling summary: the previous facts updated by the evicted turns'; older values are dropped."""
        block = re.search(r"<ROLLING_SUMMARY>\n(.*?)\n</ROLLING_SUMMARY>", prompt, re.DOTALL)
        previous = block.group(1) if block else ""
        facts = dict(parse_facts(m.group(1))) if (m := _FIRST_FACTS.search(previous)) else {}
        last = 0
        for seen in _observations(prompt.split("<EVICTED_TURNS", 1)[1]):
            facts[seen.slot] = seen.value
            last = max(last, seen.turn)
        span = re.search(r"<EVICTED_TURNS turns=\d+-(\d+)>", prompt)
        upto = span.group(1) if span else str(last)
        body = "; ".join(f"{k}={v}" for k, v in facts.items())
        return f"Conversation so far, up to turn {upto}.\n[FACTS: {body}]"

    @staticmethod
    def _judge(prompt: str) -> str:
        """The judge contract answered by the string judge (an abstention, when one is expected): CORRECT or WRONG."""
        question = re.search(r"^QUESTION: (.*)$", prompt, re.MULTILINE)
        gold = re.search(r"^GOLD: (.*)$", prompt, re.MULTILINE)
        answer = re.search(r"^ANSWER: (.*)", prompt, re.MULTILINE | re.DOTALL)
        if not gold or not answer:
            return "WRONG"
        if re.search(r"^EXPECTED: abstention$", prompt, re.MULTILINE):  # an unanswerable question
            distractor = re.search(r"^DISTRACTOR: (.*)$", prompt, re.MULTILINE)
            named = distractor.group(1) if distractor and distractor.group(1) != "(none)" else None
            return "CORRECT" if judge_abstention(answer.group(1), named) else "WRONG"
        asked = question.group(1) if question else ""
        return "CORRECT" if judge_string(gold.group(1), answer.group(1), asked) else "WRONG"

    # -- live turns -----------------------------------------------------------------

    def _respond(self, messages: Sequence[Message]) -> str:
        instructions = next((m["content"] for m in messages if m["role"] == "system"), "")
        data = next((m["content"] for m in messages if m["role"] == "user"), "")
        # The user's message comes after the memory block: the memory as data, then "MESSAGE: <words>".
        memory, _, user = data.partition(_MESSAGE)
        memory = memory.partition(_MEMORY)[2]
        chain = m.group(1) if (m := _ACTIVE_CHAIN.search(memory)) else ""
        reply = None
        if is_question(user):
            results = _results(messages[2:])
            reply = self._answer_from(memory, user.strip(), results, "get_archived_summary(" in instructions,
                                      page="page_in(" in instructions)
        return f"{reply or 'Noted.'}\n\n{format_memory_update(_draft(user, chain))}"

    # -- answerer ------------------------------------------------------------------

    def _answer(self, messages: Sequence[Message]) -> str:
        first = next((m["content"] for m in messages if "QUESTION:" in m["content"]), "")
        tools = any("get_archived_summary(" in m["content"] for m in messages if m["role"] == "system")
        q = _QUESTION.search(first)
        question = q.group(1).strip() if q else ""
        memory = first[: q.start()] if q else first
        return self._answer_from(memory, question, _results(messages[1:]), tools) or UNKNOWN

    def _answer_from(
        self, memory: str, question: str, results: list[tuple[str, str]], tools: bool, *, page: bool = False
    ) -> str | None:
        """The answer from the shown memory and tool results; None when the question names no known slot."""
        seen = _observations(memory)
        current = dict(parse_facts(m.group(1).replace("\n", ";"))) if (m := _CURRENT.search(memory)) else {}
        history: dict[str, list[str]] = {}
        for s in seen:
            history.setdefault(s.slot, []).append(s.value)
        for slot, value in current.items():
            history.setdefault(slot, []).append(value)
        intent = parse_question(question, [*history], history)
        if intent is None:
            return None
        slot = intent.slot
        target = _SUMMARY_ID.search(question) or _RECORD_ID.search(question)
        if target is not None:
            return self._by_id(slot, target.group(1), seen, results, tools, page)
        now = current.get(slot) or (history[slot][-1] if history.get(slot) else None)
        if intent.asks == "before" and intent.anchor is not None:
            return self._before(slot, intent.anchor, seen, results, tools)
        if intent.asks == "previous":
            return self._before(slot, now, seen, results, tools) if now else UNKNOWN
        if intent.asks == "original":
            return self._original(slot, now, seen, results, tools)
        if now is not None:
            return now
        return UNKNOWN

    @staticmethod
    def _original(slot: str, now: str | None, seen: list[_Seen], results: list[tuple[str, str]], tools: bool
                  ) -> str:
        """The first value of `slot`: from the predecessor tool's history when asked, else the oldest shown."""
        values = [s.value for s in seen if s.slot == slot]
        for name, body in reversed(results):
            if name == "get_predecessor_summary":
                if (m := _EARLIER.search(body)) is not None:
                    return m.group(1).split(" -> ")[0].strip()
                if (m := _PREDECESSOR.search(body)) is not None:
                    return m.group(1)
                return values[0] if values else (now or UNKNOWN)  # nothing earlier: the oldest shown is the first
        if not tools or now is None:
            return values[0] if values else (now or UNKNOWN)
        return f'get_predecessor_summary(fact_key="{slot}", exclude_value="{now}")'

    @staticmethod
    def _before(slot: str, new: str, seen: list[_Seen], results: list[tuple[str, str]], tools: bool) -> str:
        values = [s.value for s in seen if s.slot == slot]
        anchor = max((i for i, v in enumerate(values) if v == new), default=None)
        if anchor is not None:
            while anchor > 0 and values[anchor - 1] == new:
                anchor -= 1
            if anchor > 0:
                return values[anchor - 1]
        # The turn that said `new`, read by its exact id, may name what it replaced ("no longer A, it's V").
        refs = [i for s in seen if s.slot == slot and s.value == new for i in s.ids if _RECORD_ID.fullmatch(i)]
        for name, body in reversed(results):
            if name == "get_raw_record" and body.split(" ", 1)[0] in refs:
                return replaced_value(_raw_user(body), new, slot) or UNKNOWN
            if name == "get_predecessor_summary":
                m = _PREDECESSOR.search(body)
                if m:
                    return m.group(1)
                if not tools or not refs:
                    return UNKNOWN  # the tool was asked and had nothing: do not guess
                return f'get_raw_record(reference_id="{refs[-1]}")'
        if not tools:
            return UNKNOWN
        return f'get_predecessor_summary(fact_key="{slot}", exclude_value="{new}")'

    @staticmethod
    def _by_id(slot: str, item_id: str, seen: list[_Seen], results: list[tuple[str, str]], tools: bool,
               page: bool = False) -> str:
        shown = [s.value for s in seen if s.slot == slot and item_id in s.ids]
        if shown:
            return shown[-1]
        tool = "get_raw_record" if item_id.startswith("r") else "get_archived_summary"
        for name, body in reversed(results):
            if name != tool and not (page and name == "page_in"):
                continue
            head = body.split("\n", 2)
            if tool == "get_archived_summary":
                m = _FIRST_FACTS.search(head[0])
                value = dict(parse_facts(m.group(1))).get(slot) if m else None
            else:
                value = next((f.value for f in detect_facts(_raw_user(body)) if f.slot == slot), None)
            return value or UNKNOWN
        if not tools:
            return UNKNOWN
        if page:  # a live turn asking about an item by id is likely to come back to it: keep it in view
            return f'page_in(item_id="{item_id}")'
        arg = "reference_id" if tool == "get_raw_record" else "summary_id"
        return f'{tool}({arg}="{item_id}")'


_DECISION = re.compile(r"\b(?:we|i) (?:decided|chose|will go with|'ll go with)\b|\blet's go with\b|决定|就用", re.I)
_ERROR = re.compile(r"\b(?:failed|error|crashed|broke|bounced)\b|失败|报错|出错", re.I)


def _sections(user: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    found = {c.kind: c.text for c in detect_commitments(user)}
    sections = [
        ("DECISIONS", (user,) if _DECISION.search(user) else ()),
        ("OPEN", (found["open_loop"],) if "open_loop" in found else ()),
        ("ERRORS", (user,) if _ERROR.search(user) and not is_question(user) else ()),
        ("CONSTRAINTS", (found["constraint"],) if "constraint" in found else ()),
    ]
    return tuple((name, items) for name, items in sections if items)


def _draft(user: str, chain: str) -> str | None:
    """`user`'s turn as structured state, overriding the lines of `chain` whose every slot it restates."""
    user = " ".join(user.split())
    facts = tuple(dict((f.slot, f.value) for f in detect_facts(user)).items())
    sections = _sections(user)
    if not facts and not sections:
        return None
    slots = {k for k, _ in facts}
    overrides = tuple(
        sid for sid, body in _CHAIN_LINE.findall(chain) if (old := {k for k, _ in parse_facts(body)}) and old <= slots
    )
    return format_summary("", facts, overrides, sections)


def _results(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [(name, body) for msg in messages for name, body in _RESULT.findall(msg["content"])]
