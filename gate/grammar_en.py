"""English clause grammar for facts users state about themselves. Pure.

A clause is read as ``lead-in · core · trailer``. The lead-in is whatever
comes before the core; it may hold any opener ("fyi", "quick note", "as of
today") but never a word that makes the clause something other than the
user's own present fact: a condition ("if"), a modal or plan ("might",
"going to"), a report ("said", "told me"), a doubt ("not sure"), a negation.
The core is one of a few constructions built from the same parts:

* owner ``my`` + optional adjective (``new``, ``current``) + slot noun
  phrase, then a copula (``is``, ``'s``, ``=``, ``:``, ``has been``) or a
  change verb (``changed``, ``got switched``, ``was moved``, ``went up``)
  with an optional ``from OLD`` and ``to``, then the value;
* ``I`` + change verb + ``my`` + slot (+ ``from OLD``) + ``to`` + value,
  and the same as an imperative ("change my X to V");
* the value first: ``V is my (new) X (now)``; ``I use V as my X``;
* a label: ``X: V`` / ``X = V`` at the start of the clause;
* a bare change at the start of a clause: ``(the) X changed to V``.

A clause may also only name a slot ("my X changed", "my X is no longer
OLD", "as for my X") — a *topic* — or only give a value ("it's V now",
"now V") — an *anaphor*, which binds to the turn's open topic.

Possession by anyone else ("my sister's X", "his X", "Tom's X"), hedges
("maybe"), negated copulas ("isn't", "not") and past-only values ("used
to be", "was" without a change verb) yield nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Anaphor", "Blocked", "Clause", "Found", "Topic", "parse_clause"]


@dataclass(frozen=True, slots=True)
class Found:
    slot: str
    value: str
    change: bool


@dataclass(frozen=True, slots=True)
class Topic:
    slot: str
    change: bool


@dataclass(frozen=True, slots=True)
class Anaphor:
    value: str
    change: bool


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str


Clause = Found | Topic | Anaphor | Blocked | None

# Words that, anywhere before the core, make the clause not a present
# first-person statement of fact.
_BLOCKERS = frozenset(
    """
    if unless whether suppose supposing imagine imagining wish wished hope hoping hoped
    wonder wondering doubt doubting maybe perhaps possibly probably might may could would
    should shall will gonna going plan plans planning planned considering consider thinking
    want wants wanted wanna hoping said says say saying told tells tell telling mentioned
    mention claims claimed claim thinks think thought believe believes believed heard hear
    according asked asks ask not don't doesn't didn't dont doesnt didnt never won't wont
    wouldn't when whenever once until before after than unsure whose guess guessing
    pretend pretending assume assuming bet dreamt dreamed dream
    """.split()
)
_OPENER_LABELS = frozenset(
    """
    update note fyi btw correction reminder ps p.s. heads-up edit info important psa
    quick small tiny also remember notice news change changes correction update
    """.split()
)
_OPENER_PHRASES = ("heads up", "quick note", "quick update", "small update", "just so you know",
                   "for the record", "for your records", "side note", "one more thing", "new info")

_W = r"[^\W_][\w\-]*"
_XW = r"[^\W_][\w\-'’]*"  # a slot word that may carry a possessive, checked after the match
_SLOT = rf"(?P<slot>{_XW}(?:\s+{_XW}){{0,4}}?)"
_ADJ = r"(?:(?P<adj>new|current|present|updated|actual|real|usual|regular|official|latest|old|previous|former|original|first)\s+)?"
_ADJ_PAST = frozenset({"old", "previous", "former", "original", "first"})
_ADV = (r"(?:(?P<adv>now|currently|still|actually|really|officially|finally|basically|presently|"
        r"at\s+present|right\s+now|these\s+days|nowadays|technically|just)\s+)?")
_ADV_CHANGE = frozenset({"now", "currently", "finally", "presently", "at present", "right now",
                         "these days", "nowadays", "actually"})
_COPULA = r"(?P<cop>is|'s|’s|=|:|has\s+been|remains|stays|is\s+set\s+to|is\s+listed\s+as|reads)"
_CHANGE_VERB = (
    r"(?:(?:has|have|had)\s+(?:been\s+|just\s+|now\s+|finally\s+|recently\s+)*|(?:was|is|got|were|just|"
    r"recently|finally|officially|now)\s+(?:been\s+|just\s+)?)*"
    r"(?P<verb>changed|updated|switched|moved|shifted|swapped|bumped|reset|upgraded|downgraded|"
    r"raised|lowered|increased|decreased|reduced|transferred|relocated|reassigned|converted|"
    r"changed\s+over|switched\s+over|went\s+up|went\s+down|gone\s+up|gone\s+down|jumped|dropped|"
    r"fell|fallen|became|become|modified|adjusted|revised|corrected|amended)"
)
_FROM = r"(?:\s+from\s+(?P<old>.+?))?"
_TO = r"\s+(?:over\s+|back\s+|up\s+|down\s+)?(?:to|into|as)\s+"

_MY = re.compile(r"\bmy\s+", re.IGNORECASE)
_I_CHANGE = re.compile(
    r"\b(?:i|we|they|someone|somebody|hr|it|the\s+company|the\s+office|my\s+(?:company|employer|office|landlord|bank))"
    r"(?:'ve|’ve|\s+have|\s+had|\s+just|\s+finally|\s+recently|\s+officially|\s+now)*\s+"
    r"(?P<verb>changed|updated|switched|moved|set|swapped|bumped|reset|upgraded|downgraded|raised|"
    r"lowered|increased|decreased|transferred|relocated|changed\s+over|switched\s+over|adjusted|"
    r"corrected|modified|amended)\s+my\s+" + _ADJ + _SLOT + _FROM + _TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+)?(?:change|update|set|switch|make|put|correct|amend)\s+my\s+" + _ADJ
    + _SLOT + _FROM + _TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
_MY_CHANGE = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+" + _CHANGE_VERB + _FROM + _TO + r"(?P<value>.+)$",
                        re.IGNORECASE)
_MY_FROM_TO = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+(?:went|changed|moved|switched|jumped|shifted|"
                         r"has\s+gone|has\s+changed)\s+from\s+(?P<old>.+?)\s+to\s+(?P<value>.+)$", re.IGNORECASE)
_MY_NO_LONGER = re.compile(
    r"my\s+" + _ADJ + _SLOT + r"\s+(?:is|'s|’s)\s+(?:no\s+longer|not\s+(?:still\s+)?|n't\s+)(?P<old>.+?)"
    r"(?:\s+(?:anymore|any\s+more|any\s+longer))?$",
    re.IGNORECASE,
)
_MY_NOT_ANYMORE = re.compile(
    r"my\s+" + _ADJ + _SLOT + r"\s+(?:isn't|isn’t|is\s+not)\s+(?P<old>.+?)\s+(?:anymore|any\s+more|any\s+longer)$",
    re.IGNORECASE,
)
_MY_PAST = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+(?:used\s+to\s+be|was|had\s+been|originally\s+was|was\s+originally)\s+"
                      r"(?P<old>.+)$", re.IGNORECASE)
_MY_CHANGED_ALONE = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+" + _CHANGE_VERB + r"(?:\s+(?:again|recently|"
                               r"today|yesterday|this\s+week|last\s+week|lately))?$", re.IGNORECASE)
_MY_IS = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s*(?<=\S)\s*" + _COPULA + r"\s*" + _ADV + r"(?P<value>.+)$",
                    re.IGNORECASE)
_MY_CONTRACTED = re.compile(r"my\s+" + _ADJ + r"(?P<slot>" + _W + r"(?:\s+" + _W + r"){0,4}?)(?:'s|’s)\s+"
                            + _ADV + r"(?P<value>.+)$", re.IGNORECASE)
_REPLACE = re.compile(
    r"^(?:please\s+|pls\s+)?(?:replace|swap|substitute)\s+(?P<old>.+?)\s+(?:with|for|by)\s+(?P<value>.+?)\s+"
    r"(?:for|as|in|on)\s+my\s+" + _ADJ + _SLOT + r"$",
    re.IGNORECASE,
)
_MY_NEEDS = re.compile(
    r"my\s+" + _ADJ + _SLOT + r"\s+(?:needs|need)\s+(?:updating|updated|changing|changed|an\s+update|to\s+be\s+"
    r"(?:updated|changed))(?:\s*:\s*|\s+to\s+)(?P<value>.+)$",
    re.IGNORECASE,
)
_ABOUT_MY = re.compile(r"^(?:as\s+(?:for|to)|about|regarding|re|concerning|on|for|with)\s+my\s+" + _ADJ + _SLOT
                       + r"$", re.IGNORECASE)
_VALUE_FIRST = re.compile(
    r"^(?P<value>[^\s].{0,40}?)\s+(?:is|'s|’s)\s+(?:now\s+|currently\s+|officially\s+)?my\s+" + _ADJ + _SLOT
    + r"(?:\s+(?:now|these\s+days|nowadays|currently|at\s+the\s+moment))?$",
    re.IGNORECASE,
)
_USE_AS = re.compile(
    r"\bi(?:'m|’m|\s+am)?(?:\s+now|\s+currently|\s+just)?\s+(?:have|use|using|got|picked|chose|went\s+with|"
    r"go\s+with|settled\s+on)\s+(?P<value>.+?)\s+(?:as|for)\s+my\s+" + _ADJ + _SLOT
    + r"(?:\s+(?:now|these\s+days|nowadays|currently))?$",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:my\s+)?" + _ADJ + r"(?P<slot>[^\W\d_][\w\-]*(?:[ ][\w\-]+){0,3})\s*(?P<sep>[:=])(?![=>])\s*"
                    r"(?P<value>\S.*)$", re.IGNORECASE)
_BARE_CHANGE = re.compile(r"^(?:the\s+)?" + _SLOT + r"\s+" + _CHANGE_VERB + _FROM + _TO + r"(?P<value>.+)$",
                          re.IGNORECASE)
_ANAPHOR = re.compile(
    r"^(?:and\s+|so\s+|but\s+|now\s+)?(?:"
    r"(?:it|that)(?:'s|’s|\s+is|\s+has\s+been)\s+(?:now\s+)?(?:actually\s+)?|"
    r"(?:it|that)\s+(?:was\s+|has\s+|got\s+|just\s+)*(?:changed|updated|switched|moved|became|went)\s+(?:to\s+)?|"
    r"now(?:\s+it(?:'s|’s|\s+is))?\s+|"
    r"(?:the\s+)?new\s+one(?:'s|’s|\s+is|:)\s*|"
    r"(?:these\s+days|nowadays|currently|today)\s+it(?:'s|’s|\s+is)\s+|"
    r"it\s+should\s+(?:be|say|read)\s+"
    r")(?P<value>.+)$",
    re.IGNORECASE,
)

_SLOT_STOPWORDS = frozenset(
    """
    my the a an it its this that these those he she they we you i me him her them us your our his
    their what which who whom whose where when how why if unless whether before after until then
    because and but or so not no never also just yesterday today tomorrow is was are were be been
    has have had do does did will would can could should may might must to from of in on at as by
    for with about now currently still always here there am very really
    """.split()
)
_SLOT_BLOCK = frozenset(
    """
    point question guess understanding feeling sense thought thoughts opinion concern worry problem
    issue idea bet hope impression bad pleasure fault turn plan plans view take answer day life
    mind head heart gut advice suggestion favourite favorite mistake apologies apology god goodness
    """.split()
)
_VALUE_STOP = frozenset(
    """
    not never no so very really too quite pretty kind sort going getting being also just still
    probably maybe perhaps definitely like that this it same different unknown unclear gone fine ok
    okay good great bad a an the what which who whom whose where when how why something anything
    nothing somewhere anywhere changing changed updated mine yours his hers theirs ours one
    """.split()
)
_VALUE_BAD_FIRST = frozenset({"not", "never", "no", "n't", "probably", "maybe", "perhaps", "possibly",
                              "likely", "either", "neither", "whatever", "unknown", "tbd", "still"})
_TRAIL = re.compile(
    r"(?:\s+|\s*[-–—]\s*)(?:now|anymore|any\s+more|today|these\s+days|nowadays|currently|at\s+the\s+moment|"
    r"right\s+now|as\s+of\s+(?:today|now|this\s+\w+|\w+day)|for\s+now|btw|by\s+the\s+way|fyi|"
    r"just\s+so\s+you\s+know|again|instead|though|lol|haha+|thanks|thank\s+you|please|ok|okay|"
    r"from\s+now\s+on|going\s+forward|since\s+\w+day|since\s+(?:last|this)\s+\w+|starting\s+(?:today|now)|"
    r"effective\s+(?:today|immediately|now)|officially|finally|actually|for\s+good|by\s+the\s+way|"
    r"if\s+(?:that|it)\s+matters|in\s+case\s+(?:that|it)\s+matters|just\s+fyi|for\s+reference|"
    r"for\s+the\s+record|as\s+well|too|yesterday|last\s+\w+|this\s+(?:morning|week|month|year|afternoon)|"
    r"earlier|recently|lately|a\s+while\s+ago|in\s+your\s+notes|in\s+my\s+profile|on\s+file|"
    r"for\s+me|:\)|:-\)|!+)$",
    re.IGNORECASE,
)
_CHANGE_TRAIL = re.compile(r"\b(?:now|anymore|any\s+more|from\s+now\s+on|going\s+forward|starting\s+(?:today|now)|"
                           r"effective\s+(?:today|immediately|now)|instead)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$|s['’]$")
_MAX_VALUE_WORDS = 8
_MAX_VALUE_CHARS = 60
_QUOTES = "\"'“”‘’「」『』`*_"
_PUNCT = ".,!?;:。，！？；：…"


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:['’][a-z]+)?", text.lower())


def _blocked(lead: str) -> bool:
    words = _tokens(lead)
    return any(w in _BLOCKERS or w.endswith("n't") or w.endswith("n’t") for w in words)


def _clean_value(raw: str) -> tuple[str, bool]:
    """The value without trailing asides; True when an aside says it is new ("now", "anymore")."""
    value = raw.strip()
    change = False
    previous = None
    while value != previous:
        previous = value
        value = value.strip().rstrip(_PUNCT + " ").strip(_QUOTES + " ")
        value = re.sub(r"\s*\([^()]*\)$", "", value)  # "(finally)", "(new)"
        m = _TRAIL.search(value)
        if m and m.start() > 0:
            if _CHANGE_TRAIL.search(m.group(0)):
                change = True
            value = value[: m.start()]
    return value.strip(), change


def valid_value(value: str) -> bool:
    if not value or len(value) > _MAX_VALUE_CHARS:
        return False
    words = value.lower().split()
    if not words or len(words) > _MAX_VALUE_WORDS:
        return False
    first = words[0].strip(_QUOTES)
    if len(words) == 1 and first in _VALUE_STOP:
        return False
    if first in _VALUE_BAD_FIRST or first in {"what", "which", "who", "where", "when", "how", "why"}:
        return False
    if first in {"a", "an", "the"} and len(words) == 1:
        return False
    if value[0] in "=<>!?":
        return False
    # A clause, not a value: "going to be 7F", "that it is 7F".
    return not any(w in {"is", "are", "was", "were", "will", "would", "if", "but", "because"} for w in words[1:])


def clean_slot(raw: str) -> str | None:
    words = raw.split()
    if not 1 <= len(words) <= 5:
        return None
    if any(_POSSESSIVE.search(w) for w in words):
        return None  # someone else's attribute: "my sister's office floor"
    lowered = [w.lower() for w in words]
    if any(w in _SLOT_STOPWORDS for w in lowered):
        return None
    slot = " ".join(lowered)
    if slot in _SLOT_BLOCK or lowered[-1] in _SLOT_BLOCK and len(lowered) == 1:
        return None
    return slot


def _found(slot_raw: str | None, value_raw: str, *, change: bool, adj: str | None = None) -> Clause:
    if slot_raw is None:
        return None
    if adj and adj.lower() in _ADJ_PAST:
        return Blocked("a past value (old/previous/original)")
    slot = clean_slot(slot_raw)
    if slot is None:
        return None
    value, trailed = _clean_value(value_raw)
    # "my X is V, not W" / "V rather than W": the contrast is not part of the value.
    value = re.split(r"\s+(?:not|rather\s+than|instead\s+of)\s+", value, maxsplit=1, flags=re.IGNORECASE)[0]
    value = value.strip().rstrip(_PUNCT + " ")
    if not valid_value(value):
        return None
    is_new = bool(adj and adj.lower() in {"new", "updated", "latest"})
    return Found(slot, value, change or trailed or is_new)


def _label(clause: str) -> Clause:
    m = _LABEL.match(clause)
    if not m:
        return None
    head = m["slot"].lower()
    if head in _OPENER_LABELS or head in _OPENER_PHRASES or head.split()[0] in _OPENER_LABELS:
        return None  # "Update: ..." is an opener, handled by the caller
    if _blocked(head):
        return None
    if m["sep"] == ":" and m["value"][:1].isdigit() and head[-1:].isdigit():
        return None
    return _found(m["slot"], m["value"], change=False, adj=m["adj"])


def strip_opener_label(clause: str) -> str:
    """ "Update: my X is V" -> "my X is V"; "Quick note — ..." -> "..." (only known openers)."""
    m = re.match(r"^\s*([A-Za-z][A-Za-z.\- ]{0,24}?)\s*(?::|[-–—]+)\s+(.*)$", clause)
    if m and (m.group(1).lower() in _OPENER_LABELS or m.group(1).lower() in _OPENER_PHRASES
              or all(w in _OPENER_LABELS for w in m.group(1).lower().split())):
        return m.group(2)
    return clause


def _from_my(clause: str, start: int) -> Clause:
    """The core that begins with the `my` at `start`."""
    rest = clause[start:]
    for pattern in (_MY_FROM_TO, _MY_CHANGE, _MY_NEEDS):
        m = pattern.match(rest)
        if m and clean_slot(m["slot"]) is not None:
            return _found(m["slot"], m["value"], change=True, adj=m["adj"])
    for pattern in (_MY_NOT_ANYMORE, _MY_NO_LONGER):
        m = pattern.match(rest)
        if m:
            slot = clean_slot(m["slot"])
            return Topic(slot, True) if slot else None
    m = _MY_CHANGED_ALONE.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        slot = clean_slot(m["slot"])
        return Topic(slot, True) if slot else None
    m = _MY_PAST.match(rest)
    if m and clean_slot(m["slot"]) is not None and not (m["adj"] or "").lower() in _ADJ_PAST:
        slot = clean_slot(m["slot"])
        return Topic(slot, True) if slot else None
    m = _MY_IS.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        value = m["value"]
        if re.match(r"(?:not|n't|never|no\s+longer)\b", value, re.IGNORECASE):
            return Blocked("negated")
        adv = (m["adv"] or "").lower()
        return _found(m["slot"], value, change=adv in _ADV_CHANGE, adj=m["adj"])
    m = _MY_CONTRACTED.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        value = m["value"]
        if re.match(r"(?:not|never|no\s+longer)\b", value, re.IGNORECASE):
            return Blocked("negated")
        adv = (m["adv"] or "").lower()
        return _found(m["slot"], value, change=adv in _ADV_CHANGE, adj=m["adj"])
    return None


def _negated_copula(clause: str) -> bool:
    return bool(re.search(r"\bmy\b.*\b(?:isn't|isn’t|is\s+not|wasn't|was\s+not|ain't|never\s+was|is\s+never)\b",
                          clause, re.IGNORECASE))


def parse_clause(clause: str, *, topic_open: bool) -> Clause:
    """Read one English sub-clause (no sentence punctuation inside)."""
    clause = strip_opener_label(clause.strip().strip(_QUOTES + " "))
    if not clause:
        return None
    m = _I_CHANGE.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return _found(m["slot"], m["value"], change=True, adj=m["adj"])
    m = _REPLACE.match(clause)
    if m:
        return _found(m["slot"], m["value"], change=True, adj=m["adj"])
    head, colon, tail = clause.partition(":")
    if colon and tail.strip() and not head[-1:].isdigit():
        left = parse_clause(head, topic_open=False)
        if isinstance(left, Topic):  # "my X changed: V"
            return _found(left.slot, tail, change=True)
    m = _IMPERATIVE.match(clause)
    if m:
        return _found(m["slot"], m["value"], change=True, adj=m["adj"])
    m = _USE_AS.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return _found(m["slot"], m["value"], change=False, adj=m["adj"])
    m = _ABOUT_MY.match(clause)
    if m:
        slot = clean_slot(m["slot"])
        return Topic(slot, False) if slot else None
    m = _VALUE_FIRST.match(clause)
    if m and not _blocked(m["value"]):
        result = _found(m["slot"], m["value"], change=False, adj=m["adj"])
        if isinstance(result, Found):
            return result
    for my in _MY.finditer(clause):
        result = _from_my(clause, my.start())
        if result is None:
            continue
        if _blocked(clause[: my.start()]):
            return Blocked("lead-in")
        if isinstance(result, Found) and _negated_copula(clause[my.start():]) and not result.change:
            return Blocked("negated")
        return result
    result = _label(clause)
    if result is not None:
        return result
    m = _BARE_CHANGE.match(clause)
    if m and clean_slot(m["slot"]) is not None:
        return _found(m["slot"], m["value"], change=True)
    if topic_open:
        m = _ANAPHOR.match(clause)
        if m:
            value, trailed = _clean_value(m["value"])
            value = re.split(r"\s+(?:not|rather\s+than|instead\s+of)\s+", value, maxsplit=1,
                             flags=re.IGNORECASE)[0].strip().rstrip(_PUNCT + " ")
            if valid_value(value):
                return Anaphor(value, True)
    return None
