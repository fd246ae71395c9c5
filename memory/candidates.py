"""The candidate table of every recorded tool call: what it could have returned, what it returned, and why.

A `tool_called` event records the call and its result, not the items the
tool weighed: adding those to the event would change the stored events of
every run. They are a pure function of the memory at that point instead, so
they are computed when asked: the stream's events before the call are
folded, and `tools.choose` (the function the tool itself builds its result
from) gives the table. The result is computed again the same way and
compared with the recorded one (`reproduced`), and `tools.choice_problems`
checks the table itself: a table that could disagree with the tool, or a
tool that read a different memory than the fold, shows up there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

from ledgermem.projections.events import ContextRendered, EpisodeStarted, ToolCalled
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import RecordedEvent
from ledgermem.memory.tools import (
    Candidate, Choice, archived_choice, choice_problems, choose, page_in_target, raw_choice, run_tool,
)
from ledgermem.projections.state import EpisodeState, evolve

#: Tools whose result is not a function of the folded state alone: no `reproduced` for them.
NOT_RECOMPUTED = {"get_block": "its bytes come from the blob table, not the folded memory",
                  "page_in": "a write: the gate judged it, and the item's text is shown with its paged-in turns"}


def page_in_choice(state: EpisodeState, args: dict[str, str], ok: bool) -> Choice:
    """What a recorded `page_in` named: the summary or raw record, returned when the gate admitted it."""
    item = page_in_target(args)
    found = archived_choice(state, item) if item in state.summaries else raw_choice(state, item)
    rows = tuple(Candidate(c.item_id, c.kind, c.status, "named by page_in", ok, c.turn, c.value, c.superseded_by)
                 for c in found.candidates[:1])
    rule = ("an archived summary or raw record named by its id is brought back into the prompt; the gate "
            "(decide) admitted it" if ok else "the gate (decide) refused it: see the result")
    return Choice("page_in", ok and bool(rows), rows, tuple(c.item_id for c in rows if ok), rule)


def table(state: EpisodeState, call: ToolCalled, seq: int, *, tools: bool = True) -> dict[str, Any]:
    """The candidate table of one recorded call, on the memory `state` it was made against."""
    args = {str(k): str(v) for k, v in call.args.items()}
    erased = call.text == ERASED or ERASED in args.values()
    if erased:
        choice = Choice(call.tool, False, (), (), "the call was erased: its arguments and result are unreadable")
    elif not tools:
        choice = Choice(call.tool, False, (), (), "this memory system has no tools")
    elif not call.parsed:
        choice = Choice(call.tool, False, (), (), "the call could not be parsed: no tool ran")
    elif call.tool == "page_in":
        choice = page_in_choice(state, args, call.ok)
    else:
        choice = choose(state, call.tool, args)
    reproduced: bool | None = None
    if tools and call.parsed and call.tool not in NOT_RECOMPUTED and not erased:
        again = run_tool(state, call.tool, args)
        reproduced = again.ok == call.ok and again.text == call.text
    return {
        "seq": seq, "turn": call.turn, "probe_id": call.probe_id or None, "tool": call.tool, "args": args,
        "ok": call.ok, "result": call.text, "candidates": [asdict(c) for c in choice.candidates],
        "chosen": list(choice.chosen), "rule": choice.rule, "choice_ok": choice.ok, "reproduced": reproduced,
        "not_recomputed": NOT_RECOMPUTED.get(call.tool) if reproduced is None and not erased else
        ("the recorded call was erased" if erased else None),
        "problems": choice_problems(choice) + ([] if choice.ok == call.ok or erased or not tools or not call.parsed else
                                               [f"{call.tool}: recorded ok={call.ok}, the table says ok={choice.ok}"]),
    }


def tool_call_tables(events: Iterable[RecordedEvent], *, seqs: tuple[int, int] | None = None,
                     probe_id: str | None = None, turn: int | None = None) -> list[dict[str, Any]]:
    """The candidate table of every tool call of one stream's events (in seq order), optionally only those
    with seq in `seqs` (inclusive), of one probe, or of one turn."""
    state = EpisodeState()
    rendered: EpisodeState | None = None  # the memory the latest prompt was rendered from
    tools = True
    out: list[dict[str, Any]] = []
    for r in events:
        e = r.event
        if isinstance(e, EpisodeStarted):
            tools = str(e.config.get("system", "three_layer")) == "three_layer"
        if isinstance(e, ContextRendered):
            rendered = state
        if isinstance(e, ToolCalled) and _wanted(r.seq, e, seqs, probe_id, turn):
            # A call reads the memory its prompt was rendered from: a live turn's own events (its raw
            # record, recorded before the calls) are not yet in it.
            out.append(table(rendered if rendered is not None else state, e, r.seq, tools=tools))
        if tools:
            state = evolve(state, e)  # type: ignore[arg-type]
    return out


def _wanted(seq: int, e: ToolCalled, seqs: tuple[int, int] | None, probe_id: str | None, turn: int | None) -> bool:
    if seqs is not None and not seqs[0] <= seq <= seqs[1]:
        return False
    if probe_id is not None and e.probe_id != probe_id:
        return False
    return turn is None or e.turn == turn


def problems(tables: Sequence[dict[str, Any]]) -> list[str]:
    """Every table's problems and every call the fold does not reproduce, naming its seq."""
    out = [f"seq {t['seq']}: {p}" for t in tables for p in t["problems"]]
    out += [f"seq {t['seq']}: {t['tool']} recorded a result the memory at that seq does not give"
            for t in tables if t["reproduced"] is False]
    return out


__all__ = ["NOT_RECOMPUTED", "page_in_choice", "problems", "table", "tool_call_tables"]
