"""The fact grammar: facts users state about themselves (en, zh). Pure.

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

The turn is first rewritten into plain sentences (``gate.rewrites``: fillers,
retractions, asides, examples cut out) and cut into sentences and clauses
(``gate.sentences``). Questions are read by ``gate.questions``;
``is_question``, ``parse_question`` and ``QuestionIntent`` are re-exported
here.

Matching is lexical (regular expressions and word lists): no scoring, no
similarity, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ledgermem.gate import grammar_en, grammar_zh
from ledgermem.gate.clauses import Anaphor, Blocked, Clause, Found, Topic
from ledgermem.gate.hanzi import fold
from ledgermem.gate.questions import QuestionIntent, is_interrogative, is_question, parse_question
from ledgermem.gate.rewrites import rewrite
from ledgermem.gate.sentences import (ADDRESS, EN_OWNER, HAS_CJK, clause_is_zh, continues, split_sentences, sub_clauses,
                                      turn_is_zh)

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


# A Chinese clause that sets a condition on the next ("要是能自己选，…"), not one on the listener ("如果你需要，…").
_ZH_CONDITION = re.compile(r"(?:要是|如果|假如|假设|万一|若是|倘若|假若)(?!你|您|没记错|我没记错|有人问|别人问|需要)|"
                           r"等(?!等|下|一下)[^，,。]{1,12}(?:完|好|下来|批|过)(?:了|以后|之后)?$")  # "等手续办完，X就是V了": a plan
# What a turn adds after the slot it names, saying nothing of its value: "It is V, my X, in case you ever need it".
_AFTERTHOUGHT = re.compile(r"(?:in\s+case\s+you\s+(?:ever\s+)?need\s+it|if\s+you\s+(?:ever\s+)?need\s+it|just\s+so\s+you\s+(?:know|have\s+it)|"
                           r"for\s+(?:your|the)\s+records?|for\s+reference|thanks|thank\s+you|cheers|ta|please\s+(?:save|note|remember)\s+it|"
                           r"(?:please\s+)?keep\s+(?:it|that)\s+(?:handy|safe|somewhere)|that\s+is|i\s+mean|in\s+case\s+you\s+(?:lost|forgot)\s+it|"
                           r"by\s+the\s+way|for\s+your\s+notes|"
                           r"i\s+(?:fat[- ]?fingered|mistyped|typoed|misspelt|misspelled|got\s+(?:it|that)\s+wrong)\b.{0,30})[.!]*$",
                           re.IGNORECASE)
# A whole sentence that is a label: "office floor - 7F", "工位：K2-33", "【工位】K2-33".
_LABEL_SENTENCE = re.compile(
    r"^\s*(?:【(?P<bslot>[^】]{1,24})】|(?P<slot>(?:my\s+|我的)?(?=[\w()]*[^\W\d_])[^\W_][\w\- ()（）]{0,40}?))\s*(?:(?<=】)|(?<![0-9])[:=]|——|[|｜]|\s[-–—]+\s|\s*(?:->|→)\s*)\s*(?P<value>\S.*?)\s*$",
    re.IGNORECASE,
)


def normalise_slot(slot: str) -> str:
    """Canonical slot name: en lowercased without "my "/"the "; zh without "我的", in Simplified characters."""
    text = fold(" ".join(slot.split()))
    if HAS_CJK.search(text):
        text = text.strip()
        text = text[2:].strip() if text.startswith("我的") else text
        return text.lower() if not HAS_CJK.search(text[:1]) and text.isascii() else text
    text = text.lower()
    while True:
        for prefix in ("my ", "the "):
            if text.startswith(prefix):
                text = text[len(prefix):].lstrip()
                break
        else:
            return text



_CORRECTION_ZH = re.compile(r"打错了|说错了|写错了|记错了|弄错了|搞错了|更正|纠正|不对不对|有误")
_CORRECTION_EN = re.compile(r"\b(?:erratum|correction|corrected|misspoke|typo|my\s+mistake|my\s+bad|i\s+was\s+wrong|"
                            r"wrongly|incorrectly|mistakenly)\b", re.IGNORECASE)


def _read(sub: str, topic_open: bool, correcting: bool = False, zh: bool | None = None) -> Clause:
    if (clause_is_zh(sub) if zh is None else zh):
        return grammar_zh.parse_clause(sub, topic_open=topic_open, correcting=correcting)
    return grammar_en.parse_clause(sub, topic_open=topic_open, correcting=correcting)


def _end(text: str) -> str:
    """``text`` without its closing punctuation; an abbreviation keeps its full stop ("4:50 a.m.")."""
    return grammar_en.abbreviation_stop(text.rstrip(".,!?;: "), text)


def _label_sentence(sentence: str) -> Clause:
    """A sentence that is only ``slot: value`` (or ``slot - value``, ``【slot】value``)."""
    m = _LABEL_SENTENCE.match(sentence)
    if not m:
        return None
    slot = (m["bslot"] or m["slot"] or "").strip()
    value = _end(m["value"].strip())
    head = slot.lower()
    was = re.match(r"(?:previous|old|was|before|formerly)\s*:\s*\S", value, re.IGNORECASE)
    if was and not HAS_CJK.search(slot):  # "phone plan — previous: A; new: B"
        named = grammar_en.clean_slot(slot)
        return Topic(named, True) if named else None
    if head in _ITEM_LABELS and not HAS_CJK.search(head):  # "Subject: phone plan", "Field: phone plan": what follows is about it
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
    changed = re.fullmatch(r"(?P<slot>.+?)\s+(?:updated|changed|new|now)", slot, re.IGNORECASE)
    if changed and not HAS_CJK.search(slot):  # "* X updated → V", "X now: V"
        read = _label_sentence(f"{changed['slot']}: {value}")
        return Found(read.slot, read.value, True) if isinstance(read, Found) else read
    if slot.lower() in _OPENER_LABELS and re.search(r"[:=→]|->", value):  # "small update: X → V"
        return _label_sentence(value)
    if len(slot.split()) > 5 or re.search(
            r"\b(?:is|are|was|were|am|be|been|has|have|had|got|get|changed|updated|moved|switched|needs?|went|goes|gone|became|"
            r"become)\b|是|为|改|换|变",
            slot, re.IGNORECASE):
        return None  # a clause, not a label
    if re.search(r"\b(?:my|that's|that’s|this\s+is|it's|it’s|i|mine)\b", value, re.IGNORECASE):
        return None  # "BT-Hub-9QX — that's my new home Wi-Fi name" is not a label
    if slot.lower() in {"easy", "simple", "sure", "yes", "yeah", "well", "ok", "okay", "note", "ps", "fyi", "btw", "update"}:
        return None
    if re.search(r"(?<![0-9])=|[a-z]\s*:(?!\d)", value, re.IGNORECASE) and not HAS_CJK.search(value):
        return None  # "x=1, y=2": several labels, read one by one
    if not HAS_CJK.search(slot) and not grammar_en.label_value_ok(slot, value):
        return None  # "Caroline: Hey Mel!" is a speaker's line, not a label
    arrow = re.split(r"\s*(?:→|->|=>|⇒|➡)\s*", value)
    if len(arrow) == 2 and arrow[1]:  # "slot: old → new"
        read = _label_sentence(f"{slot}: {arrow[1]}")
        return Found(read.slot, read.value, True) if isinstance(read, Found) else read
    if HAS_CJK.search(slot + value) and not EN_OWNER.search(ADDRESS.sub(" ", sentence)):  # "leo@me.com" says no "me"
        return grammar_zh.parse_clause(f"{slot}：{value}", topic_open=False)
    return grammar_en.parse_clause(f"{slot}: {value}", topic_open=False)


# A form names the field in one label and gives its value in another ("Field: phone plan | New value: V");
# its other fields ("Reason: …", "Date: …") are about the form, not about the user.
_OPENER_LABELS = frozenset({"update", "small update", "quick update", "quick note", "note", "fyi", "btw", "ps", "heads up",
                            "reminder", "memo", "for the record", "for your records", "for my records"})
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
                        r"|^(?:可以|能不能|能|可不可以|麻烦|请)(?:你|您)?(?:帮我|帮忙)?(?!查|确认|看看|告诉)"
                        r"|^(?:您|你)?还(?:需要|要|有)(?:别的|其他|其它)(?:的)?(?:信息|问题)?(?:吗|么|嘛)$", re.IGNORECASE)
_REQUEST = re.compile(
    r"^(?:(?:dear|hi|hello)\s*,?\s*)?(?:(?:can|could|would|will)\s+(?:you|u|ya)\s+(?:please\s+|pls\s+|kindly\s+|also\s+|just\s+)*(?:be\s+so\s+kind\s+as\s+to\s+)?(?:update|change|set|switch|note|"
    r"record|remember|save|put|make|correct|amend|edit|log|register|use|keep|list|mark|kindly|please|pls|replace|swap|"
    r"overwrite)\b)"
    r"|^(?:可以|能|能不能|可不可以|麻烦)(?:你|您)?(?:帮我|帮忙)(?:把|将|改|换|更新|登记|记)",
    re.IGNORECASE,
)


_FILLER_CLAUSE = re.compile(
    r"(?:对|对的|对对|是的|没错|嗯|yes|yeah|yep|right|correct|haha+|lol|lmao|easy|simple|sure|well|so|ok|okay|oh|um+|uh+|"
    r"hmm+|since\s+then|after\s+that|from\s+then\s+on|dear\s+\w+|hi|hello|(?:and|but)?\s*now|(?:(?:a|some|good|bad|big|great)\s+)?(?:(?:bit|piece)\s+of\s+)?news|(?:since|as)\s+you\s+asked(?:\s+(?:earlier|before))?|as\s+requested|"
    r"(?:it|that)(?:'s|\s+has|\s+just)?\s+changed(?:\s+(?:again|today|yesterday|last\s+week|recently))?|"
    r"(?:已经|又|刚)?(?:换|改|变|更新)了(?:啦|哦|喔)?|(?:原来|以前|之前|原先|本来)(?:是|为).{1,24}|(?:it|that)\s+used\s+to\s+be\s+.{1,40}|"
    r"i(?:'m|\s+am)\s+(?:so\s+)?sorry\s+to\s+(?:trouble|bother)\s+you|i\s+do\s+hope\s+.{1,40})", re.IGNORECASE)


class _Reader:
    """Reads a turn clause by clause, carrying the open topic and the pieces not yet understood."""

    def __init__(self, text: str) -> None:
        self.topic: Topic | None = None
        self.correcting = bool(_CORRECTION_ZH.search(text) or _CORRECTION_EN.search(text))
        self.pending: list[str] = []  # sub-clauses of this sentence that read as nothing yet
        self.turn_zh = turn_is_zh(text)
        self.loose: str | None = None  # a whole sentence that read as nothing ("3rd floor."), for "That's my X"

    def zh(self, clause: str) -> bool:
        """Read ``clause`` with the Chinese grammar: in a Chinese turn, unless it is English about "my" slot."""
        if not self.turn_zh:
            return False
        return not (EN_OWNER.search(ADDRESS.sub(" ", clause)) and not re.search(r"我|本人", clause)) and bool(
            HAS_CJK.search(clause) or not re.search(r"\b(?:is|my|it's|changed|to)\b", clause, re.IGNORECASE))

    def read(self, body: str) -> Clause:
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
            body = _end(subs[index])
            index += 1
            if index >= 2 and _ZH_CONDITION.match(subs[index - 2].strip()):
                self.topic, self.pending = None, []
                continue  # "要是能自己选，我的X就定V": the consequence of a condition, not a fact
            if not body or (is_interrogative(body) and not _REQUEST.match(body) and not (
                    self.topic is not None and not questioned and re.match(r"is\s+(?:now\s+)?(?!(?:it|that|this|he|she|they|there|you|i|we)\b)\S.*\snow$", body, re.IGNORECASE))):
                continue  # a question; not "my X was changed, is V now", the rest of a statement
            if _FILLER_CLAUSE.fullmatch(body) and (self.pending or self.loose is not None or self.topic is not None):
                continue  # "7楼！对，就是我的工位", "my X? Easy — V": a word between the value and the slot it belongs to
            read = self.read(body)
            if read is None and not self.zh(body) and all(_ACK.fullmatch(piece) or _TIME_OPENER.fullmatch(piece)
                                                          for piece in self.pending):
                read = grammar_en.value_for_my(body)  # "as of Monday, V for my X"; not "I use A, B for my X"
            lead: list[str] = []
            for piece in reversed(self.pending):  # the value-like pieces right before this clause
                if not (continues(piece) or re.fullmatch(r"[a-z][\w\-]*(?:\s+[\w\-]+){0,2}", piece.strip())) or re.match(
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
                while at_end and index < len(subs) and not self.zh(body) and continues(subs[index]):
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
                    or all(_AFTERTHOUGHT.match(rest.strip()) or grammar_zh.is_afterthought(rest)
                           or _FILLER_CLAUSE.fullmatch(rest.strip().rstrip(".,!?;: ")) for rest in subs[index:])
                    or not re.match(r"(?:(?:so|and|oh|ok|okay|well|also|yeah)\s+)*(?:my\s|我的|我那个|本人)",
                                    grammar_en.strip_opener_label(body), re.IGNORECASE)):
                # "level B2, that's my office floor", "It's B14, my desk number": the value stood in the clause before
                # ("my kids" followed by "and I went camping" names no value)
                # "It's definitely not V, my X": a denied piece is never the value; "it's V now, not OLD — my X I
                # mean": the value is the run of pieces before the denial
                runs: list[list[str]] = [[]]
                denying = False
                for piece in self.pending:
                    if _DENIED.search(piece) or (denying and continues(piece) and not re.match(
                            r"(?:it|that)(?:'s|’s|\s+is)|now|but\b", piece.strip(), re.IGNORECASE)):
                        denying = True  # "not March 1, 2028": the denied value goes on past its comma
                        runs.append([])
                    else:
                        denying = False
                        runs[-1].append(piece)
                run = next((r for r in reversed(runs) if r), [])
                bare = grammar_zh.bare_value if self.zh(body) else grammar_en.bare_value
                back = ((bare(", ".join(run)) if not self.zh(body) else None) or bare(run[-1])) if run else None
                change = read.change or len(runs) > 1
                if back is not None and (not tagged or change):
                    yield FactMention(slot=normalise_slot(read.slot), value=back, change=change)
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
        last = _end(subs[-1]) if subs else ""
        alone = len(subs) == 1 or (not self.zh(last) and (all(_ACK.fullmatch(sub.strip().rstrip(".,!?;: ")) for sub in subs[:-1])
                                                          or bool(re.match(r"so\s*:\s*\S", last, re.IGNORECASE))))
        if not yielded and alone and self.pending and self.pending[-1] == last and len(last.split()) <= 6 and (
                not self.zh(last) or len(grammar_zh.bare_value(last) or "") >= 2):
            self.loose = self.pending[-1]  # "3rd floor. That's my office floor": the next sentence may name it



#: an acknowledgement before a value said on its own: "yep that's right, V. My X, yeah"
_ACK = re.compile(r"(?:(?:yes|yeah|yep|yup|mhm+|mm+|uh-huh|right|correct|exactly|sure|ok|okay|so|well|oh)\s*,?\s*)*"
                  r"(?:that(?:'s|’s|\s+is)\s+(?:right|correct|it)|(?:yes|yeah|yep|yup|mhm+|mm+|uh-huh|right|correct|exactly|sure|ok|okay))",
                  re.IGNORECASE)
_TIME_OPENER = re.compile(r"(?:as\s+of|from|since|starting|effective)\s+\w+(?:\s+\w+)?", re.IGNORECASE)
_DENIED = re.compile(r"\b(?:not|never|no\s+longer)\b|n't\b|n’t\b|不是|并非|从来没", re.IGNORECASE)
_LABELLED = re.compile(r"^[^:：=＝，,。]{1,24}?(?:(?<!\d)[:：]|[:：](?!\d)|[=＝])")  # "X: V", "我的X：V", not "X is 07:30"
#: A sentence that is a to-do or a value struck out or someone else's: not the user's fact, whatever it says
_NOT_A_FACT = re.compile(r"(?:^|\s)(?:todo|to-do)\s*[:\-—]|[✗✘❌]|"
                         r"[（(][^（）()]{0,30}?(?:\bnot\s+mine\b|\bwrong\b|\bignore\b|\bnot\s+me\b|别存|不要存|错的|不是我的)[^（）()]{0,30}[）)]|"
                         r"[（(](?:已)?作废[）)]|"
                         r"[（(](?:[^（）()]{0,4})(?:妈妈|媽媽|爸爸|老婆|老公|朋友|同事|哥哥|姐姐|弟弟|妹妹|儿子|女儿|室友)的[）)]",
                         re.IGNORECASE)


def _facts(text: str) -> Iterator[FactMention]:
    text = rewrite(text)
    reader = _Reader(text)
    for sentence, asked in split_sentences(text):
        if _NOT_A_FACT.search(sentence):
            reader.topic = None  # "TODO: change my X to V", "X: V ✗ (wrong, ignore)"
            continue
        subs = list(sub_clauses(sentence, reader.zh(sentence)))
        # A question may still carry news ("My desk changed to 7F, ok?"): only when the question
        # is a tag after the statement and the change is spelled out.
        tagged = asked and len(subs) > 1 and bool(_TAG_QUESTION.match(subs[-1].strip()))
        if asked and not tagged and _REQUEST.match(sentence.strip()):
            asked = False  # "could you note that my X is V?" is a request, not a question
        if asked and not tagged and len(subs) > 1 and _ASK_TO_DO.match(subs[-1].strip()) and not any(
                is_interrogative(sub.strip()) for sub in subs[:-1]):
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
        plain = _end(sentence.strip())
        head = re.split(r"[:：=|｜]|——|\s[-–—>→]+\s", plain, maxsplit=1)[0]
        label = None if asked or re.search(r"(?<!\d),|,(?!\d)", head) else _label_sentence(plain)
        if isinstance(label, Found):
            yield FactMention(slot=normalise_slot(label.slot), value=label.value, change=label.change)
            reader.topic = None
            continue
        if isinstance(label, Topic) and not HAS_CJK.search(plain):  # "Subject: phone plan": what follows is about it
            reader.topic = label
            continue
        if isinstance(label, Anaphor) and reader.topic is not None:
            yield FactMention(slot=normalise_slot(reader.topic.slot), value=label.value,
                              change=reader.topic.change or label.change)
            reader.topic = None
            continue
        if isinstance(label, Blocked) and label.reason == "a form's own field" and reader.topic is not None:
            continue  # "Field: X / Old: A / New: V": the old value's line leaves the field open for the new one
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
