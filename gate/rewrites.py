"""The rewrites a turn goes through before its sentences are read. Pure.

Spoken and typed turns say a fact in ways the clause grammars need not know:
fillers and stutters ("um", "it's it's V"), a value taken back and the right
one said ("my X is OLD — wait, no, it's V"), an aside between the slot and its
copula ("my X (the one on file) is V"), the slot named with "the" or "mine",
a quoted exchange, list bullets, dictated punctuation. Each is rewritten here
into the plain sentence it means, and an example ("e.g. …", "例：…") is cut
out, so that ``gate.lexicon`` reads plain sentences only.
"""

from __future__ import annotations

import re

__all__ = ["rewrite"]

# "my" and a slot's words, as the reader finds them before an aside, a filler or a time ("my X (…) is V").
_MY_SLOT = r"my\s+[^\W_][\w'’-]*(?:\s+[\w'’-]+){0,4}?"


_STICKER = re.compile(
    r"\[(?:微笑|撇嘴|色|发呆|得意|流泪|害羞|闭嘴|睡|大哭|尴尬|发怒|调皮|呲牙|惊讶|难过|酷|冷汗|抓狂|吐|偷笑|愉快|白眼|傲慢|困|惊恐|流汗|憨笑|"
    r"悠闲|奋斗|咒骂|疑问|嘘|晕|衰|骷髅|敲打|再见|擦汗|抠鼻|鼓掌|坏笑|哈欠|鄙视|委屈|快哭了|阴险|亲亲|可怜|玫瑰|爱心|心碎|强|弱|握手|胜利|"
    r"抱拳|拳头|OK|ok|NO|捂脸|奸笑|机智|皱眉|耶|吃瓜|加油|汗|天啊|旺柴|好的|打脸|哇|翻白眼|666|叹气|苦涩|裂开|狗头|破涕为笑|合十|"
    r"庆祝|烟花|红包|发|福|社会社会|让我看看|Emm)\]|[（(]狗头[）)]")


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
_SLOT_THEN_ITS = re.compile(r"(?:(?<![\w'’])(?:re|about|regarding)\s*:?\s+)?(\b" + _MY_PLAIN_SLOT + r")\s*(?:[—–:]|\s-)?\s+(?:it(?:'s|’s|\s+is)|its|that(?:'s|’s|\s+is))\s+"
                  r"(?!(?:changed|been|gone|not|no|never|still\s+not|wrong|right|correct|the\s+same|same|different|old|new|"
                  r"outdated|out\s+of\s+date|what|how|because|why|a\s+long|too|so|very|also|probably|maybe|going|about|for|"
                  r"in|on|at|like|just|actually|hard|easy|\w+ed\b|\w+ing\b))", re.IGNORECASE)


def _slot_then_its(m: re.Match[str]) -> str:
    if not re.search(r"(?:^|[.!?;:—–\n]\s*|\b(?:so|like|and|ok|okay|oh|um|uh|but|well|yeah)\s+)$",
                     m.string[max(0, m.start() - 24):m.start()], re.IGNORECASE):
        return m.group(0)  # "it wants my X - that's V", "as far as my X goes, it's V": "my" does not begin the clause
    return m.group(1) + " is "



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


def rewrite(text: str) -> str:
    """``text`` with its examples cut out and its fillers, retractions and asides rewritten (see the module)."""
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
    # "X -> V (mine, for reference)", "X — V (mine)", "me / X / V": a note line marked as the user's own
    text = re.sub(r"(?im)^\s*(?!my\s)([^\W\d_][\w-]*(?:\s[\w'’-]+){0,4}?)\s*(?:->|→|—|–|:|=)\s*((?:(?!\s(?:is|are|was)\s)[^():\n]){1,60}?)\s*"
                  r"\(\s*mine\b[^()\n]{0,40}\)\s*[.!]?\s*$", r"my \1 is \2", text)
    text = re.sub(r"(?im)^\s*me\s*/\s*([^/\n]{1,40}?)\s*/\s*([^/\n]{1,60}?)\s*$", r"my \1 is \2", text)
    text = re.sub(r"(?<!\S):[a-z0-9_+-]{2,30}:(?!\S)", " ", text)
    text = re.sub(r"(?i)\s*\((my\s+[^()\n]{1,40}?\s+(?:is|=)\s+[^()\n]{1,40})\)\s*", r". \1. ", text)  # "(my X is V)" inside a request  # ":thumbsup:": a chat app's emoji code
    # "I checked and it's V", "looked it up, it's V": how the user found the value, not the value
    text = re.sub(r"(?i)\b(?:i\s+)?(?:just\s+)?(?:looked\s+it\s+up|checked|double[- ]checked|had\s+a\s+look|found\s+it)(?:\s+and)?\s*,?\s+"
                  r"(?=it(?:'s|’s|\s+is)\s)", "", text)
    # "forgot to say my X changed", "I should mention my X …": the user telling it now
    text = re.sub(r"(?i)\b(?:i\s+)?(?:forgot\s+to\s+(?:say|mention|tell\s+you)|should\s+(?:mention|tell\s+you)|must\s+tell\s+you|"
                  r"wanted\s+to\s+(?:say|mention|tell\s+you)|(?:need|have)\s+to\s+tell\s+you)(?:\s+that)?\s+(?=my\s)", "", text)
    # "Q: X / A: V" on a form: the field and its answer
    text = re.sub(r"(?im)^\s*q\s*[:.]\s*([^?\n:]{1,40}?)\s*\n\s*a\s*[:.]\s*(?=\S)", r"\1: ", text)
    text = re.sub(r"\bmyy+\b", "my", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+comma\s+", ", ", text, flags=re.IGNORECASE)  # dictation: "V comma please save that"
    text = re.sub(r"(?<!notice)(?<!trial)(?<!grace)(?<!waiting)(?<!probation)(?<!billing)(?<!holding)(?<!payment)(?<!contract)"
                  r"(?<!reporting)(?<!rest)(?<!lock-in)(?<!cooling-off)\s+(?:period|full\s+stop)\s*$", ".", text,
                  flags=re.IGNORECASE | re.MULTILINE)  # dictation, at the end
    text = re.sub(r",\s*(i\s+mean)\b", r" \1", text, flags=re.IGNORECASE)  # "My X, I mean."
    text = _STICKER.sub(" ", text)  # "[呲牙]", "（狗头）": a chat app's stickers
    text = re.sub(r"[（(][^（）()\n]{0,24}[？?][）)]", " ", text)  # "（之前跟你说过没？）": an aside, not a question
    # "my X — the one I use for work — is V", "my X (the one you have on file) is V", "my X, which you asked about, is V"
    text = re.sub(r"(\b" + _MY_SLOT + r")\s*(?:\((?:the|which|that|in|if|as|just|for|i|you|ie|i\.e\.|aka|yes|my|mine)\b[^()]{0,60}\)|\s[—–-]\s[^—–\n]{1,60}?\s[—–-]\s|,\s[^,\n]{1,60}?,)\s*"
                  r"(?=(?:is|was|has\s+been|'s|’s|became|has\s+changed|changed)\b)", r"\1 ", text, flags=re.IGNORECASE)
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
    text = re.sub(r"(?m)^mine(?:'s|’s|\s+is)\s+(.{1,40}?)\s*(?:\(\s*the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+)\s*\)|(?:[.,]|\s[—–-])\s+the\s+((?:[\w'’()-]+\s+){0,3}?[\w'’()-]+),?\s+i\s+mean)[.!]?\s*$",
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
    return text
