"""`decide(state, command) -> events`: the memory's only place of judgement. Pure.

No clock, no uuid, no I/O, no LLM: the command carries the LLM's response
and the turn's time. Ids are deterministic counters of the state. An empty
tuple means nothing to do; a rejection the evaluation counts is an event
(`override_rejected`); an impossible command raises `CommandRejected`.
"""

from __future__ import annotations

from ledger.compat import assert_never
from ledger.events import (
    EpisodeStarted,
    Event,
    Fact,
    LlmCalled,
    OverrideRejected,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
    WindowEvicted,
)
from gate.capacity import plan_index
from gate.commands import LlmCall, RecordTurn, StartEpisode
from gate.erasure import Erase, decide_erase
from gate.errors import CommandRejected
from gate.summary_format import is_valid_update, parse_summary
from projections.state import EpisodeEvent, EpisodeState, fold, record_id_for
from projections.tokens import count_tokens, truncate_to_tokens


Command = StartEpisode | RecordTurn | Erase


def decide(state: EpisodeState, command: Command) -> tuple[Event, ...]:
    match command:
        case StartEpisode():
            if state.started:
                raise CommandRejected("StartEpisode: the episode has already started")
            return (EpisodeStarted(turn=0, config=command.config.validate().to_dict(), lang=command.lang),)
        case RecordTurn():
            return _record_turn(state, command)
        case Erase():
            return decide_erase(state, command)
        case _:
            assert_never(command)


def _record_turn(state: EpisodeState, cmd: RecordTurn) -> tuple[Event, ...]:
    if not state.started:
        raise CommandRejected(f"RecordTurn(turn={cmd.turn}): the episode has not started")
    if cmd.turn <= state.turn:
        raise CommandRejected(f"RecordTurn(turn={cmd.turn}): turns must increase; the last was {state.turn}")
    rid = record_id_for(cmd.turn)
    events: list[EpisodeEvent] = [
        TurnRecorded(turn=cmd.turn, occurred_at=cmd.occurred_at, record_id=rid, text=cmd.user,
                     agent=cmd.agent, source=cmd.source)
    ]
    overflow = len(state.window) + 1 - state.config.window_turns
    events += [WindowEvicted(turn=cmd.turn, record_id=r) for r in state.window[: max(overflow, 0)]]
    events += [_llm_event(cmd.turn, call) for call in cmd.calls]
    update, written_by = _memory_update(cmd)
    if cmd.summarizer is not None:
        events.append(_llm_event(cmd.turn, cmd.summarizer))
    if update is not None:
        events += _summary_events(fold(events, state), cmd.turn, update, rid, written_by)
    after = fold(events, state)
    protect = frozenset(e.summary_id for e in events if isinstance(e, SummaryCreated))
    events += plan_index(after, turn=cmd.turn, protect=protect)
    return tuple(events)


def _memory_update(cmd: RecordTurn) -> tuple[str | None, str]:
    """The turn's one update (a summarizer response or a self-written block) and who wrote it."""
    if cmd.self_write is None:
        return (cmd.summarizer.response if cmd.summarizer else None), "summarizer"
    if cmd.summarizer is not None:
        raise CommandRejected(
            f"RecordTurn(turn={cmd.turn}): a turn has one memory update; it names both a summarizer call "
            "and a self-written block. Record the summarizer call only when the block was not usable."
        )
    if not is_valid_update(cmd.self_write):
        raise CommandRejected(
            f"RecordTurn(turn={cmd.turn}): self_write={cmd.self_write[:80]!r} is neither NONE nor a summary "
            "with an [OVERRIDES: ...] tag; fall back to the summarizer for this turn"
        )
    return cmd.self_write, "self"


def _llm_event(turn: int, call: LlmCall) -> LlmCalled:
    return LlmCalled(
        turn=turn, purpose=call.purpose, backend=call.backend, model=call.model, prompt_hash=call.prompt_hash,
        text=call.response, usage=dict(call.usage), latency_ms=call.latency_ms, retries=call.retries,
        error=call.error,
    )


def _summary_events(
    state: EpisodeState, turn: int, response: str, rid: str, written_by: str
) -> list[EpisodeEvent]:
    draft = parse_summary(response)
    if draft is None:
        return []
    sid = state.next_summary_id()
    applied, rejected = validate_overrides(state, draft.facts, draft.overrides)
    text, limit, tok = draft.text, state.config.summary_max_tokens, state.config.tokenizer
    truncated = count_tokens(text, tok) > limit
    if truncated:
        text = truncate_to_tokens(text, limit, tok)
    events: list[EpisodeEvent] = [
        SummaryCreated(turn=turn, summary_id=sid, text=text, facts=draft.facts, overrides=applied,
                       raw_ids=(rid,), truncated=truncated, written_by=written_by)
    ]
    events += [SummaryOverridden(turn=turn, summary_id=old, superseded_by=(sid,)) for old in applied]
    for reason, ids in rejected.items():
        events.append(OverrideRejected(turn=turn, summary_id=sid, rejected=tuple(ids), reason=reason))
    return events


def validate_overrides(
    state: EpisodeState, facts: tuple[Fact, ...], requested: tuple[str, ...]
) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    """Split requested override ids into applied and rejected-by-reason.

    An id must name a live summary. Overriding a summary that holds the
    newest value of a slot the new summary does not restate would drop that
    value from the top level, so it is refused.
    """
    holders = state.current_values()
    new_slots = {slot for slot, _ in facts}
    applied: list[str] = []
    rejected: dict[str, list[str]] = {}
    for oid in requested:
        summary = state.summaries.get(oid)
        if summary is None:
            reason = "not in the chain"
        elif not summary.live:
            reason = "already archived"
        else:
            orphans = sorted(slot for slot, (_, sid) in holders.items() if sid == oid and slot not in new_slots)
            reason = f"would drop the newest value of {', '.join(orphans)}" if orphans else ""
        if reason:
            rejected.setdefault(reason, []).append(oid)
        else:
            applied.append(oid)
    return tuple(applied), rejected


