"""Capacity: keep the rendered chain inside its budget. Two strategies, both pure.

Pressure with hysteresis (seed 002): nothing happens until the chain passes
`high_water` of its budget; then the pass compacts until the chain is back
under `low_water`. Never consumed: the summary created this turn and the
newest summary of any slot (the registry shows current values, and they
stay in the chain proper).

`index` (default) puts titles over the oldest un-indexed summaries; members
stay readable by id. When the titles themselves pass `index_fold_share` of
the budget, the oldest titles are folded under a higher-level title. Guards
against a runaway loop: at most `index_max_per_turn` titles or folds per
turn; a cost gate refuses a title that costs as much as what it replaces;
a monotonic progress check stops the pass when the chain did not get
cheaper; titles are capped at `index_title_max_chars`.

`merge` rewrites early, non-conflicting summaries into one (deterministic:
the members' texts joined, their evidence carried; the members go to the
archive with `merged_from` lineage on the new summary). A merge that does
not shrink the chain by `merge_min_gain` is rejected and counted.

Every pass ends with a report (`CompactionReport`), which `decide` turns
into a `compaction_checked` event after the survival checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ledgermem.projections.events import (
    CapacityMerged,
    IndexCreated,
    IndexFolded,
    MergeRejected,
    SummaryArchived,
    SummaryCreated,
)
from ledgermem.projections.render import chain_tokens, index_title, summary_line, title_tokens
from ledgermem.projections.state import EpisodeEvent, EpisodeState, Summary, evolve, fold
from ledgermem.projections.tokens import count_tokens, truncate_to_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionReport:
    strategy: str
    created: int
    rejected: int
    stopped: str
    tokens_before: int
    tokens_after: int


def _span_of_turns(turns: list[int]) -> str:
    lo, hi = min(turns), max(turns)
    return f"turn {lo}-{hi}" if lo != hi else f"turn {lo}"


def _span(members: list[Summary]) -> str:
    return _span_of_turns([s.turn for s in members])


def _title(members: list[Summary], max_chars: int) -> str:
    digest: dict[str, str] = {}
    for s in members:
        digest.update(dict(s.facts))
    body = "; ".join(f"{k}={v}" for k, v in digest.items())
    return f"INDEX {_span(members)}: {body}"[:max_chars]


def _under_pressure(state: EpisodeState) -> tuple[bool, int]:
    tokens = chain_tokens(state)
    return tokens > state.config.high_water * state.config.chain_budget, tokens


def plan_capacity(
    state: EpisodeState, *, turn: int, protect: frozenset[str]
) -> tuple[tuple[EpisodeEvent, ...], CompactionReport | None]:
    """The capacity events of this turn and the report of the pass (None when there was no pressure)."""
    pressed, tokens = _under_pressure(state)
    if not pressed:
        return (), None
    if state.config.chain_strategy == "merge":
        return plan_merge(state, turn=turn, protect=protect, tokens=tokens)
    return plan_index(state, turn=turn, protect=protect, tokens=tokens)


# -- index ---------------------------------------------------------------------------


def _index_candidates(state: EpisodeState, protect: frozenset[str]) -> list[Summary]:
    keep = protect | state.newest_holders()
    return [s for s in state.active_chain() if s.summary_id not in keep and not s.redacted]


def _next_title(state: EpisodeState, turn: int, protect: frozenset[str], tokens: int) -> IndexCreated | None:
    group = _index_candidates(state, protect)[: state.config.index_group_size]
    if len(group) < 2:
        return None
    return IndexCreated(
        turn=turn, index_id=state.next_index_id(), members=tuple(s.summary_id for s in group),
        text=_title(group, state.config.index_title_max_chars), span=_span(group), tokens_before=tokens,
    )


def _next_fold(state: EpisodeState, turn: int, tokens: int) -> IndexFolded | None:
    """Fold the oldest top-level titles of the lowest level under one higher-level title."""
    cfg = state.config
    if title_tokens(state) <= cfg.index_fold_share * cfg.chain_budget:
        return None
    top = state.top_indexes()
    if not top:
        return None
    level = min(e.level for e in top)
    group = [e for e in top if e.level == level][: cfg.index_group_size]
    if len(group) < 2:
        return None
    turns = [s.turn for e in group for s in state.index_summaries(e)]
    span = _span_of_turns(turns)
    return IndexFolded(
        turn=turn, index_id=state.next_index_id(), members=tuple(e.index_id for e in group),
        text=f"INDEX {span}: {len(group)} titles"[: cfg.index_title_max_chars], span=span, level=level + 1,
        tokens_before=tokens,
    )


def _replaced_cost(state: EpisodeState, event: IndexCreated | IndexFolded) -> tuple[int, int]:
    """(tokens of what the step hides, tokens of the title it shows instead)."""
    tok = state.config.tokenizer
    after = evolve(state, event)
    if isinstance(event, IndexCreated):
        hidden = sum(count_tokens(summary_line(state.summaries[m]), tok) for m in event.members)
    else:
        hidden = sum(count_tokens(index_title(state, state.indexes[m]), tok) for m in event.members)
    shown = count_tokens(index_title(after, after.indexes[event.index_id]), tok)
    return hidden, shown


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of a pass: events applied (with the state and chain cost after them), or why the pass stops."""

    events: tuple[EpisodeEvent, ...] = ()
    state: EpisodeState | None = None
    tokens_after: int = 0
    stop: str = ""
    rejected: int = 0  # counted refusals (the cost gate, the minimum gain)
    recorded: tuple[EpisodeEvent, ...] = ()  # events that record a refusal


def _compact(state: EpisodeState, strategy: str, tokens: int,
             next_step: Callable[[EpisodeState, int], _Step]) -> tuple[tuple[EpisodeEvent, ...], CompactionReport]:
    """Run steps until the chain is under low water, the per-turn cap is reached, or a step stops the pass."""
    cfg, start = state.config, tokens
    events: list[EpisodeEvent] = []
    created = rejected = 0
    while True:
        if tokens <= cfg.low_water * cfg.chain_budget:
            stopped = "under low water"
            break
        if created >= cfg.index_max_per_turn:
            stopped = "per-turn cap"
            break
        step = next_step(state, tokens)
        events += step.recorded
        rejected += step.rejected
        if step.stop or step.state is None:
            stopped = step.stop
            break
        events += step.events
        state, tokens = step.state, step.tokens_after
        created += 1
    return tuple(events), CompactionReport(strategy=strategy, created=created, rejected=rejected, stopped=stopped,
                                           tokens_before=start, tokens_after=tokens)


def plan_index(
    state: EpisodeState, *, turn: int, protect: frozenset[str], tokens: int | None = None
) -> tuple[tuple[EpisodeEvent, ...], CompactionReport]:
    def next_step(state: EpisodeState, tokens: int) -> _Step:
        step: IndexCreated | IndexFolded | None = _next_fold(state, turn, tokens) or _next_title(
            state, turn, protect, tokens)
        if step is None:
            return _Step(stop="no candidates")
        hidden, shown = _replaced_cost(state, step)
        if shown >= hidden:  # the title costs what it replaces: nothing cheaper is left to do
            return _Step(stop="cost gate", rejected=1)
        after = evolve(state, step)
        after_tokens = chain_tokens(after)
        if after_tokens >= tokens:
            return _Step(stop="no token progress")
        return _Step(events=(replace(step, tokens_after=after_tokens),), state=after, tokens_after=after_tokens)

    return _compact(state, "index", chain_tokens(state) if tokens is None else tokens, next_step)


# -- merge ---------------------------------------------------------------------------


def merge_group(state: EpisodeState, protect: frozenset[str]) -> list[Summary]:
    """The earliest summaries that may be merged: never protected, never a newest value's holder,
    and no two of them holding different values of one slot."""
    keep = protect | state.newest_holders()
    group: list[Summary] = []
    values: dict[str, str] = {}
    for s in state.active_chain():
        if s.summary_id in keep or s.redacted:
            continue
        if any(values.get(k, v) != v for k, v in s.facts):
            continue  # conflicts with an earlier member: merging would blur a slot's history
        group.append(s)
        values.update(dict(s.facts))
        if len(group) == state.config.merge_max_group:
            break
    return group


def merged_text(members: list[Summary]) -> str:
    """The members' texts, oldest first, each once."""
    seen: list[str] = []
    for s in members:
        if s.text not in seen:
            seen.append(s.text)
    return " / ".join(seen)


def merge_events(state: EpisodeState, members: list[Summary], *, turn: int) -> list[EpisodeEvent]:
    """The merge of `members` as events, before the gain is judged.

    The members' facts are all older values of their slots (a newest
    value's holder is never merged), so the merged summary carries none:
    they stay in the archived members, where `get_archived_summary` and
    `get_predecessor_summary` read them.
    """
    sid = state.next_summary_id()
    limit, tok = state.config.summary_max_tokens, state.config.tokenizer
    text = merged_text(members)
    truncated = count_tokens(text, tok) > limit
    if truncated:
        text = truncate_to_tokens(text, limit, tok)
    ids = tuple(s.summary_id for s in members)
    raw = tuple(dict.fromkeys(r for s in members for r in s.raw_ids))
    created = SummaryCreated(turn=turn, summary_id=sid, text=text, facts=(), overrides=(), raw_ids=raw,
                             truncated=truncated, written_by="merge", merged_from=ids)
    return [created, *(SummaryArchived(turn=turn, summary_id=m, reason="merged", superseded_by=(sid,)) for m in ids)]


def members_merged_into(step: list[EpisodeEvent]) -> str:
    """The id of the summary a merge step writes."""
    created = step[0]
    assert isinstance(created, SummaryCreated)
    return created.summary_id


def plan_merge(
    state: EpisodeState, *, turn: int, protect: frozenset[str], tokens: int | None = None
) -> tuple[tuple[EpisodeEvent, ...], CompactionReport]:
    min_gain = state.config.merge_min_gain

    def next_step(state: EpisodeState, tokens: int) -> _Step:
        members = merge_group(state, protect)
        ids = tuple(s.summary_id for s in members)
        if len(members) < 2:
            return _Step(stop="no candidates")  # nothing was tried, so nothing is rejected
        step = merge_events(state, members, turn=turn)
        after = fold(step, state)
        after_tokens = chain_tokens(after)
        gain = (tokens - after_tokens) / tokens if tokens else 0.0
        if gain < min_gain:
            reason = f"shrinks the chain by {gain:.1%}, under the minimum {min_gain:.0%}"
            return _Step(stop="minimum gain", rejected=1, recorded=(MergeRejected(
                turn=turn, merged_from=ids, tokens_before=tokens, tokens_after=after_tokens, reason=reason),))
        merged = CapacityMerged(turn=turn, summary_id=members_merged_into(step), merged_from=ids,
                                tokens_before=tokens, tokens_after=after_tokens)
        return _Step(events=(*step, merged), state=after, tokens_after=after_tokens)

    return _compact(state, "merge", chain_tokens(state) if tokens is None else tokens, next_step)


__all__ = ["CompactionReport", "merge_group", "merged_text", "plan_capacity", "plan_index",
           "plan_merge"]
