"""The current-values registry's limits: a slot cap, a share of the context budget, an on/off switch.

Over a limit, the least recently confirmed slots are left out whole, the
newest kept; a slot a live pin names is never left out. With many slots the
rendered memory stays within `context_budget` (a Hypothesis property, and a
50-slot episode through `Memory`); with the limits off the same property
finds a prompt over the budget.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, find, given, settings
from hypothesis.errors import HypothesisWarning
from hypothesis import strategies as st

from ledgermem.projections.events import ConstraintPinned, ContextRendered, EpisodeStarted, SummaryCreated, TurnRecorded
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import ConfigError
from ledgermem.projections.render import (
    PART_ORDER,
    WHOLE_PARTS,
    Item,
    Part,
    Rendered,
    allocation_problems,
    registry_plan,
    registry_problems,
    render,
)
from ledgermem.projections.state import EpisodeEvent, EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR, count_tokens

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=3)
UNCAPPED = replace(CONFIG, registry_max_slots=0, registry_budget_share=0.0)
WORDS = ["alpha", "beta", "gamma", "delta", "harbour", "7F", "9am", "north wing", "约束", "办公室"]
long_values = st.builds(lambda n, k: " ".join(WORDS[(k + j) % len(WORDS)] for j in range(n)),
                        st.integers(1, 30), st.integers(0, len(WORDS) - 1))


def _state(config: MemoryConfig, summaries: list[tuple[tuple[str, str], ...]], *, turns: int = 2,
           pins: tuple[ConstraintPinned, ...] = ()) -> EpisodeState:
    events: list[EpisodeEvent] = [EpisodeStarted(config=config.to_dict())]
    events += [TurnRecorded(turn=t, record_id=f"r{t:04d}", text=f"turn {t} words", agent="ok")
               for t in range(1, turns + 1)]
    events += [SummaryCreated(turn=max(turns, 1), summary_id=f"s{i:04d}", text="; ".join(f"{k}={v}" for k, v in facts),
                              facts=facts, overrides=(), raw_ids=("r0001",))
               for i, facts in enumerate(summaries, start=1)]
    events += list(pins)
    return fold(events)


@st.composite
def many_slots(draw: st.DrawFn, config: MemoryConfig = CONFIG) -> EpisodeState:
    """50 to 200 distinct slots with long values, a few restated later, in summaries of one to four facts."""
    n = draw(st.integers(50, 200))
    slots = [f"slot{i}" for i in range(n)]
    writes = [(s, draw(long_values)) for s in slots]
    for s in draw(st.lists(st.sampled_from(slots), max_size=20)):  # reconfirmations, with new values
        writes.append((s, draw(long_values)))
    summaries: list[tuple[tuple[str, str], ...]] = []
    i = 0
    while i < len(writes):
        size = draw(st.integers(1, 4))
        group = dict(writes[i:i + size])  # one value per slot within a summary
        summaries.append(tuple(group.items()))
        i += size
    pins = tuple(ConstraintPinned(turn=2, pin_id=f"p{p:04d}", kind="constraint", text=f"keep {slot} as agreed",
                                  origin="detected", record_id="r0001", anchors=(slot,))
                 for p, slot in enumerate(draw(st.lists(st.sampled_from(slots), max_size=2, unique=True)), start=1))
    return _state(config, summaries, turns=draw(st.integers(0, 4)), pins=pins)


def _fits(state: EpisodeState, budget: int) -> bool:
    """What the budget can hold at all: the pinned block, the pinned slots, and two tokens per cut item."""
    tok = state.config.tokenizer
    full = render(state, 10**9)
    pinned = full.part("pinned").tokens
    plan = registry_plan(state, budget)
    pinned_slots = sum(count_tokens(f"{k}={v}", tok) for k, (v, _) in state.current_values().items()
                       if f"slot:{k}" in plan.pinned)
    others = sum(len(full.part(n).items) for n in PART_ORDER if n not in WHOLE_PARTS)
    return pinned + pinned_slots + 2 * others + count_tokens("x", tok) <= budget


# -- the property, and its must-fail control -------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(state=many_slots(), budget=st.integers(800, 4000))
def test_many_slots_never_pass_the_context_budget(state: EpisodeState, budget: int) -> None:
    assume(_fits(state, budget))
    rendered = render(state, budget)
    assert rendered.tokens <= budget
    assert allocation_problems(state, rendered) == []
    plan = registry_plan(state, budget)
    assert len(rendered.part("registry").items) <= max(CONFIG.registry_max_slots, len(plan.pinned))
    assert plan.share is not None and rendered.registry_tokens <= max(plan.share, sum(
        i.tokens for i in rendered.part("registry").items if i.item_id in plan.pinned))


def test_without_the_limits_the_property_finds_a_prompt_over_the_budget() -> None:
    """The control: the same states, the registry uncapped (as before its limits), break the budget."""
    with warnings.catch_warnings():  # the example found is large; its repr is not needed
        warnings.simplefilter("ignore", HypothesisWarning)
        over = find(st.tuples(many_slots(UNCAPPED), st.integers(800, 4000)),
                    lambda sb: render(sb[0], sb[1]).tokens > sb[1],
                    settings=settings(max_examples=200, deadline=None, database=None, phases=[Phase.generate],
                                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
    state, budget = over
    assert render(state, budget).tokens > budget
    capped = replace(state, config=CONFIG)
    assert render(capped, budget).tokens <= budget or not _fits(capped, budget)


# -- the rules, one by one ----------------------------------------------------------------


def test_the_most_recently_confirmed_slots_are_kept() -> None:
    cfg = replace(CONFIG, registry_max_slots=3)
    summaries = [(("a", "1"),), (("b", "2"),), (("c", "3"),), (("d", "4"),), (("a", "1"),)]  # a confirmed last
    state = _state(cfg, summaries)
    rendered = render(state)
    assert rendered.part("registry").ids == ("slot:a", "slot:c", "slot:d")  # the newest three, in registry order
    assert registry_plan(state).left_out == ("slot:b",)
    assert registry_problems(state, rendered) == []


def test_a_pinned_slot_is_never_left_out_and_counts_against_the_cap() -> None:
    cfg = replace(CONFIG, registry_max_slots=2)
    pin = ConstraintPinned(turn=2, pin_id="p0001", kind="constraint", text="the oldest one matters",
                           origin="declared", anchors=("a",))
    state = _state(cfg, [(("a", "1"),), (("b", "2"),), (("c", "3"),), (("d", "4"),)], pins=(pin,))
    assert render(state).part("registry").ids == ("slot:a", "slot:d")


def test_a_pin_from_a_summary_pins_the_slots_that_summary_holds() -> None:
    cfg = replace(CONFIG, registry_max_slots=1)
    pin = ConstraintPinned(turn=2, pin_id="p0001", kind="constraint", text="stay under budget", origin="summary",
                           record_id="r0001", summary_id="s0001", anchors=("stay under budget",))
    state = _state(cfg, [(("a", "1"),), (("b", "2"),)], pins=(pin,))
    assert render(state).part("registry").ids == ("slot:a",)


def test_over_its_share_the_oldest_slots_go_first_and_none_is_cut() -> None:
    long = "north wing " * 10
    state = _state(CONFIG, [(("a", long),), (("b", long),), (("c", "3"),)])
    budget = 100  # share 50 tokens: one long value (32 tokens) and the short one (3), not two long ones
    rendered = render(state, budget)
    assert rendered.part("registry").ids == ("slot:b", "slot:c")
    assert all(i.text in (f"b={long}", "c=3") for i in rendered.part("registry").items)
    assert rendered.registry_tokens <= registry_plan(state, budget).share  # type: ignore[operator]


def test_the_share_gives_way_to_the_heads_of_the_other_items() -> None:
    """The share is capped by what the pinned block and two tokens per other item leave of the budget."""
    state = _state(CONFIG, [((f"k{i}", f"value {i}"),) for i in range(1, 31)], turns=3)
    others = 3 + 30  # the window's turns and the chain's summaries
    budget = 2 * others + 12
    plan = registry_plan(state, budget)
    assert plan.share == 12 < int(budget * CONFIG.registry_budget_share)
    rendered = render(state, budget)
    assert rendered.registry_tokens <= 12 and rendered.tokens <= budget
    assert allocation_problems(state, rendered) == []


def test_switched_off_there_is_no_registry_block() -> None:
    state = _state(replace(CONFIG, registry_enabled=False), [(("a", "1"),), (("b", "2"),)])
    rendered = render(state)
    assert rendered.part("registry").items == () and "<CURRENT_VALUES>" not in rendered.text
    assert registry_plan(state).left_out == ("slot:a", "slot:b")


def test_registry_tokens_are_counted_apart_in_the_manifest() -> None:
    state = _state(CONFIG, [(("a", "1"),), (("b", "two words"),)])
    rendered = render(state)
    assert rendered.registry_tokens == rendered.manifest()["registry"]["tokens"] == sum(
        count_tokens(t, ESTIMATOR) for t in ("a=1", "b=two words"))
    assert rendered.registry_tokens < rendered.tokens or rendered.tokens == rendered.registry_tokens


def test_a_configuration_recorded_before_the_limits_renders_every_slot() -> None:
    """Replays of earlier runs render what they rendered: their configuration has no registry fields."""
    old = {k: v for k, v in CONFIG.to_dict().items() if not k.startswith("registry_")}
    assert MemoryConfig.from_dict(old).registry_max_slots == 0
    assert MemoryConfig.from_dict(old).registry_budget_share == 0.0
    assert MemoryConfig.from_dict(CONFIG.to_dict()) == CONFIG
    events: list[EpisodeEvent] = [EpisodeStarted(config=old)]
    events += [SummaryCreated(turn=1, summary_id=f"s{i:04d}", text=f"k{i}=v", facts=((f"k{i}", "v"),), overrides=(),
                              raw_ids=("r0001",)) for i in range(1, 31)]
    assert len(render(fold(events)).part("registry").items) == 30


@pytest.mark.parametrize("field, value", [("registry_max_slots", -1), ("registry_budget_share", 1.5),
                                          ("registry_enabled", "yes")])
def test_bad_limits_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        replace(CONFIG, **{field: value}).validate()


# -- broken registries the rules must catch --------------------------------------------


def _with_registry(state: EpisodeState, budget: int, ids: list[str]) -> Rendered:
    tok = state.config.tokenizer
    every = {f"slot:{k}": Item(f"slot:{k}", f"{k}={v}", count_tokens(f"{k}={v}", tok))
             for k, (v, _) in state.current_values().items()}
    good = render(state, budget)
    parts = [Part(p.name, tuple(every[i] for i in ids)) if p.name == "registry" else p for p in good.parts]
    return Rendered(tuple(parts), budget, state.config.tokenizer)


def _broken_cases() -> dict[str, tuple[EpisodeState, Rendered]]:
    cfg = replace(CONFIG, registry_max_slots=2)
    pin = ConstraintPinned(turn=2, pin_id="p0001", kind="constraint", text="keep a", origin="declared",
                           anchors=("a",))
    four = [(("a", "1"),), (("b", "2"),), (("c", "3"),), (("d", "4"),)]
    plain, pinned = _state(cfg, four), _state(cfg, four, pins=(pin,))
    off = _state(replace(cfg, registry_enabled=False), four)
    long = "north wing " * 10
    wide = _state(CONFIG, [(("a", long),), (("b", long),), (("c", "3"),)])
    return {
        "keeps the oldest": (plain, _with_registry(plain, 2000, ["slot:a", "slot:b"])),
        "no cap": (plain, _with_registry(plain, 2000, ["slot:a", "slot:b", "slot:c", "slot:d"])),
        "drops a pinned slot": (pinned, _with_registry(pinned, 2000, ["slot:c", "slot:d"])),
        "shows a switched-off registry": (off, _with_registry(off, 2000, ["slot:d"])),
        "leaves out what fits": (plain, _with_registry(plain, 2000, ["slot:d"])),
        "ignores its share": (wide, _with_registry(wide, 100, ["slot:a", "slot:b", "slot:c"])),
    }


@pytest.mark.parametrize("name", list(_broken_cases()))
def test_the_rules_catch_a_broken_registry(name: str) -> None:
    state, rendered = _broken_cases()[name]
    assert registry_problems(state, rendered) != []
    assert registry_problems(state, render(state, rendered.budget)) == []  # the real renderer keeps them


# -- end to end: an episode with 50 slots through Memory --------------------------------


def _slot_script(messages: Any, purpose: str) -> str:
    if purpose != "summarize":
        return "I do not know."
    text = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
    turns = re.findall(r"my (attribute\d+) is now ([^\n|<]+)", text)
    if not turns:
        return "NONE"
    slot, value = turns[-1]
    return f"{slot} updated.\n[FACTS: {slot}={value.strip()}]\n[OVERRIDES: none]"


def _fifty_slot_episode(tmp_path: Path, config: MemoryConfig) -> list[ContextRendered]:
    from ledgermem.memory.backends import ScriptedBackend
    from ledgermem.memory.memory import Memory

    with Ledger(tmp_path / f"ledger-{config.registry_max_slots}.duckdb") as ledger:
        stream = StreamKey("slots", "three_layer", "fifty")
        memory = Memory(ledger, stream, ScriptedBackend(_slot_script), config=config, strict=True)
        for i in range(1, 51):
            value = f"value {i} " + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(8))
            memory.add_turn(f"my attribute{i} is now {value}", "Noted.")
            if i % 10 == 0:
                memory.ask(f"What is attribute{i}?")
        assert len(memory.state.current_values()) == 50
        return [r.event for r in ledger.read(stream=stream) if isinstance(r.event, ContextRendered)]


def test_an_episode_with_50_slots_stays_within_its_context_budget(tmp_path: Path) -> None:
    config = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False, context_budget=600)
    rendered = _fifty_slot_episode(tmp_path, config)
    assert len(rendered) == 5
    assert all(r.tokens <= r.budget == 600 for r in rendered), [r.tokens for r in rendered]
    assert all(r.parts["registry"]["tokens"] <= 300 for r in rendered)  # its share: half the budget
    assert max(len(r.parts["registry"]["ids"]) for r in rendered) <= config.registry_max_slots
    # the control: the same episode with the registry uncapped passes the budget
    uncapped = replace(config, registry_max_slots=0, registry_budget_share=0.0)
    assert max(r.tokens for r in _fifty_slot_episode(tmp_path, uncapped)) > 600
