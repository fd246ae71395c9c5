"""The fact grammar: facts and questions users state about themselves (en, zh). Pure.

A turn is cut into sentences and sentences into sub-clauses; each sub-clause
is read by its language's clause grammar (``gate.grammar_en``,
``gate.grammar_zh``: lead-in, owner, slot, copula or change verb, value,
trailer) into one of: a fact (``slot = value``), a *topic* (a clause that
names the user's slot without a value: "my desk changed", "我的工位换了"),
an *anaphor* (a value without a slot: "it's 7F now", "现在是7楼"), which
binds to the turn's open topic, or nothing. So "My desk changed — it's 7F
now." and "我的工位换了，现在是7楼" are one fact each, as "My desk is 7F" is.

The grammar favours precision: what is not the user's own present fact —
another person's attribute, a hypothetical, a negation, reported speech, a
plan, a question that mentions a value — is not written as theirs, because
a wrong fact silently overrides the truth while a missed one can still be
read from the transcript.

Questions (``parse_question``) are read for what they ask: the current
value, the previous one, the one before a named value, or the original one;
the slot and the named value are then found among the slots and values the
memory knows, by exact (case-insensitive) match.

Matching is lexical (regular expressions and word lists): no scoring, no
similarity, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from ledgermem.gate import grammar_en, grammar_zh
from ledgermem.gate.hanzi import fold
from ledgermem.gate.grammar_en import Anaphor, Blocked, Found, Topic

__all__ = ["FactMention", "QuestionIntent", "detect_facts", "is_question", "normalise_slot", "parse_question"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FactMention:
    """One explicitly stated fact: ``slot`` takes ``value``.

    ``change`` is True only when the speaker said the value is new ("changed
    to", "is now", "no longer", "改成", "换了，现在是"), which lets callers tell
    an update from a first statement without comparing against stored state.
    """

    slot: str
    value: str
    change: bool


_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_QUOTES = "\"'“”‘’「」『』"
# Full-width punctuation read as its ASCII twin for segmentation only; values keep their own characters.
_FULLWIDTH = str.maketrans({"，": ",", "；": ";", "：": ":",
                            "＝": "=", "　": " "})

# "." ends a sentence only before whitespace or the end, so e-mail addresses,
# URLs and decimals ("bob@example.com", "3.5") survive as values.
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms st prof jr sr no vs etc mt ft approx dept inc ltd co jan feb mar apr jun jul aug sep sept oct nov dec "
    "ext tel apt rm bldg ave rd blvd fl e.g i.e ca est".split()
)
# "!" and "?" end a sentence unless a letter or digit follows ("qwerty!9" is one value).
_SENTENCE_END = re.compile(r"\.(?=\s|$)|[;。\n]+|[！？]+[!?]*|[!?]+(?![A-Za-z0-9])")
_EMOJI = re.compile(f"[{grammar_en.EMOJI_CHARS}]+")
# A Chinese clause that sets a condition on the next ("要是能自己选，…"), not one on the listener ("如果你需要，…").
_ZH_CONDITION = re.compile(r"(?:要是|如果|假如|假设|万一|若是|倘若|假若)(?!你|您|没记错|我没记错|有人问|别人问|需要)|"
                           r"等(?!等|下|一下)[^，,。]{1,12}(?:完|好|下来|批|过)(?:了|以后|之后)?$")  # "等手续办完，X就是V了": a plan
# "my" and a slot's words, as the reader finds them before an aside, a filler or a time ("my X (…) is V").
_MY_SLOT = r"my\s+[^\W\d_][\w'’-]*(?:\s+[\w'’-]+){0,4}?"
# What a turn adds after the slot it names, saying nothing of its value: "It is V, my X, in case you ever need it".
_AFTERTHOUGHT = re.compile(r"(?:in\s+case\s+you\s+(?:ever\s+)?need\s+it|if\s+you\s+(?:ever\s+)?need\s+it|just\s+so\s+you\s+(?:know|have\s+it)|"
                           r"for\s+(?:your|the)\s+records?|for\s+reference|thanks|thank\s+you|cheers|ta|please\s+(?:save|note|remember)\s+it|"
                           r"(?:please\s+)?keep\s+(?:it|that)\s+(?:handy|safe|somewhere)|that\s+is|i\s+mean|in\s+case\s+you\s+(?:lost|forgot)\s+it|"
                           r"by\s+the\s+way|for\s+your\s+notes)[.!]*$", re.IGNORECASE)
# What follows a capital letter and a full stop when they end a sentence rather than make an initial.
_AFTER_INITIAL_ENDS = re.compile(r"[a-z]|(?:I(?:'\w+|’\w+)?|Thanks|Thank|Best|Regards|Cheers|With|That|This|It|Same|Ok|Okay|Please|"
                                 r"Sorry|Kind|Many|Warm|Yours|Sincerely)\b")
_LAST_WORD = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]+)$")
# A comma between two digits is a thousands separator; a dash between words is part of a name.
_EN_BREAK = re.compile(
    r"(?<!\d),|,(?!\d)|\s+[-–—]+\s+|\s*—\s*|\s+(?:and|but|so)\s+(?=(?:my\s|i\s|i'|now\b|it\b|it'|then\b))"
    r"|\s+\((?=was\b|previously\b|formerly\b|before\b|not\b)|(?:^|\s+)\d{1,2}[)）]\s+|\s+[•·]\s+"
    r"|\s+(?=(?:but\s+|and\s+|lol\s+|haha+\s+|so\s+)?(?:now\s+)?it(?:'s|’s|\s+is|s)\s)",
    re.IGNORECASE,
)
# In Chinese chat a space between Chinese characters separates clauses ("说错了 工位是7楼"); a dash between
# digits is a range ("10:00—19:00") and a double dash a label's separator ("工位——7楼").
_ZH_BREAK = re.compile(
    r"(?<!\d),|,(?!\d)|、|\s+[-–—]+\s+|(?<!\d)—(?!—)|(?<!—)—(?![\d—])|～|~"
    r"|(?<=[了啊哈呀哦吧呢啦嘛嗯哎喔呗咯下])\s+|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])"
    # a message said aloud and typed by voice has no commas: its fillers end one clause and begin the next
    r"|(?<=\S)(?=然后)|(?<=\S)(?=就是(?:说)?那个我|就是说我)|(?<=\S)(?=嗯对)|(?<=[啊嘛])(?=[\u4e00-\u9fff])|(?<=\S)(?=那个你|你(?:订|下单|记|帮|就|直接))"
    r"|(?<=[\u4e00-\u9fff])\s+(?=[A-Za-z]{3,}[A-Za-z0-9]*[\u4e00-\u9fff])"  # "累瘫 Costco会员卡号是…": a word, then the slot
    r"|(?<=[\u4e00-\u9fff])\s+(?!(?:is|was)\s)(?=[a-z](?![A-Za-z0-9.\-]*\d))|(?<=[A-Za-z0-9])\s+(?![步元块米斤个号楼层次天周年月日点分秒克磅])(?=[\u4e00-\u9fff]{2})"
)
# A whole sentence that is a label: "office floor - 7F", "工位：K2-33", "【工位】K2-33".
_LABEL_SENTENCE = re.compile(
    r"^\s*(?:【(?P<bslot>[^】]{1,24})】|(?P<slot>(?:my\s+|我的)?(?=[\w()]*[^\W\d_])[^\W_][\w\- ()（）]{0,40}?))\s*(?:(?<=】)|(?<![0-9])[:=]|——|[|｜]|\s[-–—]+\s|\s*(?:->|→)\s*)\s*(?P<value>\S.*?)\s*$",
    re.IGNORECASE,
)
_EN_OWNER = re.compile(r"\b(?:my|i|i'm|i’m|i've|i’ve|we|they|me|mine)\b", re.IGNORECASE)

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
    stripped = text.strip().rstrip(_QUOTES + " ")
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


def _is_interrogative(sub: str) -> bool:
    if re.match(r"^should\s+(?:you|anyone|someone)\s+(?:ever\s+)?(?:need|want|require|ask)\b", sub, re.IGNORECASE):
        return False  # "should you need my X, it's V": a condition on the listener, said as a statement
    if is_question(sub) or _INVERTED.match(sub):
        return True
    first = _FIRST_WORD.match(sub)
    return bool(first and first.group(1).lower() in _EXTRA_STARTERS)


def normalise_slot(slot: str) -> str:
    """Canonical slot name: en lowercased without "my "/"the "; zh without "我的", in Simplified characters."""
    text = fold(" ".join(slot.split()))
    if _HAS_CJK.search(text):
        text = text.strip()
        text = text[2:].strip() if text.startswith("我的") else text
        return text.lower() if not re.search(f"[{_CJK}]", text[:1]) and text.isascii() else text
    text = text.lower()
    while True:
        for prefix in ("my ", "the "):
            if text.startswith(prefix):
                text = text[len(prefix):].lstrip()
                break
        else:
            return text


def _sentences(text: str) -> Iterator[tuple[str, bool]]:
    """(sentence, ends with a question mark); "Dr. Okafor" is not two sentences."""
    text = _EMOJI.sub(" ", text.translate(_FULLWIDTH))
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group(0) == ".":
            word = _LAST_WORD.search(text[start:m.start()])
            initial = word is not None and len(word.group(1)) == 1 and word.group(1).isupper()
            if initial and _AFTER_INITIAL_ENDS.match(text[m.end():].lstrip()):
                initial = False  # "195 W. I've written it down", "Band A. Best, Ana": a unit or a band, then a new sentence
            if word and (word.group(1).lower() in _ABBREVIATIONS or initial):
                continue  # "Dr. Okafor", "ext. 4471", "J. Whitfield"
        if text[start:m.start()].strip():
            yield text[start:m.start()], "?" in m.group(0) or "？" in m.group(0)
        start = m.end()
    if text[start:].strip():
        yield text[start:], False


_ZH_FUNCTION = re.compile(r"[我的是了在把改换为吗呢吧你他她也都就还现已从到成]")


_ZH_PUNCT = re.compile(r"[，。？！：；、（）【】“”]")


_ADDRESS = re.compile(r"[A-Za-z0-9_.+\-]+@[A-Za-z0-9_.\-]+|https?://[!-~]+|www\.[!-~]+")


def _turn_zh(text: str) -> bool:
    """A turn is read as Chinese when it speaks Chinese: "我", Chinese punctuation, or mostly Chinese characters.

    "my 工位 is 7楼" is English with a Chinese slot; "我的office floor是3rd" is Chinese with a Latin one.
    """
    text = _ADDRESS.sub(" ", text)  # "leo.w@me.com" says nothing about the language, nor "me"
    if not _HAS_CJK.search(text):
        return False
    if re.search(r"我|本人", text):
        return True
    if _EN_OWNER.search(text):
        return False
    if re.search(r"[的是了在把为]", text):
        return True
    return bool(_ZH_PUNCT.search(text)) or len(_HAS_CJK.findall(text)) >= len(re.findall(r"[A-Za-z]+", text))


def _zh(text: str) -> bool:
    """Chinese when its Chinese characters carry the grammar: "我的office floor是3rd" is, "my 工位 is 7楼" is not."""
    if not _HAS_CJK.search(text):
        return False
    if _EN_OWNER.search(_ADDRESS.sub(" ", text)) and not re.search(r"我|的", text):
        return False
    latin = len(re.findall(r"[A-Za-z]+", text))
    return bool(_ZH_FUNCTION.search(text)) or len(_HAS_CJK.findall(text)) > 2 * latin


def _sub_clauses(sentence: str, zh: bool | None = None) -> Iterator[str]:
    breaker = _ZH_BREAK if (_zh(sentence) if zh is None else zh) else _EN_BREAK
    for sub in breaker.split(sentence):
        if sub and sub.strip(".,!?;:)( \t"):
            sub = sub.strip()
            yield sub[:-1] if sub.endswith(")") and sub.count("(") < sub.count(")") else sub


_CORRECTION_ZH = re.compile(r"打错了|说错了|写错了|记错了|弄错了|搞错了|更正|纠正|不对不对|有误")
_CORRECTION_EN = re.compile(r"\b(?:erratum|correction|corrected|misspoke|typo|my\s+mistake|my\s+bad|i\s+was\s+wrong|"
                            r"wrongly|incorrectly|mistakenly)\b", re.IGNORECASE)


def _read(sub: str, topic_open: bool, correcting: bool = False, zh: bool | None = None) -> grammar_en.Clause:
    if (_zh(sub) if zh is None else zh):
        return grammar_zh.parse_clause(sub, topic_open=topic_open, correcting=correcting)
    return grammar_en.parse_clause(sub, topic_open=topic_open, correcting=correcting)


def _label_sentence(sentence: str) -> grammar_en.Clause:
    """A sentence that is only ``slot: value`` (or ``slot - value``, ``【slot】value``)."""
    m = _LABEL_SENTENCE.match(sentence)
    if not m:
        return None
    slot = (m["bslot"] or m["slot"] or "").strip()
    value = m["value"].strip().rstrip(".,!?;: ")
    head = slot.lower()
    was = re.match(r"(?:previous|old|was|before|formerly)\s*:\s*\S", value, re.IGNORECASE)
    if was and not _HAS_CJK.search(slot):  # "phone plan — previous: A; new: B"
        named = grammar_en.clean_slot(slot)
        return Topic(named, True) if named else None
    if head in _ITEM_LABELS and not _HAS_CJK.search(head):  # "Subject: phone plan", "Field: phone plan": what follows is about it
        named = grammar_en.clean_slot(re.sub(r"^(?:my|your)\s+", "", value, flags=re.IGNORECASE))
        return Topic(named, False) if named else None
    if head in _VALUE_LABELS:  # "New value: V", "Entry: V": the value of the field named before
        given = grammar_en.bare_value(value)
        return Anaphor(given, head != "entry") if given else None
    if head in _META_LABELS:
        return Blocked("a form's own field")
    if m["bslot"] and re.search(r"——|(?<!\d)[:：]|[:：](?!\d)|=", value):  # "【个人信息登记】工位——7楼": a header, then the label
        return _label_sentence(value)
    marked = re.search(r"\s*[（(](?:updated|new|changed|revised|corrected|amended|current|latest|已更新|更新|新|已变更|"
                       r"变更|最新|已修改|请登记|请更新|请记录|请备注|登记|请注意)[）)]\s*$", slot, re.IGNORECASE)
    if marked:  # "office floor (updated): level B2"
        read = _label_sentence(f"{slot[: marked.start()]}: {value}")
        return Found(read.slot, read.value, True) if isinstance(read, Found) else read
    if len(slot.split()) > 5 or re.search(
            r"\b(?:is|are|was|were|am|be|been|has|have|had|got|get|changed|updated|moved|switched|needs?|went|goes|gone|became|"
            r"become)\b|是|为|改|换|变",
            slot, re.IGNORECASE):
        return None  # a clause, not a label
    if re.search(r"\b(?:my|that's|that’s|this\s+is|it's|it’s|i|mine)\b", value, re.IGNORECASE):
        return None  # "BT-Hub-9QX — that's my new home Wi-Fi name" is not a label
    if slot.lower() in {"easy", "simple", "sure", "yes", "yeah", "well", "ok", "okay", "note", "ps", "fyi", "btw", "update"}:
        return None
    if re.search(r"(?<![0-9])=|[a-z]\s*:(?!\d)", value, re.IGNORECASE) and not _HAS_CJK.search(value):
        return None  # "x=1, y=2": several labels, read one by one
    if not _HAS_CJK.search(slot) and not grammar_en.label_value_ok(slot, value):
        return None  # "Caroline: Hey Mel!" is a speaker's line, not a label
    arrow = re.split(r"\s*(?:→|->|=>|⇒|➡)\s*", value)
    if len(arrow) == 2 and arrow[1]:  # "slot: old → new"
        read = _label_sentence(f"{slot}: {arrow[1]}")
        return Found(read.slot, read.value, True) if isinstance(read, Found) else read
    if _HAS_CJK.search(slot + value) and not _EN_OWNER.search(_ADDRESS.sub(" ", sentence)):  # "leo@me.com" says no "me"
        return grammar_zh.parse_clause(f"{slot}：{value}", topic_open=False)
    return grammar_en.parse_clause(f"{slot}: {value}", topic_open=False)


# A form names the field in one label and gives its value in another ("Field: phone plan | New value: V");
# its other fields ("Reason: …", "Date: …") are about the form, not about the user.
_ITEM_LABELS = frozenset({"subject", "re", "regarding", "topic", "field", "item", "attribute", "detail", "fwd", "fw"})
_VALUE_LABELS = frozenset({"new value", "new", "value", "entry", "updated value", "current value", "changed to", "new entry",
                           "now", "updated", "corrected value", "correct value"})
_META_LABELS = frozenset({"reason", "date", "signed", "signature", "requested by", "comments", "comment", "status",
                          "reference", "ref", "old value", "previous value", "previous", "old", "was"})
_TAG_QUESTION = re.compile(
    r"^(?:right|ok|okay|yes|yeah|correct|got\s+it|ya|yea|no|好吗|对吧|好不好|行吗|可以吗|明白吗|记住了吗)$"
    r"|^(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:note|remember|update|save|record|write|keep|make\s+a\s+note)\b"
    r"|^(?:能|可以|麻烦)?(?:帮我)?(?:记一下|记下来|记住|更新一下)",
    re.IGNORECASE)


_ASK_TO_DO = re.compile(r"^(?:(?:so|and|then|now|ok|okay)\s+)?(?:can|could|would|will)\s+(?:you|u|ya)\s+(?!tell\b|check\b|confirm\b)\w+"
                        r"|^(?:可以|能不能|能|可不可以|麻烦|请)(?:你|您)?(?:帮我|帮忙)?(?!查|确认|看看|告诉)", re.IGNORECASE)
_REQUEST = re.compile(
    r"^(?:(?:dear|hi|hello)\s*,?\s*)?(?:(?:can|could|would|will)\s+(?:you|u|ya)\s+(?:please\s+|pls\s+|kindly\s+|also\s+|just\s+)*(?:be\s+so\s+kind\s+as\s+to\s+)?(?:update|change|set|switch|note|"
    r"record|remember|save|put|make|correct|amend|edit|log|register|use|keep|list|mark|kindly|please|pls|replace|swap|"
    r"overwrite)\b)"
    r"|^(?:可以|能|能不能|可不可以|麻烦)(?:你|您)?(?:帮我|帮忙)(?:把|将|改|换|更新|登记|记)",
    re.IGNORECASE,
)
# A piece after a comma that continues a value: "Canary Wharf, Level 9", "nights, 22:00-06:00".
_CONTINUATION = re.compile(r"^[A-Z0-9£$€¥#(][\w .:/#&'’()£$€¥+\-–]{0,30}$")
_NOT_CONTINUATION = re.compile(
    r"^(?:by|in|thanks|thank|not|please|pls|so|but|and|if|which|who|that|this|it|i|we|you|ok|okay|lol|haha|just|"
    r"no|yes|also|btw|fyi|for|as|since|from|effective|starting|anyway|cheers|regards|best)\b"
    r"|\b(?:is|are|was|were|will|can|have|has|do|did|does|'s|'re|'m|am)\b",
    re.IGNORECASE,
)


def _continues(piece: str) -> bool:
    piece = grammar_en.clean_value(piece.strip().rstrip(".!?;"))
    return (bool(piece) and len(piece.split()) <= 4 and bool(_CONTINUATION.match(piece))
            and not _NOT_CONTINUATION.search(piece) and not _HAS_CJK.search(piece))


_STICKER = re.compile(
    r"\[(?:微笑|撇嘴|色|发呆|得意|流泪|害羞|闭嘴|睡|大哭|尴尬|发怒|调皮|呲牙|惊讶|难过|酷|冷汗|抓狂|吐|偷笑|愉快|白眼|傲慢|困|惊恐|流汗|憨笑|"
    r"悠闲|奋斗|咒骂|疑问|嘘|晕|衰|骷髅|敲打|再见|擦汗|抠鼻|鼓掌|坏笑|哈欠|鄙视|委屈|快哭了|阴险|亲亲|可怜|玫瑰|爱心|心碎|强|弱|握手|胜利|"
    r"抱拳|拳头|OK|ok|NO|捂脸|奸笑|机智|皱眉|耶|吃瓜|加油|汗|天啊|旺柴|好的|打脸|哇|翻白眼|666|叹气|苦涩|裂开|狗头|破涕为笑|合十|"
    r"庆祝|烟花|红包|发|福|社会社会|让我看看|Emm)\]|[（(]狗头[）)]")
_FILLER_CLAUSE = re.compile(
    r"(?:对|对的|对对|是的|没错|嗯|yes|yeah|yep|right|correct|haha+|lol|lmao|easy|simple|sure|well|so|ok|okay|oh|um+|uh+|"
    r"hmm+|since\s+then|after\s+that|from\s+then\s+on|dear\s+\w+|hi|hello|"
    r"(?:it|that)(?:'s|\s+has|\s+just)?\s+changed(?:\s+(?:again|today|yesterday|last\s+week|recently))?|"
    r"(?:已经|又|刚)?(?:换|改|变|更新)了(?:啦|哦|喔)?|(?:原来|以前|之前|原先|本来)(?:是|为).{1,24}|(?:it|that)\s+used\s+to\s+be\s+.{1,40}|"
    r"i(?:'m|\s+am)\s+(?:so\s+)?sorry\s+to\s+(?:trouble|bother)\s+you|i\s+do\s+hope\s+.{1,40})", re.IGNORECASE)


class _Reader:
    """Reads a turn clause by clause, carrying the open topic and the pieces not yet understood."""

    def __init__(self, text: str) -> None:
        self.topic: Topic | None = None
        self.correcting = bool(_CORRECTION_ZH.search(text) or _CORRECTION_EN.search(text))
        self.pending: list[str] = []  # sub-clauses of this sentence that read as nothing yet
        self.turn_zh = _turn_zh(text)
        self.loose: str | None = None  # a whole sentence that read as nothing ("3rd floor."), for "That's my X"

    def zh(self, clause: str) -> bool:
        """Read ``clause`` with the Chinese grammar: in a Chinese turn, unless it is English about "my" slot."""
        if not self.turn_zh:
            return False
        return not (_EN_OWNER.search(_ADDRESS.sub(" ", clause)) and not re.search(r"我|本人", clause)) and bool(
            _HAS_CJK.search(clause) or not re.search(r"\b(?:is|my|it's|changed|to)\b", clause, re.IGNORECASE))

    def read(self, body: str) -> grammar_en.Clause:
        read = _read(body, self.topic is not None, self.correcting, self.zh(body))
        if read is None and self.pending and not self.zh(body):
            # "please use Team Lead, Payments as my job title": a value with a comma in it.
            for start in range(len(self.pending) - 1, -1, -1):
                text = ", ".join([*self.pending[start:], body])
                joined = _read(text, self.topic is not None, self.correcting, self.zh(text))
                if isinstance(joined, Found):
                    return joined
        if read is None and self.topic is not None and self.topic.bare:
            value = grammar_zh.bare_value(body) if self.zh(body) else grammar_en.bare_value(body)
            if value is not None:
                return Anaphor(value, False)
        return read

    def sentence(self, subs: list[str], *, tagged: bool, questioned: bool = False) -> Iterator[FactMention]:
        self.pending = [self.loose] if self.loose else []
        self.loose = None
        yielded = False
        index = 0
        while index < len(subs):
            body = subs[index].rstrip(".,!?;: ")
            index += 1
            if index >= 2 and _ZH_CONDITION.match(subs[index - 2].strip()):
                self.topic, self.pending = None, []
                continue  # "要是能自己选，我的X就定V": the consequence of a condition, not a fact
            if not body or (_is_interrogative(body) and not _REQUEST.match(body)):
                continue
            if _FILLER_CLAUSE.fullmatch(body) and (self.pending or self.loose is not None or self.topic is not None):
                continue  # "7楼！对，就是我的工位", "my X? Easy — V": a word between the value and the slot it belongs to
            read = self.read(body)
            lead: list[str] = []
            for piece in reversed(self.pending):  # the value-like pieces right before this clause
                if not (_continues(piece) or re.fullmatch(r"[a-z][\w\-]*(?:\s+[\w\-]+){0,2}", piece.strip())) or re.match(
                        r"(?:yes|no|correct|right|ok|okay|sure|yeah|yep|exactly|indeed|so|well|got|i|we|\w+ed)\b", piece.strip(), re.I
                ) or re.search(r"\b(?:came|went|arrived|is|was|were|has|have|had)\b", piece, re.I):
                    # "Dropped OLD — V is my X now", "the letter came — V is my X": a clause of its own, not the value's start
                    break
                lead.insert(0, piece)
            if isinstance(read, Found) and lead and body.lower().startswith(read.value.lower()):
                # "nights, 22:00-06:00 is what I use as my shift": the value began before the comma.
                text = ", ".join([*lead, body])
                longer = _read(text, self.topic is not None, self.correcting, self.zh(text))
                if isinstance(longer, Found) and longer.value.endswith(read.value) and len(longer.value) > len(read.value):
                    read = longer
            if isinstance(read, (Found, Anaphor)):
                value = read.value
                at_end = body.rstrip(" .!?;:").lower().endswith(value.lower().rstrip(" .!?;:"))
                while at_end and index < len(subs) and not self.zh(body) and _continues(subs[index]):
                    value = grammar_en.clean_value(f"{value}, {subs[index].strip().rstrip('.!?;')}")
                    index += 1
                read = Found(read.slot, value, read.change) if isinstance(read, Found) else Anaphor(value, read.change)
            if isinstance(read, Found):
                labelled = bool(_LABELLED.match(body))
                if not tagged or (labelled and not questioned) or (read.change and not (questioned and labelled)):
                    # a statement said as a question counts only for a change said in words: "我的X：V？？" asks to
                    # confirm V; a field and its value with a tag question after it ("我的X：V，ok？") states V and asks after
                    yield FactMention(slot=normalise_slot(read.slot), value=read.value, change=read.change)
                    yielded = True
                self.topic, self.pending = None, []
            elif isinstance(read, Topic) and read.back and self.pending and (
                    index >= len(subs) or re.search(r"\bi\s+mean", body, re.IGNORECASE)
                    or all(_AFTERTHOUGHT.match(rest.strip()) for rest in subs[index:])
                    or not re.match(r"(?:(?:so|and|oh|ok|okay|well|also|yeah)\s+)*(?:my\s|我的|我那个|本人)",
                                    grammar_en.strip_opener_label(body), re.IGNORECASE)):
                # "level B2, that's my office floor", "It's B14, my desk number": the value stood in the clause before
                # ("my kids" followed by "and I went camping" names no value)
                joined = ", ".join(self.pending)
                bare = grammar_zh.bare_value if self.zh(body) else grammar_en.bare_value
                back = (bare(joined) if not self.zh(body) else None) or bare(self.pending[-1])
                if re.search(r"\b(?:not|never|no\s+longer)\b|n't\b|n’t\b|不是|并非|从来没", joined, re.IGNORECASE):
                    back = None  # "It's definitely not V, my X": a denial, whatever the last piece reads as
                if back is not None and (not tagged or read.change):
                    yield FactMention(slot=normalise_slot(read.slot), value=back, change=read.change)
                # "你好，我想告诉你我的X。它是V": nothing before it was the value, so the value may still come
                self.topic, self.pending = (read if back is None and read.bare else None), []
            elif isinstance(read, Topic):
                self.topic, self.pending = read, []
            elif isinstance(read, Anaphor) and self.topic is not None:
                if not tagged or self.topic.change:
                    yield FactMention(slot=normalise_slot(self.topic.slot), value=read.value,
                                      change=self.topic.change or read.change)
                self.topic, self.pending = None, []
            elif isinstance(read, Blocked):
                self.topic, self.pending = None, []
                if read.reason == "a past frame":
                    index += 1  # the clause the frame governs is about the past
            else:
                self.pending = [*self.pending[-2:], body]
                if re.match(r"(?:not|no\s+longer|isn't|is\s+not)\b|不再是|不是|我的(?:嘛|呢|话|啊)$", body, re.IGNORECASE):
                    continue  # "my X? not 3F anymore — 7F": the old value, then the new one
                if self.topic is not None and self.topic.bare:
                    self.topic = None  # a slot named on its own is answered in the clause right after it, or not at all
        if not yielded and len(subs) == 1 and self.pending and len(subs[0].split()) <= 6 and (
                not self.zh(subs[0]) or len(grammar_zh.bare_value(subs[0]) or "") >= 2):
            self.loose = self.pending[-1]  # "3rd floor. That's my office floor": the next sentence may name it


_FILLERS = re.compile(r"(?<![\w'])(?:um+|uh+|erm+|er|hmm+|uhm)(?![\w'])[,]?", re.IGNORECASE)


#: "my" and a slot of up to five words, none of them a verb ("my X it's V", not "my X is wrong — it's V")
_NOT_SLOT_WORD = (r"(?!(?:is|was|were|has|had|have|are|got|changed|not|no|never|now|any|anymore|longer|it's|it’s|\w+n['’]t|"
                  r"earlier|before|yesterday|today|again|too|also|then|lately|recently)\b)")
_MY_PLAIN_SLOT = r"my\s+" + _NOT_SLOT_WORD + r"[^\W\d_][\w'’-]*(?:\s+" + _NOT_SLOT_WORD + r"[\w'’-]+){0,4}?"
#: "我的X是旧值……哦不对不对，那是之前的，现在是V", "我X是——等一下我看看——哦已经换成V了"
_RETRACTED_ZH = re.compile(
    r"((?:我的?|本人|(?m:^))\s*[^，,。！？…—\s][^，,。！？…—]{0,13}?\s*(?:现在|目前)?(?:是|为))\s*(?P<old>[^，,。！？…—]{0,30}?)"
    r"(?P<marker>(?:[\s，,。…—！!～~]*(?:哦|啊|呃|嗯|诶|欸|噢)?(?:不对|不是|错了|说错了|等一下|等等|等下|我看看|我查查)+)+"
    r"[\s，,。…—！!～~]*(?:(?:(?:那|这)(?:个)?是(?:之前|以前|旧|老)的(?:了)?|(?:已经)?(?:改|换)过了|我看看|我查查)[\s，,。…—！!～~]*)*)"
    r"(?:哦|啊|嗯)?(?:现在|已经)*(?:是|换成了?|改成了?)?(?=[^\s，,。！？…—])")


def _retract_zh(m: re.Match[str]) -> str:
    rest = m.string[m.end():]
    if re.match(r"我|你|他|她|不|没", rest):
        return m.group(0)
    if not re.search(r"不对|错了|等|看看|查查|不是[\s，,。…—！!～~]|不是不是|[哦啊呃嗯诶欸噢]不是", m["marker"]):
        return m.group(0)  # "我的X是7楼，不是3楼": a contrast with the old value, not a retraction
    return m.group(1)


#: "my X it's V", "my X — that's V", "re my X: it's V": the slot named, then its value said as "it's"
_SLOT_THEN_ITS = re.compile(r"(?:(?<![\w'’])(?:re|about|regarding)\s*:?\s+)?(\b" + _MY_PLAIN_SLOT + r")\s*(?:[—–:]|\s-)?\s+(?:it(?:'s|’s|\s+is)|that(?:'s|’s|\s+is))\s+"
                  r"(?!(?:changed|been|gone|not|no|never|still\s+not|wrong|right|correct|the\s+same|same|different|old|new|"
                  r"outdated|out\s+of\s+date|what|how|because|why|a\s+long|too|so|very|also|probably|maybe|going|about|for|"
                  r"in|on|at|like|just|actually|hard|easy|\w+ed\b|\w+ing\b))", re.IGNORECASE)


def _slot_then_its(m: re.Match[str]) -> str:
    if not re.search(r"(?:^|[.!?;:—–\n]\s*|\b(?:so|like|and|ok|okay|oh|um|uh|but|well|yeah)\s+)$",
                     m.string[max(0, m.start() - 24):m.start()], re.IGNORECASE):
        return m.group(0)  # "it wants my X - that's V", "as far as my X goes, it's V": "my" does not begin the clause
    return m.group(1) + " is "


_LABELLED = re.compile(r"^[^:：=＝，,。]{1,24}?(?:(?<!\d)[:：]|[:：](?!\d)|[=＝])")  # "X: V", "我的X：V", not "X is 07:30"
#: What introduces an example: "e.g.", "for example", "Example:", "例：", "比如：".
_EXAMPLE_MARK = r"(?:e\.g\.|eg\.|for\s+example\b|(?:e\.?g|example)\s*(?::|—|\s-\s)|(?:例|例如|比如|举例|示例)\s*[:：])"
#: The rest of a sentence: up to a full stop, "!", "?", ";" or the end of the line ("3.5" and "a.b@c.d" go on).
_REST_OF_SENTENCE = r"(?:[^\n.!?。！？;；]|\.(?!\s|$))*"
#: An example is not the user's fact. A marker takes away the example it introduces, up to the end of its sentence
#: or its closing bracket, and nothing said before it: "my X is V, e.g. …" keeps "my X is V"; "e.g. my X = V",
#: "For example, my X is V" and "例：X＝V" keep nothing. A sentence that ends on the marker ("my X is V, for
#: example.") is the example itself. "例如"/"举例" begin an example without a colon only at the start of a line
#: ("搬家了，好几样都变了，比如X，现在是V" lists the user's own changes).
_EXAMPLE = re.compile(
    rf"[(（]\s*{_EXAMPLE_MARK}[^()（）\n]*[)）]"
    rf"|(?<![^\s,，;；:：—–(（]){_EXAMPLE_MARK}\s*[:：,，]?{_REST_OF_SENTENCE}"
    rf"|^\s*(?:[-*•·]\s*|\d{{1,2}}[.)、]\s*)?(?:例如|举例){_REST_OF_SENTENCE}"
    rf"|(?:^|(?<=[.!?]\s))[^\n.!?。！？;；]*?[\s,，]+(?:for\s+example(?=\s*(?:[.!?]+(?:\s|$)|$))|e\.g\.?(?=\s*$))",
    re.IGNORECASE | re.MULTILINE)
#: A sentence that is a to-do or a value struck out or someone else's: not the user's fact, whatever it says
_NOT_A_FACT = re.compile(r"(?:^|\s)(?:todo|to-do)\s*[:\-—]|[✗✘❌]|"
                         r"[（(][^（）()]{0,30}?(?:\bnot\s+mine\b|\bwrong\b|\bignore\b|\bnot\s+me\b|别存|不要存|错的|不是我的)[^（）()]{0,30}[）)]|"
                         r"[（(](?:已)?作废[）)]|"
                         r"[（(](?:[^（）()]{0,4})(?:妈妈|媽媽|爸爸|老婆|老公|朋友|同事|哥哥|姐姐|弟弟|妹妹|儿子|女儿|室友)的[）)]",
                         re.IGNORECASE)
_WORD_STUTTER = re.compile(r"\b(it's|it’s|it\s+is|is|my|the|to|is\s+now)\s+\1\b", re.IGNORECASE)
_TAKEN_BACK = re.compile(r"(?im)(^|[.!?]\s+)\s*(?:(?:um+|uh+|ok|okay|so)\s*,?\s+)*(?:scratch|ignore|forget|disregard)\s+(?:that|what\s+i\s+(?:said|told\s+you|wrote)"
                         r"(?:\s+(?:before|earlier|just\s+now|last\s+time))?)\s*[,.;:!—–-]*\s*(?=my\s)")
#: "my X is OLD — wait, no, sorry, that was the old one. It's V now": a value taken back and the right one said
_RETRACTED = re.compile(
    r"(\b" + _MY_SLOT + r"(?:\s+(?:is|'s|’s)\s*,?|\s*\?)\s*)(?P<old>(?:[^.?!—–\n]|\.(?=\S)){1,40}?)"
    r"(?P<marker>(?:[\s,.?!—–-]+(?:wait|hang\s+on|hold\s+on|sorry|oops|actually|(?<=[,.?!—–-]\s)(?:no|nope)(?=\s*[,.?!—–-])(?!\.\s*\d)|"
    r"(?<=[,.?!—–-])(?:no|nope)(?=\s*[,.?!—–-])(?!\.\s*\d)|(?:no|nope)(?=\s+(?:wait|sorry|no)\b)|"
    r"scratch\s+that|correction)(?![\w'’]))+[\s,.?!—–-]*"
    r"(?:(?:that(?:'s|’s|\s+was|\s+is)\s+(?:the\s+)?old(?:\s+one)?|that(?:'s|’s|\s+was)\s+(?:wrong|out\s+of\s+date)|"
    r"(?:they|i)\s+(?:changed|updated)\s+it|it\s+changed)[\s,.?!—–-]*)*)"
    r"(?:(?:actually\s+)?it(?:'s|’s|\s+is)\s+|make\s+(?:that|it)\s+|(?:it\s+)?should\s+be\s+)?(?=[^\W_]|[£$€¥₹₩₽#+(@])",
    re.IGNORECASE)


def _retract(m: re.Match[str]) -> str:
    rest = m.string[m.end():]
    if not re.search(r"\b(?:no|nope|wait|scratch\s+that|correction|oops)\b", m["marker"], re.IGNORECASE) or re.match(
            r"(?:my|your|his|her|their|our|that|this|it|i|not|never)\b|(?:that|it)(?:'s|’s)", rest, re.IGNORECASE):
        return m.group(0)  # "…, no doubt", "… — no, that's wrong", "Actually no, my Y is V": not a value taken back
    head = m.group(1).rstrip(" ,")
    return (head[:-1].rstrip() + " is " if head.endswith("?") else head + " ")  # "My X? OLD. Hang on, no — it's V"


_STUTTER = re.compile(r"\b((?:[a-z']+\s+){2,3})\1")
_ME_AS_MY = re.compile(r"\b(changed|updated|set|moved|switched|got|sorted|swapped|upgraded)\s+me\s+(?=[a-z])", re.IGNORECASE)
def _facts(text: str) -> Iterator[FactMention]:
    # "my X is V, e.g. …", "Example: my X = V", "例：X＝V": an example is not the user's fact. Cut before the
    # rewrites below, which may take a marker for an aside ("my X, for example, is V").
    text = _EXAMPLE.sub("", text)
    text = _FILLERS.sub(lambda m: " " * len(m.group(0)), text)
    text = _STUTTER.sub(r"\1", text)  # "change my change my X to V"
    text = _ME_AS_MY.sub(r"\1 my ", text)  # "changed me phone plan to V" (British, Australian)
    text = _WORD_STUTTER.sub(r"\1", text)  # "it's it's V": a word said twice while dictating
    text = _RETRACTED.sub(_retract, text)  # "my X is OLD — wait, no, sorry, it's V": the value after the retraction
    text = _RETRACTED_ZH.sub(_retract_zh, text)  # "我的X是旧值……哦不对，那是之前的，现在是V"
    # "我X从这周开始是V": when it began, between the slot and its verb
    text = re.sub(r"(?<=[\u3400-\u9fff\w])从(?:这|本|上|今|明)?(?:周|个?月|天|年|星期|礼拜|一号|\d{1,2}号)(?:开始|起)(?=(?:就)?(?:是|为|改成|换成))", "", text)
    # English words inside a Chinese sentence: "我的X changed 了，now 是V", "switch 到V", "the new one 是V"
    text = re.sub(r"(?i)(?<=[\u3400-\u9fff\w])[ \t]*(?:changed|updated|switched)[ \t]*了", "改了", text)
    text = re.sub(r"(?i)(?:(?<=[，,\s])|^)(?:now|the\s+new\s+one|new\s+one)[ \t]*(?=是[ \t]*\S)", "现在", text)
    text = re.sub(r"(?i)(?<=\S)[ \t]*(?:switch|switched|change|changed)[ \t]*(?=[到成])", "换", text)
    text = _TAKEN_BACK.sub(r"\1", text)  # "scratch what I said before, my X is V"
    text = re.sub(r"~~[^~\n]{1,60}~~\s*", "", text)  # "my X: ~~OLD~~ V": the old value struck through
    text = re.sub(r"(?i)\b(?:i\s+)?(?:reckon|think|guess|suppose|figured?)\s+i\s+should\s+(?:mention|say|tell\s+you|let\s+you\s+know)"
                  r"(?:\s+that)?\s+(?=my\s)", "", text)  # "Reckon I should mention my X changed."
    # "Do note that my X is V", "For your kind information, my X is V": a note to the reader before the fact
    text = re.sub(r"(?im)(^|[.!?:]\s+)(?:(?:please|kindly|do|pls)\s+)?(?:note|be\s+informed|be\s+advised)\s+(?:that\s+)?(?=my\s)", r"\1", text)
    text = re.sub(r"(?im)(^|[.!?:]\s+)for\s+your\s+(?:kind\s+)?(?:information|info|reference)\s*,?\s+(?=my\s)", r"\1", text)
    # "you asked about my X - it's V": the answer to the assistant's question
    text = re.sub(r"(?im)(^|[.!?]\s+)(?:(?:oh|ok|okay|so|and|re|right)\s*,?\s+)*(?:you|u)\s+(?:asked|wanted\s+to\s+know|were\s+asking)\s+"
                  r"(?:about|for|abt)\s+(?=" + _MY_PLAIN_SLOT + r"\s*(?:[,—–:]|\s-)\s*(?:it|that)(?:'s|’s|\s+is)\s)", r"\1", text)
    # "my X is wrong — it's V now": the value said wrong, then the right one
    text = re.sub(r"(\b" + _MY_SLOT + r")\s+(?:is|'s|’s)\s+(?:wrong|incorrect|out\s+of\s+date|outdated|not\s+right|old)\s*"
                  r"(?:[,.;:!—–]|\s-)+\s*(?:it(?:'s|’s|\s+is)|it\s+should\s+be|should\s+be|that\s+should\s+be)\s+", r"\1 is ",
                  text, flags=re.IGNORECASE)
    # "my X it's V", "my X — that's V", "except my X: it's V": the slot named, then its value said as "it's"
    text = _SLOT_THEN_ITS.sub(_slot_then_its, text)
    # "everything's fine except my X, which is V", "except the X, mine's V now": the one slot singled out
    text = re.sub(r"(?i)\b(?:(?:except|apart\s+from|other\s+than)\s+(?:for\s+)?(?:my|the)|(?:but|only|just)\s+my)\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)"
                  r"\s*(?:,|—|–|\s-)?\s+(?:which\s+is|mine(?:'s|’s|\s+is)|that(?:'s|’s|\s+is)|it(?:'s|’s|\s+is))\s+(?!changed|been|not|wrong|my\b|the\b)",
                  r"my \1 is ", text)
    # "I've got a different X now — V": a new value of the slot, named after it
    text = re.sub(r"(?i)\bi(?:'ve|’ve|\s+have)?\s+got\s+a\s+(?:different|new)\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)(?:\s+now)?"
                  r"\s*(?:—|–|:|,|\s-)\s*(?=\S)", r"my new \1 is ", text)
    # "V! That's what my X has been changed to."
    text = re.sub(r"(?im)^(.{1,40}?)[!.]?\s+that(?:'s|’s|\s+is)\s+what\s+my\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s+"
                  r"(?:has\s+been|have\s+been|was|got|is\s+being)\s+(?:changed|switched|updated|moved|set)\s+to[.!]?\s*$", r"my \2 changed to \1", text)
    text = re.sub(r"\bmyy+\b", "my", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+comma\s+", ", ", text, flags=re.IGNORECASE)  # dictation: "V comma please save that"
    text = re.sub(r"\s+(?:period|full\s+stop)\s*$", ".", text, flags=re.IGNORECASE | re.MULTILINE)  # dictation, at the end
    text = re.sub(r",\s*(i\s+mean)\b", r" \1", text, flags=re.IGNORECASE)  # "My X, I mean."
    text = _STICKER.sub(" ", text)  # "[呲牙]", "（狗头）": a chat app's stickers
    text = re.sub(r"[（(][^（）()\n]{0,24}[？?][）)]", " ", text)  # "（之前跟你说过没？）": an aside, not a question
    # "my X — the one I use for work — is V", "my X (the one you have on file) is V", "my X, which you asked about, is V"
    text = re.sub(r"(\b" + _MY_SLOT + r")\s*(?:\((?:the|which|that|in|if|as|just|for|i|you|ie|i\.e\.|aka|yes|my|mine)\b[^()]{0,60}\)|\s[—–-]\s[^—–\n]{1,60}?\s[—–-]\s|,\s[^,\n]{1,60}?,)\s*"
                  r"(?=(?:is|was|has\s+been|'s|’s|became)\b)", r"\1 ", text, flags=re.IGNORECASE)
    # The slot named with "the" or "mine" and owned all the same: "the X I've got is V", "the X you have on file for me
    # is V", "V is the X I've got", "the X — mine's V", "mine is V (the X)", "Mine's V. The X, I mean.", "what my X is,
    # is V", "it's V that I have as my X", "re: my X — V", "about the X you asked for — V"
    text = re.sub(r"\bthe\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s+(?:that\s+)?(?:i(?:'ve|’ve|\s+have)?\s+(?:currently\s+|now\s+)?(?:got|have|use|am\s+using)|"
                  r"you\s+(?:should\s+)?have\s+(?:on\s+file\s+)?for\s+me|(?:on|in)\s+my\s+(?:account|profile|file))\s+(?:is|=)\s+",
                  r"my \1 is ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+is\s+the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s+i(?:'ve|’ve|\s+have)?\s+(?:got|have|use)\s*(?=[.!]|$)", r" is my \1", text,
                  flags=re.IGNORECASE | re.MULTILINE)
    text = re.sub(r"(?m)^((?:oh\s+)?(?:and\s+)?)the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s*(?:—|–|-|:|,)\s*mine(?:'s|’s|\s+is)\s+", r"\1my \2 is ", text,
                  flags=re.IGNORECASE)
    text = re.sub(r"(?m)^mine(?:'s|’s|\s+is)\s+(.{1,40}?)\s*(?:\(\s*the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s*\)|[.,]\s+the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+),?\s+i\s+mean)[.!]?\s*$",
                  lambda m: f"my {m[2] or m[3]} is {m[1]}", text, flags=re.IGNORECASE)
    text = re.sub(r"(?m)^what\s+my\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s+is,?\s+is\s+", r"my \1 is ", text, flags=re.IGNORECASE)
    text = re.sub(r"(?m)^it(?:'s|’s|\s+is)\s+(.{1,40}?)\s+that\s+i(?:'ve|\s+have)?\s+(?:have|use|got|picked|chose)\s+(?:as|for)\s+my\s+",
                  r"\1 is my ", text, flags=re.IGNORECASE)
    text = re.sub(r"(?m)^(?:re|about|regarding)\s*:?\s+(?:my|the)\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)(?:\s+you\s+(?:asked|wanted)\s+(?:for|about))?\s*(?:—|–|:)\s*",
                  r"my \1 is ", text, flags=re.IGNORECASE)
    # "For me the X is V": the user's own; "new week new X: V": the first "new" is small talk
    text = re.sub(r"(?im)(^|[.:;!?]\s+)for\s+me,?\s+the\s+", r"\1my ", text)
    text = re.sub(r"(?i)\bnew\s+(?:day|week|month|year|semester|term|job|season|quarter|school\s+year)\s*,?\s+(?=new\s)", "", text)
    # "我的信息：X是V", "个人信息 - X：V", "My details: X is V": a heading over the fact, not a slot
    text = re.sub(r"(?m)^\s*(?:我的|个人|本人)?(?:基本)?(?:信息|资料)\s*(?:[-–—]+|[:：])\s*(?=\S)", "", text)
    text = re.sub(r"(?im)^\s*(?:my|personal)\s+(?:details|info|information)\s*(?:[-–—]+|:)\s*(?:my\s+)?(?=\S)", "my ", text)
    # "My X at the moment is V": a time between the slot and its copula
    text = re.sub(r"(\b" + _MY_SLOT + r")\s+(?:at\s+the\s+moment|right\s+now|currently|these\s+days|nowadays)\s+(?=is\s)",
                  r"\1 ", text, flags=re.IGNORECASE)
    # "my X, which is V": the relative clause gives the value
    # (only where "my X" begins the clause: "it shows V as my X, which is a mistake" says nothing of X)
    text = re.sub(r"((?:^|[.:;!?—–]\s*|\b(?:and|so|but|also)\s+)" + _MY_SLOT + r"),\s+which\s+(?:is|'s)\s+",
                  r"\1 is ", text, flags=re.IGNORECASE | re.MULTILINE)
    # "my X yeah it's V", "my X, um, is V": a filler between the slot and its copula
    text = re.sub(r"(\b" + _MY_SLOT + r")\s*,?\s+(?:yeah|yep|uh+|um+|erm|well|like)\s*,?\s+"
                  r"(?=(?:it's|it’s|it\s+is|is)\s)", r"\1 ", text, flags=re.IGNORECASE)
    text = re.sub(r"(?m)(?:^|(?<=\.\s))(?:answer|re|q|question|step)\s*(?:to\s+)?\d+\s*[:.)-]?\s*(?:done\s*,?\s*)?", "", text,
                  flags=re.IGNORECASE)  # "Answer to 2: it's V now", "Step 3 done, …"
    text = re.sub(r"(?<=[A-Za-z0-9\u3400-\u9fff])\s*(?:\.{3,}|…+)\s*(?=[A-Za-z0-9\u3400-\u9fff£$€¥#])", " — ", text)  # "X... V"
    text = re.sub(r"(?m)^\s*[|｜]\s*([^|｜\n]+?)\s*[|｜]\s*([^|｜\n]+?)\s*[|｜]\s*$", r"\1: \2", text)  # "| X | V |": a table row
    if len(re.findall(r"[:：]", text)) >= 2:
        text = re.sub(r"\s+[|｜]\s+", "\n", text)  # "Field: X | Entry: V": one label per line
    # "几件事：1. … 2. 我的X是V 3. …": items numbered inside one Chinese line, one per line
    text = re.sub(r"(?<=[\u3400-\u9fff\w])\s+(?=\d{1,2}[.、)）]\s*[\u3400-\u9fff])", "\n", text)
    text = re.sub(r"(?m)^\s*(?:[-*•·]|\d{1,2}[.)]|\(\d{1,2}\))\s+(?=\S)", "", text)  # list items
    text = re.sub(r"(?m)^\s*(?:>+\s*|(?:me|user|agent|assistant|bot|q|a)\s*:\s+(?=\S))"
                  r"(?:(?:so\s+|and\s+)?what(?:'s|’s|\s+is)\s+(?=your\s))?", "", text, flags=re.IGNORECASE)  # a quoted exchange
    text = re.sub(r"(?<=\s)\s+", " ", text)
    reader = _Reader(text)
    for sentence, asked in _sentences(text):
        if _NOT_A_FACT.search(sentence):
            reader.topic = None  # "TODO: change my X to V", "X: V ✗ (wrong, ignore)"
            continue
        subs = list(_sub_clauses(sentence, reader.zh(sentence)))
        # A question may still carry news ("My desk changed to 7F, ok?"): only when the question
        # is a tag after the statement and the change is spelled out.
        tagged = asked and len(subs) > 1 and bool(_TAG_QUESTION.match(subs[-1].strip()))
        if asked and not tagged and _REQUEST.match(sentence.strip()):
            asked = False  # "could you note that my X is V?" is a request, not a question
        if asked and not tagged and len(subs) > 1 and _ASK_TO_DO.match(subs[-1].strip()) and not any(
                _is_interrogative(sub.strip()) for sub in subs[:-1]):
            subs, asked = subs[:-1], False  # "Now that my X is V, can you redo the booking?": a statement, then a request
        if asked and not tagged:
            slot_only = (grammar_zh.topic_of_question(sentence) if reader.zh(sentence)
                         else grammar_en.asked_slot(sentence))
            reader.topic = slot_only  # "oh and my locker? C12": the next sentence answers it
            if slot_only is None:
                # A statement said as a question ("My city changed to Oslo?") still carries an explicit change,
                # and "you know how my X was 3F?" opens X for what follows.
                yield from reader.sentence(subs, tagged=True, questioned=True)
                if reader.topic is not None and not reader.topic.change:
                    reader.topic = None
            continue
        if tagged:
            subs = subs[:-1]
        plain = sentence.strip().rstrip(".,!?;: ")
        head = re.split(r"[:：=|｜]|——|\s[-–—>→]+\s", plain, maxsplit=1)[0]
        label = None if asked or re.search(r"(?<!\d),|,(?!\d)", head) else _label_sentence(plain)
        if isinstance(label, Found):
            yield FactMention(slot=normalise_slot(label.slot), value=label.value, change=label.change)
            reader.topic = None
            continue
        if isinstance(label, Topic) and not _HAS_CJK.search(plain):  # "Subject: phone plan": what follows is about it
            reader.topic = label
            continue
        if isinstance(label, Anaphor) and reader.topic is not None:
            yield FactMention(slot=normalise_slot(reader.topic.slot), value=label.value,
                              change=reader.topic.change or label.change)
            reader.topic = None
            continue
        if isinstance(label, (Anaphor, Blocked)):
            reader.topic = None  # "Reason: …" on a form, or a value with no field named before it
            continue
        yield from reader.sentence(subs, tagged=tagged)


def detect_facts(text: str) -> tuple[FactMention, ...]:
    """Return the facts explicitly stated in ``text``, in order of appearance.

    Identical (slot, value) pairs are reported once, keeping the first
    occurrence. Traditional and Cantonese forms are read through
    ``gate.hanzi.fold``; a value keeps the characters it was written in.
    """
    folded = fold(text)
    seen: set[tuple[str, str]] = set()
    found: list[FactMention] = []
    for mention in _facts(folded):
        value = mention.value
        if folded != text and (at := folded.find(value)) >= 0:
            value = text[at:at + len(value)]
        key = (mention.slot, value)
        if key not in seen:
            seen.add(key)
            found.append(FactMention(slot=mention.slot, value=value, change=mention.change))
    return tuple(found)


# --------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------

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
    r"begin\s+with|which\s+was\s+the\s+first|(?:had|have|got|used|picked|chose|gave)\s+(?:you\s+)?first|start\s+out|"
    r"my\s+(?:very\s+)?first)\b"
    r"|最早|最开始|一开始|最初|起初|第一次|第一个|刚开始|开头|最先|初始|原始|当初|初代|头一回|第一版",
    re.IGNORECASE,
)
_BEFORE_WORDS = re.compile(
    r"\b(?:before|prior\s+to|until|till|earlier\s+than|ahead\s+of|pre-|switch(?:ed)?\s+away\s+from|change\s+it\s+from|"
    r"replac(?:e|ed|ing))\b|之前|以前|前面|先前|此前|那会儿?|的时候|(?<=\S)(?<![目当眼提])前(?=是|的|本人|我|那|[)）]|$|[,，=])|"
    r"替掉的|替换掉的|取代的|顶掉的",
    re.IGNORECASE,
)
_PREVIOUS = re.compile(
    r"\b(?:previous(?:ly)?|prior|former(?:ly)?|old|older|last|earlier|before|used\s+to|use\s+to|was\s+it|had\s+been|"
    r"what\s+was|did\s+i\s+have|had\s+before|back\s+then|the\s+one\s+before)\b"
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
    r"(?P<anchor>[^，,。？?！\s](?:[^，,。？?！]|(?<=\d),(?=\d))*?)\s*[，,]?\s*(?:之前|以前|前面|(?<![目当眼提])前(?=是|的|本人|我|那|[)）]|$))"
    r"|(?:^|(?<=[，,]))\s*(?P<anchor3>[^，,。？?！\s我：:](?:[^，,。？?！：:]|(?<=\d)[:,](?=\d))*?)\s*(?:之前|以前|前面)(?=那个|的|用的|我|[，,])"
    r"|[（(](?P<anchor4>[^（）()]+?)(?<![目当眼])前[）)]|^\s*(?P<anchor5>[^，,。？?！\s我](?:[^，,。？?！]|(?<=\d),(?=\d))*?)(?:替掉|替换掉|取代|顶掉)的"
    r"|^\s*(?P<anchor6>[^，,。？?！\s我](?:[^，,。？?！]|(?<=\d),(?=\d))*?)的前一个"
    r"|(?<=\s\s)(?:改|换)(?P<anchor7>[^，,。？?！\s了过掉之以](?:(?!之前|以前)[^，,。？?！]|(?<=\d),(?=\d))+?)\s*(?:之前|以前|(?<![目当眼提])前(?=是|的|本人|我|那|[)）]|$))"
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
    for pattern in (_ANCHOR_ZH, _ANCHOR_EN) if _HAS_CJK.search(question) else (_ANCHOR_EN,):
        for m in pattern.finditer(question):
            group = next((g for g in ("anchor2", "anchor3", "anchor4", "anchor5", "anchor6", "anchor7", "anchor")
                          if m.groupdict().get(g)), "anchor")
            anchor = (m.group(group) or "").strip().strip(_QUOTES + " ").rstrip(".")
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
            if more and _continues(more.group(1)):  # "before Building C, Room 2.14?"
                anchor = f"{anchor}, {more.group(1).strip()}"
            anchor = re.sub(r"\s+(?:what|which|who|how)\b.*$", "", anchor, flags=re.IGNORECASE)
            if anchor and not anchor.isspace() and not _ANCHOR_JUNK.match(anchor) and len(anchor) <= 60:
                return anchor
    return None


def _mentions(text: str, name: str) -> int:
    """Position of ``name`` in ``text`` as a whole word (Latin) or substring (CJK); -1 when absent."""
    if _HAS_CJK.search(name):
        return text.find(name)
    m = re.search(rf"(?<![0-9a-z]){re.escape(name)}(?:e?s)?(?![0-9a-z])", text)
    return m.start() if m else -1


def _owned_by_other(question: str, at: int, slot: str) -> bool:
    head = question[:at]
    if _HAS_CJK.search(question):
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
            if anchor is not None and _HAS_CJK.search(spaced) and f"{anchor}{spaced[at:at + len(slot)]}" in spaced:
                # The value's own name ends with the slot's ("在讯飞输入法之前，我的输入法"): read it as written.
                anchor = f"{anchor}{spaced[at:at + len(slot)]}"
            elif anchor is None and _HAS_CJK.search(spaced):
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
