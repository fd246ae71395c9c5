"""Summary validation: what a model wrote must look like a summary before it can become memory. Pure.

A weak model asked to summarise often answers with the prompt itself: the
`<NEW_TURN>` block with its `USER:`/`AGENT:` lines, the `<ACTIVE_CHAIN>`
lines with their ids, the format instructions' placeholders, invented ids
(`s001`, `raw r01`), the same line until the token cap. Stored, such text is
rendered into the next prompt and the junk feeds on itself. Every summarizer
response and every self-written `<MEMORY_UPDATE>` block is checked here
first; a response with any reason below is rejected whole, so none of its
facts reaches the registry.

Reason codes (stable: they are stored in `summary_rejected` events):

    markup          a tag of the prompt contract (`<NEW_TURN`, `</ACTIVE_CHAIN>`, `<MEMORY>`, `<INDEX`, ...)
    turn_echo       a turn line (`USER: ...`, `AGENT: ...`), or both sides of the turn copied whole
    chain_echo      rendered memory lines copied back (`- s0003 (turn 3; raw r0003)`, `[INDEX ...`,
                    `[r0003 turn 3]`), or the whole text of two or more live summaries
    placeholder     the format instructions copied (`<id of ...>`, `slot=value`, `; ...`)
    unknown_id      a summary, index or pin id in the text that this memory never issued
    unknown_raw_ref a raw record id that is not a turn of this episode
    repetition      the same line three times, or text that is mostly one phrase repeated
    garbage         non-printing characters, or no letter or digit at all
    too_long        far over the summary limit (a moderate excess is cut and counted instead)

Ids are checked where the model could only have copied or invented them:
the text outside the `[FACTS: ...]` and `[OVERRIDES: ...]` tags. An id the
user typed in this turn passes (the agent's side may be the same model's
output, so it does not vouch for an id). An OVERRIDES id that is not live is
not a reason: it is dropped and counted as `override_rejected`.
"""

from __future__ import annotations

import re
import unicodedata
import zlib

from ledgermem.gate.summary_format import FACTS_TAG, OVERRIDES_TAG, parse_facts
from ledgermem.projections.render import PROMPT_TAGS
from ledgermem.projections.state import EpisodeState, record_id_for
from ledgermem.projections.tokens import count_tokens

REASONS: dict[str, str] = {
    "markup": "your answer repeated the prompt's markup (tags such as <NEW_TURN> or <ACTIVE_CHAIN>)",
    "turn_echo": "your answer copied the turn's USER:/AGENT: lines instead of stating what is durable",
    "chain_echo": "your answer copied lines of the memory (ids with their turn and raw references)",
    "placeholder": "your answer copied the format's placeholders (<...>, slot=value, '; ...') instead of "
                   "filling them in",
    "unknown_id": "your answer named summary, index or pin ids that do not exist",
    "unknown_raw_ref": "your answer named raw records that are not turns of this conversation",
    "repetition": "your answer repeated the same line or phrase",
    "garbage": "your answer held no readable text",
    "too_long": "your answer was far too long",
}

#: Tags of every prompt this project writes; none belongs in a summary.
CONTRACT_TAGS: tuple[str, ...] = (
    *PROMPT_TAGS, "FACTS", "OVERRIDES", "DECISIONS", "OPEN", "ERRORS", "CONSTRAINTS", "QUESTION",
    "tool_call", "tool_result", "tool_response", "function_results",
)
_TAG = re.compile(r"<\s*/?\s*(?:" + "|".join(CONTRACT_TAGS) + r")(?![A-Za-z0-9])", re.IGNORECASE)
_TOOL_RESULT = re.compile(r"\[\s*/?\s*TOOL RESULT\b", re.IGNORECASE)
_QUESTION_LINE = re.compile(r"^\s*QUESTION\s*[:：]", re.MULTILINE)
# A speaker label where a turn line has one: at a line's start (after a bullet), or after `|`, `>` or `]`.
_SPEAKER = re.compile(r"(?:^|[|>\]])[ \t\-*•]*(?:USER|AGENT)[ \t]*[:：]", re.IGNORECASE | re.MULTILINE)
# The heads of rendered lines: `- s0003 (turn 3; raw r0003)`, `i0001 [INDEX turn 1-4`, `[r0003 turn 3]`,
# `p0002 CONSTRAINT:`, and the unverified marker of an inference.
_RENDERED = re.compile(
    r"\b[sipmSIPM]\d\w{0,7}\s*[(\[]\s*(?:turns?|INDEX)\b"
    r"|\(\s*turns?\s*[\d-]*\s*[;,]\s*raw\b"
    r"|\[\s*INDEX\b"
    r"|\[\s*r\w+\s+turn\s+\d+\s*\]"
    r"|\bp\d+\s+(?:CONSTRAINT|OPEN)\s*:"
    r"|\[\s*INFERRED\b",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"<\s*([^<>\n=\"]{1,120})>")
_PLACEHOLDER_WORDS = frozenset({"slot", "value", "id", "ids", "summary_id", "reference_id", "index_id", "..."})
_ELLIPSIS_ITEM = re.compile(r"[;；]\s*(?:\.\.\.|…)\s*$", re.MULTILINE)
# An id as this memory spells them: a kind letter and digits with a leading zero or at least three of them
# (`s0003`, `r0012`, `i0001`, `p0002`; also `s001`, `r01`, `s438` that it never spells). `raw r5` too.
_ID = re.compile(r"(?<![\w\-./])(?:[srip](?:0\d{0,7}|\d{3,8})|[SRIP]0\d{1,7})(?![\w\-])")
_RAW_REF = re.compile(r"\braw\s+(r\d\w*)", re.IGNORECASE)
_LINE_MIN, _LINE_REPEATS = 8, 3
_COMPRESS_MIN_BYTES, _COMPRESS_FLOOR = 200, 0.3
_TOO_LONG_FACTOR, _TOO_LONG_FLOOR = 4, 512


def validate_summary(state: EpisodeState, response: str, *, turn: int, user: str, agent: str) -> tuple[str, ...]:
    """The reasons to reject `response` as the memory update of `turn` (empty: it may become memory).

    `user` and `agent` are the turn's words as the summarizer saw them. The
    caller decides what a draft is (`NONE` and empty responses are not
    checked: they write nothing).
    """
    reasons: list[str] = []
    if _too_long(state, response):
        reasons.append("too_long")
    if _garbage(response):
        reasons.append("garbage")
    if _TAG.search(response) or _TOOL_RESULT.search(response) or _QUESTION_LINE.search(response):
        reasons.append("markup")
    if _turn_echo(response, user, agent):
        reasons.append("turn_echo")
    if _RENDERED.search(response) or _copies_chain(state, response):
        reasons.append("chain_echo")
    if _placeholder(response):
        reasons.append("placeholder")
    reasons += _unknown_ids(state, response, turn=turn, said=user)
    if _repetitive(response):
        reasons.append("repetition")
    return tuple(reasons)


def describe(reasons: tuple[str, ...]) -> str:
    """The reasons as sentences the model can act on (for the specific retry)."""
    return "; ".join(REASONS.get(r, r) for r in reasons)


def _too_long(state: EpisodeState, response: str) -> bool:
    cap = max(_TOO_LONG_FACTOR * state.config.summary_max_tokens, _TOO_LONG_FLOOR)
    if len(response.encode()) <= cap:  # a token is at least one byte, for every tokenizer here
        return False
    return count_tokens(response, state.config.tokenizer) > cap


def _garbage(response: str) -> bool:
    for ch in response:
        cat = unicodedata.category(ch)
        if (cat == "Cc" and ch not in "\n\r\t") or cat in ("Co", "Cs", "Cn") or ch == "\ufffd":
            return True
    return not any(ch.isalnum() for ch in response)


def _turn_echo(response: str, user: str, agent: str) -> bool:
    """A turn line (`USER: ...`, `AGENT: ...`), or the turn's two sides copied whole."""
    if _SPEAKER.search(response):
        return True
    flat = " ".join(response.split())
    sides = [" ".join(t.split()) for t in (user, agent)]
    return all(len(side) >= _LINE_MIN and side in flat for side in sides)


def _copies_chain(state: EpisodeState, response: str) -> bool:
    flat = " ".join(response.split())
    texts = {" ".join(s.text.split()) for s in state.live_summaries()}
    return sum(len(t) >= 24 and t in flat for t in texts) >= 2


def _placeholder(response: str) -> bool:
    for m in _PLACEHOLDER.finditer(response):
        inner = m.group(1).strip()
        if " " in inner or inner.lower() in _PLACEHOLDER_WORDS or "|" in inner:
            return True
    facts = FACTS_TAG.search(response)
    if facts and any(k.lower().rstrip("0123456789") == "slot" and v.lower().rstrip("0123456789") == "value"
                     for k, v in parse_facts(facts.group(1))):
        return True
    return bool(_ELLIPSIS_ITEM.search(response))


def _unknown_ids(state: EpisodeState, response: str, *, turn: int, said: str) -> list[str]:
    text = OVERRIDES_TAG.sub(" ", FACTS_TAG.sub(" ", response))
    issued = {*state.summaries, *state.indexes, *state.pins}
    records = {*state.raw, record_id_for(turn)}
    spoken = {m.group(0) for m in _ID.finditer(said)} | {m.group(1) for m in _RAW_REF.finditer(said)}
    found: list[str] = []
    refs = {m.group(1) for m in _RAW_REF.finditer(text)}
    for m in _ID.finditer(text):
        token = m.group(0)
        if token in spoken:
            continue
        if token[0] in "rR":
            refs.add(token)
        elif token not in issued and "unknown_id" not in found:
            found.append("unknown_id")
    if any(r not in records and r not in spoken for r in refs):
        found.append("unknown_raw_ref")
    return found


def _repetitive(response: str) -> bool:
    lines = [" ".join(line.split()).casefold() for line in response.splitlines()]
    counts: dict[str, int] = {}
    for line in lines:
        if len(line) >= _LINE_MIN:
            counts[line] = counts.get(line, 0) + 1
            if counts[line] >= _LINE_REPEATS:
                return True
    data = response.encode()
    # A phrase repeated up to the token cap compresses to almost nothing; prose and lists of facts do not.
    return len(data) >= _COMPRESS_MIN_BYTES and len(zlib.compress(data, 9)) / len(data) < _COMPRESS_FLOOR
