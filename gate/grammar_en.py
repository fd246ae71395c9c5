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

from ledgermem.gate.clauses import Anaphor, Blocked, Clause, Found, Topic
from ledgermem.gate.values_en import (DURATION, EMOJI_CHARS, ON_THE_FORM, PEOPLE, PUNCT, QUOTES, clean_slot, clean_value,
                                      found_clause, label_value_ok, valid_value, value_and_change)

# The clause types and the value and slot helpers are re-exported: callers read them through this module.
__all__ = ["EMOJI_CHARS", "Anaphor", "Blocked", "Clause", "Found", "Topic", "asked_slot", "bare_value", "value_for_my", "clean_slot",
           "clean_value", "label_value_ok", "parse_clause", "strip_opener_label", "valid_value"]


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
    wouldn't when whenever once until than unsure whose guess guessing isnt aint wasnt
    doesnt dont didnt cant cannot wouldnt shouldnt
    pretend pretending assume assuming bet dreamt dreamed dream swears swore swear insists insisted argues argued
    reckons writes wrote claiming
    """.split()
)
_OPENER_LABELS = frozenset(
    """
    update note fyi btw correction reminder ps p.s. heads-up edit info important psa
    quick small tiny also remember notice news change changes correction update
    """.split()
)
_OPENER_PHRASES = ("heads up", "quick note", "quick update", "small update", "just so you know",
                   "for the record", "for your records", "side note", "one more thing", "new info", "note to self",
                   "remember this", "memo", "reminder to self", "fyi all", "important", "decision made",
                   "final answer", "done deal", "settled", "just so you have it", "for your information",
                   "for your files", "for your records", "for my records", "for my notes", "for my reference")

_W = r"[^\W_][\w\-]*(?:\([\w]{1,3}\)[\w\-]*)?"
_XW = r"[^\W_][\w\-'’]*(?:\([\w]{1,3}\)[\w\-]*)?"  # a slot word ("401(k)") that may carry a possessive, checked later
_SLOT = rf"(?P<slot>{_XW}(?:\s+{_XW}){{0,4}}?)"
_ADJ = r"(?:(?P<adj>new|current|present|updated|actual|real|official|own|latest(?!\s+(?:[\w-]+\s+)?(?:time|date|hour|day|deadline)\b)|old|previous|former|original|first)\s+)?"
_ADV = (r"(?:(?P<adv>now|currently|still|actually|really|officially|finally|basically|presently|in\s+fact|"
        r"at\s+present|right\s+now|these\s+days|nowadays|technically|just|like)\s+)?")
_ADV_CHANGE = frozenset({"now", "currently", "finally", "presently", "at present", "right now",
                         "these days", "nowadays", "actually"})
_COPULA = (r"(?P<cop>(?<=\S)\s*==?|(?<=[^\s\d])\s*:|\s+na(?=\s)|\s+now(?=\s)|"
           r"\s+(?:(?:currently|now|still|usually|normally|actually)\s+)?(?:is\s+become|has\s+became|become|becomes|is|iz|si|'s|’s|"
           r"it\s+is|it's|it’s|sits\s+at|stands\s+at|comes\s+to|reads|has\s+been|have\s+been|remains|stays|is\s+set\s+to|is\s+listed\s+as|reads|"
           r"stands\s+at|comes\s+to|sits\s+at|is\s+at|'s\s+at|equals|happens\s+to\s+be|has\s+become|became|"
           r"shows\s+as|is\s+showing\s+as|reads\s+as|displays\s+as|is\s+shown\s+as|is\s+down\s+as|is\s+recorded\s+as|is\s+registered\s+as|is\s+saved\s+as|is\s+on\s+file\s+as|"
           r"ended\s+up\s+(?:being|as)|is\s+back\s+to|'s\s+back\s+to|is\s+now\s+back\s+to|was\s+\w+(?:\s+\w+){0,3}\s+and\s+is|"
           r"is\s+in\s+fact|is\s+actually)\b|\s*(?:→|->|=>))")
_CHANGE_VERB = (
    r"(?:(?:has|have|had)\s+(?:been\s+|just\s+|now\s+|finally\s+|recently\s+)*|(?:was|is|got|were|just|don|done|"
    r"recently|finally|officially|now)\s+(?:been\s+|just\s+)?)*"
    r"(?P<verb>changed|updated|switched|moved|shifted|swapped|bumped|reset|upgraded|downgraded|"
    r"raised|lowered|increased|decreased|reduced|transferred|relocated|reassigned|converted|"
    r"changed\s+over|switched\s+over|went\s+up|went\s+down|gone\s+up|gone\s+down|jumped|dropped|"
    r"fell|fallen|became|become|modified|adjusted|revised|corrected|amended|reverted|returned|went\s+back|"
    r"changed\s+back|switched\s+back|moved\s+back|bumped\s+up|bumped\s+down|renamed|reassigned|replaced|"
    r"migrated|ported|rebooked|rescheduled|pushed|postponed|brought\s+forward|increased|cut|went|shifted|change|"
    r"switch|update|move|shift|chgd|chngd|chg'd|changd)"
)
_FROM = r"(?:\s+from\s+(?P<old>.+?))?"
_TO = r"\s+(?:over\s+|back\s+|up\s+|down\s+)?(?:to|into|as)\s+"

_MY = re.compile(r"\bmy\s+", re.IGNORECASE)
_I_CHANGE = re.compile(
    r"(?:^had\s+to|\b(?:i|we|they|someone|somebody|hr|it|the\s+company|the\s+office|my\s+(?:company|employer|office|landlord|bank)))"
    r"(?:'ve|’ve|\s+have|\s+had|\s+just|\s+finally|\s+recently|\s+officially|\s+now|\s+did|\s+ended\s+up|\s+went\s+ahead\s+and|"
    r"\s+(?:just\s+|finally\s+|only\s+)?(?:went|gone)\s+and|\s+had\s+to|\s+have\s+to)*\s+"
    r"(?P<verb>changed|updated|switched|moved|set|swapped|swap|change|switch|move|bumped|reset|upgraded|downgraded|raised|shifted|"
    r"lowered|increased|decreased|transferred|relocated|changed\s+over|switched\s+over|adjusted|"
    r"corrected|modified|amended|switching|changing|moving|updating)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+(?:over|back|across))?" + _FROM + _TO
    + r"(?P<value>.+)$",
    re.IGNORECASE,
)
_BARE_PAST = re.compile(
    r"^(?:(?:just|finally|also|so|and|oh|ok|okay|lol|then|recently|officially)\s+)*"
    r"(?:changed|updated|switched|swapped|moved|bumped|upgraded|downgraded|reset|raised|lowered|set|put|got|adjusted|"
    r"chnged|chngd|chaged|changd|updtd|upd8d|"
    r"increased|decreased|cut|reduced|dropped|lifted|reverted|renamed|changed\s+over|switched\s+over|"
    r"(?:finished|done|just\s+finished|completed|ended\s+up|went\s+ahead\s+and\s+|end\s+up)\s*(?:switching|changing|moving|updating|switched|changed|moved|updated))\s+(?:over\s+)?"
    r"(?:(?:my|the)\s+)?" + _ADJ + _SLOT + r"(?:\s+(?:over|across|back))?" + _FROM + _TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
_SWAPPED_OUT = re.compile(
    r"\b(?:swapped|traded|replaced|switched|exchanged|dropped|ditched|dumped|traded\s+in|binned|chucked)\s+(?P<old>.+?)\s+"
    r"(?:out\s+)?(?:for|with)\s+(?P<value>.+?)\s+(?:as|for)\s+"
    r"my\s+" + _ADJ + _SLOT + r"$",
    re.IGNORECASE,
)
_GOT_MY_AT = re.compile(
    r"\b(?:i(?:'ve|’ve|\s+have|'m|\s+am)?\s+)?(?:(?:just|now|currently|usually)\s+)?(?:got|have|set|keep|keeping|put|"
    r"running|run)\s+my\s+" + _ADJ + _SLOT + r"\s+(?:at|to|on)\s+(?P<value>.+)$",
    re.IGNORECASE,
)
_WITH_BEING = re.compile(r"^(?:seeing\s+as|seeing\s+that|given\s+that|now\s+that|with)\s+my\s+" + _ADJ + _SLOT
                         + r"\s+(?:being|is|'s|’s)\s+(?:now\s+)?(?P<value>.+)$", re.IGNORECASE)  # "With my X being V now, rebook…"
#: What may follow a slot at the end of a clause without being part of it: a time, an aside to the reader, a
#: filler ("V is my X now, if that matters", "V, that's my X, for your records", "V for my X, please note").
_SLOT_TAIL = (r"(?:\s*[,—–-]?\s*(?:now|these\s+days|nowadays|currently|at\s+the\s+moment|from\s+here\s+on|from\s+now\s+on|"
              r"going\s+forward|for\s+good|lol|haha+|btw|fyi|rn|ok|okay|tho|by\s+the\s+way|again|once\s+again|once\s+more|"
              r"still|as\s+always|as\s+ever|that\s+is|i\s+mean|if\s+(?:that|it)\s+(?:matters|helps)|in\s+case\s+(?:it|that)\s+"
              r"(?:matters|helps)|for\s+(?:your\s+)?(?:notes|records|reference|info)|for\s+the\s+record|just\s+so\s+you\s+"
              r"(?:know|have\s+it)|(?:please|kindly|do)\s+(?:make\s+a\s+)?note(?:\s+of\s+(?:it|that))?|please\s+save\s+(?:it|that)|"
              r"only|mate|cheers|" + DURATION + r"|since\s+\S.*))*")
_STILL_FOR_MY = re.compile(  # "Still V for my X, same as always"
    r"^(?:(?:so|and|yeah|yep|ok|okay)\s+)*(?:still|always|again)\s+(?P<value>[^\s,].{0,40}?)\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"$",
    re.IGNORECASE,
)
_V_FOR_MY = re.compile(
    r"(?:^(?:(?:please|pls|kindly|can\s+you|could\s+you|would\s+you)\s+)*(?:ended\s+up\s+|finally\s+|just\s+)?|\b(?:i|we)(?:'ve|’ve|\s+have|\s+had|'m|’m|\s+am)?\s+(?:ended\s+up\s+)?"
    r"(?:(?:just|now|finally|recently|usually|always|normally|please|been|"
    r"generally|typically|mostly|currently|still)\s+)*)"
    r"(?P<verb>went\s+back\s+to|switched(?:\s+over|\s+back)?\s+to|changed\s+(?:over\s+|back\s+)?to|moved\s+(?:over\s+|back\s+)?to|"
    r"reverted\s+to|returned\s+to|gone\s+back\s+to|go\s+back\s+to|go\s+with|going\s+with|went\s+with|gone\s+with|gone\s+for|(?<=['’]ve\s)had|(?<=\shave\s)had|"
    r"got|have|use|using|chose|chosen|picked|settled\s+on|"
    r"opted\s+for|stick\s+with|sticking\s+with|stuck\s+with|landed\s+on|ended\s+up\s+with|upgraded\s+to|downgraded\s+to|"
    r"bumped\s+(?:it\s+)?(?:up\s+|down\s+)?to|treat|consider|count|regard|take|decided\s+on|went\s+for|saved|stored|"
    r"picked|keep|kept|save|store|record|log|remember|note|register|put)\s+(?P<value>.+?)\s+(?:down\s+|set\s+|saved\s+|registered\s+|listed\s+)?"
    r"(?:for|as|on)\s+my\s+" + _ADJ + _SLOT
    + r"(?:\s+(?:now|these\s+days|lately|instead|too|as\s+well|lol|haha+|btw|fyi|rn|after\s+all|in\s+the\s+end|eventually|everywhere|"
    + ON_THE_FORM + r"|"
    r"for\s+now|pretty\s+much\s+always|mostly|last\s+\w+|this\s+\w+|\w+\s+ago|yesterday|today|for\s+a\s+while(?:\s+now)?|"
    r"since\s+(?!(?:last|next|this)\b).+|because\s+.+|in\s+(?:your|the)\s+(?:notes|records?|file|system|profile)|"
    r"from\s+now\s+on|going\s+forward|please|yeah|yep|ok|okay|thanks|thx|ta|,?\s*(?:please|kindly|do)\s+note|,?\s*for\s+reference))*"
    + r"(?:\s+(?:instead\s+of|rather\s+than|not)\s+.+)?$",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:(?:please|pls|plz|kindly|can\s+(?:you|u|ya)|could\s+(?:you|u)|would\s+(?:you|u)|will\s+(?:you|u))\s+)*"
    r"(?:change|update|set|switch|swap|make|put|correct|amend|edit|adjust|modify|bump)\s+my\s+" + _ADJ
    + _SLOT + r"(?:\s+(?:in|on)\s+(?:your|the)\s+(?:notes|records?|file|system|profile))?" + _FROM + _TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
_MY_CHANGE = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+" + _CHANGE_VERB + _FROM + _TO + r"(?P<value>.+)$",
                        re.IGNORECASE)
_MY_FROM_TO = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+(?:went|changed|moved|switched|jumped|shifted|"
                         r"has\s+gone|has\s+changed)\s+(?:from\s+)?(?!(?:(?:over|back|up|down|across)\s*)?(?:to\b|->|→))(?P<old>.+?)\s*(?:\s+to\s+|->|→)\s*(?P<value>.+)$", re.IGNORECASE)
_MY_NO_LONGER = re.compile(
    r"my\s+" + _ADJ + _SLOT + r"\s+(?:(?:is|'s|’s)\s+)?(?:no\s+longer|no\s+more|not\s+any\s*more|not\s+(?:still\s+)?|n't\s+)(?P<old>.+?)"
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
                               r"today|yesterday|this\s+week|last\s+week|lately|smh|lol|ugh|btw|ffs|omg|haha+|finally|"
                               r"once\s+more|as\s+well|too|yet\s+again|once\s+again|o|oh|sha|lah|lor|ugh|again\s+lol))*$", re.IGNORECASE)
_MY_IS = re.compile(r"my\s+" + _ADJ + _SLOT + _COPULA + r"\s*" + _ADV + r"(?P<value>.+)$",
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
_MY_NEEDS_NOW = re.compile(  # "my X needs to be V now": the value it has to have from now on
    r"my\s+" + _ADJ + _SLOT + r"\s+(?:needs|has)\s+to\s+(?:be|read|say)\s+(?!\w+ed\b)(?P<value>.+?)\s+now$", re.IGNORECASE)
_RECORD_AS = re.compile(
    r"^(?:(?:when|once|before|after|if)\s+(?:you|u)\s+[^,]{1,50}?,?\s+)?"  # "when you do the registration put my X as V"
    r"(?:(?:please|kindly|pls|could\s+you|can\s+you|would\s+you|just|then)\s+)*(?:record|note|log|register|save|put\s+down|put|"
    r"mark|list|enter|file|set|keep|store|write\s+down|update|change|have)\s+my\s+" + _ADJ + _SLOT
    + r"\s+(?:as|to\s+be|to\s+read)\s+(?P<value>.+)$",
    re.IGNORECASE,
)
_USE_V_AS = re.compile(
    r"^(?:(?:please|kindly|pls|going\s+forward|from\s+now\s+on|henceforth)\s*,?\s+)*(?:use|put\s+down|put|take|record|note|register|list|"
    r"enter|save|keep|file|log|treat|consider|regard|count)\s+(?P<value>.+?)\s+(?:down\s+)?(?:as|for)\s+my\s+" + _ADJ + _SLOT
    + r"(?:\s+(?:rather\s+than|instead\s+of|not)\s+.+)?(?:\s+(?:lol|haha+|pls|please|thx|thanks|btw|fyi|rn|now|ok|okay|" + ON_THE_FORM + r"))*$",
    re.IGNORECASE,
)
_THE_SLOT_I = re.compile(
    r"^(?:the|my)\s+" + _ADJ + _SLOT + r"\s+(?:(?:that\s+)?i(?:'m|’m|\s+am|'ve|’ve|\s+have)?\s+"
    r"(?:have|use|using|got|go\s+by|gave\s+you|registered|put\s+down|set|chose|chosen|picked|selected|entered|"
    r"signed\s+up\s+for|went\s+with|settled\s+on|stick\s+to|stick\s+with|rely\s+on|go\s+for|prefer|'m\s+on|am\s+on)"
    r"|on\s+file|of\s+(?:me|mine)|for\s+me|(?:on|in|for)\s+my\s+(?:account|profile|file|record|records|card))"
    r"\s+(?:now\s+)?(?:is|'s|’s|=|:)\s+(?:now\s+)?(?P<value>.+)$",
    re.IGNORECASE,
)
_WHAT_I_USE = re.compile(
    r"^(?P<value>.{1,40}?)\s+is\s+what\s+i(?:'m|’m|\s+am|'ve|’ve|\s+have)?\s+(?:use|using|have|go\s+with|put|put\s+down|"
    r"gave|set|chosen|chose|picked|registered|got|entered|selected|settled\s+on|went\s+with|going\s+with|gone\s+with|"
    r"gone\s+for|ended\s+up\s+with|landed\s+on|stuck\s+with|opted\s+for|stick\s+to|stick\s+with|rely\s+on|go\s+for)\s+"
    r"(?:as|for)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+(?:now|pretty\s+much\s+always|mostly|always))?$",
    re.IGNORECASE,
)
_WHAT_I_USE_FOR = re.compile(r"^(?P<value>.{1,40}?)(?:'s|’s|\s+is)\s+what\s+i(?:'ve|\s+have)?\s+(?:use|used|have|got|go\s+with|picked|"
                             r"chose|went\s+with|put|keep)\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_HAS_REPLACED = re.compile(r"^(?P<value>.{1,40}?)\s+(?:has\s+|have\s+|just\s+)*(?:replaced|taken\s+over\s+from|superseded)\s+(?P<old>.{1,40}?)"
                           r"\s+as\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_STOPPED_USING = re.compile(r"^(?:i(?:'m|’m|\s+am)\s+(?:not|no\s+longer)\s+using|i\s+(?:don't|don’t|do\s+not|no\s+longer)\s+(?:have|use)|i(?:'ve|\s+have)?\s+(?:stopped\s+using|got\s+rid\s+of|dropped)|"
                            r"got\s+rid\s+of|stopped\s+using)\s+(?:(?!\sfor\s).){1,40}?\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT
                            + r"(?:\s+(?:any\s*more|any\s+longer))?$", re.IGNORECASE)
_NEW_SINCE = re.compile(r"^(?:(?:i(?:'ve|’ve|\s+have)?\s+)?got\s+(?:a\s+)?|i\s+have\s+(?:a\s+)?|(?:the\s+)?)new\s+" + _SLOT
                        + r"(?:\s+(?:since|as\s+of|from)\s+(?:the\s+)?\w+(?:\s+\w+)?)?(?:\s+now)?$", re.IGNORECASE)
_FORGET_MY = re.compile(r"^(?:(?:bro|so|ok|okay|man|ugh|honestly)\s+)*(?:i\s+)?(?:keep\s+forgetting|always\s+forget|never\s+remember|can(?:'t|’t|not)\s+ever\s+remember)"
                        r"\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_WANT_TO_TELL = re.compile(r"^i\s+(?:want|wanted|would\s+like|'d\s+like|’d\s+like)\s+to\s+(?:say|tell|give|share|inform)\s+(?:to\s+)?(?:you\s+)?"
                           r"(?:about\s+)?my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_THEY_CHANGED = re.compile(r"^(?:they|someone|somebody|the\s+\w+|hr|it)\s+(?:switched|changed|moved|updated|reset|swapped)\s+my\s+" + _ADJ + _SLOT
                           + r"(?:\s+on\s+me|\s+again|\s+without\s+asking)?$", re.IGNORECASE)
_YOU_WANTED = re.compile(r"^(?:(?:you|u)\s+(?:wanted|asked\s+(?:for|about)|needed|were\s+asking\s+(?:for|about)|requested)|"
                         r"(?:(?:can|could|will|would)\s+(?:you|u)\s+)?(?:please\s+)?(?:remember|note|save|keep|store|record))\s+my\s+" + _ADJ
                         + _SLOT + r"$", re.IGNORECASE)
_YOU_HAD = re.compile(r"^(?:you|u)\s+(?:had|have|got|wrote|put|listed|noted)\s+(?:down\s+)?my\s+" + _ADJ + _SLOT
                      + r"\s+(?:as|at|down\s+as)\s+.{1,40}$", re.IGNORECASE)
_WENT_FROM_FOR = re.compile(r"^(?:i|we)\s+(?:went|switched|changed|moved)\s+(?:over\s+)?from\s+(?P<old>.{1,40}?)\s+to\s+(?P<value>.{1,40}?)\s+"
                            r"(?:for|as|with)\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_INSTEAD_OF = re.compile(r"^(?:it(?:'s|’s|\s+is)\s+)?(?P<value>.{1,40}?)\s*(?:\s(?:instead\s+of|rather\s+than)|,\s*not)\s+(?P<old>.{1,40}?)\s*,?\s+"
                         r"(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+(?:now|these\s+days|nowadays))?$", re.IGNORECASE)
_PUT_ME_DOWN = re.compile(r"^(?:please\s+)?put\s+me\s+down\s+(?:as|for)\s+(?P<value>.{1,40}?)\s+(?:for|as)\s+(?:my\s+|the\s+)?" + _ADJ
                          + _SLOT + r"(?:\s+please)?$", re.IGNORECASE)
_FOR_X_I_HAVE = re.compile(r"^for\s+(?:the\s+)?" + _SLOT + r",?\s+i(?:'ve|’ve|\s+have)?\s+(?:got|have|use|am\s+using|'m\s+using)\s+"
                           r"(?P<value>.+)$", re.IGNORECASE)
_MIND_ON = re.compile(r"^(?:i\s+)?changed\s+my\s+mind\s+(?:on|about)\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_USE_MY_PAREN = re.compile(r"\b(?:use|keep|note|remember|save|record|put|enter|add|log)\s+my\s+" + _ADJ + _SLOT
                           + r"\s*\((?P<value>[^()]{1,40})\)", re.IGNORECASE)
_BACK_TOPIC = re.compile(
    r"^(?:and\s+|so\s+)?(?:(?:that(?:'s|’s|\s+is|s)|this\s+is|it(?:'s|’s|\s+is)|which\s+is|those\s+are|that\s+would\s+be|"
    r"thas)(?:\s+still)?|(?:you(?:'ve|’ve|\s+have)?|u)\s+(?:got|have)(?=\s+my\s+\S+(?:\s+\S+){0,4}\s+(?:right|correct)$))"
    r"\s+(?:now\s+)?(?:my\s+(?:new\s+|current\s+)?|the\s+(?:new|current)\s+|the\s+(?=\S+(?:\s+\S+){0,3}\s+now$)|"
    r"the\s+(?=\S+(?:\s+\S+){0,4}\s+i(?:'ve|’ve|\s+have)?\s+(?:got|use|have)$))" + _SLOT
    + r"(?:\s+i(?:'ve|’ve|\s+have)?\s+(?:got|use|have))?(?:\s+(?:right|correct))?" + _SLOT_TAIL + r"$",
    re.IGNORECASE,
)
_V_IF_YOU_NEED = re.compile(r"^(?P<value>[^\s,].{0,40}?)\s+(?:if|in\s+case|should)\s+(?:you|anyone|someone)\s+(?:ever\s+)?(?:need|needs|want|wants|ask\s+for|asks\s+for)\s+"
                            r"my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)  # "V if you need my X"
_IT_WANTS_MY = re.compile(r"^(?:it|they|the\s+(?:form|site|page|app|website|system|hotel|airline|bank|clinic)|this\s+(?:form|page|site))\s+"
                          r"(?:wants|want|needs|need|asks\s+for|ask\s+for|is\s+asking\s+for|are\s+asking\s+for|requires|require)\s+my\s+"
                          + _ADJ + _SLOT + r"(?:\s+for\s+the\s+\w+)?$", re.IGNORECASE)  # "it wants my X - that's V"
_IF_YOU_NEED = re.compile(
    r"^(?:if|in\s+case|whenever|should)\s+(?:you|anyone|someone|somebody|they|people|something|anything|a\s+form|the\s+form|"
    r"an\s+app|a\s+website)\s+(?:ever\s+)?(?:need|needs|want|wants|"
    r"wanna|ask|asks|asked|have\s+to\s+know|are\s+asked\s+for)\s+(?:for\s+|about\s+|to\s+know\s+)?"
    r"my\s+" + _ADJ + _SLOT + r"(?:\s+for\s+(?:anything|something|any\s+reason|a\s+form))?$", re.IGNORECASE)
_NEVER_GAVE = re.compile(r"\b(?:i\s+)?(?:never|didn't|didn’t|did\s+not|haven't|haven’t|have\s+not|forgot\s+to)\s+(?:ever\s+)?"
                         r"(?:gave|give|given|told|tell|sent|send|mentioned|mention|shared|share)\s+(?:you\s+)?my\s+" + _ADJ + _SLOT
                         + r"(?:\s+(?:before|yet|earlier|at\s+all))?$", re.IGNORECASE)
_OLD_WAS = re.compile(r"^(?:the|my)\s+(?:old|previous|former)\s+" + _SLOT + r"\s+(?:was|used\s+to\s+be)\s+(?P<old>.{1,40})$",
                      re.IGNORECASE)
_ITS_FOR_MY = re.compile(
    r"^(?:(?:since|as\s+of|from)\s+[^,]{1,30}?,?\s+it(?:'s|’s|\s+is|\s+has\s+been|'s\s+been|’s\s+been)\s+(?:now\s+|still\s+|always\s+)?|"
    r"it(?:'s|’s|\s+is|\s+has\s+been|'s\s+been|’s\s+been)\s+(?:now|still)\s+)"
    r"(?P<value>[^\s,].{0,40}?)\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+(?:now|these\s+days|nowadays))?$", re.IGNORECASE)
_GAVE_WRONG = re.compile(r"\b(?:i\s+)?(?:gave|told|sent)\s+you\s+the\s+wrong\s+" + _SLOT + r"(?:\s+(?:before|earlier|last\s+time))?$",
                         re.IGNORECASE)
# Constructions that name the slot in one clause and give its value in the next, or give both in an order
# of their own: "my X i mean" (after the value), "V is what my X is", "ditched my old X; the new one is V",
# "I had my X wrong", "V was my X until …", "not V any more for my X", "everyone was comparing their X".
_I_MEAN_MY = re.compile(r"^(?:i\s+mean\s+)?my\s+" + _ADJ + _SLOT + r"\s+(?:i\s+mean|i\s+meant|that\s+is|rather)$", re.IGNORECASE)
_WHAT_MY_IS = re.compile(r"^(?P<value>.{1,40}?)\s*(?:[:,—–-]\s*)?(?:that(?:'s|’s|\s+is)|is)\s+what\s+my\s+" + _ADJ + _SLOT
                         + r"\s+(?:is|'s)(?:\s+(?:now|these\s+days|currently))?$", re.IGNORECASE)
_DITCHED_MY = re.compile(r"^(?:i(?:'ve|\s+have)?\s+)?(?:just\s+|finally\s+)?(?:ditched|dumped|dropped|binned|scrapped|"
                         r"got\s+rid\s+of|retired|replaced)\s+my\s+(?:old\s+)?" + _SLOT + r"$", re.IGNORECASE)
_HAD_WRONG = re.compile(r"^i\s+(?:had|got|have\s+had|'ve\s+had)\s+my\s+" + _ADJ + _SLOT + r"\s+wrong\b.*$", re.IGNORECASE)
_WAS_MY_UNTIL = re.compile(r"^(?P<old>.{1,40}?)\s+was\s+my\s+" + _SLOT + r"\s+(?:up\s+to|until|till|up\s+until)\s+.+$",
                           re.IGNORECASE)
_NOT_ANY_MORE_FOR = re.compile(r"^(?:it's\s+)?not\s+(?P<old>.{1,40}?)\s+(?:any\s*more|any\s+longer)\s+(?:for|as)\s+my\s+" + _SLOT
                               + r"$", re.IGNORECASE)
_THEIR_SLOTS = re.compile(r"\b(?:comparing|discussing|talking\s+about|sharing|swapping|listing|asked\s+for|asking\s+for|"
                          r"asked\s+about|asking\s+about)\s+(?:their|our|everyone's|everyone’s|everybody's|people's)\s+" + _SLOT
                          + r"(?:\s+(?:today|earlier|yesterday|at\s+lunch|again|in\s+the\s+\w+(?:\s+\w+)?))?$", re.IGNORECASE)
_ANSWER_ABOUT = re.compile(r"\b(?:q|question|qn|query)\s+(?:abt|about|re|on)\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)
_V_COLON_MY = re.compile(r"^(?P<value>[^:—–=]{1,40}?)\s*(?::|=|\s[—–-]+)\s*(?:that(?:'s|’s|\s+is)\s+|it(?:'s|’s|\s+is)\s+)?my\s+"
                         + _ADJ + _SLOT + r"$", re.IGNORECASE)  # "B14: my desk number"
_NEW_IS = re.compile(r"^(?:(?:ok|okay|k|so|and|oh|anyway|anyways|also|btw|fyi|plus)\s+)*(?:the\s+)?(?:brand\s+)?new\s+(?!(?:one|ones|value|entry)\b)" + _SLOT
                     + r"\s+(?:is|=|:|'s)\s+(?P<value>.+)$",
                     re.IGNORECASE)  # "okay new X is V"
_GOT_MY_AS = re.compile(r"\b(?:i\s+)?(?:got|had|have)\s+my\s+" + _ADJ + _SLOT + r"\s+(?:set\s+up|set|registered|listed|changed|"
                        r"switched|put\s+down)\s+(?:as|to)\s+(?P<value>.+?)(?:\s+(?:when|after|before|since)\b.*)?$", re.IGNORECASE)
_USE_MY = re.compile(  # "use my X. It's V", "fill in the form with my new X, V": the value comes next
    r"^(?:(?:please|pls|kindly|just|then|and|so)\s+)*(?:use|enter|put\s+down|put\s+in|go\s+with|take|"
    r"fill\s+(?:in|out)\s+(?:the\s+|this\s+|that\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:form\s+)?with)\s+my\s+" + _ADJ + _SLOT + r"$",
    re.IGNORECASE)
#: a clause that is only a value and the slot it is for: "V for my X", "as of Monday, V for my X"
_V_FOR_MY_ALONE = re.compile(r"^(?:(?:as\s+of|from|since|starting|effective)\s+\w+(?:\s+\w+)?\s*,\s*)?"
                             r"(?P<value>[^\s,].{0,40}?)\s+for\s+my\s+" + _ADJ + _SLOT
                             + r"(?:\s+(?:now|from\s+now\s+on|going\s+forward|then))?$", re.IGNORECASE)
#: what stands before "for my X" and is no value: a verb, a thanks, a judgement ("thanks for my refund", "great for my back")
_NOT_A_VALUE_FOR = re.compile(
    r"(?:\w+ing|\w+ed|a|an|the|some|my|your|his|her|their|our|its|thanks|thank|thx|ta|good|great|perfect|fine|bad|ok|okay|enough|ready|same|better|worse|best|nothing|"
    r"something|anything|everything|all|none|this|that|these|those|time|room|space|money|help|sorry|happy|wait|look|ask|pay|"
    r"apply|call|search|went|go|come|came|here|there|one|much|more|less|too|so|just|only|also|even|still|what|which|who|"
    r"please|pls|kindly|find|see|check|get|bring|buy|need|want|got|have|keep|make|take|give|send|use|try|let|book|order|read|"
    r"write|leave|points?|things?|stuff|notes?|details?|info)\b",
    re.IGNORECASE)
_UPDATE_MY = re.compile(r"\b(?:update|change|correct|amend|fix)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+(?:please|pls|for\s+me))?$", re.IGNORECASE)
_OWNED_FOR_ME = re.compile(r"^(?:(?:ok|okay|k|so|sure|yes|yeah|yep|and)\s+)*(?:the\s+)?" + _SLOT + r"\s+(?:is|'s|’s)\s+"
                           r"(?P<value>.+?)\s+for\s+me$", re.IGNORECASE)  # "k so X is V for me"
_NOT_MY_ANYMORE = re.compile(r"^(?P<old>.{1,40}?)\s+(?:isn't|isn’t|is\s+not|is\s+no\s+longer|stopped\s+being)\s+my\s+" + _ADJ
                             + _SLOT + r"(?:\s+(?:any\s*more|any\s+longer))?$", re.IGNORECASE)
_CHANGED_MY = re.compile(r"^(?:(?:also|so|and|just|ok|okay|last\s+\w+|yesterday|today|this\s+\w+|please|pls|kindly)\s+)*(?:i(?:'ve|\s+have)?\s+)?(?:had\s+to\s+|have\s+to\s+|just\s+|finally\s+)?"
                         r"(?:change|changed|update|updated|switch|switched|swap|swapped|replace|replaced|reset|went\s+back\s+to|mistyped|misspelled|"
                         r"typed\s+wrong|got\s+wrong|had\s+wrong)(?:\s+over)?\s+my\s+"
                         r"(?:old\s+)?" + _SLOT + r"(?:\s+(?:today|yesterday|again|this\s+week|last\s+week|recently))?$", re.IGNORECASE)
_STOPPED_BEING = re.compile(r"^my\s+" + _ADJ + _SLOT + r"\s+stopped\s+being\s+(?P<old>.+)$", re.IGNORECASE)
_NAMED_AFTER = re.compile(r"^(?P<body>.+?)\s*\((?:that(?:'s|’s|\s+is)\s+)?my\s+" + _ADJ + _SLOT + r"\)$", re.IGNORECASE)
_ARROW_FOR_MY = re.compile(r"^(?P<old>.+?)\s*(?:→|->)\s*(?P<value>.+?)\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"$", re.IGNORECASE)  # "that'd be V (my X)"
_PAREN_MY = re.compile(r"^my\s+" + _ADJ + _SLOT + r"\s*\((?P<value>[^()]{1,40})\)\s+(?:is\s+the\s+one|is\s+still|stays|"
                       r"hasn't\s+changed|remains|is\s+current|is\s+right)\b.*$", re.IGNORECASE)
_LABEL_SWAP = re.compile(r"^(?:swapped|switched|changed|traded|moved)\s+(?:from\s+)?(?P<old>.+?)\s+(?:for|to|with)\s+(?P<value>.+)$",
                         re.IGNORECASE)
_OUT_IN = re.compile(r"^out\s+with\s+(?P<old>.+?),?\s+in\s+with\s+(?P<value>.+?)\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT + r"$",
                     re.IGNORECASE)
_OUT_OLD = re.compile(r"^out\s+with\s+the\s+old\s+" + _SLOT + r",?\s+in\s+with\s+(?:the\s+new(?:\s+one)?\s*[:,]?\s*)?"
                      r"(?P<value>.+)$", re.IGNORECASE)
_REMEMBER_BEING = re.compile(r"\b(?:remember|recall)\s+(?:when\s+)?(?:i\s+(?:said|told\s+you|mentioned)\s+(?:that\s+)?)?my\s+" + _ADJ + _SLOT
                             + r"\s+(?:being|was|used\s+to\s+be)\s+(?P<old>.+)$", re.IGNORECASE)
_TERSE = re.compile(r"^(?:my\s+)?" + _ADJ + _SLOT + r"\s+(?:now|is\s+now)\s*(?:==?|:)?\s+(?P<value>.+)$", re.IGNORECASE)
_NOTED = re.compile(r"^(?:the\s+)?" + _SLOT + r"\s+(?:is|'s|’s|==?)\s+(?:now\s+)?(?P<value>.+)$", re.IGNORECASE)
_OWNED_ALONE = re.compile(r"^(?:(?:so|and|oh|ok|okay|well|also|yeah|now|then)\s+)*my\s+" + _ADJ + _SLOT
                         + r"(?:\s+(?:lol|haha+|btw|though|tho))*$", re.IGNORECASE)
_OF_ME_CHANGED = re.compile(
    r"^the\s+" + _ADJ + _SLOT + r"\s+of\s+(?:me|mine)\s+(?:has\s+been|have\s+been|was|got|is|has)\s+"
    r"(?:changed|updated|modified|switched|moved)$", re.IGNORECASE)
_MY_ISNT = re.compile(r"my\s+" + _ADJ + _SLOT + r"\s+(?:isn't|isn’t|is\s+not|isnt|wasn't|was\s+not|ain't)\s+(?P<old>.+)$",
                      re.IGNORECASE)
_NEW_ALONE = re.compile(r"^(?:my\s+)?new\s+" + _SLOT + r"\s+(?:just\s+dropped|alert|incoming|unlocked|update|day|time|who\s+dis)$",
                        re.IGNORECASE)
_FOR_MY_I = re.compile(
    r"^(?:for|as\s+for|with|re|regarding)\s+my\s+" + _ADJ + _SLOT + r",?\s+(?:i|i'm|i've|i\s+have|we)\s+(?:(?:usually|always|now|just)\s+)?"
    r"(?:go\s+with|use|have|got|picked|chose|went\s+with|settled\s+on|stick\s+with|opted\s+for|put|put\s+down)\s+"
    r"(?P<value>.+)$", re.IGNORECASE)
_REPLACE_MY = re.compile(
    r"\b(?:replace|swap|substitute|overwrite)\s+my\s+" + _ADJ + _SLOT + r"(?:\s+currently\s+on\s+file|\s+on\s+file|"
    r"\s+in\s+your\s+(?:records|notes|system))?\s+with\s+(?P<value>.+)$", re.IGNORECASE)
_ASKED_SLOT = re.compile(r"^(?:oh,?\s+|and\s+|also\s+|ah,?\s+|right,?\s+|as\s+for\s+|re\s+|about\s+|what\s+about\s+|"
                         r"(?:you|u)\s+(?:wanted|asked\s+(?:for|about)|needed|need|want)\s+|(?:(?:can|could|will|would)\s+(?:you|u)\s+)?(?:remember|recall|note|save)\s+)*"
                         r"(?:my\s+|your\s+|the\s+)?" + _ADJ
                         + _SLOT + r"$", re.IGNORECASE)
_GOT_SORTED = re.compile(
    r"\b(?:got|had|have|'ve|’ve|finally\s+got|just\s+got)\s+my\s+" + _ADJ + _SLOT + r"\s+(?:sorted(?:\s+out)?|fixed|"
    r"changed|updated|switched|moved|redone|reassigned|replaced|renewed|reset|upgraded|downgraded)(?:\s+\w+)?$",
    re.IGNORECASE,
)
_FILLER = r"(?:\s+(?:lol|haha+|pls|please|thx|thanks|btw|fyi|rn|now|ok|okay|tho|lmao|xd|:\)|😅|🙏|😎))*"
_I_MEANT = re.compile(
    r"\bi\s+(?:meant|mean|ment)\s+(?P<value>.+?)(?:\s*,?\s+not\s+(?P<old>.+?))?\s+(?:for|as)\s+my\s+" + _ADJ + _SLOT
    + _FILLER + r"$",
    re.IGNORECASE,
)
_NEW_DROPPED = re.compile(
    r"^(?:(?:ok|okay|so|and)\s+)?(?:my\s+)?new\s+" + _SLOT + r"\s+(?:just\s+dropped|alert|incoming|unlocked|update|"
    r"who\s+dis)\s*[:!\-–—]*\s+"
    r"(?P<value>.+)$",
    re.IGNORECASE,
)
_ABOUT_MY = re.compile(
    r"^(?:on\s+the\s+subject\s+of|speaking\s+of|talking\s+of|talking\s+about|speaking\s+about|when\s+it\s+comes\s+to|in\s+terms\s+of|with\s+regard\s+to|"
    r"with\s+respect\s+to|what\s+about|now\s+for|and\s+for|as\s+far\s+as|as\s+(?:for|to|regards)|about|regarding|"
    r"re|concerning|on|for|with)\s+(?:my\s+|the\s+)?" + _ADJ + _SLOT + r"(?:\s+(?:goes|is\s+concerned))?$", re.IGNORECASE)
_VALUE_FIRST = re.compile(
    r"^(?:(?:yeah|yep|yes|so|well|ok|okay|oh|and|also|anyway|plus|mhm|btw|fyi)\s+)*(?P<value>[^\s].{0,40}?)\s+(?:is|'s|’s|has\s+(?:always\s+|long\s+)?been|remains|"
    r"is\s+still|'s\s+still|’s\s+still|is\s+(?:correct|right|still\s+(?:correct|right))\s+for)\s+(?:now\s+|currently\s+|officially\s+|once\s+again\s+|again\s+)?my\s+" + _ADJ + _SLOT
    + _SLOT_TAIL + r"$",
    re.IGNORECASE,
)
_USE_AS = re.compile(
    r"\bi(?:'m|’m|\s+am|'ve|’ve|\s+have)?(?:\s+now|\s+currently|\s+just|\s+recently|\s+finally)?(?:\s+been)?\s+"
    r"(?:have|use|using|got|gotten|picked|chose|chosen|went\s+with|go\s+with|going\s+with|sticking\s+with|settled\s+on|opted\s+for|"
    r"put\s+down|registered|entered|listed|gave|give|set)\s+(?P<value>.+?)\s+(?:as|for)\s+my\s+" + _ADJ + _SLOT
    + r"(?:\s+(?:now|these\s+days|nowadays|currently))?$",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:my\s+)?" + _ADJ + r"(?P<slot>(?=\S*[^\W\d_])[^\W_][\w\-()]*(?:[ ][\w\-()]+){0,3})\s*(?P<sep>[:=])(?![=>])\s*"
                    r"(?P<value>\S.*)$", re.IGNORECASE)
_BARE_CHANGE = re.compile(r"^(?:the\s+)?" + _SLOT + r"\s+" + _CHANGE_VERB + _FROM + _TO + r"(?P<value>.+)$",
                          re.IGNORECASE)
_ANAPHOR = re.compile(
    r"^(?:and\s+|so\s+|but\s+|now\s+)?(?:"
    r"(?:it|that)(?:'s|’s|\s+is|\s+has|s)\s+(?:now\s+)?(?:been\s+)?(?:actually\s+)?(?!(?:been\s+)?(?:changed|updated|switched|moved)\s+to\b)|"
    r"now\s+(?:is|it's)\s+|"
    r"(?:it|that)\s+(?:was\s+|has\s+|have\s+|been\s+|got\s+|just\s+|now\s+)*(?:(?:changed|updated|switched|moved)\s+to\s+|(?:became|went\s+to)\s+)|"
    r"now(?:\s+it(?:'s|’s|\s+is))?\s+|"
    r"(?:the\s+)?new\s+one(?:'s|’s|\s+is|:)\s*|"
    r"(?:these\s+days|nowadays|currently|today)\s+it(?:'s|’s|\s+is)\s+|"
    r"it\s+should\s+(?:be|say|read)\s+|mine(?:'s|’s|\s+is)\s+(?:now\s+)?|it\s+(?:reads|says)\s+|which(?:'s|’s|\s+is)\s+|"
    r"(?:it|that)(?:'s|’s|\s+is)\s+back\s+to\s+|back\s+to\s+|(?:it\s+)?went\s+back\s+to\s+|now\s+at\s+|"
    r"(?:and\s+)?(?:the\s+)?(?:new|current|updated)\s+(?:one|value)\s+(?:is|=|:)\s*|the\s+answer\s+is\s+|its\s+|"
    r"it\s+is\s+|(?:now\s+)?it'?s\s+|(?:i(?:'ve|’ve|\s+have)?\s+)?(?:replaced|swapped|switched)\s+it\s+(?:with|for|to)\s+|"
    r"(?:i\s+)?went\s+with\s+|i(?:'ve|’ve|\s+have)\s+got\s+|i\s+(?:finally\s+)?settled\s+on\s+|i(?:'ve|’ve|\s+have)\s+(?:gone|switched|moved)\s+(?:with|to)\s+"
    r")(?P<value>.+?)(?:\s+instead)?$",
    re.IGNORECASE,
)

_POLITE = re.compile(
    r"\b(?:i\s+)?(?:would|'d|’d|wanted|want|wish|wished|just\s+wanted|might\s+want)\s+(?:to\s+)?(?:like\s+)?(?:to\s+)?"
    r"(?:let\s+you\s+know|inform\s+you|tell\s+you|mention|note|confirm|update\s+you|remind\s+you|share|say|add|"
    r"point\s+out|you\s+to\s+know|flag|clarify|correct|record)\b"
    r"|\bi\s+(?:would|should)\s+be\s+(?:(?:most|very|so|really|ever\s+so)\s+)?(?:grateful|glad|happy|obliged|thankful)\s+if\s+you\s+"
    r"(?:could|would|can)\b"
    r"|\bi(?:'d|’d|\s+would)\s+appreciate\s+it\s+if\s+you\s+(?:could|would|can)\b"
    r"|\b(?:can|could|would|will)\s+(?:you|u)(?:\s+(?:please|kindly|pls))?\s*$"
    r"|\bi(?:'m|’m|\s+am)\s+(?:informing|writing\s+to\s+(?:inform|tell)\s+you|letting\s+you\s+know)(?:\s+that)?\b"
    r"|\b(?:if\s+you\s+(?:could|would|can|don't\s+mind)|(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|kindly\s+|pls\s+)?"
    r"(?:make\s+a\s+note|note|record|remember|confirm|update|be\s+aware|keep\s+in\s+mind|bear\s+in\s+mind|replace|swap|"
    r"change|set|correct|amend|overwrite))\b",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(r"\b(?:and|but|then|anyway|anyways|yeah|yep|so|plus|also|ok|okay|well|oh|lol|haha)\b", re.IGNORECASE)
_LEAD_PHRASES = re.compile(
    r"\b(?:in\s+another\s+life|in\s+an?\s+(?:ideal|perfect|better)\s+world|in\s+my\s+dreams?|one\s+day|some\s*day|"
    r"next\s+(?:year|month|week|time)|in\s+the\s+future|eventually\s+(?:i'll|i\s+will|it\s+will)|ideally|hypothetically|theoretically|in\s+theory|"
    r"if\s+only|what\s+if|pretend|imagine|about\s+to|(?:need|needs|have|has|want|wants|hope|hoping|plan|planning|trying|try|"
    r"supposed|meant|expected|due|likely|going)\s+to)\b",
    re.IGNORECASE,
)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:['’][a-z]+)?", text.lower())


def _blocked(lead: str) -> bool:
    # Only the lead-in since the last conjunction scopes over the clause: "it asked for everything and
    # yeah my X is V" is a statement; "if my X were V" is not.
    lead = re.split(r"[:;]", lead)[-1]  # "while going through papers I checked: my X is V": a colon ends the lead-in
    last = None
    for last in _CONJUNCTION.finditer(lead):
        pass
    if last is not None:
        lead = lead[last.end():]
    if _LEAD_PHRASES.search(lead):
        return True
    words = _tokens(_POLITE.sub(" ", lead))
    return any(w in _BLOCKERS or w.endswith("n't") or w.endswith("n’t") for w in words)


_FORM_FIELDS = frozenset({"previous", "old", "was", "before", "formerly", "reason", "date", "signed", "signature",
                          "comments", "comment", "status", "ref", "reference", "new", "value", "new value", "entry",
                          "subject", "re", "regarding", "field", "item"})


def _label(clause: str) -> Clause:
    m = _LABEL.match(clause)
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
    if head in _OPENER_LABELS or head in _OPENER_PHRASES or all(w in _OPENER_LABELS for w in head.split()):
        return None  # "Update: ..." is an opener, handled by the caller
    if m["sep"] == ":" and m["value"][:1].isdigit() and head[-1:].isdigit():
        return None
    swap = _LABEL_SWAP.match(m["value"].strip())
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
    if m and (m.group(1).lower() in _OPENER_LABELS or m.group(1).lower() in _OPENER_PHRASES
              or all(w in _OPENER_LABELS for w in m.group(1).lower().split())):
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
    for pattern in (_MY_FROM_TO, _MY_CHANGE, _MY_NEEDS, _MY_NEEDS_NOW):
        m = pattern.match(rest)
        if m and clean_slot(m["slot"]) is not None:
            value = m["value"]
            if m.groupdict().get("old"):
                value = _split_from_to(f"{m['old']} to {value}")
            verb = m.groupdict().get("verb")
            if verb and re.search(r"\b(?:been|was|were|got|is|are)\s+(?:\w+\s+)?" + re.escape(verb), rest, re.IGNORECASE):
                value = re.sub(r"\s+by\s+(?:the|my|our|their|his|her|a|an)\s+[\w-]+(?:\s+[\w-]+)?\s*$", "", value,
                               flags=re.IGNORECASE)  # "has been changed to V by the administration": the agent is not the value
            return found_clause(m["slot"], value, change=True, adj=m["adj"], cut_from=pattern is _MY_CHANGE)
    for pattern in (_MY_NOT_ANYMORE, _MY_NO_LONGER, _MY_ISNT):
        m = pattern.match(rest)
        if m:
            slot = clean_slot(m["slot"])  # "my X is no longer A. B.": the value may come on its own next
            gone = bool(re.search(r"\b(?:no\s+longer|no\s+more|any\s*more|any\s+longer)\b", rest, re.IGNORECASE))
            return Topic(slot, True, bare=gone) if slot else None
    m = _MY_CHANGED_ALONE.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        slot = clean_slot(m["slot"])
        return Topic(slot, True, bare=True) if slot else None
    m = _MY_IS.match(rest)
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
        return found_clause(m["slot"], value, change=adv in _ADV_CHANGE or bool(back), adj=m["adj"])
    m = _MY_PAST.match(rest)
    if m and clean_slot(m["slot"]) is not None:
        slot = clean_slot(m["slot"])
        return Topic(slot, True) if slot else None
    m = _MY_CONTRACTED.match(rest)
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
        return found_clause(m["slot"], value, change=adv in _ADV_CHANGE, adj=m["adj"])
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
        m = _NOTED.match(clause)
        if m and (found := found_clause(m["slot"], m["value"], change=False)) is not None:
            return found
    if correcting:
        clause = re.sub(r"\bshould\s+(?:be|read|say|have\s+been)\b", "is", clause, flags=re.IGNORECASE)
    # A request wrapped in courtesy: "I should be grateful if you would record my X as V" asks to record it.
    clause = re.sub(r"^(?:so|well|anyway|ok|okay)\s*[:,]\s*(?=\S)", "", clause, flags=re.IGNORECASE)  # "so: mine is V"
    clause = re.sub(r"^(?:fyi|btw|ps|p\.s\.|heads\s+up)\s*[,:—-]?\s+(?=\S)", "", clause, flags=re.IGNORECASE)  # "FYI V is my new X"
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
    m = re.match(r"^(?:(?:my|a|the)\s+)?(?:brand\s+)?new\s+" + _SLOT + r"(?:\s+(?:alert|incoming))?$", clause, re.IGNORECASE)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "new phone plan!! it's V"
    # "I think my X is V", "pretty sure my X is V": the user's own assertion, hedged; not someone else's belief
    clause = re.sub(r"^(?:i\s+(?:think|believe|reckon)|(?:i(?:'m|’m|\s+am)\s+)?(?:pretty|fairly|quite)\s+(?:sure|certain))\s+(?:that\s+)?(?=\S)",
                    "", clause, flags=re.IGNORECASE)
    # "from today, my X will be V": a change that takes effect now, not a plan
    if re.match(r"^(?:from\s+today|as\s+of\s+today|starting\s+today|from\s+now\s+on|effective\s+(?:today|immediately))\b", clause,
                re.IGNORECASE):
        clause = re.sub(r"\s+will\s+be\s+", " is now ", clause, count=1, flags=re.IGNORECASE)
    for pattern, change in ((_YOU_WANTED, False), (_YOU_HAD, True), (_FORGET_MY, False), (_WANT_TO_TELL, False), (_THEY_CHANGED, True)):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", change, bare=True)  # "you wanted my X. Yep, V", "you had my X as OLD? It's V now"
    for pattern, change in ((_INSTEAD_OF, True), (_WENT_FROM_FOR, True), (_PUT_ME_DOWN, False), (_FOR_X_I_HAVE, False)):
        m = pattern.match(clause)
        if m and (found := found_clause(m["slot"], m["value"], change=change, adj=m.groupdict().get("adj"))) is not None:
            return found
    for pattern in (_STOPPED_USING, _MIND_ON, _NEW_SINCE):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "got rid of OLD as my X", "new X since Monday"
    m = re.match(r"^(?P<value>.{1,40}?)\s+it\s+is$", clause, re.IGNORECASE)
    if m and topic_open and (value := bare_value(m["value"])) is not None:
        return Anaphor(value, True)  # "V it is": the choice made
    for pattern, change in ((_WHAT_I_USE_FOR, False), (_HAS_REPLACED, True), (_USE_MY_PAREN, False)):
        m = pattern.search(clause) if pattern is _USE_MY_PAREN else pattern.match(clause)
        if m and not _blocked(clause[: m.start()]) and (found := found_clause(m["slot"], m["value"], change=change,
                                                                         adj=m["adj"])) is not None:
            return found
    m = _NAMED_AFTER.match(clause)
    if m and clean_slot(m["slot"]):
        body = re.split(r"\s*(?:→|->|=>)\s*", m["body"])[-1]
        body = re.sub(r"^(?:that(?:'d|’d|\s+would)\s+be|it(?:'d|’d|\s+would)\s+be)\s+", "", body, flags=re.IGNORECASE)
        value = bare_value(body)
        if value is not None:
            return Found(clean_slot(m["slot"]) or "", value, "→" in m["body"] or "->" in m["body"])
    for pattern, change, back in ((_NOT_MY_ANYMORE, True, False), (_CHANGED_MY, True, False), (_STOPPED_BEING, True, False),
                                  (_I_MEAN_MY, True, True), (_DITCHED_MY, True, False), (_HAD_WRONG, True, False),
                                  (_WAS_MY_UNTIL, True, False), (_NOT_ANY_MORE_FOR, True, False),
                                  (_THEIR_SLOTS, False, False), (_ANSWER_ABOUT, False, False)):
        m = pattern.search(clause) if pattern in (_THEIR_SLOTS, _ANSWER_ABOUT) else pattern.match(clause)
        if m and clean_slot(m["slot"]) and not (pattern is _ANSWER_ABOUT and _blocked(clause[: m.start()])):
            # the slot named now; its value stood just before ("V — my X i mean") or comes next
            return Topic(clean_slot(m["slot"]) or "", change, bare=not back and pattern is not _THEIR_SLOTS, back=back)
    m = _USE_MY.match(clause)
    if m and clean_slot(m["slot"]) and (m["adj"] or "").lower() not in ("old", "previous", "former", "original", "first"):
        return Topic(clean_slot(m["slot"]) or "", (m["adj"] or "").lower() in ("new", "updated", "latest"), bare=True)
    m = _UPDATE_MY.search(clause)
    if m and clean_slot(m["slot"]) and not re.search(r"\b(?:will|going\s+to|gonna|plan|planning|need\s+to|should)\b", clause[: m.start()],
                                                      re.IGNORECASE):
        return Topic(clean_slot(m["slot"]) or "", True, bare=True)  # "could you update my X? It is V now."
    m = _GOT_MY_AS.search(clause)
    if m and not _blocked(clause[: m.start()]) and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = _ARROW_FOR_MY.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=True, adj=m["adj"])) is not None:
        return found  # "A → B for my X"
    for pattern in (_WHAT_MY_IS, _PAREN_MY, _V_COLON_MY, _OWNED_FOR_ME, _NEW_IS):
        m = pattern.match(clause)
        if m and pattern is _V_COLON_MY and re.match(r"(?:write|note|save|remember|put|keep|log|record|stopped|quick|for|please|pls|"
                                                     r"here|ok|okay|so|update|can\s+u|can\s+you|could\s+you)\b", m["value"].strip(), re.IGNORECASE):
            if clean_slot(m["slot"]):
                return Topic(clean_slot(m["slot"]) or "", False, bare=True)  # "Write this down for me: my X, V"
            continue
        if m and pattern is _V_COLON_MY and (re.fullmatch(r"[A-Z][a-z]+", m["value"].strip())  # "Melanie: my kids …": a speaker
                                             or m["value"].strip().lower() in _OPENER_LABELS
                                             or m["value"].strip().lower() in _OPENER_PHRASES):
            continue
        if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m.groupdict().get("adj"))) is not None:
            return found
    if _PAST_FRAME.match(clause) and not re.search(r"\b(?:changed|switched|moved|updated|shifted)\b.*\b(?:to|->)\b", clause, re.IGNORECASE):
        return Blocked("a past frame")  # "back in uni, my X was V": what follows is the past; "back in March I changed it to V" is not
    m = _I_CHANGE.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"], cut_from=not m["old"])
    m = _REPLACE.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    for pattern in (_FOR_MY_I, _REPLACE_MY):
        m = pattern.search(clause)
        if m and not _blocked(clause[: m.start()]):
            result = found_clause(m["slot"], m["value"], change=pattern is _REPLACE_MY, adj=m["adj"])
            if result is not None:
                return result
    m = _OUT_IN.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    m = _OUT_OLD.match(clause)
    if m:
        return found_clause(m["slot"], m["value"], change=True)
    m = _REMEMBER_BEING.search(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True)
    m = _V_IF_YOU_NEED.match(clause)
    if m and not _blocked(m["value"]) and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = _IT_WANTS_MY.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True)
    for pattern in (_IF_YOU_NEED, _GAVE_WRONG, _NEVER_GAVE):
        m = pattern.search(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", pattern is _GAVE_WRONG, bare=True)
    m = _OLD_WAS.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", True)  # "The old X was A." (the new one is B)
    m = _ITS_FOR_MY.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found  # "It's V for my X", "since March it's been V for my X"
    for pattern in (_OF_ME_CHANGED, _NEW_ALONE):
        m = pattern.match(clause)
        if m and clean_slot(m["slot"]):
            return Topic(clean_slot(m["slot"]) or "", True, bare=True)
    for pattern, change in ((_RECORD_AS, True), (_USE_V_AS, True), (_THE_SLOT_I, False), (_WHAT_I_USE, False)):
        m = pattern.match(clause)
        if m:
            result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
            if result is not None:
                return result
    for pattern in (_I_MEANT, _NEW_DROPPED):
        m = pattern.search(clause) if pattern is _I_MEANT else pattern.match(clause)
        if m and not _blocked(clause[: m.start()]):
            result = found_clause(m["slot"], m["value"], change=True, adj=m.groupdict().get("adj"))
            if result is not None:
                return result
    m = _GOT_SORTED.search(clause)
    if m and clean_slot(m["slot"]) and not _blocked(clause[: m.start()]):
        return Topic(clean_slot(m["slot"]) or "", True)
    m = _BACK_TOPIC.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, back=True)
    head, colon, tail = clause.partition(":")
    if colon and tail.strip() and not head[-1:].isdigit():
        left = parse_clause(head, topic_open=False)
        swap = _LABEL_SWAP.match(tail.strip())
        if isinstance(left, Topic) and swap:  # "my X: swapped A for B"
            return found_clause(left.slot, swap["value"], change=True)
        if isinstance(left, Topic):  # "my X changed: V", "on the subject of my X: mine is V"
            tail = re.sub(r"^\s*(?:no\s+longer|not)\s+.{1,40}?\s+but\s+", "", tail, flags=re.IGNORECASE)  # "my X: no longer A but B"
            tail = re.sub(r"^\s*it\s+(?:has\s+)?(?:changed|got\s+changed)\s*[,;]?\s*", "", tail, flags=re.IGNORECASE)
            value = bare_value(tail)
            if value is not None:
                return Found(left.slot, value, left.change)
    m = _IMPERATIVE.match(clause) or _BARE_PAST.match(clause)
    if m and re.match(r"(?:(?:just|finally|so|and|ok|okay)\s+)*put\b", clause, re.IGNORECASE) and re.match(
            r"(?:the|my|your|a|an)\s", m["value"].strip(), re.IGNORECASE) and not re.search(
            r"\b(?:my|the)\s+(?:\w+\s+)?" + re.escape(m["slot"]), clause, re.IGNORECASE):
        m = None  # "put V as the X": V is no slot, and the value is no slot either
    if m and (found := found_clause(m["slot"], m["value"], change=True, adj=m["adj"])) is not None:
        return found
    m = re.search(r"\b(?:change|update|set|switch|correct|amend|edit|adjust|modify)\s+my\s+" + _ADJ + _SLOT + _FROM + _TO
                  + r"(?P<value>.+)$", clause, re.IGNORECASE)
    if m and m.start() > 0 and not _blocked(clause[: m.start()]):
        return found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
    m = _SWAPPED_OUT.search(clause)
    if m and not _blocked(clause[: m.start()]):
        result = found_clause(m["slot"], m["value"], change=True, adj=m["adj"])
        if result is not None:
            return result
    m = _GOT_MY_AT.search(clause)
    if m and not _blocked(clause[: m.start()]):
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if result is not None:
            return result
    m = _WITH_BEING.match(clause)
    if m and (found := found_clause(m["slot"], m["value"], change=False, adj=m["adj"])) is not None:
        return found
    m = _STILL_FOR_MY.match(clause)
    if m and not re.match(r"[a-z]+ing\b", m["value"]):  # "still waiting for my refund"
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if result is not None:
            return result
    m = _V_FOR_MY.search(clause)
    if m and not _blocked(clause[: m.start()]):
        change = not re.match(r"(?:go|going|went\s+with|gone\s+(?:with|for)|had|got|have|use|using|chose|picked|settled|opted|stick|stuck|landed|"
                              r"ended)", m["verb"], re.IGNORECASE)
        result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
        if result is not None:
            return result
    m = _USE_AS.search(clause)
    if m:
        if _blocked(clause[: m.start()]):
            return Blocked("lead-in")
        return found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
    m = re.search(r"\b(?:asked|asking|ask|wanted\s+to\s+know|q|question)\s+(?:me\s+)?(?:about|abt|for|on|re)\s+my\s+" + _ADJ
                  + _SLOT
                  + r"(?:\s+(?:earlier|before|yesterday|last\s+time|the\s+other\s+day))?$", clause, re.IGNORECASE)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True)
    m = _ABOUT_MY.match(clause)
    if m:
        slot = clean_slot(m["slot"])
        return Topic(slot, False, bare=True) if slot else None
    m = _VALUE_FIRST.match(clause)
    if m and not _blocked(m["value"]):
        result = found_clause(m["slot"], m["value"], change=False, adj=m["adj"])
        if isinstance(result, Found):
            return result
    for my in _MY.finditer(clause):
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
    m = _OWNED_ALONE.match(clause)
    if m and clean_slot(m["slot"]):
        return Topic(clean_slot(m["slot"]) or "", False, bare=True, back=True)  # "my office floor" (it is 7F) / "It's 7F, my office floor"
    for pattern, change in ((_TERSE, True),):
        m = pattern.match(clause)
        if m and not _blocked(m["value"]):
            result = found_clause(m["slot"], m["value"], change=change, adj=m["adj"])
            if result is not None:
                return result
    result = _label(clause)
    if result is not None:
        return result
    m = _BARE_CHANGE.match(clause)
    if m and clean_slot(m["slot"]) is not None:
        return found_clause(m["slot"], m["value"], change=True)
    if topic_open:
        m = _ANAPHOR.match(clause)
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
    m = _V_FOR_MY_ALONE.match(clause.strip())
    value = bare_value(m["value"]) if m else None
    if not m or value is None or _NOT_A_VALUE_FOR.match(m["value"]) or _NOT_A_VALUE_FOR.match(value) or (
            set(m["slot"].lower().split()) & PEOPLE):
        return None
    if "," in m["value"] or re.search(r"\b[a-z]{3,}ed\b", m["value"]):
        return None  # "decided against V for my X": a verb in it, so no value alone
    return found_clause(m["slot"], m["value"], change=False, adj=m["adj"])


def asked_slot(sentence: str) -> Topic | None:
    """A question that is only a slot ("my locker?", "oh and my badge number?"): the next sentence may answer it."""
    m = _ASKED_SLOT.match(sentence.strip().rstrip("?").strip())
    slot = clean_slot(m["slot"]) if m else None
    return Topic(slot, False, bare=True) if slot else None


def bare_value(clause: str) -> str | None:
    """A clause that is only a value ("C12", "it's C12"), as the answer to a slot just named."""
    clause = strip_opener_label(clause, stating=False)  # "can u save this: V. that's my X"
    if re.match(r"^\s*(?:def(?:initely)?|defo|deffo|absolutely|certainly|surely|totally)\s+not\b", clause, re.IGNORECASE):
        return None  # "def not V": a denial
    clause = re.sub(r"^\*+\s*(?=\S)", "", clause.strip())  # "*V": a chat correction of the line before
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
