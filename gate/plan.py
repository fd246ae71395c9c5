"""A turn planned once, before any model is called, and its model responses judged. Pure.

`plan_turn` reads the turn once: its words with their captions, cleaned by
the source's policy (`clean_text` runs once per text), whether the source
is remembered, and whether the admission rule (`gate.admission`) sends the
turn to the summarizer. The application calls the summarizer only when
the plan says so and asks `review` whether a response may become memory,
so it never parses a summary itself; `decide` takes the plan as part of
`RecordTurn` and never decides admission again.

`seal_keys` names the key that seals each event of a commit (the names are
`gate.erasure`'s), handed to `Ledger.append` as data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ledgermem.gate.admission import gate_verdict, remembered
from ledgermem.gate.commands import Turn, TurnPlan
from ledgermem.gate.erasure import seal_key
from ledgermem.gate.summary_format import NONE_UPDATE, parse_summary
from ledgermem.gate import validation
from ledgermem.ledger.events import Event
from ledgermem.projections.render import clean_text
from ledgermem.projections.state import EpisodeState


def plan_turn(state: EpisodeState, turn: Turn) -> TurnPlan:
    """The turn read once: cleaned words, remembered or not, admitted to the summarizer or not."""
    cfg = state.config
    user, agent = turn.seen_user, turn.seen_agent
    said = clean_text(cfg, turn.source, user)
    return TurnPlan(
        turn=turn, user=said, agent=clean_text(cfg, turn.source, agent),
        grounds=clean_text(cfg, turn.source, f"{user}\n{agent}"),
        remember=remembered(cfg, turn.source), gated=gate_verdict(cfg, said, turn.source),
    )


def reasons_against(state: EpisodeState, plan: TurnPlan, response: str) -> tuple[str, ...]:
    """Why `response` may not become the planned turn's memory (empty: it may). NONE and empty responses
    write nothing and are never refused."""
    if response.strip().upper() == NONE_UPDATE or parse_summary(response) is None:
        return ()
    return validation.validate_summary(state, response, turn=plan.turn.turn, user=plan.user, agent=plan.agent)


@dataclass(frozen=True, slots=True)
class Review:
    """What the gate makes of one model response before it is decided on.

    `reasons`: why it may not become memory (empty: it may); `feedback`:
    the reasons as sentences a model can act on; `tagless`: it may become
    memory but is a summary without an `[OVERRIDES: ...]` tag.
    """

    reasons: tuple[str, ...]
    feedback: str
    tagless: bool


def review(state: EpisodeState, plan: TurnPlan, response: str) -> Review:
    """The gate's reading of a response meant as the planned turn's memory update (for the application's
    retries: `decide` judges the calls it is given on its own)."""
    reasons = reasons_against(state, plan, response)
    if reasons:
        return Review(reasons, validation.describe(reasons), tagless=False)
    draft = parse_summary(response)
    return Review((), "", tagless=draft is not None and not draft.has_overrides_tag)


def seal_keys(prefix: str, events: Sequence[Event]) -> list[str | None]:
    """The keys of a commit's events, in order, for `Ledger.append(keys=...)`: the erasure policy's `seal_key`
    of each (its index title's, its merge's, else its turn's)."""
    return [seal_key(prefix, e) for e in events]
