"""The slot and the value of an English clause: which words may name a slot, where a value ends. Pure.

``clean_slot`` refuses a slot that is someone else's ("my sister's X") or no
noun phrase; ``clean_value`` cuts a value at a connective ("V, so …") or a
trailing aside ("V now", "V (finally)"), and ``value_and_change`` says whether
that aside said the value is new. ``found_clause`` assembles a fact from a
slot and a value read by ``gate.grammar_en``.
"""

from __future__ import annotations

import re

from ledgermem.gate.clauses import Blocked, Clause, Found

__all__ = ["DURATION", "EMOJI_CHARS", "ON_THE_FORM", "PEOPLE", "PUNCT", "QUOTES", "clean_slot", "clean_value",
           "found_clause", "label_value_ok", "valid_value", "value_and_change"]

_ADJ_PAST = frozenset({"old", "previous", "former", "original", "first"})
# Adjuncts that follow a value without being part of it: how long it has held, and where it is to be used.
DURATION = (r"for\s+(?:years|ages|months|weeks|decades|donkey's\s+years|a\s+(?:while|long\s+time|good\s+while|few\s+(?:years|months|weeks))|"
             r"(?:the\s+)?(?:past|last)\s+(?:few\s+|couple\s+of\s+|\w+\s+)?(?:years|months|weeks|decades)|the\s+longest\s+time|so\s+long|"
             r"as\s+long\s+as\s+i\s+can\s+remember)(?:\s+now)?")
ON_THE_FORM = (r"on\s+the\s+(?:\w+\s+)?(?:form|application|booking|reservation|order|website|site|account|profile)|"
                r"for\s+the\s+(?:\w+\s+)?(?:form|booking|reservation|order|application|renewal|checkout)")

_SLOT_STOPWORDS = frozenset(
    """
    my the a an it its this that these those he she they we you i me him her them us your our his
    their what which who whom whose where when how why if unless whether before after until then
    because and but or so not no never also just yesterday today tomorrow is was are were be been
    has have had do does did will would can could should may might must to from of in on at as by
    for with about now currently still always here there am very really lol haha pls thx btw fyi rn tho
    okay ok isnt aint wasnt arent dont doesnt isn't isn’t wasn't aren't don't doesn't can't won't didn't
    changed updated moved switched needs needed updating uses wears drives owns prefers shows says lists displays
    i've i'm i'd i'll we've we're you've you're they've they're it's that's there's i’ve i’m i’d i’ll ive im
    hasn't haven't hadn't shouldn't couldn't wouldn't hasn’t haven’t finally recently eventually already
    being yeah yep yup uh um erm mine
    """.split()
)
_SLOT_BLOCK = frozenset(
    """
    point question guess understanding feeling sense thought thoughts opinion concern worry problem
    issue idea bet hope impression bad pleasure fault turn plan plans view take answer day life
    mind head heart gut advice suggestion favourite favorite mistake apologies apology god goodness
    usual regular normal typical default main primary preferred daily weekly monthly
    """.split()
)
_VALUE_STOP = frozenset(
    """
    not never no so very really too quite pretty kind sort going getting being also just still
    probably maybe perhaps definitely like that this it same different unknown unclear gone fine ok
    okay good great bad a an the what which who whom whose where when how why something anything
    nothing somewhere anywhere changing changed updated mine yours his hers theirs ours one
    ugh wow yay damn smh lol haha omg argh sigh awesome again yikes oops whoops hmm meh nice cool easy simple
    thanks thx cheers bye since then unchanged none n/a na tbd tba same
    sure yes yeah yep nope well right honestly obviously basically literally
    """.split()
)
_VALUE_BAD_FIRST = frozenset({"not", "never", "no", "n't", "probably", "maybe", "perhaps", "possibly", "too", "so", "very",
                              "likely", "either", "neither", "whatever", "unknown", "tbd", "still", "going", "gonna",
                              "supposed", "expected", "due", "meant", "hopefully", "soon"})
_TRAIL = re.compile(
    r"(?:\s+|\s*[-–—]\s*)(?:now|anymore|any\s+more|today|these\s+days|nowadays|currently|at\s+the\s+moment|"
    r"right\s+now|as\s+of\s+(?:today|now|this\s+\w+|\w+day)|for\s+now|btw|by\s+the\s+way|fyi|"
    r"just\s+so\s+you\s+know|again|instead|though|lol|haha+|thanks|thank\s+you|please|ok|okay|got\s+that\??|"
    r"from\s+now\s+on|going\s+forward|since\s+\w+day|since\s+(?:last|this)\s+\w+|starting\s+(?:today|now)|"
    r"effective\s+(?:today|immediately|now)|officially|finally|actually|for\s+good|by\s+the\s+way|"
    r"if\s+(?:that|it)\s+matters|in\s+case\s+(?:that|it)\s+matters|just\s+fyi|for\s+reference|"
    r"for\s+the\s+record|as\s+well|too|yesterday|last\s+\w+|this\s+(?:morning|week|month|year|afternoon)|"
    r"earlier|recently|lately|a\s+while\s+ago|in\s+your\s+notes|in\s+my\s+profile|on\s+file|"
    r"for\s+me|itself|that(?:'s|’s|\s+is)\s+(?:it|all)|obviously|of\s+course|duh|lah|leh|lor|liao|already|la|ah|o|sha|abeg|innit|mate|period|full\s+stop|yeah|yh|ya|eh|"
    r"this\s+arvo|no\s+dramas|cheers|over\s+the\s+(?:weekend|holidays|summer|break)|"
    r"from\s+this\s+(?:week|month|year)|from\s+today|w\.?e\.?f\.?(?:\s+\S+){0,2}|"
    r"fr|fr\s+fr|ngl|tbh|iykyk|no\s+cap|for\s+real|lowkey|💀|"
    + DURATION + r"|forever|once\s+more|once\s+again|yet\s+again|all\s+along|from\s+day\s+one|same\s+as\s+(?:always|ever|before)|"
    r"back\s+in\s+(?:january|february|march|april|may|june|july|august|september|october|november|december|the\s+day|\d{4}|spring|summer|autumn|fall|winter)(?:\s+\d{4})?|"
    + ON_THE_FORM + r"|everywhere|"
    r"with\s+effect\s+from(?:\s+\S+){1,2}|from\s+(?:\w+day|tomorrow|next\s+(?:week|month|year|\w+day))|this\s+time|since\s+then|pretty\s+much\s+always|:\)|:-\)|!+)$",
    re.IGNORECASE,
)
_CHANGE_TRAIL = re.compile(r"\b(?:now|anymore|any\s+more|from\s+now\s+on|going\s+forward|starting\s+(?:today|now)|"
                           r"effective\s+(?:today|immediately|now)|instead)\b", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$|s['’]$")
_MAX_VALUE_WORDS = 8
_MAX_VALUE_CHARS = 60
QUOTES = "\"'“”‘’「」『』`*"
PUNCT = ".,!?;:。，！？；：…"


EMOJI_CHARS = "\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d"  # pictographs, dingbats, joiners
_SYMBOLS = re.compile(rf"[\s{EMOJI_CHARS}]+$")
_PAREN_ASIDE = re.compile(
    r"\s*\((?:finally|new|updated|again|yay|lol|haha|fyi|btw|i\s+think|if\s+that\s+helps|just\s+fyi|as\s+of\s+[^()]*|"
    r"previously\s+[^()]*|was\s+[^()]*|formerly\s+[^()]*|not\s+[^()]*|before\s+[^()]*|since\s+[^()]*|mine|my\s+own|"
    r"effective\s+[^()]*|from\s+[^()]*|changed\s+[^()]*|:\)|:-\)|(?:[a-z]+-)?(?:checked|confirmed|verified|corrected|fixed|"
    r"updated|sorted|promise|honest|really|seriously|for\s+real|no\s+joke|true))\)$",
    re.IGNORECASE,
)


_CONNECTIVE = re.compile(
    r"\s+(?:so|but|because|cause|cuz|bc|b/c|coz|cos|since|which|who|whereas|while|though|tho|although|unless|if|when|anyway|anyways|"
    r"then|also|at\s+your\s+(?:earliest\s+)?convenience|in\s+your\s+(?:notes|records|system|file)|for\s+your\s+"
    r"(?:records|reference|information)|in\s+the\s+system|on\s+file|in\s+my\s+(?:profile|record|file)|idk|ngl|fwiw|"
    r"by\s+(?:the\s+(?:way|admin|office|company|system|bank|hr|team|landlord)|my\s+\w+|our\s+\w+|hr|admin|it)\b|many\s+thanks|cheers|regards|as\s+per|per\s+the|ty|tysm|thx|thank\s+u|atm|"
    r"asap|pls|plz|(?-i:k|kk|xx|x)\b|sorry|apologies|oops|innit|mate|lah|leh|lor|liao|full\s+stop|"
    r"and\s+(?:i|i'm|i've|it|it's|that|this|my|please|so|then|now|we|you)|please|pls|thanks|thank\s+you|just\s+so|"
    r"in\s+case|as\s+of|starting|effective|from\s+now|going\s+forward|for\s+now|btw|by\s+the\s+way|fyi|lol|"
    r"haha+|hehe|lmao|tbh|rn|right\s+now|at\s+the\s+moment|these\s+days|nowadays|now\s+that|after|before|"
    r"instead\s+of|rather\s+than|not|like\s+you\s+(?:said|asked|suggested)|as\s+you\s+(?:said|asked|suggested)|"
    r"used\s+to\s+be|iykyk|the\s+whole\s+time|ever\s+since|all\s+this\s+time|fingers\s+crossed|(?:can|could|would|will)\s+(?:you|u|ya)|"
    r"a\s+(?:few|couple\s+of)\s+(?:days|weeks|months|years)\s+ago|in\s+the\s+(?:spring|summer|autumn|fall|winter))\b.*$",
    re.IGNORECASE,
)


#: "LS6 1AN only", "Dr Rao only na": an emphatic "only" after a code or a name (not "SIM only", "cash only")
_EMPHATIC_ONLY = re.compile(r"(?<=[\w.])\s+only(?:\s+(?:na|lah|lor|yaar|ji))?\s*[.!]*\s*$", re.IGNORECASE)


_DOTTED_END = re.compile(r"(?:^|\s)(?:[A-Za-z]\.)+[A-Za-z]$")


def abbreviation_stop(stripped: str, original: str) -> str:
    """``stripped`` (``original`` cut short at its end) with the full stop of a dotted abbreviation it ends in put
    back: "4:50 a.m." and "the U.S." keep theirs; "6:30." does not."""
    if _DOTTED_END.search(stripped) and original.lstrip().startswith(stripped.lstrip() + "."):
        return stripped + "."
    return stripped


def value_and_change(raw: str) -> tuple[str, bool]:
    """The value without trailing asides; True when an aside says it is new ("now", "anymore")."""
    value = raw.strip()
    value = re.split(r"\s[—–]\s+(?=[a-z])", value, maxsplit=1)[0]  # "V — just saving it here": a remark after the dash
    if value.count("(") > value.count(")"):
        value = value[: value.rfind("(")]
    cut = _CONNECTIVE.search(value)
    if cut and cut.start() > 0:
        change = bool(_CHANGE_TRAIL.search(cut.group(0)) or re.search(r"\b(?:starting|effective|from\s+now|going\s+forward"
                                                                       r"|now\s+that)\b", cut.group(0), re.IGNORECASE))
        value, trailed = value_and_change(value[: cut.start()])
        return value, change or trailed
    emphatic = _EMPHATIC_ONLY.search(value)
    if emphatic is not None:
        before = value[: emphatic.start()].split()[-1:]
        if before and re.search(r"\d|^[A-Z][a-z]", before[0]):  # "1AN only", "Dr Rao only"; not "SIM only", "cash only"
            value = value[: emphatic.start()]
    change = False
    previous = None
    while value != previous:
        previous = value
        value = value.strip().rstrip(PUNCT + " ").strip(QUOTES + " ")
        value = _PAREN_ASIDE.sub("", value)  # "(finally)", "(was 3F)"; "remote (Lisbon)" keeps its part
        value = re.sub(r"\s*\((?:[^()\s]+\s+){2,}[^()]*\)$", "", value)  # "(as per the form I sent)"
        value = _SYMBOLS.sub("", value)
        m = _TRAIL.search(value)
        if m and m.start() > 0:
            if _CHANGE_TRAIL.search(m.group(0)):
                change = True
            value = value[: m.start()]
    return abbreviation_stop(value.strip(), raw), change


def valid_value(value: str) -> bool:
    if not value or len(value) > _MAX_VALUE_CHARS:
        return False
    words = value.lower().split()
    if not words or len(words) > _MAX_VALUE_WORDS:
        return False
    first = words[0].strip(QUOTES)
    if len(words) == 1 and first in _VALUE_STOP:
        return False
    if first in _VALUE_BAD_FIRST or first in {"what", "which", "who", "where", "when", "how", "why"}:
        return False
    kin = first == "my" and len(words) >= 2 and words[1] in PEOPLE  # "my brother Tom", an emergency contact
    if not kin and first in {"i", "i'm", "i’m", "i've", "i'd", "i'll", "we", "we're", "you", "you're", "he", "she", "they",
                 "it's", "my", "our", "your", "his", "her", "their", "im", "ive"}:
        return False  # a clause ("I adopted a cat"), not a value
    if first in {"a", "an", "the"} and len(words) == 1:
        return False
    if value[0] in "=<>!?":
        return False
    if re.fullmatch(r"(?:(?:a|some|good|bad|big|great)\s+)?(?:(?:bit|piece)\s+of\s+)?(?:news|update|change)(?:\s+(?:here|for\s+you))?", value, re.IGNORECASE):
        return False  # "re my X, bit of news": news of a change, the value comes later
    # A clause, not a value: "going to be 7F", "that it is 7F"; "5 May" is a date, "it may be" is not.
    written = value.split()[1:]
    return not any(w in {"is", "are", "was", "were", "will", "would", "if", "but", "because", "has", "have", "had",
                         "been", "being", "might", "may", "could", "should", "changed", "updated", "isn't", "isnt",
                         "i", "you", "my"} and not (w == "may" and cased == "May") and not (w == "my" and before == "of")
               for before, w, cased in zip(words, words[1:], written))  # "15% of my salary" is a value


def clean_value(raw: str) -> str:
    """``raw`` without trailing asides, connectives and symbols."""
    return value_and_change(raw)[0]


def _part_of_slot(word: str, rest: list[str]) -> bool:
    """A possessive that is part of a compound noun ("driver's licence", "mother's maiden name", "master's degree"),
    not an owner ("my sister's X", "my bf's X", "Tom's X")."""
    base = re.sub(r"['’]s$|s?['’]$", "", word).lower()
    return bool(rest) and re.match(_COMPOUND_POSSESSIVES, " ".join([base, *rest]).lower()) is not None


_COMPOUND_POSSESSIVES = (r"(?:driver|learner)\s+(?:licen[cs]e|permit)|mother\s+maiden\s+name|(?:bachelor|master)\s+degree|"
                         r"owner\s+manual")


#: heads of "X of Y" phrases that are a way of speaking, not an attribute ("for the avoidance of doubt", "most of")
_OF_PHRASES = frozenset("""
    avoidance sake purpose purposes benefit end rest course lack matter way kind sort lot lots most some all any none
    part top bottom middle front back because instead out outside inside ahead regardless spite case favour favor
    behalf terms light
    """.split())


def clean_slot(raw: str) -> str | None:
    words = raw.split()
    if not 1 <= len(words) <= 5:
        return None
    if any(_POSSESSIVE.search(w) and not _part_of_slot(w, words[i + 1:]) for i, w in enumerate(words)):
        return None  # someone else's attribute: "my sister's office floor", "Tom's office floor"
    lowered = [w.lower() for w in words]
    # "date of birth", "place of work", "side of the bed": "of" (and "the" after it) joins two nouns of one slot
    joined = {i for i, w in enumerate(lowered) if 0 < i < len(lowered) - 1 and lowered[0] not in _OF_PHRASES and (
        w in ("of", "for", "at", "on") or (w == "the" and lowered[i - 1] in ("of", "for", "at", "on")))}
    if any(w in _SLOT_STOPWORDS for i, w in enumerate(lowered) if i not in joined):
        return None
    slot = " ".join(lowered)
    if slot in _SLOT_BLOCK or lowered[-1] in _SLOT_BLOCK and len(lowered) == 1:
        return None
    return slot


PEOPLE = frozenset(
    """
    friend friends sister brother mom mum mother dad father wife husband partner boss colleague coworker co-worker
    roommate flatmate housemate neighbor neighbour son daughter kid kids child children cousin aunt uncle niece
    nephew boyfriend girlfriend fiance fiancee grandma grandpa grandmother grandfather parents family bestie buddy
    mate pal teammate classmate landlord tenant dog cat pet
    """.split()
)


def found_clause(slot_raw: str | None, value_raw: str, *, change: bool, adj: str | None = None,
           cut_from: bool = False) -> Clause:
    if slot_raw is None:
        return None
    words = slot_raw.lower().split()
    named = len(words) > 1 and slot_raw.split()[1][:1].isupper()  # "my friend Rachel", not "my dog walker"
    if words and words[0] in PEOPLE and (named or (change and len(words) == 1)):
        return Blocked("someone else's")  # "my friend Rachel moved to Chicago", "my sister moved to Paris"
    if adj and adj.lower() in _ADJ_PAST:
        return Blocked("a past value (old/previous/original)")
    slot = clean_slot(slot_raw)
    if slot is None:
        return None
    value, trailed = value_and_change(value_raw)
    value = re.sub(r"^(?:literally|honestly|lowkey|basically)\s+(?=\S)", "", value, flags=re.IGNORECASE)
    value = re.sub(r"^[,;:\s]*(?:(?:it|that)(?:'s|’s|\s+is)|its|thats)\s+(?=\S)", "", value, flags=re.IGNORECASE)  # "re my X: it's V"
    value = re.sub(r"^(?:on|at|in|located\s+(?:at|in|on)|based\s+(?:at|in)|now\s+on)\s+(?=\S)", "", value,
                   flags=re.IGNORECASE)  # "my office is on 3F"
    if cut_from:
        value = re.split(r"\s+from\s+", value, maxsplit=1, flags=re.IGNORECASE)[0]  # "shifted to V from O"
    # "my X is V, not W" / "V rather than W": the contrast is not part of the value.
    value = re.split(r"\s+(?:not|rather\s+than|instead\s+of)\s+", value, maxsplit=1, flags=re.IGNORECASE)[0]
    value = abbreviation_stop(value.strip().rstrip(PUNCT + " "), value)
    if not valid_value(value):
        return None
    is_new = bool(adj and adj.lower() in {"new", "updated", "latest"})
    return Found(slot, value, change or trailed or is_new)


_FIELD_WORDS = frozenset(
    """
    name email e-mail phone mobile tel address department dept title company employer role team location city
    country birthday dob age gender nationality website site handle username user id status subject date time
    notes signature position level grade floor desk office manager extension ext postcode zip plan budget shift
    """.split()
)
_SENTENCE_START = frozenset(
    """
    hey hi hello oh ah wow yes yeah yep no nope so well thanks thank ok okay haha lol really honestly actually
    sure great cool nice awesome omg please sorry um uh hmm
    """.split()
)


def label_value_ok(slot: str, value: str) -> bool:
    """A label's value is a value, not a line of dialogue ("Caroline: Hey Mel, I adopted a cat").

    A speaker's name before a colon looks like a label; what follows it then reads as a sentence: it opens
    with a greeting or an interjection, or it is several words after a single capitalised name that is no
    field name.
    """
    words = value.split()
    if not words:
        return False
    if words[0].lower().strip(",.!?") in _SENTENCE_START:
        return False
    single_name = len(slot.split()) == 1 and slot[:1].isupper() and not slot.isupper()
    return not (single_name and slot.lower() not in _FIELD_WORDS and len(words) > 1)
