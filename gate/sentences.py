"""A turn cut into sentences and sentences into clauses, and the language each is read in. Pure.

Segmentation for the fact grammar (``gate.lexicon``) and the question parser
(``gate.questions``): where a sentence ends ("Dr. Okafor" and "3.5" do not end
one), where a clause ends (a comma, a dash, a clause-opening "and my", a space
between Chinese characters), whether a turn or a clause is Chinese, and
whether a piece after a comma continues the value before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ledgermem.gate.values_en import EMOJI_CHARS, abbreviation_stop, clean_value

__all__ = ["ADDRESS", "EN_OWNER", "HAS_CJK", "QUOTES", "clause_is_zh", "continues", "split_sentences", "sub_clauses",
           "turn_is_zh"]

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff"
HAS_CJK = re.compile(f"[{_CJK}]")
QUOTES = "\"'“”‘’「」『』"
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
_EMOJI = re.compile(f"[{EMOJI_CHARS}]+")

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
EN_OWNER = re.compile(r"\b(?:my|i|i'm|i’m|i've|i’ve|we|they|me|mine)\b", re.IGNORECASE)


def split_sentences(text: str) -> Iterator[tuple[str, bool]]:
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
            # "4:50 a.m.", "the U.S.": the sentence's last word is an abbreviation and keeps its full stop
            sentence = text[start:m.start()]
            yield abbreviation_stop(sentence, text[start:]), "?" in m.group(0) or "？" in m.group(0)
        start = m.end()
    if text[start:].strip():
        yield text[start:], False


_ZH_FUNCTION = re.compile(r"[我的是了在把改换为吗呢吧你他她也都就还现已从到成]")


_ZH_PUNCT = re.compile(r"[，。？！：；、（）【】“”]")


ADDRESS = re.compile(r"[A-Za-z0-9_.+\-]+@[A-Za-z0-9_.\-]+|https?://[!-~]+|www\.[!-~]+")


def turn_is_zh(text: str) -> bool:
    """A turn is read as Chinese when it speaks Chinese: "我", Chinese punctuation, or mostly Chinese characters.

    "my 工位 is 7楼" is English with a Chinese slot; "我的office floor是3rd" is Chinese with a Latin one.
    """
    text = ADDRESS.sub(" ", text)  # "leo.w@me.com" says nothing about the language, nor "me"
    if not HAS_CJK.search(text):
        return False
    if re.search(r"我|本人", text):
        return True
    if EN_OWNER.search(text):
        return False
    if re.search(r"[的是了在把为]", text):
        return True
    return bool(_ZH_PUNCT.search(text)) or len(HAS_CJK.findall(text)) >= len(re.findall(r"[A-Za-z]+", text))


def clause_is_zh(text: str) -> bool:
    """Chinese when its Chinese characters carry the grammar: "我的office floor是3rd" is, "my 工位 is 7楼" is not."""
    if not HAS_CJK.search(text):
        return False
    if EN_OWNER.search(ADDRESS.sub(" ", text)) and not re.search(r"我|的", text):
        return False
    latin = len(re.findall(r"[A-Za-z]+", text))
    return bool(_ZH_FUNCTION.search(text)) or len(HAS_CJK.findall(text)) > 2 * latin


def sub_clauses(sentence: str, zh: bool | None = None) -> Iterator[str]:
    breaker = _ZH_BREAK if (clause_is_zh(sentence) if zh is None else zh) else _EN_BREAK
    for sub in breaker.split(sentence):
        if sub and sub.strip(".,!?;:)( \t"):
            sub = sub.strip()
            yield sub[:-1] if sub.endswith(")") and sub.count("(") < sub.count(")") else sub



# A piece after a comma that continues a value: "Canary Wharf, Level 9", "nights, 22:00-06:00".
_CONTINUATION = re.compile(r"^[A-Z0-9£$€¥#(][\w .:/#&'’()£$€¥+\-–]{0,30}$")
_NOT_CONTINUATION = re.compile(
    r"^(?:by|in|thanks|thank|not|please|pls|so|but|and|if|which|who|that|this|it|i|we|you|ok|okay|lol|haha|just|"
    r"no|yes|also|btw|fyi|for|as|since|from|effective|starting|anyway|cheers|regards|best)\b"
    r"|\b(?:is|are|was|were|will|can|have|has|do|did|does|'s|'re|'m|am)\b",
    re.IGNORECASE,
)


def continues(piece: str) -> bool:
    piece = clean_value(piece.strip().rstrip(".!?;"))
    return (bool(piece) and len(piece.split()) <= 4 and bool(_CONTINUATION.match(piece))
            and not _NOT_CONTINUATION.search(piece) and not HAS_CJK.search(piece))

