"""High-precision lexical detection of hard constraints and open loops, zh and en.

A constraint is a rule the user sets that must keep holding ("treat that as
a hard constraint", "never ...", "必须", "不得"); an open loop is an
unfinished task the user hands over ("remind me", "still need to", "提醒我",
"别忘了"). Both are pinned verbatim and never compressed, so a false
positive costs prompt space for the rest of the episode: the marker lists
are short and explicit. A question sets no constraint; it may still open a
loop ("can you remind me to call the bank?").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledgermem.gate.lexicon import is_question

__all__ = ["Commitment", "detect_commitments"]

_CONSTRAINT = re.compile(
    r"\bhard constraint\b|\bnon-negotiable\b|\bmust (?:never|not|always)\b|\bunder no circumstances\b"
    r"|\bnever (?:ever )?(?:touch|use|exceed|share|send|book|schedule|delete)\b"
    r"|硬性约束|必须|绝不|务必|不得|不许",
    re.IGNORECASE,
)
_OPEN_LOOP = re.compile(
    r"\bremind me\b|\bdon't let me forget\b|\bdo not let me forget\b|\bstill need to\b|\bfollow up on\b"
    r"|\bto-?do\b|\bpending\b"
    r"|提醒我|别忘了|不要忘了|待办|还没做|还需要",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Commitment:
    kind: str  # "constraint" | "open_loop"
    text: str  # the user's whole message, whitespace normalised: the verbatim form that is pinned


def detect_commitments(text: str) -> tuple[Commitment, ...]:
    """The constraint and/or open loop the message sets, at most one of each."""
    body = " ".join(text.split())
    if not body:
        return ()
    found: list[Commitment] = []
    if _CONSTRAINT.search(body) and not is_question(body):
        found.append(Commitment(kind="constraint", text=body))
    if _OPEN_LOOP.search(body):
        found.append(Commitment(kind="open_loop", text=body))
    return tuple(found)
