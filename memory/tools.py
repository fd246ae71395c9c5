"""The exact-id tools. Each reads the episode state by id or exact attribute only.

No similarity, no ranking: a summary id, a record id, an index id, a
slot name with a value to step back from, or a block id (`get_block`: a
turn's image or other typed content, its bytes read from the ledger's blob
table). These only read; `page_in` also brings the item back into the prompt
for the next turns, which is an event: `decide` judges it
(`gate.commands.PageIn`) and `Memory` records it, so `run_tool`, which only
reads, refuses it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ledgermem.gate.erasure import raw_text_expired
from ledgermem.gate.matching import contains_value
from ledgermem.ledger.blocks import block_id
from ledgermem.ledger.keys import ERASED
from ledgermem.projections.render import facts_tag
from ledgermem.projections.state import EpisodeState, Summary


@dataclass(frozen=True, slots=True)
class ToolResult:
    ok: bool
    text: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One item a tool call could have returned: its id, the value it holds for the call, where it is, and
    `role`, why it was or was not returned."""

    item_id: str
    kind: str  # summary | record | index | block
    status: str
    role: str
    chosen: bool
    turn: int | None = None
    value: str | None = None
    superseded_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Choice:
    """What a tool call considered (`candidates`), what it returned (`chosen`, ids in order) and the rule
    that chose it. The tools build their results from it, so it cannot disagree with them; `ok` is
    whether the call succeeds."""

    tool: str
    ok: bool
    candidates: tuple[Candidate, ...]
    chosen: tuple[str, ...]
    rule: str


def _summary_candidate(s: Summary, role: str, chosen: bool, value: str | None = None) -> Candidate:
    """A summary as a candidate; its value is the one the call weighs, else all its facts."""
    status = "erased" if s.redacted else s.status
    value = value if value is not None else "; ".join(f"{k}={v}" for k, v in s.facts)
    return Candidate(s.summary_id, "summary", status, role, chosen, s.turn, value, tuple(s.superseded_by))


def archived_choice(state: EpisodeState, summary_id: str) -> Choice:
    """The summary asked for and every successor `superseded_by` leads to; the last one is the live value."""
    s = state.summaries.get(summary_id)
    if s is None:
        return Choice("get_archived_summary", False, (), (),
                      f"no such id: no summary with id {summary_id!r} in this memory "
                      "(its ids are the ones shown, like s0003)")
    if s.redacted:
        return Choice("get_archived_summary", False, (_summary_candidate(s, "asked for; erased", False),), (),
                      f"summary {summary_id} was erased")
    walked = [s]
    seen = {s.summary_id}
    while s.superseded_by:
        nxt = state.summaries[s.superseded_by[-1]]
        if nxt.summary_id in seen:
            break
        seen.add(nxt.summary_id)
        walked.append(nxt)
        s = nxt
    rows = tuple(_summary_candidate(w, "asked for" if i == 0 else f"successor {i} (superseded_by)", True)
                 for i, w in enumerate(walked))
    rule = ("the summary by its exact id; it was not superseded" if len(walked) == 1 else
            f"the summary by its exact id, then superseded_by followed forward {len(walked) - 1} time(s) to "
            f"{walked[-1].summary_id}, whose facts are current")
    return Choice("get_archived_summary", True, rows, tuple(w.summary_id for w in walked), rule)


def raw_choice(state: EpisodeState, reference_id: str) -> Choice:
    """The raw record with this exact id, if it exists and is readable."""
    r = state.raw.get(reference_id)
    if r is None:
        return Choice("get_raw_record", False, (), (),
                      f"no such id: no raw record with id {reference_id!r} in this memory "
                      "(its ids are the ones shown, like r0007)")
    erased = r.user == ERASED
    row = Candidate(r.record_id, "record", "erased" if erased else "raw", "asked for" + ("; erased" if erased else ""),
                    not erased, r.turn)
    if erased:
        why = (" (its raw text expired under a retention policy; what was derived from it is kept)"
               if reference_id in raw_text_expired(state) else "")
        return Choice("get_raw_record", False, (row,), (), f"raw record {reference_id} was erased{why}")
    return Choice("get_raw_record", True, (row,), (r.record_id,), "the raw record by its exact id, complete")


def predecessor_choice(state: EpisodeState, fact_key: str, exclude_value: str) -> Choice:
    """Every summary that ever recorded `fact_key` (in creation order, whatever its status) with the role it
    plays: the newest occurrence of `exclude_value` is the anchor, restatements of it just before are
    stepped over, and the newest different value before them is returned."""
    tool = "get_predecessor_summary"
    every = [(s, v) for s in state.summaries.values() for k, v in s.facts if k == fact_key]
    erased = [_summary_candidate(s, "erased value: never returned", False, v) for s, v in every if v == ERASED]
    obs = [(s, v) for s, v in every if v != ERASED]
    if not obs:
        return Choice(tool, False, tuple(erased), (), f"no summary records the slot {fact_key!r}")
    asked, named = exclude_value, ""
    if all(v != exclude_value for _, v in obs):
        # "Olive Garden at some point", "the 7F one": a recorded value standing in it as a whole token is the one
        # meant (the longest, when several do); else "Terminal 2" for "Terminal 2, level 0": the one recorded
        # value it stands in, when only one does
        inside = [v for _, v in obs if contains_value(v, exclude_value)]
        holding = {v for _, v in obs if contains_value(exclude_value, v)}
        if inside or len(holding) == 1:
            exclude_value = max(inside, key=len) if inside else holding.pop()
            named = f" ({asked!r} names the recorded value {exclude_value!r})"
    anchor = max((i for i, (_, v) in enumerate(obs) if v == exclude_value), default=None)
    start = anchor if anchor is not None else len(obs)
    # Step back over restatements of the same value to the last different one.
    while anchor is not None and start > 0 and obs[start - 1][1] == exclude_value:
        start -= 1
    pick = max((i for i, (_, v) in enumerate(obs[:start]) if v != exclude_value), default=None)

    def role(i: int, v: str) -> str:
        if anchor is not None and i > anchor:
            return "newer: after the value became exclude_value"
        if i == anchor:
            return "anchor: the newest summary holding exclude_value"
        if i >= start:
            return "restated: exclude_value again, stepped over"
        return "earlier, the same value" if v == exclude_value else "earlier"

    rows = tuple(_summary_candidate(s, role(i, v), i == pick, v) for i, (s, v) in enumerate(obs)) + tuple(erased)
    if pick is None:
        return Choice(tool, False, rows, (), f"no earlier value of {fact_key!r} than {exclude_value!r}")
    how = (f"the newest earlier value different from {exclude_value!r}, before its newest occurrence{named}"
           if anchor is not None else f"{exclude_value!r} was never a value of {fact_key!r}: the newest value")
    return Choice(tool, True, rows, (obs[pick][0].summary_id,), how)


def index_choice(state: EpisodeState, index_id: str) -> Choice:
    """The members of the index entry, in order: summaries, or folded titles to expand in turn."""
    entry = state.indexes.get(index_id)
    if entry is None:
        return Choice("expand_index", False, (), (),
                      f"no such id: no index entry with id {index_id!r} in this memory "
                      "(its ids are the ones shown, like i0001)")
    rows = []
    for m in entry.members:
        if m in state.indexes:
            child = state.indexes[m]
            rows.append(Candidate(m, "index", f"folded title L{child.level}", "member: a title to expand in turn",
                                  True))
        else:
            rows.append(_summary_candidate(state.summaries[m], f"member of {index_id}", True))
    return Choice("expand_index", True, tuple(rows), tuple(entry.members),
                  f"every member of {index_id}, in order (an index entry is returned whole)")


def block_choice(state: EpisodeState, wanted: str) -> Choice:
    """Every block of every raw record; the one whose id is `wanted` is returned."""
    rows = [Candidate(block_id(ref, r.record_id, i), "block", "erased" if r.user == ERASED else str(ref.get("mime")),
                      f"block {i} of {r.record_id}", block_id(ref, r.record_id, i) == wanted, r.turn)
            for r in state.raw.values() for i, ref in enumerate(r.blocks)]
    first = next((c for c in rows if c.chosen), None)
    rows = [replace(c, chosen=c is first) for c in rows]  # two records carrying the same bytes: the first is read
    if first is None:
        return Choice("get_block", False, tuple(rows), (), f"no such id: no block with id {wanted!r} in this memory "
                                                             "(get_raw_record lists a record's blocks)")
    return Choice("get_block", True, tuple(rows), (first.item_id,),
                  "the block by its exact id (its sha256, or <record>#<n>), from the first record holding it")


def choose(state: EpisodeState, name: str, args: dict[str, str]) -> Choice:
    """The candidate table of one read-tool call on `state`: what the tool does, as data."""
    missing = [a for a in REQUIRED.get(name, ()) if not args.get(a)]
    if name not in REQUIRED or name == "page_in" or missing:
        return Choice(name, False, (), (), run_tool(state, name, args).text)
    if name == "get_archived_summary":
        return archived_choice(state, args["summary_id"])
    if name == "get_raw_record":
        return raw_choice(state, args["reference_id"])
    if name == "get_predecessor_summary":
        return predecessor_choice(state, args["fact_key"], args["exclude_value"])
    if name == "get_block":
        return block_choice(state, args["block_id"])
    return index_choice(state, args["index_id"])


def choice_problems(choice: Choice) -> list[str]:
    """What is wrong with a candidate table (empty: nothing): every id returned must be a candidate marked
    chosen, every candidate marked chosen returned, and a call that succeeds returns something."""
    ids = [c.item_id for c in choice.candidates]
    problems = [f"{choice.tool}: returned {i!r}, which is not among its candidates ({', '.join(ids) or 'none'})"
                for i in choice.chosen if i not in ids]
    marked = [c.item_id for c in choice.candidates if c.chosen]
    problems += [f"{choice.tool}: candidate {i!r} is marked chosen but was not returned"
                 for i in marked if i not in choice.chosen]
    if choice.ok and not choice.chosen and choice.tool != "expand_index":
        problems.append(f"{choice.tool}: the call succeeded but returned no candidate")
    if not choice.ok and choice.chosen:
        problems.append(f"{choice.tool}: the call failed but returned {', '.join(choice.chosen)}")
    return problems


def _describe(s: Summary) -> str:
    where = s.status + (f" ({s.archive_reason})" if s.archive_reason else "")
    where += f" under {s.index_id}" if s.index_id and s.status == "indexed" else ""
    where += f"; merged from {', '.join(s.merged_from)}" if s.merged_from else ""
    text = "" if s.text == "; ".join(f"{k}={v}" for k, v in s.facts) else f" {s.text}"
    inferred = (" [INFERRED, unverified: " + "; ".join(f"{k}={v}" for k, v in s.inferences) + "]"
                if s.inferences else "")
    return f"{s.summary_id} [turn {s.turn}; {where}; raw {', '.join(s.raw_ids)}]{text} {facts_tag(s.facts)}{inferred}"


def get_archived_summary(state: EpisodeState, summary_id: str) -> ToolResult:
    """Any summary by id; if it was superseded, walk `superseded_by` forward to the live successor."""
    choice = archived_choice(state, summary_id)
    if not choice.ok:
        return ToolResult(False, choice.rule)
    walked = [state.summaries[c.item_id] for c in choice.candidates]
    lines = [_describe(walked[0])] + [f"superseded by {_describe(s)}" for s in walked[1:]]
    if len(lines) > 1:
        lines.append(f"current: {facts_tag(walked[-1].facts)} from {walked[-1].summary_id}")
    return ToolResult(True, "\n".join(lines))


def get_raw_record(state: EpisodeState, reference_id: str) -> ToolResult:
    choice = raw_choice(state, reference_id)
    if not choice.ok:
        return ToolResult(False, choice.rule)
    r = state.raw[choice.chosen[0]]
    when = f"; occurred_at {r.occurred_at}" if r.occurred_at else ""
    blocks = "".join(f"\nBLOCK {_block_line(r.record_id, i, b)}" for i, b in enumerate(r.blocks))
    return ToolResult(True, f"{r.record_id} [turn {r.turn}{when}]\nUSER: {r.user}\nAGENT: {r.agent}{blocks}")


def _block_line(record_id: str, index: int, ref: dict[str, Any]) -> str:
    size = f"; {ref['size']} bytes" if ref.get("size") is not None else "; no bytes stored"
    source = f"; source {ref['source']}" if ref.get("source") else ""
    return (f"{block_id(ref, record_id, index)} ({ref.get('side', 'user')}) {ref.get('mime')}{size}{source}: "
            f"{ref.get('caption') or '(no caption)'}")


#: Reads a block's bytes: (sha256, turn) -> (state, bytes); state is ok, erased, sealed or missing.
BlobReader = Callable[[str, int], tuple[str, bytes | None]]


def get_block(state: EpisodeState, wanted: str, read: BlobReader | None) -> ToolResult:
    """A block by id (its sha256, or `<record>#<n>` for one without bytes): its reference as JSON, with
    the bytes base64-encoded when they can be read, `[erased]` when erasure made them unreadable."""
    for r in state.raw.values():
        for i, ref in enumerate(r.blocks):
            if block_id(ref, r.record_id, i) != wanted:
                continue
            out: dict[str, Any] = {"block_id": wanted, "record_id": r.record_id, **ref, "data_base64": None}
            if r.user == ERASED:
                out["bytes"] = ERASED
            elif ref.get("sha256") is None:
                out["bytes"] = "absent"
            elif read is None:
                out["bytes"] = "unavailable"
            else:
                found, data = read(str(ref["sha256"]), r.turn)
                out["bytes"] = ERASED if found == "erased" else found
                if data is not None:
                    out["data_base64"] = base64.b64encode(data).decode("ascii")
            return ToolResult(True, json.dumps(out, ensure_ascii=False, sort_keys=True))
    return ToolResult(False, f"no such id: no block with id {wanted!r} in this memory "
                             "(get_raw_record lists a record's blocks)")


def get_predecessor_summary(state: EpisodeState, fact_key: str, exclude_value: str) -> ToolResult:
    """The value `fact_key` had just before it became `exclude_value` (newest such change).

    Observations are every summary carrying the slot, in creation order,
    whatever its status: archived history is exactly what this tool reads.
    """
    choice = predecessor_choice(state, fact_key, exclude_value)
    if not choice.ok:
        return ToolResult(False, choice.rule)
    chosen = next(c for c in choice.candidates if c.chosen)
    # The values before it, oldest first, one per change: "what was it originally" in one call.
    shown = [str(c.value) for c in choice.candidates if c.role in ("earlier", "earlier, the same value")]
    history = [value for i, value in enumerate(shown) if i == 0 or shown[i - 1] != value]
    before = f"\nearlier values, oldest first: {' -> '.join(history)}" if len(history) > 1 else ""
    return ToolResult(True, f"fact_key={fact_key}; value={chosen.value}; "
                            f"from {_describe(state.summaries[chosen.item_id])}{before}")


def expand_index(state: EpisodeState, index_id: str) -> ToolResult:
    choice = index_choice(state, index_id)
    if not choice.ok:
        return ToolResult(False, choice.rule)
    entry = state.indexes[index_id]
    level = f" L{entry.level}" if entry.level > 1 else ""
    lines = [f"{entry.index_id} [INDEX{level} {entry.span}] {len(entry.members)} members"]
    for m in entry.members:
        if m in state.indexes:  # a folded title: expand it in turn to reach its summaries
            child = state.indexes[m]
            lines.append(f"- {child.index_id} [INDEX {child.span}] folded title over "
                         f"{', '.join(child.members)}: expand_index(index_id=\"{child.index_id}\")")
        else:
            lines.append(_describe(state.summaries[m]))
    return ToolResult(True, "\n".join(lines))


def page_in_target(args: dict[str, str]) -> str:
    """The id a `page_in` call names: `item_id`, or a summary or record id under the read tools' names."""
    return next((args[a].strip() for a in ("item_id", "summary_id", "reference_id") if args.get(a, "").strip()), "")


def paged_in_result(state: EpisodeState, item_id: str) -> ToolResult:
    """What a successful page-in shows the model: the item as the read tools give it, and until when it stays.

    `state` is the state with the `paged_in` event applied.
    """
    read = get_archived_summary(state, item_id) if item_id in state.summaries else get_raw_record(state, item_id)
    until = state.paged_in[item_id].until_turn
    return ToolResult(True, f"{read.text}\npaged in: the memory shows {item_id} (<PAGED_IN>) through turn {until}")


#: A question (an answer call) changes nothing in the memory, so it cannot page in.
PAGE_IN_OUTSIDE_A_TURN = ("page_in changes what the memory shows in the next turns and runs only in a live turn; "
                          "read the item with get_archived_summary or get_raw_record")

REQUIRED = {
    "get_archived_summary": ("summary_id",),
    "get_raw_record": ("reference_id",),
    "get_predecessor_summary": ("fact_key", "exclude_value"),
    "expand_index": ("index_id",),
    "page_in": ("item_id",),
    "get_block": ("block_id",),
}


def run_tool(state: EpisodeState, name: str, args: dict[str, str], blobs: BlobReader | None = None) -> ToolResult:
    """Execute one call; a bad name or missing argument is a failed result, not an exception."""
    if name not in REQUIRED:
        return ToolResult(False, f"unknown tool {name!r}; tools: {', '.join(REQUIRED)}")
    if name == "page_in":  # the one tool that writes: `Memory` runs it; a read-only caller refuses it
        return ToolResult(False, PAGE_IN_OUTSIDE_A_TURN)
    missing = [a for a in REQUIRED[name] if not args.get(a)]
    if missing:
        return ToolResult(False, f"{name}: missing argument(s) {', '.join(missing)}")
    if name == "get_archived_summary":
        return get_archived_summary(state, args["summary_id"])
    if name == "get_raw_record":
        return get_raw_record(state, args["reference_id"])
    if name == "get_predecessor_summary":
        return get_predecessor_summary(state, args["fact_key"], args["exclude_value"])
    if name == "get_block":
        return get_block(state, args["block_id"], blobs)
    return expand_index(state, args["index_id"])
