"""Disagreements between sources, as the model is shown them. Pure.

A slot's registry entry is the newest value, whoever gave it: recency
breaks the tie. When two sources (the `source` of the turns the summaries
were written from: an email, a calendar, the conversation itself) last
said different things about a slot, that tie-break is shown rather than
hidden: the answer and respond prompts carry one line per such slot
(`meeting time: sources disagree: calendar says 10am (turn 7); email says
9am (turn 3); the newest holds`), as data inside the memory block.

Only facts count (inferences are not claims of a source), erased values
never, and each source by the last value it gave. A turn with no source
counts as one source, "conversation": a dialogue without sources never
disagrees with itself, an update is not a disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledgermem.ledger.keys import ERASED
from ledgermem.projections.state import EpisodeState, Summary

NO_SOURCE = "conversation"


@dataclass(frozen=True, slots=True)
class Claim:
    source: str
    value: str
    turn: int
    summary_id: str


@dataclass(frozen=True, slots=True)
class Disagreement:
    slot: str
    claims: tuple[Claim, ...]  # one per source, newest first

    @property
    def line(self) -> str:
        said = "; ".join(f"{c.source} says {c.value} (turn {c.turn})" for c in self.claims)
        return f"{self.slot}: sources disagree: {said}; the newest holds"


def _source(state: EpisodeState, s: Summary) -> str | None:
    """The one source of the turns a summary was written from (None when they are several: a merge)."""
    sources = {state.raw[r].source or NO_SOURCE for r in s.raw_ids if r in state.raw}
    return next(iter(sources)) if len(sources) == 1 else None


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def source_disagreements(state: EpisodeState) -> tuple[Disagreement, ...]:
    """Every slot whose sources' last values differ, the most recently disputed first."""
    last: dict[str, dict[str, Claim]] = {}
    for s in state.summaries.values():  # creation order: a later claim of a source replaces its earlier one
        if s.merged_from or s.redacted:
            continue  # a merge restates its members' facts, which were counted with their own sources
        source = _source(state, s)
        if source is None:
            continue
        for slot, value in s.facts:
            if value != ERASED:
                last.setdefault(slot, {})[source] = Claim(source, value, s.turn, s.summary_id)
    found: list[Disagreement] = []
    for slot, by_source in last.items():
        claims = sorted(by_source.values(), key=lambda c: (-c.turn, c.source))
        if any(not _same(c.value, claims[0].value) for c in claims[1:]):
            found.append(Disagreement(slot, tuple(claims)))
    return tuple(sorted(found, key=lambda d: (-d.claims[0].turn, d.slot)))


def disagreement_lines(state: EpisodeState) -> tuple[str, ...]:
    return tuple(d.line for d in source_disagreements(state))
