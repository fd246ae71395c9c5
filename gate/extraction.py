"""I4, extraction completeness: what a stream's summaries captured, against what its turns held. Pure.

What I4 compares against, per stream, in this order:

    gold facts      the dataset's planted facts (record, slot, value) recorded in the stream's `episode_gold`
                    event (seed `facts`, the synthetic generator's)
    gold evidence   the records the dataset names as evidence, without slot or value (LoCoMo evidence dia_ids,
                    LongMemEval `has_answer` turns), recorded in the same event
    lexical detector  only where the stream has no gold: the high-precision detector over the user's own turns
    nothing         none of these yields anything: recall is None (n/a), never 1.0, and no floor applies

Captured means:

    gold fact       a summary written from the fact's record (the record is among its raw ids), whatever
                    became of it since (active, indexed, archived by an override, merged away), holds the
                    slot with the value: slot names compared after `normalise_slot` and the judge's
                    normalisation, the value as the string judge matches it (`gate.matching.contains_value`).
                    A slot of that summary erased since by an event counts as captured. Tied to the record,
                    not to any summary of the stream: a value stated again later (A -> B -> A) does not make
                    up for the first statement's loss.
    gold evidence   some summary, whatever its status, lists the record among its raw ids
    detected fact   some summary of the stream holds slot=value (both normalised)

Not compared: records not recorded yet (an audit as of an earlier seq), records erased, records of a source
the configuration says not to remember. A gold fact whose value cannot be read (erased with its key, or an
export read without the key store) is compared as evidence of its record.

Violations: with gold, every record of which nothing was captured (none of its gold facts, or for evidence no
summary at all) is a violation naming the record (and the slots), floor or no floor. The floor, when given and
when something was compared, turns a recall under it into one more violation that lists every gap.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledgermem.gate.attributes import AttributeTable, table_for
from ledgermem.gate.lexicon import detect_facts, normalise_slot
from ledgermem.gate.matching import contains_value, normalise
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeGold
from ledgermem.ledger.keys import ERASED, SEALED
from ledgermem.projections.state import EpisodeState, Summary, record_id_for

__all__ = ["Extraction", "Gold", "GoldFact", "gold_of", "measure_extraction"]


@dataclass(frozen=True, slots=True)
class GoldFact:
    record_id: str
    slot: str
    value: str


@dataclass(frozen=True, slots=True)
class Gold:
    """What the dataset says a stream's turns held: facts with slot and value, and bare evidence records."""

    facts: tuple[GoldFact, ...] = ()
    evidence: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.facts or self.evidence)


def gold_of(events: Iterable[Event]) -> Gold:
    """The gold recorded in a stream's `episode_gold` events (normally one)."""
    facts: list[GoldFact] = []
    evidence: dict[str, None] = {}
    for e in events:
        if isinstance(e, EpisodeGold):
            facts += [GoldFact(record_id_for(turn), slot, value) for (slot, value), turn in zip(e.facts, e.fact_turns)]
            evidence.update(dict.fromkeys(e.evidence))
    return Gold(tuple(dict.fromkeys(facts)), tuple(evidence))


@dataclass(frozen=True, slots=True)
class Extraction:
    """One stream's I4 comparison: against what, how much, what was missed."""

    against: str  # "gold" | "lexical detector" | "nothing"
    facts: int = 0  # gold facts compared
    evidence: int = 0  # gold evidence records compared (records without a readable gold fact)
    detected: int = 0  # detector findings compared
    captured: int = 0
    skipped: int = 0  # gold items not compared: not recorded yet, erased, or of a source not remembered
    gaps: tuple[str, ...] = ()  # "r0003:office floor" (a fact) or "r0003" (an evidence record)
    missed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # gold records nothing was captured from, with their slots

    @property
    def compared(self) -> int:
        return self.facts + self.evidence + self.detected

    @property
    def recall(self) -> float | None:
        return round(self.captured / self.compared, 4) if self.compared else None

    @property
    def source(self) -> str:
        """What was compared against, as a fixed word for machines."""
        if self.against != "gold":
            return self.against
        kinds = [k for k, n in (("gold facts", self.facts), ("gold evidence", self.evidence)) if n]
        return " and ".join(kinds) or "nothing"

    def label(self) -> str:
        """What was compared against, for people: "gold facts (11)", "lexical detector (4)", ..."""
        parts = [f"gold facts ({self.facts})" if self.facts else "",
                 f"gold evidence ({self.evidence} records)" if self.evidence else "",
                 f"lexical detector ({self.detected})" if self.against == "lexical detector" else ""]
        if any(parts):
            return " + ".join(p for p in parts if p)
        return f"nothing to compare ({self.skipped} gold items not recorded yet, erased or not remembered)" \
            if self.skipped else "nothing to compare"

    def as_dict(self) -> dict[str, Any]:
        return {"against": self.label(), "source": self.source, "compared": self.compared, "captured": self.captured,
                "recall": self.recall, "skipped": self.skipped, "gaps": list(self.gaps),
                "missed_records": [rid for rid, _ in self.missed]}


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _slot(text: str, table: AttributeTable | None = None) -> str:
    """A slot name as compared: under its canonical name when the stream's attribute table knows it."""
    known = table.canonical(text) if table is not None else None
    return normalise(normalise_slot(known or text))


def _table(state: EpisodeState) -> AttributeTable:
    return table_for(state.config.attribute_table, state.config.slot_aliases)


def _unreadable(value: str) -> bool:
    return value in (ERASED, SEALED)


def _comparable(state: EpisodeState, record_id: str) -> bool:
    rec = state.raw.get(record_id)
    return rec is not None and rec.remember and rec.user != ERASED


def _holds(summary: Summary, fact: GoldFact, table: AttributeTable) -> bool:
    slot = _slot(fact.slot, table)
    return any(_slot(k, table) == slot and (v == ERASED or contains_value(fact.value, v)) for k, v in summary.facts)


def _records(state: EpisodeState, gold: Gold) -> tuple[dict[str, list[GoldFact]], int]:
    """Gold record -> its readable gold facts (none: compared as evidence), and how many items were skipped."""
    by_record: dict[str, list[GoldFact]] = {}
    skipped = 0
    for rid, fact in [*((f.record_id, f) for f in gold.facts), *((rid, None) for rid in gold.evidence)]:
        if not _comparable(state, rid):
            skipped += 1
            continue
        facts = by_record.setdefault(rid, [])
        if fact is not None and not _unreadable(fact.value) and fact not in facts:
            facts.append(fact)
    return by_record, skipped


def _against_gold(state: EpisodeState, gold: Gold) -> Extraction:
    by_record, skipped = _records(state, gold)
    table = _table(state)
    written: dict[str, list[Summary]] = {}
    for s in state.summaries.values():
        for rid in s.raw_ids:
            written.setdefault(rid, []).append(s)
    n_facts = n_evidence = captured = 0
    gaps: list[str] = []
    missed: list[tuple[str, tuple[str, ...]]] = []
    for rid, facts in sorted(by_record.items()):
        from_record = written.get(rid, [])
        if facts:
            got = [f for f in facts if any(_holds(s, f, table) for s in from_record)]
            n_facts, captured = n_facts + len(facts), captured + len(got)
            gaps += [f"{rid}:{f.slot}" for f in facts if f not in got]
            if not got:
                missed.append((rid, tuple(dict.fromkeys(f.slot for f in facts))))
        else:  # evidence, or gold facts whose values cannot be read: some summary must be written from it
            n_evidence += 1
            captured += bool(from_record)
            if not from_record:
                gaps.append(rid)
                missed.append((rid, ()))
    return Extraction("gold", facts=n_facts, evidence=n_evidence, captured=captured, skipped=skipped,
                      gaps=tuple(gaps), missed=tuple(missed))


def _against_detector(state: EpisodeState) -> Extraction:
    table = _table(state)
    captured = {(_norm(table.canonical(k) or k), _norm(v)) for s in state.summaries.values() for k, v in s.facts}
    found, gaps = 0, []
    for r in state.raw.values():
        if r.user == ERASED or not r.remember:  # a source the configuration says not to remember
            continue
        for m in detect_facts(r.user):
            found += 1
            if (_norm(table.canonical(m.slot) or m.slot), _norm(m.value)) not in captured:
                gaps.append(f"{r.record_id}:{m.slot}")
    if not found:
        return Extraction("nothing")
    return Extraction("lexical detector", detected=found, captured=found - len(gaps), gaps=tuple(gaps))


def measure_extraction(state: EpisodeState, gold: Gold | None = None) -> Extraction:
    """The stream's extraction, against its gold where it has any, else against the lexical detector."""
    if gold:
        found = _against_gold(state, gold)
        if found.compared or found.skipped:
            return found
    return _against_detector(state)
