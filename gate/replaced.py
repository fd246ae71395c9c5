"""The value an update says it replaced: "no longer A, it's V now", "from A to V", "A → V", "从A换到V". Pure.

`detect_facts` reports an update by its new value. When the turn that said
the new value also named the old one, that old value is the answer to
"what was it before V?" even if the turn that first stated it was never
read as a fact. `replaced_value(text, value)` finds it next to `value` in
the text the user wrote (a raw record, read by its exact id), or None.
"""

from __future__ import annotations

import re

__all__ = ["replaced_value"]

# The old value: a short span with no sentence punctuation and no clause of its own.
_OLD = r"(?P<old>[^\s,;.!?，。；！？:：→>][^,;!?，。；！？\n]{0,38}?)"
# The old value up to the punctuation that closes it: "no longer A, …", "不再是A，…".
_OLD_TO_PUNCT = r"(?P<old>[^\s,;.!?，。；！？][^,;!?，。；！？—–\n]{0,38}?)(?=\s*(?:[,;，；—–]|\s-\s))"
_PUNCT_END = r"\s*(?:[,;，；—–]|\s-\s)\s*"


def _patterns(value: str) -> list[re.Pattern[str]]:
    new = re.escape(value)
    return [re.compile(p, re.IGNORECASE) for p in (
        # "from A to V", "changed it from A to V", "从A换到V", "由A改成V"
        rf"\bfrom\s+{_OLD}\s+(?:to|into|over\s+to)\s+(?:the\s+)?{new}",
        rf"[从由]{_OLD}(?:改成|换成|变成|调到|换到|改到|搬到|升到|降到|到){new}",
        # "A → V", "A -> V", "A => V"
        rf"{_OLD}\s*(?:→|->|=>|⇒|➡️?)\s*{new}",
        # "no longer A, it's V", "not A any more — V", "不再是A，现在是V"
        rf"\bno\s+longer\s+(?:is\s+|be\s+)?{_OLD_TO_PUNCT}{_PUNCT_END}(?:(?:it's|it’s|it\s+is|now|but|and|it)\s+)*[^.!?\n]{{0,20}}?{new}",
        rf"\bnot\s+{_OLD}\s+any\s*more{_PUNCT_END}[^.!?\n]{{0,24}}?{new}",
        rf"不再是{_OLD_TO_PUNCT}[，,；;\s]*(?:现在|目前|而)?(?:是|改成|换成)?[^。！？\n]{{0,8}}?{new}",
        # "V instead of A", "V rather than A", "V, not A"
        rf"{new}\s+(?:now\s+)?(?:instead\s+of|rather\s+than|in\s+place\s+of|replacing)\s+{_OLD}(?=\s*(?:now\b|$|[,;.!?]))",
        rf"{new}[，,]\s*(?:而)?不是{_OLD}(?=$|[，,。！？；;])",
    )]


def replaced_value(text: str, value: str, slot: str = "") -> str | None:
    """The value `text` says `value` replaced, or None when it names none (or only `value` itself).

    With `slot`, a span that begins with the slot's name ("bike lock code 4471 → 9020") keeps what follows it.
    """
    if not value or value not in text:
        return None
    flat = " ".join(text.split())
    for pattern in _patterns(value):
        m = pattern.search(flat)
        if m is None:
            continue
        old = re.split(r":\s|：", m.group("old"))[-1]  # "desk: 3F -> 7F": the field's name is not the value
        at = old.lower().rfind(slot.lower()) if slot else -1
        if at >= 0:
            old = old[at + len(slot):]
        old = old.strip(" \"'“”‘’「」()（）")
        old = re.sub(r"^(?:my\s+|the\s+|it\s+|is\s+)+", "", old, flags=re.IGNORECASE).strip()
        if old and old.lower() != value.lower() and value not in old and len(old) <= 40:
            return old
    return None
