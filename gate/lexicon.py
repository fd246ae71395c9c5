"""High-precision lexical detector for facts users state about themselves.

The detector recognises a small set of explicit surface patterns in English
and Chinese ("my X is Y", "我的X是Y", "X changed to Y", "X改成Y", "X = Y", ...)
and nothing else.  Every pattern is anchored to the start of a sub-clause
behind a short whitelist of harmless lead-in words, and both slot and value
pass stop-word checks, because a wrong slot written to memory is far more
expensive than a missed one: a miss can be recovered from the transcript, a
wrong fact silently overrides the truth.

Matching is purely lexical (regular expressions and word lists); there is no
scoring, no similarity and no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["FactMention", "detect_facts", "is_question", "normalise_slot"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FactMention:
    """One explicitly stated fact: ``slot`` takes ``value``.

    ``change`` is True only when the speaker used an explicit change verb
    ("changed to", "is now", "改成", ...), which lets callers distinguish an
    update from a first statement without comparing against stored state.
    """

    slot: str
    value: str
    change: bool


_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_TRAILING_PUNCT = ".,!?;。，！？；"
_QUOTES = "\"'“”‘’「」『』"

# "." ends a clause only before whitespace or the end, so e-mail addresses,
# URLs and decimals ("bob@example.com", "3.5") survive as values.
_CLAUSE_END = re.compile(r"(\.(?=\s|$)|[;；。!?！？\n]+)")
# A comma between two digits is a thousands separator, not a clause break.
_SUBCLAUSE_BREAK = re.compile(
    r"(?<!\d),|,(?!\d)|，|\s+and\s+(?=(?:my\s|i\s+(?:have\s+|just\s+)?moved\s))",
    re.IGNORECASE,
)

_QUESTION_STARTERS = frozenset(
    "what which where when who how do does did is are can".split()
)
# Auxiliary-first openings are interrogative too; they are only used to
# veto sub-clauses, so widening the set can only lose recall.
_EXTRA_STARTERS = frozenset(
    "why whose whom has have was were will would could should am shall may".split()
)
_ZH_QUESTION_MARKERS = ("什么", "吗", "多少", "几", "哪")
_ZH_EXTRA_MARKERS = ("是不是", "是否", "有没有", "对不对", "呢")
_FIRST_WORD = re.compile(r"^[\s\"'“‘(\[]*([A-Za-z]+)")


def is_question(text: str) -> bool:
    """Return True when ``text`` reads as a question (en or zh)."""
    stripped = text.strip().rstrip(_QUOTES + " ")
    if not stripped:
        return False
    if stripped.endswith(("?", "？")):
        return True
    first = _FIRST_WORD.match(stripped)
    if first and first.group(1).lower() in _QUESTION_STARTERS:
        return True
    return any(marker in stripped for marker in _ZH_QUESTION_MARKERS)


def _is_interrogative(sub: str) -> bool:
    if is_question(sub):
        return True
    first = _FIRST_WORD.match(sub)
    if first and first.group(1).lower() in _EXTRA_STARTERS:
        return True
    return any(marker in sub for marker in _ZH_EXTRA_MARKERS)


def normalise_slot(slot: str) -> str:
    """Canonical slot name: en lowercased without "my "/"the "; zh stripped."""
    text = " ".join(slot.split())
    if _HAS_CJK.search(text):
        text = text.strip()
        return text[2:].strip() if text.startswith("我的") else text
    text = text.lower()
    while True:
        for prefix in ("my ", "the "):
            if text.startswith(prefix):
                text = text[len(prefix):].lstrip()
                break
        else:
            return text


# --------------------------------------------------------------------------
# English patterns
# --------------------------------------------------------------------------

_W = r"[^\W_][\w'’-]*"
_EN_SLOT = rf"(?P<slot>{_W}(?:\s+{_W}){{0,3}}?)"
# Only these lead-ins may precede a pattern; anything else ("if", "before",
# "I doubt that") is unknown context and suppresses the match.
_EN_LEAD = (
    r"^\s*(?:(?:and|also|so|oh|ok|okay|well|btw|plus|actually|fyi|hey|hi|"
    r"hello|note|please|remember|that|just|so\s+you\s+know|"
    r"for\s+the\s+record|by\s+the\s+way)\s+)*"
)
_EN_AUX = r"(?:has\s+been\s+|have\s+been\s+|has\s+|had\s+|was\s+|just\s+)?"
_FLAGS = re.IGNORECASE

_EN_MOVED = re.compile(
    _EN_LEAD + r"i(?:\s+have|'ve|’ve)?\s+(?:just\s+)?moved\s+my\s+"
    + _EN_SLOT + r"\s+to\s+(?P<value>.+)$",
    _FLAGS,
)
_EN_MY_CHANGED = re.compile(
    _EN_LEAD + r"my\s+" + _EN_SLOT + r"\s+" + _EN_AUX
    + r"changed\s+to\s+(?P<value>.+)$",
    _FLAGS,
)
_EN_CHANGED = re.compile(
    _EN_LEAD + r"(?:the\s+)?" + _EN_SLOT + r"\s+" + _EN_AUX
    + r"changed\s+to\s+(?P<value>.+)$",
    _FLAGS,
)
_EN_MY_IS = re.compile(
    _EN_LEAD + r"my\s+" + _EN_SLOT + r"\s+is\s+(?P<now>now\s+)?(?P<value>.+)$",
    _FLAGS,
)
_EQUALS = re.compile(
    rf"^\s*(?P<slot>[A-Za-z0-9_]+(?:[ ]+[A-Za-z0-9_]+){{0,3}}|[{_CJK}A-Za-z0-9_]{{1,10}})"
    r"\s*[=＝](?![=>])\s*(?P<value>.+)$"
)

_EN_SLOT_STOPWORDS = frozenset(
    """
    my the a an it its this that these those he she they we you i me him her
    them us your our his their what which who whom whose where when how why
    if unless whether before after until then because and but or so not no
    never also just yesterday today tomorrow is was are were be been has have
    had do does did will would can could should may might must to
    """.split()
)
# Slots that introduce opinions or discourse rather than a stable fact.
_EN_SLOT_BLOCK = frozenset(
    """
    point question guess understanding feeling sense thought thoughts opinion
    concern worry problem issue idea bet hope impression bad pleasure fault
    turn plan view take answer
    """.split()
)
_EN_VALUE_STOP = frozenset(
    """
    not never no so very really too quite pretty kind sort going getting being
    also just still probably maybe perhaps definitely like that this it same
    different unknown unclear now gone fine ok okay good great bad
    """.split()
)
_QUESTION_VALUES = frozenset(
    {"什么", "多少", "哪里", "哪儿", "哪个", "几", "谁",
     "what", "which", "who", "whom", "whose", "where", "when", "how", "why"}
)

# --------------------------------------------------------------------------
# Chinese patterns
# --------------------------------------------------------------------------

_ZH_SLOT_CHARS = rf"[{_CJK}A-Za-z0-9 ]"
_ZH_LEAD = r"^\s*(?:对了|另外|还有|然后|所以|嗯|哦|请记住|记住|记一下|顺便说一下|告诉你)*\s*"
_ZH_CHANGE = re.compile(
    _ZH_LEAD + rf"(?P<slot>{_ZH_SLOT_CHARS}{{1,16}}?)\s*(?:已经|刚刚|刚)?"
    r"(?P<verb>改成了?|改到了?|换成了?|改为)\s*(?P<value>.+)$"
)
_ZH_MY_IS = re.compile(
    _ZH_LEAD + rf"我的(?P<slot>{_ZH_SLOT_CHARS}{{1,10}}?)\s*(?P<adv>现在|目前)?是\s*(?P<value>.+)$"
)
_ZH_SLOT_PREFIXES = ("我的", "我把", "把")
_ZH_SLOT_STOP = (
    "我", "你", "他", "她", "它", "把", "不", "没", "如果", "假如", "要是",
    "之前", "以前", "原来", "本来", "应该", "可能", "打算", "准备", "已经",
    "曾经", "一直", "其实", "好像", "大概",
)
_ZH_SLOT_BLOCK = frozenset(
    {"意思", "天", "天哪", "想法", "问题", "看法", "建议", "理解", "意见",
     "感觉", "猜测", "计划", "目标", "回答", "答案"}
)
_ZH_VALUE_MARKERS = ("什么", "多少", "哪", "吗", "几", "谁")
_ZH_VALUE_BAD_START = ("不", "没", "也", "还", "就", "都", "否")

_MAX_EN_VALUE_WORDS = 6
_MAX_ZH_VALUE_CHARS = 20
_MAX_VALUE_CHARS = 60


def _clean_value(raw: str, *, strip_le: bool) -> str:
    value = raw.strip()
    previous = None
    while value != previous:
        previous = value
        value = value.rstrip(_TRAILING_PUNCT + " ").strip(_QUOTES + " ")
        # "改成7楼了" ends with an aspect particle, not part of the value.
        if strip_le and len(value) > 1 and value.endswith(("了", "啦")):
            value = value[:-1]
    return value


def _valid_value(value: str) -> bool:
    if not value or len(value) > _MAX_VALUE_CHARS:
        return False
    lowered = value.lower()
    if lowered in _QUESTION_VALUES:
        return False
    if _HAS_CJK.search(value):
        return (
            len(value) <= _MAX_ZH_VALUE_CHARS
            and not any(marker in value for marker in _ZH_VALUE_MARKERS)
            and not value.startswith(_ZH_VALUE_BAD_START)
        )
    words = lowered.split()
    return (
        0 < len(words) <= _MAX_EN_VALUE_WORDS
        and words[0] not in _EN_VALUE_STOP
        and words[0] not in _QUESTION_VALUES
        and value[0] not in "=<>!"
    )


def _valid_en_slot(slot: str) -> bool:
    words = slot.split()
    return (
        1 <= len(words) <= 4
        and slot not in _EN_SLOT_BLOCK
        and not any(word in _EN_SLOT_STOPWORDS for word in words)
    )


def _strip_zh_slot(slot: str) -> str:
    slot = slot.strip()
    for prefix in _ZH_SLOT_PREFIXES:
        if slot.startswith(prefix):
            return slot[len(prefix):].strip()
    return slot


def _valid_zh_slot(slot: str) -> bool:
    return (
        1 <= len(slot) <= 10
        and slot not in _ZH_SLOT_BLOCK
        and not any(stop in slot for stop in _ZH_SLOT_STOP)
    )


def _valid_slot(slot: str) -> bool:
    if _HAS_CJK.search(slot):
        return _valid_zh_slot(slot)
    return _valid_en_slot(slot)


def _mention(
    slot: str, raw_value: str, *, change: bool, zh: bool = False
) -> FactMention | None:
    norm = normalise_slot(_strip_zh_slot(slot) if zh else slot)
    value = _clean_value(raw_value, strip_le=zh and change)
    if not _valid_slot(norm) or not _valid_value(value):
        return None
    return FactMention(slot=norm, value=value, change=change)


# Each matcher returns (matched, mention); once a pattern matches, later
# patterns are not consulted even if the mention was rejected, because a
# sub-clause that looks like one construction but fails its checks is too
# ambiguous to reinterpret as another.
_Matcher = Callable[[str], tuple[bool, FactMention | None]]


def _simple(pattern: re.Pattern[str], *, change: bool) -> _Matcher:
    def match(sub: str) -> tuple[bool, FactMention | None]:
        found = pattern.match(sub)
        if not found:
            return False, None
        return True, _mention(found["slot"], found["value"], change=change)

    return match


def _en_my_is(sub: str) -> tuple[bool, FactMention | None]:
    found = _EN_MY_IS.match(sub)
    if not found:
        return False, None
    return True, _mention(found["slot"], found["value"], change=bool(found["now"]))


def _zh_change(sub: str) -> tuple[bool, FactMention | None]:
    found = _ZH_CHANGE.match(sub)
    if not found:
        return False, None
    return True, _mention(found["slot"], found["value"], change=True, zh=True)


def _zh_my_is(sub: str) -> tuple[bool, FactMention | None]:
    found = _ZH_MY_IS.match(sub)
    if not found:
        return False, None
    change = found["adv"] == "现在"
    return True, _mention(found["slot"], found["value"], change=change, zh=True)


def _equals(sub: str) -> tuple[bool, FactMention | None]:
    found = _EQUALS.match(sub)
    if not found:
        return False, None
    zh = bool(_HAS_CJK.search(found["slot"]))
    return True, _mention(found["slot"], found["value"], change=False, zh=zh)


_MATCHERS: tuple[_Matcher, ...] = (
    _simple(_EN_MOVED, change=True),
    _simple(_EN_MY_CHANGED, change=True),
    _simple(_EN_CHANGED, change=True),
    _en_my_is,
    _zh_change,
    _zh_my_is,
    _equals,
)


def _clauses(text: str) -> Iterator[str]:
    pieces = _CLAUSE_END.split(text)
    # re.split with a capture group alternates body, terminator, body, ...
    for index in range(0, len(pieces), 2):
        terminator = pieces[index + 1] if index + 1 < len(pieces) else ""
        clause = pieces[index] + terminator
        if clause.strip():
            yield clause


def _sub_clauses(clause: str) -> Iterator[str]:
    for sub in _SUBCLAUSE_BREAK.split(clause):
        if sub and sub.strip(_TRAILING_PUNCT + " \t"):
            yield sub.strip()


def _detect_sub(sub: str) -> FactMention | None:
    for matcher in _MATCHERS:
        matched, mention = matcher(sub)
        if matched:
            return mention
    return None


def _detect_clause(clause: str) -> Iterator[FactMention]:
    clause_is_question = is_question(clause)
    for sub in _sub_clauses(clause):
        body = sub.rstrip(_TRAILING_PUNCT + " ")
        if _is_interrogative(body):
            continue
        mention = _detect_sub(body)
        # A question may still carry news ("My desk changed to 7F, ok?"),
        # but only when the change is spelled out explicitly.
        if mention is not None and (mention.change or not clause_is_question):
            yield mention


def detect_facts(text: str) -> tuple[FactMention, ...]:
    """Return the facts explicitly stated in ``text``, in order of appearance.

    Identical (slot, value) pairs are reported once, keeping the first
    occurrence.
    """
    seen: set[tuple[str, str]] = set()
    found: list[FactMention] = []
    for clause in _clauses(text):
        for mention in _detect_clause(clause):
            key = (mention.slot, mention.value)
            if key not in seen:
                seen.add(key)
                found.append(mention)
    return tuple(found)
