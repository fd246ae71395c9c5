"""Provenance: a summary's claim is a fact only when the raw turn grounds it. Pure.

A claim `slot=value` is grounded when its value appears in the turn the
summary was written from (the user's words or the reply, compared without
case, spacing or punctuation). Ungrounded claims are kept as inferences:
stored, shown as unverified, never in the registry and never authoritative.
At gate level `strict` a claim must also be one the lexical detector found
in the user's words.
"""

from __future__ import annotations

import re

from ledgermem.gate.attributes import AttributeTable, attribute_key
from ledgermem.gate.lexicon import detect_facts, normalise_slot
from ledgermem.projections.events import Fact

_NOISE = re.compile(r"[\s\"'“”‘’「」『』.,;:!?。，；：！？()（）]+")


def _norm(text: str) -> str:
    return _NOISE.sub("", text).casefold()


def split_provenance(facts: tuple[Fact, ...], grounds: str, *, strict: bool, user: str,
                     table: AttributeTable | None = None) -> tuple[tuple[Fact, ...], tuple[Fact, ...]]:
    """(facts, inferences): the claims the turn grounds, and the rest. With an attribute table, a
    detected slot and a claimed one are compared under their canonical names."""
    ground = _norm(grounds)

    def name(slot: str) -> str:
        return attribute_key(table.canonical(slot) or slot) if table is not None else normalise_slot(slot)

    detected = {name(f.slot) for f in detect_facts(user)} if strict else set()
    kept: list[Fact] = []
    inferred: list[Fact] = []
    for slot, value in facts:
        ok = bool(_norm(value)) and _norm(value) in ground
        if strict and name(slot) not in detected:
            ok = False
        (kept if ok else inferred).append((slot, value))
    return tuple(kept), tuple(inferred)
