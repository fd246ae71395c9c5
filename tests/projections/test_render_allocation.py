"""Budgeted rendering: the allocation rules as Hypothesis properties, and broken renderers they catch.

Rules (`projections.render.allocation_problems`): every item present; the
pinned block and the registry whole; every other item keeps its head; cut
items cut to a common cap (one long item cannot push the others out); the
total within the budget whenever that is possible.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ledgermem.projections.events import ConstraintPinned, EpisodeStarted, IndexCreated, SummaryCreated, TurnRecorded
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import (
    PART_ORDER,
    WHOLE_PARTS,
    Item,
    Part,
    Rendered,
    allocation_problems,
    registry_plan,
    render,
)
from ledgermem.projections.state import EpisodeEvent, EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR, count_tokens, truncate_to_tokens

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=3)
words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "budget", "hotel", "7F", "9am", "约束"]),
                 min_size=1, max_size=60).map(" ".join)


@st.composite
def states(draw: st.DrawFn) -> EpisodeState:
    events: list[EpisodeEvent] = [EpisodeStarted(config=CONFIG.to_dict())]
    turns = draw(st.integers(0, 6))
    for t in range(1, turns + 1):
        events.append(TurnRecorded(turn=t, record_id=f"r{t:04d}", text=draw(words), agent=draw(words)))
    n = draw(st.integers(0, 8))
    for i in range(1, n + 1):
        slot = draw(st.sampled_from(["a", "b", "c", "d", "e"]))
        events.append(SummaryCreated(turn=max(turns, 1), summary_id=f"s{i:04d}", text=draw(words),
                                     facts=((slot, draw(st.sampled_from(["1", "2", "long value " * 3]))),),
                                     overrides=(), raw_ids=("r0001",)))
    if n >= 3 and draw(st.booleans()):
        events.append(IndexCreated(turn=max(turns, 1), index_id="i0001", members=("s0001", "s0002"), text="t",
                                   span="turn 1"))
    for p in range(1, draw(st.integers(0, 3)) + 1):
        events.append(ConstraintPinned(turn=max(turns, 1), pin_id=f"p{p:04d}", kind="constraint", text=draw(words),
                                       origin="declared"))
    return fold(events)


@settings(max_examples=200, deadline=None)
@given(state=states(), budget=st.integers(1, 400))
def test_render_keeps_every_allocation_rule(state: EpisodeState, budget: int) -> None:
    assert allocation_problems(state, render(state, budget)) == []


@settings(max_examples=100, deadline=None)
@given(state=states(), budget=st.integers(1, 400))
def test_pinned_and_registry_are_never_cut_and_every_id_is_in_the_manifest(state: EpisodeState, budget: int) -> None:
    full, tight = render(state, 100_000), render(state, budget)
    left_out = set(registry_plan(state, budget).left_out)
    assert tight.item_ids == tuple(i for i in full.item_ids if i not in left_out)
    assert tight.part("pinned").items == full.part("pinned").items
    # the registry's limits leave whole slots out (projections.render.registry_plan); none is ever cut
    assert tight.part("registry").items == tuple(i for i in full.part("registry").items if i.item_id not in left_out)


# -- broken renderers the rules must catch ---------------------------------------------


def _rendered(state: EpisodeState, budget: int, parts: dict[str, list[Item]]) -> Rendered:
    return Rendered(tuple(Part(n, tuple(parts[n])) for n in PART_ORDER), budget, state.config.tokenizer)


def greedy(state: EpisodeState, budget: int) -> Rendered:
    """Fills parts in prompt order until the budget is spent: later items are pushed out."""
    full = render(state, 100_000)
    used, parts = 0, {}
    for p in full.parts:
        kept = []
        for item in p.items:
            if used + item.tokens <= budget:
                kept.append(item)
                used += item.tokens
        parts[p.name] = kept
    return _rendered(state, budget, parts)


def cuts_everything(state: EpisodeState, budget: int) -> Rendered:
    """Cuts every item, the pinned block and the registry too, to one common cap."""
    full = render(state, 100_000)
    n = max(1, len(full.item_ids))
    cap = max(budget // n, 2)
    tok = state.config.tokenizer
    parts = {p.name: [Item(i.item_id, truncate_to_tokens(i.text, cap - 1, tok) + "…", cap) if i.tokens > cap else i
                      for i in p.items] for p in full.parts}
    return _rendered(state, budget, parts)


def tails(state: EpisodeState, budget: int) -> Rendered:
    """Keeps the end of long items instead of their head."""
    good = render(state, budget)
    full = {i.item_id: i.text for p in render(state, 100_000).parts for i in p.items}
    parts = {p.name: [Item(i.item_id, "…" + full[i.item_id][-max(len(i.text) - 1, 1):], i.tokens)
                      if i.text != full[i.item_id] else i for i in p.items] for p in good.parts}
    return _rendered(state, budget, parts)


def one_long_item_wins(state: EpisodeState, budget: int) -> Rendered:
    """Gives the longest item all it wants and cuts the others to a single token."""
    full = render(state, 100_000)
    tok = state.config.tokenizer
    longest = max((i for p in full.parts if p.name not in WHOLE_PARTS for i in p.items), key=lambda i: i.tokens)
    parts = {}
    for p in full.parts:
        items = []
        for i in p.items:
            if p.name in WHOLE_PARTS or i.item_id == longest.item_id or i.tokens <= 1:
                items.append(i)
            else:
                text = truncate_to_tokens(i.text, 1, tok) + "…"
                items.append(Item(i.item_id, text, count_tokens(text, tok)))
        parts[p.name] = items
    return _rendered(state, budget, parts)


def _example() -> EpisodeState:
    long = "word " * 120
    events: list[EpisodeEvent] = [EpisodeStarted(config=CONFIG.to_dict())]
    events += [TurnRecorded(turn=t, record_id=f"r{t:04d}", text=f"turn {t} " + ("x " * 20), agent="ok")
               for t in (1, 2, 3)]
    events += [SummaryCreated(turn=3, summary_id="s0001", text=long, facts=(("a", "1"),), overrides=(), raw_ids=("r0001",)),
               SummaryCreated(turn=3, summary_id="s0002", text="short note " * 6, facts=(("b", "2"),), overrides=(),
                              raw_ids=("r0002",)),
               ConstraintPinned(turn=3, pin_id="p0001", kind="constraint", text="never book a red-eye " * 4,
                                origin="declared")]
    return fold(events)


def test_the_example_is_tight_and_the_real_render_passes() -> None:
    s = _example()
    assert render(s, 100_000).tokens > 150
    assert allocation_problems(s, render(s, 150)) == []


def test_every_broken_renderer_is_caught() -> None:
    s = _example()
    for broken in (greedy, cuts_everything, tails, one_long_item_wins):
        assert allocation_problems(s, broken(s, 150)), broken.__name__


def test_a_budget_check_catches_an_overfull_render() -> None:
    s = _example()
    good = render(s, 150)
    overfull = replace(good, budget=60)  # the same items claimed to fit a smaller budget they do not fit
    assert any("over a budget" in p for p in allocation_problems(s, overfull))
