"""The summary contract and its parser.

A summarizer answers either `NONE` (nothing worth remembering) or

    one line of summary
    [FACTS: slot=value; slot2=value2]
    [OVERRIDES: s0003, s0007 | none]

The parser is lenient about layout (tags anywhere, fullwidth punctuation,
short ids like `s3`) and strict about meaning: it never invents a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledger.events import Fact

_FACTS = re.compile(r"\[\s*FACTS\s*[:：]\s*(.*?)\]", re.IGNORECASE | re.DOTALL)
_OVERRIDES = re.compile(r"\[\s*OVERRIDES\s*[:：]\s*(.*?)\]", re.IGNORECASE | re.DOTALL)
_SUMMARY_ID = re.compile(r"^[sS]0*(\d+)$")
_NONE_WORDS = {"", "none", "无", "null", "n/a", "-"}


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryDraft:
    text: str
    facts: tuple[Fact, ...]
    overrides: tuple[str, ...]
    has_overrides_tag: bool


def normalise_summary_id(raw: str) -> str:
    m = _SUMMARY_ID.match(raw.strip())
    return f"s{int(m.group(1)):04d}" if m else raw.strip()


def parse_facts(body: str) -> tuple[Fact, ...]:
    facts: dict[str, str] = {}
    for chunk in re.split(r"[;；\n]", body):
        if "=" not in chunk:
            continue
        slot, _, value = chunk.partition("=")
        slot, value = slot.strip(), value.strip().rstrip("。.")
        if slot and value and slot.lower() not in _NONE_WORDS:
            facts.pop(slot, None)  # a later restatement wins and moves to the end
            facts[slot] = value
    return tuple(facts.items())


def parse_overrides(body: str) -> tuple[str, ...]:
    ids: list[str] = []
    for raw in re.split(r"[,，\s|]+", body):
        if raw.strip().lower() in _NONE_WORDS:
            continue
        sid = normalise_summary_id(raw)
        if sid not in ids:
            ids.append(sid)
    return tuple(ids)


def parse_summary(response: str) -> SummaryDraft | None:
    """The draft in a summarizer response, or None when it declares nothing to remember."""
    text = response.strip()
    if text.upper() == "NONE" or not text:
        return None
    facts_m, over_m = _FACTS.search(text), _OVERRIDES.search(text)
    facts = parse_facts(facts_m.group(1)) if facts_m else ()
    overrides = parse_overrides(over_m.group(1)) if over_m else ()
    prose = _OVERRIDES.sub(" ", _FACTS.sub(" ", text))
    prose = " ".join(prose.split())
    if not prose and not facts:
        return None
    return SummaryDraft(text=prose or "; ".join(f"{k}={v}" for k, v in facts), facts=facts,
                        overrides=overrides, has_overrides_tag=over_m is not None)


def format_summary(text: str, facts: tuple[Fact, ...], overrides: tuple[str, ...]) -> str:
    """The contract's own spelling of a draft (used by the heuristic backend)."""
    fact_body = "; ".join(f"{k}={v}" for k, v in facts)
    return f"{text}\n[FACTS: {fact_body}]\n[OVERRIDES: {', '.join(overrides) if overrides else 'none'}]"
