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

What a clause reads as (``Found``, ``Topic``, ``Anaphor``, ``Blocked``) is
defined in ``gate.clauses``, shared with the Chinese grammar; which words may
be a slot and where a value ends, in ``gate.values_en``.
"""

from __future__ import annotations

import re

from ledgermem.gate import constructions_en as C
from ledgermem.gate.clauses import Anaphor, Blocked, Clause, Found, Topic
from ledgermem.gate.values_en import (EMOJI_CHARS, PEOPLE, PUNCT, QUOTES, abbreviation_stop, clean_slot, clean_value,
                                      found_clause, label_value_ok, valid_value, value_and_change)

# The clause types and the value and slot helpers are re-exported: callers read them through this module.
__all__ = ["EMOJI_CHARS", "Anaphor", "Blocked", "Clause", "Found", "Topic", "abbreviation_stop", "asked_slot", "bare_value", "value_for_my", "clean_slot",
           "clean_value", "label_value_ok", "parse_clause", "strip_opener_label", "valid_value"]


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:['’][a-z]+)?", text.lower())


def _blocked(lead: str) -> bool:
    # Only the lead-in since the last conjunction scopes over the clause: "it asked for everything and
    # yeah my X is V" is a statement; "if my X were V" is not.
    lead = re.split(r"[:;]", lead)[-1]  # "while going through papers I checked: my X is V": a colon ends the lead-in
    last = None
    for last in C.CONJUNCTION.finditer(lead):
        pass
    if last is not None:
        lead = lead[last.end():]
    if C.LEAD_PHRASES.search(lead):
        return True
    words = _tokens(C.POLITE.sub(" ", lead))
    return any(w in C.BLOCKERS or w.endswith("n't") or w.endswith("n’t") for w in words)


_FORM_FIELDS = frozenset({"previous", "old", "was", "before", "formerly", "reason", "date", "signed", "signature",
                          "comments", "comment", "status", "ref", "reference", "new", "value", "new value", "entry",
                          "subject", "re", "regarding", "field", "item"})


def _label(clause: str) -> Clause:
    m = C.LABEL.match(clause)
    if not m:
        return None
    head = m["slot"].lower()
    if head in {"subject", "re", "regarding", "field", "item", "topic"}:  # "Re: phone plan — mine is V"
        slot = clean_slot(re.sub(r"^(?:my|your)\s+", "", m["value"].strip(), flags=re.IGNORECASE))
        return Topic(slot, False) if slot else None
    if re.match(r"(?:no\s+longer|not|isn't|was|previously|previous|old|formerly|before)\b", m["value"].strip(), re.IGNORECASE):
        slot = clean_slot(m["slot"])  # "X: no longer A, it's B now"
        return Topic(slot, True, bare=True) if slot else None
    if not label_value_ok(m["slot"], m["value"].strip()):
        return None
    if head in _FORM_FIELDS:
        return None  # "previous: 3F", "reason: …": a form's own field, not the user's attribute
    if head in C.OPENER_LABELS or head in C.OPENER_PHRASES or all(w in C.OPENER_LABELS for w in head.split()):
        return None  # "Update: ..." is an opener, handled by the caller
    if m["sep"] == ":" and m["value"][:1].isdigit() and head[-1:].isdigit():
        return None
    swap = C.LABEL_SWAP.match(m["value"].strip())
    if swap:  # "my X: swapped A for B"
        return found_clause(m["slot"], swap["value"], change=True, adj=m["adj"])
    return found_clause(m["slot"], m["value"], change=False, adj=m["adj"])


def strip_opener_label(clause: str, *, stating: bool = True) -> str:
    """ "Update: my X is V" -> "my X is V"; "Quick note — ..." -> "..." (only known openers).

    An opener in the writer's own words before a colon ("Update after nights:") goes too when it carries a
    cue word and, if `stating`, what follows states a value; a bare value after it ("can u save this: V")
    is what `bare_value` wants, so it passes `stating=False`.
    """
    m = re.match(r"^\s*([A-Za-z][A-Za-z.\- ]{0,24}?)\s*(?::|[-–—]+)\s+(.*)$", clause)
    if m and (m.group(1).lower() in C.OPENER_LABELS or m.group(1).lower() in C.OPENER_PHRASES
              or all(w in C.OPENER_LABELS for w in m.group(1).lower().split())):
        return m.group(2)
    # "Update after nights: X is now V", "quick one before handover: X = V": an opener in the writer's own words,
    # when what follows the colon states a value
    m = re.match(r"^\s*([A-Za-z][A-Za-z'’\- ]{0,40}?)\s*:\s+(.*)$", clause)
    if m and len(m.group(1).split()) <= 6 and _OPENER_CUE.search(m.group(1)) and (not stating or _STATES.search(m.group(2))):
        return m.group(2)
    return clause


_OPENER_CUE = re.compile(r"\b(?:update|updated|note|notes|fyi|quick|reminder|heads|btw|records?|save|remember|write|for\s+you|"
                         r"handover|info|in\s+case|later|keep|so)\b", re.IGNORECASE)
_STATES = re.compile(r"\bmy\s|\s(?:is|=|==)\s|\snow\s|\bit(?:'s|’s|\s+is)\s", re.IGNORECASE)


def _from_my(clause: str, start: int) -> Clause:  # noqa: C901 - one table of constructions
    """The core that begins with the `my` at `start`."""
    rest = clause[start:]
    for pattern in (C.MY_FROM_TO, C.MY_CHANGE, C.MY_NEEDS, C.MY_NEEDS_NOW):
        m = pattern.match(rest)
        if m and clean_slot(m["slot"]) is not None:
            value = m["value"]
            if m.groupdict().get("old"):
                value = _split_from_to(f"{m['old']} to {value}")
            verb = m.groupdict().get("verb")
            if verb and re.search(r"\b(?:been|was|were|got|is|are)\s+(?:\w+\s+)?" + re.escape(verb), rest, re.IGNORECASE):
                value = re.sub(r"\s+by\s+(?:the|my|our|their|his|her|a|an)\s+[\w-]+(?:\s+[\w-]+)?\s*$", "", value,
                               flags=re.IGNORECASE)  # "has been changed to V by the administration": the agent is not the value
            return found_clause(m["slot"], value, change=True, adj=m["adj"], cut_from=pattern is C.MY_CHANGE)
    for pattern in (C.MY_NOT_ANYMORE, C.MY_NO_LONGER, C.MY_ISNT):
        m = pattern.match(rest)
        if m:
            slot = clean_slot(m["slot"])  # "my X is no longer A. B.": the value may come on its own next
            gone = bool(re.search(r"\b(?:no\s+longer|no\s+more|any\s*more|any\s+longer)\b", rest, re.IGNORECASE))
            return Topic(slot, True, bare=gone) if slot else None
    m = C.MY_CHANGED_ALONE.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        slot = clean_slot(m["slot"])
        return Topic(slot, True, bare=True) if slot else None
    m = C.MY_IS.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        value = m["value"]
        if re.match(r"(?:not|n't|never|no\s+longer)\b", value, re.IGNORECASE):
            return Topic(clean_slot(m["slot"]) or "", True)  # "my X is not 3F, it's 7F": only what follows is a fact
        adv = (m["adv"] or "").lower()
        if re.match(r"(?:different|new|changed|updated|not\s+the\s+same)(?:\s+(?:again|now|lol|btw))*\s*$", value,
                    re.IGNORECASE):
            return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "my X is different again: V"
        back = re.match(r"(?:back|down|up)\s+(?:to|at)\s+", value, re.IGNORECASE)
        value = value[back.end():] if back else value
        return found_clause(m["slot"], value, change=adv in C.ADV_CHANGE or bool(back), adj=m["adj"])
    m = C.MY_PAST.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        slot = clean_slot(m["slot"])
        return Topic(slot, True) if slot else None
    m = C.MY_CONTRACTED.match(rest)
    if m and clean_slot(m["slot"]) is not None and not re.search(
            r"\b(?:(?:that|this|it|which|who)(?:'s|’s)|is|was|are|were|for|about|regarding|of|with|to|on|re|concerning)\s*$",
            clause[:start], re.IGNORECASE):
        value = re.sub(r"^(?:been|become|gone\s+(?:up|down)\s+to|now\s+been|back\s+to|gone\s+to|(?:been\s+)?(?:switched|changed|"
                       r"moved|updated|shifted)\s+(?:over\s+)?to)\s+", "", m["value"], flags=re.IGNORECASE)
        if re.match(r"(?:not|never|no\s+longer)\b", value, re.IGNORECASE):
            return Blocked("negated")
        if re.search(r"\s(?:is|na|was|=|iz)\s|:\s", value, re.IGNORECASE) or m["slot"].lower().split()[-1] in PEOPLE or (
                len(m["slot"].split()) > 1 and m["slot"].lower().split()[0] in PEOPLE):
            return Blocked("someone else's")  # "my boss's phone plan is V", "as my husband's X": the boss's, the husband's
        adv = (m["adv"] or "").lower()
        return found_clause(m["slot"], value, change=adv in C.ADV_CHANGE, adj=m["adj"])
    return None


_FRAGMENT = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|quarter|half|\d{1,2})",
                       re.IGNORECASE)


def _split_from_to(span: str) -> str:
    """The new value of "from OLD to NEW" when either holds "to" ("quarter to seven"): the split whose sides
    are both whole values, not a stranded number word ("quarter" | "seven to 06:50")."""
    parts = re.split(r"\s+to\s+", span, flags=re.IGNORECASE)
    if len(parts) <= 2:
        return parts[-1]
    best, score = parts[-1], -1
    for cut in range(1, len(parts)):
        old, new = " to ".join(parts[:cut]), " to ".join(parts[cut:])
        points = sum(not _FRAGMENT.fullmatch(side.strip()) for side in (old, new))
        if points > score:  # ties keep the earlier cut: a new value is more often the longer side
            best, score = new, points
    return best


def _negated_copula(clause: str) -> bool:
    return bool(re.search(r"\bmy\b.*\b(?:isn't|isn’t|is\s+not|wasn't|was\s+not|ain't|never\s+was|is\s+never)\b",
                          clause, re.IGNORECASE))


_PAST_FRAME = re.compile(
    r"^(?:back\s+(?:in|when|then)\b.*|when\s+i\s+was\b.*|years\s+ago|in\s+the\s+past|as\s+a\s+(?:kid|child|student)|"
    r"(?:last|that)\s+(?:year|time)|at\s+my\s+old\s+\w+|in\s+(?:uni|college|school|high\s+school))$",
    re.IGNORECASE,
)


def parse_clause(clause: str, *, topic_open: bool, correcting: bool = False) -> Clause:
    """Read one English sub-clause (no sentence punctuation inside).

    ``correcting``: the turn says an earlier statement was wrong ("erratum",
    "I misspoke"), so "my X should read V" states the corrected value.
    """
    stripped = clause.strip().strip(QUOTES + " ")
    clause = strip_opener_label(stripped)
    if not clause:
        return None
    if clause != stripped:  # "note to self: phone plan is V": a note the user writes down, "my" left out
        m = C.NOTED.match(clause)
        if m and (found := found_clause(m["slot"], m["value"], change=False)) is not None:
            return found
    if correcting:
        clause = re.sub(r"\bshould\s+(?:be|read|say|have\s+been)\b", "is", clause, flags=re.IGNORECASE)
    # A request wrapped in courtesy: "I should be grateful if you would record my X as V" asks to record it.
    clause = re.sub(r"^(?:so|well|anyway|ok|okay)\s*[:,]\s*(?=\S)", "", clause, flags=re.IGNORECASE)  # "so: mine is V"
    clause = re.sub(r"^(?:fyi|btw|ps|p\.s\.|heads\s+up)\s*[,:—-]?\s+(?=\S)", "", clause, flags=re.IGNORECASE)  # "FYI V is my new X"
    clause = re.sub(r"^(?:hey|hi|hello|yo)(?:\s+(?:assistant|there|bot|buddy))?\s*[,!:—-]?\s+(?=\S)", "", clause,
                    flags=re.IGNORECASE)  # "hey assistant remember my X"
    clause = re.sub(r"(?<=\w)(?:'s|’s)\s+been\b", " has been", clause)  # "my X's been switched to V": 's before "been" is "has"
    # "my X (in case you need it) is V", "my X, for what it's worth, is V": the aside is not the value
    clause = re.sub(r"(?<=\w)\s*(?:\((?:in\s+case|if\s+you|fyi|btw|for\s+(?:reference|the\s+record|what)|just\s+so|as\s+it)[^()]{0,40}\)|"
                    r",\s*(?:for\s+what\s+it(?:'s|’s|\s+is)\s+worth|btw|by\s+the\s+way|fyi|if\s+you\s+need\s+it|in\s+case\s+you\s+need\s+it|"
                    r"just\s+so\s+you\s+know|as\s+it\s+happens|incidentally|for\s+the\s+record)\s*,)\s*(?=(?:is|was|has\s+been|'s)\b)",
                    " ", clause, flags=re.IGNORECASE)
    clause = re.sub(r"^(?:i\s+(?:would|should)\s+be\s+(?:(?:most|very|so|really)\s+)?(?:grateful|glad|obliged|thankful)|i(?:'d|’d|\s+would)\s+appreciate\s+it)"
                    r"\s+if\s+you\s+(?:could|would|can|will)\s+(?:kindly\s+|please\s+)?"
                    r"|^i(?:'d|’d|\s+would|\s+should)\s+like\s+you\s+to\s+(?:remember|note|know|keep\s+in\s+mind)(?:\s+that)?\s+"
                    r"|^(?:going\s+forward|from\s+now\s+on|henceforth)\s*,?\s+(?=my\s)"
                    r"|^i(?:'m|’m|\s+am)\s+(?:informing(?:\s+you)?|writing\s+to\s+(?:inform|tell)\s+you|letting\s+you\s+know)"
                    r"(?:\s+that)?\s+|^(?:haha+|lol|so|yeah|yep|um+|uh+)\s+(?=(?:it's|its|it\s+is|now)\s)", "", clause,
                    flags=re.IGNORECASE)
    m = re.match(r"^(?:(?:my|a|the)\s+)?(?:brand\s+)?new\s+" + C.SLOT + r"(?:\s+(?:alert|incoming))?$", clause, re.IGNORECASE)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "new phone plan!! it's V"
    # "I think my X is V", "pretty sure my X is V": the user's own assertion, hedged; not someone else's belief
    clause = re.sub(r"^(?:i\s+(?:think|believe|reckon)|(?:i(?:'m|’m|\s+am)\s+)?(?:pretty|fairly|quite)\s+(?:sure|certain))\s+(?:that\s+)?(?=\S)",
                    "", clause, flags=re.IGNORECASE)
    # "from today, my X will be V": a change that takes effect now, not a plan
    if re.match(r"^(?:from\s+today|as\s+of\s+today|starting\s+today|from\s+now\s+on|effective\s+(?:today|immediately))\b", clause,
                re.IGNORECASE):
        clause = re.sub(r"\s+will\s+be\s+", " is now ", clause, count=1, flags=re.IGNORECASE)
    for pattern, change in ((C.YOU_WANTED, False), (C.YOU_HAD, True), (C.FORGET_MY, False), (C.WANT_TO_TELL, False), (C.THEY_CHANGED, True)):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", change, bare=True)  # "you wanted my X. Yep, V", "you had my X as OLD? It's V now"
    for pattern, change in ((C.INSTEAD_OF, True), (C.WENT_FROM_FOR, True), (C.PUT_ME_DOWN, False), (C.FOR_X_I_HAVE, False)):
        m = pattern.match(clause)
        if m and (found := found_clause(m["slot"], m["value"], change=change, adj=m.groupdict().get("adj"))) is not None:
            return found
    for pattern in (C.STOPPED_USING, C.MIND_ON, C.NEW_SINCE):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "got rid of OLD as my X", "new X since Monday"
    m = re.match(r"^(?P<value>.{1,40}?)\s+it\s+is$", clause, re.IGNORECASE)
    if m and topic_open and (value := bare_value(m["value"])) is not None:
        return Anaphor(value, True)  # "V it is": the choice made
    for pattern, change in ((C.WHAT_I_USE_FOR, False), (C.HAS_REPLACED, True), (C.USE_MY_PAREN, False)):
        m = pattern.search(clause) if pattern is C.USE_MY_PAREN else pattern.match(clause)
        if m and not _blocked(clause[: m.start()]) and (found := found_clause(m["slot"], m["value"], change=change,
                                                                         adj=m["adj"])) is not None:
            return found
    m = C.NAMED_AFTER.match(clause)
    if m and clean_slot(m["slot"]):
        body = re.split(r"\s*(?:→|->|=>)\s*", m["body"])[-1]
        body = re.sub(r"^(?:that(?:'d|’d|\s+would)\s+be|it(?:'d|’d|\s+would)\s+be)\s+", "", body, flags=re.IGNORECASE)
        value = bare_value(body)
        if value is not None:
            return Found(clean_slot(m["slot"]) or "", value, "→" in m["body"] or "->" in m["body"])
    for pattern, change, back in ((C.NOT_MY_ANYMORE, True, False), (C.CHANGED_MY, True, False), (C.STOPPED_BEING, True, False),
                                  (C.I_MEAN_MY, True, True), (C.DITCHED_MY, True, False), (C.HAD_WRONG, True, False),
                                  (C.WAS_MY_UNTIL, True, False), (C.NOT_ANY_MORE_FOR, True, False),
                                  (C.THEIR_SLOTS, False, False), (C.ANSWER_ABOUT, False, False)):
        m = pattern.search(clause) if pattern in (C.THEIR_SLOTS, C.ANSWER_ABOUT) else pattern.match(clause)
        if m and clean_slot(m["slot"]) and not (pattern is C.ANSWER_ABOUT and _blocked(clause[: m.start()])):
            # the slot named now; its value stood just before ("V — my X i mean") or comes next
            return Topic(clean_slot(m["slot"]) or "", change, bare=not back and pattern is not C.THEIR_SLOTS, back=back)
    m = C.USE_MY.match(clause)
    if m and clean_slot(m["slot"]) and (m["adj"] or "").lower() not in ("old", "previous", "former", "original", "first"):
        return Topic(clean_slot(m["slot"]) or "", (m["adj"] or "").lower() in ("new", "updated", "latest"), bare=True)
    m = C.UPDATE_MY.search(clause)
    if m and clean_slot(m["slot"]) and not re.search(r"\b(?:will|going\s+to|gonna|plan|planning|need\s+to|should)\b", clause[: m.start()],
                                                      re.IGNORECASE):
        return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "could you update my X? It is V now."
    m = C.GOT_MY_AS.search(clause)
    if m and not _blocked(clause[: m.start()]) and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = C.ARROW_FOR_MY.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=True, adj=m["adj"])) is not None:
        return found  # "A → B for my X"
    for pattern in (C.WHAT_MY_IS, C.PAREN_MY, C.V_COLON_MY, C.OWNED_FOR_ME, C.NEW_IS):
        m = pattern.match(clause)
        if m and pattern is C.V_COLON_MY and re.match(r"(?:write|note|save|remember|put|keep|log|record|stopped|quick|for|please|pls|"
                                                     r"here|ok|okay|so|update|can\s+u|can\s+you|could\s+you)\b", m["value"].strip(), re.IGNORECASE):
            if clean_slot(m["slot"]):
                return Topic(clean_slot(m["slot"]) or "", False, bare=True)  # "Write this down for me: my X, V"
            continue
        if m and pattern is C.V_COLON_MY and (re.fullmatch(r"[A-Z][a-z]+", m["value"].strip())  # "Melanie: my kids …": a speaker
                                             or m["value"].strip().lower() in C.OPENER_LABELS
                                             or m["value"].strip().lower() in C.OPENER_PHRASES):
            continue
        if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m.groupdict().get("adj"))) is not None:
            return found
    if _PAST_FRAME.match(clause) and not re.search(r"\b(?:changed|switched|moved|updated|shifted)\b.*\b(?:to|->)\b", clause, re.IGNORECASE):
        return Blocked("a past frame")  # "back in uni, my X was V": what follows is the past; "back in March I changed it to V" is not
    m = C.I_CHANGE.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"], cut_from=not m["old"])
    m = C.REPLACE.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    for pattern in (C.FOR_MY_I, C.REPLACE_MY):
        m = pattern.search(clause)
        if m and not _blocked(clause[: m.start()]):
            result = found_clause(m["slot"], m["value"], change=pattern is C.REPLACE_MY, adj=m["adj"])
            if result is not None:
                return result
    m = C.OUT_IN.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    m = C.OUT_OLD.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True)
    m = C.REMEMBER_BEING.search(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True)
    m = C.V_IF_YOU_NEED.match(clause)
    if m and not _blocked(m["value"]) and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = C.IT_WANTS_MY.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True)
    for pattern in (C.IF_YOU_NEED, C.GAVE_WRONG, C.NEVER_GAVE):
        m = pattern.search(clause)
        if m and clean_slot(m["slot"]):  # "V, if you need my X" or "if you need my X, it's V"
            return Topic(clean_slot(m["slot"]) or "", pattern is C.GAVE_WRONG, bare=True, back=pattern is C.IF_YOU_NEED)
    m = C.OLD_WAS.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True)  # "The old X was A." (the new one is B)
    m = C.ITS_FOR_MY.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found  # "It's V for my X", "since March it's been V for my X"
    for pattern in (C.OF_ME_CHANGED, C.NEW_ALONE):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", True, bare=True)
    for pattern, change in ((C.RECORD_AS, True), (C.USE_V_AS, True), (C.THE_SLOT_I, False), (C.WHAT_I_USE, False)):
        m = pattern.match(clause)
        if m:
            result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
            if result is not None:
                return result
    for pattern in (C.I_MEANT, C.NEW_DROPPED):
        m = pattern.search(clause) if pattern is C.I_MEANT else pattern.match(clause)
        if m and not _blocked(clause[: m.start()]):
            result = found_clause(m["slot"], m["value"], change=True, adj=m.groupdict().get("adj"))
            if result is not None:
                return result
    m = C.GOT_SORTED.search(clause)
    if m and clean_slot(m["slot"]) and not _blocked(clause[: m.start()]):
        return Topic(clean_slot(m["slot"]) or "", True)
    m = C.OLD_BACK_TOPIC.match(clause) or C.YOU_HAVE_AS.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # what stood before was the old value
    m = C.BACK_TOPIC.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, back=True)
    m = C.OUT_IS_IN.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=True, adj=m["adj"])) is not None:
        return found
    head, colon, tail = clause.partition(":")
    if colon and tail.strip() and not head[-1:].isdigit():
        left = parse_clause(head, topic_open=False)
        swap = C.LABEL_SWAP.match(tail.strip())
        if isinstance(left, Topic) and swap:  # "my X: swapped A for B"
            return found_clause(left.slot, swap["value"], change=True)
        if isinstance(left, Topic):  # "my X changed: V", "on the subject of my X: mine is V"
            tail = re.sub(r"^\s*(?:no\s+longer|not)\s+.{1,40}?\s+but\s+", "", tail, flags=re.IGNORECASE)  # "my X: no longer A but B"
            tail = re.sub(r"^\s*it\s+(?:has\s+)?(?:changed|got\s+changed)\s*[,;]?\s*", "", tail, flags=re.IGNORECASE)
            value = bare_value(tail)
            if value is not None:
                return Found(left.slot, value, left.change)
    m = C.IMPERATIVE.match(clause) or C.BARE_PAST.match(clause)
    if m and re.match(r"(?:(?:just|finally|so|and|ok|okay)\s+)*put\b", clause, re.IGNORECASE) and re.match(
            r"(?:the|my|your|a|an)\s", m["value"].strip(), re.IGNORECASE) and not re.search(
            r"\b(?:my|the)\s+(?:\w+\s+)?" + re.escape(m["slot"]), clause, re.IGNORECASE):
        m = None  # "put V as the X": V is no slot, and the value is no slot either
    if m and (found := found_clause(m["slot"], m["value"], change=True, adj=m["adj"])) is not None:
        return found
    m = re.search(r"\b(?:change|update|set|switch|correct|amend|edit|adjust|modify)\s+my\s+" + C.ADJ + C.SLOT + C.FROM + C.TO
                  + r"(?P<value>.+)$", clause, re.IGNORECASE)
    if m and m.start() > 0 and not _blocked(clause[: m.start()]):
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    m = C.SWAPPED_OUT.search(clause)
    if m and not _blocked(clause[: m.start()]):
        result = found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
        if result is not None:
            return result
    m = C.GOT_MY_AT.search(clause)
    if m and not _blocked(clause[: m.start()]):
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if result is not None:
            return result
    m = C.WITH_BEING.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = C.STILL_FOR_MY.match(clause)
    if m and not re.match(r"[a-z]+ing\b", m["value"]):  # "still waiting for my refund"
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if result is not None:
            return result
    m = C.V_FOR_MY.search(clause)
    if m and not _blocked(clause[: m.start()]):
        change = not re.match(r"(?:go|going|went\s+with|gone\s+(?:with|for)|had|got|have|use|using|chose|picked|settled|opted|stick|stuck|landed|"
                              r"ended)", m["verb"], re.IGNORECASE)
        result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
        if result is not None:
            return result
    m = C.USE_AS.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
    m = re.search(r"\b(?:asked|asking|ask|wanted\s+to\s+know|q|question)\s+(?:me\s+)?(?:about|abt|for|on|re)\s+my\s+" + C.ADJ
                  + C.SLOT
                  + r"(?:\s+(?:earlier|before|yesterday|last\s+time|the\s+other\s+day))?$", clause, re.IGNORECASE)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True)
    m = C.ABOUT_MY.match(clause)
    if m:
        slot = clean_slot(m["slot"])
        return Topic(slot, False, bare=True) if slot else None
    m = C.VALUE_FIRST.match(clause)
    if m and not _blocked(m["value"]):
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if isinstance(result, Found):
            return result
    for my in C.MY.finditer(clause):
        result = _from_my(clause, my.start())
        if result is None:
            continue
        if _blocked(clause[: my.start()]):
            return Blocked("lead-in")
        if re.search(r"\b(?:of|for)\s*$", clause[: my.start()], re.IGNORECASE):
            return Blocked("someone else's: the X of my colleague")
        if isinstance(result, Found) and _negated_copula(clause[my.start():]) and not result.change:
            return Blocked("negated")
        return result
    m = C.OWNED_ALONE.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True, back=True)  # "my office floor" (it is 7F) / "It's 7F, my office floor"
    for pattern, change in ((C.TERSE, True),):
        m = pattern.match(clause)
        if m and not _blocked(m["value"]):
            result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
            if result is not None:
                return result
    result = _label(clause)
    if result is not None:
        return result
    m = C.BARE_CHANGE.match(clause)
    if m and clean_slot(m["slot"]) is not None:
        return found_clause(m["slot"], m["value"], change=True)
    if topic_open:
        m = C.ANAPHOR.match(clause)
        if m:
            value, trailed = value_and_change(m["value"])
            value = re.split(r"\s+(?:not|rather\s+than|instead\s+of)\s+", value, maxsplit=1,
                             flags=re.IGNORECASE)[0].strip().rstrip(PUNCT + " ")
            if valid_value(value):
                return Anaphor(value, True)
        m = re.match(r"^(?P<value>[^\s].{0,40}?)\s+is(?:\s+now)?$", clause, re.IGNORECASE)  # "A isn't my X any more. B is."
        if m and valid_value(clean_value(m["value"])):
            return Anaphor(clean_value(m["value"]), True)
    return None


def value_for_my(clause: str) -> Clause:
    """A clause that is only a value and the slot it is for ("V for my X, please note"), read where nothing
    before it in the sentence could be the start of the value or the verb it belongs to."""
    m = C.V_FOR_MY_ALONE.match(clause.strip())
    value = bare_value(m["value"]) if m else None
    if not m or value is None or C.NOT_A_VALUE_FOR.match(m["value"]) or C.NOT_A_VALUE_FOR.match(value) or (
            set(m["slot"].lower().split()) & PEOPLE):
        return None
    if "," in m["value"] or re.search(r"\b[a-z]{3,}ed\b", m["value"]):
        return None  # "decided against V for my X": a verb in it, so no value alone
    return found_clause(m["slot"], m["value"], change=False, adj=m["adj"])


def asked_slot(sentence: str) -> Topic | None:
    """A question that is only a slot ("my locker?", "oh and my badge number?"): the next sentence may answer it."""
    m = C.ASKED_SLOT.match(sentence.strip().rstrip("?").strip())
    slot = clean_slot(m["slot"]) if m else None
    return Topic(slot, False, bare=True) if slot else None


def bare_value(clause: str) -> str | None:
    """A clause that is only a value ("C12", "it's C12"), as the answer to a slot just named."""
    clause = strip_opener_label(clause, stating=False)  # "can u save this: V. that's my X"
    if re.match(r"^\s*(?:def(?:initely)?|defo|deffo|absolutely|certainly|surely|totally)\s+not\b", clause, re.IGNORECASE):
        return None  # "def not V": a denial
    clause = re.sub(r"^\*+\s*(?=\S)", "", clause.strip())  # "*V": a chat correction of the line before
    clause = re.sub(r"^(?:and\s+)?[a-z][a-z ]{0,30}:\s+(?=\S)", "", clause)  # "and this time for good: V"
    clause = re.sub(r"^(?:(?:so|yeah|yep|yes|ok|okay|well|um+|uh+|oh|and|like|easy|simple|honestly|correct|right|exactly|"
                    r"indeed|sure)\s*[,—–:-]?\s+)+", "",
                    clause.strip(), flags=re.IGNORECASE)
    clause = re.sub(r"^(?:swapped|switched|changed|traded|replaced)\s+.{1,40}?\s+(?:out\s+)?(?:for|to|with)\s+(?=\S)", "", clause,
                    flags=re.IGNORECASE)  # "swapped OLD out for V — that's my X now"
    clause = re.sub(r"\s+(?:got|was|has\s+been|just\s+got)\s+(?:confirmed|approved|issued|assigned|activated|through)\b.*$", "", clause,
                    flags=re.IGNORECASE)  # "V got confirmed this morning, it's my new X"
    clause = re.sub(r"^(?:use|enter|put|put\s+down|go\s+with|take)\s+(?=\S)", "", clause, flags=re.IGNORECASE)  # "Use V, that's my X"
    # "For X, I have V": what the user has, said after the slot
    clause = re.sub(r"^i(?:'ve|’ve|\s+have)?\s+(?:got|have|use|am\s+using|'m\s+using|’m\s+using)\s+(?!(?:to|no|not|it|that|this|one)\b)(?=\S)",
                    "", clause, flags=re.IGNORECASE)
    value, _ = value_and_change(re.sub(r"^(?:it(?:'s|’s|\s+is)|its|that(?:'s|’s|\s+is)|mine(?:'s|’s|\s+is))\s+", "",
                                   clause, flags=re.IGNORECASE))
    if not valid_value(value) or len(value.split()) > 6 or re.match(r"^[A-Z][\w.]*:\s", value):
        return None  # "Melanie: Yes" is a speaker's line
    if re.match(r"(?:(?:def(?:initely)?|defo|absolutely|certainly|surely|totally|deffo)\s+not|not|no|never|maybe|probably|might|may|"
                 r"will|would|could|should|if|when)\b", value, re.IGNORECASE):
        return None
    if re.search(r"\b(?:i|i'm|you|we|they|he|she|is|are|was|were|do|does|did|have|has|it|someone|somebody|didn't|don't|"
                 r"wasn't|isn't)\b", value, re.IGNORECASE):
        return None
    return value
