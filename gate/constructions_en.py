"""The English clause grammar's constructions: the word lists and the patterns ``gate.grammar_en`` reads a
clause with (the lead-in words that block a fact, the parts a construction is built from, and each
construction). Pure data: compiled patterns, no functions.
"""

from __future__ import annotations

import re

from ledgermem.gate.values_en import DURATION, ON_THE_FORM

# Words that, anywhere before the core, make the clause not a present
# first-person statement of fact.
BLOCKERS = frozenset(
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
OPENER_LABELS = frozenset(
    """
    update note fyi btw correction reminder ps p.s. heads-up edit info important psa
    quick small tiny also remember notice news change changes correction update
    """.split()
)
OPENER_PHRASES = ("heads up", "quick note", "quick update", "small update", "just so you know",
                   "for the record", "for your records", "side note", "one more thing", "new info", "note to self",
                   "remember this", "memo", "reminder to self", "fyi all", "important", "decision made",
                   "final answer", "done deal", "settled", "just so you have it", "for your information",
                   "for your files", "for your records", "for my records", "for my notes", "for my reference")

W = r"[^\W_][\w\-]*(?:\([\w]{1,3}\)[\w\-]*)?"
XW = r"[^\W_][\w\-'’]*(?:\([\w]{1,3}\)[\w\-]*)?"  # a slot word ("401(k)") that may carry a possessive, checked later
SLOT = rf"(?P<slot>{XW}(?:\s+{XW}){{0,4}}?)"
ADJ = r"(?:(?P<adj>new|current|present|updated|actual|real|official|own|latest(?!\s+(?:[\w-]+\s+)?(?:time|date|hour|day|deadline)\b)|old|previous|former|original|first)\s+)?"
ADV = (r"(?:(?P<adv>now|currently|still|actually|really|officially|finally|basically|presently|in\s+fact|"
        r"at\s+present|right\s+now|these\s+days|nowadays|technically|just|like)\s+)?")
ADV_CHANGE = frozenset({"now", "currently", "finally", "presently", "at present", "right now",
                         "these days", "nowadays", "actually"})
COPULA = (r"(?P<cop>(?<=\S)\s*==?|(?<=[^\s\d])\s*:|\s+na(?=\s)|\s+now(?=\s)|"
           r"\s+(?:(?:currently|now|still|usually|normally|actually)\s+)?(?:is\s+become|has\s+became|become|becomes|is|iz|si|'s|’s|"
           r"it\s+is|it's|it’s|sits\s+at|stands\s+at|comes\s+to|reads|has\s+been|have\s+been|remains|stays|is\s+set\s+to|is\s+listed\s+as|reads|"
           r"stands\s+at|comes\s+to|sits\s+at|is\s+at|'s\s+at|equals|happens\s+to\s+be|has\s+become|became|"
           r"shows\s+as|is\s+showing\s+as|reads\s+as|displays\s+as|is\s+shown\s+as|is\s+down\s+as|is\s+recorded\s+as|is\s+registered\s+as|is\s+saved\s+as|is\s+on\s+file\s+as|"
           r"ended\s+up\s+(?:being|as)|is\s+back\s+to|'s\s+back\s+to|is\s+now\s+back\s+to|was\s+\w+(?:\s+\w+){0,3}\s+and\s+is|"
           r"is\s+in\s+fact|is\s+actually)\b|\s*(?:→|->|=>))")
CHANGE_VERB = (
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
FROM = r"(?:\s+from\s+(?P<old>.+?))?"
TO = r"\s+(?:over\s+|back\s+|up\s+|down\s+)?(?:to|into|as)\s+"

MY = re.compile(r"\bmy\s+", re.IGNORECASE)
I_CHANGE = re.compile(
    r"(?:^had\s+to|\b(?:i|we|they|someone|somebody|hr|it|the\s+company|the\s+office|my\s+(?:company|employer|office|landlord|bank)))"
    r"(?:'ve|’ve|\s+have|\s+had|\s+just|\s+finally|\s+recently|\s+officially|\s+now|\s+did|\s+ended\s+up|\s+went\s+ahead\s+and|"
    r"\s+(?:just\s+|finally\s+|only\s+)?(?:went|gone)\s+and|\s+had\s+to|\s+have\s+to)*\s+"
    r"(?P<verb>changed|updated|switched|moved|set|swapped|swap|change|switch|move|bumped|reset|upgraded|downgraded|raised|shifted|"
    r"lowered|increased|decreased|transferred|relocated|changed\s+over|switched\s+over|adjusted|"
    r"corrected|modified|amended|switching|changing|moving|updating)\s+my\s+" + ADJ + SLOT + r"(?:\s+(?:over|back|across))?" + FROM + TO
    + r"(?P<value>.+)$",
    re.IGNORECASE,
)
BARE_PAST = re.compile(
    r"^(?:(?:just|finally|also|so|and|oh|ok|okay|lol|then|recently|officially)\s+)*(?:i\s+(?:did\s+|have\s+|'ve\s+|’ve\s+)?)?"
    r"(?:changed|updated|switched|swapped|moved|bumped|upgraded|downgraded|reset|raised|lowered|set|put|got|adjusted|"
    r"chnged|chngd|chaged|changd|updtd|upd8d|"
    r"increased|decreased|cut|reduced|dropped|lifted|reverted|renamed|changed\s+over|switched\s+over|"
    r"(?:finished|done|just\s+finished|completed|ended\s+up|went\s+ahead\s+and\s+|end\s+up)\s*(?:switching|changing|moving|updating|switched|changed|moved|updated))\s+(?:over\s+)?"
    r"(?:(?:my|the)\s+)?" + ADJ + SLOT + r"(?:\s+(?:over|across|back))?" + FROM + TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
SWAPPED_OUT = re.compile(
    r"\b(?:swapped|traded|replaced|switched|exchanged|dropped|ditched|dumped|traded\s+in|binned|chucked)\s+(?P<old>.+?)\s+"
    r"(?:out\s+)?(?:for|with)\s+(?P<value>.+?)\s+(?:as|for)\s+"
    r"my\s+" + ADJ + SLOT + r"$",
    re.IGNORECASE,
)
GOT_MY_AT = re.compile(
    r"\b(?:i(?:'ve|’ve|\s+have|'m|\s+am)?\s+)?(?:(?:just|now|currently|usually)\s+)?(?:got|have|set|keep|keeping|put|"
    r"running|run)\s+my\s+" + ADJ + SLOT + r"\s+(?:at|to|on)\s+(?P<value>.+)$",
    re.IGNORECASE,
)
WITH_BEING = re.compile(r"^(?:seeing\s+as|seeing\s+that|given\s+that|now\s+that|with)\s+my\s+" + ADJ + SLOT
                         + r"\s+(?:being|is|'s|’s)\s+(?:now\s+)?(?P<value>.+)$", re.IGNORECASE)  # "With my X being V now, rebook…"
#: What may follow a slot at the end of a clause without being part of it: a time, an aside to the reader, a
#: filler ("V is my X now, if that matters", "V, that's my X, for your records", "V for my X, please note").
SLOT_TAIL = (r"(?:\s*[,—–-]?\s*(?:now|these\s+days|nowadays|currently|at\s+the\s+moment|from\s+here\s+on|from\s+now\s+on|"
              r"going\s+forward|for\s+good|lol|haha+|btw|fyi|rn|ok|okay|tho|by\s+the\s+way|again|once\s+again|once\s+more|"
              r"still|as\s+always|as\s+ever|that\s+is|i\s+mean|if\s+(?:that|it)\s+(?:matters|helps)|in\s+case\s+(?:it|that)\s+"
              r"(?:matters|helps)|for\s+(?:your\s+)?(?:notes|records|reference|info)|for\s+the\s+record|just\s+so\s+you\s+"
              r"(?:know|have\s+it)|(?:please|kindly|do)\s+(?:make\s+a\s+)?note(?:\s+of\s+(?:it|that))?|please\s+save\s+(?:it|that)|"
              r"only|mate|cheers|" + DURATION + r"|since\s+\S.*))*")
STILL_FOR_MY = re.compile(  # "Still V for my X, same as always"
    r"^(?:(?:so|and|yeah|yep|ok|okay)\s+)*(?:still|always|again)\s+(?P<value>[^\s,].{0,40}?)\s+(?:for|as)\s+my\s+" + ADJ + SLOT + r"$",
    re.IGNORECASE,
)
V_FOR_MY = re.compile(
    r"(?:^(?:(?:please|pls|kindly|can\s+you|could\s+you|would\s+you)\s+)*(?:ended\s+up\s+|finally\s+|just\s+)?|\b(?:i|we)(?:'ve|’ve|\s+have|\s+had|'m|’m|\s+am)?\s+(?:ended\s+up\s+)?"
    r"(?:(?:just|now|finally|recently|usually|always|normally|please|been|"
    r"generally|typically|mostly|currently|still)\s+)*)"
    r"(?P<verb>went\s+back\s+to|switched(?:\s+over|\s+back)?\s+to|changed\s+(?:over\s+|back\s+)?to|moved\s+(?:over\s+|back\s+)?to|"
    r"reverted\s+to|returned\s+to|gone\s+back\s+to|go\s+back\s+to|go\s+with|going\s+with|went\s+with|gone\s+with|gone\s+for|(?<=['’]ve\s)had|(?<=\shave\s)had|"
    r"got|have|use|using|chose|chosen|picked|settled\s+on|"
    r"opted\s+for|stick\s+with|sticking\s+with|stuck\s+with|landed\s+on|ended\s+up\s+with|upgraded\s+to|downgraded\s+to|"
    r"bumped\s+(?:it\s+)?(?:up\s+|down\s+)?to|treat|consider|count|regard|take|decided\s+on|went\s+for|saved|stored|"
    r"picked|keep|kept|save|store|record|log|remember|note|register|put)\s+(?P<value>.+?)\s+(?:down\s+|set\s+|saved\s+|registered\s+|listed\s+)?"
    r"(?:for|as|on)\s+my\s+" + ADJ + SLOT
    + r"(?:\s+(?:now|these\s+days|lately|instead|too|as\s+well|lol|haha+|btw|fyi|rn|after\s+all|in\s+the\s+end|eventually|everywhere|"
    + ON_THE_FORM + r"|"
    r"for\s+now|pretty\s+much\s+always|mostly|last\s+\w+|this\s+\w+|\w+\s+ago|yesterday|today|for\s+a\s+while(?:\s+now)?|"
    r"since\s+(?!(?:last|next|this)\b).+|because\s+.+|in\s+(?:your|the)\s+(?:notes|records?|file|system|profile)|"
    r"from\s+now\s+on|going\s+forward|please|yeah|yep|ok|okay|thanks|thx|ta|,?\s*(?:please|kindly|do)\s+note|,?\s*for\s+reference))*"
    + r"(?:\s+(?:instead\s+of|rather\s+than|not)\s+.+)?$",
    re.IGNORECASE,
)
IMPERATIVE = re.compile(
    r"^(?:(?:please|pls|plz|kindly|can\s+(?:you|u|ya)|could\s+(?:you|u)|would\s+(?:you|u)|will\s+(?:you|u))\s+)*"
    r"(?:change|update|set|switch|swap|make|put|correct|amend|edit|adjust|modify|bump)\s+my\s+" + ADJ
    + SLOT + r"(?:\s+(?:in|on)\s+(?:your|the)\s+(?:notes|records?|file|system|profile))?" + FROM + TO + r"(?P<value>.+)$",
    re.IGNORECASE,
)
MY_CHANGE = re.compile(r"my\s+" + ADJ + SLOT + r"\s+" + CHANGE_VERB + FROM + TO + r"(?P<value>.+)$",
                        re.IGNORECASE)
MY_FROM_TO = re.compile(r"my\s+" + ADJ + SLOT + r"\s+(?:went|changed|moved|switched|jumped|shifted|"
                         r"has\s+gone|has\s+changed)\s+(?:from\s+)?(?!(?:(?:over|back|up|down|across)\s*)?(?:to\b|->|→))(?P<old>.+?)\s*(?:\s+to\s+|->|→)\s*(?P<value>.+)$", re.IGNORECASE)
MY_NO_LONGER = re.compile(
    r"my\s+" + ADJ + SLOT + r"\s+(?:(?:is|'s|’s)\s+)?(?:no\s+longer|no\s+more|not\s+any\s*more|not\s+(?:still\s+)?|n't\s+)(?P<old>.+?)"
    r"(?:\s+(?:anymore|any\s+more|any\s+longer))?$",
    re.IGNORECASE,
)
MY_NOT_ANYMORE = re.compile(
    r"my\s+" + ADJ + SLOT + r"\s+(?:isn't|isn’t|is\s+not)\s+(?P<old>.+?)\s+(?:anymore|any\s+more|any\s+longer)$",
    re.IGNORECASE,
)
MY_PAST = re.compile(r"my\s+" + ADJ + SLOT + r"\s+(?:used\s+to\s+be|was|had\s+been|originally\s+was|was\s+originally)\s+"
                      r"(?P<old>.+)$", re.IGNORECASE)
MY_CHANGED_ALONE = re.compile(r"my\s+" + ADJ + SLOT + r"\s+" + CHANGE_VERB + r"(?:\s+(?:again|recently|"
                               r"today|yesterday|this\s+week|last\s+week|lately|smh|lol|ugh|btw|ffs|omg|haha+|finally|"
                               r"once\s+more|as\s+well|too|yet\s+again|once\s+again|o|oh|sha|lah|lor|ugh|again\s+lol))*$", re.IGNORECASE)
MY_IS = re.compile(r"my\s+" + ADJ + SLOT + COPULA + r"\s*" + ADV + r"(?P<value>.+)$",
                    re.IGNORECASE)
MY_CONTRACTED = re.compile(r"my\s+" + ADJ + r"(?P<slot>" + W + r"(?:\s+" + W + r"){0,4}?)(?:'s|’s)\s+"
                            + ADV + r"(?P<value>.+)$", re.IGNORECASE)
REPLACE = re.compile(
    r"^(?:please\s+|pls\s+)?(?:replace|swap|substitute)\s+(?P<old>.+?)\s+(?:with|for|by)\s+(?P<value>.+?)\s+"
    r"(?:for|as|in|on)\s+my\s+" + ADJ + SLOT + r"$",
    re.IGNORECASE,
)
MY_NEEDS = re.compile(
    r"my\s+" + ADJ + SLOT + r"\s+(?:needs|need)\s+(?:updating|updated|changing|changed|an\s+update|to\s+be\s+"
    r"(?:updated|changed))(?:\s*:\s*|\s+to\s+)(?P<value>.+)$",
    re.IGNORECASE,
)
MY_NEEDS_NOW = re.compile(  # "my X needs to be V now": the value it has to have from now on
    r"my\s+" + ADJ + SLOT + r"\s+(?:needs|has)\s+to\s+(?:be|read|say)\s+(?!\w+ed\b)(?P<value>.+?)\s+now$", re.IGNORECASE)
RECORD_AS = re.compile(
    r"^(?:(?:when|once|before|after|if)\s+(?:you|u)\s+[^,]{1,50}?,?\s+)?"  # "when you do the registration put my X as V"
    r"(?:(?:please|kindly|pls|could\s+you|can\s+you|would\s+you|just|then)\s+)*(?:record|note|log|register|save|put\s+down|put|"
    r"mark|list|enter|file|set|keep|store|write\s+down|update|change|have)\s+my\s+" + ADJ + SLOT
    + r"\s+(?:as|to\s+be|to\s+read)\s+(?P<value>.+)$",
    re.IGNORECASE,
)
USE_V_AS = re.compile(
    r"^(?:(?:please|kindly|pls|going\s+forward|from\s+now\s+on|henceforth)\s*,?\s+)*(?:use|put\s+down|put|take|record|note|register|list|"
    r"enter|save|keep|file|log|treat|consider|regard|count)\s+(?P<value>.+?)\s+(?:down\s+)?(?:as|for)\s+my\s+" + ADJ + SLOT
    + r"(?:\s+(?:rather\s+than|instead\s+of|not)\s+.+)?(?:\s+(?:lol|haha+|pls|please|thx|thanks|btw|fyi|rn|now|ok|okay|" + ON_THE_FORM + r"))*$",
    re.IGNORECASE,
)
THE_SLOT_I = re.compile(
    r"^(?:the|my)\s+" + ADJ + SLOT + r"\s+(?:(?:that\s+)?i(?:'m|’m|\s+am|'ve|’ve|\s+have)?\s+"
    r"(?:have|use|using|got|go\s+by|gave\s+you|registered|put\s+down|set|chose|chosen|picked|selected|entered|"
    r"signed\s+up\s+for|went\s+with|settled\s+on|stick\s+to|stick\s+with|rely\s+on|go\s+for|prefer|'m\s+on|am\s+on)"
    r"|on\s+file|of\s+(?:me|mine)|for\s+me|(?:on|in|for)\s+my\s+(?:account|profile|file|record|records|card))"
    r"\s+(?:now\s+)?(?:is|'s|’s|=|:)\s+(?:now\s+)?(?P<value>.+)$",
    re.IGNORECASE,
)
WHAT_I_USE = re.compile(
    r"^(?P<value>.{1,40}?)\s+is\s+what\s+i(?:'m|’m|\s+am|'ve|’ve|\s+have)?\s+(?:use|using|have|go\s+with|put|put\s+down|"
    r"gave|set|chosen|chose|picked|registered|got|entered|selected|settled\s+on|went\s+with|going\s+with|gone\s+with|"
    r"gone\s+for|ended\s+up\s+with|landed\s+on|stuck\s+with|opted\s+for|stick\s+to|stick\s+with|rely\s+on|go\s+for)\s+"
    r"(?:as|for)\s+my\s+" + ADJ + SLOT + r"(?:\s+(?:now|pretty\s+much\s+always|mostly|always))?$",
    re.IGNORECASE,
)
WHAT_I_USE_FOR = re.compile(r"^(?P<value>.{1,40}?)(?:'s|’s|\s+is)\s+what\s+i(?:'ve|\s+have)?\s+(?:use|used|have|got|go\s+with|picked|"
                             r"chose|went\s+with|put|keep)\s+(?:for|as)\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
HAS_REPLACED = re.compile(r"^(?P<value>.{1,40}?)\s+(?:has\s+|have\s+|just\s+)*(?:replaced|replaces|is\s+replacing|taken\s+over\s+from|takes\s+over\s+from|superseded|supersedes)\s+(?P<old>.{1,40}?)"
                           r"\s+as\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
STOPPED_USING = re.compile(r"^(?:i(?:'m|’m|\s+am)\s+(?:not|no\s+longer)\s+using|i\s+(?:don't|don’t|do\s+not|no\s+longer)\s+(?:have|use)|i(?:'ve|\s+have)?\s+(?:stopped\s+using|got\s+rid\s+of|dropped)|"
                            r"got\s+rid\s+of|stopped\s+using)\s+(?:(?!\sfor\s).){1,40}?\s+(?:for|as)\s+my\s+" + ADJ + SLOT
                            + r"(?:\s+(?:any\s*more|any\s+longer))?$", re.IGNORECASE)
NEW_SINCE = re.compile(r"^(?:(?:i(?:'ve|’ve|\s+have)?\s+)?got\s+(?:a\s+)?|i\s+have\s+(?:a\s+)?|(?:the\s+)?)new\s+" + SLOT
                        + r"(?:\s+(?:since|as\s+of|from)\s+(?:the\s+)?\w+(?:\s+\w+)?)?(?:\s+now)?$", re.IGNORECASE)
FORGET_MY = re.compile(r"^(?:(?:bro|so|ok|okay|man|ugh|honestly)\s+)*(?:i\s+)?(?:keep\s+forgetting|always\s+forget|never\s+remember|can(?:'t|’t|not)\s+ever\s+remember)"
                        r"\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
WANT_TO_TELL = re.compile(r"^i\s+(?:want|wanted|would\s+like|'d\s+like|’d\s+like)\s+to\s+(?:say|tell|give|share|inform)\s+(?:to\s+)?(?:you\s+)?"
                           r"(?:about\s+)?my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
THEY_CHANGED = re.compile(r"^(?:they|someone|somebody|the\s+\w+|hr|it)\s+(?:switched|changed|moved|updated|reset|swapped)\s+my\s+" + ADJ + SLOT
                           + r"(?:\s+on\s+me|\s+again|\s+without\s+asking)?$", re.IGNORECASE)
YOU_WANTED = re.compile(r"^(?:(?:you|u)\s+(?:wanted|asked\s+(?:for|about)|needed|were\s+asking\s+(?:for|about)|requested)|"
                         r"(?:(?:can|could|will|would)\s+(?:you|u)\s+)?(?:please\s+)?(?:remember|note|save|keep|store|record))\s+my\s+" + ADJ
                         + SLOT + r"$", re.IGNORECASE)
YOU_HAD = re.compile(r"^(?:you|u)\s+(?:had|have|got|wrote|put|listed|noted)\s+(?:down\s+)?my\s+" + ADJ + SLOT
                      + r"\s+(?:as|at|down\s+as)\s+.{1,40}$", re.IGNORECASE)
WENT_FROM_FOR = re.compile(r"^(?:i|we)\s+(?:went|switched|changed|moved)\s+(?:over\s+)?from\s+(?P<old>.{1,40}?)\s+to\s+(?P<value>.{1,40}?)\s+"
                            r"(?:for|as|with)\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
INSTEAD_OF = re.compile(r"^(?:it(?:'s|’s|\s+is)\s+)?(?P<value>.{1,40}?)\s*(?:\s(?:instead\s+of|rather\s+than)|,\s*not)\s+(?P<old>.{1,40}?)\s*,?\s+"
                         r"(?:for|as)\s+my\s+" + ADJ + SLOT + r"(?:\s+(?:now|these\s+days|nowadays))?$", re.IGNORECASE)
PUT_ME_DOWN = re.compile(r"^(?:please\s+)?put\s+me\s+down\s+(?:as|for)\s+(?P<value>.{1,40}?)\s+(?:for|as)\s+(?:my\s+|the\s+)?" + ADJ
                          + SLOT + r"(?:\s+please)?$", re.IGNORECASE)
FOR_X_I_HAVE = re.compile(r"^for\s+(?:the\s+)?" + SLOT + r",?\s+i(?:'ve|’ve|\s+have)?\s+(?:got|have|use|am\s+using|'m\s+using)\s+"
                           r"(?P<value>.+)$", re.IGNORECASE)
MIND_ON = re.compile(r"^(?:i\s+)?changed\s+my\s+mind\s+(?:on|about)\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
USE_MY_PAREN = re.compile(r"\b(?:use|keep|note|remember|save|record|put|enter|add|log)\s+my\s+" + ADJ + SLOT
                           + r"\s*\((?P<value>[^()]{1,40})\)", re.IGNORECASE)
OLD_BACK_TOPIC = re.compile(  # "A, that's my old X, it's V now"
    r"^(?:and\s+|so\s+)?(?:that(?:'s|’s|\s+is|\s+was)|this\s+is|it(?:'s|’s|\s+is|\s+was))\s+my\s+(?:old|previous|former)\s+" + SLOT + r"$",
    re.IGNORECASE)
#: "A is out, V is in as my X"
OUT_IS_IN = re.compile(r"^(?P<old>.{1,40}?)\s+is\s+out\s*[,;]?\s+(?P<value>.{1,40}?)\s+is\s+in\s+(?:as|for)\s+my\s+" + ADJ + SLOT + r"$",
                       re.IGNORECASE)
#: "you've got A as my X": the assistant's value, wrong; the right one follows ("should be V")
YOU_HAVE_AS = re.compile(r"^(?:you|u)(?:'ve|’ve|\s+have)?\s+(?:got|had|put|listed|written|noted|saved)\s+(?:down\s+)?(?P<old>.{1,40}?)\s+"
                         r"(?:as|for)\s+my\s+" + SLOT + r"(?:\s+(?:on\s+file|in\s+your\s+notes))?$", re.IGNORECASE)
BACK_TOPIC = re.compile(
    r"^(?:and\s+|so\s+)?(?:(?:that(?:'s|’s|\s+is|s)|this\s+is|it(?:'s|’s|\s+is)|which\s+is|those\s+are|that\s+would\s+be|"
    r"thas)(?:\s+still)?|(?:you(?:'ve|’ve|\s+have)?|u)\s+(?:got|have)(?=\s+my\s+\S+(?:\s+\S+){0,4}\s+(?:right|correct)$))"
    r"\s+(?:now\s+)?(?:my\s+(?:new\s+|current\s+)?|the\s+(?:new|current)\s+|the\s+(?=\S+(?:\s+\S+){0,3}\s+now$)|"
    r"the\s+(?=\S+(?:\s+\S+){0,4}\s+i(?:'ve|’ve|\s+have)?\s+(?:got|use|have)$))" + SLOT
    + r"(?:\s+i(?:'ve|’ve|\s+have)?\s+(?:got|use|have))?(?:\s+(?:right|correct))?" + SLOT_TAIL + r"$",
    re.IGNORECASE,
)
V_IF_YOU_NEED = re.compile(r"^(?P<value>[^\s,].{0,40}?)\s+(?:if|in\s+case|should)\s+(?:you|anyone|someone)\s+(?:ever\s+)?(?:need|needs|want|wants|ask\s+for|asks\s+for)\s+"
                            r"my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)  # "V if you need my X"
IT_WANTS_MY = re.compile(r"^(?:it|they|the\s+(?:form|site|page|app|website|system|hotel|airline|bank|clinic)|this\s+(?:form|page|site))\s+"
                          r"(?:wants|want|needs|need|asks\s+for|ask\s+for|is\s+asking\s+for|are\s+asking\s+for|requires|require)\s+my\s+"
                          + ADJ + SLOT + r"(?:\s+for\s+the\s+\w+)?$", re.IGNORECASE)  # "it wants my X - that's V"
IF_YOU_NEED = re.compile(
    r"^(?:if|in\s+case|whenever|should)\s+(?:you|anyone|someone|somebody|they|people|something|anything|a\s+form|the\s+form|"
    r"an\s+app|a\s+website)\s+(?:ever\s+)?(?:need|needs|want|wants|"
    r"wanna|ask|asks|asked|have\s+to\s+know|are\s+asked\s+for)\s+(?:for\s+|about\s+|to\s+know\s+)?"
    r"my\s+" + ADJ + SLOT + r"(?:\s+for\s+(?:anything|something|any\s+reason|a\s+form))?$", re.IGNORECASE)
NEVER_GAVE = re.compile(r"\b(?:i\s+)?(?:never|didn't|didn’t|did\s+not|haven't|haven’t|have\s+not|forgot\s+to)\s+(?:ever\s+)?"
                         r"(?:gave|give|given|told|tell|sent|send|mentioned|mention|shared|share)\s+(?:you\s+)?my\s+" + ADJ + SLOT
                         + r"(?:\s+(?:before|yet|earlier|at\s+all))?$", re.IGNORECASE)
OLD_WAS = re.compile(r"^(?:the|my)\s+(?:old|previous|former)\s+" + SLOT + r"\s+(?:was|used\s+to\s+be)\s+(?P<old>.{1,40})$",
                      re.IGNORECASE)
ITS_FOR_MY = re.compile(
    r"^(?:(?:since|as\s+of|from)\s+[^,]{1,30}?,?\s+it(?:'s|’s|\s+is|\s+has\s+been|'s\s+been|’s\s+been)\s+(?:now\s+|still\s+|always\s+)?|"
    r"it(?:'s|’s|\s+is|\s+has\s+been|'s\s+been|’s\s+been)\s+(?:now|still)\s+)"
    r"(?P<value>[^\s,].{0,40}?)\s+(?:for|as)\s+my\s+" + ADJ + SLOT + r"(?:\s+(?:now|these\s+days|nowadays))?$", re.IGNORECASE)
GAVE_WRONG = re.compile(r"\b(?:i\s+)?(?:gave|told|sent)\s+you\s+the\s+wrong\s+" + SLOT + r"(?:\s+(?:before|earlier|last\s+time))?$",
                         re.IGNORECASE)
# Constructions that name the slot in one clause and give its value in the next, or give both in an order
# of their own: "my X i mean" (after the value), "V is what my X is", "ditched my old X; the new one is V",
# "I had my X wrong", "V was my X until …", "not V any more for my X", "everyone was comparing their X".
I_MEAN_MY = re.compile(r"^(?:i\s+mean\s+)?my\s+" + ADJ + SLOT + r"\s+(?:i\s+mean|i\s+meant|that\s+is|rather)$", re.IGNORECASE)
WHAT_MY_IS = re.compile(r"^(?P<value>.{1,40}?)\s*(?:[:,—–-]\s*)?(?:that(?:'s|’s|\s+is)|is)\s+what\s+my\s+" + ADJ + SLOT
                         + r"\s+(?:is|'s)(?:\s+(?:now|these\s+days|currently))?$", re.IGNORECASE)
DITCHED_MY = re.compile(r"^(?:i(?:'ve|\s+have)?\s+)?(?:just\s+|finally\s+)?(?:ditched|dumped|dropped|binned|scrapped|"
                         r"got\s+rid\s+of|retired|replaced)\s+my\s+(?:old\s+)?" + SLOT + r"$", re.IGNORECASE)
HAD_WRONG = re.compile(r"^i\s+(?:had|got|have\s+had|'ve\s+had)\s+my\s+" + ADJ + SLOT + r"\s+wrong\b.*$", re.IGNORECASE)
WAS_MY_UNTIL = re.compile(r"^(?P<old>.{1,40}?)\s+was\s+my\s+" + SLOT + r"\s+(?:up\s+to|until|till|up\s+until)\s+.+$",
                           re.IGNORECASE)
NOT_ANY_MORE_FOR = re.compile(r"^(?:it's\s+)?not\s+(?P<old>.{1,40}?)\s+(?:any\s*more|any\s+longer)\s+(?:for|as)\s+my\s+" + SLOT
                               + r"$", re.IGNORECASE)
THEIR_SLOTS = re.compile(r"\b(?:comparing|discussing|talking\s+about|sharing|swapping|listing|asked\s+for|asking\s+for|"
                          r"asked\s+about|asking\s+about)\s+(?:their|our|everyone's|everyone’s|everybody's|people's)\s+" + SLOT
                          + r"(?:\s+(?:today|earlier|yesterday|at\s+lunch|again|in\s+the\s+\w+(?:\s+\w+)?))?$", re.IGNORECASE)
ANSWER_ABOUT = re.compile(r"\b(?:q|question|qn|query)\s+(?:abt|about|re|on)\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)
V_COLON_MY = re.compile(r"^(?P<value>[^:—–=]{1,40}?)\s*(?::|=|\s[—–-]+)\s*(?:that(?:'s|’s|\s+is)\s+|it(?:'s|’s|\s+is)\s+)?my\s+"
                         + ADJ + SLOT + r"$", re.IGNORECASE)  # "B14: my desk number"
NEW_IS = re.compile(r"^(?:(?:ok|okay|k|so|and|oh|anyway|anyways|also|btw|fyi|plus)\s+)*(?:the\s+)?(?:brand\s+)?new\s+(?!(?:one|ones|value|entry)\b)" + SLOT
                     + r"\s+(?:is|=|:|'s)\s+(?P<value>.+)$",
                     re.IGNORECASE)  # "okay new X is V"
GOT_MY_AS = re.compile(r"\b(?:i\s+)?(?:got|had|have)\s+my\s+" + ADJ + SLOT + r"\s+(?:set\s+up|set|registered|listed|changed|"
                        r"switched|put\s+down)\s+(?:as|to)\s+(?P<value>.+?)(?:\s+(?:when|after|before|since)\b.*)?$", re.IGNORECASE)
USE_MY = re.compile(  # "use my X. It's V", "fill in the form with my new X, V": the value comes next
    r"^(?:(?:please|pls|kindly|just|then|and|so)\s+)*(?:use|enter|put\s+down|put\s+in|go\s+with|take|"
    r"fill\s+(?:in|out)\s+(?:the\s+|this\s+|that\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:form\s+)?with)\s+my\s+" + ADJ + SLOT + r"$",
    re.IGNORECASE)
#: a clause that is only a value and the slot it is for: "V for my X", "as of Monday, V for my X"
V_FOR_MY_ALONE = re.compile(r"^(?:(?:as\s+of|from|since|starting|effective)\s+\w+(?:\s+\w+)?\s*,\s*)?"
                             r"(?P<value>[^\s,].{0,40}?)\s+for\s+my\s+" + ADJ + SLOT
                             + r"(?:\s+(?:now|from\s+now\s+on|going\s+forward|then))?$", re.IGNORECASE)
#: what stands before "for my X" and is no value: a verb, a thanks, a judgement ("thanks for my refund", "great for my back")
NOT_A_VALUE_FOR = re.compile(
    r"(?:\w+ing|\w+ed|a|an|the|some|my|your|his|her|their|our|its|thanks|thank|thx|ta|good|great|perfect|fine|bad|ok|okay|enough|ready|same|better|worse|best|nothing|"
    r"something|anything|everything|all|none|this|that|these|those|time|room|space|money|help|sorry|happy|wait|look|ask|pay|"
    r"apply|call|search|went|go|come|came|here|there|one|much|more|less|too|so|just|only|also|even|still|what|which|who|"
    r"please|pls|kindly|find|see|check|get|bring|buy|need|want|got|have|keep|make|take|give|send|use|try|let|book|order|read|"
    r"write|leave|points?|things?|stuff|notes?|details?|info)\b",
    re.IGNORECASE)
UPDATE_MY = re.compile(r"\b(?:update|change|correct|amend|fix)\s+my\s+" + ADJ + SLOT + r"(?:\s+(?:please|pls|for\s+me))?$", re.IGNORECASE)
OWNED_FOR_ME = re.compile(r"^(?:(?:ok|okay|k|so|sure|yes|yeah|yep|and)\s+)*(?:the\s+)?" + SLOT + r"\s+(?:is|'s|’s)\s+"
                           r"(?P<value>.+?)\s+for\s+me$", re.IGNORECASE)  # "k so X is V for me"
NOT_MY_ANYMORE = re.compile(r"^(?!my\s)(?P<old>.{1,40}?)\s+(?:isn't|isn’t|is\s+not|is\s+no\s+longer|stopped\s+being)\s+my\s+" + ADJ
                             + SLOT + r"(?:\s+(?:any\s*more|any\s+longer))?$", re.IGNORECASE)
CHANGED_MY = re.compile(r"^(?:(?:also|so|and|just|ok|okay|last\s+\w+|yesterday|today|this\s+\w+|please|pls|kindly)\s+)*(?:i(?:'ve|\s+have)?\s+)?(?:had\s+to\s+|have\s+to\s+|just\s+|finally\s+|"
                         r"went\s+ahead\s+and\s+|(?:i\s+)?decided\s+to\s+)?"
                         r"(?:change|changed|update|updated|switch|switched|swap|swapped|replace|replaced|reset|went\s+back\s+to|mistyped|misspelled|"
                         r"typed\s+wrong|got\s+wrong|had\s+wrong|sorted(?:\s+out)?)(?:\s+over)?\s+my\s+"
                         r"(?:old\s+)?" + SLOT + r"(?:\s+out)?(?:\s+(?:today|yesterday|again|this\s+week|last\s+week|recently|after\s+all|at\s+last))?$", re.IGNORECASE)
STOPPED_BEING = re.compile(r"^my\s+" + ADJ + SLOT + r"\s+stopped\s+being\s+(?P<old>.+)$", re.IGNORECASE)
NAMED_AFTER = re.compile(r"^(?P<body>.+?)\s*\((?:that(?:'s|’s|\s+is)\s+)?my\s+" + ADJ + SLOT + r"\)$", re.IGNORECASE)
ARROW_FOR_MY = re.compile(r"^(?P<old>.+?)\s*(?:→|->)\s*(?P<value>.+?)\s+(?:for|as)\s+my\s+" + ADJ + SLOT + r"$", re.IGNORECASE)  # "that'd be V (my X)"
PAREN_MY = re.compile(r"^my\s+" + ADJ + SLOT + r"\s*\((?P<value>[^()]{1,40})\)\s+(?:is\s+the\s+one|is\s+still|stays|"
                       r"hasn't\s+changed|remains|is\s+current|is\s+right)\b.*$", re.IGNORECASE)
LABEL_SWAP = re.compile(r"^(?:swapped|switched|changed|traded|moved)\s+(?:from\s+)?(?P<old>.+?)\s+(?:for|to|with)\s+(?P<value>.+)$",
                         re.IGNORECASE)
OUT_IN = re.compile(r"^out\s+with\s+(?P<old>.+?),?\s+in\s+with\s+(?P<value>.+?)\s+(?:for|as)\s+my\s+" + ADJ + SLOT + r"$",
                     re.IGNORECASE)
OUT_OLD = re.compile(r"^out\s+with\s+the\s+old\s+" + SLOT + r",?\s+in\s+with\s+(?:the\s+new(?:\s+one)?\s*[:,]?\s*)?"
                      r"(?P<value>.+)$", re.IGNORECASE)
REMEMBER_BEING = re.compile(r"\b(?:remember|recall)\s+(?:when\s+)?(?:i\s+(?:said|told\s+you|mentioned)\s+(?:that\s+)?)?my\s+" + ADJ + SLOT
                             + r"\s+(?:being|was|used\s+to\s+be)\s+(?P<old>.+)$", re.IGNORECASE)
TERSE = re.compile(r"^(?:my\s+)?" + ADJ + SLOT + r"\s+(?:now|is\s+now)\s*(?:==?|:)?\s+(?P<value>.+)$", re.IGNORECASE)
NOTED = re.compile(r"^(?:the\s+)?" + SLOT + r"\s+(?:is|'s|’s|==?)\s+(?:now\s+)?(?P<value>.+)$", re.IGNORECASE)
OWNED_ALONE = re.compile(r"^(?:(?:so|and|oh|ok|okay|well|also|yeah|now|then)\s+)*my\s+" + ADJ + SLOT
                         + r"(?:\s+(?:lol|haha+|btw|though|tho))*$", re.IGNORECASE)
OF_ME_CHANGED = re.compile(
    r"^the\s+" + ADJ + SLOT + r"\s+of\s+(?:me|mine)\s+(?:has\s+been|have\s+been|was|got|is|has)\s+"
    r"(?:changed|updated|modified|switched|moved)$", re.IGNORECASE)
MY_ISNT = re.compile(r"my\s+" + ADJ + SLOT + r"\s+(?:isn't|isn’t|is\s+not|isnt|wasn't|was\s+not|ain't)\s+(?P<old>.+)$",
                      re.IGNORECASE)
NEW_ALONE = re.compile(r"^(?:my\s+)?new\s+" + SLOT + r"\s+(?:just\s+dropped|alert|incoming|unlocked|update|day|time|who\s+dis)$",
                        re.IGNORECASE)
FOR_MY_I = re.compile(
    r"^(?:for|as\s+for|with|re|regarding)\s+my\s+" + ADJ + SLOT + r",?\s+(?:i|i'm|i've|i\s+have|we)\s+(?:(?:usually|always|now|just)\s+)?"
    r"(?:go\s+with|use|have|got|picked|chose|went\s+with|settled\s+on|stick\s+with|opted\s+for|put|put\s+down)\s+"
    r"(?P<value>.+)$", re.IGNORECASE)
REPLACE_MY = re.compile(
    r"\b(?:replace|swap|substitute|overwrite)\s+my\s+" + ADJ + SLOT + r"(?:\s+currently\s+on\s+file|\s+on\s+file|"
    r"\s+in\s+your\s+(?:records|notes|system))?\s+with\s+(?P<value>.+)$", re.IGNORECASE)
ASKED_SLOT = re.compile(r"^(?:oh,?\s+|and\s+|also\s+|ah,?\s+|right,?\s+|as\s+for\s+|re\s+|about\s+|what\s+about\s+|"
                         r"(?:you|u)\s+(?:wanted|asked\s+(?:for|about)|needed|need|want)\s+|(?:(?:can|could|will|would)\s+(?:you|u)\s+)?(?:remember|recall|note|save)\s+)*"
                         r"(?:my\s+|your\s+|the\s+)?" + ADJ
                         + SLOT + r"$", re.IGNORECASE)
GOT_SORTED = re.compile(
    r"\b(?:got|had|have|'ve|’ve|finally\s+got|just\s+got)\s+my\s+" + ADJ + SLOT + r"\s+(?:sorted(?:\s+out)?|fixed|"
    r"changed|updated|switched|moved|redone|reassigned|replaced|renewed|reset|upgraded|downgraded)(?:\s+\w+)?$",
    re.IGNORECASE,
)
FILLER = r"(?:\s+(?:lol|haha+|pls|please|thx|thanks|btw|fyi|rn|now|ok|okay|tho|lmao|xd|:\)|😅|🙏|😎))*"
I_MEANT = re.compile(
    r"\bi\s+(?:meant|mean|ment)\s+(?P<value>.+?)(?:\s*,?\s+not\s+(?P<old>.+?))?\s+(?:for|as)\s+my\s+" + ADJ + SLOT
    + FILLER + r"$",
    re.IGNORECASE,
)
NEW_DROPPED = re.compile(
    r"^(?:(?:ok|okay|so|and)\s+)?(?:my\s+)?new\s+" + SLOT + r"\s+(?:just\s+dropped|alert|incoming|unlocked|update|"
    r"who\s+dis)\s*[:!\-–—]*\s+"
    r"(?P<value>.+)$",
    re.IGNORECASE,
)
ABOUT_MY = re.compile(
    r"^(?:on\s+the\s+subject\s+of|speaking\s+of|talking\s+of|talking\s+about|speaking\s+about|when\s+it\s+comes\s+to|in\s+terms\s+of|with\s+regard\s+to|"
    r"with\s+respect\s+to|what\s+about|now\s+for|and\s+for|as\s+far\s+as|as\s+(?:for|to|regards)|about|regarding|"
    r"re|concerning|on|for|with)\s+(?:my\s+|the\s+)?" + ADJ + SLOT + r"(?:\s+(?:goes|is\s+concerned))?$", re.IGNORECASE)
VALUE_FIRST = re.compile(
    r"^(?:(?:yeah|yep|yes|so|well|ok|okay|oh|and|also|anyway|plus|mhm|btw|fyi)\s+)*(?P<value>[^\s].{0,40}?)\s+(?:is|'s|’s|has\s+(?:always\s+|long\s+)?been|remains|"
    r"is\s+still|'s\s+still|’s\s+still|is\s+(?:correct|right|still\s+(?:correct|right))\s+for)\s+(?:now\s+|currently\s+|officially\s+|once\s+again\s+|again\s+)?my\s+" + ADJ + SLOT
    + SLOT_TAIL + r"$",
    re.IGNORECASE,
)
USE_AS = re.compile(
    r"\bi(?:'m|’m|\s+am|'ve|’ve|\s+have)?(?:\s+now|\s+currently|\s+just|\s+recently|\s+finally)?(?:\s+been)?\s+"
    r"(?:have|use|using|got|gotten|picked|chose|chosen|went\s+with|go\s+with|going\s+with|sticking\s+with|settled\s+on|opted\s+for|"
    r"put\s+down|registered|entered|listed|gave|give|set)\s+(?P<value>.+?)\s+(?:as|for)\s+my\s+" + ADJ + SLOT
    + r"(?:\s+(?:now|these\s+days|nowadays|currently))?$",
    re.IGNORECASE,
)
LABEL = re.compile(r"^(?:my\s+)?" + ADJ + r"(?P<slot>(?=\S*[^\W\d_])[^\W_][\w\-()]*(?:[ ][\w\-()]+){0,3})\s*(?P<sep>[:=])(?![=>])\s*"
                    r"(?P<value>\S.*)$", re.IGNORECASE)
BARE_CHANGE = re.compile(r"^(?:the\s+)?" + SLOT + r"\s+" + CHANGE_VERB + FROM + TO + r"(?P<value>.+)$",
                          re.IGNORECASE)
ANAPHOR = re.compile(
    r"^(?:and\s+|so\s+|but\s+|now\s+)?(?:"
    r"(?:it|that)(?:'s|’s|\s+is|\s+has|s)\s+(?:now\s+)?(?:been\s+)?(?:actually\s+)?(?!(?:been\s+)?(?:changed|updated|switched|moved)\s+to\b)|"
    r"now\s+(?:is|it's)\s+|is\s+(?:now\s+)?(?=\S+(?:\s+\S+){0,5}\s+now$)|"
    r"(?:it|that)\s+(?:was\s+|has\s+|have\s+|been\s+|got\s+|just\s+|now\s+)*(?:(?:changed|updated|switched|moved)\s+to\s+|(?:became|went\s+to)\s+)|"
    r"now(?:\s+it(?:'s|’s|\s+is))?\s+|"
    r"(?:the\s+)?new\s+one(?:'s|’s|\s+is|:)\s*|"
    r"(?:these\s+days|nowadays|currently|today)\s+it(?:'s|’s|\s+is)\s+|"
    r"(?:it\s+)?should\s+(?:be|say|read)\s+|mine(?:'s|’s|\s+is)\s+(?:now\s+)?|it\s+(?:reads|says)\s+|which(?:'s|’s|\s+is)\s+|"
    r"(?:it|that)(?:'s|’s|\s+is)\s+back\s+to\s+|back\s+to\s+|(?:it\s+)?went\s+back\s+to\s+|now\s+at\s+|"
    r"(?:and\s+)?(?:the\s+)?(?:new|current|updated)\s+(?:one|value)\s+(?:is|=|:)\s*|the\s+answer\s+is\s+|its\s+|"
    r"it\s+is\s+|(?:now\s+)?it'?s\s+|(?:i(?:'ve|’ve|\s+have)?\s+)?(?:replaced|swapped|switched)\s+it\s+(?:with|for|to)\s+|"
    r"(?:i\s+)?went\s+with\s+|i(?:'ve|’ve|\s+have)\s+got\s+|i\s+(?:finally\s+)?settled\s+on\s+|i(?:'ve|’ve|\s+have)\s+(?:gone|switched|moved)\s+(?:with|to)\s+"
    r")(?P<value>.+?)(?:\s+instead)?$",
    re.IGNORECASE,
)

POLITE = re.compile(
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
CONJUNCTION = re.compile(r"\b(?:and|but|then|anyway|anyways|yeah|yep|so|plus|also|ok|okay|well|oh|lol|haha)\b", re.IGNORECASE)
LEAD_PHRASES = re.compile(
    r"\b(?:in\s+another\s+life|in\s+an?\s+(?:ideal|perfect|better)\s+world|in\s+my\s+dreams?|one\s+day|some\s*day|"
    r"next\s+(?:year|month|week|time)|in\s+the\s+future|eventually\s+(?:i'll|i\s+will|it\s+will)|ideally|hypothetically|theoretically|in\s+theory|"
    r"if\s+only|what\s+if|pretend|imagine|about\s+to|(?:need|needs|have|has|want|wants|hope|hoping|plan|planning|trying|try|"
    r"supposed|meant|expected|due|likely|going)\s+to)\b",
    re.IGNORECASE,
)
