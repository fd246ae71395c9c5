"""Capacity: keep the rendered chain inside its budget, `index` strategy.

Pressure with hysteresis (seed 002): nothing happens until the chain passes
`high_water` of its budget; then titles are put over the oldest
un-indexed summaries until it is back under `low_water`. Never indexed: the
summary created this turn and the newest summary of any slot. Members stay
readable by id (`expand_index`, `get_archived_summary`). A title that does
not make the chain cheaper stops the loop instead of spinning.
"""

from __future__ import annotations

from ledger.events import IndexCreated
from projections.render import chain_tokens
from projections.state import EpisodeState, Summary, evolve


def _span(members: list[Summary]) -> str:
    lo, hi = min(s.turn for s in members), max(s.turn for s in members)
    return f"turn {lo}-{hi}" if lo != hi else f"turn {lo}"


def _title(members: list[Summary], max_chars: int) -> str:
    digest: dict[str, str] = {}
    for s in members:
        digest.update(dict(s.facts))
    body = "; ".join(f"{k}={v}" for k, v in digest.items())
    return f"INDEX {_span(members)}: {body}"[:max_chars]


def plan_index(state: EpisodeState, *, turn: int, protect: frozenset[str]) -> tuple[IndexCreated, ...]:
    """Index events that bring the chain under the low-water mark, if it is over the high one."""
    cfg = state.config
    tokens = chain_tokens(state)
    if tokens <= cfg.high_water * cfg.chain_budget:
        return ()
    events: list[IndexCreated] = []
    while tokens > cfg.low_water * cfg.chain_budget:
        keep = protect | state.newest_holders()
        candidates = [s for s in state.active_chain() if s.summary_id not in keep]
        if len(candidates) < 2:
            break
        group = candidates[: cfg.index_group_size]
        event = IndexCreated(
            turn=turn, index_id=state.next_index_id(), members=tuple(s.summary_id for s in group),
            text=_title(group, cfg.index_title_max_chars), span=_span(group), tokens_before=tokens,
        )
        after = evolve(state, event)
        after_tokens = chain_tokens(after)
        if after_tokens >= tokens:
            break  # the title costs what it replaces: stop rather than loop
        event = IndexCreated(
            turn=event.turn, index_id=event.index_id, members=event.members, text=event.text,
            span=event.span, tokens_before=tokens, tokens_after=after_tokens,
        )
        events.append(event)
        state, tokens = evolve(state, event), after_tokens
    return tuple(events)
