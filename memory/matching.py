"""String matching of values: the string judge, and the containment check the diagnostics use.

Two questions, two functions:

* `contains_value(value, text)`: does `text` mention `value` anywhere, as a
  whole token? The diagnostics ask it of memory (is a gold value in the
  prompt, in a summary, in the raw turns, was a planted value written).
* `judge_string(gold, answer, question=...)`: is `answer` a right answer
  whose value is `gold`? The string judge. `judge_answer` gives the same
  verdict with the rule that decided it.

The string judge credits the gold only as the answer's value, never merely
because it appears. Its rules, in order:

1. Both sides are put in one canonical form: NFKC (full-width forms),
   lowercase; contractions expanded ("it's" -> "it is", "isn't" -> "is not"),
   possessive "'s" dropped; number words to digits ("six", "twenty-three",
   and Chinese numerals before a measure word: "七楼", "两点", "六人"); times
   to 24-hour tokens ("2pm", "2 p.m.", "14:00", "下午2点", "下午两点" are all
   `14h00`; "4:30" with no half of the day is `4h30`, not `16h30`); light
   units: "7 F", "7th floor", "floor 7" -> "7f", "7层" -> "7楼", "6个人" ->
   "6人", "$450" -> "450 dollars", "1,200" -> "1200". Text is cut into
   clauses at . , ; ! ? ( ) newlines, " - ", "but", "however", 但是, 不过, and
   into tokens: a run of letters or digits is one token, a Chinese character
   is one token.
2. The answer is right at once when its tokens are the gold's tokens.
3. Otherwise the gold's tokens must occur in the answer as a contiguous run
   (so "7f" is not found in "17f", nor "王丽" in a clause left with "丽").
4. A hedge anywhere outside the gold makes it wrong: maybe, perhaps,
   probably, I think, I guess, not sure, don't know, either, or, around,
   if I remember, 可能, 也许, 大概, 好像, 应该, 不确定, 不知道, 或者, 吧, 吗;
   so does a clause that ends in a question mark ("7F?").
5. A negation in a clause holding the gold makes it wrong ("Not 7F.",
   "不是7楼", "I don't like sushi"). A negated clause *without* the gold is a
   correction and is allowed ("It's 7F, not 3F.").
6. When the question asks for the current value (it has no before /
   previously / used to / 之前 / 以前 / 原来), a clause that states the gold
   as an earlier value makes it wrong ("It was 7F before, now it's 12F");
   a clause that mentions another value as earlier is allowed ("It's 7F
   now; it used to be 3F").
7. Every other word of the answer must be frame: words the question
   already has (a whole word, or two Chinese characters or more in a row),
   pronouns and copulas (it is, your, you, my, 是, 你的, 我的, 在, 有),
   articles and prepositions, time adverbs (now, currently, still, 现在,
   目前), answer words (the answer is, 答案), titles (Ms, Dr), and whole
   politeness clauses ("thanks", "hope this helps", "let me know if...",
   谢谢). Anything else is content the gold does not explain: another value
   ("either 3F or 7F", a list), or an unrelated sentence around the gold
   ("The weather today was sushi.").

So "7F", "Your office floor is 7F.", "It was 3F before it changed." (asked
what it was before), "现在是7楼" and "你的工位是7楼。" are right, and "The
weather today was sushi.", "I don't know whether it is 7F.", "Not 7F.",
"7F? I'm not sure" and "either 3F or 7F" are wrong. The price of never
crediting nonsense is that a right answer with extra content ("You live in
Lisbon.", "7F, next to the elevators") is not credited; an LLM judge is for
that. Without the question, rule 7 has no question words to allow.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ledgermem.gate.matching import contains_value, normalise

__all__ = ["ABSTENTIONS", "Judgement", "abstains", "contains_value", "judge_abstention", "judge_answer", "judge_string",
           "normalise"]

_CJK = re.compile(r"[\u3400-\u9fff]")


# -- canonical form (rule 1) ---------------------------------------------------------------------------

_CONTRACTIONS = tuple((re.compile(p), r) for p, r in (
    (r"\b(it|that|what|there|here|who|he|she)'s\b", r"\1 is"), (r"\bcan't\b", "can not"),
    (r"\bwon't\b", "will not"), (r"n't\b", " not"), (r"\bi'm\b", "i am"), (r"'re\b", " are"),
    (r"'ve\b", " have"), (r"'ll\b", " will"), (r"'d\b", " would"), (r"'s\b", ""), (r"'", ""),
))
_EN_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_EN_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_EN_NUMBER = re.compile(
    rf"\b(?:({'|'.join(_EN_TENS)})(?:[- ]({'|'.join(list(_EN_UNITS)[1:10])}))?|({'|'.join(_EN_UNITS)}))\b")
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
_ZH_NUMBER = re.compile(
    r"([一二两三四五六七八九]?十[一二三四五六七八九]?|[零〇一二两三四五六七八九]{1,3})(?=[楼层点时人个名位元块岁天号星分])")
_ZH_TIME = re.compile(r"(上午|早上|凌晨|中午|下午|傍晚|晚上)?(?<!\d)(\d{1,2})(?:点|:)(?:(半)|(\d{1,2})分?)?")
_EN_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?")
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_UNITS = tuple((re.compile(p), r) for p, r in (
    (r"\b(\d+)(?:st|nd|rd|th)?\s*(?:floor|fl)\b", r"\1f"), (r"\bfloor\s*(\d+)\b", r"\1f"), (r"\b(\d+)\s+f\b", r"\1f"),
    (r"(\d+)层", r"\1楼"), (r"(\d+)个(?=人)", r"\1"), (r"(\d),(\d{3})\b", r"\1\2"),
    (r"\$\s?(\d+)", r"\1 dollars"), (r"€\s?(\d+)", r"\1 euros"), (r"£\s?(\d+)", r"\1 pounds"),
))
# Clause boundaries: sentence and clause punctuation (a dot or comma between digits is not one), brackets,
# a spaced dash, and contrast words.
_CLAUSE = re.compile(r"(?<!\d)[.,]|[.,](?!\d)|[;!?\n()\[\]。，；！？、（）]|\s[-–—]\s|\bbut\b|\bhowever\b|但是|不过")
_TOKEN = re.compile(r"[^\W\u3400-\u9fff_]+|[\u3400-\u9fff]")


def _zh_number(text: str) -> int:
    if "十" not in text:
        return int("".join(str(_ZH_DIGITS[c]) for c in text))
    tens, _, units = text.partition("十")
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[units] if units else 0)


def _zh_clock(m: re.Match[str]) -> str:
    period, hour = m.group(1), int(m.group(2))
    minute = 30 if m.group(3) else int(m.group(4) or 0)
    if period in ("下午", "傍晚", "晚上") and hour < 12 or period == "中午" and hour < 11:
        hour += 12
    return f" {hour}h{minute:02d} "


def _en_clock(m: re.Match[str]) -> str:
    hour, minute = int(m.group(1)) % 12, int(m.group(2) or 0)
    return f" {hour + 12 if m.group(3) == 'p' else hour}h{minute:02d} "


def _canonical(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'").replace("‘", "'")
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    text = _EN_NUMBER.sub(lambda m: str(_EN_TENS[m[1]] + _EN_UNITS.get(m[2] or "zero", 0)) if m[1]
                          else str(_EN_UNITS[m[3]]), text)
    text = _ZH_NUMBER.sub(lambda m: str(_zh_number(m[1])), text)
    text = _EN_TIME.sub(_en_clock, text)  # before the Chinese pattern, which would take "4:30" of "4:30pm"
    text = _ZH_TIME.sub(_zh_clock, text)
    text = _CLOCK.sub(lambda m: f"{int(m[1])}h{m[2]}", text)
    for pattern, repl in _UNITS:
        text = pattern.sub(repl, text)
    return text


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _join(tokens: list[str]) -> str:
    """Tokens back to text: words apart, Chinese characters together."""
    return re.sub(r"(?<=[\u3400-\u9fff]) | (?=[\u3400-\u9fff])", "", " ".join(tokens))


def _clauses(text: str) -> list[tuple[list[str], bool]]:
    """(tokens, ends with a question mark) for each non-empty clause of canonical text."""
    out: list[tuple[list[str], bool]] = []
    start = 0
    for m in [*_CLAUSE.finditer(text), None]:
        end = m.start() if m else len(text)
        tokens = _tokens(text[start:end])
        if tokens:
            out.append((tokens, m is not None and m.group(0) in "?？"))
        elif out and m is not None and m.group(0) in "?？":
            out[-1] = (out[-1][0], True)
        start = m.end() if m else end
    return out


# -- word lists (rules 4-7) ----------------------------------------------------------------------------

def _phrases(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(_tokens(p)) for p in text.split(","))


_HEDGES = _phrases(
    "maybe,perhaps,probably,possibly,likely,might,i think,i guess,i suppose,i believe,i assume,not sure,unsure,"
    "not certain,uncertain,do not know,no idea,not remember,can not remember,cannot remember,if i remember,"
    "if i recall,either,or,around,roughly,approximately,seems,apparently,可能,也许,或许,大概,大约,好像,似乎,"
    "估计,应该,不确定,不知道,不清楚,记不清,记不得,不记得,或者,或,吧,吗,左右,差不多")
_NEGATIONS = _phrases("not,no,never,neither,nor,none,cannot,不,没,非,未,别")
_PAST = _phrases("before,previously,used to,earlier,originally,formerly,prior,之前,以前,原来,原先,过去,曾经,先前,此前")
_FRAME = {t for p in _phrases(
    "it,is,was,are,were,be,been,am,i,you,your,yours,my,mine,we,our,they,their,the,a,an,of,on,in,at,to,as,that,"
    "this,there,here,has,have,had,now,currently,current,presently,still,right,moment,latest,answer,value,set,"
    "called,named,yes,sure,ok,okay,well,so,oh,then,later,after,changed,moved,switched,became,mr,mrs,ms,miss,dr,"
    "before,previously,used,earlier,originally,formerly,是,在,的,了,呢,啊,呀,哦,啦,嘛,你,您,我,叫,有,为,就,都,也,"
    "现在,目前,当前,还是,仍然,依然,答案,后来,改成,改为,换成,变成,之前,以前,原来") for t in p}
_POLITE = re.compile(
    r"^(?:thanks?(?: you)?(?: for asking)?|you are welcome|hope (?:this|that|it) helps|let me know if .*|"
    r"(?:is there )?anything else|have a (?:nice|good|great) day|(?:glad|happy) to help|谢谢(?:你|您)?|"
    r"不客气|希望对你有帮助|还有(?:什么|其他).*)$")


def _find(seq: list[str], phrase: tuple[str, ...] | list[str]) -> list[int]:
    n = len(phrase)
    return [i for i in range(len(seq) - n + 1) if n and seq[i:i + n] == list(phrase)]


def _has(seq: list[str], phrases: tuple[tuple[str, ...], ...]) -> tuple[str, ...] | None:
    return next((p for p in phrases if _find(seq, p)), None)


def _echoed(tokens: list[str], question: list[str]) -> list[bool]:
    """Which tokens repeat the question: a whole word, or two Chinese characters or more in a row."""
    marks = [False] * len(tokens)
    i = 0
    while i < len(tokens):
        j = i + 1
        while j <= len(tokens) and _find(question, tokens[i:j]):
            j += 1
        length = j - 1 - i
        if length >= 2 or (length == 1 and not _CJK.fullmatch(tokens[i])):
            marks[i:i + length] = [True] * length
            i += length
        else:
            i += 1
    return marks


# -- the judge -------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Judgement:
    correct: bool
    rule: str  # which rule decided, in words


def judge_answer(gold: str, answer: str, question: str = "") -> Judgement:
    """The string judge's verdict on `answer` against `gold`, with the rule that decided it."""
    g = _tokens(_canonical(gold))
    if not g:
        return Judgement(False, "empty gold")
    text = _canonical(answer)
    if _tokens(text) == g:
        return Judgement(True, "the answer is the gold")
    clauses = _clauses(text)
    flat = [(c, t) for c, (tokens, _) in enumerate(clauses) for t in tokens]
    gold_at = {k for i in _find([t for _, t in flat], g) for k in range(i, i + len(g))}
    if not gold_at:
        return Judgement(False, "the gold is not in the answer")
    rest = [t for k, (_, t) in enumerate(flat) if k not in gold_at]
    if hedge := _has(rest, _HEDGES):
        return Judgement(False, f"hedged ({' '.join(hedge)})")
    q = _tokens(_canonical(question))
    current = _has(q, _PAST) is None
    offset = 0
    for index, (tokens, asked) in enumerate(clauses):
        own = [t for k, t in enumerate(tokens) if offset + k not in gold_at]
        holds = len(own) < len(tokens)
        offset += len(tokens)
        if asked:
            return Judgement(False, "a question, not an answer")
        if not holds and _POLITE.match(_join(tokens)):
            continue
        negated = _has(own, _NEGATIONS)
        if holds and negated:
            return Judgement(False, f"the gold is negated ({' '.join(negated)})")
        past = _has(own, _PAST)
        if holds and current and past:
            return Judgement(False, f"the gold is given as an earlier value ({' '.join(past)})")
        if not holds and (negated or current and past):
            continue  # a correction ("not 3F") or the earlier value named as earlier
        echo = _echoed(own, q)
        extra = [t for t, e in zip(own, echo, strict=True) if not e and t not in _FRAME]
        if extra:
            return Judgement(False, f"content besides the gold in clause {index + 1} ({' '.join(extra)})")
    return Judgement(True, "the gold stated as the answer")


def judge_string(gold: str, answer: str, question: str = "") -> bool:
    """True when `answer` states `gold` as its value (the rules are in the module docstring)."""
    return judge_answer(gold, answer, question).correct


#: What an abstention says, English and Chinese, matched as whole words of the normalised answer.
#: Benchmarks with unanswerable questions (LoCoMo's adversarial category, LongMemEval's `_abs` questions)
#: count such an answer as correct; keep the list short so that a guess dressed as a refusal is not one.
ABSTENTIONS = (
    "don't know", "do not know", "not mentioned", "never mentioned", "no mention", "no information",
    "not enough information", "information provided is not enough", "cannot be determined",
    "can't be determined", "cannot answer", "can't answer", "not stated",
    "不知道", "无法确定", "没有提到", "未提及", "没有提及", "没有相关信息", "没有信息", "无法回答",
)


def abstains(answer: str) -> bool:
    """The answer declines to answer in one of the `ABSTENTIONS` phrasings."""
    return any(contains_value(phrase, answer) for phrase in ABSTENTIONS)


def judge_abstention(answer: str, distractor: str | None = None) -> bool:
    """An unanswerable question's verdict: correct when the answer abstains and does not name the distractor."""
    return abstains(answer) and not (distractor and contains_value(distractor, answer))
