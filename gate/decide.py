"""`decide(state, command) -> events`: the memory's only place of judgement. Pure.

No clock, no uuid, no I/O, no LLM: the command carries the model calls as
their observed `llm_called` events and the turn's time; a turn comes with
its plan (`gate.plan.plan_turn`: cleaned words, admission), taken as is.
Ids are deterministic counters of the state. An empty tuple means nothing
to do; a rejection the evaluation counts is an event (`override_rejected`);
an impossible command raises `CommandRejected`.
"""

from __future__ import annotations

from ledgermem.ledger.compat import assert_never
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    CompactionChecked,
    ConstraintPinned,
    EpisodeStarted,
    Fact,
    OverrideRejected,
    PagedIn,
    SlotAliasSuspected,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.gate.attributes import name_facts, table_for
from ledgermem.gate.capacity import CompactionReport, plan_capacity
from ledgermem.gate.commands import PageIn, PinConstraint, RecordTurn, StartEpisode
from ledgermem.gate.erasure import Erase, decide_erase
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.pinning import detected_pins, open_loops_shown, summary_pins, survival_check
from ledgermem.gate.plan import reasons_against
from ledgermem.gate.provenance import split_provenance
from ledgermem.gate.summary_format import SummaryDraft, is_valid_update, parse_summary
from ledgermem.projections.render import chain_tokens
from ledgermem.projections.state import EpisodeEvent, EpisodeState, fold, record_id_for
from ledgermem.projections.tokens import count_tokens, truncate_to_tokens


Command = StartEpisode | RecordTurn | Erase | PinConstraint | PageIn


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
        case PinConstraint():
            return _pin(state, command)
        case PageIn():
            return _page_in(state, command)
        case _:
            assert_never(command)


def _record_turn(state: EpisodeState, cmd: RecordTurn) -> tuple[Event, ...]:
    plan, t = cmd.plan, cmd.plan.turn
    if not state.started:
        raise CommandRejected(f"RecordTurn(turn={t.turn}): the episode has not started")
    if t.turn <= state.turn:
        raise CommandRejected(f"RecordTurn(turn={t.turn}): turns must increase; the last was {state.turn}")
    if plan.gated and cmd.summarizer is not None:
        raise CommandRejected(
            f"RecordTurn(turn={t.turn}): the gate does not admit this turn ({plan.gated}); "
            "do not call the summarizer for it (see gate.plan.plan_turn)"
        )
    for call in (*cmd.calls, *((cmd.summarizer,) if cmd.summarizer is not None else ())):
        if call.turn != t.turn or call.probe_id is not None:
            raise CommandRejected(
                f"RecordTurn(turn={t.turn}): the {call.purpose} call was recorded for turn {call.turn}"
                + (f" and probe {call.probe_id!r}" if call.probe_id is not None else "")
                + "; a turn's calls are its own"
            )
    cfg = state.config
    rid = record_id_for(t.turn)
    events: list[EpisodeEvent] = [
        TurnRecorded(turn=t.turn, occurred_at=t.occurred_at, record_id=rid, text=t.user, agent=t.agent,
                     source=t.source, remember=plan.remember, gated=plan.gated, blocks=t.blocks)
    ]
    overflow = len(state.window) + (1 if plan.remember else 0) - cfg.window_turns
    evicted = state.window[: max(overflow, 0)]
    events += [WindowEvicted(turn=t.turn, record_id=r) for r in evicted]
    update, written_by = _memory_update(cmd)
    running = _Running(state)
    attempts = _attempt_events(running.after(events), cmd)
    events += attempts
    if cmd.summarizer is not None:
        events.append(cmd.summarizer)
    if update is not None and not plan.gated:
        earlier = [e for e in attempts if isinstance(e, SummaryRejected)]
        refused = _rejections(running.after(events), cmd, update, written_by, earlier)
        if refused:
            events += refused
        else:
            events += _summary_events(running.after(events), cmd, update, written_by)
    if plan.remember:  # after the summary: what it already pinned is not watched twice
        events += detected_pins(running.after(events), turn=t.turn, record_id=rid, user=plan.user)
    after = running.after(events)
    protect = frozenset(e.summary_id for e in events if isinstance(e, SummaryCreated))
    capacity, report = plan_capacity(after, turn=t.turn, protect=protect)
    watched = {p.record_id for p in state.pins.values() if p.origin == "detected" and not p.shown}
    if (report is None or not (report.created or report.rejected)) and watched & set(evicted):
        tokens = chain_tokens(after)
        report = CompactionReport(strategy="window", created=len(evicted), rejected=0, stopped="window eviction",
                                  tokens_before=tokens, tokens_after=tokens)
    if report is not None and (report.created or report.rejected):
        events += _checked(after, list(capacity), report, t.turn)
    return tuple(events)


class _Running:
    """The state after a turn's events so far, which only ever grow at the end: each call folds only the
    events added since the one before (the same state `fold(events, start)` gives, without refolding)."""

    __slots__ = ("_state", "_done")

    def __init__(self, start: EpisodeState) -> None:
        self._state, self._done = start, 0

    def after(self, events: list[EpisodeEvent]) -> EpisodeState:
        self._state, self._done = fold(events[self._done:], self._state), len(events)
        return self._state


def _checked(before: EpisodeState, capacity: list[EpisodeEvent], report: CompactionReport,
             turn: int) -> list[EpisodeEvent]:
    """The compaction's events, then the survival check's re-injections, then the pass's report."""
    loops_before = open_loops_shown(before)
    compacted = fold(capacity, before)
    reinjected, checked = survival_check(compacted, turn=turn)
    final = fold(list(reinjected), compacted)
    report_event = CompactionChecked(
        turn=turn, strategy=report.strategy, created=report.created, rejected=report.rejected,
        stopped=report.stopped, tokens_before=report.tokens_before, tokens_after=report.tokens_after,
        constraints_checked=checked, constraints_missing=tuple(e.pin_id for e in reinjected),
        open_loops_before=loops_before, open_loops_after=open_loops_shown(final),
    )
    return [*capacity, *reinjected, report_event]


def _pin(state: EpisodeState, cmd: PinConstraint) -> tuple[Event, ...]:
    if not state.started:
        raise CommandRejected("PinConstraint: the episode has not started")
    if cmd.kind not in ("constraint", "open_loop"):
        raise CommandRejected(f"PinConstraint(kind={cmd.kind!r}): kind is 'constraint' or 'open_loop'")
    text = " ".join(cmd.text.split())
    if not text:
        raise CommandRejected("PinConstraint: the text is empty")
    if any(p.kind == cmd.kind and p.text == text for p in state.pins.values()):
        return ()
    return (ConstraintPinned(turn=state.turn, pin_id=state.next_pin_id(), kind=cmd.kind, text=text,
                             origin="declared", anchors=(text,)),)


def page_in_refusal(state: EpisodeState, item_id: str) -> str:
    """Why `item_id` cannot be paged in ("" when it can): it must name an archived or indexed summary, or a
    raw record out of the window, that exists in this memory and was not erased."""
    s = state.summaries.get(item_id)
    if s is not None:
        if s.redacted:
            return f"summary {item_id} was erased"
        if s.status == "active":
            return f"summary {item_id} is in the active chain: the prompt shows it already"
        return ""
    r = state.raw.get(item_id)
    if r is None:
        return (f"no such id: no summary or raw record with id {item_id!r} in this memory "
                "(its ids are the ones shown, like s0003 or r0007)")
    if r.user == ERASED:
        return f"raw record {item_id} was erased"
    if item_id in state.window:
        return f"raw record {item_id} is in the recent turns: the prompt shows it already"
    if not r.remember:
        return f"raw record {item_id} comes from a source whose turns are not remembered: it is never shown"
    return ""


def _page_in(state: EpisodeState, cmd: PageIn) -> tuple[Event, ...]:
    if not state.started:
        raise CommandRejected("PageIn: the episode has not started")
    if cmd.turn not in (state.turn, state.turn + 1):
        raise CommandRejected(f"PageIn(turn={cmd.turn}): an item is paged in at the last turn ({state.turn}) "
                              f"or at the turn being answered ({state.turn + 1})")
    item = cmd.item_id.strip()
    refusal = page_in_refusal(state, item)
    if refusal:
        raise CommandRejected(f"cannot page in {cmd.item_id!r}: {refusal}")
    until = cmd.turn + state.config.page_in_turns
    if item in state.summaries:
        return (PagedIn(turn=cmd.turn, until_turn=until, summary_id=item),)
    return (PagedIn(turn=cmd.turn, until_turn=until, record_id=item),)


def _memory_update(cmd: RecordTurn) -> tuple[str | None, str]:
    """The turn's one update (a summarizer response or a self-written block) and who wrote it."""
    turn = cmd.plan.turn.turn
    if cmd.rejected_self_write is not None and (cmd.self_write is not None or cmd.summarizer is None):
        raise CommandRejected(
            f"RecordTurn(turn={turn}): a rejected self-written block is replaced by a summarizer call; "
            "name the summarizer call and no self_write"
        )
    if cmd.self_write is None:
        return (cmd.summarizer.text if cmd.summarizer else None), "summarizer"
    if cmd.summarizer is not None:
        raise CommandRejected(
            f"RecordTurn(turn={turn}): a turn has one memory update; it names both a summarizer call "
            "and a self-written block. Record the summarizer call only when the block was not usable."
        )
    if not is_valid_update(cmd.self_write):
        raise CommandRejected(
            f"RecordTurn(turn={turn}): self_write={cmd.self_write[:80]!r} is neither NONE nor a summary "
            "with an [OVERRIDES: ...] tag; fall back to the summarizer for this turn"
        )
    return cmd.self_write, "self"


def _attempt_events(state: EpisodeState, cmd: RecordTurn) -> list[EpisodeEvent]:
    """The turn's earlier calls, each followed by the rejection of what it wrote when that was refused:
    a summarizer attempt's response, or the answering call's `<MEMORY_UPDATE>` block (the last
    `respond` call wrote the reply it came with)."""
    last_respond = max((i for i, c in enumerate(cmd.calls) if c.purpose == "respond"), default=-1)
    events: list[EpisodeEvent] = []
    if cmd.rejected_self_write is not None and last_respond < 0:
        events += _self_write_rejected(state, cmd, cmd.rejected_self_write)
    attempt = 0
    for i, call in enumerate(cmd.calls):
        events.append(call)
        if i == last_respond and cmd.rejected_self_write is not None:
            events += _self_write_rejected(state, cmd, cmd.rejected_self_write)
        if call.purpose == "summarize":
            attempt += 1
            reasons = reasons_against(state, cmd.plan, call.text)
            if reasons:
                events.append(SummaryRejected(turn=cmd.plan.turn.turn, purpose="summarize", attempt=attempt, reasons=reasons))
    return events


def _self_write_rejected(state: EpisodeState, cmd: RecordTurn, block: str) -> list[EpisodeEvent]:
    turn = cmd.plan.turn.turn
    reasons = reasons_against(state, cmd.plan, block)
    if not reasons:
        raise CommandRejected(
            f"RecordTurn(turn={turn}): rejected_self_write={block[:80]!r} passes summary validation; "
            "pass it as self_write"
        )
    return [SummaryRejected(turn=turn, purpose="self_write", attempt=0, reasons=reasons)]


def _rejections(state: EpisodeState, cmd: RecordTurn, update: str, written_by: str,
                earlier: list[SummaryRejected]) -> list[EpisodeEvent]:
    """The update's rejection and the fallback (the raw record only), or nothing when the update passes.

    `earlier` are the rejections of the turn's earlier attempts (`_attempt_events`)."""
    turn = cmd.plan.turn.turn
    reasons = reasons_against(state, cmd.plan, update)
    if not reasons:
        return []
    if written_by == "self":
        raise CommandRejected(
            f"RecordTurn(turn={turn}): self_write={update[:80]!r} fails summary validation "
            f"({', '.join(reasons)}); pass it as rejected_self_write and fall back to the summarizer"
        )
    attempt = 1 + sum(c.purpose == "summarize" for c in cmd.calls)
    every = tuple(dict.fromkeys(r for e in earlier for r in e.reasons)) + reasons
    return [
        SummaryRejected(turn=turn, purpose="summarize", attempt=attempt, reasons=reasons),
        SummarySkipped(turn=turn, record_id=record_id_for(turn), attempts=len(earlier) + 1,
                       reasons=tuple(dict.fromkeys(every))),
    ]


def _summary_events(state: EpisodeState, cmd: RecordTurn, response: str, written_by: str) -> list[EpisodeEvent]:
    draft = parse_summary(response)
    if draft is None:
        return []
    plan = cmd.plan
    turn, rid = plan.turn.turn, record_id_for(plan.turn.turn)
    sid = state.next_summary_id()
    table = table_for(state.config.attribute_table, state.config.slot_aliases)
    named, renamed, suspected = name_facts(table, draft.facts, episode_slots(state))
    facts, inferences = split_provenance(named, plan.grounds, strict=state.config.gate_level == "strict",
                                         user=plan.turn.seen_user, table=table)
    applied, rejected = validate_overrides(state, facts, draft.overrides)
    text, limit, tok = draft.text, state.config.summary_max_tokens, state.config.tokenizer
    truncated = count_tokens(text, tok) > limit
    if truncated:
        text = truncate_to_tokens(text, limit, tok)
    events: list[EpisodeEvent] = [
        SummaryCreated(turn=turn, summary_id=sid, text=text, facts=facts, overrides=applied,
                       raw_ids=(rid,), truncated=truncated, written_by=written_by, inferences=inferences,
                       renamed_slots=renamed)
    ]
    events += [SlotAliasSuspected(turn=turn, summary_id=sid, slot=s.slot, existing=s.existing, rule=s.rule)
               for s in suspected]
    events += [SummaryOverridden(turn=turn, summary_id=old, superseded_by=(sid,)) for old in applied]
    events += _draft_pins(fold(events, state), draft, turn, rid, sid)
    for reason, ids in rejected.items():
        events.append(OverrideRejected(turn=turn, summary_id=sid, rejected=tuple(ids), reason=reason))
    return events


def episode_slots(state: EpisodeState) -> list[str]:
    """Every slot name the episode's summaries ever held, oldest first."""
    return list(dict.fromkeys(k for s in state.summaries.values() for k, _ in (*s.facts, *s.inferences)))


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




def _draft_pins(state: EpisodeState, draft: SummaryDraft, turn: int, rid: str, sid: str) -> list[EpisodeEvent]:
    return list(summary_pins(state, turn=turn, record_id=rid, summary_id=sid, items=draft.pinned_items()))
