"""Judging answers by normalised string match.

Both sides are NFKC-normalised, lowercased and stripped of punctuation; the
gold value must equal the answer or stand in it as a whole token (so the
gold `3F` does not match an answer `13F`).
"""

from __future__ import annotations

import re
import unicodedata

_PUNCT = re.compile(r"[\s\.,;:!?'\"“”‘’。，；：！？、（）()\[\]{}<>《》]+")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_PUNCT.sub(" ", text).split())


def judge_string(gold: str, answer: str) -> bool:
    g, a = normalise(gold), normalise(answer)
    if not g:
        return False
    if g == a:
        return True
    if re.search(r"[\u3400-\u9fff]", g):
        return g.replace(" ", "") in a.replace(" ", "")
    return re.search(rf"(?<![0-9a-z]){re.escape(g)}(?![0-9a-z])", a) is not None
