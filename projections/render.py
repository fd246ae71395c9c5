"""`render(state, budget)`: the memory as the model sees it, with its manifest.

Parts, in prompt order: the pinned block (hard constraints and open
loops, verbatim), the sliding window (verbatim recent turns), the
current-values registry, index titles, the active chain. Every part lists
the exact ids that went in and what it cost, so a `context_rendered` event
can record the manifest.

Budget by allocation: the pinned block and the registry are never cut;
what is left of the budget is shared by the other items with a common
per-item cap (water-filling), so under a tight budget each item keeps its
head and one long item cannot push out the others.

The registry has limits of its own (`registry_plan`): at most
`registry_max_slots` slots within `registry_budget_share` of the budget.
Over either, the least recently confirmed slots are left out whole (never
cut), the newest kept; a slot a live pin names is never left out.
`registry_enabled=False` shows no registry at all.

Paged-in items (archived summaries and raw records the agent brought back
for a few turns, `paged_in` events) form a part of their own right after
the window, in their original time order and marked as paged in. They use
only the budget the other parts left, whole: when they do not all fit, the
oldest page-in is dropped first, and the manifest names what was dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledgermem.ledger.blocks import with_captions
from ledgermem.ledger.keys import ERASED
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState, IndexEntry, PagedItem, Summary
from ledgermem.projections.tokens import count_tokens, truncate_to_tokens

PART_ORDER = ("pinned", "window", "registry", "index", "chain")
#: Parts whose items are never cut or dropped by the allocation.
WHOLE_PARTS = frozenset({"pinned", "registry"})
_TAGS = {
    "pinned": "PINNED", "window": "RECENT_TURNS", "registry": "CURRENT_VALUES", "index": "INDEX", "chain": "ACTIVE_CHAIN",
    "paged_in": "PAGED_IN",  # archived summaries and raw records the agent paged back in, after the window
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
    #: Items this part would hold but the budget left no room for (paged-in items only).
    dropped: tuple[str, ...] = ()

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

    @property
    def registry_tokens(self) -> int:
        """What the current-values registry cost, counted apart (also `manifest()["registry"]["tokens"]`)."""
        return sum(p.tokens for p in self.parts if p.name == "registry")

    def part(self, name: str) -> Part:
        """The part of that name; an empty one when this prompt has none (`paged_in` only when something is)."""
        return next((p for p in self.parts if p.name == name), Part(name, ()))

    def manifest(self) -> dict[str, dict[str, object]]:
        return {p.name: {"ids": list(p.ids), "tokens": p.tokens, **({"dropped": list(p.dropped)} if p.dropped else {})}
                for p in self.parts}

    @property
    def item_ids(self) -> tuple[str, ...]:
        return tuple(i for p in self.parts for i in p.ids)


def facts_tag(facts: tuple[tuple[str, str], ...]) -> str:
    return "[FACTS: " + "; ".join(f"{k}={v}" for k, v in facts) + "]" if facts else "[FACTS: none]"


def summary_line(s: Summary) -> str:
    """A summary as shown: facts are authoritative; inferences are marked as unverified claims."""
    overrides = ", ".join(s.overrides) if s.overrides else "none"
    raw = ", ".join(s.raw_ids)
    when = f"turns {_merged_span(s)}" if s.merged_from else f"turn {s.turn}"
    head = f"- {s.summary_id} ({when}; raw {raw})"
    unverified = (" [INFERRED, unverified: " + "; ".join(f"{k}={v}" for k, v in s.inferences) + "]"
                  if s.inferences else "")
    # A summary that is only facts stores them as its text too: shown once, in the tag.
    text = "" if s.text == "; ".join(f"{k}={v}" for k, v in s.facts) else f" {s.text}"
    return f"{head}{text} {facts_tag(s.facts)}{unverified} [OVERRIDES: {overrides}]"


def _merged_span(s: Summary) -> str:
    turns = sorted({int(r[1:]) for r in s.raw_ids if r[1:].isdigit()})
    return f"{turns[0]}-{turns[-1]}" if turns else str(s.turn)


def pin_line(kind: str, pin_id: str, text: str) -> str:
    label = "CONSTRAINT" if kind == "constraint" else "OPEN"
    return f"- {pin_id} {label}: {text}"


def clean_text(config: MemoryConfig, source: str | None, text: str) -> str:
    """A source's text as the window and the summarizer see it: its declared cleaners applied."""
    policy = config.source_policies.get(source or "", {}) if source else {}
    for pattern in policy.get("strip", ()):
        text = re.sub(pattern, "", text)
    return " ".join(text.split()) if policy.get("strip") else text


def index_title(state: EpisodeState, entry: IndexEntry) -> str:
    """The title as shown now: the stored span plus the still-live facts of the summaries under it.

    A member that was overridden after indexing no longer contributes, so a
    title never shows a value that the chain has since replaced. A folded
    (higher-level) title digests the summaries under the titles it holds.
    """
    live = [s for s in state.index_summaries(entry) if s.live]
    digest: dict[str, str] = {}
    for s in live:
        for slot, value in s.facts:
            if value != ERASED:
                digest[slot] = value
    body = "; ".join(f"{k}={v}" for k, v in digest.items()) or "no live facts"
    level = f" L{entry.level}" if entry.level > 1 else ""
    count = f"{len(live)} live of {len(state.index_summaries(entry))}"
    head = f"- {entry.index_id} [INDEX{level} {entry.span}; {count}] "
    return head + body[: state.config.index_title_max_chars]


#: The block tags of every prompt: the rendered parts' and the prompts' own (`memory/prompts.py`).
PROMPT_TAGS: tuple[str, ...] = (*_TAGS.values(), "NEW_TURN", "MEMORY_UPDATE", "MEMORY", "EVICTED_TURNS", "SOURCES_DISAGREE")
_PROMPT_TAG_OPEN = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r")(?![A-Za-z0-9]))", re.IGNORECASE)


def defuse(text: str) -> str:
    """`text` with every prompt tag's `<` made `‹`: inside a raw turn a tag is what someone typed (or a
    model echoed), and must not open or close a block of the prompt it is shown in."""
    return _PROMPT_TAG_OPEN.sub("‹", text)


def turn_line(record_id: str, turn: int, user: str, agent: str) -> str:
    """A raw turn as it is shown in a prompt (the record itself keeps its text as it was)."""
    return f"[{record_id} turn {turn}] USER: {defuse(user)} | AGENT: {defuse(agent)}"


def paged_in_line(state: EpisodeState, item: PagedItem) -> str | None:
    """A paged-in item as shown: the line it had, at its original turn, marked as paged in; None once erased."""
    mark = f"[PAGED IN at turn {item.turn}, shown through turn {item.until_turn}"
    s = state.summaries.get(item.item_id)
    if s is not None:
        if s.redacted:
            return None
        if s.status == "archived":
            where = f"archived ({s.archive_reason})" + (f", superseded by {', '.join(s.superseded_by)}"
                                                       if s.superseded_by else "")
        else:
            where = f"under index {s.index_id}" if s.status == "indexed" else "in the active chain"
        return f"{summary_line(s)} {mark}; {where}]"
    r = state.raw[item.item_id]
    if r.user == ERASED:
        return None
    user, agent = clean_text(state.config, r.source, r.user), clean_text(state.config, r.source, r.agent)
    return f"{turn_line(r.record_id, r.turn, user, agent)} {mark}; raw record]"


def _original_turn(state: EpisodeState, item_id: str) -> int:
    found = state.summaries.get(item_id)
    return found.turn if found is not None else state.raw[item_id].turn


def _paged_in_part(state: EpisodeState, room: int) -> Part | None:
    """The paged-in items that fit in `room` tokens, whole, in original time order; None when none is live.

    They take only what the other parts left of the budget, so paging in never cuts or pushes
    out anything else; when they do not all fit, the oldest page-in is dropped first.
    """
    tok = state.config.tokenizer
    live = [(p, line) for p in state.paged_in_now() if (line := paged_in_line(state, p)) is not None]
    if not live:
        return None
    sized = [(p, line, count_tokens(line, tok)) for p, line in live]
    while sized and sum(n for _, _, n in sized) > room:
        sized.pop(0)
    kept = {p.item_id for p, _, _ in sized}
    shown = sorted(sized, key=lambda x: _original_turn(state, x[0].item_id))  # stable: page-in order within a turn
    return Part("paged_in", tuple(Item(p.item_id, line, n) for p, line, n in shown),
                dropped=tuple(p.item_id for p, _ in live if p.item_id not in kept))


def _items(state: EpisodeState) -> dict[str, list[tuple[str, str]]]:
    pinned = [(p.pin_id, pin_line(p.kind, p.pin_id, p.text)) for p in state.pins.values()
              if p.shown and not p.redacted]
    window = []
    for rid in state.window:
        r = state.raw[rid]
        if r.user == ERASED:
            continue
        user = clean_text(state.config, r.source, with_captions(r.user, r.blocks))
        agent = clean_text(state.config, r.source, with_captions(r.agent, r.blocks, "agent"))
        window.append((rid, turn_line(rid, r.turn, user, agent)))
    registry = [(f"slot:{k}", f"{k}={v}") for k, (v, _) in state.current_values().items()]
    return {"pinned": pinned, "window": window, "registry": registry, "index": _index_items(state),
            "chain": _chain_items(state)}


def _index_items(state: EpisodeState) -> list[tuple[str, str]]:
    return [(e.index_id, index_title(state, e)) for e in state.top_indexes()]


def _chain_items(state: EpisodeState) -> list[tuple[str, str]]:
    return [(s.summary_id, summary_line(s)) for s in state.active_chain() if not s.redacted]


@dataclass(frozen=True, slots=True)
class RegistryPlan:
    """Which registry slots a render at `budget` shows, and which its limits leave out (and why they may)."""

    kept: tuple[str, ...]  # item ids ("slot:<name>") in registry order
    left_out: tuple[str, ...]  # item ids, least recently confirmed first
    pinned: frozenset[str]  # item ids a live pin names: never left out
    recency: dict[str, tuple[int, int]]  # item id -> (summary position, fact position): larger is more recent
    share: int | None  # the registry's share of the budget in tokens (None: no share)


def pinned_slots(state: EpisodeState) -> frozenset[str]:
    """Registry item ids a live pin names: a slot among its anchors, or a slot its summary holds the newest value of."""
    current = state.current_values()
    live = [p for p in state.pins.values() if not p.redacted]
    anchors = {a for p in live for a in p.anchors}
    sources = {p.summary_id for p in live if p.summary_id is not None}
    return frozenset(f"slot:{k}" for k, (_, sid) in current.items() if k in anchors or sid in sources)


def registry_plan(state: EpisodeState, budget: int | None = None,
                  items: dict[str, list[tuple[str, str]]] | None = None) -> RegistryPlan:
    """The registry's limits applied at `budget` (the configured context budget by default). Pure.

    Slots are taken newest confirmation first (the summary that last stated the
    slot's current value; later in creation order is newer) while the count
    stays within `registry_max_slots` and the tokens within the share; the
    first that does not fit ends the taking, so what is left out is always the
    oldest. Pinned slots are taken first and count against both limits. The
    share in tokens is `registry_budget_share` of the budget, capped by what
    the pinned block and two tokens per other item leave of it.
    """
    cfg = state.config
    limit = cfg.context_budget if budget is None else budget
    tok = cfg.tokenizer
    current = state.current_values()
    order = {sid: n for n, sid in enumerate(state.summaries)}
    recency: dict[str, tuple[int, int]] = {}
    for slot, (_, sid) in current.items():
        facts = [k for k, _ in state.summaries[sid].facts]
        recency[f"slot:{slot}"] = (order[sid], facts.index(slot) if slot in facts else 0)
    ids = [f"slot:{k}" for k in current]
    pinned = pinned_slots(state)
    share = None
    if cfg.registry_budget_share > 0:
        # The share, and never more than what the pinned block and the other items' heads leave (two
        # tokens an item), so the registry gives way before the whole passes the budget.
        items = _items(state) if items is None else items
        others = sum(len(items[name]) for name in PART_ORDER if name not in WHOLE_PARTS)
        room = limit - sum(count_tokens(t, tok) for _, t in items["pinned"]) - 2 * others
        share = max(0, min(int(limit * cfg.registry_budget_share), room))
    if not cfg.registry_enabled:
        return RegistryPlan((), tuple(sorted(ids, key=recency.__getitem__)), pinned, recency, share)
    cost = {f"slot:{k}": count_tokens(f"{k}={v}", tok) for k, (v, _) in current.items()}
    taken = {i for i in ids if i in pinned}
    used = sum(cost[i] for i in taken)
    for item_id in sorted((i for i in ids if i not in pinned), key=recency.__getitem__, reverse=True):
        if cfg.registry_max_slots and len(taken) >= cfg.registry_max_slots:
            break
        if share is not None and used + cost[item_id] > share:
            break
        taken.add(item_id)
        used += cost[item_id]
    kept = tuple(i for i in ids if i in taken)
    left_out = tuple(sorted((i for i in ids if i not in taken), key=recency.__getitem__))
    return RegistryPlan(kept, left_out, pinned, recency, share)


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
    shown = set(registry_plan(state, limit, raw).kept)
    raw["registry"] = [(i, t) for i, t in raw["registry"] if i in shown]
    counted = {name: [(i, t, count_tokens(t, tok)) for i, t in items] for name, items in raw.items()}
    whole = sum(n for name in WHOLE_PARTS for _, _, n in counted[name])
    others = [n for name in PART_ORDER if name not in WHOLE_PARTS for _, _, n in counted[name]]
    cap = _cap(others, max(limit - whole, len(others))) if others else 0
    parts = []
    for name in PART_ORDER:
        items = []
        for item_id, text, n in counted[name]:
            if name not in WHOLE_PARTS and n > cap:
                text = truncate_to_tokens(text, max(cap - 1, 1), tok) + "…"
                n = count_tokens(text, tok)
            items.append(Item(item_id, text, n))
        parts.append(Part(name, tuple(items)))
    paged = _paged_in_part(state, limit - sum(p.tokens for p in parts))
    if paged is not None:
        parts.insert(PART_ORDER.index("window") + 1, paged)
    return Rendered(tuple(parts), limit, tok)


def chain_tokens(state: EpisodeState) -> int:
    """What capacity pressure is measured on: rendered index titles plus un-indexed summary lines."""
    tok = state.config.tokenizer  # the two parts alone: capacity asks on every turn, the window is not counted
    return sum(count_tokens(t, tok) for _, t in (*_index_items(state), *_chain_items(state)))


def chain_text_tokens(state: EpisodeState) -> int:
    """Avg_Active_Chain_Tokens counts summary text only (no ids, tags or refs)."""
    tok = state.config.tokenizer
    return sum(count_tokens(s.text, tok) for s in state.active_chain())


def title_tokens(state: EpisodeState) -> int:
    """What the titles shown at the top level cost: the pressure that folds titles into a higher level."""
    tok = state.config.tokenizer
    return sum(count_tokens(t, tok) for _, t in _index_items(state))


def allocation_problems(state: EpisodeState, rendered: Rendered) -> list[str]:
    """Where `rendered` breaks the allocation rules for `state` (empty when it keeps all of them).

    1. Every item of every part is present (no item is pushed out), except registry slots
       left out by the registry's own limits (`registry_problems`).
    2. Pinned items and registry entries are whole.
    3. Every other item keeps its head: it is whole, or a prefix of it ending in "…".
    4. Cut items were cut to a common cap: no cut item is shorter than a whole or cut item
       it was cut for (an item cut harder than the rest is what one long item pushing
       others out looks like).
    5. The total fits the budget whenever the whole parts and one token per other item fit.
    """
    tok = state.config.tokenizer
    expected = _items(state)
    problems: list[str] = []
    cut_sizes: list[int] = []
    kept_sizes: list[int] = []
    for name in PART_ORDER:
        got = {i.item_id: i for i in rendered.part(name).items}
        for item_id, text in expected[name]:
            item = got.get(item_id)
            if item is None:
                if name != "registry":
                    problems.append(f"{name}: item {item_id} was dropped")
                continue
            if item.text == text:
                if name not in WHOLE_PARTS:
                    kept_sizes.append(item.tokens)
                continue
            if name in WHOLE_PARTS:
                problems.append(f"{name}: item {item_id} was cut; this part is never cut")
            elif not (item.text.endswith("…") and text.startswith(item.text[:-1]) and len(item.text) > 1):
                problems.append(f"{name}: item {item_id} lost its head")
            else:
                cut_sizes.append(item.tokens)
    if cut_sizes and max(cut_sizes) - min(cut_sizes) > 2:
        problems.append(f"cut items were cut unequally: {min(cut_sizes)} to {max(cut_sizes)} tokens")
    if cut_sizes and kept_sizes and max(kept_sizes) > max(cut_sizes) + 2:
        problems.append("an item was cut although a longer one was kept whole")
    problems += registry_problems(state, rendered)
    whole = sum(count_tokens(t, tok) for _, t in expected["pinned"]) + rendered.registry_tokens
    others = sum(len(expected[name]) for name in PART_ORDER if name not in WHOLE_PARTS)
    if whole + 2 * others <= rendered.budget and rendered.tokens > rendered.budget:
        problems.append(f"{rendered.tokens} tokens rendered over a budget of {rendered.budget}")
    return problems


def registry_problems(state: EpisodeState, rendered: Rendered) -> list[str]:
    """Where the rendered registry breaks its limits (empty when it keeps all of them).

    Switched off, it shows nothing. Otherwise: no pinned slot is left out; no
    more than `registry_max_slots` slots (pinned ones may pass it) and no more
    than the budget share (pinned ones may pass it); what is left out is older
    than everything kept that is not pinned; and nothing is left out that
    would have fitted under both limits.
    """
    cfg = state.config
    shown = rendered.part("registry").items
    if not cfg.registry_enabled:
        return [f"registry: {len(shown)} slot(s) shown although the registry is switched off"] if shown else []
    plan = registry_plan(state, rendered.budget)
    tok = cfg.tokenizer
    everything = {f"slot:{k}": f"{k}={v}" for k, (v, _) in state.current_values().items()}
    kept = {i.item_id for i in shown}
    left = [i for i in everything if i not in kept]
    free = [i for i in kept if i not in plan.pinned]
    problems = [f"registry: pinned slot {i} was left out" for i in left if i in plan.pinned]
    if cfg.registry_max_slots and free and len(kept) > cfg.registry_max_slots:
        problems.append(f"registry: {len(kept)} slots shown over a cap of {cfg.registry_max_slots}")
    if plan.share is not None and free and rendered.registry_tokens > plan.share:
        problems.append(f"registry: {rendered.registry_tokens} tokens over its share of {plan.share}")
    if left and free:
        newest_left = max(left, key=plan.recency.__getitem__)
        oldest_kept = min(free, key=plan.recency.__getitem__)
        if newest_left not in plan.pinned and plan.recency[newest_left] > plan.recency[oldest_kept]:
            problems.append(f"registry: {newest_left} was left out although an older slot {oldest_kept} was kept")
    candidates = [i for i in left if i not in plan.pinned]
    if candidates:
        nxt = max(candidates, key=plan.recency.__getitem__)
        fits_count = not cfg.registry_max_slots or len(kept) < cfg.registry_max_slots
        fits_share = plan.share is None or rendered.registry_tokens + count_tokens(everything[nxt], tok) <= plan.share
        if fits_count and fits_share:
            problems.append(f"registry: {nxt} was left out although it fits under the cap and the share")
    return problems
