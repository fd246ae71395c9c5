"""`render(state, budget)`: the memory as the model sees it, with its manifest.

Parts, in prompt order: the sliding window (verbatim recent turns), the
current-values registry, index titles, the active chain. Every part lists
the exact ids that went in and what it cost, so a `context_rendered` event
can record the manifest.

Budget by allocation: when the parts do not fit, every item is cut to a
common per-item cap (water-filling), so under a tight budget each item
keeps its head and one long item cannot push out the others. The registry
is never cut below its slots.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.keys import ERASED
from projections.state import EpisodeState, IndexEntry, Summary
from projections.tokens import count_tokens, truncate_to_tokens

PART_ORDER = ("window", "registry", "index", "chain")
_TAGS = {
    "window": "RECENT_TURNS", "registry": "CURRENT_VALUES", "index": "INDEX", "chain": "ACTIVE_CHAIN",
    # the baselines' parts: the raw dialogue, a summary chain without archive, a rolling summary
    "dialogue": "DIALOGUE", "summaries": "SUMMARY_CHAIN", "rolling": "ROLLING_SUMMARY",
}


@dataclass(frozen=True, slots=True)
class Item:
    item_id: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    items: tuple[Item, ...]

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(i.item_id for i in self.items)


@dataclass(frozen=True, slots=True)
class Rendered:
    parts: tuple[Part, ...]
    budget: int
    tokenizer: str

    @property
    def text(self) -> str:
        blocks = []
        for p in self.parts:
            if p.items:
                body = "\n".join(i.text for i in p.items)
                blocks.append(f"<{_TAGS[p.name]}>\n{body}\n</{_TAGS[p.name]}>")
        return "\n".join(blocks)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def manifest(self) -> dict[str, dict[str, object]]:
        return {p.name: {"ids": list(p.ids), "tokens": p.tokens} for p in self.parts}

    @property
    def item_ids(self) -> tuple[str, ...]:
        return tuple(i for p in self.parts for i in p.ids)


def facts_tag(facts: tuple[tuple[str, str], ...]) -> str:
    return "[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]" if facts else "[FACTS: none]"


def summary_line(s: Summary) -> str:
    overrides = ", ".join(s.overrides) if s.overrides else "none"
    raw = ", ".join(s.raw_ids)
    return f"- {s.summary_id} (turn {s.turn}; raw {raw}) {s.text} {facts_tag(s.facts)} [OVERRIDES: {overrides}]"


def index_title(state: EpisodeState, entry: IndexEntry) -> str:
    """The title as shown now: the stored span plus the members' still-live facts.

    A member that was overridden after indexing no longer contributes, so a
    title never shows a value that the chain has since replaced.
    """
    live = [state.summaries[m] for m in entry.members if state.summaries[m].live]
    digest: dict[str, str] = {}
    for s in live:
        for slot, value in s.facts:
            if value != ERASED:
                digest[slot] = value
    body = "; ".join(f"{k}={v}" for k, v in digest.items()) or "no live facts"
    head = f"- {entry.index_id} [INDEX {entry.span}; {len(live)} live of {len(entry.members)}] "
    return head + body[: state.config.index_title_max_chars]


def turn_line(record_id: str, turn: int, user: str, agent: str) -> str:
    """A raw turn as it is shown in a prompt."""
    return f"[{record_id} turn {turn}] USER: {user} | AGENT: {agent}"


def _items(state: EpisodeState) -> dict[str, list[tuple[str, str]]]:
    window = []
    for rid in state.window:
        r = state.raw[rid]
        if r.user == ERASED:
            continue
        window.append((rid, turn_line(rid, r.turn, r.user, r.agent)))
    registry = [(f"slot:{k}", f"{k}={v}") for k, (v, _) in state.current_values().items()]
    shown = [e for e in state.indexes.values() if any(state.summaries[m].status == "indexed" for m in e.members)]
    index = [(e.index_id, index_title(state, e)) for e in shown]
    chain = [(s.summary_id, summary_line(s)) for s in state.active_chain() if not s.redacted]
    return {"window": window, "registry": registry, "index": index, "chain": chain}


def _cap(lengths: list[int], budget: int) -> int:
    """Largest per-item cap c with sum(min(l, c)) <= budget (at least 1)."""
    if sum(lengths) <= budget:
        return max(lengths, default=0)
    lo, hi = 1, max(lengths)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if sum(min(n, mid) for n in lengths) <= budget else (lo, mid - 1)
    return lo


def render(state: EpisodeState, budget: int | None = None) -> Rendered:
    """The rendered memory under `budget` tokens (the configured context budget by default)."""
    tok = state.config.tokenizer
    limit = state.config.context_budget if budget is None else budget
    raw = _items(state)
    counted = {name: [(i, t, count_tokens(t, tok)) for i, t in items] for name, items in raw.items()}
    reg_tokens = sum(n for _, _, n in counted["registry"])
    others = [n for name in PART_ORDER if name != "registry" for _, _, n in counted[name]]
    cap = _cap(others, max(limit - reg_tokens, len(others))) if others else 0
    parts = []
    for name in PART_ORDER:
        items = []
        for item_id, text, n in counted[name]:
            if name != "registry" and n > cap:
                text = truncate_to_tokens(text, max(cap - 1, 1), tok) + "…"
                n = count_tokens(text, tok)
            items.append(Item(item_id, text, n))
        parts.append(Part(name, tuple(items)))
    return Rendered(tuple(parts), limit, tok)


def chain_tokens(state: EpisodeState) -> int:
    """What capacity pressure is measured on: rendered index titles plus un-indexed summary lines."""
    tok = state.config.tokenizer
    items = _items(state)
    return sum(count_tokens(t, tok) for part in ("index", "chain") for _, t in items[part])


def chain_text_tokens(state: EpisodeState) -> int:
    """Avg_Active_Chain_Tokens counts summary text only (no ids, tags or refs)."""
    tok = state.config.tokenizer
    return sum(count_tokens(s.text, tok) for s in state.active_chain())
