"""Questions users ask about their own attributes (en, zh), read for what they ask. Pure.

``is_question`` tells a question from a statement. ``parse_question`` reads a
question for what it asks: the current value, the previous one, the one before
a named value, or the original one; the slot and the named value are then
found among the slots and values the memory knows, by exact
(case-insensitive) match.

Matching is lexical (regular expressions and word lists): no scoring, no
similarity, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ledgermem.gate.hanzi import fold
from ledgermem.gate.sentences import HAS_CJK, QUOTES, continues

__all__ = ["Asks", "QuestionIntent", "is_interrogative", "is_question", "parse_question"]


_QUESTION_STARTERS = frozenset("what which where when who how why do does did is are can whats what's".split())
_EXTRA_STARTERS = frozenset("why whose whom has have was were will would could should am shall may".split())
_ZH_QUESTION_MARKERS = ("什么", "吗", "多少", "几", "哪", "啥")
# "哪天" in "要是你哪天需要" and "几乎" ask nothing.
_ZH_QUESTION = re.compile(r"什么|吗|多少|(?<![前这好那头])几(?![乎天年个月周次]前)(?<![前这好那头]几)|(?<!要是你)(?<!如果你)(?<!万一)哪(?![怕])|啥")
_FIRST_WORD = re.compile(r"^[\s\"'“‘(\[]*([A-Za-z']+)")


_WH_NEEDS_AUX = frozenset("when where how why".split())
_AUX_AFTER_WH = re.compile(
    r"^\W*\w+\s+(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|much|many|long|old|about|come|"
    r"'s|’s|to)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """Return True when ``text`` reads as a question (en or zh)."""
    stripped = text.strip().rstrip(QUOTES + " ")
    if not stripped:
        return False
    if stripped.endswith(("?", "？")):
        return True
    first = _FIRST_WORD.match(stripped)
    if re.match(r"^\W*which\s+(?:means|meant|makes|made)\b", stripped, re.IGNORECASE) and not stripped.endswith(("?", "？")):
        return False  # "…, which means my X is V now": a consequence, not a question
    if first and first.group(1).lower() == "which" and re.match(r"^\W*which(?:'s|’s|\s+is|\s+was)\s", stripped, re.I) \
            and not re.search(r"\b(?:my|your)\b", stripped, re.I):
        return False  # "..., which is V, ..." is a relative clause
    if first and first.group(1).lower() in _QUESTION_STARTERS:
        # "When it comes to my X, ..." is no question; "When is my meeting" is.
        return first.group(1).lower() not in _WH_NEEDS_AUX or bool(_AUX_AFTER_WH.match(stripped))
    return bool(_ZH_QUESTION.search(stripped))


_INVERTED = re.compile(
    r"^(?:(?:wait|so|hmm+|um+|uh|oh|and|but|ok|okay|sorry|hey|hi|quick\s+q(?:uestion)?|also|actually|btw|assistant|alexa|"
    r"siri|google)\s*,?\s+){0,3}(?:is|are|was|were|did|do|does|has|have|can|could|should)\s+(?:my|i|you)\b", re.IGNORECASE)


def is_interrogative(sub: str) -> bool:
    if re.match(r"^should\s+(?:you|anyone|someone)\s+(?:ever\s+)?(?:need|want|require|ask)\b", sub, re.IGNORECASE):
        return False  # "should you need my X, it's V": a condition on the listener, said as a statement
    if is_question(sub) or _INVERTED.match(sub):
        return True
    first = _FIRST_WORD.match(sub)
    return bool(first and first.group(1).lower() in _EXTRA_STARTERS)



Asks = Literal["current", "previous", "before", "original"]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionIntent:
    """What a question about one of the user's slots asks for.

    ``anchor`` is the value named after "before" ("what was it before 7F?")
    when ``asks == "before"``.
    """

    slot: str
    asks: Asks
    anchor: str | None = None


_ORIGINAL = re.compile(
    r"\b(?:original(?:ly)?|initial(?:ly)?|at\s+first|first\s+(?:one|value|time)?|to\s+begin\s+with|"
    r"in\s+the\s+(?:very\s+)?beginning|at\s+the\s+(?:very\s+)?(?:start|beginning)|started\s+(?:with|out)|"
    r"start(?:ed)?\s+off|very\s+first|earliest|first\s+ever|ever\s+(?:told|gave|said|mentioned)|start\s+with|began\s+with|"
    r"begin\s+with|which\s+was\s+the\s+first|(?:had|have|got|used|picked|chose|gave|mention|mentioned|told\s+you|said|set|entered|registered|put\s+down)\s+(?:you\s+)?first|start\s+out|"
    r"my\s+(?:very\s+)?first|way\s+back\s+when|back\s+in\s+the\s+day|at\s+the\s+outset|from\s+the\s+(?:very\s+)?start)\b"
    r"|最早|最开始|一开始|最初|起初|第一次|第一个|刚开始|开头|最先|初始|原始|当初|初代|头一回|第一版",
    re.IGNORECASE,
)
_BEFORE_WORDS = re.compile(
    r"\b(?:before|prior\s+to|until|till|earlier\s+than|ahead\s+of|pre-|switch(?:ed)?\s+away\s+from|change\s+it\s+from|"
    r"replac(?:e|ed|ing))\b|之前|以前|前面|先前|此前|那会儿?|的时候|(?<=\S)(?<![目当眼提])前(?=是|的|一个|本人|我|那|[)）]|$|[,，=])|"
    r"替掉的|替换掉的|取代的|顶掉的",
    re.IGNORECASE,
)
_PREVIOUS = re.compile(
    r"\b(?:previous(?:ly)?|prior|former(?:ly)?|old|older|last|earlier|before|used\s+to|use\s+to|was\s+it|had\s+been|"
    r"what\s+was|did\s+i\s+have|had\s+before|back\s+then|the\s+one\s+before)\b|\bfrom\b(?=\W*$)"
    r"|以前|之前|原来|原先|上一个|上个|上一次|上次|先前|过去|换之前|改之前|旧的|老的|曾经|前一个|前值|上一回|倒数第二个|换掉的|"
    r"替换掉的|换下来的|被替换|被换掉",
    re.IGNORECASE,
)
_TASK_BEFORE = re.compile(
    r"\bbefore\s+(?:you|u|ya|we)\s+(?!(?:changed|switched|moved|updated|set|replaced|had|used)\b)\w+(?:\s+(?:it|anything|this|that|them))?"
    r"|\bbefore\s+(?:booking|submitting|paying|ordering|sending|checking\s+out|confirming|filling\s+(?:it\s+)?in|signing\s+up)\b"
    r"|(?:下单|订票|订|提交|付款|支付|预订|报名|填表|结账|发送|出发|办理|登机|入住)(?:之前|以前|前)",
    re.IGNORECASE)
_OLD_SLOT = re.compile(r"\bmy\s+(?:old|previous|former)\s+$", re.IGNORECASE)  # right before the slot
_CURRENT_MARK = re.compile(r"\b(?:now|currently|current|at\s+the\s+moment|right\s+now|these\s+days|today|still|"
                           r"at\s+present|presently|latest|newest)\b|现在|目前|当前|如今|最新", re.IGNORECASE)
_OTHER_OWNER_EN = re.compile(
    r"\b(?!(?:what|that|it|who|where|how|here|there|let|when|why|which|he|she)['’]s\b)(?:[a-z]+['’]s|his|her|their|our|your)"
    r"\s+(?:\w+\s+){0,3}$", re.IGNORECASE)


_ANCHOR_EN = re.compile(
    r"\b(?:(?:changed|switched|moved|set|shifted)\s+my\s+(?:over\s+)?to|pre-)\s*"
    r"(?P<anchor2>[^\s?,—–;!].*?)\s*(?:[?;!]|\s[—–]|(?<!\d),|,(?!\d)|$)"
    r"|\bpicked\s+(?P<anchor3>[^\s?,—–;!].*?)\s+(?:for|as)\s+my\b"
    r"|\bwhat\s+did\s+(?P<anchor4>[^\s?,—–;!].*?)\s+replace\b"
    r"|\b(?:before|prior\s+to|ahead\s+of|up\s+until|until|till)\s+(?:it|that|this)?\s*(?:was\s+|got\s+|had\s+been\s+)?(?:became|become|changed\s+(?:to|over\s+to)|"
    r"switched\s+(?:to|over\s+to)|went\s+(?:to|up\s+to|down\s+to)|turned\s+into|moved\s+to|updated\s+to|was\s+set\s+to|"
    r"is|was)?\s*(?:i\s+(?:changed|switched|moved|updated|set|shifted)\s+(?:it\s+|my\s+)?(?:over\s+)?to\s+|"
    r"i\s+(?:went\s+with|picked|chose|got|switched\s+to|settled\s+on)\s+|the\s+(?:change|switch|move)\s+to\s+|like\s+|"
    r"(?:switching|changing|moving)\s+(?:it\s+)?to\s+)?(?P<anchor>[^\s?,—–;!].*?)\s*(?:[?;!]|\s[—–]|[—–]\s|(?<!\d)[—–]|"
    r"(?<!\d),|,(?!\d)|\s-\s|$)",
    re.IGNORECASE,
)
_ANCHOR_ZH = re.compile(
    r"(?:还没|没|未)(?:改成|换成|变成|调到|换到|改为|变为|转做|转成|换做)\s*(?P<anchor2>(?:[^，,。？?！]|(?<=\d),(?=\d))+?)\s*(?:那会儿?|的时候|时候|(?<!小)时|之前|以前)"
    r"|(?:变更为|变更成|更新为|更新成|调整为|调整成|切换到|切换为|改成了?|换成了?|变成了?|改为|换到|调到|改到|变为|换为|升到|降到|定成|定为|设成|设为|调成|"
    r"是|在|到|用)\s*"
    r"(?P<anchor>[^，,。？?！\s](?:[^，,。？?！]|(?<=\d),(?=\d))*?)\s*[，,]?\s*(?:之前|以前|前面|(?<![目当眼提])前(?=是|的|一个|本人|我|那|[)）]|$))"
    r"|(?:^|(?<=[，,]))\s*(?P<anchor3>[^，,。？?！\s我：:](?:[^，,。？?！：:]|(?<=\d)[:,](?=\d))*?)\s*(?:之前|以前|前面)(?=那个|的|用的|我|[，,])"
    r"|[（(](?P<anchor4>[^（）()]+?)(?<![目当眼])前[）)]|^\s*(?P<anchor5>[^，,。？?！\s我](?:[^，,。？?！]|(?<=\d),(?=\d))*?)(?:替掉|替换掉|取代|顶掉)的"
    r"|^\s*(?P<anchor6>[^，,。？?！\s我](?:[^，,。？?！]|(?<=\d),(?=\d))*?)的前一个"
    r"|(?<=\s\s)(?:改|换)(?P<anchor7>[^，,。？?！\s了过掉之以](?:(?!之前|以前)[^，,。？?！]|(?<=\d),(?=\d))+?)\s*(?:之前|以前|(?<![目当眼提])前(?=是|的|一个|本人|我|那|[)）]|$))"
)
_ANCHOR_JUNK = re.compile(
    r"(?:最近|上一?次|这一?次|最新|最后)(?:一次)?的?(?:变更|更改|改动|修改|调整|更新|变化|换)|^(?:变更|更改|改动|修改|调整|更新|变化)$|"
    r"^(?:所有|全部|任何|一切)的?(?:变更|更改|改动|修改|调整|更新|变化)|^.*(?:改|换|变|调)(?:了|过)?$|"
    r"^(?:the|a|an|my|it|that|this|then|now|you|i|one|ones|before|change|update)$|^(?:this|that|these|the\s+(?:current|new|latest|last|present)|"
    r"now|the\s+change|it\s+changed|the\s+update|my\s+current|i\s|you\s|we\s|they\s|it\s|switching|changing|"
    r"the\s+switch|the\s+move)\b|^(?:什么|啥|哪个|多少|现在|这个|那个|换|改|上次换|上次改)$|^现在(?:这个|的)|我|记得|"
    r"^(?:any|all)\b.*\b(?:changes?|amendments?|updates?|edits?)$|\b(?:change|changes|amendments?)$|^dem\b",
    re.IGNORECASE)


_RECENT_CHANGE = re.compile(
    r"(?:最近|上一?次|这一?次|最新|最后)(?:一次)?的?(?:变更|更改|改动|修改|调整|更新|变化|换)|"
    r"\b(?:the\s+)?(?:last|latest|most\s+recent|recent)\s+(?:change|update|switch|edit)\b|"
    r"\blast\s+(?:amended|changed|updated|edited|modified)\b", re.IGNORECASE)


def _textual_anchor(question: str) -> str | None:
    """The value named after "before" when the memory does not show it ("before 7F", "改成7楼之前")."""
    for pattern in (_ANCHOR_ZH, _ANCHOR_EN) if HAS_CJK.search(question) else (_ANCHOR_EN,):
        for m in pattern.finditer(question):
            group = next((g for g in ("anchor2", "anchor3", "anchor4", "anchor5", "anchor6", "anchor7", "anchor")
                          if m.groupdict().get(g)), "anchor")
            anchor = (m.group(group) or "").strip().strip(QUOTES + " ").rstrip(".")
            if _ANCHOR_JUNK.match(anchor) or _RECENT_CHANGE.search(anchor):
                continue
            if re.match(r"(?:请问|问一下|想问一下|想问)在", anchor) and not re.search(r".(?:变更|更新|调整|切换|改|换|变)(?:为|成|到)", anchor):
                anchor = re.sub(r"^(?:请问|问一下|想问一下|想问)在", "", anchor)  # "请问在V之前，我的X是什么？"
            anchor = re.sub(r"^(?:变更为|变更成|更新为|更新成|调整为|调整成|切换到|切换为|改成了?|换成了?|变成了?|改为|变为|换为|"
                            r"(?:update|updated|change|changed|switch|switched)\s*(?:成|为|到))", "", anchor, flags=re.IGNORECASE)
            anchor = re.sub(r"^(?:(?:uh+|um+|er+|erm|like|the\s+value)\s*,?\s+)+", "", anchor, flags=re.IGNORECASE)  # "before it was uh V"
            anchor = re.sub(r"(?:\s*(?:->|→|=>)|\s+[-–—]+)\s*$", "", anchor)  # "my X before V -> ?": a note's arrow
            anchor = re.sub(r"[.!,]?\s+(?:regards|kind\s+regards|best(?:\s+regards)?|thanks|thank\s+you|many\s+thanks|cheers|ta)\b.*$", "",
                            anchor, flags=re.IGNORECASE)  # "… prior to V.\nRegards": the sign-off
            anchor = re.sub(r"^(?:嗯|就是|那个|紧挨着|就在|正好在|恰好在|能告诉我|告诉我|帮我查一下|查一下|麻烦查一下|未|你?还记得|记得|"
                            r"帮我看看|帮我看一下)+", "", anchor)
            anchor = re.sub(r"^(?:提醒我?一下|提醒我)", "", anchor)
            if re.fullmatch(r"(?:最近|最后|上)?(?:一次|次)?(?:改|换|变|更新|修改|调整|更改|变更)(?:了|过)?|现在(?:这个|的|这)?|这个|那个",
                            anchor):
                continue  # "最近一次改之前": before the last change, no value named
            anchor = re.sub(r"^(?:转做|转成|换做|切到|切成|换|改|变|选)(?=\S{2,})", "", anchor)
            anchor = re.sub(r"(?:生效|上来|出现|登场|启用|开始|那会儿?)$", "", anchor)
            anchor = re.sub(r"\s+(?:was|is)(?:\s+what)?$", "", anchor, flags=re.IGNORECASE)
            anchor = re.sub(r"\s+(?:took\s+effect|kicked\s+in|came\s+in|started|began|happened|was\s+set|came\s+along)$", "",
                            anchor, flags=re.IGNORECASE)
            anchor = re.sub(r"\s+(?:lol|haha+)$", "", anchor, flags=re.IGNORECASE)
            era = re.match(r"^(?:the\s+)?(?P<v>.+?)\s+(?:era|phase)$", anchor, re.IGNORECASE)
            anchor = era["v"] if era else anchor  # "the Lebara bundle era" names Lebara bundle; "the Swans" is a value
            rest = question[m.end(group):] if m.group(group) else ""
            more = re.match(r"\s*,\s*([^,?!;]+?)\s*(?:[,?!;]|$)", rest) if pattern is _ANCHOR_EN else None
            if more and continues(more.group(1)):  # "before Building C, Room 2.14?"
                anchor = f"{anchor}, {more.group(1).strip()}"
            anchor = re.sub(r"\s+(?:what|which|who|how)\b.*$", "", anchor, flags=re.IGNORECASE)
            if anchor and not anchor.isspace() and not _ANCHOR_JUNK.match(anchor) and len(anchor) <= 60:
                return anchor
    return None


def _mentions(text: str, name: str) -> int:
    """Position of ``name`` in ``text`` as a whole word (Latin) or substring (CJK); -1 when absent."""
    if HAS_CJK.search(name):
        return text.find(name)
    m = re.search(rf"(?<![0-9a-z]){re.escape(name)}(?:e?s)?(?![0-9a-z])", text)
    return m.start() if m else -1


def _owned_by_other(question: str, at: int, slot: str) -> bool:
    head = question[:at]
    if HAS_CJK.search(question):
        return bool(re.search(r"(?<![诉给跟和对])(?:他|她|它|你|同事|朋友|妈妈|爸爸|老婆|老公|妹妹|姐姐|哥哥|弟弟|老板|[小老][\u4e00-\u9fff])的\s*$",
                              head))
    return bool(_OTHER_OWNER_EN.search(head))


# "we talked about this before — what's my X?", "I forgot my X, what was it again?": asked now, about now.
_ASKED_NOW = re.compile(r"\b(?:(?:talked|spoke|chatted)\s+about\s+(?:this|it|that)\s+before|told\s+you\s+(?:this\s+|that\s+)?"
                        r"before|(?:as\s+)?i\s+(?:said|mentioned)\s+before|what\s+was\s+it\s+again)\b|"
                        # "before I log in, tell me my X": a moment to come (present tense), not the value before a change
                        r"^(?:ok(?:ay)?,?\s+|so,?\s+)?before\s+(?:i|we)\s+(?!\w+ed\b|(?:went|got|had|was|were|made|took|left|came|began|became|"
                        r"bought|sold|set|put|did|switched|changed|moved)\b)[a-z]+\b(?!.*\b(?:was|were|had|did)\b)|"
                        r"之前(?:跟|和|给|对)你(?:说|讲|提)过?的?", re.IGNORECASE)


def parse_question(question: str, slots: Iterable[str], values: dict[str, list[str]] | None = None
                   ) -> QuestionIntent | None:
    """What ``question`` asks about which of ``slots``; None when it names none of them (as the user's own).

    ``values`` maps a slot to the values the memory knows for it, oldest
    first; a known value named in the question with "before" is the anchor.
    """
    written = " ".join(question.split())
    spaced = fold(written)
    q = spaced.lower()
    hits = [(s, _mentions(q, fold(s).lower())) for s in slots if s]
    hits = [(s, at) for s, at in hits if at >= 0]
    if not hits:
        return None
    slot, at = max(hits, key=lambda hit: (len(hit[0]), -hit[1]))
    if _owned_by_other(q, at, slot):
        return None
    known = [v for v in (values or {}).get(slot, []) if v]
    blank = " " * len(slot)
    outside = q[:at] + blank + q[at + len(slot):]
    outside = _ASKED_NOW.sub(lambda m: " " * len(m.group(0)), outside)
    for task in _TASK_BEFORE.finditer(outside):  # "before you book, what's my X?" asks what is on file now
        start, end = task.span()
        outside = outside[:start] + " " * (end - start) + outside[end:]
        spaced = spaced[:start] + " " * (end - start) + spaced[end:]
    anchor = None
    if _BEFORE_WORDS.search(outside):
        named = [(v, _mentions(outside, fold(v).lower())) for v in known]
        named = [(v, pos) for v, pos in named if pos >= 0]
        if named:
            anchor = max(named, key=lambda item: len(item[0]))[0]
        else:
            blanked = spaced[:at] + blank + spaced[at + len(slot):]
            anchor = _textual_anchor(blanked)
            if anchor is not None and blank in anchor and (pos := blanked.find(anchor)) >= 0:
                anchor = written[pos:pos + len(anchor)]  # "在小米平板6之前我的平板": the slot's name inside the value
            if anchor is not None and HAS_CJK.search(spaced) and f"{anchor}{spaced[at:at + len(slot)]}" in spaced:
                # The value's own name ends with the slot's ("在讯飞输入法之前，我的输入法"): read it as written.
                anchor = f"{anchor}{spaced[at:at + len(slot)]}"
            elif anchor is None and HAS_CJK.search(spaced):
                anchor = _textual_anchor(spaced)
                if anchor is not None and anchor in spaced[at:at + len(slot)]:
                    anchor = None  # a piece of the slot's own name ("常用QQ号"), not a value
            if anchor is not None and (pos := spaced.find(anchor)) >= 0:
                anchor = written[pos:pos + len(anchor)]  # as written: "陳醫生", not its fold
    if anchor is not None:
        return QuestionIntent(slot=slot, asks="before", anchor=anchor)
    if (_BEFORE_WORDS.search(outside) or _RECENT_CHANGE.search(outside)) and not _ORIGINAL.search(outside):
        return QuestionIntent(slot=slot, asks="previous")  # "before the latest change", "换之前"
    if _ORIGINAL.search(outside):
        return QuestionIntent(slot=slot, asks="original")
    if _PREVIOUS.search(outside) and (not _CURRENT_MARK.search(outside) or _OLD_SLOT.search(q[:at])):
        return QuestionIntent(slot=slot, asks="previous")  # "do you still have my old X?" asks the old one
    return QuestionIntent(slot=slot, asks="current")

