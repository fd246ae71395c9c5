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
from dataclasses import dataclass
from typing import Any

from ledgermem.ledger.blocks import block_id
from ledgermem.ledger.keys import ERASED
from ledgermem.projections.render import facts_tag
from ledgermem.projections.state import EpisodeState, Summary


@dataclass(frozen=True, slots=True)
class ToolResult:
    ok: bool
    text: str


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
    s = state.summaries.get(summary_id)
    if s is None:
        return ToolResult(False, f"no such id: no summary with id {summary_id!r} in this memory "
                                 "(its ids are the ones shown, like s0003)")
    if s.redacted:
        return ToolResult(False, f"summary {summary_id} was erased")
    lines = [_describe(s)]
    seen = {s.summary_id}
    while s.superseded_by:
        nxt = state.summaries[s.superseded_by[-1]]
        if nxt.summary_id in seen:
            break
        seen.add(nxt.summary_id)
        lines.append(f"superseded by {_describe(nxt)}")
        s = nxt
    if len(lines) > 1:
        lines.append(f"current: {facts_tag(s.facts)} from {s.summary_id}")
    return ToolResult(True, "\n".join(lines))


def get_raw_record(state: EpisodeState, reference_id: str) -> ToolResult:
    r = state.raw.get(reference_id)
    if r is None:
        return ToolResult(False, f"no such id: no raw record with id {reference_id!r} in this memory "
                                 "(its ids are the ones shown, like r0007)")
    if r.user == ERASED:
        return ToolResult(False, f"raw record {reference_id} was erased")
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
    obs = [(s, v) for s in state.summaries.values() for k, v in s.facts if k == fact_key and v != ERASED]
    if not obs:
        return ToolResult(False, f"no summary records the slot {fact_key!r}")
    anchor = max((i for i, (_, v) in enumerate(obs) if v == exclude_value), default=None)
    start = anchor if anchor is not None else len(obs)
    # Step back over restatements of the same value to the last different one.
    while anchor is not None and start > 0 and obs[start - 1][1] == exclude_value:
        start -= 1
    earlier = [(s, v) for s, v in obs[:start] if v != exclude_value]
    if not earlier:
        return ToolResult(False, f"no earlier value of {fact_key!r} than {exclude_value!r}")
    s, v = earlier[-1]
    # The values before it, oldest first, one per change: "what was it originally" in one call.
    shown = obs[:start]
    history = [value for i, (_, value) in enumerate(shown) if i == 0 or shown[i - 1][1] != value]
    before = f"\nearlier values, oldest first: {' -> '.join(history)}" if len(history) > 1 else ""
    return ToolResult(True, f"fact_key={fact_key}; value={v}; from {_describe(s)}{before}")


def expand_index(state: EpisodeState, index_id: str) -> ToolResult:
    entry = state.indexes.get(index_id)
    if entry is None:
        return ToolResult(False, f"no such id: no index entry with id {index_id!r} in this memory "
                                 "(its ids are the ones shown, like i0001)")
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
