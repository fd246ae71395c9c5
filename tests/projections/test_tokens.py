"""The tokenizer keeps its counts while holding one copy of its BPE ranks (the Rust core's).

How much memory that saves is measured in benchmarks/ (`run_memory`); here: the
counts and heads are those of an encoding built whole, the Python copy is gone
only from the registered encoding, and the encoding still pickles.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from ledgermem.projections.tokens import (
    ESTIMATOR, _drop_python_ranks, _encoding, count_tokens, default_tokenizer, truncate_to_tokens,
)

TEXTS = (
    "My meeting moved to 2pm; the team is 6 people.",
    "我的会议改到下午两点，团队有六个人。",
    "<|endoftext|> is plain text here",
    "emoji 🙂 and a lone surrogate \ud800 end",
    "x" * 3000,
)

tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture(scope="module")
def name() -> str:
    tokenizer = default_tokenizer()
    if tokenizer == ESTIMATOR:
        pytest.skip("no tiktoken encoding loads on this machine")
    return tokenizer


def _whole(name: str) -> Any:
    """The same encoding built from its constructor, outside tiktoken's registry: its ranks stay in Python."""
    import tiktoken.registry

    tiktoken.get_encoding(name)  # the registry has found the constructors
    assert tiktoken.registry.ENCODING_CONSTRUCTORS is not None
    return tiktoken.Encoding(**tiktoken.registry.ENCODING_CONSTRUCTORS[name]())


def test_counts_and_heads_are_those_of_the_whole_encoding(name: str) -> None:
    whole = _whole(name)
    assert whole._mergeable_ranks  # the reference does hold the Python copy
    for text in TEXTS:
        assert count_tokens(text, name) == len(whole.encode(text, disallowed_special=()))
        tokens = whole.encode(text, disallowed_special=())
        for limit in (1, 5, 17):
            head = text if len(tokens) <= limit else whole.decode(tokens[:limit]).rstrip("\ufffd")
            assert truncate_to_tokens(text, limit, name) == head


def test_the_registered_encoding_holds_no_python_ranks_and_still_pickles(name: str) -> None:
    encoding = _encoding(name)
    assert tiktoken.get_encoding(name) is encoding
    assert not hasattr(encoding, "_mergeable_ranks")
    again = pickle.loads(pickle.dumps(encoding))  # a registered encoding pickles by name
    assert again.encode(TEXTS[0]) == encoding.encode(TEXTS[0])


def test_control_an_unregistered_encoding_keeps_its_ranks(name: str) -> None:
    whole = _whole(name)
    _drop_python_ranks(whole)  # not the registry's: dropping would break its pickling
    assert whole._mergeable_ranks
    again = pickle.loads(pickle.dumps(whole))
    assert again.encode(TEXTS[1]) == whole.encode(TEXTS[1])
