"""Normalised containment: does a text mention a value as a whole token. Pure.

Both sides are NFKC-normalised, lowercased and stripped of punctuation; the
value must equal the text or stand in it as a whole token (so the value `3F`
is not in `13F`). I4 compares captured facts with gold facts this way, and
the diagnostics ask it of memory (is a gold value in the prompt, in a
summary, in the raw turns); the string judge (`memory.matching`) is stricter.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["contains_value", "normalise"]

_PUNCT = re.compile(r"[\s\.,;:!?'\"“”‘’。，；：！？、（）()\[\]{}<>《》]+")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_PUNCT.sub(" ", text).split())


def contains_value(value: str, text: str) -> bool:
    """`value` equals `text` or stands in it as a whole token."""
    g, a = normalise(value), normalise(text)
    if not g:
        return False
    if g == a:
        return True
    if re.search(r"[\u3400-\u9fff]", g):
        # No word spaces in Chinese: a substring, but an edge that is a digit or a Latin letter must not
        # continue one in the text (the value `3楼` is not in `13楼`).
        g, a = g.replace(" ", ""), a.replace(" ", "")
        head = r"(?<![0-9a-z])" if re.match(r"[0-9a-z]", g) else ""
        tail = r"(?![0-9a-z])" if re.search(r"[0-9a-z]$", g) else ""
        return re.search(head + re.escape(g) + tail, a) is not None
    return re.search(rf"(?<![0-9a-z]){re.escape(g)}(?![0-9a-z])", a) is not None
