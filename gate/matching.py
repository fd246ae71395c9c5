"""Normalised string match: how answers are judged against gold values, and how I4 compares values.

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
        # No word spaces in Chinese: a substring, but an edge that is a digit or a Latin letter must not
        # continue one in the answer (the gold `3楼` is not in `13楼`).
        g, a = g.replace(" ", ""), a.replace(" ", "")
        head = r"(?<![0-9a-z])" if re.match(r"[0-9a-z]", g) else ""
        tail = r"(?![0-9a-z])" if re.search(r"[0-9a-z]$", g) else ""
        return re.search(head + re.escape(g) + tail, a) is not None
    return re.search(rf"(?<![0-9a-z]){re.escape(g)}(?![0-9a-z])", a) is not None
